"""The phoenix-lsp language server: pygls wiring for the phoenix/* protocol (specs/protocol.md).

Handlers validate params (pydantic), turn them into core events on the conversation's ``Runtime`` and map a
refusal to a JSON-RPC error. Rich clients (``capabilities.experimental.phoenix``) get ``phoenix/event``;
plain clients get approvals through ``window/showMessageRequest`` and progress through ``$/progress``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import importlib
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __name__ as _pkg
from ..protocol.converter import plain_converter
from . import commands, confirm, plain
from .lazy import LazyModule
from .plain import PlainView
from .settings import DEFAULT_MODEL

if TYPE_CHECKING:
    from ..core.effects import Reject
    from ..core.values import ToolUse
    from ..protocol.models import P
    from .runtime import Hub, Runtime

# Imported on first use: the editor waits for `initialize`, and pygls' own imports already take most of
# the 300 ms start-up budget.
events = LazyModule("phoenix_lsp.core.events")
values = LazyModule("phoenix_lsp.core.values")
core_state = LazyModule("phoenix_lsp.core.state")
m = LazyModule("phoenix_lsp.protocol.models")
rt = LazyModule("phoenix_lsp.server.runtime")

log = logging.getLogger(_pkg)
VERSION = "0.1.0"
METHODS = [
    "phoenix/newConversation",
    "phoenix/listConversations",
    "phoenix/getConversation",
    "phoenix/sendMessage",
    "phoenix/cancel",
    "phoenix/setMode",
    "phoenix/respondToModeUpgrade",
    "phoenix/respondToApproval",
    "phoenix/setApprovalPolicy",
    "phoenix/setStyle",
    "phoenix/triggerContinuation",
    "phoenix/getAuditLog",
    "phoenix/listAlwaysAllowed",
    "phoenix/revokeAlwaysAllow",
]


class PhoenixError(JsonRpcException):
    """A JSON-RPC error with the protocol's code and ``data.kind`` (REQ-PROTO-003)."""

    def __init__(self, code: int, kind: str, message: str, **data: Any) -> None:
        super().__init__(message, code, {"kind": kind, **data})


def invalid(field: str, message: str) -> PhoenixError:
    return PhoenixError(-32602, "invalidParams", message, field=field)


REJECT_CODES = {
    "busy": (-32002, "agentBusy"),
    "no_such_approval": (-32003, "requestNotOpen"),
    "no_pending_upgrade": (-32003, "requestNotOpen"),
    "sandbox_unavailable": (-32004, "sandboxUnavailable"),
    "context_exhausted": (-32005, "contextExhausted"),
    "empty_message": (-32602, "invalidParams"),
}


def refusal(runtime: Runtime, reject: Reject) -> PhoenixError:
    code, kind = REJECT_CODES.get(reject.code, (-32006, "notAllowed"))
    if reject.code == "illegal_event" and isinstance(runtime.state.status, core_state.BUSY):
        code, kind = -32002, "agentBusy"
        message = (
            f"The agent is busy ({runtime.state.status.kind}); wait for it, or cancel the current operation "
            "with phoenix/cancel and try again."
        )
        return PhoenixError(code, kind, message, status=runtime.state.status.kind)
    if reject.code == "illegal_event" and isinstance(runtime.state.status, core_state.Exhausted):
        code, kind = -32005, "contextExhausted"
    extra: dict[str, Any] = {"status": runtime.state.status.kind, "reason": reject.code}
    if kind == "invalidParams":
        extra["field"] = "text"
    return PhoenixError(code, kind, reject.message, **extra)


class PhoenixProtocol(LanguageServerProtocol):
    """Adds ``capabilities.experimental.phoenix`` to the InitializeResult (pygls builds it after our handler)."""

    _server: PhoenixServer

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = self._server.experimental
        return result


