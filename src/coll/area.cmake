# Reduction kernels (collab_reduce) and collective algorithms (collab_coll).
include(${CMAKE_CURRENT_LIST_DIR}/reduce.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/algorithms.cmake OPTIONAL)
