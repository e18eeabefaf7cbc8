# Fuzz target of the transport's handshake: fuzz_handshake (libFuzzer,
# COLLAB_FUZZ=ON with clang) and the CTest fuzz_handshake_replay over
# corpus/.  The passphrase KDF runs stubbed (cl_secret.h).
include_guard(GLOBAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/fuzz_target.cmake)

set(_fh_eng ${PROJECT_SOURCE_DIR}/src/engine)
collab_fuzz_target(handshake
  HARNESS ${CMAKE_CURRENT_LIST_DIR}/fuzz_handshake.c
  CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus
  SOURCES ${_fh_eng}/cl_transport.c ${_fh_eng}/cl_transport_poll.c ${_fh_eng}/cl_transport_recv.c ${_fh_eng}/cl_transport_limits.c
          ${_fh_eng}/cl_transport_rate.c ${_fh_eng}/cl_transport_stripe.c ${_fh_eng}/cl_transport_connect.c ${_fh_eng}/cl_tcpinfo.c
          ${_fh_eng}/cl_stripe_probe.c
          ${_fh_eng}/cl_handshake.c
          ${_fh_eng}/cl_wire.c ${_fh_eng}/cl_shm.c ${_fh_eng}/cl_shm_link.c
          ${COLLAB_UTIL_DIR}/cl_secret.c ${COLLAB_UTIL_DIR}/cl_identity.c ${COLLAB_UTIL_DIR}/cl_xsign.c
          ${COLLAB_UTIL_DIR}/cl_addr.c ${COLLAB_UTIL_DIR}/cl_base58.c
          ${COLLAB_UTIL_DIR}/cl_text.c ${COLLAB_UTIL_DIR}/cl_log.c
  LIBS collab_engine_base collab_elastic collab_util)