class PhoenixServer(LanguageServer):
    """The server object: one Hub of conversations and what it knows about its client."""

    def __init__(self, data_dir: str | None = None) -> None:
        super().__init__("phoenix-lsp", VERSION, protocol_cls=PhoenixProtocol, converter_factory=plain_converter)
        self.experimental: dict[str, Any] = {}
        self.init_options: Any = None
        self.setup_error: str | None = None
        self.sandbox: Any = None
        self.data_dir = data_dir
        self.hub: Hub | None = None
        self.rich = False
        self.plain_requests: dict[str, asyncio.Task[Any]] = {}
        self._asked = 0  # numbers the window/showMessageRequest ids, so a dialog can be withdrawn by id
        self.progress: dict[str, str] = {}
        # reports/ends of a token whose begin is not out yet (create is a round trip to the client)
        self.progress_held: dict[str, list[types.WorkDoneProgressReport | types.WorkDoneProgressEnd]] = {}
        self.plain = PlainView(self)  # transcripts and turn messages for plain clients (plain.py)

    # ------------------------------------------------------------------------------------------ sink

    def event(self, params: dict[str, Any]) -> None:
        if self.rich:
            self.protocol.notify("phoenix/event", params)
            return
        self._plain_progress(params)
        self.plain.on_event(params)

    def _plain_progress(self, params: dict[str, Any]) -> None:
        """REQ-PROTO-024: plain clients see a turn as $/progress and problems as window/showMessage."""
        kind, cid = params["kind"], params["conversationId"]
        caps = self.client_capabilities.window
        if kind == "error" or kind == "contextWarning":
            text = params.get("message") or f"Context {round(100 * params.get('fraction', 0))}% full."
            self.window_show_message(types.ShowMessageParams(type=types.MessageType.Warning, message=text))
        if not (caps and caps.work_done_progress):
            return
        if kind == "status":
            token = self.progress.get(cid)
            if params["status"] in ("idle", "error", "exhausted", "finished"):
                if token:
                    self.progress.pop(cid)
                    self._progress_send(token, types.WorkDoneProgressEnd(message=plain.end_words(params["status"])))
            elif token is None:
                token = f"phoenix-{cid}-{params['seq']}"
                self.progress[cid] = token
                self.progress_held[token] = []
                self.hub_spawn(self._begin(token, cid))
            else:
                self._progress_send(token, types.WorkDoneProgressReport(message=plain.status_words(params["status"])))
        elif kind in ("toolStart", "retry") and cid in self.progress:
            text = plain.tool_words(params["toolName"], params["arguments"]) if kind == "toolStart" else (
                plain.retry_words(params))
            self._progress_send(self.progress[cid], types.WorkDoneProgressReport(message=text))

    def _progress_send(self, token: str, value: types.WorkDoneProgressReport | types.WorkDoneProgressEnd) -> None:
        """Send a report or the end, or hold it until the token's begin is out (LSP: begin comes first)."""
        held = self.progress_held.get(token)
        if held is not None:
            held.append(value)
        elif isinstance(value, types.WorkDoneProgressEnd):
            self.work_done_progress.end(token, value)
        else:
            self.work_done_progress.report(token, value)

    async def _begin(self, token: str, cid: str) -> None:
        try:
            await self.work_done_progress.create_async(token)
            runtime = self.hub.runtimes.get(cid) if self.hub else None
            title = plain.title_of(runtime) if runtime else "Phoenix"  # REQ-PROTO-024: the conversation's title
            self.work_done_progress.begin(token, types.WorkDoneProgressBegin(title=title, message="Thinking…"))
        finally:
            held = self.progress_held.pop(token, [])
        for value in held:
            self._progress_send(token, value)

    def hub_spawn(self, coro: Any) -> None:
        assert self.hub is not None
        self.hub.spawn(coro)

    def ask_approval(self, runtime: Runtime, approval_id: str, call: ToolUse) -> None:
        if self.rich:
            return
        text = plain.approval_text(runtime, call, rt.describe_tool(call.name))
        decision = values.Decision
        actions = {"Allow": decision.ALLOW, "Deny": decision.DENY, "Always Allow": decision.ALWAYS_ALLOW}

        async def ask() -> None:
            choice = await self._show(approval_id, text, list(actions))
            if choice is not False:  # False: the client could not answer; the request stays open
                runtime.answer_approval(approval_id, actions.get(choice or "Deny", decision.DENY))

        self._ask_plain(approval_id, ask())

    def ask_upgrade(self, runtime: Runtime, request_id: str, reason: str) -> None:
        if self.rich:
            return
        text = f"phoenix asks for Unrestricted mode (write access) in conversation {runtime.id[:8]}: {reason}"

        async def ask() -> None:
            choice = await self._show(request_id, text, ["Approve", "Deny"])
            if choice is not False:
                runtime.answer_upgrade(choice == "Approve")

        self._ask_plain(request_id, ask())

    def _ask_plain(self, request_id: str, ask: Any) -> None:
        if self.hub is None:
            return
        self.plain_requests[request_id] = self.hub.spawn(ask)

    async def _show(self, request_id: str, text: str, titles: list[str]) -> str | bool | None:
        """The title the user chose, None when dismissed (counts as deny), False when the client failed."""
        params = types.ShowMessageRequestParams(
            type=types.MessageType.Warning, message=text, actions=[types.MessageActionItem(title=t) for t in titles]
        )
        self._asked += 1
        msg_id = f"phoenix-ask-{self._asked}"
        try:
            result = await self.protocol.send_request_async("window/showMessageRequest", params, msg_id=msg_id)
        except asyncio.CancelledError:
            # Answered some other way (another client, a cancel): take the dialog back (REQ-PROTO-023).
            with contextlib.suppress(Exception):
                self.protocol.notify("$/cancelRequest", types.CancelParams(id=msg_id))
            raise
        except Exception as exc:  # REQ-PERM-016: never approve by default; the request stays pending
            log.warning("could not ask the client about %s (%s); it stays pending", request_id, exc)
            return False
        finally:
            self.plain_requests.pop(request_id, None)
        if result is None:
            return None  # dismissed (Escape) counts as deny
        title = result.get("title") if isinstance(result, dict) else getattr(result, "title", None)
        return str(title) if title else None

    def withdraw(self, runtime: Runtime, request_id: str) -> None:
        task = self.plain_requests.pop(request_id, None)
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def open_documents(self) -> Mapping[Path, str]:
        docs: dict[Path, str] = {}
        for uri, doc in self.workspace.text_documents.items():
            if uri.startswith("file://"):
                docs[Path(doc.path)] = doc.source
        return docs

    async def apply_patch(self, runtime: Runtime, call: ToolUse) -> tuple[str, bool]:
        from .edits import apply_patch

        return await apply_patch(self, runtime, call)


