# What `cmake --install` puts beside the binary (installed by app/) so that nanscope is a desktop
# program: a menu entry, its icon, a file type for run.h5, shell completion, the Python recorder
# that writes runs, and the documents the program's messages point to.
#
# At run time the binary needs nothing else of this project: its child processes (the window's
# checkpoint reader, replay and report export) are the same binary (app/children/ChildProgram.cpp), the
# icon is compiled in (resources/nanscope.qrc), and nothing is read from the source tree.

include(GNUInstallDirs)

set(NANSCOPE_RESOURCES ${PROJECT_SOURCE_DIR}/resources)
install(FILES ${NANSCOPE_RESOURCES}/nanscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${NANSCOPE_RESOURCES}/nanscope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES ${NANSCOPE_RESOURCES}/nanscope-mime.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages
        RENAME nanscope.xml)
install(FILES ${NANSCOPE_RESOURCES}/nanscope-completion.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME nanscope)

# The recorder is pure Python, used from the training script's interpreter, not by the binary. Its
# files live in /usr/share/nanscope/python (not built or byte-compiled for one Python version; it
# needs torch and h5py, which the package only suggests), and a .pth file in the system Python's
# dist-packages puts that folder on its path: `import nanscope_recorder` needs no PYTHONPATH.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/nanscope_recorder DESTINATION ${CMAKE_INSTALL_DATADIR}/nanscope/python
        FILES_MATCHING PATTERN "*.py" PATTERN "*.json" PATTERN "__pycache__" EXCLUDE)
# Relative to the .pth file's folder (site.py joins and normalises it): right under any prefix.
file(WRITE ${PROJECT_BINARY_DIR}/nanscope-recorder.pth "../../../${CMAKE_INSTALL_DATADIR}/nanscope/python\n")
install(FILES ${PROJECT_BINARY_DIR}/nanscope-recorder.pth DESTINATION lib/python3/dist-packages)
install(FILES ${PROJECT_SOURCE_DIR}/python/examples/train_mlp_with_recorder.py
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/run-format.md ${PROJECT_SOURCE_DIR}/docs/scan.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
