#!/usr/bin/env bash
# The Guard built inside another project's tree (issue 52): docs/examples/guard_fetchcontent takes this
# checkout with FetchContent and NANSCOPE_GUARD_ONLY, with Qt, protobuf and GoogleTest made
# unfindable, builds nanscope::guard and the training program, and the program's run is checked as the
# in-tree example's is (check_guard_example.py: it opens and scans, the planted NaN steps were caught).
#   check_guard_fetchcontent.sh SOURCE_DIR PYTHON WORK_DIR NANSCOPE
set -euo pipefail
source=$1 python=$2 work=$3 nanscope=$4
rm -rf "$work"
mkdir -p "$work"
torch_prefix=$("$python" -c 'import sys, torch.utils; sys.stdout.write(torch.utils.cmake_prefix_path)')
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S "$source/docs/examples/guard_fetchcontent" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
      -DFETCHCONTENT_SOURCE_DIR_NANSCOPE="$source" -DCMAKE_PREFIX_PATH="$torch_prefix" "${launcher[@]}" \
      -DCMAKE_DISABLE_FIND_PACKAGE_Qt6=ON -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON \
      -DCMAKE_DISABLE_FIND_PACKAGE_Protobuf=ON -DCMAKE_DISABLE_FIND_PACKAGE_QCustomPlotQt6=ON > "$work/configure.log" 2>&1 || {
  echo "FAIL: the FetchContent consumer does not configure:"; tail -40 "$work/configure.log"; exit 1; }
# Nothing of the GUI was looked for, let alone found.
if grep -Eq "^(Qt6|Qt6Core|GTest|Protobuf)_DIR:" "$work/build/CMakeCache.txt"; then
  echo "FAIL: the Guard-only build looked for Qt, GoogleTest or protobuf:"
  grep -E "^(Qt6|Qt6Core|GTest|Protobuf)_DIR:" "$work/build/CMakeCache.txt"
  exit 1
fi
cmake --build "$work/build" -j2 > "$work/build.log" 2>&1 || {
  echo "FAIL: the FetchContent consumer does not build:"; grep -m20 -E "error|Error" "$work/build.log"; exit 1; }
# Only the Guard's libraries were built, not the programs.
for program in nanscope nanscope-torch; do
  if find "$work/build" -name "$program" -type f -perm -u+x | grep -q .; then
    echo "FAIL: the Guard-only build built $program"; exit 1
  fi
done
"$python" "$source/tests/examples/check_guard_example.py" "$work/build/guard_training_loop" "$nanscope" "$work/run"
