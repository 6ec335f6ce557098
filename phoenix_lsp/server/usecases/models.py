"""Which model answers: the models the keys can use (listed with the API's and each provider's answers, or the
built-in list when they are slow or fail), each with its lifecycle, the default model (the newest generally
available Sonnet the API lists, unless the user chose one), and the user's switch between turns (REQ-MODEL-003,
REQ-MODEL-007, REQ-MODEL-014).

Every adapter shares the rules here: a model id no provider can answer is refused (:class:`Invalid` about
``model``), and a model whose context window is too small for the context in use is refused by the core
(:class:`Refused`), with nothing changed. The one table of known models, windows and prices is ``llm/models.py``;
the model router is reached through its port (``adapter.ModelRouter``), every member declared."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import time
from dataclasses import dataclass

from ...core import events
from ...llm import models as known
from ...protocol import results as res
from ..adapter import Conversation, Conversations, ModelRouter
from .errors import Invalid, Refused

log = logging.getLogger(__name__)

#: How long listModels waits for the API before it answers with the built-in list (a request is answered
#: within a second or two: many clients give up on a request after a few seconds).
LIST_TIMEOUT_S = 1.5
#: How long an answer from the API is reused.
LIST_TTL_S = 600.0


class ModelList:
    """The API's model list, kept for ``LIST_TTL_S``: the models offered (retired ones left out), the retired
    ones (refused when named), the newest generally available Sonnet (the default unless the user chose one);
    the context windows it reports are used by a switch."""

    def __init__(self) -> None:
        self.models: list[res.ModelView] = []
        self.retired: dict[str, str] = {}  # id -> the retirement's date (or "") of each retired model listed
        self.newest_sonnet: str | None = None
        self.at = 0.0
        self.asking: asyncio.Task[None] | None = None
        self.failure: str | None = None  # why the last call to the API failed
        #: conversations started on the table's default while the API was asked: moved to the listed default
        #: if they have not sent a message yet (REQ-MODEL-004)
        self.waiting: list[tuple[Conversations, Conversation]] = []

    async def ask(self, conversations: Conversations) -> None:
        """Ask the API (its SDK imported and its client made off the event loop first, the first time); never
        raises. When it answers and the user chose no model, its newest generally available Sonnet becomes the
        default."""
        self.failure = None
        try:
            await conversations.llm.prepare()
            listed = await conversations.llm.list_models()
        except Exception as exc:  # no key, network, HTTP error
            self.failure = str(exc)
            return
        views = [_view(m) for m in listed if m.lifecycle != "retired"]
        if not views:
            return
        self.models, self.at = views, time.monotonic()
        self.retired = {m.id: m.retires_at or "" for m in listed if m.lifecycle == "retired"}
        self.newest_sonnet = known.newest_sonnet(listed)
        config = conversations.config
        waiting, self.waiting = self.waiting, []
        if not config.model_chosen and self.newest_sonnet and self.newest_sonnet != config.model:
            log.info("default model: %s, the newest generally available Sonnet the Models API lists (was %s)",
                     self.newest_sonnet, config.model)
            previous, config.model = config.model, self.newest_sonnet
            for owner, conversation in waiting:
                _move_to_default(owner, conversation, previous, self.newest_sonnet)

    def window(self, model: str, router: ModelRouter) -> int:
        """The context window of ``model``: the API's figure when it gave one, else its provider's (issue 27),
        else the known table's."""
        for view in self.models:
            if view.id == model:
                return int(view.context_window)
        return int(router.context_window(model))


def _view(m: known.ListedModel) -> res.ModelView:
    """A listed Anthropic model as the clients get it; the table fills a date the API left out."""
    table = known.known(m.id)
    retires = m.retires_at or (table.retires_at if table is not None and m.lifecycle == "deprecated" else None)
    return res.ModelView(id=m.id, name=m.name or m.id, context_window=m.context_window or known.context_window(m.id),
                         lifecycle=m.lifecycle, deprecated_at=m.deprecated_at, retires_at=retires)


def prefetch(conversations: Conversations, started: Conversation | None = None) -> None:
    """Ask the Models API in the background, once, when the user chose no model (REQ-MODEL-004): the
    conversations created once it has answered start on the newest generally available Sonnet, and ``started``
    (a conversation just started on the table's default) moves to it if it has sent no message by then. Called
    when a conversation starts (the SDK is being warmed up then anyway), not at start-up."""
    if conversations.config.model_chosen or kept.models:
        return
    if started is not None and len(kept.waiting) < 100:
        kept.waiting.append((conversations, started))
    if kept.asking is None or (kept.asking.done() and kept.failure is not None):  # asked once, or after a failure
        kept.asking = conversations.spawn(kept.ask(conversations))


