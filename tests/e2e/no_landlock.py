"""Run a command on a kernel that looks as if it had no Landlock: ``python no_landlock.py CMD...``.

A seccomp filter makes the three Landlock syscalls fail with ENOSYS — exactly what a kernel older than 5.13
answers — and then execs CMD. The server under test really cannot use Landlock; nothing is mocked.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import sys

LANDLOCK_SYSCALLS = (444, 445, 446)  # create_ruleset, add_rule, restrict_self (same numbers on x86_64 and arm64)
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
LD_ABS_W, JEQ_K, RET_K = 0x20, 0x15, 0x06
RET_ALLOW, RET_ERRNO, ENOSYS = 0x7FFF0000, 0x00050000, 38


def _filter() -> bytes:
    arch = AUDIT_ARCH[platform.machine()]
    program = [
        (LD_ABS_W, 0, 0, 4),  # seccomp_data.arch
        (JEQ_K, 0, 5, arch),  # other architecture: allow
        (LD_ABS_W, 0, 0, 0),  # seccomp_data.nr
        (JEQ_K, 2, 0, LANDLOCK_SYSCALLS[0]),
        (JEQ_K, 1, 0, LANDLOCK_SYSCALLS[1]),
        (JEQ_K, 0, 1, LANDLOCK_SYSCALLS[2]),
        (RET_K, 0, 0, RET_ERRNO | ENOSYS),
        (RET_K, 0, 0, RET_ALLOW),
    ]
    return b"".join(struct.pack("HBBI", *ins) for ins in program)


def main(argv: list[str]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    code = _filter()
    buffer = ctypes.create_string_buffer(code)
    prog = struct.pack("HxxxxxxQ", len(code) // 8, ctypes.addressof(buffer))
    prog_buffer = ctypes.create_string_buffer(prog)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    if libc.prctl(22, 2, ctypes.addressof(prog_buffer), 0, 0) != 0:  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
        raise OSError(ctypes.get_errno(), "installing the seccomp filter failed")
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
