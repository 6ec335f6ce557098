"""A plain LSP editor (no phoenix protocol) uses the agent through commands, code actions, a transcript,
$/progress and window/showMessage only (REQ-PROTO-023, 024, 038..041). Real server, pytest-lsp client."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import Buffers, Session, session, tool_results
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

SOURCE = "def add(a, b):\n    return a + b\n"


class _Seen:
    """What the plain user saw: documents the server opened and window/showMessage texts (pytest-lsp records
    both and answers showDocument with success)."""

    def __init__(self, s: Session) -> None:
        self.client = s.client

    @property
    def documents(self) -> list[types.ShowDocumentParams]:
        return list(self.client.shown_documents)

    @property
    def messages(self) -> list[str]:
        return [m.message for m in self.client.messages]


async def _command(s: Session, command: str, argument: dict[str, Any] | None = None) -> Any:
    params = types.ExecuteCommandParams(command=command, arguments=[argument or {}])
    return await s.client.workspace_execute_command_async(params)


async def _actions(s: Session, uri: str, start: tuple[int, int], end: tuple[int, int]) -> list[dict[str, Any]]:
    """The code actions offered at a range, as ``{title, command, arguments}``."""
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(*start), types.Position(*end)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    out = []
    for item in await s.client.text_document_code_action_async(params) or []:
        if isinstance(item, types.CodeAction) and item.command is not None:
            out.append({"title": item.title, "command": item.command.command, "arguments": item.command.arguments})
        elif isinstance(item, types.Command) and item.command.startswith("{"):
            # lsprotocol's client side structures every object with a "command" key as a Command, so a
            # CodeAction arrives as a Command whose "command" is the repr of the action's own command
            raw = ast.literal_eval(item.command)
            out.append({"title": item.title, "command": raw["command"], "arguments": raw["arguments"]})
    return out


def _open(s: Session, name: str, text: str) -> str:
    path = s.workdir / name
    path.write_text(text)
    uri = path.as_uri()
    s.client.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, text))
    )
    return uri


@pytest.mark.req("REQ-PROTO-038", "REQ-PROTO-039", "REQ-PROTO-024")
async def test_ask_on_a_selection_through_a_code_action_and_read_the_answer(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("It adds the two numbers and returns the sum.", deltas=4))
    async with session(fake_anthropic, tmp_path, rich=False) as s:
        seen = _Seen(s)
        provider = s.initialize_result.capabilities.execute_command_provider
        assert {"phoenix.ask", "phoenix.newConversation", "phoenix.cancel", "phoenix.restricted",
                "phoenix.unrestricted"} <= set(provider.commands)
        uri = _open(s, "calc.py", SOURCE)
        actions = await _actions(s, uri, (0, 0), (2, 0))
        titles = [a["title"] for a in actions]
        assert "Ask Phoenix: explain this" in titles and "Phoenix: new conversation" in titles
        explain = next(a for a in actions if a["title"] == "Ask Phoenix: explain this")
        result = await _command(s, explain["command"], explain["arguments"][0])
        await s.wait_until(lambda: any("It adds the two numbers" in m for m in seen.messages), what="the answer shown")

        # the model got the question with the selected code and where it is
        sent = fake_anthropic.requests[0].messages[0]["content"]
        text = sent if isinstance(sent, str) else " ".join(b.get("text", "") for b in sent)
        assert "Explain what this code does." in text and "calc.py" in text and "return a + b" in text
        # the transcript holds question and answer and was opened in the editor
        transcript = Path(result["transcript"])
        assert transcript.parent.parent == s.data_dir
        body = transcript.read_text()
        assert "## You" in body and "return a + b" in body and "It adds the two numbers" in body
        await s.wait_until(lambda: seen.documents, what="the transcript opened")
        assert [d.uri for d in seen.documents] == [transcript.as_uri()]
        # $/progress: titled like the conversation, reported in words
        cid = result["conversationId"]

        def reports() -> list[Any]:
            return [r for token, rs in s.client.progress_reports.items() if cid in str(token) for r in rs]

        def ended() -> bool:
            return any(isinstance(r, types.WorkDoneProgressEnd) for r in reports())

        await s.wait_until(ended, what="the progress ended")
        reports = reports()
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert reports[0].title.startswith("Explain what this code does.")
        words = [r.message for r in reports[1:]]
        assert words[-1] == "Answered"
        assert not any(w in ("awaiting_llm", "idle", "running_tool") for w in words)


@pytest.mark.req("REQ-PROTO-038", "REQ-PROTO-039")
async def test_write_the_question_in_the_transcript_and_save_to_send_it(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("Call it with two numbers."), Reply.text_reply("Yes, floats too."))
    async with session(fake_anthropic, tmp_path, rich=False) as s:
        seen = _Seen(s)
        uri = _open(s, "calc.py", SOURCE)
        where = {"uri": uri, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 16}}}
        result = await _command(s, "phoenix.ask", where)  # "Ask Phoenix…": no question yet
        assert result["waitingForQuestion"] is True
        transcript = Path(result["transcript"])
        # showDocument is a request of its own, sent meanwhile
        await s.wait_until(lambda: seen.documents, what="the transcript opened")
        assert seen.documents[-1].take_focus is True
        body = transcript.read_text()
        assert "return a + b" in body.split("<!-- phoenix:")[1]  # the selection waits in the draft

        # the editor opens the transcript, the user writes the question and saves
        t_uri = transcript.as_uri()
        s.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(t_uri, "markdown", 1, body)))
        written = body.replace("(write your question here, then save)", "How do I call it?")
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=t_uri),
            [types.TextDocumentContentChangeWholeDocument(text=written)]))
        s.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(t_uri), text=written))
        await s.wait_until(lambda: any("Call it with two numbers" in m for m in seen.messages), what="the answer")
        question = fake_anthropic.requests[0].messages[0]["content"]
        question = question if isinstance(question, str) else " ".join(b.get("text", "") for b in question)
        assert "How do I call it?" in question and "return a + b" in question
        after = transcript.read_text()
        assert "Call it with two numbers." in after and after.rstrip().endswith("-->"), "the sent draft is cleared"

        # a follow-up through the code action on the transcript
        follow = after + "And floats?\n"
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=3, uri=t_uri),
            [types.TextDocumentContentChangeWholeDocument(text=follow)]))
        actions = await _actions(s, t_uri, (0, 0), (0, 0))
        send = next(a for a in actions if a["command"] == "phoenix.send")
        await _command(s, "phoenix.send", send["arguments"][0])
        await s.wait_until(lambda: any("floats too" in m for m in seen.messages), what="the follow-up's answer")


@pytest.mark.req("REQ-PROTO-038")
async def test_mode_policy_and_cancel_commands(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.hanging("thinking about it"))
    async with session(fake_anthropic, tmp_path, rich=False) as s:
        started = await _command(s, "phoenix.newConversation", {"question": "a long question"})
        cid = started["conversationId"]
        await fake_anthropic.await_for(lambda rs: len(rs) == 1 and rs[0].events_sent > 0, 30)
        cancelled = await _command(s, "phoenix.cancel")
        assert cancelled["cancelled"] is True and cancelled["status"] == "idle"
        assert (await _command(s, "phoenix.unrestricted"))["mode"] == "unrestricted"
        assert (await _command(s, "phoenix.auto"))["policy"] == "auto"
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert (conv["mode"], conv["policy"]) == ("unrestricted", "auto")
        assert "mode `unrestricted`" in Path(started["transcript"]).read_text()


@pytest.mark.req("REQ-PROTO-023")
async def test_plain_approval_text_keeps_whole_words_and_shows_a_patch_as_a_diff(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    edit = ToolUseBlock("patch", {"path": "calc.py", "patches": [
        {"operation": "replace", "oldText": "return a + b", "newText": "return b + a"}]})
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "ls"})), Reply.tool_reply(edit),
                           Reply.text_reply("done"))
    async with session(fake_anthropic, tmp_path, rich=False) as s:
        (s.workdir / "calc.py").write_text(SOURCE)
        s.on_show = lambda params: "Allow"
        cid = await s.new()
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "swap them"})
        await s.wait_until(lambda: len(s.shown) == 2 and len(s.edits) == 1, what="two approvals and one edit")
        bash_text, patch_text = (str(p.message) for p in s.shown)
        first_line = bash_text.split("\n")[0]
        description = first_line.split(": ", 1)[1]
        assert description.endswith(("…", ".")), f"cut mid-word: {description!r}"
        if description.endswith("…"):
            cut = description[:-1]
            from phoenix_lsp.server.runtime import describe_tool

            assert " ".join(describe_tool("bash").split()).startswith(cut)
            assert " ".join(describe_tool("bash").split())[len(cut)] == " ", "the cut is at a word boundary"
        assert "-    return a + b" in patch_text and "+    return b + a" in patch_text
        assert patch_text.index("Arguments: {") < patch_text.index("Change to calc.py:")


@pytest.mark.req("REQ-PROTO-040")
async def test_a_new_file_edit_reaches_past_the_empty_document(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    create = ToolUseBlock("patch", {"path": "new.txt", "patches": [
        {"operation": "overwrite", "newText": "one\ntwo\n"}]})
    fake_anthropic.enqueue(Reply.tool_reply(create), Reply.text_reply("created"))
    async with session(fake_anthropic, tmp_path, "neovim") as s:
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        cid = await s.new(policy="auto")
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "create it"})
        assert await fake_anthropic.await_for(lambda rs: len(rs) == 2, 30), "the tool result reached the model"
        change = s.edits[0].edit.document_changes[1]
        assert isinstance(change, types.TextDocumentEdit)
        (edit,) = change.edits
        assert (edit.range.start.line, edit.range.start.character) == (0, 0)
        assert (edit.range.end.line, edit.range.end.character) == (1, 0)
        assert edit.new_text == "one\ntwo\n"
        assert (s.workdir / "new.txt").read_text() == "one\ntwo\n"


@pytest.mark.req("REQ-PROTO-041")
async def test_an_edit_the_editor_skipped_is_not_reported_as_applied(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    first = ToolUseBlock("patch", {"path": "m.py", "patches": [
        {"operation": "replace", "oldText": "return 1", "newText": "return 2"}]})
    second = ToolUseBlock("patch", {"path": "m.py", "patches": [
        {"operation": "replace", "oldText": "return 2", "newText": "return 3"}]})
    fake_anthropic.enqueue(Reply.tool_reply(first), Reply.text_reply("ok"), Reply.tool_reply(second),
                           Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, "neovim") as s:
        path = s.workdir / "m.py"
        path.write_text("def f():\n    return 1\n")
        buffers = Buffers(s)
        buffers.open(path, path.read_text())
        loop = asyncio.get_running_loop()

        def like_neovim(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            """Answer at once; the change (edit plus the user's typing) follows, debounced, later."""
            edits = [e for e in params.edit.document_changes[0].edits if isinstance(e, types.TextEdit)]
            from tests.e2e.harness import apply_text_edits

            text = apply_text_edits(buffers.text(path), edits) + "# typed\n"
            uri = path.as_uri()
            version = buffers.docs[uri][1] + 1
            buffers.docs[uri] = (text, version)
            changes: list[Any] = [types.TextDocumentContentChangePartial(range=e.range, text=e.new_text)
                                  for e in edits]
            end = len(text.split("\n")) - 2
            changes.append(types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(end, 0), types.Position(end, 0)), text="# typed\n"))
            loop.call_later(0.2, lambda: s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=version, uri=uri), changes)))
            return types.ApplyWorkspaceEditResult(applied=True)

        def skipped(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            """Neovim: the user typed first, "Buffer … newer than edits", the edit is dropped, applied: true;
            the user's change reaches the server after the answer (debounced)."""
            loop.call_later(0.2, lambda: buffers.change(path, buffers.text(path) + "# more\n"))
            return types.ApplyWorkspaceEditResult(applied=True)

        s.on_apply_edit = like_neovim
        cid = await s.new(policy="auto")
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "bump"})
        assert await fake_anthropic.await_for(lambda rs: len(rs) == 2, 30), "the tool result reached the model"
        assert tool_results(fake_anthropic.requests[1])[first.id]["is_error"] is False
        await s.wait_until(lambda: s.last_seq(cid) > 0 and s.of("status", cid)[-1]["status"] == "idle", what="idle")

        s.on_apply_edit = skipped
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "bump again"})
        assert await fake_anthropic.await_for(lambda rs: len(rs) == 4, 30), "the second tool result reached the model"
        result = tool_results(fake_anthropic.requests[3])[second.id]
        assert result["is_error"] is True and "not applied" in result["content"]
        assert not any(e["kind"] == "diff" and e["toolUseId"] == second.id for e in s.events)
