#!/usr/bin/env bash
# `make package`: the release artifacts operators install (docs/install.md), in target/packages/:
#   tidemark_<version>-<revision>_amd64.deb      the server, its site, the systemd unit, tidemark-admin
#   tidemark-cli_<version>-<revision>_amd64.deb  the `tidemark` client alone (scanner hosts, CI runners)
#   tidemark-<version>.image.tar                 the container image (`podman load -i`, `docker load -i`)
# from one release build (cargo leptos: the server and the optimised, precompressed WASM).
# The packages' revision is DEB_REVISION, else the commit count of the checkout: a later build
# of the same version is a higher revision, so `apt install` of it upgrades (docs/install.md).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
out=target/packages
mkdir -p "$out"

cargo leptos build --release --precompress --split
cargo build --release -p tidemark-cli --bin tidemark
revision=${DEB_REVISION:-$(git rev-list --count HEAD 2>/dev/null || echo 1)}
cargo deb -p server --no-build --deb-revision "$revision" --output "$out/"
cargo deb -p tidemark-cli --no-build --deb-revision "$revision" --output "$out/"
version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "server"))')
deploy/oci/build-image.sh --save "$out/tidemark-$version.image.tar"
ls -l "$out"
