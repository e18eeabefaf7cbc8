# Tests of the command-line tools (collab-run, collab-keygen).  Included by
# tools/CMakeLists.txt and by tests/CMakeLists.txt; the guard keeps one copy.
include_guard(GLOBAL)

if(NOT TARGET collab-run OR NOT TARGET collab-keygen)
  return()
endif()

set(CR_TEST_SRC ${PROJECT_SOURCE_DIR}/tests/tools)
set(CR_TEST_BIN ${CMAKE_BINARY_DIR}/tests/tools)
file(MAKE_DIRECTORY ${CR_TEST_BIN})

# Parsers and streams, in-process.
add_executable(tools_cr_unit_test ${CR_TEST_SRC}/cr_unit_test.c)
target_link_libraries(tools_cr_unit_test PRIVATE collab_run_parts)
target_include_directories(tools_cr_unit_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
add_test(NAME tools_cr_unit COMMAND tools_cr_unit_test)

# The peer program of the process tests: plain C, no MPI.
add_executable(tools_probe ${CR_TEST_SRC}/tools_probe.c)
set_target_properties(tools_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CR_TEST_BIN})

# Stand-ins for the mpicollab faces, under every name collab-run looks for.
add_library(tools_fake_face SHARED ${CR_TEST_SRC}/fake_face.c)
set_target_properties(tools_fake_face PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CR_TEST_BIN})
set(CR_FAKE_LIBDIR ${CR_TEST_BIN}/fakelib)
add_custom_command(TARGET tools_fake_face POST_BUILD
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CR_FAKE_LIBDIR}/mpicollab
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:tools_fake_face> ${CR_FAKE_LIBDIR}/libmpicollab.so
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:tools_fake_face> ${CR_FAKE_LIBDIR}/libmpicollab-ompi.so
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:tools_fake_face> ${CR_FAKE_LIBDIR}/mpicollab/libmpich.so.12
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:tools_fake_face> ${CR_FAKE_LIBDIR}/mpicollab/libmpi.so.12
  COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:tools_fake_face> ${CR_FAKE_LIBDIR}/mpicollab/libmpi.so.40
  VERBATIM)

# Programs linked by the real MPI compiler wrappers, for ABI detection.
find_program(CR_MPICC_MPICH mpicc.mpich)
find_program(CR_MPICC_OMPI mpicc.openmpi)
set(CR_ABI_PROBES)
foreach(abi mpich ompi)
  if(abi STREQUAL "mpich")
    set(cc ${CR_MPICC_MPICH})
  else()
    set(cc ${CR_MPICC_OMPI})
  endif()
  if(cc)
    add_custom_command(OUTPUT ${CR_TEST_BIN}/abi_probe_${abi}
      COMMAND ${cc} -o ${CR_TEST_BIN}/abi_probe_${abi} ${CR_TEST_SRC}/abi_probe.c
      DEPENDS ${CR_TEST_SRC}/abi_probe.c
      COMMENT "Building abi_probe_${abi} with ${cc}"
      VERBATIM)
    list(APPEND CR_ABI_PROBES ${CR_TEST_BIN}/abi_probe_${abi})
  endif()
endforeach()
if(CR_MPICC_MPICH)
  add_custom_command(OUTPUT ${CR_TEST_BIN}/e2e_allreduce_mpich
    COMMAND ${CR_MPICC_MPICH} -o ${CR_TEST_BIN}/e2e_allreduce_mpich ${CR_TEST_SRC}/e2e_allreduce.c
    DEPENDS ${CR_TEST_SRC}/e2e_allreduce.c
    VERBATIM)
  list(APPEND CR_ABI_PROBES ${CR_TEST_BIN}/e2e_allreduce_mpich)
endif()
# The helpers are not under test: keep sanitizers out of them, since a
# preloaded library must come before an instrumented program's runtime.
if(COLLAB_SANITIZE)
  foreach(t tools_probe tools_fake_face)
    target_compile_options(${t} PRIVATE -fno-sanitize=all)
    target_link_options(${t} PRIVATE -fno-sanitize=all)
  endforeach()
endif()
add_custom_target(tools_test_programs ALL DEPENDS ${CR_ABI_PROBES} tools_probe tools_fake_face)

# Process-level tests: shell scripts driving the real binaries.  They get
# their inputs through CR_TEST_* variables (never COLLAB_*: peers inherit
# the environment, and the library rejects unknown COLLAB_* names).
set(CR_TEST_ENV
  CR_TEST_RUN=$<TARGET_FILE:collab-run>
  CR_TEST_KEYGEN=$<TARGET_FILE:collab-keygen>
  CR_TEST_PROBE=$<TARGET_FILE:tools_probe>
  CR_TEST_FAKELIB=${CR_FAKE_LIBDIR}
  CR_TEST_BIN=${CR_TEST_BIN}
  CR_TEST_LIBDIR=${CMAKE_BINARY_DIR}/lib
  CR_TEST_PYTHON=${COLLAB_PYTHON})
if(COLLAB_SANITIZE)
  # Some cases run collab-run itself under a user's LD_PRELOAD.
  list(APPEND CR_TEST_ENV ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1
                          UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
  set_tests_properties(tools_cr_unit PROPERTIES
    ENVIRONMENT "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
endif()
set(CR_SCRIPT_TESTS)
foreach(t options abi exit signals tag chaos_kill chaos_stop chaos_start timeout e2e)
  add_test(NAME tools_run_${t} COMMAND bash ${CR_TEST_SRC}/run_${t}.sh)
  list(APPEND CR_SCRIPT_TESTS tools_run_${t})
endforeach()
add_test(NAME tools_keygen COMMAND bash ${CR_TEST_SRC}/keygen.sh)
list(APPEND CR_SCRIPT_TESTS tools_keygen)
set_tests_properties(${CR_SCRIPT_TESTS} PROPERTIES
  ENVIRONMENT "${CR_TEST_ENV}"
  TIMEOUT 60
  SKIP_RETURN_CODE 77
  LABELS tools)
# The end-to-end test needs the faces and the engine (other areas).
set_tests_properties(tools_run_e2e PROPERTIES TIMEOUT 120)
set_tests_properties(tools_cr_unit PROPERTIES TIMEOUT 120 LABELS tools)

# bench/soak.sh's verdict of a round, on made-up round logs (no processes).
add_test(NAME tools_soak_verdict
  COMMAND bash ${CR_TEST_SRC}/soak_verdict_test.sh ${PROJECT_SOURCE_DIR}/bench/soak_verdict.sh)
set_tests_properties(tools_soak_verdict PROPERTIES TIMEOUT 60 LABELS "tools;fast")
