include_guard(GLOBAL)
# Collective algorithms (collab_coll): the state machines the engine drives
# through cl_coll.h.  See docs/collectives.md.

set(_cl_coll_dir ${CMAKE_CURRENT_LIST_DIR})
set(_cl_coll_tests ${PROJECT_SOURCE_DIR}/tests/unit/coll)

collab_area(collab_coll
    ${_cl_coll_dir}/cl_coll.c
    ${_cl_coll_dir}/cl_coll_sign.c
    ${_cl_coll_dir}/cl_relay.c
    ${_cl_coll_dir}/cl_coll_exchange.c
    ${_cl_coll_dir}/cl_coll_butterfly.c
    ${_cl_coll_dir}/cl_coll_layout.c
    ${_cl_coll_dir}/cl_coll_bfacc.c
    ${_cl_coll_dir}/cl_coll_bfverify.c
    ${_cl_coll_dir}/cl_coll_bcast.c
    ${_cl_coll_dir}/cl_coll_direct.c)

# The selftests drive N in-process members through a shuffling harness
# (tests/unit/coll/test_coll_harness.c); they need the kernels and the
# logger, and include the area's private headers.
if(TARGET collab_reduce AND TARGET collab_util AND EXISTS ${_cl_coll_tests}/test_coll_harness.c)
  add_library(collab_coll_harness OBJECT ${_cl_coll_tests}/test_coll_harness.c
      ${_cl_coll_tests}/test_coll_ref.c)
  target_link_libraries(collab_coll_harness PUBLIC collab_coll)
  target_include_directories(collab_coll_harness PUBLIC ${_cl_coll_dir} ${_cl_coll_tests})
  # The references spell out the kernels' order of operations.
  set_source_files_properties(${_cl_coll_tests}/test_coll_ref.c PROPERTIES
      COMPILE_OPTIONS "-ffp-contract=off")
  foreach(t cl_coll_test cl_coll_move_test cl_coll_fail_test cl_coll_bad_test
      cl_coll_layout_test cl_coll_xproof_test)
    if(EXISTS ${_cl_coll_tests}/${t}.c)
      collab_selftest(${t} ${_cl_coll_tests}/${t}.c
          collab_coll_harness collab_coll collab_reduce collab_util)
    endif()
  endforeach()
  # cl_coll_fail_test: the sweep, its fixture and the staged cases.
  if(TARGET cl_coll_fail_test)
    target_sources(cl_coll_fail_test PRIVATE ${_cl_coll_tests}/cl_coll_fail_fx.c
        ${_cl_coll_tests}/cl_coll_fail_staged.c)
  endif()
endif()
