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
