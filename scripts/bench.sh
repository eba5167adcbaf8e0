#!/usr/bin/env bash
# Benchmarks of the /v1 API against the running release server, side by side in one run:
#   1. a static JSON route (/healthz) vs POST /v1/license/validate (throughput, p99), from wrk
#      and again from an independent load generator (h2load);
#   2. POST /v1/dashboard/push with 50 findings (many accounts) vs raw SQLite inserts of the
#      same rows, one transaction per scan and 8 scans per transaction (the group-commit limit);
#   3. one 5,000-finding push; the server's peak RSS over the whole run;
#   4. storage growth per push (bench/storage/growth.py, the workload of issue 36).
# Load comes from Debian's wrk on loopback; every loop is bounded in time.
# Usage: scripts/bench.sh [seconds-per-run]   (results: stdout, and docs/benchmarks.md by hand)
#   BENCH_PERF=FILE  also record a `perf` profile of the server during the push run into FILE
#   BENCH_DB=postgres  run the server on a throwaway PostgreSQL with its durable defaults (fsync,
#                      synchronous_commit and full_page_writes on), and take the raw baseline
#                      with pgbench (bench/pgbench/push.sql) on the same server and schema
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
export PATH="$PWD/node_modules/.bin:$HOME/.cargo/bin:$PATH"
secs=${1:-15}
db=${BENCH_DB:-sqlite}
command -v wrk >/dev/null || { echo "bench: needs wrk (apt-get install wrk)" >&2; exit 1; }
command -v h2load >/dev/null || { echo "bench: needs h2load (apt-get install nghttp2-client)" >&2; exit 1; }
if [ "$db" = postgres ] && [ -z "${TIDEMARK_TEST_POSTGRES_URL:-}" ]; then
  exec env PG_DURABLE=1 scripts/pg-throwaway.sh "$0" "$@"
fi

if [ "$db" = sqlite ]; then cargo build --release -p tidemark-bench --bin sqlite-baseline; fi
cargo leptos build --release --precompress --split >/dev/null 2>&1 || { echo "bench: release build failed" >&2; exit 1; }

work=$(mktemp -d /tmp/tidemark-bench.XXXXXX)
server_pid=
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

port=$(free_port)
url="http://127.0.0.1:$port"
export TIDEMARK_DATA_DIR="$work/data" LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR="127.0.0.1:$port" \
  TIDEMARK_BASE_URL="$url" TIDEMARK_WRITES_PER_MINUTE=100000000 TIDEMARK_TRUSTED_PROXIES=127.0.0.1/32 RUST_LOG=error \
  TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)"
