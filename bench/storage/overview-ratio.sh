#!/usr/bin/env bash
# Issue 70's overview goal, judged as it is stated: the overview's p95 at N = 1,000 at most
# 1.3x its p95 at N = 100. One run of storage-bench per size swung by 2x between sittings
# (docs/benchmarks-log.md), so two accounts are kept, one grown to 100 projects and one to
# 1,000, and read in turn round by round (100, 1000, 100, 1000, ...): the machine's drift
# falls on both alike.
#
#   bench/storage/overview-ratio.sh [ROUNDS] [DIR]          SQLite (DIR/n100, DIR/n1000)
#   scripts/pg-throwaway.sh bench/storage/overview-ratio.sh [ROUNDS] [DIR]
#                                                           PostgreSQL: two databases
# (after `cargo leptos build --release` and
#  `cargo build --release -p tidemark-bench --bin storage-bench`)
#
# Prints storage-bench's lines (stdout, JSON) and, at the end, each round's ratio and the
# ratio of the median p95s (stderr). DIR (default: a temporary one) keeps both accounts, so a
# second run skips their growth.
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds=${1:-4}
# Without DIR the two accounts (gigabytes at N = 1,000) go with the run.
made=
if [ -n "${2:-}" ]; then dir=$2; else dir=$(mktemp -d) made=$dir; fi
bench=target/release/storage-bench
[ -x "$bench" ] ||
  { echo "overview-ratio: needs $bench (cargo build --release -p tidemark-bench --bin storage-bench)" >&2; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"; [ -z "$made" ] || rm -rf "$made"' EXIT

# Runs storage-bench for one size against that size's own account.
run() {
  local n=$1
  mkdir -p "$dir/n$n"
  if [ -n "${TIDEMARK_TEST_POSTGRES_URL:-}" ]; then
    local db="overview_n$n" base=${TIDEMARK_TEST_POSTGRES_URL%/*}
    local exists
    exists=$(psql -q "$TIDEMARK_TEST_POSTGRES_URL" -Atc "SELECT 1 FROM pg_database WHERE datname = '$db'")
    [ "$exists" = 1 ] || psql -q "$TIDEMARK_TEST_POSTGRES_URL" -c "CREATE DATABASE $db"
    DATABASE_URL="$base/$db" SCALE_DATA_DIR="$dir/n$n" "$bench" "$n"
  else
    SCALE_DATA_DIR="$dir/n$n" "$bench" "$n"
  fi
}

# Growth first (not timed as a round): each account to its size.
run 100 >/dev/null
run 1000 >/dev/null
for _ in $(seq 1 "$rounds"); do
  run 100 | tee -a "$out"
  run 1000 | tee -a "$out"
done
python3 - "$out" >&2 <<'EOF'
import json, statistics, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
small = [r["overview"]["p95"] for r in rows if r["projects"] == 100]
large = [r["overview"]["p95"] for r in rows if r["projects"] == 1000]
for i, (s, l) in enumerate(zip(small, large), 1):
    print(f"round {i}: N = 100 {s:.1f} ms, N = 1,000 {l:.1f} ms, x{l / s:.2f}")
ratio = statistics.median(large) / statistics.median(small)
print(f"medians: N = 100 {statistics.median(small):.1f} ms, N = 1,000 "
      f"{statistics.median(large):.1f} ms: x{ratio:.2f} (goal <= 1.3)")
EOF
