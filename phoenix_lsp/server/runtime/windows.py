"""The context window of a conversation's model (issue 27): learned from the model's server in the background
when nobody has reported it yet, and waited for before the first request is measured against it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from ...core.events import WindowReported
from ..adapter import Client, Modelled
from .base import LlmLike

log = logging.getLogger(__name__)


class Windows:
    """The hub's context windows: the model client to ask, the client to tell, and the lookups under way."""

    def __init__(self, llm: LlmLike, sink: Client,
                 spawn: Callable[[Coroutine[Any, Any, Any]], asyncio.Task[Any]]) -> None:
        self.llm = llm
        self.sink = sink
        self.spawn = spawn  # the hub's: a lookup is one of its background tasks, cancelled at its stop
        self.window_lookups: dict[str, asyncio.Task[None]] = {}  # conversation id -> its window being asked

    def learn_window_soon(self, runtime: Modelled) -> None:
        """Ask the model's server for its context window in the background, when nobody has reported it yet
        (an Ollama model chosen before any listModels): the request that created the conversation is answered
        at once, and the first turn waits for the answer (:meth:`learn_window`), which the core then takes."""
        if not self.llm.learnable(runtime.state.model) or runtime.id in self.window_lookups:
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop (a synchronous caller): the first turn asks
            return
        task = self.spawn(self._learn_window(runtime, runtime.state.model))
        self.window_lookups[runtime.id] = task
        task.add_done_callback(lambda _: self.window_lookups.pop(runtime.id, None))

    async def learn_window(self, runtime: Modelled) -> None:
        """Before a request: the window of the conversation's model, asked now if it is still unknown (at most
        the router's bound), so the request's answer is measured against the right window."""
        pending = self.window_lookups.get(runtime.id)
        if pending is not None:  # asked since the conversation was created (or switched): that answer first
            await asyncio.shield(pending)
        if self.llm.learnable(runtime.state.model):
            await self._learn_window(runtime, runtime.state.model)

    async def _learn_window(self, runtime: Modelled, model: str) -> None:
        if not await self.llm.learn(model):
            return
        window = int(self.llm.context_window(model))
        if runtime.state.model == model and window != runtime.state.settings.context_window:
            note = self.llm.window_note(model)
            log.info("%s", note)
            self.sink.log_to_client(note)
            runtime.apply(WindowReported(model, window))  # the core decides (a switch may have come first)

    def window(self, model: str) -> int:
        """The context window of ``model``: its provider's figure (issue 27), else the table of known models."""
        return int(self.llm.context_window(model))
