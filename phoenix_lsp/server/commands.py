"""Commands and code actions for editors without the phoenix protocol (REQ-PROTO-038).

Any LSP editor can run ``workspace/executeCommand`` and show code actions. These let a plain user ask about a
selection, start a conversation, write follow-ups in the conversation's transcript (saving it sends them),
cancel, and switch mode and policy, without ever calling a ``phoenix/*`` method. The commands act on the
plain user's *current* conversation (``PlainView.current``), which the first question creates.

Every command answers ``{conversationId, transcript, ...}`` so a client that can show a result may.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from .. import uris
from ..protocol import params as p
from ..protocol.names import COMMAND_NAMES
from . import requests, transcript
from .errors import PhoenixError, invalid
from .features import messages
from .lsp import PhoenixServer
from .runtime import Runtime

ASK, NEW, SEND, SHOW, CANCEL, RESTRICTED, UNRESTRICTED, AUTO, INTERACTIVE = COMMAND_NAMES

#: canned questions offered as code actions on a selection
QUESTIONS = {
    "Ask Phoenix: explain this": "Explain what this code does.",
    "Ask Phoenix: find problems in this": "Find bugs or problems in this code and say how to fix them.",
}


def _options(args: tuple[Any, ...]) -> dict[str, Any]:
    """The one optional object argument of a command (Neovim sends ``[]`` for an empty table)."""
    first = args[0] if args else None
    return first if isinstance(first, dict) else {}


def _current(ls: PhoenixServer) -> Runtime | None:
    """The plain user's current conversation, or None when there is none."""
    view = ls.plain.view
    if view.current is not None:
        try:
            return requests.conversation(ls, view.current)
        except PhoenixError:
            view.current = None
    return None


def _runtime(ls: PhoenixServer) -> Runtime:
    """The plain user's current conversation, created on first use."""
    current = _current(ls)
    if current is not None:
        return current
    created = requests.call(ls, "phoenix/newConversation", {})
    ls.plain.view.current = created["conversationId"]
    return requests.conversation(ls, ls.plain.view.current)


def _answer(ls: PhoenixServer, runtime: Runtime, **extra: Any) -> dict[str, Any]:
    return {"conversationId": runtime.id, "transcript": str(ls.plain.view.path(runtime.id)), **extra}


def _selection(ls: PhoenixServer, runtime: Runtime, options: dict[str, Any]) -> str:
    """The selected text of ``options`` ({uri, range}) as a fenced block naming the file and lines ('' if none)."""
    uri, rng = options.get("uri"), options.get("range")
    if not isinstance(uri, str) or not isinstance(rng, dict):
        return ""
    document = ls.workspace.get_text_document(uri)
    lines = document.source.split("\n")
    try:
        first, last = int(rng["start"]["line"]), int(rng["end"]["line"])
        end_char = int(rng["end"]["character"])
    except (KeyError, TypeError, ValueError):
        return ""
    if end_char == 0 and last > first:
        last -= 1  # a selection that ends at the start of a line does not include that line
    text = "\n".join(lines[first : last + 1])
    if not text.strip():
        return ""
    path = _file_of(document.uri)
    try:
        name = str(path.relative_to(runtime.state.working_directory)) if path is not None else document.uri
    except ValueError:
        name = str(path)
    fence = "````" if "```" in text else "```"
    return f"In `{name}`, lines {first + 1}-{last + 1}:\n{fence}{document.language_id or ''}\n{text}\n{fence}"


def _send(ls: PhoenixServer, runtime: Runtime, text: str) -> dict[str, Any]:
    ls.plain.view.current = runtime.id
    sent = messages.send_text(ls, p.SendMessageParams(conversation_id=runtime.id, text=text))
    if runtime.id not in ls.plain.view.shown:
        ls.plain.view.show(runtime, focus=True)
    return _answer(ls, runtime, messageId=sent.message_id)


