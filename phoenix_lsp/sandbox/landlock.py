"""Landlock: the rights a restricted command is denied unless a rule grants them, and the kernel's ABI.

Landlock is driven through a small ctypes layer over its syscalls (ABI-aware: filesystem rights up to ABI 5,
TCP rules from ABI 4, scoping from ABI 6), so it needs no third-party binding. The rules themselves are built
in ``launch_options.py`` and applied by the helper (``helper.c``) or ``launcher/``.
"""

from __future__ import annotations

import ctypes
import functools
import platform

FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REMOVE_DIR = 1 << 4
FS_REMOVE_FILE = 1 << 5
FS_MAKE_CHAR = 1 << 6
FS_MAKE_DIR = 1 << 7
FS_MAKE_REG = 1 << 8
FS_MAKE_SOCK = 1 << 9
FS_MAKE_FIFO = 1 << 10
FS_MAKE_BLOCK = 1 << 11
FS_MAKE_SYM = 1 << 12
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1  # ABI 4
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1  # ABI 6

_SYS_LANDLOCK_CREATE_RULESET = 444  # the same number on every architecture
_LANDLOCK_CREATE_RULESET_VERSION = 1 << 0


def fs_rights(abi: int) -> int:
    """Every filesystem right the given Landlock ABI can restrict (all of them are handled, so denied
    unless a rule grants them)."""
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= FS_REFER
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


@functools.cache
def landlock_abi() -> int | None:
    """The Landlock ABI version of the running kernel, or None when Landlock is absent or disabled."""
    if platform.system() != "Linux":
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        abi = libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_LANDLOCK_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return None
    return int(abi) if abi > 0 else None
