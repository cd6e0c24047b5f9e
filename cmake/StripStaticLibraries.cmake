# Run by CPack (CPACK_PRE_BUILD_SCRIPTS, cmake/GuardPackage.cmake) on its staging folder before it
# packages: the Guard's static libraries lose their debug sections, keeping their symbols.
file(GLOB_RECURSE libraries "${CPACK_TEMPORARY_INSTALL_DIRECTORY}/*libnanscope_*.a")
foreach(library IN LISTS libraries)
  if(CPACK_NANSCOPE_STRIP)
    execute_process(COMMAND "${CPACK_NANSCOPE_STRIP}" --strip-debug "${library}" RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "strip --strip-debug ${library} failed (${rc})")
    endif()
  endif()
endforeach()
