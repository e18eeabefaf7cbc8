# collab_fuzz_target(): one fuzz target, built two ways.
#
#   collab_fuzz_target(<name> HARNESS <file.c> CORPUS <dir>
#                      SOURCES <files to instrument...> LIBS <libs...>)
#
# - fuzz_<name>_replay: the harness with fuzz_replay.c's main(), linked
#   with LIBS, built by any compiler; CTest `fuzz_<name>_replay` feeds it
#   every file of CORPUS.
# - fuzz_<name>: with COLLAB_FUZZ=ON and clang, a libFuzzer binary built
#   from the harness and SOURCES (compiled into it, so that libFuzzer sees
#   their coverage) with ASan and UBSan.  Run it as
#   `fuzz_<name> -max_total_time=60 <corpus copy>`; add every crashing
#   input to CORPUS.
include_guard(GLOBAL)

set(COLLAB_FUZZ_REPLAY_MAIN ${CMAKE_CURRENT_LIST_DIR}/fuzz_replay.c)

function(collab_fuzz_target name)
  cmake_parse_arguments(F "" "HARNESS;CORPUS" "SOURCES;LIBS" ${ARGN})
  if(NOT F_HARNESS OR NOT F_CORPUS)
    message(FATAL_ERROR "collab_fuzz_target(${name}): HARNESS and CORPUS are required")
  endif()
  add_executable(fuzz_${name}_replay ${F_HARNESS} ${COLLAB_FUZZ_REPLAY_MAIN})
  target_include_directories(fuzz_${name}_replay PRIVATE ${COLLAB_CORE_INCLUDES})
  target_link_libraries(fuzz_${name}_replay PRIVATE ${F_LIBS})
  add_test(NAME fuzz_${name}_replay COMMAND fuzz_${name}_replay ${F_CORPUS})
  set_tests_properties(fuzz_${name}_replay PROPERTIES TIMEOUT 120 LABELS fuzz)

  if(COLLAB_FUZZ)
    if(CMAKE_C_COMPILER_ID MATCHES "Clang")
      add_executable(fuzz_${name} ${F_HARNESS} ${F_SOURCES})
      target_include_directories(fuzz_${name} PRIVATE ${COLLAB_CORE_INCLUDES})
      target_link_libraries(fuzz_${name} PRIVATE ${COLLAB_CORE_DEPS})
      target_compile_options(fuzz_${name} PRIVATE -g -fsanitize=fuzzer,address,undefined
                                                  -fno-omit-frame-pointer)
      target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    else()
      get_property(warned GLOBAL PROPERTY COLLAB_FUZZ_WARNED)
      if(warned)
        return()
      endif()
      set_property(GLOBAL PROPERTY COLLAB_FUZZ_WARNED ON)
      message(WARNING "COLLAB_FUZZ=ON needs clang (CC=clang): libFuzzer targets are not "
                      "built; the corpus replay tests still are")
    endif()
  endif()
endfunction()
