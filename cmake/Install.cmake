# What `cmake --install` puts beside the binary (installed by app/) so that nanscope is a desktop
# program: a menu entry, its icon, a file type for run.h5, shell completion, the Python recorder
# that writes runs, and the documents the program's messages point to.
#
# At run time the binary needs nothing else of this project: its child processes (the window's
# checkpoint reader, replay and report export) are the same binary (app/ChildProgram.cpp), the
# icon is compiled in (resources/nanscope.qrc), and nothing is read from the source tree.

include(GNUInstallDirs)

set(NANSCOPE_RESOURCES ${PROJECT_SOURCE_DIR}/resources)
install(FILES ${NANSCOPE_RESOURCES}/nanscope.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications)
install(FILES ${NANSCOPE_RESOURCES}/nanscope.svg DESTINATION ${CMAKE_INSTALL_DATADIR}/icons/hicolor/scalable/apps)
install(FILES ${NANSCOPE_RESOURCES}/nanscope-mime.xml DESTINATION ${CMAKE_INSTALL_DATADIR}/mime/packages
        RENAME nanscope.xml)
install(FILES ${NANSCOPE_RESOURCES}/nanscope-completion.bash DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME nanscope)

# The recorder is pure Python, used from the training script's interpreter, not by the binary:
# PYTHONPATH=/usr/share/nanscope/python. (Not in dist-packages: it is not built or byte-compiled
# for one Python version, and it needs torch and h5py, which the package only suggests.)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/nanscope_recorder DESTINATION ${CMAKE_INSTALL_DATADIR}/nanscope/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(FILES ${PROJECT_SOURCE_DIR}/python/examples/train_mlp_with_recorder.py
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/run-format.md ${PROJECT_SOURCE_DIR}/docs/scan.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
