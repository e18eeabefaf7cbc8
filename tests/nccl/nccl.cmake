include_guard(GLOBAL)
# Tests of the NCCL face (docs/nccl.md), read by interpose/nccl/CMakeLists.txt
# once the face is configured.
set(_nccl_tdir ${CMAKE_CURRENT_LIST_DIR})
find_file(COLLAB_REAL_LIBNCCL libnccl.so.2
  HINTS ${CUDAToolkit_LIBRARY_DIR} ${COLLAB_NCCL_INCLUDE_DIR}/../lib64
        ${COLLAB_NCCL_INCLUDE_DIR}/../lib /usr/local/cuda/lib64 NO_DEFAULT_PATH)
add_test(NAME nccl_exports
  COMMAND bash ${_nccl_tdir}/check_exports.sh "${COLLAB_REAL_LIBNCCL}"
          $<TARGET_FILE:collab_nccl_preload> $<TARGET_FILE:collab_nccl_libnccl>)
set_tests_properties(nccl_exports PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77 LABELS nccl)
add_test(NAME nccl_install
  COMMAND bash ${_nccl_tdir}/check_install.sh ${CMAKE_BINARY_DIR} "${COLLAB_REAL_LIBNCCL}")
set_tests_properties(nccl_install PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77 LABELS nccl)

add_executable(nccl_face_test ${_nccl_tdir}/nccl_face_test.c $<TARGET_OBJECTS:collab_face_nccl>)
target_include_directories(nccl_face_test PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_include_directories(nccl_face_test SYSTEM PRIVATE
  ${COLLAB_NCCL_INCLUDE_DIR} ${COLLAB_CUDART_INCLUDE_DIR})
# The CUDA runtime's cudaMemcpyAsync as the face finds it (RTLD_NEXT).
add_library(nccl_cudart_fake SHARED ${_nccl_tdir}/cudart_fake.c)
target_include_directories(nccl_cudart_fake SYSTEM PRIVATE ${COLLAB_CUDART_INCLUDE_DIR})
target_link_libraries(nccl_face_test PRIVATE collab_core nccl_cudart_fake Threads::Threads
  ${CMAKE_DL_LIBS} m)
foreach(mode args mpi-first nccl-first)
  add_test(NAME nccl_face_${mode} COMMAND nccl_face_test ${mode})
  set_tests_properties(nccl_face_${mode} PROPERTIES TIMEOUT 60 LABELS nccl
    ENVIRONMENT "COLLAB_WORLD_SIZE=1;COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0;COLLAB_CUDA=0")
endforeach()
# The stream-ordered mode (docs/nccl.md §3).
add_test(NAME nccl_face_args_async COMMAND nccl_face_test args)
set_tests_properties(nccl_face_args_async PROPERTIES TIMEOUT 60 LABELS nccl
  ENVIRONMENT "COLLAB_WORLD_SIZE=1;COLLAB_LISTEN=/ip4/127.0.0.1/tcp/0;COLLAB_CUDA=0;COLLAB_NCCL_ASYNC=1")
if(TARGET collab-run OR EXISTS ${COLLAB_RUN})
  add_test(NAME nccl_face_coll
    COMMAND ${COLLAB_RUN} -n 4 --abi mpich --timeout 90 -- $<TARGET_FILE:nccl_face_test> coll)
  set_tests_properties(nccl_face_coll PROPERTIES TIMEOUT 120 PROCESSORS 4 LABELS "nccl;ours"
    ENVIRONMENT "COLLAB_CUDA=0"
    FAIL_REGULAR_EXPRESSION "FAIL:|failure\\(s\\)")
  add_test(NAME nccl_face_coll_async
    COMMAND ${COLLAB_RUN} -n 4 --abi mpich --timeout 90 -- $<TARGET_FILE:nccl_face_test> coll)
  set_tests_properties(nccl_face_coll_async PROPERTIES TIMEOUT 120 PROCESSORS 4 LABELS "nccl;ours"
    ENVIRONMENT "COLLAB_CUDA=0;COLLAB_NCCL_ASYNC=1"
    FAIL_REGULAR_EXPRESSION "FAIL:|failure\\(s\\)")
  foreach(mode follow follow-control standby)
    add_test(NAME nccl_face_${mode}
      COMMAND bash ${_nccl_tdir}/check_follow.sh ${COLLAB_RUN} $<TARGET_FILE:nccl_face_test> ${mode})
    set_tests_properties(nccl_face_${mode} PROPERTIES TIMEOUT 150 PROCESSORS 3
      LABELS "nccl;ours;elastic" ENVIRONMENT "COLLAB_CUDA=0")
  endforeach()
  add_test(NAME nccl_face_absent
    COMMAND ${COLLAB_RUN} -n 4 --abi mpich --timeout 90
      --chaos kill:2@line:2:ready -- $<TARGET_FILE:nccl_face_test> absent)
  set_tests_properties(nccl_face_absent PROPERTIES TIMEOUT 120 PROCESSORS 4
    LABELS "nccl;ours;elastic" ENVIRONMENT "COLLAB_CUDA=0;COLLAB_TIMEOUT=2"
    FAIL_REGULAR_EXPRESSION "FAIL:|failure\\(s\\)")
endif()
