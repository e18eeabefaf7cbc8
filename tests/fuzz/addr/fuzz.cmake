# Fuzz target of the address parser: fuzz_addr (libFuzzer, COLLAB_FUZZ=ON
# with clang) and the CTest fuzz_addr_replay over corpus/.
include_guard(GLOBAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.cmake)

collab_fuzz_target(addr
  HARNESS ${CMAKE_CURRENT_LIST_DIR}/fuzz_addr.c
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus
  SOURCES ${COLLAB_UTIL_DIR}/cl_addr.c ${COLLAB_UTIL_DIR}/cl_base58.c
          ${COLLAB_UTIL_DIR}/cl_text.c
  LIBS collab_util)
