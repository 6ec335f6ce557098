"""The sandbox policy: which Landlock rights, which seccomp filter, which resource limits.

This module decides; the helper (``helper.c``, or ``launcher.py`` when no C compiler is available) only
applies what it is given on its command line. Keeping every security decision here means one place to
review and one place the escape suite exercises, whichever launcher runs it.

Landlock is driven through a small ctypes layer over its three syscalls (ABI-aware: filesystem rights up to
ABI 5, TCP rules from ABI 4, scoping from ABI 6), and the seccomp filter is a classic-BPF program generated
here, so neither needs a third-party binding nor the libseccomp headers.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import platform
import resource
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from phoenix_lsp.sandbox import denylist

# --------------------------------------------------------------------------------------------- Landlock

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


#: what a probe process does to find out whether a command can get a private /tmp (helper.c's private_tmp())
_PRIVATE_TMP_PROBE = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x00020000) != 0:
    uid, gid = os.geteuid(), os.getegid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:
        sys.exit("unshare: " + os.strerror(ctypes.get_errno()))
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
if libc.mount(None, b"/", None, 16384 | (1 << 18), None) != 0:
    sys.exit("mount --make-rprivate /: " + os.strerror(ctypes.get_errno()))
if libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 6, b"mode=1777,size=1m") != 0:
    sys.exit("mount tmpfs /tmp: " + os.strerror(ctypes.get_errno()))
"""


@functools.cache
def private_tmp() -> str | None:
    """None when a restricted command can get a private /tmp here (a mount namespace of its own, or a user
    namespace then a mount namespace), else why not. Tried once per process, in a throw-away process."""
    if platform.system() != "Linux":
        return f"mount namespaces are a Linux feature and this is {platform.system()}"
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _PRIVATE_TMP_PROBE], capture_output=True,
                              text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the probe could not run ({exc})"
    if done.returncode == 0:
        return None
    why = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1][:200]
    return f"this system does not let the server make a mount namespace ({why})"


def private_tmp_keep(scratch: Path, cwd: Path) -> list[str]:
    """The directories a private /tmp shows (helper -T): the scratch directory, and the top folder under /tmp
    of a working directory that lies there (so that the workspace keeps its path; its other files and
    FIFOs stay in sight then, which is the price of a workspace in /tmp)."""
    keep = [str(scratch)]
    try:
        resolved = cwd.resolve()
    except OSError:
        return keep
    parts = resolved.parts
    if len(parts) >= 2 and parts[:2] == ("/", "tmp"):
        keep.append(str(Path(*parts[:3])))
    return keep


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


# ---------------------------------------------------------------------------------------------- seccomp

_AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# Syscall numbers per architecture (x86_64: arch/x86/entry/syscalls/syscall_64.tbl; aarch64: the generic
# table, include/uapi/asm-generic/unistd.h). Numbers from 424 on are shared by every architecture.
_COMMON_NEW = {
    "pidfd_send_signal": 424, "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "pidfd_getfd": 438, "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443,
    "fchmodat2": 452, "memfd_secret": 447, "setxattrat": 463, "removexattrat": 466, "open_tree_attr": 467,
    "file_setattr": 469,
}
_SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "ioctl": 16, "shmget": 29, "shmat": 30, "shmctl": 31, "socket": 41, "connect": 42, "accept": 43,
        "bind": 49, "listen": 50, "socketpair": 53, "clone": 56, "semget": 64, "semop": 65, "semctl": 66,
        "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71, "chmod": 90, "fchmod": 91, "chown": 92,
        "fchown": 93, "lchown": 94, "ptrace": 101, "utime": 132, "vhangup": 153, "pivot_root": 155,
        "adjtimex": 159, "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166,
        "swapon": 167, "swapoff": 168, "reboot": 169, "sethostname": 170, "setdomainname": 171,
        "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176, "quotactl": 179,
        "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
        "fremovexattr": 199, "lookup_dcookie": 212, "semtimedop": 220, "clock_settime": 227, "utimes": 235,
        "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
        "mq_getsetattr": 245, "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250,
        "migrate_pages": 256, "fchownat": 260, "futimesat": 261, "fchmodat": 268, "unshare": 272,
        "move_pages": 279, "utimensat": 280, "accept4": 288, "perf_event_open": 298, "fanotify_init": 300,
        "prlimit64": 302, "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305,
        "setns": 308, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
        "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "fcntl": 72, "setpriority": 141,
        "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203, "io_setup": 206,
        "ioprio_set": 251, "inotify_init": 253, "fallocate": 285, "inotify_init1": 294, "sched_setattr": 314,
        "memfd_create": 319, **_COMMON_NEW,
    },
    "aarch64": {
        "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
        "fremovexattr": 16, "lookup_dcookie": 18, "ioctl": 29, "umount2": 39, "mount": 40,
        "pivot_root": 41, "chroot": 51, "fchmod": 52, "fchmodat": 53, "fchownat": 54, "fchown": 55,
        "vhangup": 58, "quotactl": 60, "utimensat": 88, "acct": 89, "unshare": 97, "kexec_load": 104,
        "init_module": 105, "delete_module": 106, "clock_settime": 112, "ptrace": 117, "reboot": 142,
        "sethostname": 161, "setdomainname": 162, "settimeofday": 170, "adjtimex": 171, "mq_open": 180,
        "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
        "mq_getsetattr": 185, "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190,
        "semctl": 191, "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196,
        "socket": 198, "socketpair": 199, "bind": 200, "listen": 201, "accept": 202, "connect": 203,
        "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220, "swapon": 224, "swapoff": 225,
        "migrate_pages": 238, "move_pages": 239, "perf_event_open": 241, "accept4": 242,
        "prlimit64": 261, "fanotify_init": 262, "name_to_handle_at": 264, "open_by_handle_at": 265,
        "clock_adjtime": 266, "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
        "kcmp": 272, "finit_module": 273, "bpf": 280, "userfaultfd": 282, "kexec_file_load": 294,
        "io_setup": 0, "inotify_init1": 26, "fcntl": 25, "ioprio_set": 30, "fallocate": 47,
        "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122, "setpriority": 140,
        "sched_setattr": 274, "memfd_create": 279, **_COMMON_NEW,
    },
}

