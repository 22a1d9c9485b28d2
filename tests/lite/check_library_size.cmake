# SPDX-License-Identifier: Apache-2.0
# Strips LIBRARY into OUT and fails when OUT is larger than LIMIT bytes (ctest's
# LiteLibrarySize test).
execute_process(COMMAND ${STRIP} -o ${OUT} ${LIBRARY} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "[lite library size] ${STRIP} -o ${OUT} ${LIBRARY} failed (${rc})")
endif()
file(SIZE ${OUT} size)
math(EXPR kib "${size} / 1024")
math(EXPR limit_kib "${LIMIT} / 1024")
if(size GREATER LIMIT)
  message(FATAL_ERROR "[lite library size] ${LIBRARY} is ${kib} KiB stripped; the budget is ${limit_kib} KiB")
endif()
message(STATUS "deepflow_lite stripped: ${kib} KiB of ${limit_kib} KiB")
