"""The helper options that make one command restricted: Landlock rules, seccomp filters, rlimits, cgroups,
the scratch quota and the private /tmp, as one argument list.

Every security decision of the sandbox is made by this module and the ones it draws on (``landlock.py``,
``seccomp.py``, ``limits.py``, ``cgroups.py``, ``denylist.py``); the helper (``helper.c``, or ``launcher/``
when no C compiler is available) only applies what it is given on its command line, so there is one place to
review and one place the escape suite exercises, whichever launcher runs it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from pathlib import Path

from phoenix_lsp.sandbox import cgroups, denylist, landlock, seccomp
from phoenix_lsp.sandbox.landlock import (
    FS_EXECUTE,
    FS_READ_DIR,
    FS_READ_FILE,
    FS_TRUNCATE,
    FS_WRITE_FILE,
    NET_BIND_TCP,
    NET_CONNECT_TCP,
    SCOPE_ABSTRACT_UNIX_SOCKET,
    SCOPE_SIGNAL,
)
from phoenix_lsp.sandbox.limits import Limits, rlimit_args

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


@functools.lru_cache(maxsize=64)
def _denied_near(path: str, denied: tuple[Path, ...]) -> bool:
    """Whether the deny-read list names `path`, a folder inside it or one that holds it. Answered once per
    path and list: comparing every pair through Path.parents was two thirds of launcher_args' time."""
    kept = Path(path)
    return any(d == kept or kept in d.parents or d in kept.parents for d in denied)


def spare_args(limits: Limits, scratch: Path) -> list[str]:
    """The options of a restricted command that its launcher applies before the command is known (a spare's,
    spare.py): the pids cgroup and the process limit, the memory cgroup and its limit, the scratch disk quota."""
    args: list[str] = []
    if limits.max_processes is not None:
        args += ["-m", str(limits.max_processes)]
        cgroup = cgroups.pids_cgroup_parent()
        if cgroup is not None:
            args += ["-g", str(cgroup)]
    if limits.memory is not None:
        memory = cgroups.memory_cgroup_parent()
        if memory is not None:
            args += ["-G", str(memory), "-u", str(limits.memory)]
    if limits.disk is not None:
        args += ["-Q", f"{limits.disk}:{scratch}"]
    return args


def restricted_args(abi: int, scratch: Path, limits: Limits, with_seccomp: bool,
                    deny_read: Sequence[Path] | None = None, keep: Sequence[str] = ()) -> list[str]:
    """The helper options that make one command restricted: read/execute everywhere except the deny-read
    list and /dev (devices only from the allow-list), write only to /dev/null and `scratch`, no TCP,
    scoped signals and abstract sockets, seccomp, no_new_privs, no capabilities, rlimits, the pids and
    memory cgroups (or their fallbacks) and the scratch disk quota. With `keep` (private_tmp_keep), a private
    /tmp showing only those directories (REQ-BASH-027)."""
    handled_fs = landlock.fs_rights(abi)
    handled_net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    read_only = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
    dev_read = FS_READ_FILE
    dev_rw = FS_READ_FILE | FS_WRITE_FILE | (FS_TRUNCATE if abi >= 3 else 0)
    denied = denylist.deny_read_of(deny_read)
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
        if Path(path) != scratch and not _denied_near(path, denied):
            args += ["-P", f"{read_only:x}:{path}"]
    args += rlimit_args(limits)
    args += spare_args(limits, scratch)
    deny_memfd = False
    if limits.memory is not None:
        if cgroups.memory_cgroup_parent() is not None:
            if with_seccomp:
                args += ["-F", seccomp.memfd_fallback_program().hex()]
        else:
            deny_memfd = True
    if with_seccomp:
        args += ["-f", seccomp.seccomp_program(None, deny_memfd).hex()]
    return args
