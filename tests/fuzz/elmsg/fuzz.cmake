include_guard(GLOBAL)
# Fuzz target of the ELASTIC message decoder (src/engine/cl_elmsg.c).
#   fuzz_elmsg_replay - plain executable that replays the corpus (CTest).
#   fuzz_elmsg        - libFuzzer binary, only with -DCOLLAB_FUZZ=ON and clang.
# The seed corpus is written by `cl_elmsg_test --write-corpus DIR`.
set(_fe_dir ${CMAKE_CURRENT_LIST_DIR})
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.cmake)

collab_fuzz_target(elmsg
  HARNESS ${_fe_dir}/fuzz_elmsg.c
  CORPUS ${_fe_dir}/corpus
  SOURCES ${PROJECT_SOURCE_DIR}/src/engine/cl_elmsg.c
  LIBS collab_engine_base collab_elastic collab_util)
# The encoder still writes the seeds' exact bytes (check_seeds.cmake).
if(TARGET cl_elmsg_test)
  add_test(NAME elmsg_seed_bytes
           COMMAND ${CMAKE_COMMAND} -DWRITER=$<TARGET_FILE:cl_elmsg_test>
                   -DCORPUS=${_fe_dir}/corpus -DOUT=${CMAKE_CURRENT_BINARY_DIR}/elmsg_seed_bytes
                   -P ${_fe_dir}/check_seeds.cmake)
  set_tests_properties(elmsg_seed_bytes PROPERTIES TIMEOUT 30 LABELS fuzz)
endif()
