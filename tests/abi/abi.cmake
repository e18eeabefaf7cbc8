include_guard(GLOBAL)
# ABI tests of the MPICH face (docs/abi.md).  Included by
# interpose/CMakeLists.txt (and by tests/CMakeLists.txt once it exists).
#
#   abi_proto_sync          include/mpicollab/mpi_proto*.h equal what the table generates
#   abi_proto_sync_can_fail a header edited by hand, missing or stale is detected
#   abi_table_audit         the table's names and prototypes equal MPICH 4.0.2's (needs MPICH)
#   abi_protocheck_mpich    every exported prototype compiles against MPICH's mpi.h
#   abi_constcheck          every constant and layout of our mpi.h equals MPICH's (+ C++)
#   abi_constcheck_can_fail a changed constant is detected
#   abi_symbols_*           exports of each library: exact set, weak MPI_X == PMPI_X, SONAME
#   abi_symbols_can_fail    the symbol check rejects a library that is not ours
#   abi_errors              error classes, fatal line and exit status (mpicc.mpich program)
#   abi_op_table            every predefined op x datatype: accepted exactly when MPICH accepts it
#   abi_inert               a preloaded face starts no thread and no socket
#   abi_foreign             an Open MPI program preloading this face is told so at MPI_Init
#   abi_run_preload / _replace / _own_header  a program on one peer, three ways in
#   abi_own_header_on_mpich the same program built against our mpi.h runs on real MPICH
#   abi_threads             four threads use communicators, types, keyvals, requests at once
#   abi_install             the installed face: files, pkg-config build, replacement run

if(NOT TARGET collab_mpich_preload)
  return()
endif()

set(ABI_SRC ${PROJECT_SOURCE_DIR}/tests/abi)
set(ABI_BIN ${CMAKE_BINARY_DIR}/tests/abi)
file(MAKE_DIRECTORY ${ABI_BIN})
set(ABI_GEN ${CMAKE_BINARY_DIR}/interpose/mpich)
set(ABI_LIB $<TARGET_FILE:collab_mpich_preload>)
set(ABI_LIBDIR ${CMAKE_BINARY_DIR}/lib/mpicollab)
set(ABI_MPICH_INC /usr/include/x86_64-linux-gnu/mpich)
set(ABI_MPICH_LIB /usr/lib/x86_64-linux-gnu/libmpich.so.12)
find_program(ABI_MPICC mpicc.mpich)
find_program(ABI_MPICC_OMPI mpicc.openmpi)

function(abi_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS abi TIMEOUT 300)
endfunction()

# --- header and table -------------------------------------------------------
# Every prototype header (mpi_proto.h and one per chapter of the standard)
# against what the table generates; missing, stale and extra ones fail.
abi_test(abi_proto_sync ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/interpose/gen/gen_bindings.py
         --abi mpich --table ${PROJECT_SOURCE_DIR}/interpose/gen/mpi_functions.txt
         --proto ${PROJECT_SOURCE_DIR}/include/mpicollab/mpi_proto.h --check)
abi_test(abi_proto_sync_can_fail ${COLLAB_PYTHON} ${ABI_SRC}/proto_sync_can_fail.py
         --gen ${PROJECT_SOURCE_DIR}/interpose/gen/gen_bindings.py
         --table ${PROJECT_SOURCE_DIR}/interpose/gen/mpi_functions.txt
         --headers ${PROJECT_SOURCE_DIR}/include/mpicollab --workdir ${ABI_BIN}/proto_sync_can_fail)

if(EXISTS ${ABI_MPICH_INC}/mpi.h)
  abi_test(abi_constcheck ${COLLAB_PYTHON} ${ABI_SRC}/constcheck.py
           --cc ${CMAKE_C_COMPILER} --cxx ${CMAKE_CXX_COMPILER}
           --ours ${PROJECT_SOURCE_DIR}/include --mpich ${ABI_MPICH_INC}
           --list ${ABI_SRC}/constants.txt --workdir ${ABI_BIN}/constcheck)
  abi_test(abi_constcheck_can_fail ${COLLAB_PYTHON} ${ABI_SRC}/constcheck.py --mutate
           --cc ${CMAKE_C_COMPILER} --ours ${PROJECT_SOURCE_DIR}/include --mpich ${ABI_MPICH_INC}
           --list ${ABI_SRC}/constants.txt --workdir ${ABI_BIN}/constcheck_mutate)
  abi_test(abi_protocheck_mpich ${CMAKE_C_COMPILER} -fsyntax-only -Wall -Werror
           -I ${ABI_MPICH_INC} ${ABI_GEN}/protocheck.c)
else()
  message(STATUS "tests/abi: MPICH's mpi.h not found; constant checks skipped")
endif()

if(EXISTS ${ABI_MPICH_LIB} AND EXISTS ${ABI_MPICH_INC}/mpi_proto.h)
  abi_test(abi_table_audit ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/interpose/gen/extract_mpich.py
           --check ${PROJECT_SOURCE_DIR}/interpose/gen/mpi_functions.txt)
endif()

# --- exported symbols ---------------------------------------------------------
set(_ref "")
if(EXISTS ${ABI_MPICH_LIB})
  set(_ref --reference ${ABI_MPICH_LIB})
  abi_test(abi_symbols_can_fail ${COLLAB_PYTHON} ${ABI_SRC}/check_symbols.py
           --lib ${ABI_MPICH_LIB} --exports ${ABI_GEN}/exports.txt)
  set_tests_properties(abi_symbols_can_fail PROPERTIES WILL_FAIL TRUE)
