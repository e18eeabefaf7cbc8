# The engine: actor thread, transport, wire codec, membership, collectives
# glue, point-to-point and the collab_* API (include/mpi_collab.h).
set(_eng ${CMAKE_CURRENT_LIST_DIR})

# Classes that do not need the collective algorithms; the unit selftests
# link these alone (an OBJECT library's objects cannot be re-exported, so
# they are compiled a second time for collab_engine).
set(COLLAB_ENGINE_BASE
    ${_eng}/cl_wire.c
    ${_eng}/cl_member.c
    ${_eng}/cl_p2p.c
    ${_eng}/cl_handshake.c
    ${_eng}/cl_transport.c)

collab_area(collab_engine ${COLLAB_ENGINE_BASE})

add_library(collab_engine_base OBJECT ${COLLAB_ENGINE_BASE})
target_include_directories(collab_engine_base PUBLIC ${COLLAB_CORE_INCLUDES})
target_link_libraries(collab_engine_base PUBLIC ${COLLAB_CORE_DEPS})

foreach(t cl_wire_test cl_member_test cl_p2p_test cl_transport_test)
  collab_selftest(${t} ${_eng}/${t}.c collab_engine_base collab_util)
endforeach()

include(${PROJECT_SOURCE_DIR}/tests/fuzz/wire/fuzz.cmake OPTIONAL)
