include_guard(GLOBAL)
# Tests of the Open MPI face (docs/ompi-abi.md).  Included by
# interpose/ompi/face.cmake and by tests/CMakeLists.txt; needs the targets
# of face.cmake.  Programs are built with Debian's mpicc.openmpi and run
# unchanged on Open MPI (the reference) and on mpicollab; Python tests use
# /usr/bin/python3 with Debian's mpi4py.  Tests whose tools are missing are
# not registered (a configure message says which).
#
#   ompi_constcheck        every constant/handle/MPI_Status fact vs Open MPI's mpi.h
#   ompi_protocheck_real   every exported prototype vs Open MPI's mpi.h
#   ompi_symbols_*         exports vs libmpi.so.40 and mpi4py, object sizes, no -Bsymbolic
#   ompi_inert             preloaded, nothing happens without MPI_Init
#   ompi_c_collectives_*   an mpicc.openmpi program: same output as on Open MPI
#   ompi_mpi4py_*          Debian's mpi4py: same output as on Open MPI
#                          (_dtypes_3: derived types, Alltoallv/w, Iscan)
#   ompi_trainer_*         examples/numpy_trainer.py: same loss, identical parameters;
#                          _4_kill: one of 4 peers killed mid-run, the others agree
#   ompi_op_table          every predefined op x datatype: accepted exactly when Open MPI accepts it
#   ompi_ext_check_*       tests/coll/ext_check.c built with mpicc.openmpi: same output
#   ompi_init_error_line   MPI_Init failing on a bad setting prints no "(null)" line
#   ompi_robust            bad handles and out-of-scope calls: error classes, no crash
#   ompi_fatal, ompi_abort exit statuses and banners of Open MPI
#   ompi_foreign           an MPICH program preloading this face is stopped

if(NOT TARGET collab_ompi_preload)
  return()
endif()

set(_ot ${PROJECT_SOURCE_DIR}/tests/ompi)
set(_ob ${CMAKE_BINARY_DIR}/tests/ompi)
file(MAKE_DIRECTORY ${_ob})
find_program(COLLAB_MPICC_OPENMPI mpicc.openmpi)
find_program(COLLAB_MPICC_MPICH mpicc.mpich)
find_program(COLLAB_MPIRUN_OPENMPI NAMES mpirun.openmpi mpirun)

function(collab_ompi_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 180 LABELS "ompi")
endfunction()

# --- header, prototypes, symbols (no MPI run needed) --------------------
if(COLLAB_MPICC_OPENMPI)
  collab_ompi_test(ompi_constcheck ${COLLAB_PYTHON} ${_ot}/constcheck.py
    --mpicc ${COLLAB_MPICC_OPENMPI} --cc ${CMAKE_C_COMPILER}
    --ours-include ${PROJECT_SOURCE_DIR}/interpose/ompi --ours-include ${COLLAB_OMPI_GEN}
    --ours-include ${PROJECT_SOURCE_DIR}/interpose/common
    --ours-include ${PROJECT_SOURCE_DIR}/include
    --ours-source ${PROJECT_SOURCE_DIR}/interpose/ompi/objects.c
    --workdir ${_ob}/constcheck)
  collab_ompi_test(ompi_protocheck_real ${COLLAB_PYTHON} ${_ot}/protocheck_real.py
    --mpicc ${COLLAB_MPICC_OPENMPI}
    --table ${PROJECT_SOURCE_DIR}/interpose/gen/mpi_functions.txt
    --table ${PROJECT_SOURCE_DIR}/interpose/ompi/mpi_functions_ompi.txt
    --exports ${PROJECT_SOURCE_DIR}/interpose/ompi/exports.txt
    --workdir ${_ob}/protocheck)
else()
  message(STATUS "tests/ompi: mpicc.openmpi not found; Open MPI comparison tests skipped")
endif()

collab_ompi_test(ompi_symbols_preload ${COLLAB_PYTHON} ${_ot}/symcheck.py
  $<TARGET_FILE:collab_ompi_preload>)