async def default_settled(conversations: Conversations, timeout: float = LIST_TIMEOUT_S) -> None:
    """Wait, at most ``timeout`` seconds, for the Models API to name the default (REQ-MODEL-004), for a client
    whose first message leaves at once (a headless run), so that its new conversation starts on the listed default
    rather than the table's; never raises (on no answer the table's default stays).

    The SDK's import and its client are made first, without a bound: the message's own request needs them in
    any case, and they are our CPU, not the API's answer (a second or two, many times that on a loaded
    machine, where they alone outlasted the bound). ``timeout`` bounds the API's answer."""
    if conversations.config.model_chosen or kept.models:
        return
    await conversations.llm.prepare()
    prefetch(conversations)
    asking = kept.asking
    if asking is None or asking.done():
        return
    with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(asking), timeout)


def _move_to_default(conversations: Conversations, conversation: Conversation, previous: str, model: str) -> None:
    """A conversation started on the table's default moves to the listed default, through the core (the
    clients get ``modelChanged``), when it still uses that model and has sent no message; never raises."""
    state = conversation.state
    if state.model != previous or state.history or conversation.busy:
        return
    try:
        choose_model(conversations, conversation, model)
    except Exception as exc:  # refused (a sub-agent, a status that takes no switch): it keeps its model
        log.info("conversation %s keeps %s: %s", conversation.id[:8], previous, exc)


class ProviderLists:
    """The other providers' model lists (issue 27), each kept for ``LIST_TTL_S``, asked concurrently."""

    def __init__(self) -> None:
        self.kept: dict[str, tuple[float, list[res.ModelView], res.ProviderListing]] = {}
        self.asking: asyncio.Task[None] | None = None

    async def ask(self, conversations: Conversations, refresh: bool) -> None:
        router = conversations.llm

        def due(names: list[str]) -> list[str]:
            now = time.monotonic()
            return [n for n in names if refresh or n not in self.kept or now - self.kept[n][0] > LIST_TTL_S]

        try:
            await asyncio.to_thread(importlib.import_module, "openai")
        except Exception as exc:  # the SDK missing: every provider says so
            log.warning("listModels: %s", exc)
        configured = due(router.configured())  # while Ollama's default host is probed, the others are asked
        probe = asyncio.ensure_future(router.probe_ollama())
        await asyncio.gather(*(self._one(conversations, name) for name in configured))
        await probe
        await asyncio.gather(*(self._one(conversations, name) for name in due(router.configured())
                               if name not in configured))

    async def _one(self, conversations: Conversations, name: str) -> None:
        router = conversations.llm
        try:
            listed = await router.list_provider(name)
        except Exception as exc:  # no key, network, HTTP error: say which provider and why
            reason = (f"the {name} provider's model list at {router.provider_url(name)} could not be read "
                      f"({conversations.store.guard.redact(str(exc))[:300]}); its models can still be chosen by id")
            self.kept[name] = (time.monotonic(), [], res.ProviderListing(provider=name, listed=False, reason=reason))
            return
        views = [res.ModelView(id=mid, name=title, context_window=window, provider=name,
                               context_window_known=None if known_window else False)
                 for mid, title, window, known_window in listed]
        self.kept[name] = (time.monotonic(), views, res.ProviderListing(provider=name, listed=True))

    def result(self, router: ModelRouter) -> tuple[list[res.ModelView], list[res.ProviderListing]]:
        views: list[res.ModelView] = []
        listings: list[res.ProviderListing] = []
        for name in router.configured():
            if name in self.kept:
                views += self.kept[name][1]
                listings.append(self.kept[name][2])
            else:
                listings.append(res.ProviderListing(provider=name, listed=False, reason=(
                    f"the {name} provider did not list its models within {LIST_TIMEOUT_S:g} s (still asking: the "
                    "next call may have its list)")))
        return views, listings


kept = ModelList()  # one server, one hub, one set of keys
others = ProviderLists()


