#!/usr/bin/env bash
# Schema tests of the /v1 and /admin/v1 APIs with schemathesis (PyPI): the server (release
# build, or TIDEMARK_SERVER_BIN) on a free port with a throwaway data directory, a license, an
# API key, a published bundle and the demo's CIS AWS 2.0 catalogue; then every schemathesis
# phase and check against /v1/openapi.json (end2end/api/schemathesis.toml) and
# /admin/v1/openapi.json with an admin vendor token and a licence of its own
# (end2end/api/admin/schemathesis.toml), then the stateful scenario (end2end/api/scenario.py).
# Any failure fails the run. One worker each: with two, Python's ast module has raised
# "recursion depth mismatch" inside hypothesis (a CPython race between threads), failing a run
# that had found nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

st_bin=.tools/schemathesis/bin
server_bin=${TIDEMARK_SERVER_BIN:-target/release/tidemark-server}
[ -x "$st_bin/st" ] || { echo "api-schema: schemathesis is missing; run scripts/setup.sh" >&2; exit 1; }
[ -x "$server_bin" ] || { echo "api-schema: $server_bin is missing; run scripts/e2e.sh first" >&2; exit 1; }

data=$(mktemp -d /tmp/tidemark-schema.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$data"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
# Generated requests come fast: the write and resend limits have their own tests, and here
# they would only stop schemathesis from reaching the logic behind them. Housekeeping is off:
# the pushes carry the schema's example date (days old), so a pass a minute into the run would
# thin their findings and the exports would answer `410 scan_thinned` or not by timing alone
# (housekeeping has its own tests).
server=(env TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)" TIDEMARK_DATA_DIR="$data" TIDEMARK_BASE_URL="$url" LEPTOS_SITE_ADDR="127.0.0.1:$port"
  LEPTOS_SITE_ROOT=target/site RUST_LOG=warn TIDEMARK_WRITES_PER_MINUTE=100000 TIDEMARK_HOUSEKEEPING=off
  TIDEMARK_RESEND_PER_MINUTE=100000 TIDEMARK_ADMIN_PER_MINUTE=100000 "$server_bin")
json_field() { python3 -c 'import json, sys; print(json.loads(sys.stdin.readlines()[-1])[sys.argv[1]])' "$1"; }

license=$("${server[@]}" license create --email "schema-$port@schema.example" --tier enterprise --json 2>/dev/null)
license_key=$(json_field license_key <<<"$license")
license_id=$(json_field license_id <<<"$license")
license_hash=$(printf %s "$license_key" | sha256sum | cut -d' ' -f1)
head -c 4096 /dev/urandom >"$data/bundle.bin"
bundle_id=$("${server[@]}" bundle publish --json "$data/bundle.bin" 2>/dev/null | json_field bundle_id)
"${server[@]}" catalogue import server/src/operator/demo/cis_2.0_aws.json >/dev/null

"${server[@]}" serve >"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done

api_key=$(curl -sf -X POST "$url/v1/license/activate" -H "X-License-Key-Hash: $license_hash" \
  -H 'Content-Type: application/json' -d '{"machine": "schemathesis"}' | json_field api_key)

fail() {
  echo "api-schema: $1; server log:" >&2
  tail -n 30 "$data/server.log" >&2
  exit 1
}
(cd end2end/api && ST_API_KEY="$api_key" ST_HASH="$license_hash" ST_BUNDLE_ID="$bundle_id" \
  "../../$st_bin/st" --no-color run "$url/v1/openapi.json" --workers 1) || fail "schemathesis found failures"
# The admin API's run changes the licence it is given (tier, overrides, suspension): one of
# its own, so the scenario below keeps the first as it was.
admin_license_id=$("${server[@]}" license create --email "admin-$port@schema.example" --tier team --json 2>/dev/null | json_field license_id)
admin_token=$("${server[@]}" vendor-token create --name schemathesis --role admin --json 2>/dev/null | json_field token)
(cd end2end/api/admin && ST_VENDOR_TOKEN="$admin_token" ST_LICENSE_ID="$admin_license_id" \
  "../../../$st_bin/st" --no-color run "$url/admin/v1/openapi.json" --workers 1) || fail "schemathesis found failures in /admin/v1"
"$st_bin/python" end2end/api/scenario.py "$url" "$license_hash" "$license_id" "${server[@]}" \
  || fail "the stateful scenario failed"

kill -TERM "$server_pid"
wait "$server_pid" || fail "the server did not shut down cleanly"
server_pid=