if [ "$db" = postgres ]; then
  pg=${TIDEMARK_TEST_POSTGRES_URL%/*}
  psql -qX "$pg/postgres" -c 'CREATE DATABASE tidemark' -c 'CREATE DATABASE baseline'
  echo "== PostgreSQL $(psql -qXAt "$pg/postgres" -c 'SHOW server_version'):" \
    "$(psql -qXAt "$pg/postgres" -c "SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections')")"
  export DATABASE_URL="$pg/tidemark"
fi
target/release/tidemark-server migrate >/dev/null

echo "== creating 200 accounts"
create_licenses target/release/tidemark-server "$work/hashes"
head -c 3000000 /dev/urandom >"$work/bundle.tar"
target/release/tidemark-server bundle publish "$work/bundle.tar" >/dev/null

target/release/tidemark-server serve >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
activate_keys "$url" "$work/hashes" "$work/keys"

run() { echo; echo "== $1"; shift; wrk --latency "$@" | grep -E 'Requests/sec|Latency  |  50%|  99%|Non-2xx|Socket errors'; }
# The server's memory after each step, so the step that sets the peak is known.
rss() { awk -v step="$1" '/^(VmHWM|VmRSS|RssAnon):/ { v = v " " $1 " " $2 / 1024 " MB" } END { print "memory after " step ":" v }' "/proc/$server_pid/status"; }
run "static JSON route GET /healthz" -t2 -c64 -d"${secs}s" "$url/healthz"
rss healthz
HASHES_FILE="$work/hashes" run "POST /v1/license/validate" -t2 -c64 -d"${secs}s" -s bench/wrk/validate.lua "$url"
rss validate
# The same comparison from an independent load generator (nghttp2's h2load, C, over HTTP/1.1,
# no script): one licence asked again and again, as one scanner fleet does.
h2() { echo; echo "== $1 (h2load)"; shift; h2load --h1 -t2 -c64 -D "$secs" "$@" | grep -E '^(finished in|requests:|status codes:)|time for request:'; }
h2 "static JSON route GET /healthz" "$url/healthz"
printf '{}' >"$work/empty.json"  # h2load posts a file's bytes; validate reads none of them
h2 "POST /v1/license/validate, one licence" -d "$work/empty.json" -H "X-License-Key-Hash: $(head -n 1 "$work/hashes")" "$url/v1/license/validate"
perf_pid=
if [ -n "${BENCH_PERF:-}" ]; then
  perf record -g -F 499 -o "$BENCH_PERF" -p "$server_pid" >/dev/null 2>&1 &
  perf_pid=$!
fi
if [ "$db" = postgres ]; then wal_before=$(psql -qXAt "$DATABASE_URL" -c 'SELECT pg_current_wal_lsn()'); fi
# The server's CPU time (user + system, in clock ticks) around the push run.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$server_pid/stat"; }
cpu_before=$(cpu_ticks)
KEYS_FILE="$work/keys" FINDINGS=50 run "POST /v1/dashboard/push, 50 findings" -t2 -c16 -d"${secs}s" -s bench/wrk/push.lua "$url"
rss push
if [ -n "$perf_pid" ]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
cpu_after=$(cpu_ticks)
if [ "$db" = postgres ]; then
  stored=$(psql -qXAt "$DATABASE_URL" -c 'SELECT count(*) FROM scans')
  echo "scans stored: $stored"
  awk -v t=$((cpu_after - cpu_before)) -v n="$stored" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "server CPU per stored scan: %.2f ms\n", t / hz * 1000 / n }'
  psql -qXAt "$DATABASE_URL" -c "SELECT 'WAL per stored scan: ' || round(pg_wal_lsn_diff(pg_current_wal_lsn(), '$wal_before') / greatest(count(*), 1)) || ' bytes' FROM scans"
else
  python3 -c "import sqlite3,sys; print('scans stored:', sqlite3.connect(sys.argv[1]).execute('select count(*) from scans').fetchone()[0])" "$work/data/tidemark.db"
fi

echo; echo "== resend timing: an address with a license vs one without (each request from its own address)"
half=$((secs / 2 + 1))
RUN=1 EMAIL=nobody@example.com run "resend, no license" -t2 -c16 -d"${half}s" -s bench/wrk/resend.lua "$url"
RUN=2 EMAIL=bench1@example.com run "resend, license exists" -t2 -c16 -d"${half}s" -s bench/wrk/resend.lua "$url"
RUN=3 EMAIL=nobody@example.com run "resend, no license (again)" -t2 -c16 -d"${half}s" -s bench/wrk/resend.lua "$url"
rss resend

echo; echo "== one push with 5,000 findings (5 runs, new scan each)"
key=$(head -n 1 "$work/keys")
for r in 1 2 3 4 5; do
  python3 - "$r" >"$work/big.json" <<'PY'
import json, sys
r = int(sys.argv[1])
f = [{"rule_id": f"cis-{i}", "resource": f"google_compute_instance.vm_{i}", "status": "FAIL",
      "severity": "medium", "message": "Default service account in use",
      "remediation": "Use a dedicated service account"} for i in range(5000)]
print(json.dumps({"project_label": "big", "cloud": "aws", "cloud_account_id": "123456789012",
  "frameworks": ["cis-aws-3.0"], "score": 50 + r, "passed": 10, "failed": 5000,
  "severity_counts": {"critical": 0, "high": 0, "medium": 5000, "low": 0}, "findings": f,
  "state_source": "ci", "scanned_at": f"2026-11-22T10:00:0{r}Z"}))
PY
  curl -sS -o /dev/null -w "status %{http_code}  %{size_upload} bytes  %{time_total}s\n" -X POST "$url/v1/dashboard/push" \
    -H "X-API-Key: $key" -H 'Content-Type: application/json' --data-binary @"$work/big.json"
done
rss "5,000-finding pushes"

echo; echo "== storage growth: 5,000 findings over 250 rules pushed 20 times, 50 statuses changed each time (issue 36)"
if [ "$db" = postgres ]; then
  python3 bench/storage/growth.py "$url" "$key" postgres "$DATABASE_URL" 20
else
  python3 bench/storage/growth.py "$url" "$key" sqlite "$work/data/tidemark.db" 20
fi
rss "storage growth"

# fsync time on this kind of VM swings by a third between runs: compare with the median.
if [ "$db" = postgres ]; then
  echo; echo "== raw PostgreSQL baseline: same rows, one transaction per scan (pgbench, prepared statements, 16 clients), 3 runs"
  DATABASE_URL="$pg/baseline" target/release/tidemark-server migrate >/dev/null
  psql -qX "$pg/baseline" -f bench/pgbench/seed.sql
  for _ in 1 2 3; do
    pgbench -n -M prepared -c 16 -j 2 -T "$secs" -f bench/pgbench/push.sql "$pg/baseline" 2>&1 |
      grep -E '^(tps|latency average|number of failed)'
  done
  echo "baseline scans stored: $(psql -qXAt "$pg/baseline" -c 'SELECT count(*) FROM scans')"
  echo; echo "== PostgreSQL's own curve: the same baseline by concurrent clients (one run each)"
  for c in 1 4 16 64; do
    printf 'clients %2d: ' "$c"
    pgbench -n -M prepared -c "$c" -j 2 -T "$secs" -f bench/pgbench/push.sql "$pg/baseline" 2>&1 |
      awk '/^tps/ { tps = $3 } /^latency average/ { lat = $4 } END { printf "%s scans/s, mean latency %s ms\n", tps, lat }'
  done
else
  echo; echo "== raw SQLite baseline: same rows, one transaction per scan (C API, prepared statements), 3 runs"
  for _ in 1 2 3; do target/release/sqlite-baseline 3000 50 migrations; done
  # The ceiling of a group commit: the server groups waiting pushes (a mean of about 8 at 16
  # pushers), so its figure is compared with the same rows written 8 scans per transaction.
  echo; echo "== raw SQLite baseline, grouped: same rows, 8 scans per transaction (one fsync per group), 3 runs"
  for _ in 1 2 3; do target/release/sqlite-baseline 8000 50 migrations 8; done
fi

echo; echo "== server peak RSS"
grep -E 'VmHWM|VmRSS|RssAnon|RssFile' "/proc/$server_pid/status"
