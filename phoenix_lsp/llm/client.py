"""The Anthropic Messages API client: one streaming request in, one success or failure out.

The official ``anthropic`` SDK does the HTTP work (async, streaming) with its own retries OFF: whether and
when to retry is decided by the pure core, which reads :attr:`LlmFailure.retryable`.

Contract of :meth:`LlmClient.stream`:

- calls ``on_text`` for every text delta, in order, as it arrives;
- never raises for API or network errors: they come back as :class:`LlmFailure` with a message that says
  what happened and what to do if it persists (never whether it will be retried: the core decides that and
  says so in its own event), with the delay the provider asked for (``retry-after-ms`` / ``retry-after``
  headers of a 429 or 529) in :attr:`LlmFailure.retry_after_ms`;
- notices a stalled stream: when no byte arrives for ``idle_timeout_s`` (before the response headers or
  between two stream events) the request fails as retryable, instead of waiting out ``timeout_s``;
- costs time linear in the answer's size (text deltas are kept as pieces and joined once);
- when its task is cancelled, closes the HTTP connection at once (the server sees the disconnect) and
  re-raises ``CancelledError``; nothing partial is returned;
- a ``tool_use`` block whose streamed input is not a valid JSON object does not fail the call: the block
  comes back with ``input == {}`` and ``block[TOOL_INPUT_ERROR_KEY]`` holding the parser's message, so the
  caller can answer the model with a tool error ("your input was not valid JSON: <parser error>") and let it
  try again;
- the API key never appears in any message, log line or repr produced here.

``anthropic`` is imported lazily (first request), because the server must start in well under 300 ms.

Over 300 lines: the request and result types every provider shares, the stream accumulator and the client with its
error classification read each other's fields and change together.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .. import bounded_http, limits
from ..store.secrets import SecretGuard
from .models import LIFECYCLES, ListedModel

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic


def _sdk() -> ModuleType:
    """Anthropic's SDK, imported when the first client is made (the first turn's warm-up does it off the loop)."""
    import anthropic  # lazy: the SDK takes about half a second to import; the server starts without it

    return anthropic

log = logging.getLogger(__name__)
#: one SDK client is made at a time (two first requests must not make two)
_BUILDING = threading.Lock()

#: Key of a tool_use block (beside ``input``, never inside it) holding why its streamed input JSON was unusable.
TOOL_INPUT_ERROR_KEY = "input_error"

_API_KEY_HELP = "Set ANTHROPIC_API_KEY in the environment of the phoenix-lsp server (or the apiKey option)."

#: The longest the stream's task works through buffered events before it lets the event loop run others.
_SHARE_S = 0.002

# Error types of an SSE ``event: error`` (HTTP 200 already sent) and the HTTP status they stand for.
_STREAM_ERROR_STATUS: dict[str, int] = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


@dataclass(frozen=True)
class LlmRequest:
    """One Messages API call, already built by the caller (Anthropic wire format)."""

    model: str
    system: str | list[dict[str, Any]]  # a list of text blocks when it carries a cache breakpoint (llm/cache.py)
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None  # None -> the request carries no tools (continuation summaries)
    max_tokens: int = 8192
    #: the sink check also replaces the well-known credential formats (REQ-SEC-012): on unless the conversation
    #: is Unrestricted (never sent)
    credential_formats: bool = True


@dataclass(frozen=True)
class LlmSuccess:
    """A complete answer: content blocks as plain dicts, the stop reason and the token usage (``input_tokens``,
    ``output_tokens``, ``cache_creation_input_tokens``, ``cache_read_input_tokens``, and the cache writes per
    TTL ``cache_write_5m_tokens`` / ``cache_write_1h_tokens``, 0 when the API did not report them)."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: dict[str, int]


@dataclass(frozen=True)
class LlmFailure:
    """A failed call. ``retryable`` is True for 408/409/429/5xx/529, network errors, timeouts, stalled and cut
    streams. ``retry_after_ms`` is how long the provider asked us to wait (``retry-after-ms`` or
    ``retry-after`` of the response), None when it did not say."""

    retryable: bool
    status: int | None
    message: str
    retry_after_ms: int | None = None


