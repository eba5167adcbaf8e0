#!/usr/bin/env bash
# Builds Tidemark's OCI image with podman from a staged root filesystem (stage-rootfs.sh):
#   deploy/oci/build-image.sh [--binary PATH] [--tag NAME] [--save FILE] [-- podman options]
# --binary defaults to the release build (target/release/tidemark-server, made by
# `cargo leptos build --release --precompress --split`); --save writes the image as a Docker
# archive that `podman load -i FILE` or `docker load -i FILE` takes on another machine: unlike
# an OCI archive it keeps the HEALTHCHECK (OCI's image config has no such field). Options after
# `--` go to podman itself (the tests give it a storage directory of their own).
set -euo pipefail
cd "$(dirname "$0")/../.."
binary=target/release/tidemark-server
tag=
save=
podman_opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --save) save=$2; shift 2 ;;
    --) shift; podman_opts=("$@"); break ;;
    *) echo "build-image: unknown option $1" >&2; exit 2 ;;
  esac
done
version=$(cargo metadata --no-deps --format-version 1 \
  | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "server"))')
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
tag=${tag:-localhost/tidemark:$version}

context=$(mktemp -d /tmp/tidemark-image.XXXXXX)
trap 'rm -rf "$context"' EXIT
deploy/oci/stage-rootfs.sh "$binary" target/site "$context/stage" >/dev/null
mv "$context/stage/rootfs" "$context/stage/data" "$context/"
cp deploy/oci/Containerfile "$context/"
# HEALTHCHECK is part of Docker's image format only (OCI's config has no such field); the
# labels are the OCI annotation keys either way.
podman "${podman_opts[@]}" build --quiet --format docker --tag "$tag" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.revision=$revision" \
  --label "org.opencontainers.image.created=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --file "$context/Containerfile" "$context" >/dev/null
size=$(podman "${podman_opts[@]}" image inspect --format '{{.Size}}' "$tag")
echo "built $tag: $((size / 1000 / 1000)) MB"
if [ -n "$save" ]; then
  podman "${podman_opts[@]}" save --quiet --format docker-archive --output "$save" "$tag"
  echo "saved $save ($(($(stat -c %s "$save") / 1000 / 1000)) MB)"
fi
