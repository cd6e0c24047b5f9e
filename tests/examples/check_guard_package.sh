#!/usr/bin/env bash
# The Guard as another project uses it (issue 52): nanscope installed into a prefix, the prefix moved
# (the package is relocatable), a LibTorch program outside the tree (docs/examples/guard_package)
# configured with find_package(nanscope) and built against it, then run and checked as the in-tree
# example is (check_guard_example.py: the run opens and scans, the planted NaN steps were caught).
#   check_guard_package.sh BUILD_DIR SOURCE_DIR PYTHON WORK_DIR NANSCOPE
# (PYTHON: one with the torch nanscope was built against, and h5py; NANSCOPE: the program that scans.)
set -euo pipefail
build=$1 source=$2 python=$3 work=$4 nanscope=$5
rm -rf "$work"
mkdir -p "$work"
cmake --install "$build" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/moved"
torch_prefix=$("$python" -c 'import sys, torch.utils; sys.stdout.write(torch.utils.cmake_prefix_path)')
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source/docs/examples/guard_package" -B "$work/consumer" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/moved;$torch_prefix" "${launcher[@]}" >/dev/null
cmake --build "$work/consumer" -j2 >/dev/null
# Nothing of the build tree is needed: the consumer's link line names the moved prefix only.
if grep -q "$build/core/" "$work/consumer/CMakeFiles/guard_training_loop.dir/link.txt"; then
  echo "FAIL: the consumer links from nanscope's build tree, not the installed package"
  exit 1
fi
# Another LibTorch (a stand-in that says it is 9.9.0) is refused when the consumer configures, naming
# both versions, rather than crashing when the program runs.
fake="$work/other-libtorch/share/cmake/Torch"
mkdir -p "$fake"
printf 'set(TORCH_LIBRARIES "")\nset(TORCH_INSTALL_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../..")\n' > "$fake/TorchConfig.cmake"
printf 'set(PACKAGE_VERSION 9.9.0)\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n' > "$fake/TorchConfigVersion.cmake"
if cmake -S "$source/docs/examples/guard_package" -B "$work/consumer-other" \
         -DCMAKE_PREFIX_PATH="$work/moved;$work/other-libtorch" > "$work/other.log" 2>&1; then
  echo "FAIL: a consumer with another LibTorch configured"
  exit 1
fi
grep -q "built with LibTorch .* and this project finds LibTorch 9.9.0" <(tr '\n' ' ' < "$work/other.log" | tr -s ' ') || {
  echo "FAIL: the refusal does not name both versions:"; cat "$work/other.log"; exit 1; }

"$python" "$source/tests/examples/check_guard_example.py" "$work/consumer/guard_training_loop" \
          "$nanscope" "$work/run"
