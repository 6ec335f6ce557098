"""Pure-Python twin of helper.c, used when no C compiler is available (see build.py).

Same command line, same status protocol on stderr, same process layout: this process becomes a child
subreaper, forks the command, restricts the child (setsid, rlimits, descriptors, no_new_privs,
capabilities, Landlock, seccomp) and execs it, then owns the tree and kills all of it when the command
ends, on SIGTERM/SIGINT/SIGHUP, when the lifeline (stdin) closes, past the process limit (a pids
cgroup with -g, else a watchdog that counts the tree), past the disk quota (-Q) or the time limit (-t).
With -G/-u the tree's memory, shared memory included, is limited by a memory cgroup; when that cannot be
made the -F filter (no memfd_create) is installed as well.

It is a separate, single-threaded Python process, so forking and restricting here is safe (unlike
preexec_fn inside the multi-threaded server). It costs a Python start-up (~30-40 ms) per command.
Runs as a script (`python -I -S launcher.py ...`): standard library only, no package imports.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import select
import signal
import stat
import struct
import sys
import time

_PR_SET_PDEATHSIG = 1
_PR_SET_SECCOMP = 22
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT = 47
_PR_CAP_AMBIENT_CLEAR_ALL = 4
_SECCOMP_MODE_FILTER = 2
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_SYS_CLOSE_RANGE = 436
_CLOSE_RANGE_CLOEXEC = 1 << 2
_CAP_VERSION_3 = 0x20080522
_WALL = 0x40000000
_HANDLED = (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Landlock rights a rule on a non-directory may carry: execute, write, read, truncate, ioctl_dev.
_FILE_RIGHTS = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 14) | (1 << 15)
_QUOTA_MAX_ENTRIES = 1_000_000

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _Fail(Exception):
    def __init__(self, stage: str, err: int) -> None:
        super().__init__(stage)
        self.stage, self.err = stage, err


def _check(rc: int, stage: str) -> int:
    if rc < 0:
        raise _Fail(stage, ctypes.get_errno())
    return rc


def _status(text: str) -> None:
    with contextlib.suppress(OSError):
        os.write(2, text.encode())


class _Options:
    def __init__(self) -> None:
        self.cwd: str | None = None
        self.rlimits: list[tuple[int, int, int]] = []
        self.nnp = self.dropcaps = self.background = False
        self.ruleset: tuple[int, int, int] | None = None
        self.rules: list[tuple[int, str, bool]] = []
        self.filter: bytes | None = None
        self.fallback_filter: bytes | None = None
        self.max_procs = 0
        self.cgroup_parent: str | None = None
        self.memcg_parent: str | None = None
        self.memory = 0
        self.quota = 0
        self.quota_dir = ""
        self.time_limit = 0.0
        self.keep: list[str] = []  # -T: a private /tmp showing only these directories
        self.argv: list[str] = []


def _parse(argv: list[str]) -> _Options:
    o = _Options()
    i = 0

    def rl(v: str) -> int:
        return resource.RLIM_INFINITY if v == "inf" else int(v)

    while i < len(argv):
        a = argv[i]
        if a == "--":
            i += 1
            break
        if a in ("-n", "-k", "-B"):
            o.nnp |= a == "-n"
            o.dropcaps |= a == "-k"
            o.background |= a == "-B"
            i += 1
            continue
        if i + 1 >= len(argv):
            raise _Fail("usage", errno.EINVAL)
        v = argv[i + 1]
        i += 2
        if a == "-C":
            o.cwd = v
        elif a == "-r":
            res, soft, hard = v.split(":")
            o.rlimits.append((int(res), rl(soft), rl(hard)))
        elif a == "-l":
            fs, net, scope = (int(x, 16) for x in v.split(":"))
            o.ruleset = (fs, net, scope)
        elif a in ("-p", "-P"):
            access, _, path = v.partition(":")
            o.rules.append((int(access, 16), path, a == "-P"))
        elif a == "-f":
            o.filter = bytes.fromhex(v)
        elif a == "-F":
            o.fallback_filter = bytes.fromhex(v)
        elif a == "-m":
            o.max_procs = int(v)
        elif a == "-g":
            o.cgroup_parent = v
        elif a == "-G":
            o.memcg_parent = v
        elif a == "-u":
            o.memory = int(v)
        elif a == "-Q":
            quota, _, directory = v.partition(":")
            o.quota, o.quota_dir = int(quota), directory
            if not directory:
                raise _Fail("usage", errno.EINVAL)
        elif a == "-t":
            o.time_limit = float(v)
        elif a == "-T":
            if not v.startswith("/") or len(o.keep) >= 8:
                raise _Fail("usage", errno.EINVAL)
            o.keep.append(v)
        else:
            raise _Fail("usage", errno.EINVAL)
    o.argv = argv[i:]
    if not o.argv:
        raise _Fail("usage", errno.EINVAL)
    return o


# ------------------------------------------------------------------------------------------ the child


def _drop_capabilities() -> None:
    header = struct.pack("=Ii", _CAP_VERSION_3, 0)
    hdr = ctypes.create_string_buffer(header)
    data = ctypes.create_string_buffer(24)
    _check(_libc.capget(hdr, data), "capget")
    permitted = struct.unpack("=6I", data.raw)
    have_caps = bool(permitted[1] or permitted[4])
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            err = ctypes.get_errno()
            if err == errno.EINVAL or (err == errno.EPERM and not have_caps):
                break
            raise _Fail("capbset-drop", err)
    if _libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 and \
            ctypes.get_errno() != errno.EINVAL:
        raise _Fail("cap-ambient", ctypes.get_errno())
    if have_caps:
        _check(_libc.capset(hdr, ctypes.create_string_buffer(24)), "capset")


def _landlock(o: _Options) -> int:
    """The ruleset, built from the paths as the server sees them (before /tmp is made private)."""
    assert o.ruleset is not None
    fs, net, scope = o.ruleset
    size = 24 if scope else 16 if net else 8
    attr = ctypes.create_string_buffer(struct.pack("=QQQ", fs, net, scope))
    rfd = _check(_libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, attr, ctypes.c_size_t(size), 0),
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
                raise _Fail("landlock-open-rule-path", exc.errno or 0) from exc
        beneath = ctypes.create_string_buffer(struct.pack("=Qi", access, pfd))
        if _libc.syscall(_SYS_LANDLOCK_ADD_RULE, rfd, 1, beneath, 0) != 0 and not optional:
            raise _Fail("landlock-add-rule", ctypes.get_errno())
        os.close(pfd)
    return rfd


_CLONE_NEWNS = 0x00020000
_CLONE_NEWUSER = 0x10000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18


def _private_tmp(o: _Options) -> None:
    """helper.c's private_tmp(): its own mount namespace, an empty tmpfs on /tmp, the -T directories bound
    where they were (root makes the mount namespace; anyone else a user namespace mapping only itself)."""
    if _libc.unshare(_CLONE_NEWNS) != 0:
        uid, gid = os.geteuid(), os.getegid()
        _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNS), "private-tmp-unshare")
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        except OSError as exc:
            raise _Fail("private-tmp-userns", exc.errno or 0) from exc
    _check(_libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "private-tmp-private")
    fds = []  # opened in the new namespace (a bind's source must be one of its mounts), before the tmpfs
    for path in o.keep:
        try:
            fds.append(os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC))
        except OSError as exc:
            raise _Fail("private-tmp-keep", exc.errno or 0) from exc
    _check(_libc.mount(b"tmpfs", b"/tmp", b"tmpfs", _MS_NOSUID | _MS_NODEV, b"mode=1777,size=1m"),
           "private-tmp-mount")
    for path, fd in zip(o.keep, fds, strict=True):
        try:
            os.makedirs(path, 0o755, exist_ok=True)
        except OSError as exc:
            raise _Fail("private-tmp-mkdir", exc.errno or 0) from exc
        _check(_libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, _MS_BIND | _MS_REC, None),
               "private-tmp-bind")
        os.close(fd)
    if o.cwd:  # the working directory again, the one in sight (it was entered before /tmp changed)
        os.chdir(o.cwd)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_filter(program: bytes) -> None:
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    _check(_libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0), "seccomp")


def _child(o: _Options, helper_pid: int, err_w: int, cgroups: list[str], memcg_ok: bool) -> None:
    stage = "setup"
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, *_HANDLED):
            signal.signal(sig, signal.SIG_DFL)
        for cgroup in cgroups:
            # Join the command's cgroups before anything else: everything it starts is counted there.
            stage = "cgroup-join"
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")
        stage = "setsid"
        os.setsid()
        _check(_libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        if os.getppid() != helper_pid:
            os._exit(127)
        if o.cwd:
            stage = "chdir"
            os.chdir(o.cwd)
        stage = "stdin"
        devnull = os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)
        os.dup2(devnull, 0)
        stage = "stderr"
        os.dup2(1, 2)
        stage = "setrlimit"
        for res, soft, hard in o.rlimits:
            resource.setrlimit(res, (soft, hard))
        stage = "close-fds"
        if _libc.syscall(_SYS_CLOSE_RANGE, 3, ctypes.c_uint(0xFFFFFFFF), _CLOSE_RANGE_CLOEXEC) != 0:
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                if fd > 2:
                    with contextlib.suppress(OSError):
                        os.set_inheritable(fd, False)
        # Landlock's rules are taken from the paths as the server sees them, then /tmp is made private (it
        # needs the capabilities that are dropped next), then the rules are enforced.
        rfd = _landlock(o) if o.ruleset is not None else -1
        if o.keep:
            stage = "private-tmp"
            _private_tmp(o)
        if o.nnp:
            _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no-new-privs")
        if o.dropcaps:
            _drop_capabilities()
        if rfd >= 0:
            _check(_libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, rfd, 0), "landlock-restrict-self")
            os.close(rfd)
        if o.filter:
            _install_filter(o.filter)
        if o.fallback_filter and not memcg_ok:
            _install_filter(o.fallback_filter)
        stage = "exec"
        os.execvp(o.argv[0], o.argv)
    except _Fail as f:
        os.write(err_w, f"{f.stage} {f.err}".encode())
    except OSError as exc:
        os.write(err_w, f"{stage} {exc.errno or 0}".encode())
    except BaseException:  # anything else before exec: report, never run unrestricted
        os.write(err_w, f"{stage} {errno.EINVAL}".encode())
    os._exit(127)


# --------------------------------------------------------------------------------------- the parent


def _descendants(self_pid: int) -> list[int]:
    parent_of: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parent_of[int(name)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_of.items():
        children.setdefault(ppid, []).append(pid)
    out: list[int] = []
    todo = [self_pid]
    while todo:
        for pid in children.get(todo.pop(), []):
            if pid != self_pid:
                out.append(pid)
                todo.append(pid)
    return out


def _machine_threads() -> int:
    """Threads alive on the machine (one read of /proc/loadavg): the cheap test before a full walk."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[1])
    except (OSError, IndexError, ValueError):
        return -1


