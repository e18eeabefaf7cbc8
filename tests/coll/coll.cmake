include_guard(GLOBAL)
# coll_check (built with mpicc.mpich) and the multi-process tests listed in
# tests/coll/testlist, each run through tests/coll/run_test.sh.

set(_cc_dir ${CMAKE_CURRENT_LIST_DIR})
set(_cc_sources
    ${_cc_dir}/coll_check.c ${_cc_dir}/cc_types.c ${_cc_dir}/cc_reduce.c
    ${_cc_dir}/cc_move.c ${_cc_dir}/cc_nonblocking.c ${_cc_dir}/cc_comm.c
    ${_cc_dir}/cc_p2p.c ${_cc_dir}/cc_errors.c)
set(COLLAB_COLL_CHECK ${CMAKE_CURRENT_BINARY_DIR}/coll/coll_check)
collab_mpich_program(coll_check
  OUTPUT ${COLLAB_COLL_CHECK}
  SOURCES ${_cc_sources}
  DEPENDS ${_cc_dir}/coll_check.h
  LIBS -lm)

# Derived datatypes, Alltoallv/w, Iscan/Iexscan, odd-sized user ops.
set(COLLAB_DT_CHECK ${CMAKE_CURRENT_BINARY_DIR}/coll/dt_check)
collab_mpich_program(dt_check
  OUTPUT ${COLLAB_DT_CHECK}
  SOURCES ${_cc_dir}/dt_check.c)

# Comm_create_group, Fortran 90 types, generalized requests, external32.
set(COLLAB_EXT_CHECK ${CMAKE_CURRENT_BINARY_DIR}/coll/ext_check)
collab_mpich_program(ext_check
  OUTPUT ${COLLAB_EXT_CHECK}
  SOURCES ${_cc_dir}/ext_check.c)

# All-reduces across hosts in strict mode, through host leaders
# (tests/e2e/host_leader.sh).
set(COLLAB_HIER_CHECK ${CMAKE_CURRENT_BINARY_DIR}/coll/hier_check)
collab_mpich_program(hier_check
  OUTPUT ${COLLAB_HIER_CHECK}
  SOURCES ${_cc_dir}/hier_check.c
  LIBS -lm)

# Alltoallv/w and a persistent all-reduce across a real kill (preload only:
# the test reads MPIX_Collab_group, which MPICH does not have).
set(COLLAB_A2A_ABSENT ${CMAKE_CURRENT_BINARY_DIR}/coll/a2a_absent)
collab_mpich_program(a2a_absent
  OUTPUT ${COLLAB_A2A_ABSENT}
  SOURCES ${_cc_dir}/a2a_absent.c
  LIBS -ldl)
if(COLLAB_MPICC_MPICH)
  add_test(NAME coll.a2a_absent_kill
    COMMAND ${COLLAB_RUN} -n 4 --abi mpich --mode preload --timeout 60
      --chaos kill:2@line:2:ready -- ${COLLAB_A2A_ABSENT})
  set_tests_properties(coll.a2a_absent_kill PROPERTIES TIMEOUT 90 PROCESSORS 4
    LABELS "ours;elastic"
    PASS_REGULAR_EXPRESSION "a2a_absent: rank 0 ok"
    FAIL_REGULAR_EXPRESSION "FAIL:")
endif()

# Ranks that finalize while another is still busy (docs/elastic.md §10).
set(COLLAB_EARLY_LEAVE ${CMAKE_CURRENT_BINARY_DIR}/coll/early_leave CACHE INTERNAL
  "early_leave test program")
collab_mpich_program(early_leave
  OUTPUT ${COLLAB_EARLY_LEAVE}
  SOURCES ${_cc_dir}/early_leave.c)

# A long loop of collectives with uneven computation (oversubscribed runs).
set(COLLAB_BUSY_LOOP ${CMAKE_CURRENT_BINARY_DIR}/coll/busy_loop CACHE INTERNAL
  "busy_loop test program")
collab_mpich_program(busy_loop
  OUTPUT ${COLLAB_BUSY_LOOP}
  SOURCES ${_cc_dir}/busy_loop.c)

