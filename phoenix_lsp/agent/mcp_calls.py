"""One MCP tool call (REQ-AGENT-017): the arguments checked against the tool's input schema, the call bounded in
time, its failures mapped to typed errors, its value decoded, scrubbed of every secret and capped in size.
See ``mcp_hub.py`` for the error mapping."""

from __future__ import annotations

import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError

from .. import bounded_http, limits, safe_json
from . import mcp_relay
from .contracts import ErrorCode
from .mcp_listings import McpListings
from .mcp_output import OutputSchemas
from .mcp_sessions import Server, describe, fail
from .mcp_values import schema_problem, unwrap
from .timing import Stopwatch

log = logging.getLogger(__name__)

#: JSON-RPC error codes the SDK uses
_CONNECTION_CLOSED = -32000
_REQUEST_TIMEOUT = -32001
_INVALID_PARAMS = -32602
_METHOD_NOT_FOUND = -32601
_NOT_FOUND_TEXT = re.compile(r"\b(not found|unknown tool|no such|does not exist)\b", re.IGNORECASE)
_INVALID_TEXT = re.compile(r"\bvalidation error|invalid (argument|param)", re.IGNORECASE)


@dataclass(frozen=True)
class ResultImages:
    """The image blocks of a tool's result (REQ-MCP-021), as the server sent them: the first
    ``limits.MCP_IMAGES`` (base64 text, declared media type), and how many it sent in all. Nothing of them is
    decoded here (``tools/mcp_images.py`` is their gate)."""

    kept: tuple[tuple[str, str], ...] = ()
    total: int = 0


def result_images(content: Any) -> ResultImages:
    """The first images of a result's content blocks, and their count."""
    kept: list[tuple[str, str]] = []
    total = 0
    for block in content:
        if getattr(block, "type", "") != "image":
            continue
        total += 1
        if len(kept) < limits.MCP_IMAGES:
            data, media = getattr(block, "data", ""), getattr(block, "mime_type", "")
            kept.append((data if isinstance(data, str) else "", media if isinstance(media, str) else ""))
    return ResultImages(tuple(kept), total)


@dataclass(frozen=True)
class Answer:
    """A server's answer to one call, before the gate: the tool's URI without its scope, the server and tool it
    was listed as, the SDK's result, and the call's stopwatch."""

    bare: str
    server: Server
    tool: Any
    result: Any
    timing: Stopwatch


