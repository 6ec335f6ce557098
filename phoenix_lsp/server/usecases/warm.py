"""The warm-up every surface does once a conversation is in use."""

from __future__ import annotations

import importlib
import threading

from ...sandbox import cgroups

_warm: list[threading.Thread] = []


def _warm_up() -> None:
    importlib.import_module("anthropic")  # the SDK, in the background (see warm_up)
    cgroups.pids_cgroup_parent()  # the one-time cgroup probes of the first restricted command
    cgroups.memory_cgroup_parent()


def warm_up() -> None:
    """The model SDK takes about a second to import, and the sandbox probes its cgroups once: both are done in
    a background thread once a conversation (an LSP conversation, an ACP session) is in use, so the first
    message does not wait for them — but not at start-up, where it would slow the first requests."""
    if not _warm:
        thread = threading.Thread(target=_warm_up, daemon=True)
        _warm.append(thread)
        thread.start()
