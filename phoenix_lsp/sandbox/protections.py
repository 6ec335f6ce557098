"""What a restricted command is protected by on this kernel, and what it misses, in words (for ``probe()``, the
start-up warning and ``phoenix-lsp doctor``; REQ-BASH-009, REQ-BASH-014).
"""

from __future__ import annotations

from phoenix_lsp.sandbox.limits import Limits


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
