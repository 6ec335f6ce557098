"""The restrictions the child applies to itself before exec: capabilities dropped, the Landlock ruleset,
the private /tmp and the seccomp filters (as helper.c applies them)."""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import struct

from .kernel import (
    CAP_VERSION_3,
    PR_CAP_AMBIENT,
    PR_CAP_AMBIENT_CLEAR_ALL,
    PR_CAPBSET_DROP,
    PR_SET_SECCOMP,
    SECCOMP_MODE_FILTER,
    SYS_LANDLOCK_ADD_RULE,
    SYS_LANDLOCK_CREATE_RULESET,
    Fail,
    check,
    libc,
)
from .options import Options

# Landlock rights a rule on a non-directory may carry: execute, write, read, truncate, ioctl_dev.
_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18


def drop_capabilities() -> None:
    header = struct.pack("=Ii", CAP_VERSION_3, 0)
    hdr = ctypes.create_string_buffer(header)
    data = ctypes.create_string_buffer(24)
    check(libc.capget(hdr, data), "capget")
    permitted = struct.unpack("=6I", data.raw)
    have_caps = bool(permitted[1] or permitted[4])
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            if err == errno.EINVAL or (err == errno.EPERM and not have_caps):
                break
            raise Fail("capbset-drop", err)
    if libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and \
            ctypes.get_errno() != errno.EINVAL:
        raise Fail("cap-ambient", ctypes.get_errno())
    if have_caps:
        check(libc.capset(hdr, ctypes.create_string_buffer(24)), "capset")


def landlock(o: Options) -> int:
    """The ruleset, built from the paths as the server sees them (before /tmp is made private)."""
    assert o.ruleset is not None
    fs, net, scope = o.ruleset
    size = 24 if scope else 16 if net else 8
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scope))
    rfd = check(libc.syscall(SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(size), 0),
                "landlock-create-ruleset")
    for access, path, optional in o.rules:
        if optional:
            # A read grant computed a moment ago: skip it if it vanished or is neither file nor directory;
            # never follow a symlink (it could lead into a denied path). Skipping only ever grants less.
            try:
                pfd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            mode = os.fstat(pfd).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                os.close(pfd)
                continue
            if not stat.S_ISDIR(mode):
                access &= _FILE_RIGHTS
        else:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError as exc:
                raise Fail("landlock-open-rule-path", exc.errno or 0) from exc
        beneath = ctypes.create_string_buffer(struct.pack("=Qi", access, pfd))
        if libc.syscall(SYS_LANDLOCK_ADD_RULE, rfd, 1, beneath, 0) != 0 and not optional:
            raise Fail("landlock-add-rule", ctypes.get_errno())
        os.close(pfd)
    return rfd


def _escape(path: str) -> str:
    """A path inside overlay mount data: the kernel's option parser splits on `,` and `:`."""
    return "".join("\\" + c if c in ",:\\" else c for c in path)


def mount_namespace(o: Options) -> None:
    """helper.c's mount_namespace(): one mount namespace (root makes it; anyone else a user namespace mapping
    only itself), then the overlay on the captured folder (-O), then a private /tmp with the -T directories
    bound where they were."""
    if libc.unshare(_CLONE_NEWNS) != 0:
        uid, gid = os.geteuid(), os.getegid()
        check(libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "private-tmp-unshare")
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError as exc:
            raise Fail("private-tmp-userns", exc.errno or 0) from exc
    check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "private-tmp-private")
    if o.overlay is not None and o.upper is not None and o.work is not None:
        data = (f"lowerdir={_escape(o.overlay)},upperdir={_escape(o.upper)},workdir={_escape(o.work)},"
                "userxattr,volatile")
        check(libc.mount(b"overlay", o.overlay.encode(), b"overlay", 0, data.encode()), "overlay-mount")
    if o.keep:
        fds = []  # opened in the new namespace (a bind's source must be one of its mounts), before the tmpfs
        for path in o.keep:
            try:
                fds.append(os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
            except OSError as exc:
                raise Fail("private-tmp-keep", exc.errno or 0) from exc
        check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=1777,size=1m"),
              "private-tmp-mount")
        for path, fd in zip(o.keep, fds, strict=True):
            try:
                os.makedirs(path, 0o755, exist_ok=True)
            except OSError as exc:
                raise Fail("private-tmp-mkdir", exc.errno or 0) from exc
            check(libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, _MS_BIND | _MS_REC, None),
                  "private-tmp-bind")
            os.close(fd)
    if o.cwd:  # the working directory again, the one in sight (it was entered before the mounts)
        os.chdir(o.cwd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install_filter(program: bytes) -> None:
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")
