include_guard(GLOBAL)
# Reduction kernels, datatype facts and wire compression (collab_reduce).

set(_cl_reduce_dir ${CMAKE_CURRENT_LIST_DIR})
set(_cl_reduce_kernels
    ${_cl_reduce_dir}/cl_reduce_int.c
    ${_cl_reduce_dir}/cl_reduce_float.c
    ${_cl_reduce_dir}/cl_reduce_pair.c
    ${_cl_reduce_dir}/cl_reduce_weighted.c
    ${_cl_reduce_dir}/cl_robust.c
    ${_cl_reduce_dir}/cl_compress.c)

collab_area(collab_reduce
    ${_cl_reduce_dir}/cl_dtype.c
    ${_cl_reduce_dir}/cl_reduce.c
    ${_cl_reduce_kernels})

# The kernels are plain loops meant for the vectoriser: -O3 in every build
# type.  -ffp-contract=off keeps results bit-identical whether or not the
# target CPU has FMA, so that every member of a group gets the same bits.
set_source_files_properties(${_cl_reduce_kernels} PROPERTIES
    COMPILE_OPTIONS "-O3;-ffp-contract=off")

# Set COLLAB_VEC_REPORT=ON to print GCC's vectorisation report for them.
option(COLLAB_VEC_REPORT "Print GCC's vectorisation report for the reduction kernels" OFF)
if(COLLAB_VEC_REPORT)
  set_property(SOURCE ${_cl_reduce_kernels} APPEND PROPERTY
      COMPILE_OPTIONS "-fopt-info-vec-optimized")
endif()

# The selftests live in tests/unit/coll and include the area's headers.
set(_cl_reduce_tests ${PROJECT_SOURCE_DIR}/tests/unit/coll)
foreach(t cl_reduce_test cl_reduce_weighted_test cl_compress_test cl_robust_test)
  collab_selftest(${t} ${_cl_reduce_tests}/${t}.c collab_reduce)
  target_include_directories(${t} PRIVATE ${_cl_reduce_dir} ${_cl_reduce_tests})
endforeach()
# The references in the tests spell out the kernels' order of operations.
set_source_files_properties(${_cl_reduce_tests}/cl_reduce_test.c
    ${_cl_reduce_tests}/cl_reduce_weighted_test.c ${_cl_reduce_tests}/cl_compress_test.c
    PROPERTIES COMPILE_OPTIONS "-ffp-contract=off")
