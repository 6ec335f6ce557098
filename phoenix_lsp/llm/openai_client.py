"""OpenAI-compatible Chat Completions: the same contract as :class:`~phoenix_lsp.llm.client.LlmClient` (issue 27).

One request in (an :class:`LlmRequest`, built in the Messages API's form like every request), one
:class:`LlmSuccess` or :class:`LlmFailure` out, in the Messages API's form too, so the core sees the same
events whichever provider answered:

- the request is translated: the system prompt becomes a ``system`` message, tool definitions ``function``
  tools, ``tool_use`` blocks an assistant's ``tool_calls`` (arguments as compact JSON), ``tool_result`` blocks
  ``tool`` messages with the matching ``tool_call_id`` (placed right after the assistant's calls, in order),
  images ``image_url`` data URLs (a tool message holds text only, so a tool result's images follow the tool
  messages in one user message, each call's after a line naming it); ``cache_control`` and every other
  Anthropic-only field is dropped; ``max_completion_tokens`` bounds the answer. The translation is a pure
  function of the request, so a conversation's prefix stays byte-stable and the provider's automatic prefix
  caching works;
- tool-call ids are kept when they are at most 40 characters of ``[A-Za-z0-9_-]`` (the API's limit), else
  replaced by a stable digest, the same for a call and its result;
- the answer streams as ``choices[0].delta``: text pieces go to ``on_text`` as they arrive; ``tool_calls``
  fragments are joined per ``index`` (the id and name come first, the arguments in pieces; a server may also
  send each call whole); several calls in one answer are kept in order; arguments that are not a JSON object
  give the block ``input == {}`` and ``TOOL_INPUT_ERROR_KEY``, as with Anthropic;
- ``finish_reason`` maps to Anthropic's stop reasons (``tool_calls`` -> ``tool_use``, ``length`` ->
  ``max_tokens``, ``stop`` -> ``end_turn``); the usage chunk (``stream_options.include_usage``) gives
  ``input_tokens = prompt_tokens - cached_tokens``, ``cache_read_input_tokens = cached_tokens``,
  ``output_tokens = completion_tokens``;
- the SDK's own retries are off: 429/5xx come back retryable with the ``retry-after`` the server asked for; a
  401 names the variable that holds the key (``OPENAI_API_KEY``, ``AZURE_OPENAI_API_KEY``, or the providers
  file's reference); an unreachable server is named with its address;
- the key never appears in any message, log line or repr produced here (the shared :class:`SecretGuard`).

``openai`` is imported lazily (first request), like ``anthropic``.

Over 300 lines: the translation to Chat Completions, the chunk accumulator and the client's error classification are
one contract (the Messages API's form in and out) and change together.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import bounded_http, limits
from ..store.secrets import SecretGuard
from .client import (
    _SHARE_S,
    TOOL_INPUT_ERROR_KEY,
    LlmFailure,
    LlmRequest,
    LlmSuccess,
    OnToolInput,
    _CallbackError,
    _Stalled,
    _StreamError,
    _strip_url_credentials,
    is_retryable_status,
    retry_after_ms,
    tell_tool_input,
)
from .providers import ModelFacts, Provider, hosted_facts

if TYPE_CHECKING:
    from openai import AsyncOpenAI


def _sdk() -> ModuleType:
    """the OpenAI SDK, imported when the first client is made (the first turn's warm-up does it off the loop)."""
    import openai  # lazy: the SDK takes about half a second to import; the server starts without it

    return openai

log = logging.getLogger(__name__)
#: one SDK client is made at a time (two first requests must not make two)
_BUILDING = threading.Lock()

#: The longest tool-call id the Chat Completions API takes.
MAX_CALL_ID = 40
_CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
#: finish_reason -> the Messages API's stop_reason the core knows.
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use", "length": "max_tokens",
                "content_filter": "refusal"}


def call_id(anthropic_id: str) -> str:
    """A tool-call id the Chat Completions API takes: the id itself when it fits, else a stable digest."""
    if _CALL_ID.match(anthropic_id):
        return anthropic_id
    return "call_" + hashlib.sha256(anthropic_id.encode()).hexdigest()[: MAX_CALL_ID - 5]


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def _image_part(block: dict[str, Any]) -> dict[str, Any]:
    source = block.get("source") or {}
    return {"type": "image_url", "image_url": {"url": f"data:{source.get('media_type')};base64,{source.get('data')}"}}


def has_images(request: LlmRequest) -> bool:
    for message in request.messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if block.get("type") == "image":
                return True
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if isinstance(inner, list) and any(b.get("type") == "image" for b in inner):
                return True
    return False


