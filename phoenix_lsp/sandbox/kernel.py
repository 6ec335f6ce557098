"""Whether the running kernel accepts seccomp filters for this machine, probed without installing one: the
part of ``seccomp.py`` that ``probe()`` needs, so that the InitializeResult's sandbox facts are known without
loading the filter's syscall tables and its BPF assembler (REQ-BASH-009, REQ-PROTO-050).
"""

from __future__ import annotations

import ctypes
import errno
import functools
import platform
import struct

#: the architectures the filter has syscall tables for (``seccomp._SYSCALLS``), with their AUDIT_ARCH value
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}


def seccomp_supported_arch() -> bool:
    """True when the filter has a syscall table for the running architecture (little-endian only)."""
    return platform.machine() in AUDIT_ARCH and struct.pack("=H", 1) == b"\x01\x00"


@functools.cache
def seccomp_available() -> bool:
    """True when the kernel accepts seccomp filters (probed without installing one)."""
    if platform.system() != "Linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        # PR_SET_SECCOMP(SECCOMP_MODE_FILTER, NULL): EFAULT (or EACCES) when filters are supported,
        # EINVAL when the kernel was built without them. Nothing is installed either way.
        rc = libc.prctl(22, 2, None, 0, 0)
    except (OSError, AttributeError):
        return False
    return rc != 0 and ctypes.get_errno() in (errno.EFAULT, errno.EACCES)