#: Refused with EPERM, grouped by why. Names absent on an architecture are skipped.
DENIED_SYSCALLS: dict[str, tuple[str, ...]] = {
    # socket() is limited to AF_UNIX below; these stop the rest: no connect (pathname sockets such as
    # docker.sock or the D-Bus bus, which Landlock only covers from ABI 9), no server sockets.
    "network": ("connect", "bind", "listen", "accept", "accept4"),
    "other processes": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
                        "process_madvise", "migrate_pages", "move_pages"),
    "io_uring (bypasses the syscall filter)": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    "mounts and namespaces": ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree",
                              "open_tree_attr", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick",
                              "mount_setattr"),
    "kernel and machine state": ("init_module", "finit_module", "delete_module", "kexec_load",
                                 "kexec_file_load", "bpf", "perf_event_open", "userfaultfd", "reboot",
                                 "swapon", "swapoff", "acct", "settimeofday", "clock_settime",
                                 "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "iopl",
                                 "ioperm", "quotactl", "quotactl_fd", "vhangup", "lookup_dcookie",
                                 "name_to_handle_at", "open_by_handle_at", "keyctl", "add_key",
                                 "request_key", "fanotify_init"),
    # Landlock does not cover metadata: chmod/chown/utime/xattr on files outside the writable set work
    # under Landlock alone (measured), and as root the owner of most files is the sandboxed uid itself.
    "file metadata": ("chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
                      "utime", "utimes", "utimensat", "futimesat", "setxattr", "lsetxattr", "fsetxattr",
                      "removexattr", "lremovexattr", "fremovexattr", "setxattrat", "removexattrat",
                      # inode flags and attributes (chattr +dAS, FS_XFLAG_*): the owner may set them on a
                      # file opened read-only, so Landlock's write rights do not cover them (issue 12).
                      "file_setattr"),
    # secret memory is locked and outside every limit the launcher can count.
    "unaccounted memory": ("memfd_secret",),
    # System V and POSIX message IPC live outside the filesystem, so Landlock cannot see writes to them.
    "ipc": ("shmget", "shmat", "shmctl", "semget", "semop", "semtimedop", "semctl", "msgget", "msgsnd",
            "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify",
            "mq_getsetattr"),
}

