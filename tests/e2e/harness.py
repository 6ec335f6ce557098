"""A real LSP client (pytest-lsp) driving the real server as a subprocess, with the fake Anthropic server.

``Session`` collects every ``phoenix/event``, answers ``workspace/applyEdit`` and
``window/showMessageRequest`` with scriptable handlers, and offers ``request`` / ``wait_event``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from phoenix_lsp.protocol.converter import plain_converter
from tests.e2e.zygote import Zygote, zygote
from tests.fake_anthropic import FakeAnthropic

EDITORS = ["visual_studio_code", "neovim"]
#: How long a wait may take before the test fails. Long on purpose: a passing test never waits it out, and
#: the suite runs on 2 busy cores in parallel workers, where a first model request (the SDK's import) can
#: take many seconds. Tests that bound a latency pass their own, explicit timeout.
WAIT_S = 30.0
API_KEY = "sk-ant-e2e-secret-key-0123456789"


@dataclass(frozen=True)
class RpcError:
    """A JSON-RPC error answer: ``data`` is the error's data object ({} when it had none)."""

    code: int
    message: str
    data: dict[str, Any]


SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "specs" / "protocol.schema.json").read_text("utf-8"))


@functools.cache
def _validator(ref: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator({"$ref": ref, "$defs": SCHEMA["$defs"]})


#: event kind -> its definition in the schema (validating against the one kind is far cheaper than the union)
EVENT_REFS: dict[str, str] = SCHEMA["$defs"]["PhoenixEvent"]["discriminator"]["mapping"]


def drift(ref: str, instance: Any, what: str) -> list[str]:
    """Where ``instance`` differs from the published schema (REQ-PROTO-037): empty when it conforms. An event
    is checked against the definition of its own kind (an unknown kind is checked against the union)."""
    if ref == "#/$defs/PhoenixEvent" and isinstance(instance, dict):
        ref = EVENT_REFS.get(str(instance.get("kind")), ref)
    return [f"{what}: {e.message} at {list(e.absolute_path)}" for e in _validator(ref).iter_errors(instance)]


@dataclass
class Session:
    client: LanguageClient
    fake: FakeAnthropic
    data_dir: Path
    workdir: Path
    events: list[dict[str, Any]] = field(default_factory=list)
    arrivals: list[int] = field(default_factory=list)  # time.monotonic_ns() at which each event arrived
    edits: list[types.ApplyWorkspaceEditParams] = field(default_factory=list)
    shown: list[types.ShowMessageRequestParams] = field(default_factory=list)
    on_apply_edit: Callable[[types.ApplyWorkspaceEditParams], types.ApplyWorkspaceEditResult] | None = None
    on_show: Callable[[types.ShowMessageRequestParams], str | None] | None = None
    hold_show: bool = False  # leave each dialog open (no answer) until the server withdraws it
    withdrawn: list[types.ShowMessageRequestParams] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)
    killed: bool = False
    initialize_result: Any = None
    drifts: list[str] = field(default_factory=list)  # what the server sent that the published schema refuses
    check_schema: bool = True

    @property
    def pid(self) -> int:
        """The process id of the server under test."""
        process = self.client._server
        assert process is not None, "the server process is not running"
        return int(process.pid)

    async def kill(self) -> None:
        """SIGKILL the server (no shutdown, no flushing) and wait until the process is gone."""
        self.killed = True
        os.kill(self.pid, signal.SIGKILL)
        process = self.client._server
        assert process is not None
        await asyncio.wait_for(process.wait(), 10)

    async def error(self, method: str, params: Any) -> RpcError:
        """Send a request that must fail; returns the JSON-RPC error (fails the test if it succeeds)."""
        try:
            result = await self.start_request(method, params)
        except JsonRpcException as exc:
            return RpcError(exc.code, exc.message, exc.data if isinstance(exc.data, dict) else {})
        raise AssertionError(f"{method} succeeded but should have failed: {result!r}")

    def start_request(self, method: str, params: Any, msg_id: str | None = None) -> asyncio.Future[Any]:
        """Send a request now, with raw params (e.g. Neovim's ``[]``) and an optional id; await the answer
        later. (``send_request_async`` would only send once awaited, too late to cancel it.)"""
        return asyncio.wrap_future(self.client.protocol.send_request(method, params, msg_id=msg_id))

    def seqs(self, conversation_id: str) -> list[int]:
        """The seq numbers of the conversation's events, in arrival order."""
        return [e["seq"] for e in self.events if e["conversationId"] == conversation_id]

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        result = await self.client.protocol.send_request_async(method, params or {})  # type: ignore[no-untyped-call]  # pygls/pytest-lsp are untyped here
        if self.check_schema and method.startswith("phoenix/"):
            ref = SCHEMA["properties"]["requests"]["properties"][method]["properties"]["result"]["$ref"]
            self.drifts += drift(ref, result, f"{method} result")
        return result

    async def new(self, **params: Any) -> str:
        params.setdefault("workingDirectory", str(self.workdir))
        result = await self.request("phoenix/newConversation", params)
        return str(result["conversationId"])

    def of(self, kind: str, conversation_id: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e["kind"] == kind and (conversation_id is None or e["conversationId"] == conversation_id)
        ]

    async def wait_until(self, predicate: Callable[[], Any], timeout: float = WAIT_S, what: str = "") -> Any:
        """Return ``predicate()``'s first truthy value, re-checked whenever something arrives from the server
        (an event, a request such as applyEdit or showMessageRequest, a log line, a message, progress).

        ``predicate`` may be a coroutine function (e.g. one that asks the server a question): it is then
        awaited, and re-run after each arrival. No sleeping and no fixed interval: the wait is on
        ``_changed``, which is cleared before each check so an arrival during the check is not missed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            self._changed.clear()
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            remaining = deadline - loop.time()
            if remaining <= 0:
                kinds = [(e["kind"], e.get("status")) for e in self.events[-15:]]
                raise TimeoutError(f"not within {timeout}s: {what or predicate}; last events: {kinds}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def wait_event(self, predicate: Callable[[dict[str, Any]], bool], timeout: float = WAIT_S) -> dict[str, Any]:
        """The first event (already received or arriving) that satisfies ``predicate``."""
        event: dict[str, Any] = await self.wait_until(
            lambda: next((e for e in self.events if predicate(e)), None), timeout, "no matching phoenix/event"
        )
        return event

    async def wait_status(
        self, conversation_id: str, status: str, timeout: float = WAIT_S, *, since: int = 0
    ) -> dict[str, Any]:
        """The first ``status`` event of the conversation entering ``status`` with a seq above ``since``."""
        return await self.wait_event(
            lambda e: e["kind"] == "status"
            and e["conversationId"] == conversation_id
            and e["status"] == status
            and e["seq"] > since,
            timeout,
        )

    def last_seq(self, conversation_id: str) -> int:
        """The highest seq received so far for the conversation (0 before any event)."""
        return max(self.seqs(conversation_id), default=0)


async def _start_forked(client: LanguageClient, forks: Zygote, args: list[str], env: dict[str, str]) -> None:
    """pygls's ``start_io``, with the server forked by this worker's zygote instead of a fresh interpreter."""
    process = await forks.spawn(args, env)
    client.protocol.set_writer(process.stdin)
    connection = asyncio.create_task(run_async(stop_event=client._stop_event, reader=process.stdout,
                                               protocol=client.protocol, logger=logging.getLogger("pygls.client"),
                                               error_handler=client.report_server_error))
    notify_exit = asyncio.create_task(client._server_exit())
    client._server = process  # type: ignore[assignment]  # what pygls uses of a Process, see zygote.py
    client._async_tasks.extend([connection, notify_exit])


@contextlib.asynccontextmanager
async def session(
    fake: FakeAnthropic,
    tmp_path: Path,
    editor: str = "visual_studio_code",
    *,
    rich: bool = True,
    init_options: dict[str, Any] | None = None,
    env: dict[str, str] | None = None,
    data_dir: Path | None = None,
    apply_edit: bool = True,
    launcher: list[str] | None = None,
    no_create: bool = False,
    check_schema: bool = True,
    sight: bool = False,
    root_uri: str | None = None,
) -> AsyncIterator[Session]:
    """A real server process and a pytest-lsp client. ``check_schema`` (on in tests) validates everything the
    server sends against the published schema; benchmarks turn it off so they time the server, not the check.
    ``sight``: the client announces the editor's sight (``experimental.phoenix.editorSight``, REQ-SIGHT-002);
    the test registers the handlers of its requests on ``s.client``. ``root_uri``: the workspace root the client
    announces (the work directory by default)."""
    client = LanguageClient(converter_factory=plain_converter)
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    data = data_dir or tmp_path / "data"
    s = Session(client, fake, data, workdir, check_schema=check_schema)
    # pytest-lsp's own handlers (log and show messages, progress, configuration...), each also waking the
    # waiters of ``Session.wait_until``: whatever the server sends is an occasion to re-check a condition
    register_lsp_features(client, {method: _waking(handler, s) for method, handler in DEFAULT_CLIENT_FEATURES.items()})

    @client.feature("phoenix/event")  # type: ignore[untyped-decorator]  # pygls/pytest-lsp are untyped here
    def on_event(params: dict[str, Any]) -> None:
        s.arrivals.append(time.monotonic_ns())
        if check_schema:
            s.drifts += drift("#/$defs/PhoenixEvent", params, f"phoenix/event {params.get('kind')}")
        s.events.append(params)
        s._changed.set()

    @client.feature(types.WORKSPACE_APPLY_EDIT)  # type: ignore[untyped-decorator]  # pygls/pytest-lsp are untyped here
    def on_apply(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        s.edits.append(params)
        s._changed.set()
        if s.on_apply_edit is not None:
            return s.on_apply_edit(params)
        return types.ApplyWorkspaceEditResult(applied=True)

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)  # type: ignore[untyped-decorator]  # pygls/pytest-lsp are untyped here
    async def on_show(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        s.shown.append(params)
        s._changed.set()
        if s.hold_show:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:  # pygls cancels the handler on the server's $/cancelRequest
                s.withdrawn.append(params)
                s._changed.set()
                raise
        choice = s.on_show(params) if s.on_show else None
        return types.MessageActionItem(title=choice) if choice else None

    # the user-level AGENTS.md of whoever runs the tests must not reach the prompts (REQ-INSTR-001)
    server_env = {**os.environ, **fake.env(API_KEY), "PHOENIX_RETRY_BASE_MS": "20",
                  "PHOENIX_CONFIG_DIR": str(tmp_path / "user-config"), **(env or {})}
    args = ["serve", "--data-dir", str(data)]
    forks = zygote() if launcher is None else None
    if forks is None:
        await client.start_io(*(launcher or []), sys.executable, "-m", "phoenix_lsp", *args, env=server_env)
    else:
        await _start_forked(client, forks, args, server_env)
    caps = client_capabilities(editor)
    if rich:
        caps.experimental = {"phoenix": {"version": 1, **({"editorSight": True} if sight else {})}}
    if not apply_edit and caps.workspace is not None:
        caps.workspace.apply_edit = False
    if no_create and caps.workspace is not None and caps.workspace.workspace_edit is not None:
        caps.workspace.workspace_edit.resource_operations = [types.ResourceOperationKind.Rename]
    s.initialize_result = await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            root_uri=root_uri or workdir.as_uri(),
            initialization_options=init_options,
        )
    )
    try:
        yield s
        assert not s.drifts, "the server sent what specs/protocol.schema.json does not allow:\n" + "\n".join(
            s.drifts[:20]
        )
    finally:
        if not s.killed:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.shutdown_session(), 10)
        process = client._server
        if process is not None and process.returncode is None:
            # shutdown failed or timed out (a failing test, a loaded machine): pygls's stop() would wait for
            # the process for ever and hang the whole run, so end it here
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), 10)
        with contextlib.suppress(Exception):
            await client.stop()  # type: ignore[no-untyped-call]  # pygls/pytest-lsp are untyped here


# ------------------------------------------------------------------------- write-path helpers (issue 5)


def tool_results(request: Any) -> dict[str, dict[str, Any]]:
    """The ``tool_result`` blocks of a recorded request's last message, by ``tool_use_id``."""
    last = request.messages[-1] if request.messages else {"content": []}
    content = last["content"] if isinstance(last["content"], list) else []
    # a cache breakpoint on the newest block (prompt caching) is not part of what the model is told
    return {
        b["tool_use_id"]: {k: v for k, v in b.items() if k != "cache_control"}
        for b in content
        if isinstance(b, dict) and b.get("type") == "tool_result"
    }


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    """Apply LSP text edits (positions in UTF-16 code units, against ``text``) as an editor would."""
    lines = text.splitlines(keepends=True) or [""]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        line, units, i = lines[pos.line], 0, 0
        while i < len(line) and units < pos.character:
            units += 2 if ord(line[i]) > 0xFFFF else 1
            i += 1
        return starts[pos.line] + i

    spans = sorted(((offset(e.range.start), offset(e.range.end), e.new_text) for e in edits), reverse=True)
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