class McpCalls(McpListings):
    """The tool calls of one MCP client: the server's answer on its event loop, the gate on the result in the
    thread that called (see ``McpHub``)."""

    def __init__(self, registry: Any, **listings: Any) -> None:
        super().__init__(registry, **listings)
        self._outputs = OutputSchemas()  # the tools' output schemas, compiled once (``mcp_output.py``)

    def _forget_version(self, key: str) -> None:
        super()._forget_version(key)
        self._outputs.forget(key)

    async def _answer(self, uri: str, arguments: dict[str, Any], timeout_s: float) -> Answer:
        """The server's answer to one call, on the hub's loop: its failures typed, its result not yet through the
        gate (``_gated``, in the caller's thread: the loop is free meanwhile for every other call and lookup)."""
        server, tool = await self._tool(uri)
        bare = uri.split("?", 1)[0]
        problem = schema_problem(await self._schema(uri), arguments)
        if problem is not None:
            raise fail(ErrorCode.INVALID_ARGUMENTS, self._scrub(
                f"{bare}: the arguments do not fit its input schema ({problem}); fix them (see its schema)"))
        session = server.session

        started = time.monotonic()
        timing = Stopwatch("mcp")  # the server's answer apart from our gate on it (``timing.py``)
        try:
            result = await session.call_tool(tool.name, arguments, read_timeout_seconds=timeout_s)
        except MCPError as exc:
            if exc.code == _REQUEST_TIMEOUT:
                raise fail(ErrorCode.TIMEOUT, f"{bare} did not answer within {timeout_s:g} s; it may still be "
                            "running on the server. Retry with a longer timeout or ask for less") from None
            if exc.code == mcp_relay.REFUSED_CODE or bounded_http.MARK in exc.message:
                # its answer was over a message's bounds: the relay's answer, or the SDK's of bounded_http's error
                # (a broken JSON answer, or an SSE stream that failed: the session goes on)
                raise fail(ErrorCode.RESULT_TOO_LARGE, self._scrub(
                    f"{bare} failed: its answer was not read: {exc.message[:1000]}")) from None
            if exc.code == _CONNECTION_CLOSED:
                raise await self._lost(server, f"closed the connection during a call of {tool.name}") from None
            code = {_INVALID_PARAMS: ErrorCode.INVALID_ARGUMENTS,
                    _METHOD_NOT_FOUND: ErrorCode.NOT_FOUND}.get(exc.code, ErrorCode.TOOL_ERROR)
            raise fail(code, self._scrub(f"{bare} failed: MCP error {exc.code}: {exc.message[:500]}")) from None
        except Exception as exc:  # a broken transport, or an HTTP answer over its bounds
            too_big = bounded_http.found(exc)
            if too_big is not None:
                await self._lost(server, f"sent an answer over its bounds during a call of {tool.name}")
                raise fail(ErrorCode.RESULT_TOO_LARGE, self._scrub(
                    f"{bare} failed: its answer was not read: {too_big}")) from None
            raise await self._lost(server, f"failed during a call of {tool.name} ({describe(exc)})") from None
        log.debug("called %s in %.0f ms", bare, (time.monotonic() - started) * 1000)
        timing.mark("answer")
        return Answer(bare, server, tool, result, timing)

    def _gated(self, answer: Answer) -> tuple[Any, ResultImages]:
        """The answer's result through the one gate (``_gate``); thread-safe, run by the thread that called."""
        try:
            return self._gate(answer.bare, answer.server, answer.tool, answer.result)
        finally:
            answer.timing.mark("gate")
            answer.timing.log(log)

    def _gate(self, bare: str, server: Server, tool: Any, result: Any) -> tuple[Any, ResultImages]:
        """The one gate on a result, before anything else sees it: its error mapped, its depth bounded, its
        declared output schema checked, unwrapped, scrubbed of every secret, capped in size."""
        text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            code = (ErrorCode.NOT_FOUND if _NOT_FOUND_TEXT.search(text) else
                    ErrorCode.INVALID_ARGUMENTS if _INVALID_TEXT.search(text) else ErrorCode.TOOL_ERROR)
            raise fail(code, self._scrub(f"{bare} failed: {text[:1000] or '(no message)'}"))
        if result.structured_content is not None:
            value: Any = result.structured_content
            if safe_json.value_deeper_than(value):  # every walk of it (check, size, scrub, engine) would recurse
                too_deep = safe_json.TooDeep(safe_json.MAX_DEPTH, "its structured result")
                raise fail(ErrorCode.TOOL_ERROR, f"{bare} failed: {too_deep}")
            if tool.output_schema is not None:  # what the schema promises (the SDK's check, made here once)
                problem = self._outputs.problem(f"{server.name}@{server.version}", tool.name, tool.output_schema,
                                                value)
                if problem is not None:
                    raise fail(ErrorCode.TOOL_ERROR, self._scrub(
                        f"{bare} answered a result that does not match its declared output schema ({problem}); "
                        "the result was dropped. The server is at fault: call it differently, or use another tool"))
            value = unwrap(value, tool.output_schema)
        elif tool.output_schema is not None:
            raise fail(ErrorCode.TOOL_ERROR, f"{bare} declares an output schema but answered no structured "
                       "content; the result was dropped. The server is at fault: use another tool")
        else:
            try:
                value = safe_json.loads(text)
            except safe_json.TooDeep as exc:
                raise fail(ErrorCode.TOOL_ERROR, f"{bare} failed: {exc}") from None
            except ValueError:
                value = text
        value = self._scrub_value(value)  # before anything else sees it: engine, reducer, artifacts, model
        size = len(json.dumps(value, ensure_ascii=False).encode())
        if size > self._max_result_bytes:
            raise fail(ErrorCode.RESULT_TOO_LARGE, (
                f"{bare} answered {size:,} bytes, over the MCP client's cap of {self._max_result_bytes:,}; the "
                "result was dropped. Ask for less (filter, or fetch items one by one)"))
        return value, result_images(result.content)
