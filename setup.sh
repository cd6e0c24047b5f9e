#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (root, or a user with sudo):
#   ./setup.sh gui    install what is missing, build, write the demo runs, open the GUI on one
#   ./setup.sh test   install what is missing, build, write the demo runs, run every test
#   ./setup.sh bench  the same set-up, and build the benchmarks too (bench/; not built by gui or test)
#   ./setup.sh asan   the same tests in a Debug build with ASan and UBSan (build-asan; tests/sanitizers)
#   ./setup.sh fuzz [SECONDS]   build the libFuzzer harnesses with clang (build-fuzz) and run each
#                     for SECONDS (default 60), printing executions and any crash input (fuzz/)
# Each is idempotent: packages already present are skipped and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")"

mode=${1:-gui}
case "$mode" in
  gui|test|build|bench|asan|fuzz) ;;
  -h|--help) sed -n 2,9p "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  *) echo "usage: ./setup.sh gui|test|build|bench|asan|fuzz [SECONDS]" >&2; exit 2 ;;
esac

packages=(build-essential cmake ninja-build ccache pkg-config
          qt6-base-dev qt6-svg-dev libqcustomplot-dev libhdf5-dev zlib1g-dev libsqlite3-dev
          libgtest-dev libgmock-dev python3 python3-torch python3-h5py python3-numpy
          poppler-utils fonts-dejavu-core libprotobuf-dev protobuf-compiler rapidjson-dev python3-venv python3-torchvision)
# libFuzzer for clang 14 is in libclang-rt-14-dev (libclang_rt.fuzzer-x86_64.a).
if [ "$mode" = fuzz ]; then packages+=(clang libclang-rt-14-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "== installing: ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# torch (its LibTorch is what nanscope-torch builds against) and the Python test libraries, pinned in
# python/requirements.txt, in the project's own virtual environment. Debian's python3-torch (1.13)
# stays: some tests replay archives an old torch wrote.
if [ "$mode" != fuzz ]; then
  venv=.venv
  stamp="$venv/.nanscope-requirements"
  if [ ! -x "$venv/bin/python" ]; then
    echo "== creating $venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  if ! cmp -s python/requirements.txt "$stamp"; then
    echo "== installing python/requirements.txt into $venv (torch with its CUDA libraries: about 5 GB)"
    "$venv/bin/pip" install --disable-pip-version-check -q -r python/requirements.txt
    cp python/requirements.txt "$stamp"
  fi
  if ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
    echo "setup.sh: the torch of $venv does not import; remove $venv and run again" >&2
    exit 1
  fi
fi

# ccache keyed on paths relative to the checkout, so a second clone (CI) reuses the first's objects;
# the sloppiness lets it cache the LibTorch precompiled header's users.
export CCACHE_BASEDIR="$PWD"
# Builds with -g (RelWithDebInfo, Debug) would otherwise hash the working directory, and a
# second clone would miss every object; its debug info then names the first clone's paths.
export CCACHE_NOHASHDIR=1
export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"

# The sanitizer and fuzz builds are builds of their own, each driven by its script.
case "$mode" in
  fuzz) exec fuzz/run_fuzzers.sh "${2:-60}" ;;
  asan) exec tests/sanitizers/run_asan_tests.sh ;;
esac

build_dir=${NANSCOPE_BUILD_DIR:-build}
jobs=${NANSCOPE_JOBS:-$(nproc)}
# The benchmarks are for people measuring: only `bench` builds them (gui and test do not wait for
# them on a fresh machine).
bench=OFF
[ "$mode" = bench ] && bench=ON
# A build folder configured against another LibTorch (Debian's 1.13, before torch came from the
# pinned wheel) is configured again from scratch. (A LibTorch of one's own: run cmake yourself,
# README "Build".)
if [ -f "$build_dir/CMakeCache.txt" ] && ! grep -q "^Torch_DIR:PATH=$PWD/.venv/" "$build_dir/CMakeCache.txt"; then
  echo "== $build_dir was configured against another LibTorch: configuring it again"
  rm -f "$build_dir/CMakeCache.txt" "$build_dir/build.ninja"
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNANSCOPE_BUILD_BENCH=$bench
elif [ "$(sed -n 's/^NANSCOPE_BUILD_BENCH:BOOL=//p' "$build_dir/CMakeCache.txt")" != "$bench" ]; then
  cmake -S . -B "$build_dir" -DNANSCOPE_BUILD_BENCH=$bench >/dev/null
fi
# The GUI needs the two programs alone (nanscope, and nanscope-torch for replay); the tests are a
# third of the compile, built by `test`.
targets=()
[ "$mode" = gui ] && targets=(--target nanscope nanscope-torch)
echo "== building ($jobs jobs)"
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"

demo_dir=${NANSCOPE_DEMO_DIR:-$build_dir/demo-runs}
case "$mode" in
  build) ;;
  bench)
    echo "== benchmarks built in $build_dir/bench (the README's Benchmarks section says how to run them):"
    ls "$build_dir/bench"
    ;;
  gui)
    "$build_dir/bin/nanscope" demo "$demo_dir"
    run="$demo_dir/sudden-blowup"
    if [ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" ]; then
      echo "== opening $run"
      exec "$build_dir/bin/nanscope" "$run"
    fi
    shot="$build_dir/nanscope-demo.png"
    QT_QPA_PLATFORM=offscreen "$build_dir/bin/nanscope" "$run" --screenshot "$shot"
    echo "== no display here: rendered the window offscreen to $shot instead"
    ;;
  test)
    echo "== testing"
    cd "$build_dir"
    QT_QPA_PLATFORM=offscreen ctest --output-on-failure -j "$jobs" --timeout 900
    ;;
esac
