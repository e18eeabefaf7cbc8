# Fuzz target of the configuration reader: fuzz_config (libFuzzer,
# COLLAB_FUZZ=ON with clang) and the CTest fuzz_config_replay over corpus/.
include_guard(GLOBAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.cmake)

collab_fuzz_target(config
  HARNESS ${CMAKE_CURRENT_LIST_DIR}/fuzz_config.c
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus
  SOURCES ${COLLAB_UTIL_DIR}/cl_config.c ${COLLAB_UTIL_DIR}/cl_config_load.c
          ${COLLAB_UTIL_DIR}/cl_config_value.c
          ${COLLAB_UTIL_DIR}/cl_secret.c
          ${COLLAB_UTIL_DIR}/cl_addr.c ${COLLAB_UTIL_DIR}/cl_base58.c
          ${COLLAB_UTIL_DIR}/cl_text.c ${COLLAB_UTIL_DIR}/cl_log.c
  LIBS collab_util)
