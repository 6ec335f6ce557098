"""The launcher's command line, the same as helper.c's."""

from __future__ import annotations

import errno
import resource

from .kernel import Fail


class Options:
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
        self.overlay: str | None = None  # -O/-U/-W: the folder captured in an overlay, its upper and work dirs
        self.upper: str | None = None
        self.work: str | None = None
        self.tick_after = -1  # -w: the command starts in a later tick of the coarse clock than this
        self.argv: list[str] = []


def parse(argv: list[str]) -> Options:
    o = Options()
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
            raise Fail("usage", errno.EINVAL)
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
                raise Fail("usage", errno.EINVAL)
        elif a == "-t":
            o.time_limit = float(v)
        elif a == "-T":
            if not v.startswith("/") or len(o.keep) >= 8:
                raise Fail("usage", errno.EINVAL)
            o.keep.append(v)
        elif a == "-O":
            o.overlay = v
        elif a == "-U":
            o.upper = v
        elif a == "-W":
            o.work = v
        elif a == "-w":
            o.tick_after = int(v)
            if o.tick_after < 0:
                raise Fail("usage", errno.EINVAL)
        else:
            raise Fail("usage", errno.EINVAL)
    o.argv = argv[i:]
    if not o.argv:
        raise Fail("usage", errno.EINVAL)
    layer = (o.overlay, o.upper, o.work)
    if any(layer) and not all(p is not None and p.startswith("/") for p in layer):
        raise Fail("usage", errno.EINVAL)
    return o
