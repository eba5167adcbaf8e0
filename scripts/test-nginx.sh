#!/usr/bin/env bash
# Runs Debian's nginx in the foreground as the tests' TLS proxy, configured with the documented
# site file deploy/nginx/tidemark.conf (the host name, ports, upstreams and certificate paths
# substituted; a pattern that is no longer in the file fails here rather than quietly testing
# something else), with a certificate from a throwaway CA (scripts/test-cert.sh).
#   scripts/test-nginx.sh DIR HTTPS_PORT HTTP_PORT UPSTREAM [UPSTREAM...]
# DIR receives certs/ca.pem (what clients must trust), the configuration and error.log.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir=${1:?usage: scripts/test-nginx.sh DIR HTTPS_PORT HTTP_PORT UPSTREAM...}
https_port=${2:?}
http_port=${3:?}
shift 3
[ $# -gt 0 ] || { echo "test-nginx: name at least one upstream (host:port)" >&2; exit 2; }
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
"$root/scripts/test-cert.sh" "$dir/certs"

site=$(cat "$root/deploy/nginx/tidemark.conf")
substitute() {
  case "$site" in
    *"$1"*) site=${site//"$1"/"$2"} ;;
    *) echo "test-nginx: deploy/nginx/tidemark.conf no longer contains: $1" >&2; exit 1 ;;
  esac
}
servers=""
for upstream in "$@"; do servers+="server $upstream max_fails=1 fail_timeout=5s;"$'\n    '; done
substitute "server 127.0.0.1:3000 max_fails=1 fail_timeout=5s;"$'\n    ' "$servers"
substitute "listen 80;" "listen 127.0.0.1:$http_port;"
substitute "listen 443 ssl http2;" "listen 127.0.0.1:$https_port ssl http2;"
substitute "/etc/ssl/tidemark/fullchain.pem" "$dir/certs/server.pem"
substitute "/etc/ssl/tidemark/privkey.pem" "$dir/certs/server.key"
printf '%s\n' "$site" >"$dir/tidemark.conf"

# One process (no master): stopping it stops nginx, and a test's nginx never outlives it.
cat >"$dir/nginx.conf" <<CONF
daemon off;
master_process off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  include $dir/tidemark.conf;
}
CONF
nginx=/usr/sbin/nginx
[ -x "$nginx" ] || nginx=nginx
exec "$nginx" -p "$dir" -e "$dir/error.log" -c "$dir/nginx.conf"