collab_ompi_test(ompi_symbols_libmpi ${COLLAB_PYTHON} ${_ot}/symcheck.py
  $<TARGET_FILE:collab_ompi_libmpi> --soname libmpi.so.40)

# Without initialising MPI: is Debian's mpi4py (the extension module) there?
execute_process(COMMAND ${COLLAB_PYTHON} -c
  "import glob, os, mpi4py, numpy; assert glob.glob(os.path.dirname(mpi4py.__file__) + '/MPI.*.so')"
  RESULT_VARIABLE _ompi_no_mpi4py OUTPUT_QUIET ERROR_QUIET)
if(NOT _ompi_no_mpi4py EQUAL 0)
  message(STATUS "tests/ompi: ${COLLAB_PYTHON} cannot import mpi4py and numpy; mpi4py tests skipped")
endif()

if(_ompi_no_mpi4py EQUAL 0)
  collab_ompi_test(ompi_inert ${CMAKE_COMMAND} -E env
    LD_PRELOAD=$<TARGET_FILE:collab_ompi_preload>
    ${COLLAB_PYTHON} ${_ot}/inert_check.py)
endif()

if(NOT COLLAB_MPICC_OPENMPI OR NOT COLLAB_MPIRUN_OPENMPI)
  return()
endif()

# --- programs built with mpicc.openmpi ----------------------------------
set(_ompi_programs "")
foreach(prog c_collectives c_fatal c_robust)
  add_custom_command(OUTPUT ${_ob}/${prog}
    COMMAND ${COLLAB_MPICC_OPENMPI} -O1 -Wall -o ${_ob}/${prog} ${_ot}/${prog}.c
    DEPENDS ${_ot}/${prog}.c COMMENT "mpicc.openmpi ${prog}.c")
  list(APPEND _ompi_programs ${_ob}/${prog})
endforeach()
# The checks of calls around the collectives shared with tests/coll.
add_custom_command(OUTPUT ${_ob}/ext_check
  COMMAND ${COLLAB_MPICC_OPENMPI} -O1 -Wall -o ${_ob}/ext_check
          ${PROJECT_SOURCE_DIR}/tests/coll/ext_check.c
  DEPENDS ${PROJECT_SOURCE_DIR}/tests/coll/ext_check.c COMMENT "mpicc.openmpi ext_check.c")
list(APPEND _ompi_programs ${_ob}/ext_check)
# The op/datatype probe shared with the MPICH face's tests.
add_custom_command(OUTPUT ${_ob}/op_table
  COMMAND ${COLLAB_MPICC_OPENMPI} -O1 -Wall -o ${_ob}/op_table
          ${PROJECT_SOURCE_DIR}/tests/abi/op_table.c
  DEPENDS ${PROJECT_SOURCE_DIR}/tests/abi/op_table.c COMMENT "mpicc.openmpi op_table.c")
list(APPEND _ompi_programs ${_ob}/op_table)
if(COLLAB_MPICC_MPICH)
  add_custom_command(OUTPUT ${_ob}/c_mpich_hello
    COMMAND ${COLLAB_MPICC_MPICH} -O1 -o ${_ob}/c_mpich_hello ${_ot}/c_mpich_hello.c
    DEPENDS ${_ot}/c_mpich_hello.c COMMENT "mpicc.mpich c_mpich_hello.c")
  list(APPEND _ompi_programs ${_ob}/c_mpich_hello)
endif()
add_custom_target(collab_ompi_test_programs ALL DEPENDS ${_ompi_programs})

set(_cmp ${COLLAB_PYTHON} ${_ot}/run_compare.py --build ${CMAKE_BINARY_DIR})

# One peer, started directly (no launcher), preloaded and as replacement.
foreach(mode preload replace)
  collab_ompi_test(ompi_c_collectives_1_${mode} ${_cmp} --np 1 --mode ${mode}
    -- ${_ob}/c_collectives)
