"""Which model answers: the models the API key can use (phoenix/listModels) and the switch between turns
(phoenix/setModel). The one table of known models, windows and prices is ``llm/models.py``."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from typing import Any

from ...core import events
from ...llm import models as known
from ...protocol import params as p
from ...protocol import results as res
from ..errors import invalid
from ..lsp import PhoenixServer
from ..requests import Handler, apply, conversation, hub

log = logging.getLogger(__name__)

#: How long listModels waits for the API before it answers with the built-in list (a request is answered
#: within a second or two: many clients give up on a request after a few seconds).
LIST_TIMEOUT_S = 1.5
#: How long an answer from the API is reused.
LIST_TTL_S = 600.0


class ModelList:
    """The API's model list, kept for ``LIST_TTL_S``; the context windows it reports are used by setModel."""

    def __init__(self) -> None:
        self.models: list[Any] = []  # ModelView
        self.at = 0.0
        self.asking: asyncio.Task[None] | None = None
        self.failure: str | None = None  # why the last call to the API failed

    async def ask(self, h: Any) -> None:
        """Ask the API (importing its SDK off the event loop first, the first time); never raises."""
        self.failure = None
        lister = getattr(h.llm, "list_models", None)
        try:
            if lister is None:
                raise RuntimeError("this server's model client cannot list models")
            await asyncio.to_thread(importlib.import_module, "anthropic")
            listed = await lister()
        except Exception as exc:  # no key, network, HTTP error
            self.failure = str(exc)
            return
        views = [
            res.ModelView(id=mid, name=name or mid, context_window=window or known.context_window(mid))
            for mid, name, window in listed
        ]
        if views:
            self.models, self.at = views, time.monotonic()

    def window(self, model: str, h: Any = None) -> int:
        """The context window of ``model``: the API's figure when it gave one, else its provider's (issue 27),
        else the known table's."""
        for view in self.models:
            if view.id == model:
                return int(view.context_window)
        if h is not None:
            return int(h.window(model))
        return int(known.context_window(model))


class ProviderLists:
    """The other providers' model lists (issue 27), each kept for ``LIST_TTL_S``, asked concurrently."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[float, list[Any], Any]] = {}  # name -> (when, views, listing)
        self.asking: asyncio.Task[None] | None = None

    async def ask(self, h: Any, refresh: bool) -> None:
        router = h.llm
        if not hasattr(router, "configured"):
            return
        def due(names: list[str]) -> list[str]:
            now = time.monotonic()
            return [n for n in names if refresh or n not in self.kept or now - self.kept[n][0] > LIST_TTL_S]

        try:
            await asyncio.to_thread(importlib.import_module, "openai")
        except Exception as exc:  # the SDK missing: every provider says so
            log.warning("listModels: %s", exc)
        configured = due(router.configured())  # while Ollama's default host is probed, the others are asked
        probe = asyncio.ensure_future(router.probe_ollama())
        await asyncio.gather(*(self._one(h, router, name) for name in configured))
        await probe
        await asyncio.gather(*(self._one(h, router, name) for name in due(router.configured())
                               if name not in configured))

    async def _one(self, h: Any, router: Any, name: str) -> None:
        try:
            listed = await router.list_provider(name)
        except Exception as exc:  # no key, network, HTTP error: say which provider and why
            where = router.clients[name].base_url
            reason = (f"the {name} provider's model list at {where} could not be read "
                      f"({h.store.guard.redact(str(exc))[:300]}); its models can still be chosen by id")
            self.kept[name] = (time.monotonic(), [], res.ProviderListing(provider=name, listed=False, reason=reason))
            return
        views = [res.ModelView(id=mid, name=title, context_window=window, provider=name,
                               context_window_known=None if known_window else False)
                 for mid, title, window, known_window in listed]
        self.kept[name] = (time.monotonic(), views, res.ProviderListing(provider=name, listed=True))

    def result(self, h: Any) -> tuple[list[Any], list[Any]]:
        router = h.llm
        names = router.configured() if hasattr(router, "configured") else []
        views: list[Any] = []
        listings: list[Any] = []
        for name in names:
            if name in self.kept:
                views += self.kept[name][1]
                listings.append(self.kept[name][2])
            else:
                listings.append(res.ProviderListing(provider=name, listed=False, reason=(
                    f"the {name} provider did not list its models within {LIST_TIMEOUT_S:g} s (still asking: the "
                    "next call may have its list)")))
        return views, listings


def check_model(ls: PhoenixServer, model: str) -> None:
    """Refuse a model id no provider can answer (REQ-MODEL-007), naming ``model`` and what to do."""
    checker = getattr(hub(ls).llm, "check", None)
    problem = checker(model) if checker is not None else None
    if problem is not None:
        raise invalid("model", f"Invalid params: 'model': {problem}")


def _builtin() -> list[Any]:
    return [res.ModelView(id=m.id, name=m.name, context_window=m.context_window) for m in known.KNOWN_MODELS]


kept = ModelList()  # one server, one hub, one API key
others = ProviderLists()


async def list_models(ls: PhoenixServer, p: p.ListModelsParams) -> res.ListModelsResult:
    h = hub(ls)
    if others.asking is None or others.asking.done():
        others.asking = h.spawn(others.ask(h, p.refresh))
    first = await anthropic_models(h, p)
    with contextlib.suppress(TimeoutError):  # the other providers were asked meanwhile: the same bound
        await asyncio.wait_for(asyncio.shield(others.asking), LIST_TIMEOUT_S)
    views, listings = others.result(h)
    if not listings:  # only Anthropic: the answer is what it was before other providers existed
        return first
    return first.model_copy(update={"models": [*first.models, *views], "providers": listings})


async def anthropic_models(h: Any, p: p.ListModelsParams) -> res.ListModelsResult:
    default = h.config.model
    if kept.models and not p.refresh and time.monotonic() - kept.at < LIST_TTL_S:
        return res.ListModelsResult(models=kept.models, default_model=default, source="api")
    if kept.asking is None or kept.asking.done():
        kept.asking = h.spawn(kept.ask(h))
    try:
        # shielded: an answer later than the client can wait still fills the list for the next call
        await asyncio.wait_for(asyncio.shield(kept.asking), LIST_TIMEOUT_S)
    except TimeoutError:
        reason = (f"the API did not list the models within {LIST_TIMEOUT_S:g} s (still asking: the next "
                  "call may have its list)")
    else:
        if kept.failure is not None:  # no key, network, HTTP error: the built-in list, and say why
            reason = f"the API's model list could not be read ({h.store.guard.redact(kept.failure)[:300]})"
        elif kept.models:
            return res.ListModelsResult(models=kept.models, default_model=default, source="api")
        else:
            reason = "the API listed no models for this key"
    log.info("listModels: built-in list, because %s", reason)
    return res.ListModelsResult(
        models=_builtin(), default_model=default, source="builtin",
        reason=f"The built-in list is shown because {reason}; any model id can still be chosen.",
    )


def set_model(ls: PhoenixServer, p: p.SetModelParams) -> res.SetModelResult:
    runtime = conversation(ls, p.conversation_id)
    check_model(ls, p.model)
    previous = runtime.state.model
    apply(runtime, events.SetModel(p.model, kept.window(p.model, hub(ls))))
    hub(ls).learn_window_soon(runtime)  # an Ollama model nobody listed: its own window, asked meanwhile
    state = runtime.state
    return res.SetModelResult(
        model=state.model, previous=previous, changed=state.model != previous,
        context_window=state.settings.context_window,
    )


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/listModels": list_models,
    "phoenix/setModel": set_model,
}

