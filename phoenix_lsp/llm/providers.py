"""Which provider answers a model id, and how to reach it (issue 27).

A model id is ``provider/model``; an id without a slash is Anthropic's, as before (stored conversations keep
working). The prefix is split off at the FIRST slash only (``openai/meta-llama/x`` sends ``meta-llama/x``).

Built-in providers, configured by the variables their own SDKs read:

- ``anthropic``: the Messages API (``ANTHROPIC_API_KEY``, ``ANTHROPIC_BASE_URL``), always present;
- ``openai``: any OpenAI-compatible Chat Completions endpoint (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``),
  configured when either is set;
- ``ollama``: Ollama's OpenAI-compatible API under ``/v1`` at ``OLLAMA_HOST`` (``host:port`` or a URL,
  default ``http://127.0.0.1:11434``), no key; ``OPENAI_BASE_URL`` never applies to it;
- ``azure``: Azure OpenAI (``AZURE_OPENAI_ENDPOINT``, ``AZURE_OPENAI_API_KEY``, ``OPENAI_API_VERSION``).

The providers file (``PHOENIX_PROVIDERS``, JSON) adds OpenAI-compatible endpoints by name::

    {"providers": {"router": {"baseUrl": "https://llm.example.com/v1", "apiKey": "env:ROUTER_KEY",
                              "models": {"some/model": {"contextWindow": 131072, "images": false,
                                                        "price": {"input": 0.5, "output": 1.5}}}}}}

``apiKey`` is a reference (``env:NAME``), never the key itself. An invalid file is reported naming the file
and the field; the built-in providers keep working.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .. import confined, safe_json
from .pricing import Price

#: the most a providers file may hold (a handful of endpoints and their models)
MAX_FILE_BYTES = 1 << 20

ANTHROPIC = "anthropic"
#: The built-in providers' names (each a ``Provider.kind`` too).
Kind = Literal["anthropic", "openai", "ollama", "azure"]
#: What configures each built-in provider, in the words errors and ``doctor`` use ("set ..."). The one table of
#: the built-in providers (REQ-MODEL-013): the router's message for an unconfigured provider, ``doctor`` and
#: the providers file's reserved names read it; a test keeps it equal to ``Kind``.
BUILTINS: dict[str, str] = {
    "anthropic": "ANTHROPIC_API_KEY",
    "openai": "OPENAI_API_KEY or OPENAI_BASE_URL",
    "ollama": "OLLAMA_HOST",
    "azure": "AZURE_OPENAI_ENDPOINT and AZURE_OPENAI_API_KEY",
}
BUILTIN_PROVIDERS: tuple[str, ...] = tuple(BUILTINS)
#: The variable that names the providers file.
PROVIDERS_FILE_VARIABLE = "PHOENIX_PROVIDERS"
OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"
#: A model id: letters, digits and ``._:@/[]-``, at most 200 characters (REQ-MODEL-003).
MODEL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/\[\]-]*$")
_NAME = re.compile(r"^[a-z][a-z0-9-]{0,39}$")


def how_to_configure(provider: str) -> str:
    """What to do to use ``provider``: the variables of a built-in one, else the providers file."""
    setting = BUILTINS.get(provider)
    return f"set {setting}" if setting else f"add it to the providers file ({PROVIDERS_FILE_VARIABLE})"


def split_model(model: str) -> tuple[str, str]:
    """``(provider, upstream id)``: the prefix before the first slash, or ``anthropic`` for a bare id."""
    provider, slash, rest = model.partition("/")
    if not slash:
        return ANTHROPIC, model
    return provider, rest


@dataclass(frozen=True)
class ModelFacts:
    """What the providers file (or the table of hosted models) says of one model."""

    context_window: int | None = None
    images: bool | None = None
    price: Price | None = None


@dataclass(frozen=True)
class Provider:
    """One OpenAI-compatible provider: where it is, which variable holds its key, what it knows of its models.

    ``key_variable`` is named in every error about the key (REQ-MODEL-010); ``api_key`` is the key itself,
    never shown (its repr says only whether it is set)."""

    name: str
    kind: Kind
    base_url: str
    key_variable: str | None
    api_key: str | None = field(default=None, repr=False)
    api_version: str | None = None  # azure
    models: Mapping[str, ModelFacts] = field(default_factory=dict)
    local: bool = False  # a local server: tokens cost nothing
    explicit: bool = True  # configured by a variable or the file (ollama's default host is not)

    def describe(self) -> str:
        """One line for doctor and logs: where it is and whether its key is set (never the key)."""
        key = "" if self.key_variable is None else f", {self.key_variable} {'set' if self.api_key else 'NOT set'}"
        return f"{self.name}: {self.kind} at {self.base_url}{key}"


@dataclass(frozen=True)
class Providers:
    """The configured OpenAI-compatible providers by name, and what was wrong with the configuration."""

    by_name: Mapping[str, Provider]
    problems: tuple[str, ...] = ()
    ollama_host: str = OLLAMA_DEFAULT_HOST  # asked by the default-host probe when OLLAMA_HOST is not set

    def known_names(self) -> list[str]:
        return [ANTHROPIC, *self.by_name]

    def secrets(self) -> list[str]:
        return [p.api_key for p in self.by_name.values() if p.api_key]


def ollama_url(host: str) -> str:
    """``OLLAMA_HOST`` as a URL: ``host:port``, ``:port`` or a URL (without its ``/v1``)."""
    host = host.strip().rstrip("/")
    if "://" not in host:
        host = "http://" + (("127.0.0.1" + host) if host.startswith(":") else host)
    if host.endswith("/v1"):
        host = host[:-3]
    scheme, _, rest = host.partition("://")
    if ":" not in rest.split("/")[0]:
        host = f"{scheme}://{rest.split('/')[0]}:11434" + rest[len(rest.split("/")[0]):]
    return host


def load(environ: Mapping[str, str] | None = None, providers_file: Path | None = None) -> Providers:
    """The providers configured by the environment and the providers file (never raises)."""
    env = os.environ if environ is None else environ
    found: dict[str, Provider] = {}
    problems: list[str] = []
    key = (env.get("OPENAI_API_KEY") or "").strip() or None
    base = (env.get("OPENAI_BASE_URL") or "").strip()
    if key or base:
        found["openai"] = Provider("openai", "openai", base.rstrip("/") or "https://api.openai.com/v1",
                                   "OPENAI_API_KEY", key)
    host = (env.get("OLLAMA_HOST") or "").strip()
    ollama_host = ollama_url(host) if host else OLLAMA_DEFAULT_HOST
    if host:
        found["ollama"] = Provider("ollama", "ollama", ollama_host + "/v1", None, None, local=True)
    endpoint = (env.get("AZURE_OPENAI_ENDPOINT") or "").strip()
    if endpoint:
        found["azure"] = Provider("azure", "azure", endpoint.rstrip("/"), "AZURE_OPENAI_API_KEY",
                                  (env.get("AZURE_OPENAI_API_KEY") or "").strip() or None,
                                  api_version=(env.get("OPENAI_API_VERSION") or "").strip() or None)
    path = providers_file
    if path is None and (env.get(PROVIDERS_FILE_VARIABLE) or "").strip():
        path = Path(env[PROVIDERS_FILE_VARIABLE].strip())
    if path is not None:
        extra, problem = read_file(path, env)
        if problem is not None:
            problems.append(problem)
        for name, provider in extra.items():
            found[name] = provider
    return Providers(found, tuple(problems), ollama_host)


def read_file(path: Path, environ: Mapping[str, str]) -> tuple[dict[str, Provider], str | None]:
    """The providers of the file, or none and a message naming the file, the field and what to do."""

    def bad(where: str, why: str) -> tuple[dict[str, Provider], str]:
        return {}, (f"phoenix-lsp: the providers file {path} ({PROVIDERS_FILE_VARIABLE}) is not used: {where}: "
                    f"{why}. Fix the file and restart the server; the other providers keep working.")

    # The user chose this path (a setting), so symlinks in it are theirs to follow: it is resolved first, then
    # read by the confined reader (regular file, non-blocking, capped on the bytes read: REQ-READ-001/003).
    real = Path(os.path.realpath(path))
    try:
        data = safe_json.loads(confined.read(real, [real.parent], max_bytes=MAX_FILE_BYTES).data.decode("utf-8"))
    except confined.ReadRefused as refused:
        return bad("the file", f"cannot be read ({refused.cause or refused.reason.replace('_', ' ')})")
    except ValueError as exc:  # not UTF-8, not JSON, or nested too deep
        return bad("the file", f"is not valid JSON ({exc})")
    if not isinstance(data, dict) or not isinstance(data.get("providers"), dict):
        return bad("providers", 'the file must be a JSON object with a "providers" object')
    out: dict[str, Provider] = {}
    for name, entry in data["providers"].items():
        where = f"providers.{name}"
        if not isinstance(name, str) or not _NAME.match(name) or name in BUILTIN_PROVIDERS:
            return bad(where, "a provider's name is lower-case letters, digits and '-' (at most 40), and not "
                       f"one of the built-in names {', '.join(BUILTIN_PROVIDERS)}")
        if not isinstance(entry, dict):
            return bad(where, "must be an object with baseUrl, apiKey and models")
        unknown = sorted(set(entry) - {"baseUrl", "apiKey", "models", "local"})
        if unknown:
            return bad(f"{where}.{unknown[0]}", "is not a field of a provider (baseUrl, apiKey, models, local)")
        url = entry.get("baseUrl")
        if not isinstance(url, str) or not re.match(r"^https?://[^\s/]+", url):
            return bad(f"{where}.baseUrl", "must be an http:// or https:// URL such as https://llm.example.com/v1")
        reference = entry.get("apiKey")
        api_key: str | None = None
        variable: str | None = None
        if reference is not None:
            if not isinstance(reference, str) or not re.match(r"^env:[A-Za-z_][A-Za-z0-9_]*$", reference):
                return bad(f"{where}.apiKey", "must be a reference to the variable holding the key, such as "
                           "env:ROUTER_API_KEY, never the key itself")
            variable = reference[4:]
            api_key = (environ.get(variable) or "").strip() or None
        local = entry.get("local", False)
        if not isinstance(local, bool):
            return bad(f"{where}.local", "must be true or false")
        models, problem = _model_facts(entry.get("models", {}), f"{where}.models")
        if problem is not None:
            return bad(*problem)
        out[name] = Provider(name, "openai", url.rstrip("/"), variable, api_key, models=models, local=local)
    return out, None


def _model_facts(raw: Any, where: str) -> tuple[dict[str, ModelFacts], tuple[str, str] | None]:
    if not isinstance(raw, dict):
        return {}, (where, "must be an object: model id -> {contextWindow, images, price}")
    out: dict[str, ModelFacts] = {}
    for model, facts in raw.items():
        here = f"{where}.{model}"
        if not isinstance(facts, dict):
            return {}, (here, "must be an object such as {\"contextWindow\": 131072}")
        window = facts.get("contextWindow")
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1024):
            return {}, (f"{here}.contextWindow", "must be a whole number of tokens, at least 1024")
        images = facts.get("images")
        if images is not None and not isinstance(images, bool):
            return {}, (f"{here}.images", "must be true or false")
        price = facts.get("price")
        parsed: Price | None = None
        if price is not None:
            ok = isinstance(price, dict) and all(
                isinstance(price.get(k), int | float) and not isinstance(price.get(k), bool) and price[k] >= 0
                for k in ("input", "output"))
            if not ok:
                return {}, (f"{here}.price", 'must be {"input": USD, "output": USD} per million tokens')
            parsed = Price(float(price["input"]), float(price["output"]),
                           cache_read=float(price["cachedInput"]) if isinstance(price.get("cachedInput"),
                                                                                   int | float) else None)
        out[str(model)] = ModelFacts(window, images, parsed)
    return out, None


#: Hosted OpenAI models the product knows: context window and list price (USD per million tokens; a cached
#: input token costs what ``cache_read`` says). Facts from the provider's model pages.
OPENAI_MODELS: Mapping[str, ModelFacts] = {
    "gpt-5": ModelFacts(400_000, True, Price(1.25, 10.0, cache_read=0.125)),
    "gpt-5-mini": ModelFacts(400_000, True, Price(0.25, 2.0, cache_read=0.025)),
    "gpt-5-nano": ModelFacts(400_000, True, Price(0.05, 0.4, cache_read=0.005)),
    "gpt-4.1": ModelFacts(1_047_576, True, Price(2.0, 8.0, cache_read=0.5)),
    "gpt-4.1-mini": ModelFacts(1_047_576, True, Price(0.4, 1.6, cache_read=0.1)),
    "gpt-4.1-nano": ModelFacts(1_047_576, True, Price(0.1, 0.4, cache_read=0.025)),
    "gpt-4o": ModelFacts(128_000, True, Price(2.5, 10.0, cache_read=1.25)),
    "gpt-4o-mini": ModelFacts(128_000, True, Price(0.15, 0.6, cache_read=0.075)),
    "o3": ModelFacts(200_000, True, Price(2.0, 8.0, cache_read=0.5)),
    "o4-mini": ModelFacts(200_000, True, Price(1.1, 4.4, cache_read=0.275)),
}


def hosted_facts(provider: Provider | None, upstream: str) -> ModelFacts:
    """What is known of a model before asking its server: the providers file, else the hosted table."""
    if provider is not None and upstream in provider.models:
        return provider.models[upstream]
    if provider is None or provider.kind in ("openai", "azure"):
        return OPENAI_MODELS.get(upstream, ModelFacts())
    return ModelFacts()