endforeach()
collab_ompi_test(ompi_op_table ${_cmp} --np 1 -- ${_ob}/op_table)
collab_ompi_test(ompi_ext_check_1 ${_cmp} --np 1 -- ${_ob}/ext_check)
collab_ompi_test(ompi_ext_check_3 ${_cmp} --np 3 -- ${_ob}/ext_check)
# MPI_Init failing on a bad setting: the core's line, then Open MPI's
# banner, and no "[collab] (null)" between them.
collab_ompi_test(ompi_init_error_line ${_cmp} --np 1 --no-reference --expect-fail
  --env COLLAB_TIMEOUT=bogus --expect-stderr "COLLAB_TIMEOUT='bogus'"
  --reject-stderr "[(]null[)]" -- ${_ob}/op_table)
collab_ompi_test(ompi_robust ${_cmp} --np 1 --no-reference -- ${_ob}/c_robust)
collab_ompi_test(ompi_fatal ${_cmp} --np 1 --expect-rc 10
  --expect-stderr "An error occurred in MPI_Allreduce" -- ${_ob}/c_fatal)
if(COLLAB_MPICC_MPICH)
  collab_ompi_test(ompi_foreign ${_cmp} --np 1 --no-reference --expect-fail
    --expect-stderr "built for the MPICH ABI" -- ${_ob}/c_mpich_hello)
endif()

if(_ompi_no_mpi4py EQUAL 0)
  foreach(mode preload replace)
    collab_ompi_test(ompi_mpi4py_1_${mode} ${_cmp} --np 1 --mode ${mode}
      -- ${COLLAB_PYTHON} ${_ot}/mpi4py_basic.py)
  endforeach()
  collab_ompi_test(ompi_abort ${_cmp} --np 1 --expect-rc 3
    -- ${COLLAB_PYTHON} ${_ot}/py_abort.py)
  collab_ompi_test(ompi_trainer_1 ${_cmp} --np 1 --rtol 1e-9 --same-after params
    -- ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/examples/numpy_trainer.py --steps 30)
endif()

# Several peers through collab-run (tools/, configured after this file):
# registered at the end of the configuration, once every target exists.
set_property(GLOBAL PROPERTY COLLAB_OMPI_HAVE_MPI4PY ${_ompi_no_mpi4py})
function(collab_ompi_multi_peer_tests)
  if(NOT TARGET collab-run)
    message(STATUS "tests/ompi: collab-run not built; multi-peer Open MPI tests skipped")
    return()
  endif()
  set(ot ${PROJECT_SOURCE_DIR}/tests/ompi)
  set(ob ${CMAKE_BINARY_DIR}/tests/ompi)
  set(cmp ${COLLAB_PYTHON} ${ot}/run_compare.py --build ${CMAKE_BINARY_DIR})
  collab_ompi_test(ompi_c_collectives_4 ${cmp} --np 4 -- ${ob}/c_collectives)
  get_property(no_mpi4py GLOBAL PROPERTY COLLAB_OMPI_HAVE_MPI4PY)
  if(no_mpi4py EQUAL 0)
    collab_ompi_test(ompi_mpi4py_4 ${cmp} --np 4 -- ${COLLAB_PYTHON} ${ot}/mpi4py_basic.py)
    # Vector and struct types, Alltoallv/w, Iscan/Iexscan through mpi4py.
    collab_ompi_test(ompi_mpi4py_dtypes_3 ${cmp} --np 3 -- ${COLLAB_PYTHON} ${ot}/mpi4py_dtypes.py)
    collab_ompi_test(ompi_trainer_4 ${cmp} --np 4 --sort --rtol 1e-6 --same-after params
      -- ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/examples/numpy_trainer.py --steps 30)
    # A peer killed mid-run: the three others finish with identical parameters.
    collab_ompi_test(ompi_trainer_4_kill ${cmp} --np 4 --no-reference --chaos kill:2@2s
      --same-after params --expect-count "^rank [013]/4 final loss" 3
      -- ${COLLAB_PYTHON} ${PROJECT_SOURCE_DIR}/examples/numpy_trainer.py
         --steps 400 --samples 2048)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR} CALL collab_ompi_multi_peer_tests)
