#!/usr/bin/env bash
# `make package`: the release artifacts operators install (docs/install.md), in target/packages/:
#   tidemark_<version>-1_amd64.deb       the server, its site, the systemd unit, tidemark-admin
#   tidemark-cli_<version>-1_amd64.deb   the `tidemark` client alone (scanner hosts, CI runners)
#   tidemark-<version>.oci.tar           the OCI image (`podman load -i`, `docker load -i`)
# from one release build (cargo leptos: the server and the optimised, precompressed WASM).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
out=target/packages
mkdir -p "$out"

cargo leptos build --release --precompress --split
cargo build --release -p tidemark-cli --bin tidemark
cargo deb -p server --no-build --output "$out/"
cargo deb -p tidemark-cli --no-build --output "$out/"
version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "server"))')
deploy/oci/build-image.sh --save "$out/tidemark-$version.oci.tar"
ls -l "$out"