def ask(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
    """``phoenix.ask {question?, uri?, range?}``: ask about a selection; without a question, open the transcript
    with the selection in the draft so the user writes the question there and saves."""
    options = _options(args)
    runtime = _runtime(ls)
    context = _selection(ls, runtime, options)
    question = str(options.get("question") or "").strip()
    if not question:
        draft = f"{context}\n\n" if context else ""
        ls.plain.view.write(runtime, draft=f"{draft}(write your question here, then save)\n")
        ls.plain.view.show(runtime, focus=True, at_draft=True)
        return _answer(ls, runtime, waitingForQuestion=True)
    return _send(ls, runtime, f"{question}\n\n{context}" if context else question)


def new_conversation(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
    """``phoenix.newConversation {question?}``: start a conversation and open its transcript."""
    ls.plain.view.current = None
    runtime = _runtime(ls)
    question = str(_options(args).get("question") or "").strip()
    if question:
        return _send(ls, runtime, question)
    ls.plain.view.show(runtime, focus=True, at_draft=True)
    return _answer(ls, runtime)


def send(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
    """``phoenix.send {uri}``: send the draft written at the end of a transcript."""
    uri = _options(args).get("uri")
    if not isinstance(uri, str):
        raise invalid("arguments[0].uri", "phoenix.send needs {uri}: the transcript whose draft to send.")
    cid = transcript.conversation_of(Path(ls.workspace.get_text_document(uri).path))
    if cid is None:
        raise invalid("arguments[0].uri", f"{uri} is not a Phoenix transcript: write your message at the "
                             "end of a conversation's transcript (phoenix.showConversation opens it).")
    sent = send_draft(ls, cid, ls.workspace.get_text_document(uri).source)
    return sent or _answer(ls, requests.conversation(ls, cid))


def send_draft(ls: PhoenixServer, conversation_id: str, text: str) -> dict[str, Any] | None:
    """Send the draft of a transcript's text, if it has one (None when there is nothing to send)."""
    draft = transcript.draft_of(text).replace("(write your question here, then save)", "").strip()
    if not draft or draft == ls.plain.view.sent_drafts.get(conversation_id):
        return None
    runtime = requests.conversation(ls, conversation_id)
    answer = _send(ls, runtime, draft)
    ls.plain.view.sent_drafts[conversation_id] = transcript.draft_of(text)
    ls.plain.view.write(runtime, draft="")
    return answer


def show(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
    """``phoenix.showConversation``: open the current conversation's transcript."""
    runtime = _runtime(ls)
    ls.plain.view.show(runtime, focus=True, at_draft=True)
    return _answer(ls, runtime)


def cancel(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
    """``phoenix.cancel``: stop the current conversation's turn."""
    runtime = _current(ls)
    if runtime is None:
        return {"cancelled": False}
    return {**requests.call(ls, "phoenix/cancel", {"conversationId": runtime.id}), **_answer(ls, runtime)}


def _mode(mode: str) -> Callable[..., dict[str, Any]]:
    def command(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
        runtime = _runtime(ls)
        result = requests.call(ls, "phoenix/setMode", {"conversationId": runtime.id, "mode": mode})
        ls.plain.view.write(runtime)
        return {**result, **_answer(ls, runtime)}

    command.__doc__ = f"``phoenix.{mode}``: switch the current conversation to {mode}."
    return command


def _policy(policy: str) -> Callable[..., dict[str, Any]]:
    def command(ls: PhoenixServer, *args: Any) -> dict[str, Any]:
        runtime = _runtime(ls)
        result = requests.call(ls, "phoenix/setApprovalPolicy", {"conversationId": runtime.id, "policy": policy})
        return {**result, **_answer(ls, runtime)}

    command.__doc__ = f"``phoenix.{policy}``: set the current conversation's approval policy to {policy}."
    return command


def _action(title: str, command: str, argument: dict[str, Any] | None = None) -> types.CodeAction:
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.Empty,
        command=types.Command(title=title, command=command, arguments=[argument or {}]),
    )


def _file_of(uri: str) -> Path | None:
    """The local file a document's URI names, by the one URI rule (REQ-URI-001), or None."""
    try:
        return Path(uris.file_path(uri))
    except uris.UriError:
        return None


def code_actions(ls: PhoenixServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    """Code actions offering the commands: questions on a selection, and the conversation's controls."""
    uri, rng = params.text_document.uri, params.range
    actions: list[types.CodeAction] = []
    document = ls.workspace.get_text_document(uri)
    path = _file_of(uri)
    cid = transcript.conversation_of(path) if path is not None else None
    if cid is not None and transcript.draft_of(document.source):
        actions.append(_action("Phoenix: send the message written below the line", SEND, {"uri": uri}))
    if cid is None and (rng.start.line, rng.start.character) != (rng.end.line, rng.end.character):
        where = {
            "uri": uri,
            "range": {
                "start": {"line": rng.start.line, "character": rng.start.character},
                "end": {"line": rng.end.line, "character": rng.end.character},
            },
        }
        for title, question in QUESTIONS.items():
            actions.append(_action(title, ASK, {**where, "question": question}))
        actions.append(_action("Ask Phoenix… (write the question in the transcript)", ASK, where))
    runtime = _current(ls)
    if runtime is not None:
        actions.append(_action("Phoenix: show the conversation", SHOW))
        if runtime.busy:
            actions.append(_action("Phoenix: cancel", CANCEL))
        if runtime.state.mode.value == "restricted":
            actions.append(_action("Phoenix: switch to unrestricted (allow changes)", UNRESTRICTED))
        else:
            actions.append(_action("Phoenix: switch to restricted (read-only)", RESTRICTED))
        if runtime.state.policy.value == "interactive":
            actions.append(_action("Phoenix: policy auto (run changes without asking)", AUTO))
        else:
            actions.append(_action("Phoenix: policy interactive (ask before changes)", INTERACTIVE))
    actions.append(_action("Phoenix: new conversation", NEW))
    return actions


def did_save(ls: PhoenixServer, params: types.DidSaveTextDocumentParams) -> None:
    """Saving a transcript with text below the draft marker sends that text."""
    uri = params.text_document.uri
    path = _file_of(uri)
    if path is None:
        return
    document = ls.workspace.get_text_document(uri)
    cid = transcript.conversation_of(path)
    if cid is None or ls.hub is None or not requests.hub(ls).store.exists(cid):
        return
    text = params.text if params.text is not None else document.source
    try:
        send_draft(ls, cid, text)
    except Exception as exc:  # a busy conversation: say so, keep the draft for the next save
        ls.window_show_message(types.ShowMessageParams(
            type=types.MessageType.Warning,
            message=f"Phoenix did not send your message: {getattr(exc, 'message', exc)}",
        ))


def _command(handler: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    """``handler`` with annotations pygls can resolve at run time (it reads them to pass the arguments)."""

    def run(ls: Any, *args: Any) -> dict[str, Any]:
        return handler(ls, *args)

    return run


#: each command's handler, with annotations pygls can resolve at run time (installed by ``served.py``)
HANDLERS: dict[str, Callable[..., dict[str, Any]]] = {name: _command(handler) for name, handler in {
    ASK: ask,
    NEW: new_conversation,
    SEND: send,
    SHOW: show,
    CANCEL: cancel,
    RESTRICTED: _mode("restricted"),
    UNRESTRICTED: _mode("unrestricted"),
    AUTO: _policy("auto"),
    INTERACTIVE: _policy("interactive"),
}.items()}
