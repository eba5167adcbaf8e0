#!/usr/bin/env bash
# Compiles icudata-stub.c into a library that stands in for the ICU data library LIB
# (for example /lib/x86_64-linux-gnu/libicudata.so.72): same soname, same entry symbol.
#   deploy/oci/build-icudata-stub.sh LIB OUTPUT
set -euo pipefail
lib=$1 out=$2
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" { print $2 }')
major=${soname##*.so.}
case "$major" in ''|*[!0-9]*) echo "build-icudata-stub: cannot tell ICU's version from $lib ($soname)" >&2; exit 1 ;; esac
cc -shared -fPIC -O2 -DICU_DATA_ENTRY="icudt${major}_dat" -Wl,-soname,"$soname" \
  -o "$out" "$(dirname "$0")/icudata-stub.c"
strip "$out"