def retry_after_ms(headers: Mapping[str, str] | None, now: float | None = None) -> int | None:
    """The wait a response asks for, in ms: ``retry-after-ms`` (milliseconds, Anthropic's and OpenAI's), else
    ``retry-after`` (seconds, or an HTTP date, RFC 9110); None when neither is there or usable."""
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1.0), ("retry-after", 1000.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw.strip()) * scale
        except ValueError:
            if scale == 1.0:
                continue
            try:
                when = email.utils.parsedate_to_datetime(raw)
            except (TypeError, ValueError, IndexError):
                continue
            value = (when.timestamp() - (time.time() if now is None else now)) * 1000
        if math.isfinite(value) and value >= 0:
            return math.ceil(value)
    return None


def is_retryable_status(status: int) -> bool:
    """Statuses worth retrying: timeouts, conflicts, rate limits and any server-side error (incl. 529)."""
    return status in (408, 409, 429) or status >= 500


#: told each piece of a tool call's input as it streams: (the call's id, the tool's name, the piece); pieces past
#: the tool input's bound are not given (REQ-PROTO-063). A failure of it is logged, never the request's.
OnToolInput = Callable[[str, str, str], None]


def tell_tool_input(on_tool: OnToolInput | None, call_id: str, name: str, piece: str) -> None:
    """Give ``on_tool`` a piece of a tool call's streamed input (REQ-AGENT-044); it cannot fail the answer."""
    if on_tool is None or not piece:
        return
    try:
        on_tool(call_id, name, piece)
    except Exception:
        log.exception("a listener of the streamed tool input %s failed; the answer goes on", name)


class _CallbackError(Exception):
    """Wraps an exception raised by ``on_text`` so it is re-raised as-is instead of classified."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


class _StreamError(Exception):
    """The stream itself was malformed or ended early."""


class _Stalled(Exception):
    """No byte arrived for the idle timeout; ``where`` says at which point of the answer."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


