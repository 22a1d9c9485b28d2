# SPDX-License-Identifier: Apache-2.0
# What `cmake --install build --prefix P` puts in place, so that a user's project says
#   find_package(deepflow CONFIG REQUIRED)
#   target_link_libraries(app PRIVATE deepflow::deepflow deepflow::io)
# or, without CMake, `pkg-config --cflags --libs deepflow`.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The exported names: deepflow::deepflow, deepflow::proto, deepflow::io, deepflow::tf_proto,
# deepflow::tf, deepflow::serving, deepflow::onnx, deepflow::lite.
set(DEEPFLOW_INSTALLED_LIBRARIES deepflow deepflow_proto deepflow_io deepflow_tf_proto deepflow_tf deepflow_serving deepflow_onnx
    deepflow_lite deepflow_quantize)
foreach(lib ${DEEPFLOW_INSTALLED_LIBRARIES})
  string(REGEX REPLACE "^deepflow_" "" export_name ${lib})
  # Each library finds its siblings next to itself, wherever the prefix is moved.
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name} INSTALL_RPATH "$ORIGIN"
                        VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
endforeach()
if(TARGET deepflow_cli)
  set_target_properties(deepflow_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
  install(TARGETS deepflow_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(TARGETS ${DEEPFLOW_INSTALLED_LIBRARIES} EXPORT deepflowTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The public headers; *_internal.h are the importers' private parts (they need libonnx).
install(DIRECTORY deepflow/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/deepflow
        FILES_MATCHING PATTERN "*.h" PATTERN "*_internal.h" EXCLUDE)
# deepflow/lite/kernel.h (custom ops) includes the accessors flatc generated.
install(FILES ${DEEPFLOW_LITE_SCHEMA_HEADER} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/schema)
install(EXPORT deepflowTargets NAMESPACE deepflow:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/deepflow)

configure_package_config_file(cmake/deepflowConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/deepflowConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/deepflow)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/deepflowConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deepflowConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/deepflowConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/deepflow)

# The .pc finds its prefix from its own place (${pcfiledir}), so `--prefix P` at install
# time needs nothing at configure time.
file(RELATIVE_PATH DEEPFLOW_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" DEEPFLOW_PC_TO_PREFIX "${DEEPFLOW_PC_TO_PREFIX}")
configure_file(cmake/deepflow.pc.in ${CMAKE_CURRENT_BINARY_DIR}/deepflow.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/deepflow.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