def _tree_bytes(root: str) -> int:
    """Bytes allocated under `root`, walked without recursion and never through a symlink; -1 when the
    tree has more than _QUOTA_MAX_ENTRIES entries (counted as over the quota)."""
    total = entries = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            it = os.scandir(directory)
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                total += st.st_blocks * 512
                entries += 1
                if entries > _QUOTA_MAX_ENTRIES:
                    return -1
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)
    return total


def _disk_usage(o: _Options) -> int:
    """The scratch directory plus our stdout when it is a regular file (a background job's log)."""
    used = _tree_bytes(o.quota_dir)
    if used < 0:
        return -1
    with contextlib.suppress(OSError):
        st = os.fstat(1)
        if stat.S_ISREG(st.st_mode):
            used += st.st_blocks * 512
    return used


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


class _Cgroup:
    """One of the command's own cgroups: pids (the kernel refuses a fork past pids.max, for root too) or
    memory (the whole tree's memory, shared memory included)."""

    def __init__(self, parent: str, self_pid: int, max_procs: int = 0, memory: int = 0) -> None:
        self.path = os.path.join(parent, f"phoenix-{self_pid}")
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.path, 0o700)
        try:
            if max_procs:
                _write(os.path.join(self.path, "pids.max"), str(max_procs))
            if memory:
                self.set_memory(memory)
        except OSError:
            self.remove()
            raise

    def set_memory(self, memory: int) -> None:
        """The memory limit, with swap limited too so shared memory cannot escape by being swapped out."""
        v1 = os.path.join(self.path, "memory.limit_in_bytes")
        if os.path.exists(v1):
            _write(v1, str(memory))
            memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
            if os.path.exists(memsw):
                _write(memsw, str(memory))
            return
        _write(os.path.join(self.path, "memory.max"), str(memory))
        swap = os.path.join(self.path, "memory.swap.max")
        if os.path.exists(swap):
            with contextlib.suppress(OSError):
                _write(swap, "0")

    def memory_limit_hits(self) -> int:
        failcnt = self._read("memory.failcnt").strip()
        if failcnt.isdigit():
            memsw = self._read("memory.memsw.failcnt").strip()
            return int(failcnt) + (int(memsw) if memsw.isdigit() else 0)
        for line in self._read("memory.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit():
                return int(value)
        return 0

    def _read(self, name: str) -> str:
        try:
            with open(os.path.join(self.path, name)) as f:
                return f.read()
        except OSError:
            return ""

    def limit_hit(self) -> bool:
        """True once the kernel has refused a fork here ("max N" in pids.events, N > 0)."""
        for line in self._read("pids.events").splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit() and int(value) > 0:
                return True
        return False

    def kill_all(self) -> None:
        for _ in range(64):
            pids = [int(p) for p in self._read("cgroup.procs").split() if p.isdigit()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def remove(self) -> None:
        # The last task leaves the cgroup a moment after it is reaped: retry briefly.
        for _ in range(200):
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    return
                time.sleep(0.001)


class _Tree:
    def __init__(self, child: int, cgroups: list[_Cgroup]) -> None:
        self.child = child
        self.cgroups = cgroups
        self.status: int | None = None

    def reap(self) -> int:
        """Reap what has exited; -1 when no child is left at all."""
        count = 0
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG | _WALL)
            except ChildProcessError:
                return -1
            if pid == 0:
                return count
            count += 1
            if pid == self.child and self.status is None:
                self.status = st

    def kill_all(self, self_pid: int) -> None:
        if self.status is None:
            with contextlib.suppress(OSError):
                os.killpg(self.child, signal.SIGKILL)
        for cgroup in self.cgroups:
            cgroup.kill_all()
        while True:
            reaped = self.reap()
            if reaped < 0:
                return
            pids = _descendants(self_pid)
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not pids and reaped == 0:
                try:
                    pid, st = os.waitpid(-1, _WALL)
                except ChildProcessError:
                    return
                if pid == self.child and self.status is None:
                    self.status = st
            elif pids:
                time.sleep(0.0001)


def main(argv: list[str]) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    try:
        o = _parse(argv)
    except (_Fail, ValueError):
        _status(f"error usage {errno.EINVAL}\n")
        return 125
    self_pid = os.getpid()
    if o.max_procs > 0:
        # Real-time slot for the watchdog when allowed (see helper.c: root fork bombs); the command is
        # reset to normal scheduling at fork.
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(1))
    cgroup: _Cgroup | None = None
    memcg: _Cgroup | None = None
    memcg_ok = False
    if o.cgroup_parent and o.max_procs > 0:
        try:
            cgroup = _Cgroup(o.cgroup_parent, self_pid, o.max_procs)
        except OSError as exc:  # no cgroup this time: the watchdog keeps the limit
            _status(f"note cgroup {exc.errno or 0}\n")
    if o.memcg_parent and o.memory > 0:
        try:
            if cgroup is not None and os.path.join(o.memcg_parent, f"phoenix-{self_pid}") == cgroup.path:
                cgroup.set_memory(o.memory)  # cgroup v2: one directory holds both controllers
                memcg = cgroup
            else:
                memcg = _Cgroup(o.memcg_parent, self_pid, memory=o.memory)
            memcg_ok = True
        except OSError as exc:  # no memory cgroup this time: memfd_create is refused instead (-F)
            _status(f"note memcg {exc.errno or 0}\n")
    cgroups = [c for c in (cgroup, memcg) if c is not None]
    cgroups = [c for i, c in enumerate(cgroups) if c not in cgroups[:i]]
    try:
        return _run(o, self_pid, cgroup, cgroups, memcg if memcg_ok else None)
    finally:
        for c in cgroups:
            c.remove()


