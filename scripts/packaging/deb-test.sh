#!/usr/bin/env bash
# The Debian package as an operator meets it (issue 49, docs/install.md): built from the test
# step's binaries (cargo-deb --profile dev: the same code as a release, without a second
# optimised build of every dependency), installed with apt on this Debian, then
#   - the user, the directories and the settings file (0640, a fresh master key) are there,
#     and `systemd-analyze verify` accepts the unit, whose exposure score must stay "OK";
#   - the server runs as tidemark.service would: the unit's ExecStart, User, Environment,
#     EnvironmentFile and WorkingDirectory read from the installed unit, started with no
#     privilege left (setpriv: no new privileges, empty capability bounding set), since these
#     machines run no systemd; it answers /readyz and takes a push;
#   - an upgrade to a later build keeps the settings file byte for byte (an operator's edit
#     included) and the pushed scan;
#   - `apt remove` keeps the data and the settings; `apt purge` deletes them, saying so.
# It installs on this machine (as root) and purges what it installed, pass or fail; it
# refuses to run where a tidemark package is already installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/packaging/checks.sh

[ "$(id -u)" = 0 ] || { echo "deb-test: must run as root (it installs the package)" >&2; exit 1; }
[ -d target/site/pkg ] || { echo "deb-test: target/site is missing; scripts/e2e.sh builds it" >&2; exit 1; }
for pkg in tidemark tidemark-cli; do
  if dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep installed >/dev/null; then
    echo "deb-test: the $pkg package is installed on this machine; not touching it" >&2
    exit 1
  fi
done

work=$(mktemp -d /tmp/tidemark-deb.XXXXXX)
server_pid=
installed=
log=$work/server.log
cleanup() {
  if [ -n "$server_pid" ]; then kill -KILL "$server_pid" 2>/dev/null || true; fi
  if [ -n "$installed" ]; then
    # dpkg, not apt: apt no longer knows a package built here once it is purged.
    dpkg --purge tidemark tidemark-cli >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "deb-test: $1" >&2
  [ -f "$log" ] && { echo "server log:" >&2; tail -n 20 "$log" >&2; }
  exit 1
}
apt_install() { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; fail "apt-get install $* failed"; }; }

# Two builds of the same version but successive revisions: the second is the upgrade.
for revision in 1 2; do
  cargo deb -p server --no-build --profile dev --fast --quiet --deb-revision "$revision" -o "$work/" >/dev/null 2>&1 \
    || fail "cargo deb could not build the server package"
done
cargo deb -p tidemark-cli --no-build --profile dev --fast --quiet -o "$work/" >/dev/null 2>&1 \
  || fail "cargo deb could not build the CLI package"
version=$(cargo metadata --no-deps --format-version 1 | python3 -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "server"))')
first=$work/tidemark_${version}-1_amd64.deb
second=$work/tidemark_${version}-2_amd64.deb
[ -f "$first" ] && [ -f "$second" ] || fail "the packages are not where cargo deb says: $(ls "$work")"
printf 'built %s (%s kB), %s\n' "$(basename "$first")" "$(( $(stat -c %s "$first") / 1024 ))" "$(basename "$work"/tidemark-cli_*.deb)"

installed=1
apt_install "$first" "$work"/tidemark-cli_*.deb
tidemark --version >/dev/null || fail "the CLI package's tidemark does not run"

# What the first install leaves.
id tidemark >/dev/null 2>&1 || fail "no tidemark user"
env_file=/etc/tidemark/tidemark.env
[ "$(stat -c '%a %U %G' "$env_file")" = "640 root tidemark" ] \
  || fail "$env_file is $(stat -c '%a %U %G' "$env_file"), not 640 root tidemark"
