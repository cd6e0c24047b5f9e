# Every C++ dependency comes from a distribution package (Debian 12) found with find_package, except
# LibTorch, which comes from the pinned torch wheel (cmake/NanscopeTorch.cmake).

find_program(CCACHE_PROGRAM ccache)
if(CCACHE_PROGRAM)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
  set(CMAKE_C_COMPILER_LAUNCHER ${CCACHE_PROGRAM})
endif()

find_package(Qt6 REQUIRED COMPONENTS Core Gui Widgets PrintSupport Svg Concurrent Test)
find_package(QCustomPlotQt6 REQUIRED)
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(ZLIB REQUIRED) # CRC-32 of checkpoint archive entries
find_package(SQLite3 REQUIRED) # MLflow's tracking database (mlflow.db)
# TensorBoard event records (core/importers): libprotobuf-dev and protobuf-compiler. CMake's own
# FindProtobuf module finds them (Debian ships no protobuf CMake package) and gives
# protobuf::libprotobuf and protobuf_generate.
find_package(Protobuf REQUIRED)
if(NOT Protobuf_PROTOC_EXECUTABLE)
  message(FATAL_ERROR "protoc not found: install protobuf-compiler (./setup.sh installs it)")
endif()
# After protobuf: the torch wheel's Caffe2Config defines protobuf::libprotobuf as an empty target
# when none exists yet, and the readers of TensorBoard and W&B files would then link no protobuf.
include(NanscopeTorch)
# JSON of other tools' logs (core/importers/JsonFields): rapidjson-dev, header-only. Its CMake package
# only names the include folder.
find_package(RapidJSON REQUIRED)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)

# TorchConfig sets TORCH_CXX_FLAGS (the C++ ABI flag); it must match across every torch user.
separate_arguments(NANSCOPE_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

find_program(NANSCOPE_SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
if(NOT NANSCOPE_SYSTEM_PYTHON)
  find_program(NANSCOPE_SYSTEM_PYTHON NAMES python3)
endif()