AF_UNIX = 1
SOCK_STREAM = 1
SOCK_SEQPACKET = 5
TIOCSTI = 0x5412
TIOCLINUX = 0x541C
#: ioctls that change inode metadata of a file opened read-only (only ownership is checked, not write
#: access): chattr flags (+d nodump, +A noatime, +S sync, ...), the inode generation, the fsxattr flags.
FS_IOC_SETFLAGS = 0x40086602
FS_IOC32_SETFLAGS = 0x40046602
FS_IOC_SETVERSION = 0x40087602
FS_IOC32_SETVERSION = 0x40047602
FS_IOC_FSSETXATTR = 0x401C5820
METADATA_IOCTLS = (FS_IOC_SETFLAGS, FS_IOC32_SETFLAGS, FS_IOC_SETVERSION, FS_IOC32_SETVERSION, FS_IOC_FSSETXATTR)
F_SETLEASE = 1024
PRIO_PROCESS = 0
IOPRIO_WHO_PROCESS = 1
#: Scheduling calls whose first argument is a pid: allowed only with pid 0 (the caller itself).
SELF_ONLY_BY_PID = ("sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr")
#: Refused with ENOSYS rather than EPERM, so libraries take the path they take on kernels without them
#: (polling instead of inotify, synchronous I/O instead of Linux AIO): per-user system-wide limits
#: (fs.inotify.max_user_instances, fs.aio-max-nr) that one command could exhaust for the whole machine.
SHARED_LIMIT_SYSCALLS = ("io_setup", "inotify_init", "inotify_init1")
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (NEWTIME collides with the
# exit-signal byte of clone() and is covered by refusing unshare/setns).
CLONE_NAMESPACE_FLAGS = 0x7E020000

_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
_LD_ABS_W = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06
_JA = 0x05
_X32_SYSCALL_BIT = 0x40000000


def _arg_lo(index: int) -> int:
    """Offset of the low 32 bits of syscall argument `index` in struct seccomp_data (little-endian)."""
    return 16 + 8 * index


def _arg_hi(index: int) -> int:
    return 16 + 8 * index + 4


class _Asm:
    """A tiny classic-BPF assembler with forward labels (jump offsets are resolved at the end)."""

    def __init__(self) -> None:
        self.ins: list[tuple[int, int | str, int | str, int | str]] = []
        self.labels: dict[str, int] = {}
        self._fresh = 0

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.ins.append((code, jt, jf, k))

    def jump(self, target: str) -> None:
        """An unconditional jump (BPF_JA): its 32-bit offset reaches any later instruction."""
        self.ins.append((_JA, 0, 0, target))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ins)

    def fresh(self, stem: str) -> str:
        self._fresh += 1
        return f"{stem}.{self._fresh}"

    def assemble(self) -> bytes:
        out = bytearray()
        for i, (code, jt, jf, k) in enumerate(self.ins):
            offs = []
            for target in (jt, jf):
                if isinstance(target, str):
                    off = self.labels[target] - (i + 1)
                    if not 0 <= off <= 255:
                        raise ValueError(f"BPF jump to {target} out of range ({off})")
                    offs.append(off)
                else:
                    offs.append(target)
            value = self.labels[k] - (i + 1) if isinstance(k, str) else k
            out += struct.pack("=HBBI", code, offs[0], offs[1], value & 0xFFFFFFFF)
        return bytes(out)

    def search(self, actions: list[tuple[int, int]], leaf: int = 8) -> None:
        """Return the action of the syscall number in the accumulator: a binary search over `actions`
        ((number, return value), sorted by number), allowing every number it does not list. Each path is
        a few comparisons long, so the kernel builds its per-syscall action cache quickly (it runs the
        filter once per syscall number when the filter is installed, on every command). The return
        instructions follow the search, in reach of every comparison."""
        returns = {value: self.fresh("ret") for value in sorted({value for _, value in actions})}

        def node(part: list[tuple[int, int]]) -> None:
            if len(part) <= leaf:
                for number, value in part:
                    self.op(_JEQ_K, number, returns[value], 0)
                self.op(_RET_K, _RET_ALLOW)
                return
            middle = len(part) // 2
            upper = self.fresh("upper")
            self.op(_JGE_K, part[middle][0], upper, 0)
            node(part[:middle])
            self.label(upper)
            node(part[middle:])

        node(actions)
        for value, name in returns.items():
            self.label(name)
            self.op(_RET_K, value)


def seccomp_supported_arch() -> bool:
    """True when this module has a seccomp syscall table for the running architecture."""
    return platform.machine() in _SYSCALLS and struct.pack("=H", 1) == b"\x01\x00"


