"""The warm-up every surface does once a conversation is in use."""

from __future__ import annotations

import contextlib
import importlib
import threading

from ...sandbox import cgroups

_warm: list[threading.Thread] = []


#: what a conversation's first turn imports, loaded by the warm-up thread rather than by the turn on the event
#: loop, where each import held every request up (measured at 50 ms in all in a first turn: the agent's MCP and
#: worker modules, the editor's sight, the async backend the SDK's first request loads)
FIRST_TURN_MODULES = ("anthropic", "anthropic.resources.messages", "anyio._backends._asyncio",
                      "opentelemetry.propagate", "phoenix_lsp.agent.mcp_hub", "phoenix_lsp.agent.mcp_sessions",
                      "phoenix_lsp.agent.mcp_listings", "phoenix_lsp.agent.warm_pool",
                      "phoenix_lsp.agent.worker_process", "phoenix_lsp.server.sight", "phoenix_lsp.tools.sight")


def _warm_up() -> None:
    for name in FIRST_TURN_MODULES:  # the SDK and the rest, in the background (see warm_up)
        with contextlib.suppress(ImportError):  # an optional one (opentelemetry) may be absent
            importlib.import_module(name)
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
