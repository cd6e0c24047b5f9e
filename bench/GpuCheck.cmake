# bench/gpu_check: one definition for the two builds that make it, the tests' (run on the CPU there,
# gpu_check_on_cpu) and bench/gpu_check.sh's on a GPU machine (NANSCOPE_GPU_CHECK_ONLY, no Qt).
function(nanscope_add_gpu_check)
  add_executable(gpu_check ${PROJECT_SOURCE_DIR}/bench/gpu_check.cpp)
  target_include_directories(gpu_check PRIVATE ${PROJECT_SOURCE_DIR}/bench)
  target_link_libraries(gpu_check PRIVATE nanscope_torch ${TORCH_LIBRARIES})
  target_compile_options(gpu_check PRIVATE ${NANSCOPE_TORCH_CXX_FLAGS})
  set_target_properties(gpu_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
endfunction()
