#!/usr/bin/env bash
# Edit-to-running time of the development loop (`make dev`, i.e. `cargo leptos watch`): starts
# the loop, waits until it serves, then changes one string in `app/` and times how long until
# the running server answers with it. Restores the file. Three edits; prints one line each.
# Usage: bench/dev/edit-loop.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
file=app/src/pages.rs
cp "$file" /tmp/edit-loop.orig
log=$(mktemp /tmp/edit-loop.XXXXXX.log)
TIDEMARK_DATA_DIR=$(mktemp -d /tmp/edit-loop-data.XXXXXX) scripts/run.sh --watch >"$log" 2>&1 &
pid=$!
cleanup() { cp /tmp/edit-loop.orig "$file"; pkill -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; pkill -f 'target/debug/tidemark-server' || true; }
trap cleanup EXIT
until curl -fsS -o /dev/null http://127.0.0.1:3000/healthz 2>/dev/null; do sleep 0.5; done
# The file watcher starts after the first server does.
until grep -q 'Creating.*ignore list' "$log"; do sleep 0.2; done
sleep 2
for n in 1 2 3; do
  sed -i "s/<h1>\"Page not found[^\"]*\"<\/h1>/<h1>\"Page not found (edit $n)\"<\/h1>/" "$file"
  start=$(date +%s.%N)
  until curl -sS http://127.0.0.1:3000/no-such-page 2>/dev/null | grep -q "Page not found (edit $n)"; do sleep 0.2; done
  echo "edit $n: $(echo "$(date +%s.%N) - $start" | bc) s from save to the running server answering with it"
  sleep 3 # the watcher settles before the next save
done
