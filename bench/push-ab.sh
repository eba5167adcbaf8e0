#!/usr/bin/env bash
# Push throughput of two release builds of tidemark-server through HTTP, side by side in one
# run: each binary serves its own SQLite file (200 enterprise accounts, as scripts/bench.sh),
# both stay up, and wrk loads one at a time in the order A B B A, repeated, so a machine that
# speeds up or slows down during the run counts against neither (one after the other, the
# CPU-bound /healthz of two runs differed by 17 %, more than the budget being judged).
# Usage: bench/push-ab.sh BIN_A BIN_B [rounds] [seconds-per-phase]
#   e.g. a build from before a change, made in a worktree with its own target directory:
#   bench/push-ab.sh /work/bench-target/release/tidemark-server target/release/tidemark-server 3 15
# Prints each phase's scans/s and p99, then each side's total and the cost of a push of B
# against A (the time per scan, B over A, less one).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
[ $# -ge 2 ] || { sed -n 2,11p "$0" >&2; exit 2; }
bins=("$1" "$2")
rounds=${3:-3}
secs=${4:-15}
command -v wrk >/dev/null || { echo "push-ab: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ -d target/site ] || { echo "push-ab: needs target/site (cargo leptos build --release)" >&2; exit 1; }

work=$(mktemp -d /tmp/tidemark-ab.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

urls=()
for side in 0 1; do
  dir="$work/$side"; mkdir -p "$dir"
  port=$(free_port)
  urls[side]="http://127.0.0.1:$port"
  (
    export TIDEMARK_DATA_DIR="$dir/data" LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR="127.0.0.1:$port" \
      TIDEMARK_BASE_URL="${urls[side]}" TIDEMARK_WRITES_PER_MINUTE=100000000 RUST_LOG=error \
      TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)"
    "${bins[side]}" migrate >/dev/null
    create_licenses "${bins[side]}" "$dir/hashes"
    exec "${bins[side]}" serve >"$dir/server.log" 2>&1
  ) &
  pids+=($!)
done
for side in 0 1; do
  for _ in $(seq 1 600); do curl -fsS "${urls[side]}/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
  activate_keys "${urls[side]}" "$work/$side/hashes" "$work/$side/keys"
done

echo "== push, 50 findings, 16 connections, ${secs} s phases, A = ${bins[0]}, B = ${bins[1]}"
: >"$work/phases"
phase() {
  local side=$1 out
  out=$(KEYS_FILE="$work/$side/keys" FINDINGS=50 wrk --latency -t2 -c16 -d"${secs}s" \
    -s bench/wrk/push.lua "${urls[side]}")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then
    echo "push-ab: side $side answered errors:" >&2; echo "$out" >&2; exit 1
  fi
  local rps p99
  rps=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
  p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
  echo "$side $rps $p99" >>"$work/phases"
  printf '%s  %10s scans/s  p99 %s\n' "$([ "$side" = 0 ] && echo A || echo B)" "$rps" "$p99"
}
for _ in $(seq 1 "$rounds"); do phase 0; phase 1; phase 1; phase 0; done
awk '{ n[$1]++; sum[$1] += $2 }
  END { a = sum[0] / n[0]; b = sum[1] / n[1];
        printf "A mean %.1f scans/s, B mean %.1f scans/s: a push of B costs %+.1f %% against A\n", a, b, (a / b - 1) * 100 }' \
  "$work/phases"
