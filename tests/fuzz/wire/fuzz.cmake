# Fuzz target of the wire decoder (src/engine/cl_wire.c): fuzz_wire
# (libFuzzer, COLLAB_FUZZ=ON with clang) and the CTest fuzz_wire_replay
# over corpus/.
include_guard(GLOBAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.cmake)

collab_fuzz_target(wire
  HARNESS ${CMAKE_CURRENT_LIST_DIR}/fuzz_wire.c
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus
  SOURCES ${PROJECT_SOURCE_DIR}/src/engine/cl_wire.c
  LIBS collab_engine_base collab_elastic collab_util)
