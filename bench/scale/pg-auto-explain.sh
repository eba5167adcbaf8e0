#!/usr/bin/env bash
# The scale bench on a throwaway PostgreSQL that logs the plan of every statement over 40 ms
# (auto_explain), kept as /tmp/pg-server.log: how the projects page's sequential scan and the
# /v1 findings list's merge join were found (docs/benchmarks.md, "The projects page paged").
#   scripts/pg-throwaway.sh bench/scale/pg-auto-explain.sh 10,100 > scale-pg.jsonl
set -euo pipefail
url=$TIDEMARK_TEST_POSTGRES_URL
# LOAD first: ALTER SYSTEM refuses auto_explain's settings until the module is known.
psql "$url" -qc "LOAD 'auto_explain'" \
  -c "ALTER SYSTEM SET session_preload_libraries = 'auto_explain'" \
  -c "ALTER SYSTEM SET auto_explain.log_min_duration = '40ms'" \
  -c "ALTER SYSTEM SET auto_explain.log_nested_statements = on" -c "SELECT pg_reload_conf()" >/dev/null
datadir=$(psql "$url" -Atc "SHOW data_directory")
status=0
DATABASE_URL=$url "$(dirname "$0")/../../target/release/scale-bench" "${1:-10,100}" || status=$?
cp "$datadir/../server.log" /tmp/pg-server.log
exit "$status"