# A persistent all-reduce as a trainer's only collective, through a real
# SIGKILL of rank 1 and a joiner that takes its rank: every rank's
# parameters stay exact at every step, and the joiner starts at the
# swarm's step, not at 0 (state sync of its start-up broadcasts).
set(COLLAB_P_JOIN ${CMAKE_CURRENT_BINARY_DIR}/coll/p_join)
collab_mpich_program(p_join
  OUTPUT ${COLLAB_P_JOIN}
  SOURCES ${_cc_dir}/p_join.c)
if(COLLAB_MPICC_MPICH)
  add_test(NAME coll.p_join_kill_join
    COMMAND bash ${_cc_dir}/p_join.sh ${COLLAB_RUN} ${COLLAB_P_JOIN})
  set_tests_properties(coll.p_join_kill_join PROPERTIES TIMEOUT 120 PROCESSORS 3
    LABELS "ours;elastic")
endif()

# Programs a testlist line may name.
set(_cc_prog_coll_check ${COLLAB_COLL_CHECK})
set(_cc_prog_dt_check ${COLLAB_DT_CHECK})
set(_cc_prog_ext_check ${COLLAB_EXT_CHECK})
set(_cc_prog_early_leave ${COLLAB_EARLY_LEAVE})
set(_cc_prog_busy_loop ${COLLAB_BUSY_LOOP})
set(_cc_prog_trainer ${COLLAB_TRAINER})

# Registers coll.<name>.<mode> for every line of the test list.
function(collab_read_testlist file)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
  file(STRINGS ${file} lines)
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    if(line STREQUAL "" OR line MATCHES "^#")
      continue()
    endif()
    string(REGEX REPLACE "[ \t]+" ";" f "${line}")
    list(LENGTH f n)
    if(n LESS 6)
      message(FATAL_ERROR "${file}: needs name, peers, program, modes, timeout, expect: '${line}'")
    endif()
    list(GET f 0 name)
    list(GET f 1 np)
    list(GET f 2 prog)
    list(GET f 3 modes)
    list(GET f 4 tmo)
    list(GET f 5 expect)
    set(args "")
    if(n GREATER 6)
      list(SUBLIST f 6 -1 args)
    endif()
    if(NOT np MATCHES "^[1-9][0-9]*$" OR NOT tmo MATCHES "^[1-9][0-9]*$")
      message(FATAL_ERROR "${file}: peers and timeout must be positive integers: '${line}'")
    endif()
    if(NOT DEFINED _cc_prog_${prog})
      message(FATAL_ERROR "${file}: unknown program '${prog}' in '${line}'")
    endif()
    set(path ${_cc_prog_${prog}})
    string(REPLACE "," ";" modes "${modes}")
    foreach(mode IN LISTS modes)
      if(NOT mode MATCHES "^(mpich|preload|replace|compare)$")
        message(FATAL_ERROR "${file}: unknown mode '${mode}' in '${line}'")
      endif()
      set(test coll.${name}.${mode})
      add_test(NAME ${test}
        COMMAND bash ${_cc_dir}/run_test.sh
          --mode ${mode} --np ${np} --timeout ${tmo} --expect ${expect}
          --collab-run ${COLLAB_RUN} --mpiexec ${COLLAB_MPIEXEC_MPICH}
          --logdir ${CMAKE_CURRENT_BINARY_DIR}/logs/${name}.${mode}
          -- ${path} ${args})
      # compare runs the program twice.
      if(mode STREQUAL "compare")
        math(EXPR limit "2 * ${tmo} + 90")
      else()
        math(EXPR limit "${tmo} + 60")
      endif()
      set(labels testlist ${mode})
      if(NOT mode STREQUAL "mpich")
        list(APPEND labels ours)
      endif()
      set_tests_properties(${test} PROPERTIES TIMEOUT ${limit} LABELS "${labels}"
        PROCESSORS ${np})
    endforeach()
  endforeach()
endfunction()

if(COLLAB_MPICC_MPICH)
  collab_read_testlist(${_cc_dir}/testlist)
endif()
