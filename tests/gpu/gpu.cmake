# scripts/gpu-check.sh and its parts, as far as a machine without a GPU
# can run them (docs/cuda.md): syntax, the Python programs, the sandbox
# probe and the `env` stage against this build.  The GPU stages themselves
# are the cuda_kernels test (label gpu) and gpu-check.sh on a GPU machine.
include_guard(GLOBAL)
if(NOT TARGET collab-run)
  return()
endif()
add_test(NAME gpu_check_scripts
  COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/check_scripts.sh
          ${PROJECT_SOURCE_DIR} ${CMAKE_BINARY_DIR} ${COLLAB_PYTHON})
set_tests_properties(gpu_check_scripts PROPERTIES TIMEOUT 60 LABELS tools)

# gpu-check.sh's `mpi` program on host memory (a CUDA stand-in header):
# its MPI logic and output, through collab-run as the stage runs it.
if(COLLAB_MPICC_MPICH)
  collab_mpich_program(gpu_allreduce_stub
    OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/gpu_allreduce_stub
    SOURCES ${PROJECT_SOURCE_DIR}/scripts/gpu/gpu_allreduce.c
    DEPENDS ${CMAKE_CURRENT_LIST_DIR}/cuda_stub/cuda_runtime_api.h
    LIBS -I${CMAKE_CURRENT_LIST_DIR}/cuda_stub)
  add_test(NAME gpu_allreduce_stub
    COMMAND ${CMAKE_BINARY_DIR}/bin/collab-run -n 4 --abi mpich --mode replace --timeout 100
            ${CMAKE_CURRENT_BINARY_DIR}/gpu_allreduce_stub 262144)
  set_tests_properties(gpu_allreduce_stub PROPERTIES TIMEOUT 120 LABELS tools
    ENVIRONMENT "COLLAB_LOG=warn"
    PASS_REGULAR_EXPRESSION "RESULT correctness_failures 0.*RESULT allreduce 262144 ")
endif()
