#!/usr/bin/env bash
# The GPU check (issue 54): builds nanscope's engine and its LibTorch part against this machine's own
# torch (a CUDA build; no Qt needed), then runs bench/gpu_check.cpp on the GPU: the statistics on the
# device, a replay on `cuda` and the Guard training on the device, each against the CPU, in one table.
# Made for the device machine that some tasks are lent (see the README's Benchmarks section); it
# takes a few minutes there, most of them compiling.
#
#   bench/gpu_check.sh [PYTHON]        PYTHON: the interpreter whose torch to build against (python3)
#
# HDF5's C headers are needed. The device machine has none, so carry Debian's packages:
#   bench/gpu_check.sh --fetch-hdf5    (here: downloads them into .gpu-deps/, which git ignores)
# and name .gpu-deps in the run's carry; the script unpacks them when hdf5.h is missing.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--fetch-hdf5" ]; then
  mkdir -p .gpu-deps && cd .gpu-deps || exit 1
  apt-get download libhdf5-dev libhdf5-103-1 libhdf5-cpp-103-1 libsz2 libaec0 libaec-dev libcurl3-gnutls \
    zlib1g-dev libjpeg-dev libjpeg62-turbo
  ls -la
  exit 0
fi

python=${1:-python3}
# A machine without a GPU stops here, at once.
if ! gpus=$(nvidia-smi -L 2>/dev/null) || ! grep -q '^GPU' <<<"$gpus"; then
  echo "gpu_check: no NVIDIA GPU on this machine (nvidia-smi lists none). It runs on the device machine;" >&2
  echo "without a GPU, the tests run the same checks on the CPU (ctest -R gpu_check_on_cpu)." >&2
  exit 3
fi
echo "== $gpus"
if ! "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: the torch of $python does not see the GPU (a CPU-only build?)" >&2
  exit 3
fi

hdf5_hints=()
if [ ! -f /usr/include/hdf5.h ] && [ ! -f /usr/include/hdf5/serial/hdf5.h ]; then
  if ! compgen -G ".gpu-deps/*.deb" >/dev/null; then
    echo "gpu_check: no HDF5 headers here; carry them: bench/gpu_check.sh --fetch-hdf5, and carry .gpu-deps" >&2
    exit 2
  fi
  root=/tmp/nanscope-gpu-deps
  for deb in .gpu-deps/*.deb; do dpkg -x "$deb" "$root"; done
  serial="$root/usr/lib/x86_64-linux-gnu/hdf5/serial"
  hdf5_hints=(-DHDF5_C_INCLUDE_DIR="$root/usr/include/hdf5/serial" -DHDF5_C_LIBRARY_hdf5="$serial/libhdf5.so"
              -DHDF5_INCLUDE_DIRS="$root/usr/include/hdf5/serial" -DHDF5_C_LIBRARIES="$serial/libhdf5.so"
              -DHDF5_FOUND=ON -DHDF5_C_FOUND=ON)
  export LD_LIBRARY_PATH="$serial:$root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CPATH="$root/usr/include${CPATH:+:$CPATH}"
fi

build=build-gpu
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNANSCOPE_GPU_CHECK_ONLY=ON \
      -DNANSCOPE_TORCH_PYTHON="$(command -v "$python")" "${hdf5_hints[@]}" >"$build.configure.log" 2>&1 \
  || { tail -30 "$build.configure.log"; exit 2; }
cmake --build "$build" -j "$(nproc)" --target gpu_check >"$build.build.log" 2>&1 || { tail -40 "$build.build.log"; exit 2; }
echo "== built in $((SECONDS - start)) s"
"$build/gpu_check" --device cuda
