"""What every part of the launcher shares: the C library, the kernel's constants, and how a failed call is
reported (a stage and an errno, written as helper.c writes them)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
SYS_CLOSE_RANGE = 436
CLOSE_RANGE_CLOEXEC = 1 << 2
CAP_VERSION_3 = 0x20080522
WALL = 0x40000000
HANDLED = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class Fail(Exception):
    """A step before exec failed: reported as ``error <stage> <errno>``."""

    def __init__(self, stage: str, err: int) -> None:
        super().__init__(stage)
        self.stage, self.err = stage, err


def check(rc: int, stage: str) -> int:
    if rc < 0:
        raise Fail(stage, ctypes.get_errno())
    return rc


def status(text: str) -> None:
    """One status line on stderr (the server parses them: outcome.py)."""
    with contextlib.suppress(OSError):
        os.write(2, text.encode())
