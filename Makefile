# The two commands of the README. Both install what is missing first (a no-op afterwards):
# `make run` only what building and running need, `make test` every test tool as well.
SHELL := /bin/bash
export PATH := $(CURDIR)/node_modules/.bin:$(HOME)/.cargo/bin:$(PATH)

.PHONY: run dev test setup package

## Run Tidemark on the embedded SQLite default at http://127.0.0.1:3000 (sign in as demo@tidemark.localhost)
run:
	scripts/setup.sh --run
	scripts/run.sh

## The edit loop: debug builds, rebuilt and restarted on every saved change
dev:
	scripts/setup.sh --run
	scripts/run.sh --watch

## Run every check: fmt, clippy, tests on SQLite and PostgreSQL, browser tests
test: setup
	scripts/test.sh

setup:
	scripts/setup.sh

## Release artifacts for operators: the Debian packages and the OCI image, in target/packages/
package: setup
	scripts/package.sh
