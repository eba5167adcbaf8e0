#!/usr/bin/env bash
# Browser tests, twice:
#  1. as `make run` starts it: one server on SQLite over plain http, every suite;
#  2. as deployed (docs/deploy.md): nginx terminating TLS with the documented site file, in
#     front of two replicas sharing one PostgreSQL, TIDEMARK_ENV=production and
#     TIDEMARK_TRUSTED_PROXIES set: the sign-in and dashboard suites again over https, plus
#     the replica checks (deployed.spec.ts: a session made on one replica works on the other).
# Each phase builds its own peers (OpenID provider, SAML IdP, DNS server) for its URL, starts
# the server(s) with a throwaway data directory, runs Playwright in Debian Chromium, then stops
# every server with SIGTERM and requires a clean exit.
#
# The WASM bundle is a release build; the server is the release build unless
# TIDEMARK_SERVER_BIN names one already built: `make test` passes the binary its `cargo test`
# step built (same sources, debug assertions on), which spares a fresh machine a second,
# optimised compile of every dependency (~15 minutes on 2 cores).
#
# Not `cargo leptos end-to-end`: cargo-leptos 0.3.10 exits 0 even when the server fails to
# compile, which would let a broken build pass.
#
# `scripts/e2e.sh --build-only` builds the site and stops (make test starts it early, beside
# the integration tests; the run here then finds it built and checks it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
build=(cargo leptos build --release --precompress --split)
[ -n "${TIDEMARK_SERVER_BIN:-}" ] && build+=(--frontend-only)
if [ "${1:-}" = --build-only ]; then
  exec "${build[@]}"
fi
# Phase 2 needs PostgreSQL: run under a throwaway server unless one is named.
if [ -z "${TIDEMARK_TEST_POSTGRES_URL:-}" ]; then
  exec scripts/pg-throwaway.sh "$0" "$@"
fi

log=$(mktemp /tmp/tidemark-build.XXXXXX.log)
work=$(mktemp -d /tmp/tidemark-e2e.XXXXXX)
pids=()        # servers, stopped with SIGTERM and checked
peer_pids=()   # IdPs, DNS, nginx
cleanup() {
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in "${peer_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  rm -rf "$work" "$log"
}
trap cleanup EXIT

