#!/usr/bin/env bash
# Issue 70, item 2 on SQLite: one release build, pushes planned early (TIDEMARK_SQLITE_PLAN_PUSHES_EARLY=1)
# against planned in the writer's turn (=0), alternated round by round (1 0 0 1 ...), each run on a
# fresh SQLite file with 200 enterprise accounts (as scripts/bench.sh): 50-finding pushes, 16
# connections, a 5 s warm-up, then SECONDS measured. From the server's /metrics it prints where the
# one writer's turn went per push (deciding, statements, the commit's fsync), the group size,
# the server's CPU a push and how many plans were written as planned or decided again.
#   bench/push-early-ab.sh [ROUNDS] [SECONDS]   (after `cargo leptos build --release`)
#   BIN=/path/to/tidemark-server bench/push-early-ab.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-2} secs=${2:-15} bin=${BIN:-target/release/tidemark-server}
command -v wrk >/dev/null || { echo "push-early-ab: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ -d target/site ] || { echo "push-early-ab: needs target/site (cargo leptos build --release)" >&2; exit 1; }

one_run() {
  local early=$1 work t1 t2 out
  work=$(mktemp -d)
  (
    trap 'kill ${server_pid:-} 2>/dev/null; rm -rf "$work"' EXIT
    export TIDEMARK_SQLITE_PLAN_PUSHES_EARLY=$early
    serve_with_licenses "$bin" "$work"
    activate_keys "$url" "$work/hashes" "$work/keys"
    KEYS_FILE="$work/keys" FINDINGS=50 wrk -t2 -c16 -d5s -s bench/wrk/push.lua "$url" >/dev/null
    figures() { curl -fsS "$url/metrics" | awk '/^tidemark_push_(decided|writer|group_size_(sum|count))/ { print $1, $2 }' | sort; }
    figures >"$work/before"
    t1=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    out=$(KEYS_FILE="$work/keys" FINDINGS=50 wrk --latency -t2 -c16 -d"${secs}s" -s bench/wrk/push.lua "$url")
    t2=$(awk '{ print $14 + $15 }' "/proc/$server_pid/stat")
    figures >"$work/after"
    if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then echo "push-early-ab: the server answered errors:" >&2; echo "$out" >&2; exit 1; fi
    join "$work/before" "$work/after" | awk -v early="$early" -v cpu=$((t2 - t1)) -v tick="$(getconf CLK_TCK)" \
      -v rps="$(awk '/Requests\/sec/ { print $2 }' <<<"$out")" -v p99="$(awk '$1 == "99%" { print $2 }' <<<"$out")" '
      { d[$1] = $3 - $2 }
      END {
        n = d["tidemark_push_group_size_sum"]; g = d["tidemark_push_group_size_count"]
        printf "| %s | %.1f | %s | %.1f | %.3f | %.3f | %.3f | %.2f | %d / %d |\n", early, rps, p99, n / g,
          1000 * d["tidemark_push_writer_decide_seconds_total"] / n, 1000 * d["tidemark_push_writer_write_seconds_total"] / n,
          1000 * d["tidemark_push_writer_commit_seconds_total"] / n, 1000 * cpu / tick / n,
          d["tidemark_push_decided_early_total"], d["tidemark_push_decided_again_total"] }'
  )
}

echo "| early | scans/s | p99 | group | writer: decide ms/push | statements ms/push | commit ms/push | server CPU ms/push | as planned / decided again |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  if [ $((r % 2)) -eq 1 ]; then order="1 0"; else order="0 1"; fi
  for early in $order; do one_run "$early"; done
done