@dataclass
class Buffers:
    """A FAKE of the editor's buffers (the real editor cannot run here): open documents with versions.

    ``apply`` does what VS Code and Neovim do with a ``workspace/applyEdit``: refuse an edit whose version
    is not the buffer's, create, delete and rename files, apply edits to the open buffer (a new version,
    announced with ``didChange``) or, for a document that is not open, to the file on disk.
    """

    session: Session
    docs: dict[str, tuple[str, int]] = field(default_factory=dict)

    def open(self, path: Path, text: str, version: int = 1) -> None:
        uri = path.as_uri()
        self.docs[uri] = (text, version)
        self.session.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", version, text))
        )

    def change(self, path: Path, text: str) -> None:
        """The user edits the buffer (full-text didChange, next version)."""
        uri = path.as_uri()
        version = self.docs[uri][1] + 1
        self.docs[uri] = (text, version)
        self.session.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def text(self, path: Path) -> str:
        return self.docs[path.as_uri()][0]

    def apply(self, params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        changes = params.edit.document_changes or []
        for change in changes:  # validate everything first: the edit is all or nothing
            if isinstance(change, types.TextDocumentEdit) and change.text_document.uri in self.docs:
                have = self.docs[change.text_document.uri][1]
                if change.text_document.version not in (None, have):
                    reason = f"version mismatch: edit for {change.text_document.version}, buffer is {have}"
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason=reason)
        for change in changes:
            if isinstance(change, types.CreateFile):
                target = Path(change.uri.removeprefix("file://"))
                target.parent.mkdir(parents=True, exist_ok=True)
                if not target.exists():
                    target.write_text("")
            elif isinstance(change, types.DeleteFile):  # as the editors do: the file goes, its buffer too
                Path(change.uri.removeprefix("file://")).unlink()
                self.docs.pop(change.uri, None)
            elif isinstance(change, types.RenameFile):
                target = Path(change.new_uri.removeprefix("file://"))
                if target.exists() and not (change.options and change.options.overwrite):
                    return types.ApplyWorkspaceEditResult(applied=False, failure_reason=f"{target} exists")
                Path(change.old_uri.removeprefix("file://")).rename(target)
                if change.old_uri in self.docs:
                    self.docs[change.new_uri] = self.docs.pop(change.old_uri)
            elif isinstance(change, types.TextDocumentEdit):
                uri = change.text_document.uri
                edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
                if uri in self.docs:
                    self.change(Path(uri.removeprefix("file://")), apply_text_edits(self.docs[uri][0], edits))
                else:
                    target = Path(uri.removeprefix("file://"))
                    target.write_text(apply_text_edits(target.read_text(), edits))
        return types.ApplyWorkspaceEditResult(applied=True)


