#!/usr/bin/env bash
# Browser tests: build the release WASM bundle (what every browser downloads), start the real
# server on a free port with a throwaway data directory, run Playwright in Debian Chromium, then
# stop the server with SIGTERM and require a clean exit.
#
# The server is the release build unless TIDEMARK_SERVER_BIN names one already built: `make
# test` passes the binary its `cargo test` step built (same sources, debug assertions on), which
# spares a fresh machine a second, optimised compile of every dependency (~15 minutes on 2 cores).
#
# Not `cargo leptos end-to-end`: cargo-leptos 0.3.10 exits 0 even when the server fails to
# compile, which would let a broken build pass.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

log=$(mktemp /tmp/tidemark-build.XXXXXX.log)
data=$(mktemp -d /tmp/tidemark-e2e.XXXXXX)
server_pid=
idp_pids=()
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  for pid in "${idp_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  rm -rf "$data" "$log"
}
trap cleanup EXIT

server_bin=${TIDEMARK_SERVER_BIN:-target/release/tidemark-server}
build=(cargo leptos build --release)
[ -n "${TIDEMARK_SERVER_BIN:-}" ] && build+=(--frontend-only)
set +e
"${build[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ] || grep -qE '^error(\[E[0-9]+\])?:|could not compile' "$log"; then
  echo "e2e: the build failed (see above)" >&2
  exit 1
fi
for f in "$server_bin" target/site/pkg/tidemark.wasm target/site/pkg/tidemark.js target/site/pkg/tidemark.css; do
  [ -s "$f" ] || { echo "e2e: $f is missing after the build" >&2; exit 1; }
done

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port=$(free_port)
url="http://127.0.0.1:$port"

# A real OpenID Connect provider (npm oidc-provider) on its own port. It is served as
# `localhost`, the app as `127.0.0.1`: two sites, so the browser sees the real cross-site
# round trip and a SameSite mistake cannot hide.
idp_port=$(free_port)
idp_secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
node end2end/idp/oidc.mjs --port "$idp_port" --client-id tidemark-e2e --client-secret "$idp_secret" \
  --redirect-uri "$url/auth/oidc/callback" >"$data/oidc.log" 2>&1 &
idp_pids+=($!)

# A real SAML IdP (samlify), also on localhost, for the domain saml-e2e.example.
saml_port=$(free_port)
node end2end/idp/saml.mjs --port "$saml_port" --sp-entity-id "$url/saml/metadata" \
  --acs-url "$url/saml/acs" >"$data/saml.log" 2>&1 &
idp_pids+=($!)

# A real DNS server on loopback for SSO domain verification; tests publish records by
# rewriting the file it answers from.
dns_port=$(free_port)
echo '{}' >"$data/dns.json"
node end2end/peers/dns.mjs --port "$dns_port" --records "$data/dns.json" >"$data/dns.log" 2>&1 &
idp_pids+=($!)

server_env=(LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR="127.0.0.1:$port" TIDEMARK_DATA_DIR="$data"
  TIDEMARK_BASE_URL="$url" RUST_LOG="${RUST_LOG:-warn}"
  TIDEMARK_OIDC_ISSUER="http://localhost:$idp_port" TIDEMARK_OIDC_CLIENT_ID=tidemark-e2e
  TIDEMARK_OIDC_CLIENT_SECRET="$idp_secret" TIDEMARK_DNS_RESOLVER="127.0.0.1:$dns_port"
  # The dashboard tests push more than 5 scans a minute; the limit has its own Rust tests.
  TIDEMARK_WRITES_PER_MINUTE=1000
  # The webhook test's receiver listens on loopback, and its retry comes after half a second.
  TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1 TIDEMARK_WEBHOOK_RETRY_BASE_MS=500)

# The account the tests sign in to: its license e-mail is its first admin.
admin_email="admin-$port@e2e.example"
env "${server_env[@]}" "$server_bin" license create --email "$admin_email" \
  --tier enterprise --max-projects 1 --json >"$data/license.json"
account_id=$(tail -n 1 "$data/license.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["account_id"])')
license_key=$(tail -n 1 "$data/license.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["license_key"])')

# A second enterprise account, whose admin tries to claim the first account's domain.
attacker_email="mallory-$port@attacker-e2e.example"
env "${server_env[@]}" "$server_bin" license create --email "$attacker_email" \
  --tier enterprise >/dev/null

# Its SAML domain and a member who signs in through it.
saml_member="sam-$port@saml-e2e.example"
for _ in $(seq 50); do curl -sf "http://localhost:$saml_port/metadata" >"$data/idp-metadata.xml" && break; sleep 0.2; done
env "${server_env[@]}" "$server_bin" sso set --account "$account_id" \
  --domain saml-e2e.example --idp-metadata "$data/idp-metadata.xml" >/dev/null
env "${server_env[@]}" "$server_bin" member add --account "$account_id" \
  --email "$saml_member" --role member >/dev/null

env "${server_env[@]}" "$server_bin" serve >"$data/server.log" 2>&1 &
server_pid=$!

export TIDEMARK_E2E_ADMIN="$admin_email" TIDEMARK_E2E_OIDC="http://localhost:$idp_port"
export TIDEMARK_E2E_SAML_MEMBER="$saml_member" TIDEMARK_E2E_SAML="http://localhost:$saml_port"
export TIDEMARK_E2E_LICENSE_KEY="$license_key" TIDEMARK_E2E_OUTBOX="$data/outbox"
export TIDEMARK_E2E_ATTACKER="$attacker_email" TIDEMARK_E2E_DNS_RECORDS="$data/dns.json"
(cd end2end && TIDEMARK_E2E_URL="$url" npx playwright test) || {
  echo "e2e: Playwright failed; server log:" >&2
  tail -n 50 "$data/server.log" >&2
  exit 1
}

kill -TERM "$server_pid"
if ! wait "$server_pid"; then
  echo "e2e: the server did not shut down cleanly on SIGTERM" >&2
  tail -n 50 "$data/server.log" >&2
  exit 1
fi
server_pid=
echo "e2e: passed; screenshots in end2end/test-results/"
