# The Guard as a package other CMake projects build against (issue 52): `cmake --install` puts the
# engine's headers under <prefix>/include/nanscope, nanscope_core and nanscope_torch (exported as
# nanscope::core and nanscope::guard) under <prefix>/lib, and nanscopeConfig.cmake with its version
# file under <prefix>/lib/cmake/nanscope. No Qt, protobuf or GoogleTest: a training program links
# LibTorch, HDF5 and nanscope's run writer. Every path is relative to the prefix (relocatable).
#
#   find_package(nanscope REQUIRED)          # finds LibTorch and HDF5 too
#   target_link_libraries(train PRIVATE nanscope::guard)

include(CMakePackageConfigHelpers)

install(TARGETS nanscope_core nanscope_torch EXPORT nanscopeTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The engine's headers as the sources include them ("core/torch/Guard.h"), and the ones the build
# generates from the tables both recorders read (RunFormatTable.h, CaptureDefaults.h).
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nanscope/core
        FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_BINARY_DIR}/core/generated/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/nanscope
        FILES_MATCHING PATTERN "*.h")

set(NANSCOPE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/nanscope)
install(EXPORT nanscopeTargets NAMESPACE nanscope:: DESTINATION ${NANSCOPE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/nanscopeConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/nanscopeConfig.cmake INSTALL_DESTINATION ${NANSCOPE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/nanscopeConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/nanscopeConfig.cmake ${PROJECT_BINARY_DIR}/nanscopeConfigVersion.cmake
        DESTINATION ${NANSCOPE_CMAKE_DIR})


# The .deb strips executables only (CPACK_STRIP_FILES); the two static libraries hold 370 MB of
# debug information in a RelWithDebInfo build. Their debug sections go before packaging (their
# symbols stay: a consumer links them): cmake/StripStaticLibraries.cmake, run by CPack on its
# staging folder.
set(CPACK_NANSCOPE_STRIP "${CMAKE_STRIP}")
list(APPEND CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/StripStaticLibraries.cmake)