@functools.cache
def seccomp_program(machine: str | None = None, deny_memfd: bool = False) -> bytes:
    """The restricted-mode seccomp filter for `machine` (default: this one), as raw sock_filter bytes.

    Default allow, because Landlock is the primary boundary and a deny-list here closes exactly the
    measured gaps: non-AF_UNIX sockets (UDP, TCP over IPv4/IPv6, netlink, raw, packet), AF_UNIX datagram
    sockets (they can send to pathname sockets such as /dev/log without connect()), connect(), ptrace and
    friends, io_uring, TIOCSTI/TIOCLINUX and the inode-flag ioctls, F_SETLEASE, scheduling changes of
    other processes, Linux AIO and inotify (shared per-user limits), fallocate modes that escape
    RLIMIT_FSIZE, namespace creation, and the syscalls in DENIED_SYSCALLS. With `deny_memfd` (no memory
    cgroup counts shared memory for this command) memfd_create is refused too.
    Other architectures' syscalls (i386 via int 0x80, x32) are refused outright.
    """
    machine = machine or platform.machine()
    table = _SYSCALLS[machine]
    eperm = _RET_ERRNO | errno.EPERM
    enosys = _RET_ERRNO | errno.ENOSYS
    a = _Asm()
    a.op(_LD_ABS_W, 4)  # arch
    a.op(_JEQ_K, _AUDIT_ARCH[machine], 1, 0)
    a.op(_RET_K, _RET_KILL_PROCESS)
    a.op(_LD_ABS_W, 0)  # syscall number
    if machine == "x86_64":
        a.op(_JGE_K, _X32_SYSCALL_BIT, 0, 1)
        a.op(_RET_K, eperm)
    # The syscalls whose arguments decide, first (they are frequent: their checks below are short)...
    a.op(_JEQ_K, table["socket"], "socket", 0)
    a.op(_JEQ_K, table["socketpair"], "socket", 0)
    a.op(_JEQ_K, table["ioctl"], "ioctl", 0)
    a.op(_JEQ_K, table["fcntl"], "fcntl", 0)
    a.op(_JEQ_K, table["clone"], "clone", 0)
    a.op(_JEQ_K, table["prlimit64"], "prlimit", 0)
    a.op(_JEQ_K, table["setpriority"], "setpriority", 0)
    a.op(_JEQ_K, table["ioprio_set"], "ioprio", 0)
    a.op(_JEQ_K, table["fallocate"], "fallocate", 0)
    for name in SELF_ONLY_BY_PID:
        a.op(_JEQ_K, table[name], "self_pid", 0)
    # ... then the ones refused whatever their arguments, searched by number after those checks.
    refused = {table[name]: eperm for names in DENIED_SYSCALLS.values() for name in names if name in table}
    refused[table["clone3"]] = enosys  # its flags live in memory; libc then falls back to clone
    for name in SHARED_LIMIT_SYSCALLS:
        if name in table:
            refused[table[name]] = enosys
    if deny_memfd:
        refused[table["memfd_create"]] = eperm
    a.jump("refused")
    # Classic BPF only jumps forward: the argument checks and their shared returns follow.
    # socket(domain, type, ...) and socketpair(): AF_UNIX stream or seqpacket only. Only the low 32 bits
    # are compared because the kernel truncates these int arguments the same way.
    a.label("socket")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JEQ_K, AF_UNIX, 0, "deny")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_AND_K, 0xF)  # SOCK_TYPE_MASK: strips SOCK_CLOEXEC / SOCK_NONBLOCK
    a.op(_JEQ_K, SOCK_STREAM, "allow", 0)
    a.op(_JEQ_K, SOCK_SEQPACKET, "allow", "deny")
    # ioctl(fd, cmd): cmd is an unsigned int in the kernel, so compare the low word only (a high word
    # set by the caller must not slip past the check).
    a.label("ioctl")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_JEQ_K, TIOCSTI, "deny", 0)
    for cmd in METADATA_IOCTLS:
        a.op(_JEQ_K, cmd, "deny", 0)
    a.op(_JEQ_K, TIOCLINUX, "deny", "allow")
    # fcntl(fd, F_SETLEASE, ...): a lease makes every other opener of the file wait for the holder.
    a.label("fcntl")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_JEQ_K, F_SETLEASE, "deny", "allow")
    a.label("clone")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JSET_K, CLONE_NAMESPACE_FLAGS, "deny", "allow")
    # prlimit64(pid, ...): only on itself (pid 0); changing another process's limits is a write to it.
    a.label("prlimit")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JEQ_K, 0, 0, "deny")
    a.op(_LD_ABS_W, _arg_hi(0))
    a.op(_JEQ_K, 0, "allow", "deny")
    # setpriority(which, who, prio): only PRIO_PROCESS with who 0 (the caller). PRIO_PGRP/PRIO_USER or a
    # pid would renice the user's other programs, or the launcher that must stop this tree.
    a.label("setpriority")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JEQ_K, PRIO_PROCESS, 0, "deny")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_JEQ_K, 0, "allow", "deny")
    # ioprio_set(which, who, ioprio): only IOPRIO_WHO_PROCESS with who 0.
    a.label("ioprio")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JEQ_K, IOPRIO_WHO_PROCESS, 0, "deny")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_JEQ_K, 0, "allow", "deny")
    # sched_set*(pid, ...): pid 0 only (pid_t: the kernel reads the low 32 bits).
    a.label("self_pid")
    a.op(_LD_ABS_W, _arg_lo(0))
    a.op(_JEQ_K, 0, "allow", "deny")
    # fallocate(fd, mode, ...): mode 0 only. Every other mode either keeps the size (so RLIMIT_FSIZE is
    # never checked: FALLOC_FL_KEEP_SIZE, PUNCH_HOLE) or shifts data without that check (INSERT_RANGE).
    # EOPNOTSUPP makes glibc's posix_fallocate fall back to writing, which the limits do see.
    a.label("fallocate")
    a.op(_LD_ABS_W, _arg_lo(1))
    a.op(_JEQ_K, 0, "allow", "eopnotsupp")
    a.label("allow")
    a.op(_RET_K, _RET_ALLOW)
    a.label("deny")
    a.op(_RET_K, eperm)
    a.label("enosys")
    a.op(_RET_K, _RET_ERRNO | errno.ENOSYS)
    a.label("eopnotsupp")
    a.op(_RET_K, _RET_ERRNO | errno.EOPNOTSUPP)
    a.label("refused")
    a.search(sorted(refused.items()))
    return a.assemble()


