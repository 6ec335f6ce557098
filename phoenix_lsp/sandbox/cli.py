"""What the sandbox can do on this machine, as `phoenix-lsp doctor` prints it (REQ-BASH-014).

`phoenix-lsp sandbox run` lives in the tools room (`phoenix_lsp.tools.sandbox_run`): it goes through the bash
tool, and the sandbox room imports nothing of the tools.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tempfile
from pathlib import Path

from phoenix_lsp.sandbox import build, cgroups, denylist, overlay, private_tmp, probe, spawn
from phoenix_lsp.sandbox.limits import Limits


def _self_test() -> str:
    """Run one real restricted command that must be refused a write, to prove the sandbox holds here."""
    with tempfile.TemporaryDirectory(prefix="phoenix-lsp-doctor-") as tmp:
        target = Path(tmp) / "must-not-exist"
        req = spawn.SpawnRequest(("bash", "-c", f"echo x > {shlex.quote(str(target))}"), Path(tmp), True)
        try:
            result = asyncio.run(spawn.run(req, timeout=10))
        except RuntimeError as exc:  # called from inside an event loop
            return f"self-test: skipped ({exc})"
        if result.setup_failure is not None:
            return f"self-test: FAILED, the sandbox could not be set up: {result.setup_failure.describe()}"
        if target.exists():
            return "self-test: FAILED, a write outside the scratch directory got through"
        return f"self-test: ok (a write outside the scratch directory was refused; {result.launcher} launcher)"


def process_limit_protection() -> str:
    """How the task limit is kept on this machine (it probes the cgroups: for `doctor`, never at start-up)."""
    cgroup = cgroups.pids_cgroup_parent()
    if cgroup is not None:
        return f"process limit enforced by the kernel: a pids cgroup per command under {cgroup}"
    return "process limit enforced by a watchdog that counts the tree every 10 ms" + (
        " and RLIMIT_NPROC" if os.getuid() != 0 else " (RLIMIT_NPROC does not bind root)")


def memory_limit_protection(limits: Limits | None = None) -> str:
    """How the memory limit (shared memory included) is kept here (it probes the cgroups: for `doctor`)."""
    limits = limits or Limits()
    if limits.memory is None:
        return "memory: no tree-wide limit configured (RLIMIT_AS per process only)"
    parent = cgroups.memory_cgroup_parent()
    if parent is not None:
        return (f"memory limit {limits.memory} bytes for the whole tree, shared memory included: a memory "
                f"cgroup per command under {parent}")
    return ("memory: no memory cgroup can be made here, so memfd_create is refused (shared memory that "
            "RLIMIT_AS would not count); RLIMIT_AS limits each process")


def doctor_lines(self_test: bool = True) -> list[str]:
    """What `phoenix-lsp doctor` prints about the sandbox: which protections are active and missing."""
    support = probe()
    lines = []
    if support.landlock_abi is None:
        lines.append("Landlock: not available")
    else:
        lines.append(f"Landlock: ABI {support.landlock_abi}")
    lines.append(f"seccomp: {'available' if support.seccomp else 'not available'}")
    no_overlay = overlay.overlay_support()  # REQ-BASH-028
    if no_overlay is None:
        lines.append("shell change capture: available: what an Unrestricted command (run default or slow) "
                     "changes in the working directory is held in an overlay and reviewed before it lands, like a "
                     "patch; background commands are reviewed once they have ended; writes outside the working "
                     "directory are not captured")
    else:
        lines.append(f"shell change capture: UNAVAILABLE: {no_overlay}; Unrestricted commands change files at "
                     "once, without a review")
    if not support.available:
        lines.append(f"Restricted mode: UNAVAILABLE: {support.reason}")
        lines.append("Only Unrestricted mode can be used; the command safety checks still apply.")
        return lines
    lines.append("Restricted mode: available")
    launch = build.launcher()
    if launch.kind == "compiled":
        lines.append(f"launcher: compiled helper ({launch.argv[0]})")
    else:
        lines.append(f"launcher: Python launcher ({launch.note})")
    lines += [f"active: {text}" for text in support.active]
    lines.append(f"active: {process_limit_protection()}")
    lines.append(f"active: {memory_limit_protection()}")
    slow_join = cgroups.cgroup_lock_note()
    if slow_join is not None and (cgroups.pids_cgroup_parent() or cgroups.memory_cgroup_parent()):
        lines.append(f"note: {slow_join}")
    denied = denylist.deny_read_paths(denylist.variable_entries())
    lines.append(f"active: deny-read (Landlock): {len(denied)} paths a restricted command cannot read, "
                 f"extend with {denylist.DENY_READ_ENV} or the denyRead option:")
    lines += [f"  denied: {path}{'' if path.exists() else ' (absent now)'}" for path in denied]
    lines.append("active: devices: only " + ", ".join(denylist.ALLOWED_DEVICES) + " (and the command's own "
                 "/dev/fd, /dev/stdin, /dev/stdout, /dev/stderr)")
    missing = list(support.missing)
    no_private_tmp = private_tmp.private_tmp()  # REQ-BASH-027
    if no_private_tmp is None:
        lines.append("active: private /tmp: each command has its own mount namespace whose /tmp is empty but for "
                     "its scratch directory (and the top folder of a working directory under /tmp): other "
                     "programs' files in /tmp, their FIFOs and sockets included, are out of its sight")
    else:
        missing.append(f"no private /tmp ({no_private_tmp}): a restricted command can read other programs' "
                       "files in /tmp and open their FIFOs (Landlock has no rule by file type)")
    lines += [f"missing: {text}" for text in missing]
    if not missing:
        lines.append("missing: nothing")
    if self_test:
        lines.append(_self_test())
    return lines
