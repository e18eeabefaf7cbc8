# The measured structure of src/ (docs/architecture.md, "Measured
# structure"): circles of calls between files and the includers of private
# headers, on the objects of this build, against tools/structure/allowed.txt.
#
#   tools_structure           this build's objects and depfiles
#   tools_structure_can_fail  the same tool on small made-up trees: a circle,
#                             a stale group, a stale edge, a private header
#                             included from outside are each caught
#   tools_arch_names          every function and file name docs/architecture.md
#                             cites occurs in src/, tests/, tools/ or bench/
#   tools_arch_names_can_fail the same tool on copies of the document with
#                             made-up names, and on a made-up tree
include_guard(GLOBAL)

set(ST_TARGETS collab_util collab_reduce collab_coll collab_elastic collab_engine)
set(ST_TOOL ${PROJECT_SOURCE_DIR}/tools/structure/structure_check.py)
set(ST_BIN ${CMAKE_BINARY_DIR}/tests/tools)

# The names of docs/architecture.md: on the source tree, needing no build.
set(AN_TOOL ${PROJECT_SOURCE_DIR}/tools/docs/arch_names_check.py)
add_test(NAME tools_arch_names
  COMMAND ${COLLAB_PYTHON} ${AN_TOOL} --root ${PROJECT_SOURCE_DIR}
          --doc ${PROJECT_SOURCE_DIR}/docs/architecture.md)
add_test(NAME tools_arch_names_can_fail
  COMMAND ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/arch_names_can_fail.py
          --tool ${AN_TOOL} --root ${PROJECT_SOURCE_DIR}
          --workdir ${ST_BIN}/arch_names_can_fail)
set_tests_properties(tools_arch_names tools_arch_names_can_fail PROPERTIES
  TIMEOUT 60
  LABELS tools)
set(ST_NM nm)
if(CMAKE_NM)
  set(ST_NM ${CMAKE_NM})
endif()

# What the tool reads: per target, its sources, its objects, its include
# directories and definitions (for CC -MM where the generator keeps no
# depfiles).  One file per configuration.
set(_st "")
foreach(t ${ST_TARGETS})
  if(NOT TARGET ${t})
    message(STATUS "tests/tools: ${t} is missing; tools_structure not registered")
    return()
  endif()
  string(APPEND _st
    "target\t${t}\n"
    "srcdir\t$<TARGET_PROPERTY:${t},SOURCE_DIR>\n"
    "bindir\t$<TARGET_PROPERTY:${t},BINARY_DIR>\n"
    "sources\t$<JOIN:$<TARGET_PROPERTY:${t},SOURCES>,\t>\n"
    "objects\t$<JOIN:$<TARGET_OBJECTS:${t}>,\t>\n"
    "includes\t$<JOIN:$<TARGET_PROPERTY:${t},INCLUDE_DIRECTORIES>,\t>\n"
    "defines\t$<JOIN:$<TARGET_PROPERTY:${t},COMPILE_DEFINITIONS>,\t>\n")
endforeach()
file(GENERATE OUTPUT ${ST_BIN}/structure-$<CONFIG>.txt CONTENT "${_st}")

add_test(NAME tools_structure
  COMMAND ${COLLAB_PYTHON} ${ST_TOOL} --manifest ${ST_BIN}/structure-$<CONFIG>.txt
          --build ${CMAKE_BINARY_DIR} --src ${PROJECT_SOURCE_DIR}/src
          --allow ${PROJECT_SOURCE_DIR}/tools/structure/allowed.txt
          --nm ${ST_NM} --cc ${CMAKE_C_COMPILER})
add_test(NAME tools_structure_can_fail
  COMMAND ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/structure_can_fail.py
          --tool ${ST_TOOL} --cc ${CMAKE_C_COMPILER} --nm ${ST_NM}
          --workdir ${ST_BIN}/structure_can_fail)
set_tests_properties(tools_structure tools_structure_can_fail PROPERTIES
  TIMEOUT 120
  SKIP_RETURN_CODE 77
  LABELS tools)