@functools.cache
def memfd_fallback_program(machine: str | None = None) -> bytes:
    """A second, stacked filter that refuses memfd_create: the launcher installs it when the memory
    cgroup it was asked to make could not be made for this command, so shared memory that RLIMIT_AS does
    not count cannot be created either (the same fallback rule as the pids cgroup's watchdog)."""
    machine = machine or platform.machine()
    table = _SYSCALLS[machine]
    a = _Asm()
    a.op(_LD_ABS_W, 4)
    a.op(_JEQ_K, _AUDIT_ARCH[machine], 1, 0)
    a.op(_RET_K, _RET_KILL_PROCESS)
    a.op(_LD_ABS_W, 0)
    a.op(_JEQ_K, table["memfd_create"], 0, 1)
    a.op(_RET_K, _RET_ERRNO | errno.EPERM)
    a.op(_RET_K, _RET_ALLOW)
    return a.assemble()


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


# ---------------------------------------------------------------------------------------------- rlimits


@dataclass(frozen=True)
class Limits:
    """Resource limits of a restricted command (per process, except `max_processes`). None = unlimited.

    Defaults leave room for real builds and test runs while stopping memory hogs, CPU burners that
    outlive the timeout, runaway files in the scratch directory and fork bombs.
    """

    address_space: int | None = 8 << 30  # bytes of virtual memory per process
    cpu_seconds: int | None = 1800  # CPU time per process
    max_processes: int | None = 1024  # live tasks (processes and threads) in the command's tree
    file_size: int | None = 1 << 30  # bytes per written file
    open_files: int | None = 1024  # descriptors per process
    memory: int | None = 4 << 30  # bytes for the whole tree, shared memory included (memory cgroup)
    disk: int | None = 1 << 30  # bytes in the scratch directory plus a background job's output file


_task_count_cache: tuple[float, int, int] = (0.0, -1, 0)


def _user_task_count(uid: int) -> int:
    """Tasks (threads included) currently owned by `uid`: RLIMIT_NPROC counts them all, per user, so the
    limit handed to the command is this count plus the allowance. Cached for two seconds."""
    global _task_count_cache
    now = time.monotonic()
    stamp, cached_uid, count = _task_count_cache
    if cached_uid == uid and now - stamp < 2.0:
        return count
    count = 0
    with os.scandir("/proc") as it:
        for entry in it:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                count += int(fields[17])  # num_threads
            except (OSError, IndexError, ValueError):
                continue
    _task_count_cache = (now, uid, count)
    return count


CGROUP_PREFIX = "phoenix-"