server = PhoenixServer()


def _hub(ls: PhoenixServer) -> Hub:
    if ls.hub is None:
        if ls.setup_error:
            raise PhoenixError(-32603, "setupFailed", ls.setup_error)
        raise PhoenixError(-32002, "notInitialized", "The server is not initialized yet: send initialize first.")
    return ls.hub


_sdk_warm: list[threading.Thread] = []


def _warm_up() -> None:
    importlib.import_module("anthropic")
    from ..sandbox import policy

    policy.pids_cgroup_parent()  # the one-time cgroup probe of the first restricted command


def _warm_sdk() -> None:
    """The SDK takes about a second to import. Load it in the background once a conversation is in use, so
    the first message does not wait for it — but not at start-up, where it would slow the first requests.
    The sandbox's one-time cgroup probe runs there too."""
    if not _sdk_warm:
        thread = threading.Thread(target=_warm_up, daemon=True)
        _sdk_warm.append(thread)
        thread.start()


def _conversation(ls: PhoenixServer, conversation_id: str) -> Runtime:
    try:
        runtime = _hub(ls).get(conversation_id)
        _warm_sdk()
        return runtime
    except rt.NotFound as exc:
        raise PhoenixError(-32001, "conversationNotFound", str(exc), conversationId=conversation_id) from None


def _parse(model: type[P], params: Any) -> P:
    try:
        return m.parse(model, params)
    except m.InvalidParams as exc:
        raise invalid(exc.field, exc.message) from None


def _sandbox_info(sandbox: Any) -> dict[str, Any]:
    return {
        "available": bool(sandbox.available),
        "landlockAbi": sandbox.landlock_abi,
        "reason": sandbox.reason,
        "missing": list(sandbox.missing),
    }


@server.feature(types.INITIALIZE)
def initialize(ls: PhoenixServer, params: types.InitializeParams) -> None:
    """Answer fast: only what the InitializeResult needs. The rest is set up in ``initialized``."""
    from ..sandbox import probe

    experimental = params.capabilities.experimental
    ls.rich = isinstance(experimental, dict) and "phoenix" in experimental
    ls.init_options = params.initialization_options
    ls.sandbox = probe()
    ls.experimental = {"phoenix": {"version": 1, "methods": METHODS, "sandbox": _sandbox_info(ls.sandbox)}}


