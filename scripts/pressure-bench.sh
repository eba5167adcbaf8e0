#!/usr/bin/env bash
# Pressure benchmarks of issue 13 against the release server (bench/pressure/pressure.py):
#   big   - 30 parallel 15 MB pushes from one account beside another account's single pushes,
#           with the push budget as configured and with it lifted (for comparison);
#   flood - a 32-connection sign-in flood beside single pushes.
# Prints each run's figures and the server's peak RSS (VmHWM). Not part of `make test`.
# Usage: [PRESSURE_ONLY=big|flood] scripts/pressure-bench.sh [seconds-per-flood-phase]
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-15}
bin=target/release/tidemark-server
[ -x "$bin" ] || { echo "pressure-bench: build first (cargo leptos build --release)" >&2; exit 1; }

run() {  # run NAME MODE [ENV...]
  local name=$1 mode=$2; shift 2
  local data port url pid
  data=$(mktemp -d /tmp/tidemark-pressure.XXXXXX)
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  url="http://127.0.0.1:$port"
  local server=(env TIDEMARK_DATA_DIR="$data" LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR="127.0.0.1:$port"
    TIDEMARK_BASE_URL="$url" TIDEMARK_WRITES_PER_MINUTE=100000000 RUST_LOG=error
    TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)" "$@" "$bin")
  local keys=()
  for who in a b; do
    local lic hash
    lic=$("${server[@]}" license create --email "$who-$port@pressure.example" --tier enterprise --json | tail -n 1 |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["license_key"])')
    hash=$(printf %s "$lic" | sha256sum | cut -d' ' -f1)
    keys+=("$hash")
  done
  "${server[@]}" serve >"$data/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do curl -sf "$url/readyz" >/dev/null && break; sleep 0.1; done
  local api=()
  for hash in "${keys[@]}"; do
    api+=("$(curl -sf -X POST "$url/v1/license/activate" -H "X-License-Key-Hash: $hash" \
      -H 'Content-Type: application/json' -d '{"machine":"pressure"}' |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])')")
  done
  echo "== $name"
  python3 bench/pressure/pressure.py "$mode" "$url" "${api[0]}" "${api[1]}" "$secs"
  echo "server peak RSS: $(awk '/VmHWM/ {printf "%.0f MB", $2/1024}' "/proc/$pid/status")"
  kill -TERM "$pid"; wait "$pid" || true
  rm -rf "$data"
}

only=${PRESSURE_ONLY:-big,flood}
if [[ ,$only, == *,big,* ]]; then
  run "30 x 15 MB pushes, push budget 64 MiB (the default)" big
  run "30 x 15 MB pushes, push budget lifted (4096 MiB), for comparison" big TIDEMARK_PUSH_BUDGET_MIB=4096
fi
if [[ ,$only, == *,flood,* ]]; then
  run "32-connection sign-in flood (TIDEMARK_SIGNIN_PER_MINUTE=60, the default)" flood
fi
