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
idp_pid=
if [ -z "${TIDEMARK_OIDC_ISSUER:-}" ]; then
  # The provider's client secret is as public as the provider: it signs in anyone.
  node end2end/idp/oidc.mjs --dev --port "$idp_port" --client-id tidemark-dev \
    --client-secret tidemark-dev-secret --default-email demo@tidemark.localhost \
    --redirect-uri "http://127.0.0.1:3000/auth/oidc/callback" &
  idp_pid=$!
  trap 'kill $idp_pid 2>/dev/null || true' EXIT
  export TIDEMARK_OIDC_ISSUER="http://localhost:$idp_port" TIDEMARK_OIDC_CLIENT_ID=tidemark-dev \
    TIDEMARK_OIDC_CLIENT_SECRET=tidemark-dev-secret
  export TIDEMARK_DEV_DEMO=${TIDEMARK_DEV_DEMO:-1}
  cat <<MSG

  Tidemark (development) at http://127.0.0.1:3000
  Sign in at http://127.0.0.1:3000/signin as demo@tidemark.localhost (admin of a demo
  account with sample scans) through the development OpenID provider on localhost:$idp_port.

MSG
fi

if [ "${1:-}" = --watch ]; then
  cargo leptos watch
else
  cargo leptos serve --release --precompress
fi
