# CPack: a Debian package of what `cmake --install` installs (cmake/Install.cmake, app/).
#   cmake --build build && (cd build && cpack -G DEB)     ->  build/nanscope_<version>_<arch>.deb
#   sudo apt install ./build/nanscope_*.deb
# tests/packaging/check_deb_package.sh builds it and checks its contents and control fields.

set(NANSCOPE_PACKAGE_MAINTAINER "nanscope maintainers <maintainers@nanscope.invalid>"
    CACHE STRING "Maintainer field of the Debian package (Name <address>)")
set(NANSCOPE_PACKAGE_HOMEPAGE "" CACHE STRING "Homepage field of the Debian package (omitted when empty)")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME nanscope)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${NANSCOPE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "inspector for NaN/Inf blow-ups in deep-learning training")
# The extended description, wrapped for `apt show` (one string: CMake would join separate ones with ';').
set(CPACK_PACKAGE_DESCRIPTION "\
nanscope reads what a training run logged (losses, per-layer gradient norms,
activation ranges, BatchNorm statistics, checkpoints and saved batches) and
shows where and why it turned into NaN or Inf: a desktop window with linked
plots, a layer heatmap and checkpoint tables, and headless commands (scan,
stats, diff, replay, report) for servers and CI. Replay re-runs a saved batch
through its checkpoint with LibTorch and names the first op that produced a
non-finite value.

The PyTorch recorder that writes runs is in /usr/share/nanscope/python, on the system Python's path (import nanscope_recorder).")
if(NANSCOPE_PACKAGE_HOMEPAGE)
  set(CPACK_PACKAGE_HOMEPAGE_URL "${NANSCOPE_PACKAGE_HOMEPAGE}")
endif()
# The debug information stays in the build tree; the package gets a stripped binary (2 MB instead
# of 60, and fast to compress).
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # nanscope_0.1.0_amd64.deb, as Debian names packages
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${NANSCOPE_PACKAGE_MAINTAINER}")

# Depends: dpkg-shlibdeps reads the libraries the binaries link (Qt 6, QCustomPlot, HDF5, protobuf,
# zlib, the C++ runtime) and names their packages with the minimum versions the build needs.
# libprotobuf32 is also declared by hand (dpkg accepts the repeat). LibTorch is not a dependency:
# nanscope-torch runs with the torch wheel's, which Debian does not package, and `nanscope` finds it
# when it hands a model over (app/cli/LibTorchProgram.h; README "Install").
# Without dpkg-shlibdeps (package dpkg-dev) the list is the Debian 12 one written out.
find_program(NANSCOPE_DPKG_SHLIBDEPS dpkg-shlibdeps)
mark_as_advanced(NANSCOPE_DPKG_SHLIBDEPS)
if(NANSCOPE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libprotobuf32")
else()
  message(STATUS "dpkg-shlibdeps not found (package dpkg-dev): the .deb declares the Debian 12 dependencies as written in cmake/Packaging.cmake")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "libc6, libgcc-s1, libstdc++6, libqt6core6, libqt6gui6, libqt6widgets6, libqt6svg6, libqcustomplot2.1-qt6, libhdf5-103-1, zlib1g, libprotobuf32")
endif()
# The recorder's imports; the binary itself runs without Python.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "python3-torch, python3-h5py, python3-numpy")

# No maintainer scripts: the MIME database, the desktop entries' MIME cache and the icon cache are
# rebuilt by dpkg file triggers that shared-mime-info, desktop-file-utils and hicolor-icon-theme
# declare on the folders this package installs into.

include(CPack)
