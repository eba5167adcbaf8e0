#!/usr/bin/env bash
# Issue 48's push goal, judged as it is stated: push through HTTP (50 findings, 16 connections,
# wrk and bench/wrk/push.lua, 200 enterprise accounts as scripts/bench.sh) against the raw C
# baseline writing the same rows 8 scans per transaction (target/release/sqlite-baseline), in
# one run, alternated round by round (C, push, C) so the machine's drift falls on both alike:
# one after the other, either side alone moved by a third between sittings (docs/benchmarks.md).
#   bench/push-vs-c.sh [ROUNDS] [SECONDS]   (after `cargo leptos build --release` and
#                                            `cargo build --release -p tidemark-bench --bin sqlite-baseline`)
#   BIN=/path/to/tidemark-server bench/push-vs-c.sh   (another build)
# Prints each round and the ratio of the means; the goal is >= 35 % with p99 < 30 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3} secs=${2:-15} bin=${BIN:-target/release/tidemark-server}
command -v wrk >/dev/null || { echo "push-vs-c: needs wrk (apt-get install wrk)" >&2; exit 1; }
[ -x target/release/sqlite-baseline ] ||
  { echo "push-vs-c: needs target/release/sqlite-baseline (cargo build --release -p tidemark-bench --bin sqlite-baseline)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill ${server_pid:-} 2>/dev/null; rm -rf "$work"' EXIT
serve_with_licenses "$bin" "$work"
activate_keys "$url" "$work/hashes" "$work/keys"
c_rate() { target/release/sqlite-baseline 8000 50 migrations 8 | sed -nE 's/.*"scans_per_second": ([0-9.]+).*/\1/p'; }
echo "| round | C grouped before | push (scans/s) | push p99 | C grouped after | push ÷ C |"
echo "|---|---|---|---|---|---|"
: >"$work/rounds"
for r in $(seq 1 "$rounds"); do
  before=$(c_rate)
  out=$(KEYS_FILE="$work/keys" FINDINGS=50 wrk --latency -t2 -c16 -d"${secs}s" -s bench/wrk/push.lua "$url")
  if grep -qE 'Non-2xx|Socket errors' <<<"$out"; then echo "push-vs-c: the server answered errors:" >&2; echo "$out" >&2; exit 1; fi
  push=$(awk '/Requests\/sec/ { print $2 }' <<<"$out")
  p99=$(awk '$1 == "99%" { print $2 }' <<<"$out")
  after=$(c_rate)
  echo "$before $push $after $p99" >>"$work/rounds"
  awk -v r="$r" -v b="$before" -v p="$push" -v a="$after" -v q="$p99" \
    'BEGIN { printf "| %d | %.1f | %.1f | %s | %.1f | %.1f %% |\n", r, b, p, q, a, 200 * p / (a + b) }'
done
awk '{ c += $1 + $3; p += $2; n++ } END { printf "\nmeans: push %.1f scans/s, C grouped %.1f scans/s: push is %.1f %% of C (goal >= 35 %%)\n", p / n, c / (2 * n), 100 * p / (c / 2) }' "$work/rounds"
