"""The launcher's parent: it makes the command's cgroups, forks the child (child.py), then watches the
tree until the command ends or a limit, a signal or the lifeline ends it, kills the whole tree and reports
the outcome on stderr."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import resource
import select
import signal
import stat
import time

from .cgroup import Cgroup
from .child import child as run_child
from .kernel import HANDLED, PR_SET_CHILD_SUBREAPER, Fail, libc, status
from .measure import descendants, disk_usage, machine_threads
from .options import Options, parse
from .tree import Tree


def main(argv: list[str]) -> int:
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    try:
        o = parse(argv)
    except (Fail, ValueError):
        status(f"error usage {errno.EINVAL}\n")
        return 125
    self_pid = os.getpid()
    if o.max_procs > 0:
        # Real-time slot for the watchdog when allowed (see helper.c: root fork bombs); the command is
        # reset to normal scheduling at fork.
        with contextlib.suppress(OSError, AttributeError):
            os.sched_setscheduler(0, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(1))
    cgroup: Cgroup | None = None
    memcg: Cgroup | None = None
    memcg_ok = False
    if o.cgroup_parent and o.max_procs > 0:
        try:
            cgroup = Cgroup(o.cgroup_parent, self_pid, o.max_procs)
        except OSError as exc:  # no cgroup this time: the watchdog keeps the limit
            status(f"note cgroup {exc.errno or 0}\n")
    if o.memcg_parent and o.memory > 0:
        try:
            if cgroup is not None and os.path.join(o.memcg_parent, f"phoenix-{self_pid}") == cgroup.path:
                cgroup.set_memory(o.memory)  # cgroup v2: one directory holds both controllers
                memcg = cgroup
            else:
                memcg = Cgroup(o.memcg_parent, self_pid, memory=o.memory)
            memcg_ok = True
        except OSError as exc:  # no memory cgroup this time: memfd_create is refused instead (-F)
            status(f"note memcg {exc.errno or 0}\n")
    cgroups = [c for c in (cgroup, memcg) if c is not None]
    cgroups = [c for i, c in enumerate(cgroups) if c not in cgroups[:i]]
    try:
        return _run(o, self_pid, cgroup, cgroups, memcg if memcg_ok else None)
    finally:
        for c in cgroups:
            c.remove()


def _run(o: Options, self_pid: int, cgroup: Cgroup | None, cgroups: list[Cgroup],
         memcg: Cgroup | None) -> int:
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        status(f"error subreaper {ctypes.get_errno()}\n")
        return 125
    err_r, err_w = os.pipe()  # close-on-exec by default in Python
    child = os.fork()
    if child == 0:
        os.close(err_r)
        run_child(o, self_pid, err_w, [c.path for c in cgroups], memcg is not None)
    os.close(err_w)
    tree = Tree(child, cgroups)
    # Until exec closes it: the clock line of -w, then a failure's "<stage> <errno>" if there is one.
    report = b""
    while len(report) < 160 and (chunk := os.read(err_r, 160 - len(report))):
        report += chunk
    os.close(err_r)
    if report.startswith(b"clock ") and b"\n" in report:
        clock_line, _, report = report.partition(b"\n")
        status(f"{clock_line.decode(errors='replace')}\n")
    if report:
        tree.kill_all(self_pid)
        status(f"error {report.decode(errors='replace')}\n")
        return 125
    status(f"started {child}\n")
    # The output pipe stays open here until the end (as in helper.c): its end comes with the launcher's own.

    events: list[int] = []
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.set_wakeup_fd(wake_w)
    for sig in HANDLED:
        signal.signal(sig, lambda num, _frame: events.append(num))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, HANDLED)

    mode0 = os.fstat(0).st_mode
    lifeline = stat.S_ISFIFO(mode0) or stat.S_ISSOCK(mode0)
    killed: str | None = None
    # The watchdog counts the tree every 10 ms; with a pids cgroup a look at pids.events every 100 ms.
    timeout = (0.1 if cgroup is not None else 0.01) if o.max_procs > 0 else None
    baseline = machine_threads() if o.max_procs > 0 else -1
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
            used = disk_usage(o)
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
            now = machine_threads()
            if now < 0 or baseline < 0 or now > baseline + o.max_procs:
                # Freeze the command's process group first (one syscall), so a fork bomb cannot outrun the
                # /proc walk without a real-time slot; resume it if the count was someone else's threads.
                with contextlib.suppress(OSError):
                    os.killpg(child, signal.SIGSTOP)
                if len(descendants(self_pid)) > o.max_procs:
                    killed = "process-limit"
                else:
                    with contextlib.suppress(OSError):
                        os.killpg(child, signal.SIGCONT)
    signal.pthread_sigmask(signal.SIG_BLOCK, HANDLED)
    tree.kill_all(self_pid)
    hits = memcg.memory_limit_hits() if memcg is not None else 0
    end: list[str] = []  # the lines of the end, written at once (as in helper.c)
    if killed:
        end.append(f"killed {killed}\n")
    if hits:
        end.append(f"memlimit {hits}\n")
    end.append(f"maxrss {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\n")
    st = tree.status
    if st is not None and os.WIFEXITED(st):
        code = os.WEXITSTATUS(st)
        end.append(f"exit {code}\n")
        line = f"exit code {code}"
    elif st is not None and os.WIFSIGNALED(st):
        signum = int(os.WTERMSIG(st))
        code = 128 + signum
        end.append(f"signal {signum}\n")
        line = f"killed by signal {signum} ({signal.strsignal(signal.Signals(signum))})"
    else:
        code, line = 137, "killed"
    status("".join(end))
    if o.background:
        extra = f"; tree killed: {killed}" if killed else ""
        with contextlib.suppress(OSError):
            os.write(1, f"\n[phoenix-lsp: background command finished: {line}{extra}]\n".encode())
    return code


