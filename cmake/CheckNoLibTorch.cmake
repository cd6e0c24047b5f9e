# Fails when BINARY needs a LibTorch library: the check behind "widgets/ never links LibTorch" and
# "nanscope never loads LibTorch" (nanscope-torch does).
# Reads the dynamic section (what the loader will map), not the symbol names.
if(NOT BINARY)
  message(FATAL_ERROR "usage: cmake -DBINARY=path -P CheckNoLibTorch.cmake")
endif()
execute_process(COMMAND readelf -d "${BINARY}" OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "readelf failed on ${BINARY}")
endif()
string(REGEX MATCHALL "\\[lib(torch|c10)[^]]*\\]" torchLibraries "${dynamic}")
if(torchLibraries)
  message(FATAL_ERROR "${BINARY} links LibTorch: ${torchLibraries}")
endif()
if(NOT dynamic MATCHES "libQt6Widgets")
  message(FATAL_ERROR "${BINARY} does not look like a program of nanscope's window (no Qt6Widgets)")
endif()
message(STATUS "${BINARY}: no LibTorch library among its dependencies")
