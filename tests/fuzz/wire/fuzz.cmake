include_guard(GLOBAL)
# Wire decoder fuzz target (src/engine/cl_wire.c).
#   fuzz_wire_replay  - plain executable that replays the corpus (CTest).
#   fuzz_wire         - libFuzzer binary, only with -DCOLLAB_FUZZ=ON and clang.
set(_fw_dir ${CMAKE_CURRENT_LIST_DIR})
set(_fw_root ${CMAKE_CURRENT_LIST_DIR}/../../..)
add_executable(fuzz_wire_replay ${_fw_dir}/fuzz_wire.c ${_fw_dir}/fuzz_replay.c
               ${_fw_root}/src/engine/cl_wire.c)
target_include_directories(fuzz_wire_replay PRIVATE ${_fw_root}/src ${_fw_root}/include)
target_link_libraries(fuzz_wire_replay PRIVATE PkgConfig::SODIUM m)
add_test(NAME fuzz_wire_replay COMMAND fuzz_wire_replay ${_fw_dir}/corpus)
set_tests_properties(fuzz_wire_replay PROPERTIES TIMEOUT 120 LABELS fuzz)
if(COLLAB_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "COLLAB_FUZZ needs clang (CC=clang)")
  endif()
  add_executable(fuzz_wire ${_fw_dir}/fuzz_wire.c ${_fw_root}/src/engine/cl_wire.c)
  target_include_directories(fuzz_wire PRIVATE ${_fw_root}/src ${_fw_root}/include)
  target_compile_options(fuzz_wire PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(fuzz_wire PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_wire PRIVATE PkgConfig::SODIUM m)
endif()
