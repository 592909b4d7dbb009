# `cmake --install BUILD [--prefix P]`: the kplab executable, shipped plugins, the libraries with their
# public headers and a CMake package (find_package(kplab) -> kplab::core, kplab::plot, kplab::host
# (= kplab::engine + kplab::lua), kplab::c),
# and the Lua module. See docs/library.md.
include(CMakePackageConfigHelpers)

install(TARGETS kplab RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugins/ DESTINATION ${CMAKE_INSTALL_DATADIR}/kplab/plugins
  FILES_MATCHING PATTERN "*.lua")

install(TARGETS kplab_core kplab_plot kplab_lua_bindings kplab_engine kplab_host kplab_c EXPORT kplabTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/core/include/kplab/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kplab
  FILES_MATCHING PATTERN "*.h")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/plot/include/kplab/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kplab
  FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/host/capi/include/kplab/c.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kplab)
# The C++ entry point kplab/host/evaluate.h and exactly the headers it includes, by plain name, so they
# sit together in one directory. The bindings', the app's and the other engine headers are not installed
# (tests/install/run_consumer.sh checks the installed set).
install(FILES
  ${PROJECT_SOURCE_DIR}/host/engine/evaluate.h
  ${PROJECT_SOURCE_DIR}/host/engine/plugin.h
  ${PROJECT_SOURCE_DIR}/host/engine/runner.h
  ${PROJECT_SOURCE_DIR}/host/lua/params.h
  ${PROJECT_SOURCE_DIR}/host/lua/sandbox.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kplab/host)

install(TARGETS kplab_lua_module LIBRARY DESTINATION ${KPLAB_LUA_CMOD_DIR})

set(KPLAB_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kplab)
install(EXPORT kplabTargets NAMESPACE kplab:: DESTINATION ${KPLAB_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kplabConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kplabConfig.cmake INSTALL_DESTINATION ${KPLAB_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kplabConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kplabConfig.cmake ${PROJECT_BINARY_DIR}/kplabConfigVersion.cmake
  DESTINATION ${KPLAB_CMAKE_DIR})
