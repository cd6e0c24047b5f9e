#!/usr/bin/env bash
# Builds the libFuzzer harnesses (clang, ASan + UBSan, build-fuzz/) and runs each for SECONDS:
#   fuzz/run_fuzzers.sh [SECONDS] [HARNESS...]       (./setup.sh fuzz SECONDS runs them all)
# Prints each harness's executions and any crash, timeout or out-of-memory input it saved
# (build-fuzz/findings/<harness>-*). The corpus each run grows is kept in build-fuzz/corpus/, so a
# second run continues where the first stopped. Exits 1 if any harness found something, unless
# NANSCOPE_FUZZ_REPORT_ONLY=1 (CI: findings in readers still being hardened are reported, not fatal).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
harnesses=("$@")
build_dir=${NANSCOPE_FUZZ_BUILD_DIR:-build-fuzz}
jobs=${NANSCOPE_JOBS:-$(nproc)}

export CCACHE_BASEDIR="$PWD"
# Builds with -g (RelWithDebInfo, Debug) would otherwise hash the working directory, and a
# second clone would miss every object; its debug info then names the first clone's paths.
export CCACHE_NOHASHDIR=1
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DNANSCOPE_BUILD_FUZZ=ON >/dev/null
fi
if ((${#harnesses[@]} == 0)); then
  # Every harness the build defines: trainer_state, metrics_csv and tracker_files only where Qt 6
  # Core was found.
  for h in zip_archive pickle safetensors exported_program run_reader tensorboard text_log structured_log wandb trainer_state metrics_csv tracker_files; do
    if grep -q "^build fuzz_$h: phony" "$build_dir/build.ninja"; then
      harnesses+=("$h")
    else
      echo "== fuzz_$h is not in this build (see the cmake warning): skipped"
    fi
  done
fi
echo "== building the fuzz harnesses ($jobs jobs)"
cmake --build "$build_dir" -j "$jobs" --target $(printf 'fuzz_%s ' "${harnesses[@]}")

seeds="$build_dir/seeds"
# Written once; again when a harness has none yet (one added since they were written).
for h in "${harnesses[@]}"; do
  [ -d "$seeds/$h" ] || { rm -rf "$seeds" "$seeds.tmp"; break; }
done
if [ ! -d "$seeds" ]; then
  echo "== writing seed inputs to $seeds"
  /usr/bin/python3 fuzz/make_seeds.py "$seeds.tmp" && mv "$seeds.tmp" "$seeds"
fi

mkdir -p "$build_dir/findings" "$build_dir/logs"
# libFuzzer reports leaks as findings; the readers allocate nothing they keep, so leaks stay on.
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
found=0
printf '%-14s %10s %8s %8s  %s\n' harness executions exec/s corpus findings
for h in "${harnesses[@]}"; do
  corpus="$build_dir/corpus/$h"
  mkdir -p "$corpus"
  log="$build_dir/logs/$h.log"
  before=$(ls "$build_dir/findings" | grep "^$h-" || true)
  # -fork=1 with -ignore_*: fuzz in a child process and carry on past a finding, so one known
  # crash (libhdf5's own, say) does not end the session; every finding is still saved.
  # -timeout: one input running for 10 s is a hang finding; -rss_limit_mb: a declared size that
  # made a reader allocate 2 GiB is an out-of-memory finding.
  # libhdf5 leaks on the error paths of a damaged file (no nanscope frame in those reports), so
  # leak detection would only ever report libhdf5 in the run reader's harness.
  extra=()
  [ "$h" = run_reader ] && extra=(-detect_leaks=0)
  rc=0
  "$build_dir/bin/fuzz_$h" "$corpus" "$seeds/$h" "${extra[@]}" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$build_dir/findings/$h-" >"$log" 2>&1 || rc=$?
  # Fork mode's progress lines: "#<executions>: cov: ... exec/s <rate> oom/timeout/crash: a/b/c ..."
  last=$(grep -E '^#[0-9]+:' "$log" | tail -1)
  runs=$(sed -E 's/^#([0-9]+):.*/\1/' <<<"$last")
  speed=$(sed -E 's/.*exec\/s ([0-9]+).*/\1/' <<<"$last")
  size=$(ls "$corpus" | wc -l)
  new=$(comm -13 <(echo "$before") <(ls "$build_dir/findings" | grep "^$h-" || true) | tr '\n' ' ')
  count=$(wc -w <<<"$new")
  printf '%-14s %10s %8s %8s  %s\n' "$h" "${runs:-?}" "${speed:-?}" "$size" \
         "$([ "$count" -eq 0 ] && echo none || echo "$count in $build_dir/findings/$h-*")"
  if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
    found=1
    # Fork mode saves one file per crashing job, often many for one bug: replay the first 10
    # crashes and leaks and count them by their first error line; timeouts and out-of-memory
    # inputs are only counted (replaying one takes as long as the limit it broke).
    for f in $(tr ' ' '\n' <<<"$new" | grep -E "^$h-(crash|leak)-" | head -10); do
      { timeout 20 "$build_dir/bin/fuzz_$h" "${extra[@]}" "$build_dir/findings/$f" 2>&1 || true; } \
        | grep -m1 -E "what\(\)|^SUMMARY|runtime error" || echo "(no error on replay)"
    done | sort | uniq -c | sed 's/^/    /'
    for kind in timeout oom slow-unit; do
      n=$(tr ' ' '\n' <<<"$new" | grep -c "^$h-$kind-" || true)
      [ "$n" -eq 0 ] || echo "    $n $kind input(s)"
    done
    echo "    log: $log"
  fi
done
if [ "$found" -ne 0 ] && [ "${NANSCOPE_FUZZ_REPORT_ONLY:-0}" = 1 ]; then
  echo "== findings reported above (NANSCOPE_FUZZ_REPORT_ONLY=1: not failing)"
  exit 0
fi
exit $found
