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
Runs as a directory (`python -I -S launcher ...`, see ``__main__.py``): standard library only, no import from
the rest of the package. One job per module:

- ``kernel``: the C library, the constants and how a failed call is reported;
- ``options``: the command line;
- ``restrict``: capabilities, Landlock, the private /tmp and seccomp, as the child applies them;
- ``child``: the child from fork to exec;
- ``cgroup``: the command's own pids and memory cgroups;
- ``measure``: the tree's processes, the machine's threads and the scratch directory's disk use;
- ``tree``: the command's process tree, reaped and killed;
- ``run``: the parent: cgroups, fork, the watch loop and the final status.
"""

from __future__ import annotations

from .run import main

__all__ = ["main"]