@dataclass
class _Accumulator:
    """Builds the final message from raw stream events."""

    blocks: dict[int, dict[str, Any]] = field(default_factory=dict)
    texts: dict[int, list[str]] = field(default_factory=dict)  # a text block's pieces, joined when it ends
    partial_json: dict[int, list[str]] = field(default_factory=dict)
    json_sizes: dict[int, int] = field(default_factory=dict)  # characters of each tool input so far
    events: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    stop_reason: str | None = None
    stopped: bool = False

    def merge_usage(self, usage: Any) -> None:
        if usage is None:
            return
        for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            value = getattr(usage, key, None)
            if isinstance(value, int):
                self.usage[key] = value
        split = getattr(usage, "cache_creation", None)  # the cache writes per TTL, when the API reports them
        for key, ttl_key in (("cache_write_5m_tokens", "ephemeral_5m_input_tokens"),
                             ("cache_write_1h_tokens", "ephemeral_1h_input_tokens")):
            value = getattr(split, ttl_key, None)
            if isinstance(value, int):
                self.usage[key] = value

    def feed(self, event: Any, on_text: Callable[[str], None], on_tool: OnToolInput | None = None) -> None:
        self.events += 1
        kind = getattr(event, "type", None)
        if kind == "content_block_delta":
            delta = event.delta
            dtype = delta.type
            block = self.blocks.get(event.index)
            if block is None:
                raise _StreamError(f"content_block_delta for unknown block index {event.index}")
            if dtype == "text_delta":
                # kept as pieces: adding each delta to the whole text so far made a big answer quadratic
                self.texts.setdefault(event.index, []).append(delta.text)
                try:
                    on_text(delta.text)
                except Exception as exc:
                    raise _CallbackError(exc) from exc
            elif dtype == "input_json_delta":  # kept up to the tool input's bound, the rest not (REQ-PROTO-063)
                size = self.json_sizes.get(event.index, 0) + len(delta.partial_json)
                self.json_sizes[event.index] = size
                if size <= limits.TOOL_INPUT.max_bytes:
                    self.partial_json.setdefault(event.index, []).append(delta.partial_json)
                    tell_tool_input(on_tool, str(block.get("id", "")), str(block.get("name", "")),
                                    delta.partial_json)
            elif dtype == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.thinking
            elif dtype == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.signature
            elif dtype == "citations_delta":
                block.setdefault("citations", []).append(delta.citation.model_dump(mode="json"))
        elif kind == "content_block_start":
            cb = event.content_block
            if cb.type == "text":
                self.blocks[event.index] = {"type": "text", "text": ""}
                self.texts[event.index] = [cb.text or ""]
            elif cb.type == "tool_use":
                self.blocks[event.index] = {"type": "tool_use", "id": cb.id, "name": cb.name, "input": {}}
            else:  # thinking, redacted_thinking, server tools...: keep the SDK's own JSON form
                self.blocks[event.index] = cb.model_dump(mode="json", exclude_none=True)
        elif kind == "content_block_stop":
            self._finish_block(event.index)
        elif kind == "message_start":
            self.merge_usage(event.message.usage)
        elif kind == "message_delta":
            if event.delta.stop_reason is not None:
                self.stop_reason = event.delta.stop_reason
            self.merge_usage(event.usage)
        elif kind == "message_stop":
            self.stopped = True

    def _finish_block(self, index: int) -> None:
        block = self.blocks.get(index)
        if index in self.texts and block is not None:
            block["text"] = "".join(self.texts.pop(index))
        if block is None or block.get("type") != "tool_use":
            return
        raw = "".join(self.partial_json.pop(index, []))
        size = self.json_sizes.pop(index, 0)
        if size > limits.TOOL_INPUT.max_bytes:
            block[TOOL_INPUT_ERROR_KEY] = (limits.TOOL_INPUT.too_long(size, "characters")
                                           + ". Send a smaller input (e.g. write the file in parts)")
            return
        if not raw.strip():
            block["input"] = {}
            return
        try:
            value = limits.decode(raw, limits.TOOL_INPUT)
        except ValueError as exc:  # not JSON, or over its bounds (nesting, tokens: limits.Refused)
            block[TOOL_INPUT_ERROR_KEY] = str(exc)
            return
        if isinstance(value, dict):
            block["input"] = value
        else:  # valid JSON, but a tool input must be an object
            kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
            kind = kinds.get(type(value), "a number")
            block[TOOL_INPUT_ERROR_KEY] = f"expected a JSON object, got {kind}: {raw.strip()[:60]}"

    def result(self) -> LlmSuccess:
        if not self.stopped:
            raise _StreamError("the stream ended before message_stop (connection cut mid-answer)")
        for index in [*self.texts, *self.partial_json]:  # a block never closed: still deliver what came
            self._finish_block(index)
        usage = {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_write_5m_tokens": 0,
            "cache_write_1h_tokens": 0,
        }
        usage.update(self.usage)
        content = [self.blocks[i] for i in sorted(self.blocks)]
        return LlmSuccess(content=content, stop_reason=self.stop_reason or "end_turn", usage=usage)


