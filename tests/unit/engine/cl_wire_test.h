/*  cl_wire_test.h - what the two files of the wire codec's selftest
    (cl_wire_test.c, cl_wire_test_ext.c) share.
*/
#ifndef CL_WIRE_TEST_H
#define CL_WIRE_TEST_H

#include "engine/cl_wire.h"

#define SELFTEST_SHARED_COUNTER /* defined in cl_wire_test.c */
#include "selftest.h"

/* Encodes m fully; returns body (caller frees) and fills hdr bytes. */
uint8_t *encode(cl_wire_msg_t *m, uint8_t hdr[CL_WIRE_HDR_SIZE], size_t *blen);
/* Zeroes m and sets its header: the current version, type, the run of
   "default" and epoch 7. */
void base_hdr(cl_wire_msg_t *m, int type);
/* Every strict prefix and one-byte extension of the body must fail. */
void check_truncations(const uint8_t hdr[CL_WIRE_HDR_SIZE], const uint8_t *body, size_t blen);
/* Encodes in, decodes it back (checking every truncation of most types)
   and returns the decoded message (the caller clears it); the body goes
   to *body_keep (the caller frees it), its length to *blen_keep. */
cl_wire_msg_t roundtrip(cl_wire_msg_t *in, uint8_t **body_keep, size_t *blen_keep);

/* cl_wire_test_ext.c */
void test_p2p_modes(void);
void test_credit(void);
void test_bandwidth(void);
void test_monitors(void);
void test_relay(void);

#endif