server_bin=${TIDEMARK_SERVER_BIN:-target/release/tidemark-server}
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
# The bundle is split by island (`--split`): the main module every page with an island loads
# has a budget of its own (issue 43; docs/benchmarks.md). What each page loads in all is
# Playwright's to check (tests/weight.spec.ts).
[ -s target/site/pkg/__wasm_split_manifest.json ] || { echo "e2e: the build was not split (no manifest)" >&2; exit 1; }
WASM_GZIP_BUDGET=$((150 * 1024))
wasm_raw=$(stat -c %s target/site/pkg/tidemark.wasm)
wasm_gz=$(gzip -9 -c target/site/pkg/tidemark.wasm | wc -c)
chunks=$(ls target/site/pkg/*.wasm | wc -l)
echo "e2e: main WASM module $wasm_raw bytes, $wasm_gz gzipped (budget $WASM_GZIP_BUDGET); $chunks WASM files in all"
if [ "$wasm_gz" -gt "$WASM_GZIP_BUDGET" ]; then
  echo "e2e: the gzipped main WASM module ($wasm_gz bytes) is over its budget of $WASM_GZIP_BUDGET bytes" >&2
  exit 1
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_for() { # URL [curl options]: until it answers 2xx, for up to 30 s
  local url=$1; shift
  for _ in $(seq 150); do curl -sf "$@" -o /dev/null "$url" && return 0; sleep 0.2; done
  echo "e2e: $url never answered" >&2; return 1
}

# Starts the peers for an app at URL and seeds its accounts: sets server_env and exports the
# TIDEMARK_E2E_* variables the specs read. DATA is the phase's directory.
prepare() {
  local url=$1 data=$2; shift 2
  mkdir -p "$data"
  # A real OpenID Connect provider (npm oidc-provider) on its own port. It is served as
  # `localhost`, the app as `127.0.0.1`: two sites, so the browser sees the real cross-site
  # round trip and a SameSite mistake cannot hide.
  local idp_port idp_secret saml_port dns_port
  idp_port=$(free_port)
  idp_secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  node end2end/idp/oidc.mjs --port "$idp_port" --client-id tidemark-e2e --client-secret "$idp_secret" \
    --redirect-uri "$url/auth/oidc/callback" >"$data/oidc.log" 2>&1 &
  peer_pids+=($!)
  # The vendor's staff provider for the console (the same oidc-provider with --staff: its
  # form asks for the person's groups, and POST /groups changes them).
  local staff_port staff_secret
  staff_port=$(free_port)
  staff_secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
  node end2end/idp/oidc.mjs --staff --port "$staff_port" --client-id tidemark-console-e2e \
    --client-secret "$staff_secret" --redirect-uri "$url/console/auth/callback" >"$data/staff-oidc.log" 2>&1 &
  peer_pids+=($!)
  # A real SAML IdP (samlify), also on localhost, for the domain saml-e2e.example.
  saml_port=$(free_port)
  node end2end/idp/saml.mjs --port "$saml_port" --sp-entity-id "$url/saml/metadata" \
    --acs-url "$url/saml/acs" >"$data/saml.log" 2>&1 &
  peer_pids+=($!)
  # A real DNS server on loopback for SSO domain verification; tests publish records by
  # rewriting the file it answers from.
  dns_port=$(free_port)
  echo '{}' >"$data/dns.json"
  node end2end/peers/dns.mjs --port "$dns_port" --records "$data/dns.json" >"$data/dns.log" 2>&1 &
  peer_pids+=($!)

  server_env=(LEPTOS_SITE_ROOT=target/site TIDEMARK_DATA_DIR="$data"
    TIDEMARK_BASE_URL="$url" RUST_LOG="${RUST_LOG:-warn}"
    TIDEMARK_OIDC_ISSUER="http://localhost:$idp_port" TIDEMARK_OIDC_CLIENT_ID=tidemark-e2e
    TIDEMARK_OIDC_CLIENT_SECRET="$idp_secret" TIDEMARK_DNS_RESOLVER="127.0.0.1:$dns_port"
    TIDEMARK_CONSOLE_OIDC_ISSUER="http://localhost:$staff_port"
    TIDEMARK_CONSOLE_OIDC_CLIENT_ID=tidemark-console-e2e TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET="$staff_secret"
    TIDEMARK_CONSOLE_ROLES=vendor-admins=admin,sellers=sales,helpdesk=support,everyone=read
    # The dashboard tests push more than 5 scans a minute; the limit has its own Rust tests.
    TIDEMARK_WRITES_PER_MINUTE=1000
    # The webhook test's receiver listens on loopback, and its retry comes after half a second.
    TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1 TIDEMARK_WEBHOOK_RETRY_BASE_MS=500
    # The keyless CI test's token issuer listens on loopback, over http.
    TIDEMARK_OIDC_ALLOW_PRIVATE_ISSUERS=1 "$@")

  # The account the tests sign in to: its license e-mail is its first admin.
  local tag admin_email attacker_email saml_member account_id license_key
  tag=$(basename "$data")
  admin_email="admin-$tag@e2e.example"
  env "${server_env[@]}" "$server_bin" license create --email "$admin_email" \
    --tier enterprise --max-projects 1 --json >"$data/license.json"
  account_id=$(tail -n 1 "$data/license.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["account_id"])')
  license_key=$(tail -n 1 "$data/license.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["license_key"])')
  # The vendor's CIS AWS 2.0 catalogue (Prowler's, as the demo publishes it), in both phases:
  # framework pages list its 64 requirements whether or not the demo account is there.
  env "${server_env[@]}" "$server_bin" catalogue import server/src/operator/demo/cis_2.0_aws.json >/dev/null
  # A second enterprise account, whose admin tries to claim the first account's domain.
  attacker_email="mallory-$tag@attacker-e2e.example"
  env "${server_env[@]}" "$server_bin" license create --email "$attacker_email" \
    --tier enterprise >/dev/null
  # A customer the console's staff act on (extend, suspend, change the tier): its own
  # licence, so no other spec's account changes under it.
  local console_customer="console-$tag@console-e2e.example"
  env "${server_env[@]}" "$server_bin" license create --email "$console_customer" \
    --tier team >/dev/null
  # The first account's SAML domain and a member who signs in through it.
  saml_member="sam-$tag@saml-e2e.example"
  wait_for "http://localhost:$saml_port/metadata"
  curl -sf "http://localhost:$saml_port/metadata" >"$data/idp-metadata.xml"
  env "${server_env[@]}" "$server_bin" sso set --account "$account_id" \
    --domain saml-e2e.example --idp-metadata "$data/idp-metadata.xml" >/dev/null
  env "${server_env[@]}" "$server_bin" member add --account "$account_id" \
    --email "$saml_member" --role member >/dev/null
  # The account's SCIM token, as its IdP would hold it (the SAML domain above is verified).
  local scim_token
  scim_token=$(env "${server_env[@]}" "$server_bin" scim token --account "$account_id" --json 2>/dev/null |
    tail -n 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["token"])')

  export TIDEMARK_E2E_URL="$url" TIDEMARK_E2E_ADMIN="$admin_email" TIDEMARK_E2E_OIDC="http://localhost:$idp_port"
  export TIDEMARK_E2E_SAML_MEMBER="$saml_member" TIDEMARK_E2E_SAML="http://localhost:$saml_port"
  export TIDEMARK_E2E_LICENSE_KEY="$license_key" TIDEMARK_E2E_OUTBOX="$data/outbox"
  export TIDEMARK_E2E_ATTACKER="$attacker_email" TIDEMARK_E2E_DNS_RECORDS="$data/dns.json"
  export TIDEMARK_E2E_SCIM_TOKEN="$scim_token" TIDEMARK_E2E_STAFF_OIDC="http://localhost:$staff_port"
  export TIDEMARK_E2E_CONSOLE_CUSTOMER="$console_customer"
}

serve() { # PORT: one replica
  env "${server_env[@]}" LEPTOS_SITE_ADDR="127.0.0.1:$1" "$server_bin" serve >"$data/server-$1.log" 2>&1 &
  pids+=($!)
}

playwright() { # spec files…
  (cd end2end && npx playwright test "$@") || {
    echo "e2e: Playwright failed; server logs:" >&2
    tail -n 30 "$data"/server-*.log >&2
    exit 1
  }
}

stop_servers() { # SIGTERM each, and each must exit cleanly
  for pid in "${pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${pids[@]}"; do
    if ! wait "$pid"; then
      echo "e2e: a server did not shut down cleanly on SIGTERM" >&2
      tail -n 30 "$data"/server-*.log >&2
      exit 1
    fi
  done
  pids=()
  for pid in "${peer_pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  peer_pids=()
}

echo "==> e2e phase 1: one server, SQLite, http"
data="$work/direct"
port=$(free_port)
# The demo account (development only) is what tests/weight.spec.ts measures pages on.
prepare "http://127.0.0.1:$port" "$data" TIDEMARK_DEV_DEMO=1
serve "$port"
# TIDEMARK_E2E_SPECS (spec files, space-separated) narrows both phases while editing; `make
# test` never sets it.
# shellcheck disable=SC2086
playwright ${TIDEMARK_E2E_SPECS:-}
stop_servers

echo "==> e2e phase 2: nginx (TLS) in front of two replicas on one PostgreSQL"
data="$work/deployed"
# A database of its own on the PostgreSQL server (the Rust tests use schemas in another).
db_name="tidemark_e2e_$$"
psql -q "$TIDEMARK_TEST_POSTGRES_URL" -c "CREATE DATABASE $db_name" >/dev/null
db_url="${TIDEMARK_TEST_POSTGRES_URL%/*}/$db_name"
https_port=$(free_port); http_port=$(free_port); replica_a=$(free_port); replica_b=$(free_port)
scripts/test-nginx.sh "$work/nginx" "$https_port" "$http_port" "127.0.0.1:$replica_a" "127.0.0.1:$replica_b" \
  >"$work/nginx.out" 2>&1 &
peer_pids+=($!)
master_key=$(head -c 32 /dev/urandom | base64)
prepare "https://127.0.0.1:$https_port" "$data" DATABASE_URL="$db_url" TIDEMARK_ENV=production \
  TIDEMARK_MASTER_KEY="$master_key" TIDEMARK_TRUSTED_PROXIES=127.0.0.1
serve "$replica_a"
serve "$replica_b"
# Node (Playwright's own requests) trusts the test CA; Chromium trusts exactly the server's key.
export NODE_EXTRA_CA_CERTS="$work/nginx/certs/ca.pem"
TIDEMARK_E2E_SPKI=$(openssl x509 -in "$work/nginx/certs/server.pem" -pubkey -noout |
  openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64)
export TIDEMARK_E2E_SPKI TIDEMARK_E2E_REPLICAS="http://127.0.0.1:$replica_a http://127.0.0.1:$replica_b"
export TIDEMARK_E2E_HTTP_PORT="$http_port"
# Pages are audited (axe, phone width) and photographed once, here: the last phase's
# test-results/ are the ones kept.
export TIDEMARK_E2E_DEPLOYED=1
# shellcheck disable=SC2086
playwright ${TIDEMARK_E2E_SPECS:-tests/sign-in.spec.ts tests/dashboard.spec.ts tests/deployed.spec.ts tests/scim.spec.ts tests/console.spec.ts}
stop_servers
echo "e2e: passed; screenshots in end2end/test-results/"
