"""Runs conversations: feeds events to the pure core and carries out its effects (REQ-PROTO-029).

One ``Runtime`` per conversation, all on the server's event loop. ``apply`` runs a transition and executes
its effects synchronously in order — persistence first (REQ-BED-007) — and starts asynchronous work (LLM
requests, tools) as tasks whose outcomes come back through ``apply``. Cancelling is applied the moment it
arrives; a late outcome of cancelled work carries a stale id and the core drops it (REQ-BED-005).

One job per module:

- ``base``: the hub's settings, the outcome of an event, the shapes the other modules see each other by;
- ``hub``: the conversations of the server, created, found, loaded and restored after a start;
- ``outbox``: text deltas gathered into events, stored in one transaction, then sent (REQ-PROTO-049);
- ``windows``: the context window of a conversation's model, learned from its server (issue 27);
- ``conversation``: one conversation, an event through the core, persisted, then its effects;
- ``effects``: each effect of the core carried out by the handler its type has in a table;
- ``notify``: the core's notifications as phoenix/events;
- ``turn``: the turn's request to the model;
- ``tools``: a tool call run with its context, and what an approval shows of it;
- ``agents``: sub-agents, their time limit and their result.

The runtime reaches the client only through ``server/adapter.py``'s interfaces and imports no adapter.
"""

from ...sandbox.env import clean_environment  # one rule for the server and `sandbox run` (REQ-BASH-021)
from .base import HubConfig, LlmLike, NotFound, Outcome, tool_env
from .conversation import Runtime
from .effects import HANDLERS
from .hub import Hub
from .outbox import MAX_DELTA_EVENT_BYTES, OUTBOX_FLUSH_BYTES
from .tools import describe_tool

__all__ = [
    "HANDLERS",
    "MAX_DELTA_EVENT_BYTES",
    "OUTBOX_FLUSH_BYTES",
    "Hub",
    "HubConfig",
    "LlmLike",
    "NotFound",
    "Outcome",
    "Runtime",
    "clean_environment",
    "describe_tool",
    "tool_env",
]
