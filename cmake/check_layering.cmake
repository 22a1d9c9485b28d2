# SPDX-License-Identifier: Apache-2.0
# The one-way layering of ARCHITECTURE.md section 3, checked: a file may include
# deepflow headers of its own layer or of layers below it, never of one above.
#
#   cmake -DROOT=<checkout> -P cmake/check_layering.cmake
#
# Layers, lowest first (a directory under deepflow/, or tools/cli for the command line):
#   0 core    1 ops    2 kernels    3 autodiff graph function    4 keras data
#   5 io (and the umbrella header deepflow/deepflow.h, which io and above may include)
#   6 tf onnx serving quantize distribute pipeline cli    7 python
# lite/ stands apart: it builds without the core, so it includes only lite/ headers.
# Fails listing every offending include as file:line, the header and both layers.
cmake_minimum_required(VERSION 3.25)
if(NOT ROOT)
  message(FATAL_ERROR "[check_layering] pass -DROOT=<checkout>")
endif()

set(rank_core 0)
set(rank_ops 1)
set(rank_kernels 2)
foreach(d autodiff graph function)
  set(rank_${d} 3)
endforeach()
foreach(d keras data)
  set(rank_${d} 4)
endforeach()
set(rank_io 5)
set(rank_umbrella 5)
foreach(d tf onnx serving quantize distribute pipeline cli)
  set(rank_${d} 6)
endforeach()
set(rank_python 7)

# The layer of a path relative to ROOT (deepflow/<layer>/..., tools/cli/..., python/...).
function(layer_of path out)
  if(path MATCHES "^deepflow/deepflow\\.h$")
    set(${out} umbrella PARENT_SCOPE)
  elseif(path MATCHES "^deepflow/([a-z_]+)/")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  elseif(path MATCHES "^tools/cli/")
    set(${out} cli PARENT_SCOPE)
  elseif(path MATCHES "^python/")
    set(${out} python PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

file(GLOB_RECURSE files RELATIVE ${ROOT}
     ${ROOT}/deepflow/*.h ${ROOT}/deepflow/*.cpp ${ROOT}/deepflow/*.cu
     ${ROOT}/tools/cli/*.h ${ROOT}/tools/cli/*.cpp ${ROOT}/python/*.h ${ROOT}/python/*.cpp)
set(violations "")
set(checked 0)
foreach(f ${files})
  layer_of(${f} from)
  if(NOT from)
    continue()
  endif()
  if(NOT from STREQUAL "lite" AND NOT DEFINED rank_${from})
    string(APPEND violations "\n  ${f}: directory '${from}' has no layer (add it to cmake/check_layering.cmake)")
    continue()
  endif()
  file(STRINGS ${ROOT}/${f} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"deepflow/")
  math(EXPR checked "${checked} + 1")
  foreach(line ${lines})
    string(REGEX MATCH "\"(deepflow/[^\"]+)\"" _ "${line}")
    set(header ${CMAKE_MATCH_1})
    layer_of(${header} to)
    if(NOT to OR to STREQUAL from)
      continue()
    endif()
    if(from STREQUAL "lite" OR to STREQUAL "lite")
      set(bad TRUE)  # lite includes nothing of the rest, and nothing includes lite's internals
      if(to STREQUAL "lite" AND from MATCHES "^(quantize|cli|python)$")
        set(bad FALSE)  # the converter writes what lite reads; the CLI and Python run it
      endif()
    elseif(NOT DEFINED rank_${to})
      set(bad TRUE)
    else()
      set(bad FALSE)
      if(rank_${to} GREATER rank_${from})
        set(bad TRUE)
      endif()
    endif()
    if(bad)
      # The line number, for the message.
      file(STRINGS ${ROOT}/${f} all)
      set(n 0)
      set(where ${f})
      foreach(l IN LISTS all)
        math(EXPR n "${n} + 1")
        if(l STREQUAL line)
          set(where "${f}:${n}")
          break()
        endif()
      endforeach()
      string(APPEND violations "\n  ${where}: includes ${header} (layer ${to}) from layer ${from}")
    endif()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "[check_layering] includes of a higher layer (ARCHITECTURE.md section 3):${violations}")
endif()
message(STATUS "[check_layering] ${checked} files, every include goes down or sideways")