#: Sub-agent limits from the environment (REQ-BED-008): variable -> (HubConfig field, type, smallest value).
AGENT_LIMITS: dict[str, tuple[str, type, float]] = {
    "PHOENIX_AGENT_TIME_LIMIT_S": ("agent_time_limit_s", float, 0.001),
    "PHOENIX_AGENT_MAX_TURNS": ("agent_max_turns", int, 1),
    "PHOENIX_AGENT_CONCURRENCY": ("agent_concurrency", int, 1),
}


def _agent_limits(ls: PhoenixServer, config: Any) -> None:
    """Apply the sub-agent limits set in the environment; a bad value is reported and the default kept."""
    for variable, (name, kind, smallest) in AGENT_LIMITS.items():
        raw = os.environ.get(variable, "").strip()
        if not raw:
            continue
        try:
            value = kind(raw)
            if value < smallest:
                raise ValueError(f"it must be at least {smallest:g}")
        except ValueError as exc:
            default = getattr(config, name)
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"phoenix-lsp: ignoring {variable}={raw!r} ({exc}); using the default {default}. "
                    f"Set it to a {kind.__name__} of at least {smallest:g}.",
                )
            )
            continue
        setattr(config, name, value)


def _setup(ls: PhoenixServer) -> Hub:
    """Open the store and build the hub of conversations, from initialization options and the environment."""
    from ..llm.client import LlmClient
    from ..store import Store

    raw = ls.init_options
    options = m.InitializationOptions()
    if isinstance(raw, dict):
        try:
            options = m.InitializationOptions.model_validate(raw)
        except Exception as exc:  # REQ-PROTO-034: report and fall back to defaults, never fail initialize
            ls.window_show_message(
                types.ShowMessageParams(
                    type=types.MessageType.Warning,
                    message=f"phoenix-lsp: ignoring invalid initializationOptions ({str(exc)[:300]}); "
                    "using defaults.",
                )
            )
    data_dir = options.data_dir or ls.data_dir or os.environ.get("PHOENIX_LSP_DATA_DIR")
    store = Store(Path(data_dir) / "phoenix.db" if data_dir else Store.default_path())
    _setup_logging(str(store.path.parent))
    api_key = options.anthropic_api_key or os.environ.get("ANTHROPIC_API_KEY")
    if api_key:
        store.guard.add_secret(api_key)
        SECRETS.add(api_key)
    llm = LlmClient(api_key=api_key, base_url=options.anthropic_base_url)
    retry = options.retry_base_ms
    if retry is None:
        retry = int(os.environ.get("PHOENIX_RETRY_BASE_MS", "1000"))
    config = rt.HubConfig(
        model=options.model or os.environ.get("PHOENIX_MODEL") or DEFAULT_MODEL,
        retry_base_ms=retry,
        bash_timeout_s=options.bash_timeout_s,
        env=rt.tool_env(),
    )
    _agent_limits(ls, config)
    hub: Hub = rt.Hub(store, llm, ls.sandbox, config, ls)
    return hub


class ClientLogHandler(logging.Handler):
    """Forwards the server's own log records to the client as window/logMessage, secrets redacted."""

    LEVELS = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, ls: PhoenixServer, redact: Any) -> None:
        super().__init__(logging.INFO)
        self.ls = ls
        self.redact = redact

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = self.LEVELS.get(record.levelno, types.MessageType.Log)
            text = self.redact(self.format(record))
            self.ls.window_log_message(types.LogMessageParams(type=kind, message=text))
        except Exception:  # logging must never break the server
            self.handleError(record)


@server.feature(types.INITIALIZED)
def initialized(ls: PhoenixServer, params: types.InitializedParams) -> None:
    try:
        ls.hub = hub = _setup(ls)
    except Exception as exc:  # say why every later request fails, instead of "not initialized"
        log.exception("start-up failed")
        ls.setup_error = (
            f"phoenix-lsp could not start: {exc}. Check the data directory and the settings "
            "(phoenix-lsp doctor), then restart the server."
        )
        ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=ls.setup_error))
        return
    client_log = ClientLogHandler(ls, hub.store.guard.redact)
    client_log.setFormatter(RedactingFormatter("%(name)s: %(message)s"))
    logging.getLogger(_pkg).addHandler(client_log)
    restored = hub.restore()
    if restored:
        log.info("restored %d conversations after a restart", restored)
    warning = hub.sandbox.warning()
    if warning:  # REQ-BASH-009: say what is missing, in the log and to the user
        log.warning("%s", warning)
        ls.window_show_message(
            types.ShowMessageParams(
                type=types.MessageType.Warning, message=f"phoenix-lsp: {warning} Run `phoenix-lsp doctor` for details."
            )
        )


