# Shared by scripts/bench.sh and the scripts of bench/: the 200 accounts a push run rotates over, and a server to run them on.

# create_licenses BIN HASHES: 200 enterprise licences made with the server binary BIN (its
# environment names the database); the SHA-256 of each licence key, one a line, into HASHES.
create_licenses() {
  local bin=$1 hashes=$2 i key
  : >"$hashes"
  for i in $(seq 1 200); do
    key=$("$bin" license create --email "bench$i@example.com" --tier enterprise --json 2>/dev/null |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["license_key"])')
    printf '%s' "$key" | sha256sum | cut -d' ' -f1 >>"$hashes"
  done
}

# activate_keys URL HASHES KEYS: activates each licence of HASHES on the server at URL; its
# API key, one a line, into KEYS.
activate_keys() {
  local url=$1 hashes=$2 keys=$3 hash
  : >"$keys"
  while read -r hash; do
    curl -fsS -X POST "$url/v1/license/activate" -H "X-License-Key-Hash: $hash" \
      -H 'Content-Type: application/json' -d '{"machine":"bench"}' |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["api_key"])' >>"$keys"
  done <"$hashes"
}

# free_port: a TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve_with_licenses BIN WORK: a release server on a fresh SQLite file under WORK, on a free
# port, with the 200 licences of create_licenses (hashes in WORK/hashes), started and ready.
# Sets `url` and `server_pid`; the caller stops it (trap 'kill $server_pid' EXIT).
serve_with_licenses() {
  local bin=$1 work=$2 port
  port=$(free_port)
  url="http://127.0.0.1:$port"
  export TIDEMARK_DATA_DIR="$work/data" LEPTOS_SITE_ROOT=target/site LEPTOS_SITE_ADDR="127.0.0.1:$port" \
    TIDEMARK_BASE_URL="$url" TIDEMARK_WRITES_PER_MINUTE=100000000 RUST_LOG=error \
    TIDEMARK_MASTER_KEY="$(head -c 32 /dev/urandom | base64)"
  "$bin" migrate >/dev/null
  create_licenses "$bin" "$work/hashes"
  "$bin" serve >"$work/server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 100); do curl -fsS "$url/readyz" >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "the server at $url did not become ready (log: $work/server.log)" >&2
  return 1
}
