#!/usr/bin/env bash
# `make run`: Tidemark on the embedded SQLite default at http://127.0.0.1:3000, with a
# development OpenID provider on http://localhost:4455 and a demo account, so a newcomer can
# sign in with nothing to configure. Development only: the server refuses TIDEMARK_DEV_DEMO
# when TIDEMARK_ENV=production, and this script never sets production.
#
# `scripts/run.sh --watch` (`make dev`) is the edit loop instead: debug builds, rebuilt and
# restarted on every saved change (`cargo leptos watch`), about 11 s from save to serving.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"

if [ "${TIDEMARK_ENV:-development}" = production ]; then
  echo "make run is the development setup; run target/release/tidemark-server in production" >&2
  exit 1
fi

idp_port=${TIDEMARK_DEV_OIDC_PORT:-4455}
staff_idp_port=${TIDEMARK_DEV_STAFF_OIDC_PORT:-4456}
pids=()
trap 'for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done' EXIT
message=
if [ -z "${TIDEMARK_OIDC_ISSUER:-}" ]; then
  # The provider's client secret is as public as the provider: it signs in anyone.
  node end2end/idp/oidc.mjs --dev --port "$idp_port" --client-id tidemark-dev \
    --client-secret tidemark-dev-secret --default-email demo@tidemark.localhost \
    --redirect-uri "http://127.0.0.1:3000/auth/oidc/callback" &
  pids+=($!)
  export TIDEMARK_OIDC_ISSUER="http://localhost:$idp_port" TIDEMARK_OIDC_CLIENT_ID=tidemark-dev \
    TIDEMARK_OIDC_CLIENT_SECRET=tidemark-dev-secret
  export TIDEMARK_DEV_DEMO=${TIDEMARK_DEV_DEMO:-1}
  message="  Sign in at http://127.0.0.1:3000/signin as demo@tidemark.localhost (admin of a demo
  account with sample scans) through the development OpenID provider on localhost:$idp_port."
fi
if [ -z "${TIDEMARK_CONSOLE_OIDC_ISSUER:-}" ]; then
  # The vendor's console: a second development provider, for staff, whose sign-in form asks
  # for the person's groups; each group opens the console as one role.
  node end2end/idp/oidc.mjs --dev --staff --port "$staff_idp_port" --client-id tidemark-console-dev \
    --client-secret tidemark-console-dev-secret --default-email staff@vendor.localhost \
    --redirect-uri "http://127.0.0.1:3000/console/auth/callback" &
  pids+=($!)
  export TIDEMARK_CONSOLE_OIDC_ISSUER="http://localhost:$staff_idp_port" \
    TIDEMARK_CONSOLE_OIDC_CLIENT_ID=tidemark-console-dev \
    TIDEMARK_CONSOLE_OIDC_CLIENT_SECRET=tidemark-console-dev-secret \
    TIDEMARK_CONSOLE_ROLES=vendor-admins=admin,sellers=sales,helpdesk=support,everyone=read
  message="${message:+$message
}  The vendor's console is at http://127.0.0.1:3000/console: sign in as any address, ticking
  the groups to hold (vendor-admins, sellers, helpdesk, everyone), through the development
  staff provider on localhost:$staff_idp_port."
fi

if [ "${1:-}" = --watch ]; then
  [ -z "$message" ] || printf '\n%s\n\n' "$message"
  cargo leptos watch --split
  exit
fi

# The release build, only when a source is newer than what was built: with nothing changed
# the server starts in seconds (cargo-leptos would run wasm-bindgen, wasm-opt and the
# precompression again, about 30 s).
server_bin=target/release/tidemark-server
wasm=target/site/pkg/tidemark.wasm
stale() {
  [ -x "$server_bin" ] && [ -s "$wasm" ] || return 0
  local newer
  newer=$(find app frontend server/src store/src domain/src wire/src migrations style public \
    Cargo.toml Cargo.lock app/Cargo.toml frontend/Cargo.toml server/Cargo.toml store/Cargo.toml \
    domain/Cargo.toml wire/Cargo.toml .cargo/config.toml -type f \( -newer "$server_bin" -o -newer "$wasm" \) \
    -print -quit 2>/dev/null)
  [ -n "$newer" ]
}
if stale; then
  cargo leptos build --release --precompress --split
else
  echo "run: nothing changed since the last build; starting it"
fi

LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR=${LEPTOS_SITE_ADDR:-127.0.0.1:3000} "$server_bin" serve &
server=$!
pids+=("$server")
# The address is printed once the server answers, not before.
for _ in $(seq 600); do
  curl -sf http://127.0.0.1:3000/readyz >/dev/null 2>&1 && break
  kill -0 "$server" 2>/dev/null || { echo "run: the server stopped (see above)" >&2; exit 1; }
  sleep 0.1
done
printf '\n  Tidemark (development) at http://127.0.0.1:3000\n'
[ -z "$message" ] || printf '%s\n' "$message"
echo
wait "$server"
