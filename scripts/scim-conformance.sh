#!/usr/bin/env bash
# SCIM conformance: scim2-tester (PyPI, through scim2-cli's `test`) against the server binary
# (TIDEMARK_SERVER_BIN, or the release build) on a free port with a throwaway SQLite data
# directory: an enterprise account whose domain the operator verified, and its SCIM token.
# scim2-tester checks discovery, then creates, reads, lists, filters, replaces, patches
# (add/remove/replace) and deletes Users and Groups. Any failed check fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."

scim_bin=.tools/scim2/bin
server_bin=${TIDEMARK_SERVER_BIN:-target/release/tidemark-server}
[ -x "$scim_bin/scim2" ] || { echo "scim-conformance: scim2-tester is missing; run scripts/setup.sh" >&2; exit 1; }
[ -x "$server_bin" ] || { echo "scim-conformance: $server_bin is missing; build the server first" >&2; exit 1; }

data=$(mktemp -d /tmp/tidemark-scim.XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  rm -rf "$data"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
# The tester sends a few hundred requests in a burst; the budget has its own test.
server=(env TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)" TIDEMARK_DATA_DIR="$data" TIDEMARK_BASE_URL="$url" LEPTOS_SITE_ADDR="127.0.0.1:$port"
  LEPTOS_SITE_ROOT=target/site RUST_LOG=warn TIDEMARK_SCIM_PER_MINUTE=100000 "$server_bin")
json_field() { python3 -c 'import json, sys; print(json.loads(sys.stdin.readlines()[-1])[sys.argv[1]])' "$1"; }

account=$("${server[@]}" license create --email "scim-$port@scim.example" --tier enterprise --json 2>/dev/null | json_field account_id)
der=$(grep -v -- ----- end2end/idp/saml-idp-cert.pem | tr -d '\n')
cat >"$data/idp.xml" <<XML
<EntityDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata" entityID="https://idp.scim.example/md"><IDPSSODescriptor protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol"><KeyDescriptor use="signing"><ds:KeyInfo xmlns:ds="http://www.w3.org/2000/09/xmldsig#"><ds:X509Data><ds:X509Certificate>$der</ds:X509Certificate></ds:X509Data></ds:KeyInfo></KeyDescriptor><SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://idp.scim.example/sso"/></IDPSSODescriptor></EntityDescriptor>
XML
"${server[@]}" sso set --account "$account" --domain scim.example --idp-metadata "$data/idp.xml" >/dev/null 2>&1
token=$("${server[@]}" scim token --account "$account" --json 2>/dev/null | json_field token)

"${server[@]}" serve >"$data/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done

fail() {
  echo "scim-conformance: $1; server log:" >&2
  tail -n 30 "$data/server.log" >&2
  exit 1
}
# The token travels in the environment, never on a command line other users can read.
report="${SCIM_REPORT:-$data/report.txt}"
SCIM_CLI_HEADERS="Authorization: Bearer $token" "$scim_bin/scim2" --url "$url/scim/v2" test --verbose \
  >"$report" 2>&1 || { cat "$report"; fail "scim2-tester failed"; }
cat "$report"
# scim2-cli exits 1 when any check is not SUCCESS (an ERROR, a SKIPPED); a run that checked
# nothing must fail too.
passed=$(grep -cE '^SUCCESS ' "$report" || true)
[ "$passed" -gt 0 ] || fail "scim2-tester reported no passing check"
echo "scim-conformance: $passed checks passed"

kill -TERM "$server_pid"
wait "$server_pid" || fail "the server did not shut down cleanly"
server_pid=
