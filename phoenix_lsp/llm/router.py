"""One model client for the server: each request goes to the provider its model id names (issue 27).

A bare model id (no slash) or ``anthropic/...`` goes to :class:`LlmClient` exactly as before (a bare id's
request is passed on untouched, byte for byte); ``openai/``, ``ollama/``, ``azure/`` and the providers file's
names go to an :class:`OpenAiClient`, with the prefix split off at the first slash. The answer comes back in
the same form whichever provider gave it, so the core and everything after it are provider-neutral.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import bounded_http
from ..store.secrets import SecretGuard
from . import models as known
from . import sink
from .client import LlmClient, LlmFailure, LlmRequest, LlmSuccess, OnToolInput
from .openai_client import OpenAiClient
from .pricing import Price
from .providers import (
    ANTHROPIC,
    BUILTIN_PROVIDERS,
    MODEL_ID,
    OLLAMA_DEFAULT_HOST,
    PROVIDERS_FILE_VARIABLE,
    ModelFacts,
    Provider,
    Providers,
    how_to_configure,
    split_model,
)

log = logging.getLogger(__name__)

#: The window assumed for a model whose window nobody reported: small, so the continuation starts early rather
#: than too late (REQ-BED-022); the providers file's ``contextWindow`` sets the real one.
UNKNOWN_WINDOW = 32_768
#: How long the default Ollama host may take to answer before it counts as not running.
OLLAMA_PROBE_S = 0.3
FREE = Price(0.0, 0.0, 0.0, 0.0, 0.0)
#: The longest a local server's report of a model (Ollama's /api/show) is waited for.
LEARN_TIMEOUT_S = 2.0
#: After a failed report, how long before the next request asks again (not every turn waits for it).
RELEARN_S = 60.0

#: Told what the sink check replaced in a request, before it is sent (labels and counts, never a value).
OnWithheld = Callable[[Sequence[sink.Finding]], None]


class LlmRouter:
    """Routes each request by its model id's provider; lists and describes every provider's models."""

    def __init__(self, anthropic: LlmClient, providers: Providers, guard: SecretGuard | None = None,
                 idle_timeout_s: float | None = None) -> None:
        self.anthropic = anthropic
        self.providers = providers
        guard = guard if guard is not None else SecretGuard()
        self.guard = guard  # what the sink check looks for: the secrets the whole server knows
        self.clients: dict[str, OpenAiClient] = {
            name: OpenAiClient(p, guard, idle_timeout_s=idle_timeout_s) for name, p in providers.by_name.items()
        }
        if "ollama" not in self.clients:  # the default host: used when it answers (or a model names it)
            default = Provider("ollama", "ollama", providers.ollama_host + "/v1", None, local=True, explicit=False)
            self.clients["ollama"] = OpenAiClient(default, guard, idle_timeout_s=idle_timeout_s)
        self.ollama_found: bool | None = None  # the default host's probe: None until asked
        self._unlearned: dict[str, float] = {}  # model -> when its report last failed (time.monotonic)

    def __repr__(self) -> str:
        return f"LlmRouter(anthropic={self.anthropic!r}, providers={sorted(self.clients)})"

    # ----------------------------------------------------------------------------- the requests

    async def stream(self, request: LlmRequest, on_text: Callable[[str], None],
                     on_withheld: OnWithheld | None = None,
                     on_tool: OnToolInput | None = None) -> LlmSuccess | LlmFailure:
        """Send ``request`` to its model's provider, after the sink check (:meth:`withhold`): every request of the
        server passes here, whichever door its texts came in by. ``on_withheld`` is told what was replaced;
        ``on_tool`` each piece of a tool call's input as it streams (REQ-AGENT-044)."""
        request, findings = self.withhold(request)
        if findings:
            log.warning("a request to %s carried %s: replaced before it was sent (REQ-SEC-012)", request.model,
                        "; ".join(f"{f.label} ({f.count}x)" for f in findings))
            if on_withheld is not None:
                try:
                    on_withheld(findings)
                except Exception:  # telling must never make the request go out unchecked or not at all
                    log.exception("could not report what the sink check withheld")
        provider, upstream = split_model(request.model)
        if provider == ANTHROPIC:
            if upstream != request.model:
                request = replace(request, model=upstream)
            return await self.anthropic.stream(request, on_text, on_tool)
        problem = self.check(request.model)
        if problem is not None:
            return LlmFailure(False, None, problem)
        return await self.clients[provider].stream(request, on_text, upstream, on_tool)

    def withhold(self, request: LlmRequest) -> tuple[LlmRequest, list[sink.Finding]]:
        """The sink check (REQ-SEC-012): ``request`` with every secret the server knows (and, unless the request
        says otherwise, every well-known credential format) replaced in its system prompt, messages and tools;
        the same request when nothing was found."""
        parts = [request.system, request.messages, request.tools]
        fixed, findings = sink.check(parts, self.guard.known(), request.credential_formats)
        if not findings:
            return request, []
        system, messages, tools = fixed
        return replace(request, system=system, messages=messages, tools=tools), findings

    async def prepare(self) -> None:
        """Anthropic's SDK imported and its client made, ahead of its first request (see ``LlmClient.prepare``)."""
        await self.anthropic.prepare()

    async def list_models(self, limit: int = 1000) -> list[known.ListedModel]:
        """Anthropic's models with their lifecycle (the other providers are listed by :meth:`list_provider`)."""
        return await self.anthropic.list_models(limit)

    async def aclose(self) -> None:
        await self.anthropic.aclose()
        for client in self.clients.values():
            await client.aclose()

    # -------------------------------------------------------------------------------- providers

    def configured(self) -> list[str]:
        """The OpenAI-compatible providers to list: configured ones, and Ollama's default host if it answered."""
        return [name for name, c in self.clients.items() if c.provider.explicit or self.ollama_found]

    async def probe_ollama(self) -> bool:
        """Whether Ollama answers at its default host within :data:`OLLAMA_PROBE_S` (asked once)."""
        client = self.clients["ollama"]
        if client.provider.explicit:
            return True
        if self.ollama_found is None:
            httpx2 = bounded_http.httpx()
            try:
                async with httpx2.AsyncClient(timeout=OLLAMA_PROBE_S) as http:
                    answer = await http.get(f"{client.provider.base_url.removesuffix('/v1')}/api/tags")
                self.ollama_found = answer.status_code == 200
            except Exception:
                self.ollama_found = False
        return self.ollama_found

    async def list_provider(self, name: str) -> list[tuple[str, str, int, bool]]:
        """``(provider/id, name, context window, window known)`` of one provider's models; raises on failure."""
        client = self.clients[name]
        listed = await client.list_models()
        return [(f"{name}/{mid}", f"{title} ({name})", window or UNKNOWN_WINDOW, window is not None)
                for mid, title, window in listed]

    def provider_url(self, name: str) -> str:
        """Where provider ``name`` is asked (its base URL)."""
        return self.clients[name].base_url

    def client_for(self, model: str) -> OpenAiClient | None:
        provider, _ = split_model(model)
        return self.clients.get(provider)

    def check(self, model: str) -> str | None:
        """Why ``model`` cannot be used (what to do instead), or None when it can (REQ-MODEL-007)."""
        if len(model) > 200 or not MODEL_ID.match(model):
            return (f"{model[:200]!r} is not a model id: letters, digits and ._:@/[]- only, at most 200 "
                    "characters, such as claude-sonnet-4-6 or openai/gpt-4.1.")
        provider, upstream = split_model(model)
        if not upstream:
            return f"{model!r} names no model after the provider: write {provider}/<model>."
        if provider == ANTHROPIC:
            return None
        if provider not in self.clients:
            names = ", ".join(sorted({*BUILTIN_PROVIDERS, *self.clients}))
            hint = how_to_configure(provider)
            return (f"The provider {provider!r} of {model!r} is not configured: {hint}, then restart the server. "
                    f"Providers: {names}; a model id without a slash is Anthropic's.")
        return None

    def facts(self, model: str) -> ModelFacts:
        client = self.client_for(model)
        if client is None:
            return ModelFacts()
        return client.model_facts(split_model(model)[1])

    def context_window(self, model: str) -> int:
        """The window the continuation thresholds are computed from (REQ-MODEL-008)."""
        provider, upstream = split_model(model)
        if provider == ANTHROPIC:
            return known.context_window(upstream)
        return self.facts(model).context_window or UNKNOWN_WINDOW

    def window_known(self, model: str) -> bool:
        provider, upstream = split_model(model)
        if provider == ANTHROPIC:
            return known.known(upstream) is not None
        return self.facts(model).context_window is not None

    def learnable(self, model: str) -> bool:
        """Whether ``model``'s window is unknown yet its server can report it (an Ollama model)."""
        client = self.client_for(model)
        return client is not None and client.provider.kind == "ollama" and not self.window_known(model)

    async def learn(self, model: str) -> bool:
        """Ask a local server what it knows of ``model`` (Ollama's /api/show), within :data:`LEARN_TIMEOUT_S`,
        at most once per :data:`RELEARN_S` after a failure; never raises. True when its window is now known."""
        if not self.learnable(model):
            return self.window_known(model)
        failed = self._unlearned.get(model)
        if failed is not None and time.monotonic() - failed < RELEARN_S:
            return False
        client = self.client_for(model)
        assert client is not None
        upstream = split_model(model)[1]
        try:
            await asyncio.wait_for(client.ollama_show(upstream), LEARN_TIMEOUT_S)
        except Exception as exc:  # not running, no such model, too slow: the assumed window stays
            log.info("%s: no report of its context window from %s (%s: %s)", model, client.base_url,
                     type(exc).__name__, exc)
        if self.window_known(model):
            self._unlearned.pop(model, None)
            return True
        self._unlearned[model] = time.monotonic()
        return False

    def window_note(self, model: str) -> str:
        """Which context size is in use for ``model`` and where it comes from, for the user (REQ-MODEL-012)."""
        window = self.context_window(model)
        if not self.window_known(model):
            return (f"{model}: context window unknown, {window:,} tokens assumed so that the continuation starts "
                    f"early; set its contextWindow in the providers file ({PROVIDERS_FILE_VARIABLE}).")
        client = self.client_for(model)
        if client is None or client.provider.kind != "ollama":
            return f"{model}: context window {window:,} tokens."
        upstream = split_model(model)[1]
        num_ctx, trained = client.ollama_ctx.get(upstream, (None, None))
        if num_ctx is not None:
            return (f"{model}: context window {window:,} tokens, the num_ctx Ollama runs it with"
                    + (f" (the model itself takes {trained:,})" if trained and trained != window else "") + ".")
        return (f"{model}: context window {window:,} tokens, the model's own length as Ollama reports it. Ollama "
                "runs a model with num_ctx tokens (OLLAMA_CONTEXT_LENGTH, often only a few thousand, unless the "
                "model's Modelfile sets PARAMETER num_ctx) and cuts a longer prompt, which breaks tool calls: set "
                "num_ctx for it if answers ignore the tools.")


class ProviderPrices(Mapping[str, Price]):
    """The price table, by full model id: the ``modelPrices`` setting first, then Anthropic's list prices (for
    a bare or ``anthropic/`` id), the providers file's and the hosted models' prices, nothing for a local
    server's models (cost 0). A model without a price has none ("unknown")."""

    def __init__(self, table: Mapping[str, Price], router: LlmRouter) -> None:
        self.table = dict(table)
        self.router = router

    def __getitem__(self, model: str) -> Price:
        found: Price | None = self.get(model)
        if found is None:
            raise KeyError(model)
        return found

    def get(self, model: str, default: Any = None) -> Any:
        if model in self.table:
            return self.table[model]
        provider, upstream = split_model(model)
        if provider == ANTHROPIC:
            return self.table.get(upstream, default)
        client = self.router.clients.get(provider)
        if client is None:
            return default
        if client.provider.local:
            return FREE
        return client.model_facts(upstream).price or default

    def __iter__(self) -> Iterator[str]:
        return iter(self.table)

    def __len__(self) -> int:
        return len(self.table)


__all__ = ["OLLAMA_DEFAULT_HOST", "UNKNOWN_WINDOW", "LlmRouter", "ProviderPrices"]
