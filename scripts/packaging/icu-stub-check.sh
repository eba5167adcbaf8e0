#!/usr/bin/env bash
# The OCI image replaces ICU's data library with an empty one (deploy/oci/icudata-stub.c says
# why that is safe). This runs the SAML tests, whose signatures xmlsec1 checks through libxml2
# (the one user of ICU), again with that library loaded instead of ICU's data: they must pass.
# Called by scripts/test.sh right after the test step, whose test binary it reuses.
set -euo pipefail
cd "$(dirname "$0")/../.."
server=target/debug/tidemark-server
lib=$(ldd "$server" | awk '$1 ~ /^libicudata\.so/ { print $3 }')
[ -n "$lib" ] || { echo "icu-stub-check: $server links no ICU data library; the image's stub is not needed" >&2; exit 1; }
dir=$(mktemp -d /tmp/tidemark-icu.XXXXXX)
trap 'rm -rf "$dir"' EXIT
deploy/oci/build-icudata-stub.sh "$lib" "$dir/$(basename "$lib")"
# ldd's output is taken whole first: `ldd | grep -q` under pipefail fails at random, because grep
# quits at its match and the loader's next line then meets a closed pipe (SIGPIPE, status 141).
resolved=$(LD_LIBRARY_PATH=$dir ldd "$server")
grep -q "libicudata.* => $dir/" <<<"$resolved" \
  || { echo "icu-stub-check: the stub is not the library the loader picks:" >&2; grep icu <<<"$resolved" >&2; exit 1; }
# The test step's package set and features, so that cargo reuses its build rather than
# compiling `app` and `server` again under another feature unification.
LD_LIBRARY_PATH=$dir TIDEMARK_TEST_SKIP_POSTGRES=1 \
  cargo test -p tidemark-wire -p tidemark-domain -p tidemark-store -p tidemark-cli -p app -p server \
  --features app/ssr --test integration -- saml
