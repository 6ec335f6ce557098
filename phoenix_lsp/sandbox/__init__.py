"""The kernel sandbox of Restricted mode (REQ-BASH-008, REQ-BASH-009, REQ-BED-014).

`probe()` says, once per process, what this kernel can enforce (with `kernel.py`, which asks whether seccomp
filters are taken without loading the filter: initialize reports it). What a restricted command is allowed is
decided in `launch_options.py` (from `landlock.py`, `seccomp.py`, `limits.py`, `cgroups.py`, `denylist.py`
and `private_tmp.py`); running one command (timeout, cancel) in `spawn.py`, with `watch.py` (the launcher seen from
the event loop), `outcome.py` (what it reports), `scratch.py` and `backstop.py`; background jobs in
`background.py`; the mechanism in `helper.c` (compiled at first use) or `launcher/` (its pure-Python fallback).
`overlay.py` captures an Unrestricted command's changes in an overlay of the workspace folder (REQ-BASH-028);
`phoenix_lsp.tools.shell_changes` reads, accepts and discards them.
"""

from __future__ import annotations

import functools
import logging
import platform
from dataclasses import dataclass

from phoenix_lsp.sandbox import kernel, landlock, protections
from phoenix_lsp.sandbox.limits import Limits

__all__ = ["Limits", "SandboxSupport", "probe", "unavailable_message"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SandboxSupport:
    """What the running kernel offers for Restricted mode."""

    available: bool  # Restricted mode possible (Landlock usable)
    landlock_abi: int | None
    seccomp: bool
    missing: tuple[str, ...]  # human-readable protections missing on this kernel (old ABI etc.)
    reason: str | None  # why unavailable, with what the user can do
    active: tuple[str, ...] = ()  # human-readable protections a restricted command gets

    def warning(self) -> str | None:
        """The text to log and show to the user when protection is reduced or absent (None: full)."""
        if not self.available:
            return f"Kernel sandbox unavailable: {self.reason}"
        if self.missing:
            return "Kernel sandbox active with reduced protection: " + "; ".join(self.missing)
        return None


def unavailable_message() -> str:
    """The error for a request to enter Restricted mode when the sandbox cannot run."""
    support = probe()
    return (f"Restricted mode is not available: {support.reason} Only Unrestricted mode can be used on "
            "this system; the command safety checks still apply.")


@functools.cache
def probe() -> SandboxSupport:
    """Detect Landlock (ABI version) and seccomp support. Cheap (two syscalls) and cached."""
    if platform.system() != "Linux":
        reason = (f"Landlock is a Linux feature and this is {platform.system()}. Run phoenix-lsp on Linux "
                  ">= 5.13 (6.12+ for every protection) to get Restricted mode.")
        support = SandboxSupport(False, None, False, protections.missing_protections(None, False), reason)
    else:
        abi = landlock.landlock_abi()
        has_seccomp = kernel.seccomp_available() and kernel.seccomp_supported_arch()
        if abi is None:
            reason = (f"this kernel ({platform.release()}) does not offer Landlock. It needs Linux >= 5.13 "
                      "built with CONFIG_SECURITY_LANDLOCK and 'landlock' in the lsm= boot parameter "
                      "(6.7+ for network rules, 6.12+ for scoping).")
            support = SandboxSupport(False, None, has_seccomp, protections.missing_protections(None, has_seccomp),
                                     reason)
        else:
            missing = list(protections.missing_protections(abi, has_seccomp))
            if kernel.seccomp_available() and not kernel.seccomp_supported_arch():
                missing.append(f"no seccomp policy for the {platform.machine()} architecture")
            support = SandboxSupport(True, abi, has_seccomp, tuple(missing), None,
                                     tuple(protections.active_protections(abi, has_seccomp)))
    text = support.warning()
    if text:
        log.warning("%s", text)
    return support
