# SPDX-License-Identifier: Apache-2.0
# ctest `install.find_package`: installs the build tree into a fresh prefix, builds two
# examples out of tree against it with find_package(deepflow CONFIG REQUIRED) and runs
# them, then builds quickstart again with pkg-config alone.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P install_test.cmake
cmake_minimum_required(VERSION 3.25)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "[install_test] `${cmd}` failed (${rc}):\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f include/deepflow/deepflow.h lib/cmake/deepflow/deepflowConfig.cmake lib/pkgconfig/deepflow.pc bin/deepflow)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "[install_test] ${prefix}/${f} was not installed")
  endif()
endforeach()

# The user's project knows only the prefix; the build tree must not leak into it.
set(user ${WORK_DIR}/user)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/install -B ${user} -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DEXAMPLES_DIR=${SOURCE_DIR}/examples)
run(${CMAKE_COMMAND} --build ${user})
file(READ ${user}/build.ninja ninja)
string(REPLACE "${WORK_DIR}" "" ninja "${ninja}")  # the work dir may sit inside the build tree
string(FIND "${ninja}" "${BUILD_DIR}/" leaked)
if(NOT leaked EQUAL -1)
  message(FATAL_ERROR "[install_test] the out-of-tree build refers to the build tree ${BUILD_DIR}")
endif()
run(${user}/quickstart)
if(NOT last_output MATCHES "\\[\\[ *(0\\.99|1)")
  message(FATAL_ERROR "[install_test] quickstart printed no trained weight ~1:\n${last_output}")
endif()
run(${user}/keras_save_load ${WORK_DIR}/saved)

# And with pkg-config only.
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
run(pkg-config --cflags --libs deepflow)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
run(c++ -O1 ${SOURCE_DIR}/examples/quickstart.cpp -o ${WORK_DIR}/quickstart_pc ${flags})
run(${WORK_DIR}/quickstart_pc)
message(STATUS "[install_test] installed into ${prefix}; find_package and pkg-config builds ran")
