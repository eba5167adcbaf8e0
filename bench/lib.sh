# Shared by scripts/bench.sh and bench/push-ab.sh: the 200 accounts a push run rotates over.

# create_licences BIN HASHES: 200 enterprise licences made with the server binary BIN (its
# environment names the database); the SHA-256 of each licence key, one a line, into HASHES.
create_licences() {
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