class LlmClient:
    """Streams Messages API calls through the official SDK (constructed on first use).

    ``api_key`` / ``base_url`` override ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_BASE_URL``; ``timeout_s``
    bounds the connect and the whole wait for the response; ``idle_timeout_s`` (at most ``timeout_s``) bounds
    each wait for the next byte, so a stream that stalls is noticed (REQ-BED-025).
    """

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 600,
        guard: SecretGuard | None = None,
        idle_timeout_s: float | None = None,
    ) -> None:
        key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        # Surrounding whitespace is a copy-paste accident (e.g. a trailing newline in a secrets file).
        self._api_key = (key.strip() or None) if key is not None else None
        self._guard = guard if guard is not None else SecretGuard()
        if self._api_key:
            self._guard.add_secret(self._api_key)
        self._base_url = base_url if base_url is not None else os.environ.get("ANTHROPIC_BASE_URL") or None
        self._timeout_s = timeout_s
        self._idle_s = min(idle_timeout_s, timeout_s) if idle_timeout_s is not None else timeout_s
        self._sdk: AsyncAnthropic | None = None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "missing"
        return f"LlmClient(base_url={_safe_url(self._base_url)!r}, api_key={key}, timeout_s={self._timeout_s})"

    @property
    def base_url(self) -> str:
        """The API endpoint in use, with any user:password part removed."""
        return _safe_url(self._base_url) or "https://api.anthropic.com"

    def _client(self) -> AsyncAnthropic:
        if self._sdk is not None:  # made: no lock (another client may be making its own in a thread meanwhile)
            return self._sdk
        with _BUILDING:  # made once, in a thread (see _built)
            if self._sdk is None:
                httpx2 = bounded_http.httpx()
                anthropic = _sdk()
                self._sdk = anthropic.AsyncAnthropic(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    http_client=bounded_http.provider_client(anthropic.DefaultAsyncHttpxClient),
                    max_retries=0,  # the core owns retries (3, exponential backoff, visible to the user)
                    # a read waits at most the idle timeout for its next bytes (the headers, an event, a ping)
                    timeout=httpx2.Timeout(self._timeout_s, read=self._idle_s),
                )
        return self._sdk

    async def _built(self) -> AsyncAnthropic:
        """The SDK's client, made in a thread the first time: making one imports the SDK's modules and reads the
        system's certificate authorities for its TLS context, tens of ms during which the event loop would
        answer no one (REQ-PROTO-062)."""
        if self._sdk is None:
            await asyncio.to_thread(self._client)
        return self._client()

    async def aclose(self) -> None:
        """Close the pooled HTTP connections."""
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None

    async def prepare(self) -> None:
        """The SDK imported and its client made (:meth:`_built`) ahead of the first request: a second or two of
        CPU, which a caller that bounds how long it waits for the API's answer must not count as the API's
        (a headless run's wait for the model list). Never raises: without a key, or when the client cannot be
        made, the request that follows fails and says why."""
        if not self._api_key:
            return
        try:
            await self._built()
        except Exception as exc:
            log.info("the Anthropic client could not be made ahead of its first request: %s",
                     self._redact(f"{type(exc).__name__}: {exc}"))

    async def list_models(self, limit: int = 1000) -> list[ListedModel]:
        """The models the API key can use, newest first, each with its lifecycle (retired ones included, so a
        request naming one can be refused with the reason): the SDK's ``ModelInfo`` fields.

        Raises on any failure (no key, network, HTTP error): the caller falls back to its own list."""
        if not self._api_key:
            raise RuntimeError(f"no Anthropic API key is configured ({_API_KEY_HELP})")
        page = await (await self._built()).models.list(limit=limit, lifecycle=list(LIFECYCLES))
        return [_listed(m) for m in page.data]

    async def stream(self, request: LlmRequest, on_text: Callable[[str], None],
                     on_tool: OnToolInput | None = None) -> LlmSuccess | LlmFailure:
        """Run one streaming call; see the module docstring for the full contract. ``on_tool`` is told each
        piece of a tool call's input as it arrives."""
        if not self._api_key:
            return LlmFailure(False, None, f"No Anthropic API key is configured. {_API_KEY_HELP}")
        if not self._api_key.isascii() or not self._api_key.isprintable() or " " in self._api_key:
            # The HTTP stack would refuse the header and quote the key in its error: stop before that.
            return LlmFailure(
                False,
                None,
                "The configured Anthropic API key contains spaces, line breaks or non-ASCII characters, so it "
                f"cannot be sent. Copy the key again without them. {_API_KEY_HELP}",
            )
        try:
            return await self._stream(request, on_text, on_tool)
        except asyncio.CancelledError:
            raise
        except _CallbackError as exc:
            raise exc.original from None
        except Exception as exc:
            failure = self._classify(exc, request)
            log.warning("LLM request failed: %s", failure.message)
            return failure

    async def _stream(self, request: LlmRequest, on_text: Callable[[str], None],
                      on_tool: OnToolInput | None = None) -> LlmSuccess:
        kwargs: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
            "stream": True,
        }
        if request.system:
            kwargs["system"] = request.system
        if request.tools is not None:
            kwargs["tools"] = request.tools
        httpx2 = bounded_http.httpx()
        try:
            stream = await (await self._built()).messages.create(**kwargs)
        except httpx2.ReadTimeout as exc:
            raise _Stalled("before the response headers") from exc
        except Exception as exc:
            if isinstance(exc.__cause__, httpx2.ReadTimeout):  # the SDK wraps it in APITimeoutError
                raise _Stalled("before the response headers") from exc
            raise
        acc = _Accumulator()
        loop = asyncio.get_running_loop()
        share_at = loop.time() + _SHARE_S
        try:
            async for event in stream:
                acc.feed(event, on_text, on_tool)
                if loop.time() >= share_at:
                    # a fast model fills each read with dozens of events: let other conversations' requests in
                    await asyncio.sleep(0)
                    share_at = loop.time() + _SHARE_S
        except httpx2.ReadTimeout as exc:
            where = f"after {acc.events} stream events" if acc.events else "after the response headers"
            raise _Stalled(where) from exc
        finally:
            # On cancellation (or any error) this closes the socket of an unfinished response at once,
            # so the server sees the disconnect and stops generating.
            await stream.close()
        return acc.result()

    # -- error classification -----------------------------------------------------------------------
    def _classify(self, exc: Exception, request: LlmRequest) -> LlmFailure:
        anthropic = _sdk()
        httpx2 = bounded_http.httpx()
        if isinstance(exc, httpx2.LocalProtocolError) or isinstance(exc.__cause__, httpx2.LocalProtocolError):
            # Our own request was malformed before sending; its detail can quote header values: omit it.
            return LlmFailure(
                False,
                None,
                "The request could not be sent (the HTTP client refused to build it). "
                "Check the API key and ANTHROPIC_BASE_URL settings for stray characters.",
            )
        if isinstance(exc, anthropic.APIStatusError):
            return self._status_failure(exc, request)
        too_big = bounded_http.found(exc)
        if too_big is not None:  # retried, it would be read again to its bound: the user decides
            return LlmFailure(False, None, f"The answer of the Anthropic API at {self.base_url} was refused: "
                                           f"{too_big}.")
        if isinstance(exc, _Stalled):
            return LlmFailure(
                True,
                None,
                f"The stream from the Anthropic API at {self.base_url} stalled: nothing arrived for "
                f"{self._idle_s:g} s {exc.where}. If this persists, check the network or ANTHROPIC_BASE_URL "
                "(PHOENIX_LLM_IDLE_TIMEOUT_S sets how long to wait).",
            )
        if isinstance(exc, anthropic.APITimeoutError | httpx2.TimeoutException):
            return LlmFailure(
                True,
                None,
                f"The Anthropic API at {self.base_url} did not answer within {self._timeout_s:g} s "
                "(timeout). If this persists, check the network or ANTHROPIC_BASE_URL.",
            )
        if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError | _StreamError):
            cause = exc.__cause__ if isinstance(exc, anthropic.APIConnectionError) and exc.__cause__ else exc
            detail = self._redact(f"{type(cause).__name__}: {cause}")
            return LlmFailure(
                True,
                None,
                f"Lost the connection to the Anthropic API at {self.base_url} ({detail}). If this persists, "
                "check the network or ANTHROPIC_BASE_URL.",
            )
        if isinstance(exc, json.JSONDecodeError | ValueError | KeyError | AttributeError):
            # A malformed event from the API (or a proxy in between): a server-side fault, worth a retry.
            detail = self._redact(f"{type(exc).__name__}: {exc}")
            return LlmFailure(True, None, f"The Anthropic API sent a malformed stream ({detail}).")
        detail = self._redact(f"{type(exc).__name__}: {exc}")
        return LlmFailure(False, None, f"Unexpected error while calling the Anthropic API: {detail}.")

    def _status_failure(self, exc: Any, request: LlmRequest) -> LlmFailure:
        status: int = exc.status_code
        api_type: str | None = exc.type
        api_message: str | None = exc.api_message
        mid_stream = status < 400  # an SSE `event: error` after a 200: classify by the error type
        if mid_stream:
            status = _STREAM_ERROR_STATUS.get(api_type or "", 500)
        said = f" The API said: {self._redact(api_message)}" if api_message else ""
        said = said.rstrip(".") + "." if said else ""
        where = " (reported mid-stream)" if mid_stream else ""
        retryable = is_retryable_status(status)
        if status == 401:
            text = f"Authentication failed (HTTP 401){where}: the API key was rejected.{said} {_API_KEY_HELP}"
        elif status == 403:
            text = (
                f"Permission denied (HTTP 403){where}: this API key may not use model {request.model!r} or "
                f"this feature.{said} Check ANTHROPIC_API_KEY and your organisation's access."
            )
        elif status == 404:
            text = (
                f"Not found (HTTP 404){where}: model {request.model!r} does not exist or is not available to "
                f"this API key.{said} Check the model name (or ANTHROPIC_BASE_URL if you use a proxy)."
            )
        elif status == 400:
            text = f"The API rejected the request (HTTP 400){where}.{said or ' No reason was given.'}"
        elif status == 413:
            text = (
                f"The request is too large (HTTP 413){where}.{said} Remove large images or start a "
                "continuation to shrink the conversation."
            )
        elif status == 429:
            text = (
                f"Rate limited by the Anthropic API (HTTP 429){where}.{said} If this persists, check your "
                "organisation's rate limits."
            )
        elif status == 529:
            text = f"The Anthropic API is overloaded (HTTP 529){where}.{said} If this persists, try again later."
        elif status >= 500:
            text = f"The Anthropic API had a server error (HTTP {status}){where}.{said}"
        else:
            text = f"The Anthropic API answered HTTP {status}{where}.{said or ' No reason was given.'}"
        # an SSE error event has no headers of its own; a 429/529 response says how long to wait
        response = None if mid_stream else getattr(exc, "response", None)
        wait = retry_after_ms(getattr(response, "headers", None)) if retryable else None
        return LlmFailure(retryable, None if mid_stream else status, text, wait)

    def _redact(self, text: str | None) -> str:
        """Remove the API key (and URL credentials) from text that came from elsewhere."""
        if not text:
            return ""
        return _strip_url_credentials(self._guard.redact(text))


_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s@]+@")


def _strip_url_credentials(text: str) -> str:
    return _URL_CREDENTIALS.sub(r"\g<scheme>", text)


def _safe_url(url: str | None) -> str | None:
    return _strip_url_credentials(url) if url else url


def _day(value: object) -> str | None:
    """A ``datetime`` of the API as ``YYYY-MM-DD``; None when absent."""
    return value.date().isoformat() if isinstance(value, datetime) else None


def _listed(m: Any) -> ListedModel:
    """One ``ModelInfo`` as the server keeps it; a field an older API leaves out is None."""
    created = getattr(m, "created_at", None)
    lifecycle = getattr(m, "lifecycle", None)
    line = getattr(m, "line", None)
    return ListedModel(
        id=m.id, name=m.display_name, context_window=getattr(m, "max_input_tokens", None),
        created_at=created.timestamp() if isinstance(created, datetime) else None,
        lifecycle=next((stage for stage in LIFECYCLES if stage == lifecycle), None),
        line=line if isinstance(line, str) else None,
        deprecated_at=_day(getattr(m, "deprecated_at", None)), retires_at=_day(getattr(m, "retires_at", None)),
    )
