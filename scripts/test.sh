#!/usr/bin/env bash
# Every check, in the order a reviewer would want them to fail: formatting, lints (one pass
# per feature set, since `app` is never built with `ssr` and `hydrate` together), unit and
# integration tests on SQLite and PostgreSQL, then the browser tests and the schema tests of /v1
# against the server binary that the test step built (with a release WASM bundle): a second,
# optimised compile of every dependency would cost a fresh machine ~15 minutes and test nothing
# more. Release performance is the benchmarks' business (docs/benchmarks.md).
# Nothing is skipped: a part that cannot run fails the whole command and says why.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-always}"
# One build from scratch gains nothing from incremental caches, which would double the disk
# the workspace's own crates take (CI ran out of disk with them, at 7 minutes). The edit loop
# (`cargo test` by hand, `make dev`) keeps them.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Each step says how much disk the build has taken and how much is left: a CI machine's disk
# is smaller than a workstation's, and this is where to see it going.
# It also says when it began (minutes:seconds into the run): what each step costs, as the
# README reports it.
step() {
  local used free
  used=$(du -sh target 2>/dev/null | cut -f1) || true
  free=$(df -h --output=avail . 2>/dev/null | tail -1 | tr -d ' ') || true
  printf '\n\033[1m==> %s\033[0m  (at %d:%02d; target/ %s, %s free)\n' "$*" \
    $((SECONDS / 60)) $((SECONDS % 60)) "${used:-0}" "${free:-?}"
}
SERVER_PKGS=(-p tidemark-wire -p tidemark-domain -p tidemark-store -p tidemark-services -p tidemark-cli -p app -p server)
# The benchmarks are linted (not run) so that they keep compiling as the code they measure changes.
LINT_PKGS=("${SERVER_PKGS[@]}" -p tidemark-bench)

step "cargo fmt --check"
cargo fmt --all -- --check

step "architecture: no import circle in any crate, no file over 800 lines nor function over 120, and docs/architecture.md draws the crates as they are"
python3 scripts/import-circles.py --self-test
python3 scripts/import-circles.py
python3 scripts/room-rules.py --self-test
python3 scripts/room-rules.py
python3 scripts/code-shape.py --self-test
python3 scripts/code-shape.py
python3 scripts/architecture-graph.py --check docs/architecture.md

step "docs: every internal link and anchor of the Markdown resolves"
python3 scripts/doc-links.py --self-test
python3 scripts/doc-links.py

step "cargo deny: licenses, bans and sources of every dependency (deny.toml)"
cargo deny --log-level error check licenses bans sources

step "alerting rules: promtool check and unit tests (deploy/prometheus)"
promtool check rules deploy/prometheus/alerts.yml
promtool test rules deploy/prometheus/alerts_test.yml

step "clippy: server side (app with ssr)"
cargo clippy "${LINT_PKGS[@]}" --features app/ssr --all-targets -- -D warnings

step "clippy: browser side (app with hydrate, wasm32)"
cargo clippy -p frontend --target wasm32-unknown-unknown -- -D warnings

step "unit and integration tests on SQLite and PostgreSQL"
cargo test "${SERVER_PKGS[@]}" --features app/ssr --no-run
# The tests keep about a third of the two cores busy (they wait on sockets, timers, fsyncs and
# the databases: 318 s, 198 s of it on a CPU, measured 2026-11-29), so the later steps' builds
# run beside them: the fuzz targets and the site's release WASM (4:41 of a fresh machine's run),
# each in a target directory of its own (target/fuzz, target/front). Their steps then find them
# built. In a session of its own, so that a failing run stops the whole build with it.
early_log=$(mktemp /tmp/tidemark-early-builds.XXXXXX)
setsid bash -c 'scripts/fuzz.sh --build-only && TIDEMARK_SERVER_BIN=target/debug/tidemark-server scripts/e2e.sh --build-only' \
  >"$early_log" 2>&1 &
early_builds=$!
trap 'kill -- -"$early_builds" 2>/dev/null || true' EXIT
# The tests themselves take about 5 minutes on 2 cores. A test that hangs must fail the run
# naming itself, not hold it until CI's limit with its name far above the tail CI shows: the
# run is bounded, and what libtest said of slow tests is repeated last.
test_log=$(mktemp /tmp/tidemark-tests.XXXXXX)
if ! scripts/pg-throwaway.sh timeout --kill-after=30s "${TIDEMARK_TEST_LIMIT:-25m}" \
  cargo test "${SERVER_PKGS[@]}" --features app/ssr 2>&1 | tee "$test_log"; then
  printf '\nThe test step failed or ran over %s. Tests that ran for over 60 s:\n' "${TIDEMARK_TEST_LIMIT:-25m}"
  sed 's/\x1b\[[0-9;]*m//g' "$test_log" | grep -E 'running for over|panicked at|^failures:|^    [a-z_:]+$' || true
  exit 1
fi
rm -f "$test_log"
if ! wait "$early_builds"; then
  cat "$early_log"
  echo "make test: building the fuzz targets or the site beside the tests failed (above)" >&2
  exit 1
fi
rm -f "$early_log"

step "the SAML tests again with the OCI image's empty ICU data library in place of ICU's (deploy/oci/icudata-stub.c)"
scripts/packaging/icu-stub-check.sh

# On CI (.ci/run sets TIDEMARK_CI_PRUNE=1) the test step's intermediate files go once it has
# passed: the later steps use only the binaries it left in target/debug/, and a CI machine's
# disk is small (about 4 GB freed). A workstation keeps them for the next run.
if [ "${TIDEMARK_CI_PRUNE:-}" = 1 ]; then
  rm -rf target/debug/deps target/debug/build target/debug/.fingerprint target/debug/examples
fi

step "fuzz smoke run: 10 s per target (scripts/fuzz.sh 600 for a real session)"
scripts/fuzz.sh 10

# Built by the test step for the operator-command tests (CARGO_BIN_EXE_tidemark-server).
export TIDEMARK_SERVER_BIN=target/debug/tidemark-server

step "browser tests (Playwright in Debian Chromium): release WASM, the test step's server; then behind nginx (TLS) with two replicas on PostgreSQL"
scripts/e2e.sh

step "schema tests of /v1 and /admin/v1 (schemathesis: every phase and check, then the stateful scenario)"
scripts/api-schema.sh

step "SCIM conformance (scim2-tester: discovery, CRUD, filters, PATCH add/remove/replace) against the test step's server"
scripts/scim-conformance.sh

step "packaging: the Debian package installed, served from its unit's lines, upgraded and purged; the OCI image's exported root serving a push (from the test step's binaries)"
scripts/packaging/deb-test.sh
scripts/packaging/image-test.sh

step "all checks passed"