def _builtin() -> list[res.ModelView]:
    """The table's models, with the lifecycle the table records (the fallback: issue 38)."""
    return [res.ModelView(id=m.id, name=m.name, context_window=m.context_window, lifecycle=m.lifecycle,
                          retires_at=m.retires_at) for m in known.KNOWN_MODELS]


async def list_models(conversations: Conversations, refresh: bool = False) -> res.ListModelsResult:
    """Every model the keys can use: Anthropic's (the API's list, or the built-in one saying why) and each
    configured provider's, each asked at most ``LIST_TIMEOUT_S`` (a slower answer fills the next call's list)."""
    if others.asking is None or others.asking.done():
        others.asking = conversations.spawn(others.ask(conversations, refresh))
    first = await anthropic_models(conversations, refresh)
    with contextlib.suppress(TimeoutError):  # the other providers were asked meanwhile: the same bound
        await asyncio.wait_for(asyncio.shield(others.asking), LIST_TIMEOUT_S)
    views, listings = others.result(conversations.llm)
    if not listings:  # only Anthropic: the answer is what it was before other providers existed
        return first
    return first.model_copy(update={"models": [*first.models, *views], "providers": listings})


async def anthropic_models(conversations: Conversations, refresh: bool) -> res.ListModelsResult:
    default = conversations.config.model
    if kept.models and not refresh and time.monotonic() - kept.at < LIST_TTL_S:
        if kept.asking is not None and not kept.asking.done():  # a refresh under way: its answer is the newer
            with contextlib.suppress(TimeoutError):  # within the same bound; else the kept list, as it is
                await asyncio.wait_for(asyncio.shield(kept.asking), LIST_TIMEOUT_S)
        return res.ListModelsResult(models=kept.models, default_model=default, source="api")
    if kept.asking is None or kept.asking.done():
        kept.asking = conversations.spawn(kept.ask(conversations))
    try:
        # shielded: an answer later than the client can wait still fills the list for the next call
        await asyncio.wait_for(asyncio.shield(kept.asking), LIST_TIMEOUT_S)
    except TimeoutError:
        reason = (f"the API did not list the models within {LIST_TIMEOUT_S:g} s (still asking: the next "
                  "call may have its list)")
    else:
        if kept.failure is not None:  # no key, network, HTTP error: the built-in list, and say why
            reason = f"the API's model list could not be read ({conversations.store.guard.redact(kept.failure)[:300]})"
        elif kept.models:
            return res.ListModelsResult(models=kept.models, default_model=default, source="api")
        else:
            reason = "the API listed no models for this key"
    log.info("listModels: built-in list, because %s", reason)
    return res.ListModelsResult(
        models=_builtin(), default_model=default, source="builtin",
        reason=f"The built-in list is shown because {reason}; any model id can still be chosen.",
    )


def check_model(router: ModelRouter, model: str) -> None:
    """Refuse a model id no provider can answer (REQ-MODEL-007), or one the Models API lists as retired
    (REQ-MODEL-014): :class:`Invalid` about ``model`` says why and what to do."""
    problem = router.check(model)
    if problem is not None:
        raise Invalid("model", problem)
    if model in kept.retired:
        when = f" on {kept.retired[model]}" if kept.retired[model] else ""
        instead = kept.newest_sonnet or known.DEFAULT_MODEL
        raise Invalid("model", f"{model} was retired{when}: the API refuses every request that names it, so a "
                      f"conversation cannot use it. Choose a model phoenix/listModels offers, such as {instead}.")


@dataclass(frozen=True)
class ModelChosen:
    """The model that answers from the next turn, the one before, and the context window now in use."""

    model: str
    previous: str
    context_window: int

    @property
    def changed(self) -> bool:
        return self.model != self.previous


def choose_model(conversations: Conversations, conversation: Conversation, model: str) -> ModelChosen:
    """The user's switch of model between turns: a model no provider can answer is :class:`Invalid`; one whose
    window is too small for the context in use is :class:`Refused` by the core (REQ-MODEL-003); nothing is
    changed then. An Ollama model nobody listed has its window asked for meanwhile."""
    check_model(conversations.llm, model)
    previous = conversation.state.model
    outcome = conversation.apply(events.SetModel(model, kept.window(model, conversations.llm)))
    if outcome.reject is not None:
        raise Refused(outcome.reject, conversation.state.status.kind)
    conversations.learn_window_soon(conversation)
    state = conversation.state
    return ModelChosen(model=state.model, previous=previous, context_window=state.settings.context_window)
