"""The command's first process, from fork to exec: it joins the cgroups, leaves the launcher's session,
takes its descriptors and limits, restricts itself (restrict.py) and execs the command. A failure before
exec is written to the error pipe and the child exits; it never runs the command unrestricted."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import signal
import time

from .kernel import (
    CLOSE_RANGE_CLOEXEC,
    HANDLED,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    SYS_CLOSE_RANGE,
    SYS_LANDLOCK_RESTRICT_SELF,
    Fail,
    check,
    libc,
)
from .options import Options
from .restrict import drop_capabilities, install_filter, landlock, mount_namespace

#: Linux's CLOCK_REALTIME_COARSE, the clock file times are stamped from (Python names it from 3.13 on)
CLOCK_REALTIME_COARSE = 5


def wait_for_tick(after: int, err_w: int) -> None:
    """-w (as helper.c's wait_for_tick): exec only once the coarse clock file times come from reads later than
    `after`, and tell the launcher that reading (REQ-BASH-031's conflict rule). Bounded at 50 ms."""
    now = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    for _ in range(250):
        if now > after:
            break
        time.sleep(0.0002)
        now = time.clock_gettime_ns(CLOCK_REALTIME_COARSE)
    os.write(err_w, f"clock {now}\n".encode())


def child(o: Options, helper_pid: int, err_w: int, cgroups: list[str], memcg_ok: bool) -> None:
    stage = "setup"
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        # Python ignores SIGPIPE and SIGXFSZ; an ignored signal stays ignored across exec.
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, *HANDLED):
            signal.signal(sig, signal.SIG_DFL)
        for cgroup in cgroups:
            # Join the command's cgroups before anything else: everything it starts is counted there.
            stage = "cgroup-join"
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write("0")
        stage = "setsid"
        os.setsid()
        check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
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
        if libc.syscall(SYS_CLOSE_RANGE, 3, ctypes.c_uint(0xFFFFFFFF), CLOSE_RANGE_CLOEXEC) != 0:
            for name in os.listdir("/proc/self/fd"):
                fd = int(name)
                if fd > 2:
                    with contextlib.suppress(OSError):
                        os.set_inheritable(fd, False)
        # Landlock's rules are taken from the paths as the server sees them, then /tmp is made private (it
        # needs the capabilities that are dropped next), then the rules are enforced. With an overlay (-O)
        # the rules are opened after the mount: opened before, they would name the hidden folder beneath.
        rfd = landlock(o) if o.ruleset is not None and o.overlay is None else -1
        if o.keep or o.overlay is not None:
            stage = "private-tmp"
            mount_namespace(o)
        if o.ruleset is not None and o.overlay is not None:
            rfd = landlock(o)
        if o.nnp:
            check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no-new-privs")
        if o.dropcaps:
            drop_capabilities()
        if rfd >= 0:
            check(libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, rfd, 0), "landlock-restrict-self")
            os.close(rfd)
        if o.filter:
            install_filter(o.filter)
        if o.fallback_filter and not memcg_ok:
            install_filter(o.fallback_filter)
        if o.tick_after >= 0:
            stage = "clock"
            wait_for_tick(o.tick_after, err_w)
        stage = "exec"
        os.execvp(o.argv[0], o.argv)
    except Fail as f:
        os.write(err_w, f"{f.stage} {f.err}".encode())
    except OSError as exc:
        os.write(err_w, f"{stage} {exc.errno or 0}".encode())
    except BaseException:  # anything else before exec: report, never run unrestricted
        os.write(err_w, f"{stage} {errno.EINVAL}".encode())
    os._exit(127)