@server.feature(types.SHUTDOWN)
def shutdown(ls: PhoenixServer, params: None) -> None:
    from ..sandbox.spawn import kill_background_jobs

    if ls.hub is not None:
        for task in list(ls.hub.tasks):
            task.cancel()
    kill_background_jobs()


@server.feature("phoenix/newConversation")
def new_conversation(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.NewConversationParams, params)
    hub = _hub(ls)
    _warm_sdk()
    cwd = p.working_directory or (ls.workspace.root_path if ls.workspace.root_path else None) or os.getcwd()
    path = Path(cwd)
    if not path.is_absolute() or not path.is_dir():
        raise invalid("workingDirectory", f"Invalid params: 'workingDirectory': {cwd!r} is not an existing "
                      "absolute directory. Give the folder the agent should work in.")
    origin: Runtime | None = None
    if p.continue_from:
        origin = _conversation(ls, p.continue_from)
        if not isinstance(origin.state.status, core_state.Exhausted):
            raise PhoenixError(-32006, "notAllowed", "continueFrom must name a conversation whose context is "
                               "exhausted; this one can still take messages.", reason="not_exhausted")
    seed: Any = None
    if origin is not None and p.seed_with_summary:
        summary = origin.state.status.summary  # type: ignore[union-attr]
        text = f"[system] This conversation continues an earlier one ({origin.id}). Its summary:\n{summary}"
        seed = values.Message("user", (values.Text(text),), tag="continuation")
    runtime = hub.create(
        working_directory=str(path.resolve()),
        model=p.model,
        style=p.style,
        policy=p.approval_policy,
        origin_id=origin.id if origin else None,
        seed=seed,
    )
    state = runtime.state
    return {
        "conversationId": runtime.id,
        "mode": state.mode.value,
        "style": state.style.value,
        "approvalPolicy": state.policy.value,
        "workingDirectory": state.working_directory,
        "model": state.model,
        "sandbox": _sandbox_info(hub.sandbox),
        **({"continuedFrom": origin.id} if origin else {}),
    }


@server.feature("phoenix/listConversations")
def list_conversations(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.ListConversationsParams, params)
    rows = _hub(ls).store.list_conversations(include_subagents=p.include_sub_agents)
    # REQ-PROTO-005: most recently updated first (the store orders by creation); sorted() is stable.
    rows = sorted(rows, key=lambda r: r.updated_at, reverse=True)
    return {
        "conversations": [
            {
                "conversationId": r.id,
                "title": r.title,
                "status": r.status,
                "model": r.model,
                "createdAt": r.created_at,
                "updatedAt": r.updated_at,
                "messageCount": r.message_count,
                **({"continuedFrom": r.origin_id} if r.origin_id else {}),
                **({"parentConversationId": r.parent_id} if r.parent_id else {}),
            }
            for r in rows
        ]
    }


