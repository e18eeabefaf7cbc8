#!/usr/bin/env python3
"""Can this machine run the library? (gpu-check.sh stage `env`.)

Checks the system calls and facilities the library relies on, each in
isolation, and prints one line per check, `ok` or `FAIL` with the reason:
process_vm_readv/process_vm_writev on this process (the state registry),
SO_PEERCRED on a Unix socket pair (same-host verification), POSIX shared
memory in /dev/shm (same-host exchanges), and a loopback TCP listener.
Exit status: the number of failed checks.
"""
import ctypes
import ctypes.util
import mmap
import os
import socket
import struct
import sys


class IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def check_vm():
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    src = ctypes.create_string_buffer(b"mpicollab-vm-probe", 32)
    dst = ctypes.create_string_buffer(32)
    local = IOVec(ctypes.cast(dst, ctypes.c_void_p), 32)
    remote = IOVec(ctypes.cast(src, ctypes.c_void_p), 32)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    n = libc.process_vm_readv(os.getpid(), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    if n != 32 or dst.raw[:18] != b"mpicollab-vm-probe":
        e = ctypes.get_errno()
        return f"process_vm_readv: {os.strerror(e)} (the registry then uses its pipe fallback)"
    libc.process_vm_writev.restype = ctypes.c_ssize_t
    n = libc.process_vm_writev(os.getpid(), ctypes.byref(remote), 1, ctypes.byref(local), 1, 0)
    if n != 32:
        return f"process_vm_writev: {os.strerror(ctypes.get_errno())}"
    return None


def check_peercred():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        raw = a.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", raw)
        if pid != os.getpid() or uid != os.getuid():
            return f"SO_PEERCRED gave pid {pid} uid {uid}, expected {os.getpid()} {os.getuid()}"
    except OSError as e:
        return f"SO_PEERCRED: {e}"
    finally:
        a.close()
        b.close()
    return None


def check_shm():
    path = f"/dev/shm/mpicollab-probe-{os.getpid()}"
    try:
        fd = os.open(path, os.O_CREAT | os.O_RDWR | os.O_EXCL, 0o600)
        os.ftruncate(fd, 1 << 20)
        m = mmap.mmap(fd, 1 << 20)
        m[:5] = b"hello"
        ok = m[:5] == b"hello"
        m.close()
        os.close(fd)
        return None if ok else "shared memory reads back wrong bytes"
    except OSError as e:
        return f"shared memory in /dev/shm: {e}"
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass


def check_loopback():
    try:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        c = socket.create_connection(s.getsockname(), timeout=2)
        c.close()
        s.close()
    except OSError as e:
        return f"loopback TCP: {e}"
    return None


def main():
    fails = 0
    for name, fn in [("process_vm_readv/writev", check_vm), ("SO_PEERCRED", check_peercred),
                     ("shared memory", check_shm), ("loopback TCP", check_loopback)]:
        why = fn()
        print(f"probe {name}: {'ok' if why is None else 'FAIL: ' + why}")
        fails += why is not None
    return fails


if __name__ == "__main__":
    sys.exit(main())
