#!/usr/bin/env bash
# Builds the `asan` preset (Debug, -fsanitize=address,undefined, in build-asan/) and runs the whole
# test suite in it (./setup.sh asan). A sanitizer report aborts the process, so it fails its test
# (and is a crash, not a "success", in the corruption corpus).
#
# LibTorch, Qt and HDF5 are Debian's shared libraries, built without sanitizers:
#  - detect_leaks=0: Qt and LibTorch keep one-time allocations until exit, by design;
#  - detect_container_overflow=0: a std::vector grown by uninstrumented LibTorch code and read by
#    ours trips ASan's container annotations falsely;
#  - ubsan.supp lists what UBSan reports inside those libraries' inline headers (see that file).
set -euo pipefail
cd "$(dirname "$0")/../.."
here="$PWD/tests/sanitizers"
build_dir=${NANSCOPE_ASAN_BUILD_DIR:-build-asan}
jobs=${NANSCOPE_JOBS:-$(nproc)}

export CCACHE_BASEDIR="$PWD"
# Builds with -g (RelWithDebInfo, Debug) would otherwise hash the working directory, and a
# second clone would miss every object; its debug info then names the first clone's paths.
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
# Configured against another LibTorch (Debian's 1.13, before the pinned wheel): configure again.
if [ -f "$build_dir/CMakeCache.txt" ] && ! grep -q "^Torch_DIR:PATH=$PWD/.venv/" "$build_dir/CMakeCache.txt"; then
  rm -f "$build_dir/CMakeCache.txt" "$build_dir/build.ninja"
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake --preset asan -B "$build_dir" -DNANSCOPE_BUILD_BENCH=OFF
fi
echo "== building the sanitizer build ($jobs jobs)"
start=$SECONDS
cmake --build "$build_dir" -j "$jobs"
echo "== built in $((SECONDS - start)) s"

# Reports also go to files: a child process (the window's `nanscope stats`, a test's `nanscope
# replay`) that aborts on a report may fail no test by itself, since the parent reports a crashed
# child as a message. Any report file left after the run fails it.
reports="$PWD/$build_dir/sanitizer-reports"
rm -rf "$reports" && mkdir -p "$reports"
export ASAN_OPTIONS="detect_leaks=0:detect_container_overflow=0:abort_on_error=1:symbolize=1:log_path=$reports/asan"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:abort_on_error=1:suppressions=$here/ubsan.supp:log_path=$reports/ubsan"
echo "== testing under ASan and UBSan"
start=$SECONDS
cd "$build_dir"
rc=0
QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$jobs" --timeout 1800 || rc=$?
echo "== tested in $((SECONDS - start)) s"
if compgen -G "$reports/*" >/dev/null; then
  echo "== sanitizer reports (in $reports):"
  for f in "$reports"/*; do
    echo "-- $f"
    grep -m1 -E "^SUMMARY|runtime error" "$f" || head -5 "$f"
  done
  rc=1
fi
exit $rc
