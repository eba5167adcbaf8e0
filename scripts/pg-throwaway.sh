#!/usr/bin/env bash
# Runs a command with TIDEMARK_TEST_POSTGRES_URL pointing at a PostgreSQL server.
# If the variable is already set, that server is used as it is. Otherwise a throwaway server
# is started (new data directory, free port, sockets in the same directory) and stopped and
# deleted afterwards, whatever the command's outcome. PG_KEEP_DIR=<dir> keeps the server's
# directory instead (created on first use, stopped cleanly but not deleted, reused next time):
# how the scale bench grows a large account across sittings.
set -euo pipefail

if [ -n "${TIDEMARK_TEST_POSTGRES_URL:-}" ]; then
  exec "$@"
fi

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "error: PostgreSQL server binaries not found under /usr/lib/postgresql (run scripts/setup.sh)" >&2
  exit 1
fi

if [ -n "${PG_KEEP_DIR:-}" ]; then
  dir=$PG_KEEP_DIR
  mkdir -p "$dir"
else
  dir=$(mktemp -d /tmp/tidemark-pg.XXXXXX)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# PostgreSQL refuses to run as root: use the postgres account when we are root.
if [ "$(id -u)" = 0 ]; then
  chown postgres: "$dir"
  run_pg() { runuser -u postgres -- "$@"; }
else
  run_pg() { "$@"; }
fi

cleanup() {
  if [ -n "${PG_KEEP_DIR:-}" ]; then
    # A clean shutdown: the kept data must survive (durability is off below).
    run_pg "$pg_bin/pg_ctl" -D "$dir/data" -m fast stop >/dev/null 2>&1 || true
  else
    run_pg "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

if [ ! -f "$dir/data/PG_VERSION" ]; then
  run_pg "$pg_bin/initdb" -D "$dir/data" -U tidemark --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; exit 1; }
fi
# Durability off: this server lives for one test run only. PG_DURABLE=1 (the benchmarks) keeps
# PostgreSQL's durable defaults: fsync, synchronous_commit and full_page_writes on.
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${PG_DURABLE:-}" = 1 ] && durability="-c fsync=on -c synchronous_commit=on -c full_page_writes=on"
# PG_PROFILE=1 loads pg_stat_statements, to see where the server's time goes in a benchmark,
# and logs every lock wait past 20 ms with who holds the lock ($PG_THROWAWAY_DIR/server.log).
[ "${PG_PROFILE:-}" = 1 ] && durability="$durability -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c log_lock_waits=on -c deadlock_timeout=20ms"
run_pg "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 $durability -c max_connections=300" \
  start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 1; }
echo "pg-throwaway: PostgreSQL on 127.0.0.1:$port (data in $dir)"

export TIDEMARK_TEST_POSTGRES_URL="postgres://tidemark@127.0.0.1:$port/postgres"
export PG_THROWAWAY_DIR=$dir
"$@"
