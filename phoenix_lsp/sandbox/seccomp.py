"""The seccomp filter of a restricted command: a classic-BPF program generated here (with ``bpf.py``).

Default allow, because Landlock is the primary boundary: the filter closes exactly the measured gaps that
Landlock leaves (sockets other than AF_UNIX stream, connect, ptrace, io_uring, TIOCSTI, namespaces, file
metadata, message IPC, ...). It is handed to the helper as hex on its command line; the helper only installs it.

Over 300 lines: the filter is one BPF listing generated in one function, reviewed against the measured gaps as a
whole.
"""

from __future__ import annotations

import errno
import functools
import platform

from phoenix_lsp.sandbox.bpf import (
    AND_K,
    JEQ_K,
    JGE_K,
    JSET_K,
    LD_ABS_W,
    RET_ALLOW,
    RET_ERRNO,
    RET_K,
    RET_KILL_PROCESS,
    Assembler,
)

# whether the kernel takes a filter for this machine: kernel.py, so that probe() loads none of this module
from phoenix_lsp.sandbox.kernel import AUDIT_ARCH as _AUDIT_ARCH
from phoenix_lsp.sandbox.kernel import seccomp_available as seccomp_available
from phoenix_lsp.sandbox.kernel import seccomp_supported_arch as seccomp_supported_arch

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

_X32_SYSCALL_BIT = 0x40000000


def _arg_lo(index: int) -> int:
    """Offset of the low 32 bits of syscall argument `index` in struct seccomp_data (little-endian)."""
    return 16 + 8 * index


def _arg_hi(index: int) -> int:
    return 16 + 8 * index + 4


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
    eperm = RET_ERRNO | errno.EPERM
    enosys = RET_ERRNO | errno.ENOSYS
    a = Assembler()
    a.op(LD_ABS_W, 4)  # arch
    a.op(JEQ_K, _AUDIT_ARCH[machine], 1, 0)
    a.op(RET_K, RET_KILL_PROCESS)
    a.op(LD_ABS_W, 0)  # syscall number
    if machine == "x86_64":
        a.op(JGE_K, _X32_SYSCALL_BIT, 0, 1)
        a.op(RET_K, eperm)
    # The syscalls whose arguments decide, first (they are frequent: their checks below are short)...
    a.op(JEQ_K, table["socket"], "socket", 0)
    a.op(JEQ_K, table["socketpair"], "socket", 0)
    a.op(JEQ_K, table["ioctl"], "ioctl", 0)
    a.op(JEQ_K, table["fcntl"], "fcntl", 0)
    a.op(JEQ_K, table["clone"], "clone", 0)
    a.op(JEQ_K, table["prlimit64"], "prlimit", 0)
    a.op(JEQ_K, table["setpriority"], "setpriority", 0)
    a.op(JEQ_K, table["ioprio_set"], "ioprio", 0)
    a.op(JEQ_K, table["fallocate"], "fallocate", 0)
    for name in SELF_ONLY_BY_PID:
        a.op(JEQ_K, table[name], "self_pid", 0)
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
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JEQ_K, AF_UNIX, 0, "deny")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(AND_K, 0xF)  # SOCK_TYPE_MASK: strips SOCK_CLOEXEC / SOCK_NONBLOCK
    a.op(JEQ_K, SOCK_STREAM, "allow", 0)
    a.op(JEQ_K, SOCK_SEQPACKET, "allow", "deny")
    # ioctl(fd, cmd): cmd is an unsigned int in the kernel, so compare the low word only (a high word
    # set by the caller must not slip past the check).
    a.label("ioctl")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(JEQ_K, TIOCSTI, "deny", 0)
    for cmd in METADATA_IOCTLS:
        a.op(JEQ_K, cmd, "deny", 0)
    a.op(JEQ_K, TIOCLINUX, "deny", "allow")
    # fcntl(fd, F_SETLEASE, ...): a lease makes every other opener of the file wait for the holder.
    a.label("fcntl")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(JEQ_K, F_SETLEASE, "deny", "allow")
    a.label("clone")
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JSET_K, CLONE_NAMESPACE_FLAGS, "deny", "allow")
    # prlimit64(pid, ...): only on itself (pid 0); changing another process's limits is a write to it.
    a.label("prlimit")
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JEQ_K, 0, 0, "deny")
    a.op(LD_ABS_W, _arg_hi(0))
    a.op(JEQ_K, 0, "allow", "deny")
    # setpriority(which, who, prio): only PRIO_PROCESS with who 0 (the caller). PRIO_PGRP/PRIO_USER or a
    # pid would renice the user's other programs, or the launcher that must stop this tree.
    a.label("setpriority")
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JEQ_K, PRIO_PROCESS, 0, "deny")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(JEQ_K, 0, "allow", "deny")
    # ioprio_set(which, who, ioprio): only IOPRIO_WHO_PROCESS with who 0.
    a.label("ioprio")
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JEQ_K, IOPRIO_WHO_PROCESS, 0, "deny")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(JEQ_K, 0, "allow", "deny")
    # sched_set*(pid, ...): pid 0 only (pid_t: the kernel reads the low 32 bits).
    a.label("self_pid")
    a.op(LD_ABS_W, _arg_lo(0))
    a.op(JEQ_K, 0, "allow", "deny")
    # fallocate(fd, mode, ...): mode 0 only. Every other mode either keeps the size (so RLIMIT_FSIZE is
    # never checked: FALLOC_FL_KEEP_SIZE, PUNCH_HOLE) or shifts data without that check (INSERT_RANGE).
    # EOPNOTSUPP makes glibc's posix_fallocate fall back to writing, which the limits do see.
    a.label("fallocate")
    a.op(LD_ABS_W, _arg_lo(1))
    a.op(JEQ_K, 0, "allow", "eopnotsupp")
    a.label("allow")
    a.op(RET_K, RET_ALLOW)
    a.label("deny")
    a.op(RET_K, eperm)
    a.label("enosys")
    a.op(RET_K, RET_ERRNO | errno.ENOSYS)
    a.label("eopnotsupp")
    a.op(RET_K, RET_ERRNO | errno.EOPNOTSUPP)
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
    a = Assembler()
    a.op(LD_ABS_W, 4)
    a.op(JEQ_K, _AUDIT_ARCH[machine], 1, 0)
    a.op(RET_K, RET_KILL_PROCESS)
    a.op(LD_ABS_W, 0)
    a.op(JEQ_K, table["memfd_create"], 0, 1)
    a.op(RET_K, RET_ERRNO | errno.EPERM)
    a.op(RET_K, RET_ALLOW)
    return a.assemble()