def to_chat(request: LlmRequest, upstream_model: str) -> dict[str, Any]:
    """The Chat Completions request for ``request`` (see the module docstring); a pure function."""
    messages: list[dict[str, Any]] = []
    system = _text_of(request.system) if request.system else ""
    if system:
        messages.append({"role": "system", "content": system})
    for message in request.messages:
        content = message.get("content")
        blocks: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
        )
        if message["role"] == "assistant":
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [
                {"id": call_id(str(b["id"])), "type": "function",
                 "function": {"name": b["name"], "arguments": _dumps(b.get("input") or {})}}
                for b in blocks if b.get("type") == "tool_use"
            ]
            out: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                out["tool_calls"] = calls
            messages.append(out)
            continue
        later_images: list[dict[str, Any]] = []
        for block in blocks:  # tool results first: they must follow the assistant's calls directly
            if block.get("type") != "tool_result":
                continue
            result = block.get("content")
            text = _text_of(result) if result is not None else ""
            if isinstance(result, list) and any(b.get("type") == "image" for b in result):
                # a tool message holds text only (Chat Completions): its images follow in a user message, named
                later_images.append({"type": "text", "text": f"The images the tool call "
                                     f"{call_id(str(block['tool_use_id']))} returned:"})
                later_images += [_image_part(b) for b in result if b.get("type") == "image"]
            if block.get("is_error") and not text.startswith("Error"):
                text = f"Error: {text}"
            messages.append({"role": "tool", "tool_call_id": call_id(str(block["tool_use_id"])), "content": text})
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if block.get("type") == "text":
                parts.append({"type": "text", "text": block.get("text", "")})
            elif block.get("type") == "image":
                parts.append(_image_part(block))
        parts += later_images
        if not parts:
            continue
        if all(p["type"] == "text" for p in parts):
            messages.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts)})
        else:
            messages.append({"role": "user", "content": parts})
    kwargs: dict[str, Any] = {
        "model": upstream_model,
        "messages": messages,
        "max_completion_tokens": request.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        kwargs["tools"] = [
            {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""),
                                              "parameters": t.get("input_schema", {"type": "object"})}}
            for t in request.tools
        ]
    return kwargs


class _MidStreamError(Exception):
    """An error object in the stream, after a 200."""


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    size: int = 0  # characters of the arguments so far, kept only up to the tool input's bound


@dataclass
class ChunkAccumulator:
    """Builds the Messages-API-shaped answer from Chat Completions chunks."""

    texts: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)
    chunks: int = 0

    def feed(self, chunk: dict[str, Any], on_text: Callable[[str], None], on_tool: OnToolInput | None = None) -> None:
        """One decoded ``data:`` chunk (plain JSON: building the SDK's typed chunk doubled the CPU per delta)."""
        self.chunks += 1
        if chunk.get("error") is not None:
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            raise _MidStreamError(str(message or "an error occurred during streaming"))
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            prompt = int(usage.get("prompt_tokens") or 0)
            details = usage.get("prompt_tokens_details")
            cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
            self.usage = {"input_tokens": max(prompt - cached, 0), "cache_read_input_tokens": cached,
                          "output_tokens": int(usage.get("completion_tokens") or 0)}
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta:
                text = delta.get("content")
                if text:
                    self.texts.append(text)
                    try:
                        on_text(text)
                    except Exception as exc:
                        raise _CallbackError(exc) from exc
                for piece in delta.get("tool_calls") or ():
                    index = piece.get("index")
                    call = self.calls.setdefault(index if isinstance(index, int) else len(self.calls), _Call())
                    if piece.get("id"):
                        call.id = piece["id"]
                    function = piece.get("function")
                    if function:
                        if function.get("name"):
                            call.name = function["name"]
                        if function.get("arguments"):
                            call.size += len(function["arguments"])
                            if call.size <= limits.TOOL_INPUT.max_bytes:  # REQ-PROTO-063
                                call.arguments.append(function["arguments"])
                                tell_tool_input(on_tool, call.id, call.name, function["arguments"])
            if choice.get("finish_reason") is not None:
                self.finish_reason = choice["finish_reason"]

    def result(self) -> LlmSuccess:
        if self.finish_reason is None:
            raise _StreamError("the stream ended before a finish_reason (connection cut mid-answer)")
        content: list[dict[str, Any]] = []
        text = "".join(self.texts)
        if text:
            content.append({"type": "text", "text": text})
        for index in sorted(self.calls):
            call = self.calls[index]
            block: dict[str, Any] = {"type": "tool_use", "id": call.id or f"call_{index}", "name": call.name,
                                     "input": {}}
            raw = "".join(call.arguments)
            if call.size > limits.TOOL_INPUT.max_bytes:
                block[TOOL_INPUT_ERROR_KEY] = (limits.TOOL_INPUT.too_long(call.size, "characters")
                                               + ". Send a smaller input (e.g. write the file in parts)")
            elif raw.strip():
                try:
                    value = limits.decode(raw, limits.TOOL_INPUT)
                except ValueError as exc:  # not JSON, or over its bounds: a RecursionError no more (REQ-PROTO-063)
                    block[TOOL_INPUT_ERROR_KEY] = str(exc)
                else:
                    if isinstance(value, dict):
                        block["input"] = value
                    else:
                        kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
                        block[TOOL_INPUT_ERROR_KEY] = (f"expected a JSON object, got "
                                                       f"{kinds.get(type(value), 'a number')}: {raw.strip()[:60]}")
            content.append(block)
        stop = STOP_REASONS.get(self.finish_reason, "end_turn")
        if self.calls and stop == "end_turn":  # some servers (Ollama) finish with "stop" after calls
            stop = "tool_use"
        usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                 "cache_read_input_tokens": 0, "cache_write_5m_tokens": 0, "cache_write_1h_tokens": 0}
        usage.update(self.usage)
        return LlmSuccess(content=content, stop_reason=stop, usage=usage)