key=$(sed -n 's/^TIDEMARK_MASTER_KEY=//p' "$env_file")
[ "$(printf %s "$key" | base64 -d 2>/dev/null | wc -c)" = 32 ] || fail "$env_file holds no 32-byte master key"
[ "$(stat -c '%U %a' /var/lib/tidemark)" = "tidemark 750" ] || fail "/var/lib/tidemark is not tidemark's, 0750"
unit=/usr/lib/systemd/system/tidemark.service
systemd-analyze verify "$unit" 2>"$work/verify.log" || { cat "$work/verify.log" >&2; fail "systemd-analyze verify refused the unit"; }
exposure=$(systemd-analyze security --offline=true "$unit" 2>/dev/null | sed -n 's/.*Overall exposure level for tidemark.service: \([0-9.]*\).*/\1/p')
python3 -c "import sys; sys.exit(0 if float('$exposure') <= 2.0 else 1)" \
  || fail "the unit's exposure score is $exposure (systemd-analyze security), over 2.0"
echo "installed: user, 0640 settings with a fresh key, unit verified (exposure $exposure)"

# An operator's edit, which the upgrade must keep: the port this test listens on.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"
sed -i "s/^LEPTOS_SITE_ADDR=.*/LEPTOS_SITE_ADDR=127.0.0.1:$port/" "$env_file"
settings_before=$(sha256sum "$env_file")

# The service as systemd would start it, from the installed unit's own lines.
start_as_unit() {
  local exec_start user group workdir environment envfile
  unit_line() { sed -n "s/^$1=//p" "$unit"; }
  exec_start=$(unit_line ExecStart); user=$(unit_line User); group=$(unit_line Group)
  workdir=$(unit_line WorkingDirectory); environment=$(unit_line Environment)
  envfile=$(unit_line EnvironmentFile)
  [ -n "$exec_start" ] && [ -n "$user" ] && [ -n "$envfile" ] || fail "the unit lacks ExecStart, User or EnvironmentFile"
  # shellcheck disable=SC2086 # Environment= holds several NAME=value words.
  (cd "$workdir" && exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin $environment \
    bash -c 'set -a; . "$1"; set +a; shift; exec "$@"' _ "$envfile" \
    setpriv --reuid="$user" --regid="$group" --init-groups --no-new-privs --bounding-set=-all \
    $exec_start) >>"$log" 2>&1 &
  server_pid=$!
}
stop_server() {
  kill -TERM "$server_pid"
  wait "$server_pid" || fail "the server did not stop cleanly on SIGTERM"
  server_pid=
}

start_as_unit
wait_ready
[ "$(ps -o user= -p "$server_pid")" = tidemark ] || fail "the server does not run as tidemark"
bootstrap_and_push tidemark-admin
expect_pushed_finding "first install"
[ -f /var/lib/tidemark/tidemark.db ] || fail "the SQLite database is not under /var/lib/tidemark"
stop_server
echo "served from the unit's ExecStart as tidemark: /readyz, a licence by tidemark-admin, a push"

apt_install "$second"
[ "$(dpkg-query -W -f '${Version}' tidemark)" = "${version}-2" ] || fail "the upgrade did not install"
[ "$(sha256sum "$env_file")" = "$settings_before" ] || fail "the upgrade changed $env_file"
start_as_unit
wait_ready
expect_pushed_finding "after the upgrade"
stop_server
echo "upgraded to ${version}-2: settings unchanged, the pushed scan still served"

DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq tidemark >"$work/remove.log" 2>&1 || fail "apt-get remove failed"
[ -f /var/lib/tidemark/tidemark.db ] && [ -f "$env_file" ] || fail "remove deleted the data or the settings"
DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq tidemark >"$work/purge.log" 2>&1 || fail "apt-get purge failed"
grep -q "purge deletes /var/lib/tidemark" "$work/purge.log" || fail "purge did not say what it deletes: $(cat "$work/purge.log")"
[ ! -e /var/lib/tidemark ] && [ ! -e /etc/tidemark ] || fail "purge left /var/lib/tidemark or /etc/tidemark"
dpkg --purge tidemark-cli >/dev/null || fail "the CLI package did not purge"
echo "remove kept the data and settings; purge said so and deleted them"
