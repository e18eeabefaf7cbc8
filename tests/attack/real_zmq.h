/*  real_zmq.h - libzmq's own zmq_send and zmq_msg_send, for the hostile
    peers that wrap them (tests/attack/attack.c, verify.c and
    bench/soak_hostile.c): the wrappers decode what the peer sends with the
    project's codec, add forgeries, and pass everything on through these.
*/
#ifndef REAL_ZMQ_H_INCLUDED
#define REAL_ZMQ_H_INCLUDED

#include <dlfcn.h>
#include <stddef.h>
#include <zmq.h>

static int real_zmq_send(void *s, const void *buf, size_t len, int flags)
{
    static int (*fn)(void *, const void *, size_t, int);
    if (fn == NULL)
        fn = (int (*)(void *, const void *, size_t, int))dlsym(RTLD_NEXT, "zmq_send");
    return fn(s, buf, len, flags);
}

static int real_zmq_msg_send(zmq_msg_t *m, void *s, int flags)
{
    static int (*fn)(zmq_msg_t *, void *, int);
    if (fn == NULL)
        fn = (int (*)(zmq_msg_t *, void *, int))dlsym(RTLD_NEXT, "zmq_msg_send");
    return fn(m, s, flags);
}

#endif
