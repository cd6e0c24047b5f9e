# LibTorch: by default the one inside the torch wheel that python/requirements.txt pins, installed by
# setup.sh into the project's virtual environment (.venv). A LibTorch of one's own (an official
# LibTorch zip, CPU or CUDA, or another Python's torch) is used instead when CMake is given its
# prefix: -DCMAKE_PREFIX_PATH=<libtorch>, or -DTorch_DIR=<libtorch>/share/cmake/Torch, or
# -DNANSCOPE_TORCH_PYTHON=<python with torch>.
set(NANSCOPE_TORCH_FLOOR 2.4)

set(NANSCOPE_TORCH_PYTHON "${PROJECT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
    "A Python whose torch wheel's LibTorch nanscope builds against (when no LibTorch prefix is given)")
if(NOT Torch_DIR AND EXISTS "${NANSCOPE_TORCH_PYTHON}")
  execute_process(COMMAND "${NANSCOPE_TORCH_PYTHON}" -c
                          "import sys, torch.utils; sys.stdout.write(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE torch_cmake_prefix RESULT_VARIABLE rc ERROR_VARIABLE torch_error)
  if(rc EQUAL 0)
    list(PREPEND CMAKE_PREFIX_PATH "${torch_cmake_prefix}")
  else()
    message(WARNING "${NANSCOPE_TORCH_PYTHON} has no usable torch (${torch_error}); looking for LibTorch elsewhere")
  endif()
endif()

find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "LibTorch not found. Run ./setup.sh build (it installs the pinned torch into .venv), or "
                      "give CMake your own: -DCMAKE_PREFIX_PATH=<libtorch folder> or -DNANSCOPE_TORCH_PYTHON=<python>.")
endif()
if(NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include/torch/torch.h")
  message(FATAL_ERROR "The LibTorch at ${TORCH_INSTALL_PREFIX} has no C++ headers "
                      "(include/torch/csrc/api/include/torch/torch.h): use a torch wheel from PyPI or a LibTorch zip.")
endif()
if(Torch_VERSION VERSION_LESS NANSCOPE_TORCH_FLOOR)
  message(FATAL_ERROR "LibTorch ${Torch_VERSION} at ${TORCH_INSTALL_PREFIX} is older than ${NANSCOPE_TORCH_FLOOR}, "
                      "the oldest nanscope builds against (./setup.sh installs the pinned torch).")
endif()

# TorchConfig finds c10 with find_library(... PATHS <prefix>/lib), which searches the system first:
# with Debian's libtorch-dev installed it picks /usr/lib's libc10 (1.13) beside the wheel's
# libtorch, and the program aborts at start (INTERNAL ASSERT FAILED at c10/core/DispatchKeySet.cpp).
set(torch_c10 "${TORCH_INSTALL_PREFIX}/lib/libc10.so")
if(EXISTS "${torch_c10}" AND NOT c10_LIBRARY STREQUAL torch_c10)
  list(REMOVE_ITEM TORCH_LIBRARIES "${c10_LIBRARY}")
  list(APPEND TORCH_LIBRARIES "${torch_c10}")
  set(c10_LIBRARY "${torch_c10}" CACHE FILEPATH "LibTorch's c10, beside its libtorch" FORCE)
endif()

# A CUDA wheel's libtorch_cuda needs the NCCL, cuDNN... of the nvidia-* wheels beside it; at run time
# its RPATH ($ORIGIN/../../nvidia/...) finds them, but the linker must be told, or it takes the older
# NCCL of /usr/local/cuda and fails on undefined symbols.
file(GLOB torch_nvidia_library_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
set(NANSCOPE_TORCH_LINK_OPTIONS "")
foreach(dir ${torch_nvidia_library_dirs})
  list(APPEND NANSCOPE_TORCH_LINK_OPTIONS "LINKER:-rpath-link,${dir}")
endforeach()
add_link_options(${NANSCOPE_TORCH_LINK_OPTIONS})
message(STATUS "LibTorch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}")
