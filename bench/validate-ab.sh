#!/usr/bin/env bash
# validate against /healthz on one release server, alternated round by round so the machine's
# drift between runs falls on both alike, from two load generators: wrk (a fixed POST, no Lua
# per request) and nghttp2's h2load (posting a 2-byte body: it cannot post an empty one).
# Issue 48's goal is validate >= 90 % of /healthz (docs/benchmarks.md, fifth step).
#   bench/validate-ab.sh [ROUNDS] [SECONDS]     (after `cargo leptos build --release`)
#   BIN=/path/to/tidemark-server bench/validate-ab.sh   (another build, for a before/after)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
rounds=${1:-3} secs=${2:-5} bin=${BIN:-target/release/tidemark-server}
command -v wrk >/dev/null && command -v h2load >/dev/null ||
  { echo "validate-ab: needs wrk and h2load (apt-get install wrk nghttp2-client)" >&2; exit 1; }
work=$(mktemp -d)
trap 'kill ${server_pid:-} 2>/dev/null; rm -rf "$work"' EXIT
serve_with_licenses "$bin" "$work"
# 200 licences, as scripts/bench.sh asks them in turn (its Lua script); the fixed runs ask the first.
hash=$(head -n 1 "$work/hashes")
printf 'wrk.method = "POST"\n' >"$work/post.lua"
printf '{}' >"$work/body.json"
rate() { "$@" 2>&1 | sed -nE 's/^Requests\/sec: *([0-9.]+).*/\1/p; s/^finished in [0-9.]+s, ([0-9.]+) req\/s.*/\1/p'; }
echo "| round | wrk /healthz | wrk validate | wrk validate, 200 licences in turn | h2load /healthz | h2load validate |"
echo "|---|---|---|---|---|---|"
for r in $(seq 1 "$rounds"); do
  a=$(rate wrk -t2 -c64 -d"${secs}s" "$url/healthz")
  b=$(rate wrk -t2 -c64 -d"${secs}s" -s "$work/post.lua" -H "X-License-Key-Hash: $hash" "$url/v1/license/validate")
  e=$(HASHES_FILE="$work/hashes" rate wrk -t2 -c64 -d"${secs}s" -s bench/wrk/validate.lua "$url")
  c=$(rate h2load --h1 -t2 -c64 -D "$secs" "$url/healthz")
  d=$(rate h2load --h1 -t2 -c64 -D "$secs" -d "$work/body.json" -H "X-License-Key-Hash: $hash" "$url/v1/license/validate")
  awk -v r="$r" -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v e="$e" \
    'BEGIN { printf "| %d | %.1f | %.1f (%.0f %%) | %.1f (%.0f %%) | %.1f | %.1f (%.0f %%) |\n", r, a, b, 100 * b / a, e, 100 * e / a, c, d, 100 * d / c }'
done
