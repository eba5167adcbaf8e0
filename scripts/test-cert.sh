#!/usr/bin/env bash
# Makes a throwaway certificate authority and a server certificate it signed, for
# 127.0.0.1 and localhost, in DIR: ca.pem (what clients trust), server.pem + server.key (what
# nginx serves). Used by the tests behind nginx; valid for two days.
set -euo pipefail
dir=${1:?usage: scripts/test-cert.sh DIR}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
  -subj "/CN=Tidemark test CA" -keyout ca.key -out ca.pem 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
  -subj "/CN=localhost" -keyout server.key -out server.csr 2>/dev/null
printf '%s\n' "subjectAltName=DNS:localhost,IP:127.0.0.1" "basicConstraints=critical,CA:FALSE" \
  "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.pem 2>/dev/null
chmod 600 ca.key server.key
