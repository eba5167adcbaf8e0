#!/usr/bin/env bash
# The OCI image as an operator's container runtime would run it (issue 49, docs/install.md).
# Containers may not run on these machines, so the image's own root filesystem is exported
# (`podman create` + `podman export`) and the server runs from it under chroot, as the image's
# user, with the image's environment, entrypoint and command, and /proc mounted as a runtime
# would: it must migrate, answer /readyz and its HEALTHCHECK, take a licence made by the
# image's binary (as `podman exec` would) and a push, and write nowhere but /data (the image
# runs with a read-only root). Also checked: the image's user, volume, labels and health
# check, and that the compose file's rewrite of the nginx site file still applies to it.
# Built from the test step's binary (a release image is built the same way by
# deploy/oci/build-image.sh), in a podman storage directory of its own, removed afterwards.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/packaging/checks.sh

[ "$(id -u)" = 0 ] || { echo "image-test: must run as root (chroot, mount)" >&2; exit 1; }
command -v podman >/dev/null || { echo "image-test: podman is missing; run scripts/setup.sh" >&2; exit 1; }
binary=${TIDEMARK_SERVER_BIN:-target/debug/tidemark-server}

work=$(mktemp -d /tmp/tidemark-oci.XXXXXX)
root=$work/root
log=$work/server.log
server_pid=
podman_opts=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs --log-level error)
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  mountpoint -q "$root/proc" 2>/dev/null && umount "$root/proc"
  podman "${podman_opts[@]}" rm -f tidemark-test >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "image-test: $1" >&2
  [ -f "$log" ] && { echo "server log:" >&2; tail -n 20 "$log" >&2; }
  exit 1
}

tag=localhost/tidemark:test
build_opts=(--root "$work/build-storage" --runroot "$work/build-run" --storage-driver vfs --log-level error)
deploy/oci/build-image.sh --binary "$binary" --tag "$tag" --save "$work/image.tar" -- "${build_opts[@]}" \
  || fail "the image did not build"
podman "${build_opts[@]}" rmi -a -f >/dev/null 2>&1 || true
rm -rf "$work/build-storage" "$work/build-run"
# Everything below is checked on the archive an operator gets, loaded into an empty store as
# `podman load -i` (or `docker load -i`) would, not on the build's own store.
podman "${podman_opts[@]}" load --quiet --input "$work/image.tar" >/dev/null || fail "the saved archive did not load"
rm "$work/image.tar"
inspect() { podman "${podman_opts[@]}" image inspect --format "$1" "$tag"; }
user=$(inspect '{{.Config.User}}')
case "$user" in ''|0|0:*|root|root:*) fail "the image runs as root ($user)" ;; esac
[ "$(inspect '{{json .Config.Volumes}}')" = '{"/data":{}}' ] || fail "the image's volume is not /data: $(inspect '{{json .Config.Volumes}}')"
mapfile -t health < <(inspect '{{range .Config.Healthcheck.Test}}{{println .}}{{end}}' | sed '/^$/d')
[ "${health[0]:-}" = CMD ] && [ ${#health[@]} -gt 1 ] || fail "the image's HEALTHCHECK is not an exec form: ${health[*]}"
for label in title version revision created licenses; do
  [ -n "$(inspect "{{index .Config.Labels \"org.opencontainers.image.$label\"}}")" ] \
    || fail "the image lacks the label org.opencontainers.image.$label"
done
version=$(inspect '{{index .Config.Labels "org.opencontainers.image.version"}}')
grep -q "image: localhost/tidemark:$version\$" deploy/oci/compose.yaml || fail "deploy/oci/compose.yaml names another image than localhost/tidemark:$version"
# The compose file's pointer to its docs names a section docs/install.md has.
section=$(sed -n 's/.*docs\/install\.md, "\([^"]*\)".*/\1/p' deploy/oci/compose.yaml | head -n 1)
[ -n "$section" ] && grep -q "^## $section\$" docs/install.md \
  || fail "deploy/oci/compose.yaml points to a section docs/install.md does not have: \"$section\""


# The compose file's nginx command, applied to the site file as shipped, must produce both
# replicas' upstream lines (a changed site file would silently leave one replica).
nginx_sed=$(python3 -c 'import yaml; print(yaml.safe_load(open("deploy/oci/compose.yaml"))["services"]["nginx"]["command"][2])' \
  | sed -n "s/^sed -e '\([^']*\)'.*/\1/p")
[ -n "$nginx_sed" ] || fail "could not read the compose file's nginx rewrite"
sed -e "$nginx_sed" deploy/nginx/tidemark.conf | grep "server tidemark-2:3000" >/dev/null \
  || fail "the compose file's rewrite no longer matches deploy/nginx/tidemark.conf's upstream line"

podman "${podman_opts[@]}" create --name tidemark-test "$tag" >/dev/null || fail "podman create failed"
podman "${podman_opts[@]}" export --output "$work/rootfs.tar" tidemark-test || fail "podman export failed"
mkdir "$root"
tar --numeric-owner -xpf "$work/rootfs.tar" -C "$root"
rm "$work/rootfs.tar"
mkdir -p "$root/proc"
mount -t proc proc "$root/proc" || fail "could not mount /proc in the exported root"

mapfile -t image_env < <(inspect '{{range .Config.Env}}{{println .}}{{end}}' | sed '/^$/d')
mapfile -t entrypoint < <(inspect '{{range .Config.Entrypoint}}{{println .}}{{end}}' | sed '/^$/d')
mapfile -t cmd < <(inspect '{{range .Config.Cmd}}{{println .}}{{end}}' | sed '/^$/d')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
# What `podman run -e` would add: the required master key, and a port free on this machine.
run_env=("${image_env[@]}" "TIDEMARK_MASTER_KEY=$(head -c 32 /dev/urandom | base64)"
  "LEPTOS_SITE_ADDR=127.0.0.1:$port" RUST_LOG=warn)
in_image() { env -i "${run_env[@]}" /usr/sbin/chroot --userspec="$user" "$root" "$@"; }

touch "$work/before-start"
sleep 1
# exec: the process started is the server (as PID 1's child would be), so SIGTERM reaches it.
(exec env -i "${run_env[@]}" /usr/sbin/chroot --userspec="$user" "$root" "${entrypoint[@]}" "${cmd[@]}") >"$log" 2>&1 &
server_pid=$!
wait_ready
in_image "${health[@]:1}" >/dev/null || fail "the image's HEALTHCHECK (${health[*]:1}) failed"
bootstrap_and_push in_image /usr/bin/tidemark-server
expect_pushed_finding "image"
kill -TERM "$server_pid"
wait "$server_pid" || fail "the server did not stop cleanly"
server_pid=
[ -f "$root/data/tidemark.db" ] || fail "no database in the image's /data volume"
written=$(find "$root" -xdev -newer "$work/before-start" ! -path "$root/data" ! -path "$root/data/*" ! -path "$root" | head -5)
[ -z "$written" ] || fail "the server wrote outside /data (a read-only root would refuse): $written"
echo "image: $(inspect '{{.Size}}' | awk '{ printf "%d MB", $1 / 1000000 }') from $binary, user $user; its exported root served /readyz, its health check and a push, writing only /data"
