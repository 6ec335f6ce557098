"""Runs conversations: feeds events to the pure core and carries out its effects (REQ-PROTO-029).

One ``Runtime`` per conversation, all on the server's event loop. ``apply`` runs a transition and executes
its effects synchronously in order — persistence first (REQ-BED-007) — and starts asynchronous work (LLM
requests, tools) as tasks whose outcomes come back through ``apply``. Cancelling is applied the moment it
arrives; a late outcome of cancelled work carries a stale id and the core drops it (REQ-BED-005).

Made of parts, not mixins (REQ-PROTO-064): ``Runtime`` and ``Hub`` are plain classes holding their parts as
named attributes; each part owns its state (set in its own ``__init__``) and is passed what it needs, the
conversation as a narrow Protocol of ``base`` and the hub as ``base.HubLike``. One job per module:

- ``base``: the hub's settings, the outcome of an event, the shapes the parts see each other by;
- ``hub``: ``Hub``, the conversations of the server, created, found, loaded and restored after a start, and
  what runs beside them (its tasks, the background commands, the agent route), ended by ``Hub.stop``;
- ``outbox``: ``hub.outbox``, text deltas gathered into events, stored in one transaction, then sent
  (REQ-PROTO-049);
- ``windows``: ``hub.windows``, the context window of a conversation's model, learned from its server;
- ``conversation``: ``Runtime``, one conversation: its state and seq, an event through the core, persisted,
  then its effects;
- ``effects``: each effect of the core handed, by the handler its type has in a table, to the part that owns
  the work;
- ``turn``: ``runtime.turn``, the turn's requests to the model;
- ``tools``: ``runtime.tools``, tool calls run with their context, the patch tool's clipboards, a running
  plan's host calls, and what an approval shows of a call;
- ``agents``: ``runtime.agents``, sub-agents, a sub-agent's time limit and its result;
- ``notify``: ``runtime.notes``, the core's notifications as phoenix/events, and the usage they carry.

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