def last_seq(s: Session, conversation_id: str) -> int:
    """The seq of the last event received for the conversation (0 when none)."""
    seqs = s.seqs(conversation_id)
    return seqs[-1] if seqs else 0


async def wait_idle(s: Session, conversation_id: str, after_seq: int, timeout: float = WAIT_S) -> dict[str, Any]:
    """Wait for the conversation to come to rest (``idle``) after its event ``after_seq``."""
    return await s.wait_event(
        lambda e: e["conversationId"] == conversation_id and e["seq"] > after_seq and e["kind"] == "status"
        and e["status"] == "idle",
        timeout,
    )


async def await_status(s: Session, conversation_id: str, status: str, timeout: float = WAIT_S) -> dict[str, Any]:
    """The conversation's ``phoenix/getConversation`` answer once its status is ``status``, for plain clients
    (no phoenix/event): asked again only when the server sent something (progress, a dialog, a message)."""

    async def reached() -> dict[str, Any] | None:
        conv = await s.request("phoenix/getConversation", {"conversationId": conversation_id})
        return dict(conv) if conv["status"] == status else None

    conv: dict[str, Any] = await s.wait_until(reached, timeout, f"conversation {conversation_id} {status!r}")
    return conv


def _waking(handler: Callable[..., Any], s: Session) -> Callable[..., Any]:
    """``handler`` (a pytest-lsp client feature), then wake ``s``'s waiters."""

    def handle(ls: LanguageClient, params: Any) -> Any:
        result = handler(ls, params)
        s._changed.set()
        return result

    return handle