@server.feature("phoenix/getConversation")
async def get_conversation(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    import json

    from . import wire

    p = _parse(m.GetConversationParams, params)
    runtime = _conversation(ls, p.conversation_id)
    hub = _hub(ls)
    after = p.after_seq or 0
    messages: list[dict[str, Any]] = []
    start = hub.store.first_index_after_seq(runtime.id, after) if after > 0 else 0
    page = hub.store.load_messages(runtime.id, after=start - 1, limit=p.limit + 1)
    has_more = len(page) > p.limit
    for index, text in page[: p.limit]:
        body = json.loads(text)
        message = runtime.state.history[index]
        messages.append(wire.message_to_wire(message, body["seq"], index, body["time"]))
        if len(messages) % 200 == 0:
            await asyncio.sleep(0)  # let $/cancelRequest in on huge histories
    state = runtime.state
    children = [r for r in hub.store.list_conversations(include_subagents=True) if r.parent_id == runtime.id]
    result: dict[str, Any] = {
        "conversationId": runtime.id,
        "isSubAgent": state.is_subagent,
        "status": state.status.kind,
        "mode": state.mode.value,
        "style": state.style.value,
        "approvalPolicy": state.policy.value,
        "workingDirectory": state.working_directory,
        "model": state.model,
        "alwaysAllowed": list(state.always_allow),
        "contextUsage": runtime.usage_fields(),
        "subAgents": [{"conversationId": c.id, "task": c.title, "status": c.status} for c in children],
        "messages": messages,
        "lastSeq": runtime.seq,
        "hasMore": has_more,
        "sandbox": _sandbox_info(hub.sandbox),
        **wire.pending_request(state, rt.describe_tool),
    }
    if isinstance(state.status, core_state.AwaitingApproval):  # the same fields as the approvalRequested event
        diff = runtime.patch_diff(state.status.batch.current)
        if diff is not None:
            result["pendingApproval"]["diff"] = diff
    if state.parent_id:
        result["parentConversationId"] = state.parent_id
    if state.origin_id:
        result["continuedFrom"] = state.origin_id
    if isinstance(state.status, core_state.Exhausted):
        result["continuationSummary"] = state.status.summary
    if state.status.kind == "error":
        result["error"] = state.status.message  # type: ignore[union-attr]
    return result


def _apply(runtime: Runtime, event: Any) -> None:
    reject = runtime.apply(event)
    if reject is not None:
        raise refusal(runtime, reject)


@server.feature("phoenix/sendMessage")
def send_message(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    from ..llm.images import ImageError, prepare_image

    p = _parse(m.SendMessageParams, params)
    runtime = _conversation(ls, p.conversation_id)
    hub = _hub(ls)
    command = p.text.strip()
    if command in ("/execute", "/plan"):
        _apply(runtime, events.UserMessage(command))
        return {
            "accepted": True,
            "messageId": str(len(runtime.state.history) - 1),
            "command": command[1:],
            "mode": runtime.state.mode.value,
        }
    if runtime.busy:  # refuse before decoding images: nothing is stored for a refused message
        _apply(runtime, events.UserMessage(p.text))
    images: list[Any] = []
    for i, img in enumerate(p.images):
        try:
            raw = base64.b64decode(img.data, validate=True)
            data, media_type = prepare_image(raw, img.media_type)
        except (binascii.Error, ValueError) as exc:
            reason = str(exc) if isinstance(exc, ImageError) else "the data is not valid base64"
            raise invalid(f"images[{i}]", f"Invalid params: 'images[{i}]': {reason}") from None
        images.append(values.Image(hub.store.put_image(data, media_type), media_type))
    # a pasted API key never reaches the model, the store or the events (REQ-SEC-001)
    _apply(runtime, events.UserMessage(hub.store.guard.redact(p.text), tuple(images)))
    return {"accepted": True, "messageId": str(len(runtime.state.history) - 1)}


@server.feature("phoenix/cancel")
def cancel(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.ConversationRef, params)
    runtime = _conversation(ls, p.conversation_id)
    was_busy = runtime.busy
    _apply(runtime, events.Cancel())
    return {"cancelled": was_busy, "status": runtime.state.status.kind}


@server.feature("phoenix/setMode")
def set_mode(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.SetModeParams, params)
    runtime = _conversation(ls, p.conversation_id)
    before = runtime.state.mode
    _apply(runtime, events.SetMode(p.mode))
    return {"mode": runtime.state.mode.value, "changed": runtime.state.mode is not before}


@server.feature("phoenix/respondToModeUpgrade")
def respond_to_mode_upgrade(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.RespondToModeUpgradeParams, params)
    runtime = _conversation(ls, p.conversation_id)
    status = runtime.state.status
    if p.request_id is not None and (status.kind != "awaiting_upgrade" or status.batch.current.id != p.request_id):  # type: ignore[union-attr]
        raise PhoenixError(-32003, "requestNotOpen", f"There is no open upgrade request '{p.request_id}': it was "
                           "already answered or cancelled. Nothing was changed.", requestId=p.request_id)
    reject = runtime.answer_upgrade(p.approve)
    if reject is not None:
        raise refusal(runtime, reject)
    return {"mode": runtime.state.mode.value}


@server.feature("phoenix/respondToApproval")
def respond_to_approval(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.RespondToApprovalParams, params)
    runtime = _conversation(ls, p.conversation_id)
    reject = runtime.answer_approval(p.approval_id, p.decision)
    if reject is not None:
        error = refusal(runtime, reject)
        error.data["requestId"] = p.approval_id
        raise error
    return {"approvalId": p.approval_id, "decision": p.decision.value}


@server.feature("phoenix/setApprovalPolicy")
def set_approval_policy(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.SetApprovalPolicyParams, params)
    runtime = _conversation(ls, p.conversation_id)
    _apply(runtime, events.SetPolicy(p.policy))
    return {"policy": runtime.state.policy.value}


@server.feature("phoenix/setStyle")
def set_style(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.SetStyleParams, params)
    runtime = _conversation(ls, p.conversation_id)
    runtime.suggestion = None
    _apply(runtime, events.SetStyle(p.style))
    suggestion = runtime.suggestion  # REQ-PROTO-014 / REQ-LAYER-006: a suggestion, never a mode change
    runtime.suggestion = None
    return {
        "style": runtime.state.style.value,
        "mode": runtime.state.mode.value,
        **({"suggestion": suggestion} if suggestion else {}),
    }


@server.feature("phoenix/triggerContinuation")
def trigger_continuation(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.ConversationRef, params)
    runtime = _conversation(ls, p.conversation_id)
    _apply(runtime, events.TriggerContinuation())
    return {"status": runtime.state.status.kind}


@server.feature("phoenix/getAuditLog")
def get_audit_log(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    import json

    p = _parse(m.GetAuditLogParams, params)
    rows = _hub(ls).store.query_audit(p.conversation_id, p.after_id, p.limit)
    entries = [
        {
            "id": r.id,
            "time": r.time,
            "conversationId": r.conversation_id,
            "actor": r.actor,
            "kind": r.action,
            "mode": r.mode,
            "style": r.style,
            "details": json.loads(r.detail),
        }
        for r in rows
    ]
    return {"entries": entries, **({"nextAfterId": entries[-1]["id"]} if len(entries) == p.limit else {})}


@server.feature("phoenix/listAlwaysAllowed")
def list_always_allowed(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.ConversationRef, params)
    runtime = _conversation(ls, p.conversation_id)
    return {"tools": [{"toolName": t} for t in runtime.state.always_allow]}


@server.feature("phoenix/revokeAlwaysAllow")
def revoke_always_allow(ls: PhoenixServer, params: Any) -> dict[str, Any]:
    p = _parse(m.RevokeAlwaysAllowParams, params)
    runtime = _conversation(ls, p.conversation_id)
    if p.tool_name not in runtime.state.always_allow:
        return {"revoked": False}
    _apply(runtime, events.RevokeAlwaysAllow(p.tool_name))
    runtime.emit("alwaysAllowChanged", toolName=p.tool_name, allowed=False)
    return {"revoked": True}


confirm.register(server)  # an open document must show an edit the editor says it applied
commands.register(server)  # executeCommand, code actions and transcripts for plain clients (commands.py)


def serve(tcp: str | None = None, data_dir: str | None = None) -> int:
    """Run the server until the client says exit (stdio) or forever (TCP). Logging starts in ``initialized``,
    in the data directory the settings choose (nothing logs before it)."""
    server.data_dir = data_dir
    if tcp:
        host, _, port = tcp.rpartition(":")
        if not port.isdigit():
            print(f"phoenix-lsp: --tcp wants HOST:PORT, got {tcp!r}", flush=True)
            return 2
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return 0


#: secrets that must never reach a log line (REQ-SEC-001); the API key is added when it is known
SECRETS: set[str] = set()


class RedactingFormatter(logging.Formatter):
    """Formats a record, then replaces every known secret (and the environment's API key) with [REDACTED]."""

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        env_key = os.environ.get("ANTHROPIC_API_KEY", "")
        for secret in sorted({*SECRETS, env_key} - {""}, key=len, reverse=True):
            if len(secret) >= 8:
                text = text.replace(secret, "[REDACTED]")
        return text


def _setup_logging(data_dir: str) -> None:
    """Log to a file in the data directory (never to stdout: that is the LSP channel)."""
    level = os.environ.get("PHOENIX_LOG_LEVEL", "INFO").upper()
    try:
        directory = Path(data_dir)
        directory.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(directory / "phoenix-lsp.log")
    except OSError:
        handler = logging.StreamHandler()  # stderr
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level, logging.INFO))
    logging.getLogger("pygls").setLevel(logging.WARNING)


__all__ = ["PhoenixServer", "serve", "server"]
