#!/usr/bin/env bash
# Fuzzes every parser of untrusted input with cargo-fuzz (libFuzzer): each target in fuzz/
# runs for SECONDS (default 10: the smoke run `make test` does; 600 for a real session).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#   scripts/fuzz.sh --build-only        (the targets built, none run: make test builds them early)
#
# Starts from the seeds committed in fuzz/seeds/<target>/ plus whatever earlier runs found
# (target/fuzz/corpus/<target>/, not committed). A crash stops the run, leaves its input in
# target/fuzz/artifacts/<target>/ and prints how to reproduce it.
#
# libFuzzer's instrumentation needs unstable compiler flags; RUSTC_BOOTSTRAP=1 lets this
# stable toolchain accept them, for this build only. No sanitizer: the targets are safe Rust,
# and AddressSanitizer would double the build for nothing they can reach.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH" RUSTC_BOOTSTRAP=1

build=(--sanitizer none --target-dir target/fuzz)
build_targets() { cargo fuzz build "${build[@]}" || { echo "fuzz: the targets do not build" >&2; exit 1; }; }
if [ "${1:-}" = --build-only ]; then
  build_targets
  exit 0
fi

seconds=${1:-10}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  mapfile -t targets < <(cargo fuzz list)
fi

build_targets

for target in "${targets[@]}"; do
  corpus=target/fuzz/corpus/$target
  artifacts=target/fuzz/artifacts/$target
  mkdir -p "$corpus" "$artifacts"
  # One log per run: a smoke run beside a long one must not write into the other's log.
  log=target/fuzz/$target.$$.log
  printf '%-14s %4ss … ' "$target" "$seconds"
  if ! cargo fuzz run "${build[@]}" "$target" "$corpus" "fuzz/seeds/$target" -- \
      -max_total_time="$seconds" -artifact_prefix="$artifacts/" -print_final_stats=1 \
      >"$log" 2>&1; then
    echo "CRASH"
    tail -n 40 "$log" >&2
    echo "fuzz: $target failed; reproduce with: RUSTC_BOOTSTRAP=1 cargo fuzz run ${build[*]} $target <artifact>" >&2
    exit 1
  fi
  runs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo '?')
  cov=$(grep -aoE 'cov: [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo '?')
  echo "ok: $runs executions, coverage $cov edges, corpus $(ls "$corpus" | wc -l) inputs"
  rm -f "$log"
done