def _own_cgroup(controller: str) -> Path | None:
    """The directory of this process's cgroup in a hierarchy that has `controller` (cgroup v1 with that
    controller, or v2 where the probe then checks the controller is enabled for children), or None."""
    try:
        memberships = Path("/proc/self/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    v1_path = v2_path = None
    for line in memberships:
        _num, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            v1_path = path
        elif controllers == "":
            v2_path = path
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        root, point, fstype, options = fields[3], fields[4], rfields[0], rfields[2]
        member = v1_path if fstype == "cgroup" and controller in options.split(",") else \
            v2_path if fstype == "cgroup2" and v1_path is None else None
        if member is None:
            continue
        # /proc/self/cgroup names the cgroup from the hierarchy's root; the mount shows `root` of it.
        rel = os.path.relpath(member, root) if member.startswith(root) else None
        if rel is None or rel.startswith(".."):
            continue
        candidate = Path(point) / rel
        if candidate.is_dir():
            return candidate.resolve()
    return None


def _own_pids_cgroup() -> Path | None:
    return _own_cgroup("pids")


def _remove_stale_cgroups(parent: Path) -> None:
    """Empty `phoenix-<pid>` cgroups left by a launcher that was killed (rmdir refuses a non-empty one)."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return
    for entry in entries:
        pid = entry.name.removeprefix(CGROUP_PREFIX)
        if entry.name.startswith(CGROUP_PREFIX) and pid.isdigit() and not Path(f"/proc/{pid}").exists():
            with contextlib.suppress(OSError):
                entry.rmdir()


_pids_cgroup_lock = threading.Lock()


def pids_cgroup_parent() -> Path | None:
    """Where the launcher may create one pids cgroup per command, or None when it cannot.

    A pids cgroup makes the process limit a kernel rule (fork fails with EAGAIN at `pids.max`), also for
    root, whom RLIMIT_NPROC does not bind. Probed once per process (about 20 ms: the server does it in its
    warm-up thread): create a child cgroup, set pids.max, move a short shell into it; any failure means
    the watchdog alone guards the limit.
    """
    with _pids_cgroup_lock:  # one probe, even when the warm-up thread and a command ask at once
        return _probe_pids_cgroup()


def memory_cgroup_parent() -> Path | None:
    """Where the launcher may create one memory cgroup per command, or None when it cannot.

    A memory cgroup counts what RLIMIT_AS does not: shared memory (memfd, tmpfs pages) and the whole tree
    together. Probed once per process like the pids cgroup; without one, memfd_create is refused instead.
    """
    with _pids_cgroup_lock:
        return _probe_memory_cgroup()


def _probe_cgroup(parent: Path | None, limit_file: str, value: str, counter: str) -> Path | None:
    if parent is None or not os.access(parent, os.W_OK):
        return None
    _remove_stale_cgroups(parent)
    probe = parent / f"{CGROUP_PREFIX}{os.getpid()}-probe"
    try:
        probe.mkdir(mode=0o700)
    except OSError:
        return None
    try:
        (probe / limit_file).write_text(value)
        result = subprocess.run(["/bin/sh", "-c", f'echo 0 > "$1/cgroup.procs" && cat "$1/{counter}"', "sh",
                                 str(probe)], capture_output=True, timeout=10, check=False)
        works = result.returncode == 0 and result.stdout.strip() not in (b"", b"0")
    except (OSError, subprocess.SubprocessError):
        works = False
    for _ in range(100):
        try:
            probe.rmdir()
            break
        except OSError:
            time.sleep(0.005)
    return parent if works else None


@functools.cache
def _probe_pids_cgroup() -> Path | None:
    return _probe_cgroup(_own_pids_cgroup(), "pids.max", "8", "pids.current")


def _memory_files(parent: Path) -> tuple[str, str]:
    """(limit file, usage file) of the memory controller: cgroup v1 or v2 names."""
    if (parent / "memory.limit_in_bytes").exists() or (parent / "memory.usage_in_bytes").exists():
        return "memory.limit_in_bytes", "memory.usage_in_bytes"
    return "memory.max", "memory.current"


@functools.cache
def _probe_memory_cgroup() -> Path | None:
    parent = _own_cgroup("memory")
    if parent is None:
        return None
    if (parent / "cgroup.controllers").exists():  # v2: the memory controller must be on for children
        try:
            if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
                return None
        except OSError:
            return None
    limit_file, usage_file = _memory_files(parent)
    return _probe_cgroup(parent, limit_file, str(64 << 20), usage_file)


def command_cgroups(launcher_pid: int) -> list[Path]:
    """The cgroups a launcher with this pid made for its command (pids, memory; one dir on cgroup v2)."""
    out: list[Path] = []
    for parent in (pids_cgroup_parent(), memory_cgroup_parent()):
        if parent is not None:
            path = parent / f"{CGROUP_PREFIX}{launcher_pid}"
            if path not in out:
                out.append(path)
    return out


def kill_command_cgroups(launcher_pid: int) -> int:
    """SIGKILL every process left in the command cgroups of launcher `launcher_pid`, then remove them.

    The server's backstop when the launcher itself was starved or killed: its tree must not outlive it.
    Returns how many processes could not be killed (0: the whole tree is gone)."""
    left = 0
    for path in command_cgroups(launcher_pid):
        procs = path / "cgroup.procs"
        for _ in range(200):
            try:
                pids = [int(p) for p in procs.read_text().split()]
            except (OSError, ValueError):
                break
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.001)
        with contextlib.suppress(OSError):
            left += len(procs.read_text().split())
        for _ in range(200):
            try:
                path.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.001)
    return left


def rlimit_args(limits: Limits) -> list[str]:
    """`-r resource:soft:hard` arguments for the helper. Soft = hard (except CPU, see below) so the command
    cannot raise them."""
    pairs: list[tuple[int, int | None]] = [
        (resource.RLIMIT_AS, limits.address_space),
        (resource.RLIMIT_CPU, limits.cpu_seconds),
        (resource.RLIMIT_FSIZE, limits.file_size),
        (resource.RLIMIT_NOFILE, limits.open_files),
    ]
    uid = os.getuid()
    if limits.max_processes is not None and uid != 0:
        # The kernel exempts uid 0 from RLIMIT_NPROC; for root a pids cgroup (when one can be made) or else
        # the helper's process-count watchdog is the fork-bomb stop (both also apply to everyone else).
        pairs.append((resource.RLIMIT_NPROC, _user_task_count(uid) + limits.max_processes))
    args: list[str] = []
    for res, value in pairs:
        if value is None:
            continue
        _soft, hard = resource.getrlimit(res)
        # Never above the current hard limit (an unprivileged process cannot raise it).
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        new_hard = new
        if res == resource.RLIMIT_CPU:
            # Soft limit -> SIGXCPU (a clear "CPU time limit" report); the hard limit 2 s later -> SIGKILL
            # for a program that ignores SIGXCPU.
            new_hard = new + 2 if hard == resource.RLIM_INFINITY else min(new + 2, hard)
        args += ["-r", f"{res}:{new}:{new_hard}"]
    return args


# ----------------------------------------------------------------------------------------- full policy


_rules_cache: dict[tuple[Path, ...], tuple[float, denylist.ReadRules]] = {}


def cached_read_rules(denied: tuple[Path, ...]) -> denylist.ReadRules:
    """read_rules(denied), reused for two seconds (it lists a few directories: ~0.5 ms). A stale answer
    fails closed: an entry created since is not granted, one removed since is skipped by the launcher."""
    now = time.monotonic()
    hit = _rules_cache.get(denied)
    if hit is not None and now - hit[0] < 2.0:
        return hit[1]
    rules = denylist.read_rules(denied)
    _rules_cache.clear()
    _rules_cache[denied] = (now, rules)
    return rules


def restricted_args(abi: int, scratch: Path, limits: Limits, with_seccomp: bool,
                    deny_read: Sequence[Path] | None = None, keep: Sequence[str] = ()) -> list[str]:
    """The helper options that make one command restricted: read/execute everywhere except the deny-read
    list and /dev (devices only from the allow-list), write only to /dev/null and `scratch`, no TCP,
    scoped signals and abstract sockets, seccomp, no_new_privs, no capabilities, rlimits, the pids and
    memory cgroups (or their fallbacks) and the scratch disk quota. With `keep` (private_tmp_keep), a private
    /tmp showing only those directories (REQ-BASH-027)."""
    handled_fs = fs_rights(abi)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    read_only = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    dev_read = FS_READ_FILE
    dev_rw = FS_READ_FILE | FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0)
    denied = tuple(deny_read) if deny_read is not None else denylist.current_deny_read()
    rules = cached_read_rules(denied)
    args = ["-n", "-k", "-l", f"{handled_fs:x}:{handled_net:x}:{scoped:x}"]
    for path in rules.granted:  # -P: optional, never through a symlink, rights fitted to file or directory
        args += ["-P", f"{read_only:x}:{path}"]
    for path, mode in rules.devices:
        args += ["-p", f"{dev_rw if mode == 'rw' else dev_read:x}:{path}"]
    args += ["-p", f"{handled_fs:x}:{scratch}"]
    for path in keep:
        args += ["-T", path]
        # Landlock does not look at a hidden mount point: a directory bound into the private /tmp no longer
        # inherits the read grant of the real /tmp above it, so it gets one of its own, unless the deny-read
        # list reaches into it (its grants then lie beneath it already, on the siblings of what is denied).
        kept = Path(path)
        if kept != scratch and not any(d == kept or kept in d.parents or d in kept.parents for d in denied):
            args += ["-P", f"{read_only:x}:{path}"]
    args += rlimit_args(limits)
    if limits.max_processes is not None:
        args += ["-m", str(limits.max_processes)]
        cgroup = pids_cgroup_parent()
        if cgroup is not None:
            args += ["-g", str(cgroup)]
    deny_memfd = False
    if limits.memory is not None:
        memory = memory_cgroup_parent()
        if memory is not None:
            args += ["-G", str(memory), "-u", str(limits.memory)]
            if with_seccomp:
                args += ["-F", memfd_fallback_program().hex()]
        else:
            deny_memfd = True
    if limits.disk is not None:
        args += ["-Q", f"{limits.disk}:{scratch}"]
    if with_seccomp:
        args += ["-f", seccomp_program(None, deny_memfd).hex()]
    return args


def missing_protections(abi: int | None, seccomp: bool) -> tuple[str, ...]:
    """Human-readable list of the protections this kernel cannot give (REQ-BASH-009)."""
    if abi is None:
        return ("the whole kernel sandbox: Landlock is not available (Linux >= 5.13 with Landlock enabled "
                "in the LSM list is required)",)
    missing: list[str] = []
    if abi < 2:
        missing.append("rename/link across directories is refused entirely (Landlock ABI 1 < 2)")
    if abi < 3:
        missing.append("no truncation control: existing files can be truncated (Landlock ABI "
                       f"{abi} < 3, Linux 6.2)")
    if abi < 4 and not seccomp:
        missing.append(f"no TCP rules: Landlock ABI {abi} < 4 (Linux 6.7) and no seccomp")
    if abi < 5:
        missing.append(f"no device ioctl control (Landlock ABI {abi} < 5, Linux 6.10)")
    if abi < 6:
        missing.append(f"no signal scoping: signals to processes outside the sandbox are possible "
                       f"(Landlock ABI {abi} < 6, Linux 6.12)")
        if not seccomp:
            missing.append(f"no abstract Unix socket scoping (Landlock ABI {abi} < 6) and no seccomp")
    if not seccomp:
        missing.append("no seccomp filter: UDP, IPv6, netlink, raw sockets, connect() to Unix sockets, "
                       "ptrace, io_uring and TIOCSTI are not blocked")
    return tuple(missing)


def active_protections(abi: int | None, seccomp: bool, limits: Limits | None = None) -> list[str]:
    """Human-readable list of what a restricted command gets on this kernel (for `doctor`)."""
    if abi is None:
        return []
    limits = limits or Limits()
    active = [f"Landlock filesystem (ABI {abi}): read and execute everywhere except the deny-read list and "
              "/dev (see below), write only /dev/null and a private scratch directory (disk quota "
              f"{limits.disk} bytes with a background job's log)" + (", truncation covered" if abi >= 3 else "")
              + (", device ioctls covered" if abi >= 5 else "")]
    if abi >= 4:
        active.append("Landlock network: no TCP bind or connect")
    if abi >= 6:
        active.append("Landlock scoping: no abstract Unix sockets or signals outside the sandbox")
    if seccomp:
        active.append("seccomp: sockets only AF_UNIX stream, no connect/bind, no ptrace/process_vm, no "
                      "io_uring, no TIOCSTI/TIOCLINUX, no namespaces/mounts, no chmod/chown/utime/xattr, "
                      "no inode flags (FS_IOC_SETFLAGS/SETVERSION/FSSETXATTR, file_setattr), no SysV/POSIX "
                      "message IPC, no F_SETLEASE, setpriority/sched_set*/ioprio_set only on the caller, "
                      "no Linux AIO or inotify (shared per-user limits), fallocate only in mode 0")
    active.append("no_new_privs, all capabilities dropped, new session without a controlling terminal, "
                  "descriptors above 2 closed")
    parts = []
    for name, value in (("address space", limits.address_space), ("CPU s", limits.cpu_seconds),
                        ("processes", limits.max_processes), ("file size", limits.file_size),
                        ("open files", limits.open_files)):
        if value is not None:
            parts.append(f"{name} {value}")
    active.append("rlimits: " + ", ".join(parts))
    return active


def process_limit_protection() -> str:
    """How the task limit is kept on this machine (for `doctor`; it probes the cgroups, so not at start-up)."""
    cgroup = pids_cgroup_parent()
    if cgroup is not None:
        return f"process limit enforced by the kernel: a pids cgroup per command under {cgroup}"
    return "process limit enforced by a watchdog that counts the tree every 10 ms" + (
        " and RLIMIT_NPROC" if os.getuid() != 0 else " (RLIMIT_NPROC does not bind root)")


def memory_limit_protection(limits: Limits | None = None) -> str:
    """How the memory limit (shared memory included) is kept here (for `doctor`)."""
    limits = limits or Limits()
    if limits.memory is None:
        return "memory: no tree-wide limit configured (RLIMIT_AS per process only)"
    parent = memory_cgroup_parent()
    if parent is not None:
        return (f"memory limit {limits.memory} bytes for the whole tree, shared memory included: a memory "
                f"cgroup per command under {parent}")
    return ("memory: no memory cgroup can be made here, so memfd_create is refused (shared memory that "
            "RLIMIT_AS would not count); RLIMIT_AS limits each process")
