#!/usr/bin/env bash
# Stages the root filesystem of Tidemark's OCI image from this machine's own Debian packages:
# the server binary (stripped), exactly the shared libraries it links (ldd) with their
# packages' copyright files (ICU's data library replaced by an empty one: icudata-stub.c),
# CA certificates, the site, and an unprivileged user (10001) that
# owns /data. No base image and no registry: the result is `FROM scratch` plus this tree.
#   deploy/oci/stage-rootfs.sh SERVER_BINARY SITE_DIR DEST
# DEST/rootfs is the image's tree (owned by root in the image), DEST/data its /data (given to
# the server's user by the Containerfile).
set -euo pipefail
[ $# = 3 ] || { echo "usage: $0 SERVER_BINARY SITE_DIR DEST" >&2; exit 2; }
bin=$1 site=$2 dest=$3
root=$dest/rootfs
[ -x "$bin" ] || { echo "stage-rootfs: $bin is not an executable" >&2; exit 1; }
[ -d "$site/pkg" ] || { echo "stage-rootfs: $site is not a built site (no pkg/)" >&2; exit 1; }
[ ! -e "$dest" ] || { echo "stage-rootfs: $dest exists; give a new directory" >&2; exit 1; }

multiarch=$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)
mkdir -p "$root"/{usr/bin,usr/lib/"$multiarch",usr/lib64,etc/ssl/certs,usr/share/tidemark,usr/share/doc,tmp} "$dest/data"
# Debian's merged-/usr layout, so the paths the loader and ldd know hold in the image.
ln -s usr/lib "$root/lib"
ln -s usr/lib64 "$root/lib64"
ln -s usr/bin "$root/bin"

install -m 0755 "$bin" "$root/usr/bin/tidemark-server"
strip --strip-all "$root/usr/bin/tidemark-server"

# The loader and every library the binary needs, resolved on this machine.
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }')
for lib in $libs; do
  case "$lib" in
    */ld-linux*) dest=$root/usr/lib64/$(basename "$lib") ;;
    *) dest=$root/usr/lib/$multiarch/$(basename "$lib") ;;
  esac
  case "$(basename "$lib")" in
    # ICU's 31 MB of data, which nothing the server reads needs (icudata-stub.c says why).
    libicudata.so.*) "$(dirname "$0")/build-icudata-stub.sh" "$lib" "$dest" ;;
    *) cp -L "$lib" "$dest" ;;
  esac
  # Each library's licence travels with it, as its Debian package ships it.
  pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -1 | cut -d: -f1) || true
  if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$root/usr/share/doc/$pkg"
    cp "/usr/share/doc/$pkg/copyright" "$root/usr/share/doc/$pkg/"
  fi
done

cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
mkdir -p "$root/usr/share/doc/ca-certificates"
cp /usr/share/doc/ca-certificates/copyright "$root/usr/share/doc/ca-certificates/"
cp -r "$site" "$root/usr/share/tidemark/site"

cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/usr/sbin/nologin
tidemark:x:10001:10001:Tidemark server:/data:/usr/sbin/nologin
PASSWD
cat >"$root/etc/group" <<'GROUP'
root:x:0:
tidemark:x:10001:
GROUP
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"
chmod 1777 "$root/tmp"