class OpenAiClient:
    """Streams Chat Completions calls of one provider through the official ``openai`` SDK."""

    def __init__(self, provider: Provider, guard: SecretGuard | None = None, timeout_s: float = 600,
                 idle_timeout_s: float | None = None) -> None:
        self.provider = provider
        self._guard = guard if guard is not None else SecretGuard()
        if provider.api_key:
            self._guard.add_secret(provider.api_key)
        self._timeout_s = timeout_s
        self._idle_s = min(idle_timeout_s, timeout_s) if idle_timeout_s is not None else timeout_s
        self._sdk: AsyncOpenAI | None = None
        self.facts: dict[str, ModelFacts] = {}  # what the server reported of its models (listing, /api/show)
        self.ollama_ctx: dict[str, tuple[int | None, int | None]] = {}  # model -> (num_ctx, its own length)

    def __repr__(self) -> str:
        key = "set" if self.provider.api_key else "missing"
        return f"OpenAiClient(provider={self.provider.name!r}, base_url={self.base_url!r}, api_key={key})"

    @property
    def base_url(self) -> str:
        return _strip_url_credentials(self.provider.base_url)

    def _where(self) -> str:
        if self.provider.kind == "ollama":
            return f"the Ollama server at {self.base_url.removesuffix('/v1')} (OLLAMA_HOST)"
        return f"the {self.provider.name} provider at {self.base_url}"

    def _key_help(self) -> str:
        variable = self.provider.key_variable
        if variable is None:
            return f"The {self.provider.name} provider has no key configured; add an apiKey reference for it."
        return f"Set {variable} in the environment of the phoenix-lsp server to a valid key."

    def _client(self) -> AsyncOpenAI:
        if self._sdk is not None:  # made: no lock (another client may be making its own in a thread meanwhile)
            return self._sdk
        with _BUILDING:  # made once, in a thread (see _built)
            if self._sdk is None:
                httpx2 = bounded_http.httpx()
                openai = _sdk()
                timeout = httpx2.Timeout(self._timeout_s, read=self._idle_s)
                http = bounded_http.provider_client(openai.DefaultAsyncHttpxClient)
                key = self.provider.api_key or "unused"  # a local server takes any key; the SDK wants one
                if self.provider.kind == "azure":
                    self._sdk = openai.AsyncAzureOpenAI(azure_endpoint=self.provider.base_url, api_key=key,
                                                 api_version=self.provider.api_version or "2024-10-21",
                                                 max_retries=0, timeout=timeout, http_client=http)
                else:  # base_url always given: OPENAI_BASE_URL never applies to another provider
                    self._sdk = openai.AsyncOpenAI(api_key=key, base_url=self.provider.base_url, max_retries=0,
                                            timeout=timeout, http_client=http)
        return self._sdk

    async def _built(self) -> AsyncOpenAI:
        """The SDK's client, made in a thread the first time: making one imports the SDK's modules and reads the
        system's certificate authorities for its TLS context, tens of ms during which the event loop would
        answer no one (REQ-PROTO-062)."""
        if self._sdk is None:
            await asyncio.to_thread(self._client)
        return self._client()

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

    def model_facts(self, upstream: str) -> ModelFacts:
        """The providers file's facts, then what the server reported, then the table of hosted models."""
        listed = self.facts.get(upstream, ModelFacts())
        configured = hosted_facts(self.provider, upstream)
        return ModelFacts(
            configured.context_window or listed.context_window,
            configured.images if configured.images is not None else listed.images,
            configured.price,
        )

    async def list_models(self) -> list[tuple[str, str, int | None]]:
        """``GET /v1/models``: ``(upstream id, name, context window or None)``; Ollama's windows from
        ``/api/show``. Raises on any failure (the caller reports it)."""
        page = await (await self._built()).models.list()
        out: list[tuple[str, str, int | None]] = []
        for model in page.data:
            extra = getattr(model, "model_extra", None) or {}
            window = extra.get("context_length") or extra.get("context_window")
            if isinstance(window, int) and window > 0:
                self.facts[model.id] = ModelFacts(window, self.facts.get(model.id, ModelFacts()).images)
            out.append((model.id, model.id, None))
        if self.provider.kind == "ollama":
            await asyncio.gather(*(self.ollama_show(mid) for mid, _, _ in out), return_exceptions=True)
        return [(mid, name, self.model_facts(mid).context_window) for mid, name, _ in out]

    async def ollama_show(self, upstream: str) -> ModelFacts:
        """Ollama's own report of a model (``POST /api/show``): its context length and whether it sees images."""
        httpx2 = bounded_http.httpx()
        root = self.provider.base_url.removesuffix("/v1")
        async with httpx2.AsyncClient(timeout=5.0, event_hooks={"response": [bounded_http.response_hook(
                lambda _request: limits.PROVIDER_LISTING)]}) as http:
            answer = await http.post(f"{root}/api/show", json={"model": upstream})
            answer.raise_for_status()
            data = answer.json()
        info = data.get("model_info") or {}
        trained = next((v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)), None)
        # the context Ollama runs the model with, when its Modelfile sets it ("num_ctx 8192" among the
        # parameters): a prompt longer than that is cut, so it is the window that counts
        found = re.search(r"(?m)^\s*num_ctx\s+(\d+)\s*$", str(data.get("parameters") or ""))
        num_ctx = int(found.group(1)) if found and int(found.group(1)) > 0 else None
        window = min(w for w in (trained, num_ctx) if w) if (trained or num_ctx) else None
        self.ollama_ctx[upstream] = (num_ctx, trained)
        capabilities = data.get("capabilities")
        images = "vision" in capabilities if isinstance(capabilities, list) else None
        facts = ModelFacts(window, images)
        self.facts[upstream] = facts
        return facts

    async def stream(self, request: LlmRequest, on_text: Callable[[str], None],
                     upstream_model: str | None = None, on_tool: OnToolInput | None = None) -> LlmSuccess | LlmFailure:
        model = upstream_model if upstream_model is not None else request.model
        if has_images(request) and self.model_facts(model).images is False:
            return LlmFailure(False, None, (
                f"{self.provider.name}/{model} does not take images, and this conversation has one. Switch to "
                "a model that does (phoenix/setModel), or start a new conversation without the image."))
        try:
            return await self._stream(request, on_text, model, on_tool)
        except asyncio.CancelledError:
            raise
        except _CallbackError as exc:
            raise exc.original from None
        except Exception as exc:
            failure = self._classify(exc, model)
            log.warning("LLM request failed: %s", failure.message)
            return failure

    async def _stream(self, request: LlmRequest, on_text: Callable[[str], None], model: str,
                      on_tool: OnToolInput | None = None) -> LlmSuccess:
        httpx2 = bounded_http.httpx()
        kwargs = to_chat(request, model)
        try:
            # the SDK sends the request (auth, base URL, Azure's layout, HTTP errors as exceptions); the stream's
            # lines are decoded here, as plain JSON
            response = (await self._built()).chat.completions.with_streaming_response.create(**kwargs)
            opened = await response.__aenter__()
        except httpx2.ReadTimeout as exc:
            raise _Stalled("before the response headers") from exc
        except Exception as exc:
            if isinstance(exc.__cause__, httpx2.ReadTimeout):
                raise _Stalled("before the response headers") from exc
            raise
        acc = ChunkAccumulator()
        loop = asyncio.get_running_loop()
        share_at = loop.time() + _SHARE_S
        done = False
        try:
            async for line in opened.iter_lines():
                if not line.startswith("data:"):
                    continue  # blank separators, comments (": keep-alive"), "event:" lines
                data = line[5:].strip()
                if data == "[DONE]":
                    done = True
                    break
                acc.feed(json.loads(data), on_text, on_tool)
                if loop.time() >= share_at:
                    await asyncio.sleep(0)
                    share_at = loop.time() + _SHARE_S
        except httpx2.ReadTimeout as exc:
            where = f"after {acc.chunks} stream chunks" if acc.chunks else "after the response headers"
            raise _Stalled(where) from exc
        finally:
            # on cancellation (or any error) this closes the socket of an unfinished response at once
            await response.__aexit__(None, None, None)
        if not done and acc.finish_reason is None:
            raise _StreamError("the stream ended before a finish_reason (connection cut mid-answer)")
        return acc.result()

    def _classify(self, exc: Exception, model: str) -> LlmFailure:
        httpx2 = bounded_http.httpx()
        openai = _sdk()
        where = self._where()
        if isinstance(exc, openai.APIStatusError):
            return self._status_failure(exc, model)
        too_big = bounded_http.found(exc)
        if too_big is not None:  # retried, it would be read again to its bound: the user decides
            return LlmFailure(False, None, f"The answer of {where} was refused: {too_big}.")
        if isinstance(exc, _Stalled):
            return LlmFailure(True, None, f"The stream from {where} stalled: nothing arrived for {self._idle_s:g} s "
                              f"{exc.where}. If this persists, check the server (PHOENIX_LLM_IDLE_TIMEOUT_S sets "
                              "how long to wait).")
        if isinstance(exc, openai.APITimeoutError | httpx2.TimeoutException):
            return LlmFailure(True, None, f"{where[0].upper()}{where[1:]} did not answer within "
                              f"{self._timeout_s:g} s (timeout). If this persists, check the server and the network.")
        if isinstance(exc, openai.APIConnectionError | httpx2.TransportError):
            cause = exc.__cause__ or exc
            detail = self._redact(f"{type(cause).__name__}: {cause}")
            hint = ("Start it (ollama serve) or set OLLAMA_HOST to where it runs." if self.provider.kind == "ollama"
                    else "Check that the server runs and the address is right.")
            return LlmFailure(True, None, f"Could not reach {where} ({detail}). {hint}")
        if isinstance(exc, openai.APIError | _MidStreamError):  # an error object in the stream after a 200
            said = self._redact(getattr(exc, "message", None) or str(exc))
            return LlmFailure(True, None, f"{where[0].upper()}{where[1:]} reported an error mid-stream: {said}")
        if isinstance(exc, _StreamError | json.JSONDecodeError | ValueError | KeyError | AttributeError):
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            return LlmFailure(True, None, f"{where[0].upper()}{where[1:]} sent a malformed or cut stream ({detail}).")
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        return LlmFailure(False, None, f"Unexpected error while calling {where}: {detail}.")

    def _status_failure(self, exc: Any, model: str) -> LlmFailure:
        status: int = exc.status_code
        body = exc.body
        said_raw = None
        if isinstance(body, dict):  # the SDK passes the error object, or the whole body when it has none
            error = body.get("error")
            said_raw = error.get("message") if isinstance(error, dict) else body.get("message")
        said = f" The server said: {self._redact(str(said_raw))}" if said_raw else ""
        said = said.rstrip(".") + "." if said else ""
        retryable = is_retryable_status(status)
        where = self._where()
        name = f"{self.provider.name}/{model}"
        if status == 401:
            text = f"Authentication failed (HTTP 401): {where} rejected the API key.{said} {self._key_help()}"
        elif status == 403:
            text = f"Permission denied (HTTP 403): the key may not use {name}.{said} {self._key_help()}"
        elif status == 404:
            text = (f"Not found (HTTP 404): {where} has no model {model!r}.{said} Check the model id "
                    "(phoenix/listModels lists the provider's models).")
        elif status == 429:
            text = f"Rate limited by {where} (HTTP 429).{said} If this persists, check your rate limits."
        elif status >= 500:
            text = f"{where[0].upper()}{where[1:]} had a server error (HTTP {status}).{said}"
        elif status == 400:
            text = f"{where[0].upper()}{where[1:]} rejected the request (HTTP 400).{said or ' No reason was given.'}"
        else:
            text = f"{where[0].upper()}{where[1:]} answered HTTP {status}.{said or ' No reason was given.'}"
        response = getattr(exc, "response", None)
        wait = retry_after_ms(getattr(response, "headers", None)) if retryable else None
        return LlmFailure(retryable, status, text, wait)

    def _redact(self, text: str | None) -> str:
        if not text:
            return ""
        return _strip_url_credentials(self._guard.redact(text))