def _run(o: _Options, self_pid: int, cgroup: _Cgroup | None, cgroups: list[_Cgroup],
         memcg: _Cgroup | None) -> int:
    if _libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        _status(f"error subreaper {ctypes.get_errno()}\n")
        return 125
    err_r, err_w = os.pipe()  # close-on-exec by default in Python
    child = os.fork()
    if child == 0:
        os.close(err_r)
        _child(o, self_pid, err_w, [c.path for c in cgroups], memcg is not None)
    os.close(err_w)
    tree = _Tree(child, cgroups)
    report = os.read(err_r, 128)
    os.close(err_r)
    if report:
        tree.kill_all(self_pid)
        _status(f"error {report.decode(errors='replace')}\n")
        return 125
    _status(f"started {child}\n")
    if not o.background:
        os.close(1)

    events: list[int] = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    for sig in _HANDLED:
        signal.signal(sig, lambda num, _frame: events.append(num))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _HANDLED)

    mode0 = os.fstat(0).st_mode
    lifeline = stat.S_ISFIFO(mode0) or stat.S_ISSOCK(mode0)
    killed: str | None = None
    # The watchdog counts the tree every 10 ms; with a pids cgroup a look at pids.events every 100 ms.
    timeout = (0.1 if cgroup is not None else 0.01) if o.max_procs > 0 else None
    baseline = _machine_threads() if o.max_procs > 0 else -1
    limit_hit_at: float | None = None
    started_at = time.monotonic()
    quota_next = started_at + 0.1
    while tree.status is None and killed is None:
        watch = [wake_r, 0] if lifeline else [wake_r]
        wait = timeout
        now = time.monotonic()
        if o.quota > 0:
            wait = max(0.001, quota_next - now) if wait is None else min(wait, max(0.001, quota_next - now))
        if o.time_limit > 0:
            left = max(0.001, started_at + o.time_limit - now)
            wait = left if wait is None else min(wait, left)
        try:
            ready, _, _ = select.select(watch, [], [], wait)
        except InterruptedError:
            ready = []
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 512)
        if any(num in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP) for num in events):
            killed = "terminate"
        events.clear()
        if tree.reap() < 0 and tree.status is None:
            break
        if lifeline and 0 in ready:
            try:
                data = os.read(0, 256)
            except OSError:
                data = b""
            if not data:
                lifeline = False
                killed = killed or "lifeline"
        now = time.monotonic()
        if killed is None and tree.status is None and o.time_limit > 0 and now - started_at >= o.time_limit:
            killed = "time-limit"
        if killed is None and tree.status is None and o.quota > 0 and now >= quota_next:
            used = _disk_usage(o)
            took = time.monotonic() - now
            if used < 0 or used > o.quota:
                killed = "disk-quota"
            # A big tree is walked less often, so the walk never takes more than ~5% of a core.
            quota_next = time.monotonic() + max(0.1, took * 20)
        if killed is None and tree.status is None and cgroup is not None:
            # The kernel refused a fork: the tree cannot grow, so give the command 100 ms to report the
            # refusal in its own words (EAGAIN), then stop it.
            if limit_hit_at is None and cgroup.limit_hit():
                limit_hit_at = time.monotonic()
            if limit_hit_at is not None and time.monotonic() - limit_hit_at >= 0.1:
                killed = "process-limit"
        elif killed is None and tree.status is None and o.max_procs > 0:
            now = _machine_threads()
            if now < 0 or baseline < 0 or now > baseline + o.max_procs:
                # Freeze the command's process group first (one syscall), so a fork bomb cannot outrun the
                # /proc walk without a real-time slot; resume it if the count was someone else's threads.
                with contextlib.suppress(OSError):
                    os.killpg(child, signal.SIGSTOP)
                if len(_descendants(self_pid)) > o.max_procs:
                    killed = "process-limit"
                else:
                    with contextlib.suppress(OSError):
                        os.killpg(child, signal.SIGCONT)
    signal.pthread_sigmask(signal.SIG_BLOCK, _HANDLED)
    tree.kill_all(self_pid)
    hits = memcg.memory_limit_hits() if memcg is not None else 0
    if killed:
        _status(f"killed {killed}\n")
    if hits:
        _status(f"memlimit {hits}\n")
    _status(f"maxrss {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\n")
    st = tree.status
    if st is not None and os.WIFEXITED(st):
        code = os.WEXITSTATUS(st)
        _status(f"exit {code}\n")
        line = f"exit code {code}"
    elif st is not None and os.WIFSIGNALED(st):
        signum = int(os.WTERMSIG(st))
        code = 128 + signum
        _status(f"signal {signum}\n")
        line = f"killed by signal {signum} ({signal.strsignal(signal.Signals(signum))})"
    else:
        code, line = 137, "killed"
    if o.background:
        extra = f"; tree killed: {killed}" if killed else ""
        with contextlib.suppress(OSError):
            os.write(1, f"\n[phoenix-lsp: background command finished: {line}{extra}]\n".encode())
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