endif()
foreach(t IN ITEMS preload:libmpicollab.so.0 libmpich:libmpich.so.12 libmpi:libmpi.so.12)
  string(REPLACE ":" ";" _p ${t})
  list(GET _p 0 _name)
  list(GET _p 1 _soname)
  abi_test(abi_symbols_${_name} ${COLLAB_PYTHON} ${ABI_SRC}/check_symbols.py
           --lib $<TARGET_FILE:collab_mpich_${_name}> --soname ${_soname}
           --exports ${ABI_GEN}/exports.txt ${_ref})
endforeach()

# --- programs -------------------------------------------------------------------
add_executable(abi_inert ${ABI_SRC}/inert.c)
set_target_properties(abi_inert PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ABI_BIN})
abi_test(abi_inert ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py inert
         --exe $<TARGET_FILE:abi_inert> --lib ${ABI_LIB})

# The same program compiled against our own mpi.h and linked to libmpicollab.
add_executable(abi_hello_own ${ABI_SRC}/hello.c)
target_include_directories(abi_hello_own PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(abi_hello_own PRIVATE collab_mpich_preload)
set_target_properties(abi_hello_own PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ABI_BIN})
abi_test(abi_run_own_header ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py app --mode own
         --exe $<TARGET_FILE:abi_hello_own> --libdir ${CMAKE_BINARY_DIR}/lib)

# The other way round: built against our mpi.h, run on real MPICH.
if(EXISTS ${ABI_MPICH_LIB})
  add_executable(abi_hello_own_on_mpich ${ABI_SRC}/hello.c)
  target_include_directories(abi_hello_own_on_mpich PRIVATE ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(abi_hello_own_on_mpich PRIVATE ${ABI_MPICH_LIB})
  set_target_properties(abi_hello_own_on_mpich PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ABI_BIN})
  abi_test(abi_own_header_on_mpich $<TARGET_FILE:abi_hello_own_on_mpich> --any)
  set_tests_properties(abi_own_header_on_mpich PROPERTIES
    PASS_REGULAR_EXPRESSION "hello ok" ENVIRONMENT "LD_PRELOAD=")
endif()

# Concurrent use of the face's tables (MPI_THREAD_MULTIPLE).
add_executable(abi_threads ${ABI_SRC}/threads.c)
target_include_directories(abi_threads PRIVATE ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(abi_threads PRIVATE collab_mpich_preload Threads::Threads)
set_target_properties(abi_threads PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${ABI_BIN})
abi_test(abi_threads ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py app --mode own --expect "threads ok"
         --exe $<TARGET_FILE:abi_threads> --libdir ${CMAKE_BINARY_DIR}/lib)

if(ABI_MPICC)
  # Programs built by MPICH's own compiler wrapper: they link libmpich.so.12.
  foreach(p errors hello op_table)
    add_custom_command(
      OUTPUT ${ABI_BIN}/${p}_mpich
      COMMAND ${ABI_MPICC} -O1 -Wall -o ${ABI_BIN}/${p}_mpich ${ABI_SRC}/${p}.c
      DEPENDS ${ABI_SRC}/${p}.c
      COMMENT "mpicc.mpich ${p}.c")
  endforeach()
  add_custom_target(abi_mpich_programs ALL
    DEPENDS ${ABI_BIN}/errors_mpich ${ABI_BIN}/hello_mpich ${ABI_BIN}/op_table_mpich)
  abi_test(abi_errors ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py errors
           --exe ${ABI_BIN}/errors_mpich --lib ${ABI_LIB})
  abi_test(abi_op_table ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py optable
           --exe ${ABI_BIN}/op_table_mpich --lib ${ABI_LIB})
  abi_test(abi_run_preload ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py app --mode preload
           --exe ${ABI_BIN}/hello_mpich --lib ${ABI_LIB})
  abi_test(abi_run_replace ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py app --mode replace
           --exe ${ABI_BIN}/hello_mpich --libdir ${ABI_LIBDIR})
  abi_test(abi_install ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py install
           --build ${CMAKE_BINARY_DIR} --prefix ${ABI_BIN}/prefix
           --source ${ABI_SRC}/hello.c --exe ${ABI_BIN}/hello_mpich)
else()
  message(STATUS "tests/abi: mpicc.mpich not found; tests of MPICH-built programs skipped")
endif()

if(ABI_MPICC_OMPI)
  add_custom_command(
    OUTPUT ${ABI_BIN}/foreign_ompi
    COMMAND ${ABI_MPICC_OMPI} -O1 -Wall -o ${ABI_BIN}/foreign_ompi ${ABI_SRC}/foreign.c
    DEPENDS ${ABI_SRC}/foreign.c
    COMMENT "mpicc.openmpi foreign.c")
  add_custom_target(abi_ompi_programs ALL DEPENDS ${ABI_BIN}/foreign_ompi)
  abi_test(abi_foreign ${COLLAB_PYTHON} ${ABI_SRC}/run_abi.py foreign
           --exe ${ABI_BIN}/foreign_ompi --lib ${ABI_LIB})
endif()
