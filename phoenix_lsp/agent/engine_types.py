"""What every engine shares with the engine interface (``engine.py``): a host function's type and an engine's
health. A module of its own so that an engine (``monty_engine.py``) and the interface that chooses it do not
import each other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..protocol.base import Wire

#: a host function a script may call: JSON values in, a JSON value out; an exception is a TOOL error
HostFunction = Callable[..., Any]


class EngineHealth(Wire):
    """Whether the engine can run units here, and if not why."""

    engine: str
    ok: bool
    detail: str = ""
