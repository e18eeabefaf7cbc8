include_guard(GLOBAL)
# Fuzz target of the ELASTIC message decoder (src/engine/cl_elmsg.c).
#   fuzz_elmsg_replay - plain executable that replays the corpus (CTest).
#   fuzz_elmsg        - libFuzzer binary, only with -DCOLLAB_FUZZ=ON and clang.
# The seed corpus is written by `cl_elmsg_test --write-corpus DIR`.
set(_fe_dir ${CMAKE_CURRENT_LIST_DIR})
set(_fe_root ${CMAKE_CURRENT_LIST_DIR}/../../..)
add_executable(fuzz_elmsg_replay ${_fe_dir}/fuzz_elmsg.c ${_fe_root}/tests/fuzz/wire/fuzz_replay.c
               ${_fe_root}/src/engine/cl_elmsg.c)
target_include_directories(fuzz_elmsg_replay PRIVATE ${_fe_root}/src ${_fe_root}/include)
target_link_libraries(fuzz_elmsg_replay PRIVATE PkgConfig::SODIUM m)
add_test(NAME fuzz_elmsg_replay COMMAND fuzz_elmsg_replay ${_fe_dir}/corpus)
set_tests_properties(fuzz_elmsg_replay PROPERTIES TIMEOUT 120 LABELS fuzz)
# The encoder still writes the seeds' exact bytes (check_seeds.cmake).
if(TARGET cl_elmsg_test)
  add_test(NAME elmsg_seed_bytes
           COMMAND ${CMAKE_COMMAND} -DWRITER=$<TARGET_FILE:cl_elmsg_test>
                   -DCORPUS=${_fe_dir}/corpus -DOUT=${CMAKE_CURRENT_BINARY_DIR}/elmsg_seed_bytes
                   -P ${_fe_dir}/check_seeds.cmake)
  set_tests_properties(elmsg_seed_bytes PROPERTIES TIMEOUT 30 LABELS fuzz)
endif()
if(COLLAB_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "COLLAB_FUZZ needs clang (CC=clang)")
  endif()
  add_executable(fuzz_elmsg ${_fe_dir}/fuzz_elmsg.c ${_fe_root}/src/engine/cl_elmsg.c)
  target_include_directories(fuzz_elmsg PRIVATE ${_fe_root}/src ${_fe_root}/include)
  target_compile_options(fuzz_elmsg PRIVATE -g -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_elmsg PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_elmsg PRIVATE PkgConfig::SODIUM m)
endif()
