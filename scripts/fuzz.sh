#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time each (FUZZ_SECONDS, default
# 20), starting from the seeds in fuzz/seeds/<target>/. Any crash, panic or failed
# invariant fails the script, with the reproducing input under fuzz/artifacts/.
#
# Works on a stable toolchain: the targets are built without a sanitizer
# (`--sanitizer none` needs no nightly flag) and unoptimised (`--dev`: a fraction of
# the release build's time; ample for a smoke run). cargo-fuzz is installed when
# missing. Nothing is skipped: if the fuzzers cannot be built or run, this fails.
#
# FUZZ_SECONDS=N     time per target (default 20)
# FUZZ_TARGETS="a b" only these targets (default: all of `cargo fuzz list`)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-20}"
case "$seconds" in
  '' | *[!0-9]*)
    echo "fuzz.sh: FUZZ_SECONDS=$seconds is not a whole number" >&2
    exit 1
    ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "== installing cargo-fuzz (cargo fuzz is missing)"
  if ! cargo install cargo-fuzz --locked; then
    echo "fuzz.sh: installing cargo-fuzz failed" >&2
    exit 1
  fi
fi

# libFuzzer itself is C++, built by libfuzzer-sys.
if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1 &&
  ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz.sh: a C++ compiler is required to build libFuzzer (install g++ or clang)" >&2
  exit 1
fi

flags=(--sanitizer none --dev)

if [ -n "${FUZZ_TARGETS:-}" ]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  mapfile -t targets < <(cargo fuzz list)
fi
if [ "${#targets[@]}" -eq 0 ]; then
  echo "fuzz.sh: no fuzz targets found" >&2
  exit 1
fi

echo "== building ${#targets[@]} fuzz targets"
cargo fuzz build "${flags[@]}"
# cargo fuzz builds for the host triple; run the binaries directly (`cargo fuzz run`
# would re-check the build before every target).
# The target directory is cargo's (CARGO_TARGET_DIR when set, else fuzz/target).
host="$(rustc -vV | sed -n 's/^host: //p')"
target_dir="$(cargo metadata --no-deps --format-version 1 |
  sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')"
bin_dir="${target_dir:-target}/$host/debug"

for target in "${targets[@]}"; do
  echo "== fuzzing $target for ${seconds}s"
  if [ ! -x "$bin_dir/$target" ]; then
    echo "fuzz.sh: $bin_dir/$target was not built" >&2
    exit 1
  fi
  corpus="corpus/$target"
  mkdir -p "$corpus" "artifacts/$target"
  seeds=()
  if [ -d "seeds/$target" ]; then
    seeds=("seeds/$target")
  fi
  # -timeout: one input taking longer than 10 s is a hang; -rss_limit_mb bounds memory.
  if ! "$bin_dir/$target" "$corpus" ${seeds[@]+"${seeds[@]}"} \
    -artifact_prefix="artifacts/$target/" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1; then
    echo "fuzz.sh: fuzz target $target failed; the input is in fuzz/artifacts/$target/" >&2
    echo "  reproduce: (cd fuzz && cargo fuzz run ${flags[*]} $target artifacts/$target/<file>)" >&2
    exit 1
  fi
done
echo "== fuzzing passed (${#targets[@]} targets, ${seconds}s each)"
