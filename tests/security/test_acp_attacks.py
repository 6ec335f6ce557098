"""Attacks over ACP (issue 28, specs/acp.md): a hostile model or a hostile client against ``phoenix-lsp acp`` as a
subprocess, driven by the ACP SDK's own client side (``tests/acp/harness.py``) and the fake Anthropic API.

What must hold: the editor is never asked to read (``fs/read_text_file``) a path outside the session's working
directory or on the deny-read list, and the tool says why it refused; whatever the editor answers, the model's view
stays as bounded as a disk read; a patch that leaves the working directory is refused and ``fs/write_text_file`` is
never called; a session's working directory is an existing absolute project folder; a client's MCP server's
environment stays secret; malformed requests get JSON-RPC errors that say what and why, and the agent keeps
serving."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import EnvVariable, McpServerStdio, ReadTextFileResponse

from phoenix_lsp.tools.readonly import LINE_MAX_CHARS, READ_MAX_CHARS
from tests.acp.harness import TIMEOUT, Editor, agent, received, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess

SECRET = "OUTSIDE-THE-WORKSPACE-7f3a"


def _outside(tmp_path: Path) -> Path:
    outside = tmp_path / "outside.txt"
    outside.write_text(f"one\n{SECRET}\n")
    return outside


@pytest.mark.req("REQ-ACP-010", "REQ-ACP-016")
async def test_the_editor_is_never_asked_to_read_outside_the_working_directory_or_a_denied_path(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    work = tmp_path / "work"
    (work / "private").mkdir(parents=True)
    (work / "private" / "id_rsa").write_text(f"-----BEGIN KEY----- {SECRET}\n")
    (work / "link.txt").symlink_to(outside)
    calls = {"toolu_up": "../outside.txt", "toolu_abs": str(outside), "toolu_link": "link.txt",
             "toolu_deny": "private/id_rsa"}
    fake_anthropic.enqueue(*(Reply.tool_reply(ToolUseBlock("read_file", {"path": p}, id=i)) for i, p in calls.items()),
                           Reply.text_reply("nothing read"))
    editor = Editor()
    async with agent(fake_anthropic, tmp_path, editor, env={"PHOENIX_LSP_DENY_READ": str(work / "private")}) as a:
        session = await a.new()
        assert (await a.prompt(session.session_id, "read them")).stop_reason == "end_turn"
        sent = received(editor)
        assert editor.reads == []  # the editor was asked for none of them
        for call_id in calls:
            assert editor.statuses(call_id)[-1] == "failed", call_id
    said = {i: str(tool_result(fake_anthropic, i)["content"]) for i in calls}
    assert all(tool_result(fake_anthropic, i)["is_error"] for i in calls)
    assert "climbs out of the working directory" in said["toolu_up"]
    assert "outside the working directory" in said["toolu_abs"]
    assert "outside the working directory" in said["toolu_link"]
    assert "deny-read list" in said["toolu_deny"]
    assert SECRET not in json.dumps(said) and SECRET not in sent


class Liar(Editor):
    """An editor that answers every fs/read_text_file with ``text``, whatever file it was asked for."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text_given = text

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self._changed()
        return ReadTextFileResponse(content=self.text_given)


@pytest.mark.req("REQ-ACP-010", "REQ-ACP-016")
@pytest.mark.parametrize("shape", ["one huge line", "many lines"])
async def test_an_editors_huge_answer_is_cut_as_a_disk_read_is(fake_anthropic: FakeAnthropic, tmp_path: Path,
                                                               shape: str) -> None:
    huge = "x" * (50 * 2**20) if shape == "one huge line" else ("y" * 99 + "\n") * (50 * 2**20 // 100)
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": "a.txt"}, id="toolu_r1")),
                           Reply.text_reply("read"))
    editor = Liar(huge)
    # the answer is what is tested, not the wait for it: 50 MB on a loaded machine may take longer than the 5 s
    # a read waits by default (REQ-ACP-020), and the disk's text would then be read instead
    async with agent(fake_anthropic, tmp_path, editor, env={"PHOENIX_ACP_READ_TIMEOUT_S": "120"}) as a:
        (a.workdir / "a.txt").write_text("small\n")
        session = await a.new()
        assert (await a.prompt(session.session_id, "read it")).stop_reason == "end_turn"
        assert editor.reads == [str(a.workdir / "a.txt")]
        shown = editor.call_text("toolu_r1")
        # the agent keeps serving after it: a second session and prompt
        fake_anthropic.enqueue(Reply.text_reply("still here"))
        assert (await a.prompt((await a.new()).session_id, "hello")).stop_reason == "end_turn"
    result = tool_result(fake_anthropic, "toolu_r1")
    content = str(result["content"])
    assert not result["is_error"] and "source: editor" in content
    assert len(content) <= READ_MAX_CHARS + 2 * LINE_MAX_CHARS + 1_000  # as bounded as a disk read
    assert len(shown) <= 25_000


@pytest.mark.req("REQ-ACP-009", "REQ-ACP-016")
async def test_a_patch_that_leaves_the_working_directory_is_refused_and_nothing_is_written(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = _outside(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "link.txt").symlink_to(outside)
    edit = [{"operation": "replace", "oldText": "one", "newText": "two"}]
    calls = {"toolu_up": "../outside.txt", "toolu_abs": str(outside), "toolu_link": "link.txt",
             "toolu_git": ".git/config"}
    (work / ".git").mkdir()
    (work / ".git" / "config").write_text("one\n")
    fake_anthropic.enqueue(*(Reply.tool_reply(ToolUseBlock("patch", {"path": p, "patches": edit}, id=i))
                             for i, p in calls.items()), Reply.text_reply("could not"))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        sid = session.session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(sid, "change them")).stop_reason == "end_turn"
        assert a.editor.writes == []  # fs/write_text_file was never called
        assert not [m for m in a.editor.wire if m.get("method") == "fs/write_text_file"]
        assert a.editor.reads == []
        for call_id in calls:
            assert a.editor.statuses(call_id)[-1] == "failed", call_id
    for call_id in calls:
        assert tool_result(fake_anthropic, call_id)["is_error"], call_id
    assert outside.read_text() == f"one\n{SECRET}\n" and (work / ".git" / "config").read_text() == "one\n"


@pytest.mark.req("REQ-ACP-003", "REQ-ACP-016")
async def test_a_session_needs_an_existing_absolute_project_folder(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    async with agent(fake_anthropic, tmp_path) as a:
        for cwd, why in (("work", "absolute"), (str(tmp_path / "missing"), "existing"),
                         (str(tmp_path / "a-file"), "existing"), ("/", "whole file system"),
                         ("/..", "whole file system")):
            with pytest.raises(acp.RequestError) as refused:
                await asyncio.wait_for(a.conn.new_session(cwd=cwd, mcp_servers=[]), TIMEOUT)
            assert refused.value.code == -32602, cwd  # invalid params
            assert why in str(refused.value.data), (cwd, refused.value.data)
        assert (await a.new()).session_id  # and the agent keeps serving


@pytest.mark.req("REQ-ACP-014", "REQ-ACP-015", "REQ-ACP-016")
async def test_a_client_servers_environment_stays_secret_everywhere(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    from tests.agent.mcp_helpers import SERVER

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ui_settings.json").write_text(json.dumps({"route": "agent"}))
    token = "client-passed-token-9d1c4e7b2a"
    echo = McpServerStdio(name="records", command=sys.executable, args=[str(SERVER), "--data",
                                                                       str(tmp_path / "records.json")],
                          env=[EnvVariable(name="RECORDS_TOKEN", value=token)])
    broken = McpServerStdio(name="broken", command=str(tmp_path / "no-such-command"), args=[token],
                            env=[EnvVariable(name="BROKEN_TOKEN", value=token)])
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "env; echo $RECORDS_TOKEN"}, id="toolu_b1"),
                         text=f"the token is {token}"),
        Reply.text_reply(f"again {token}"))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await asyncio.wait_for(a.conn.new_session(cwd=str(a.workdir), mcp_servers=[echo, broken]),
                                         TIMEOUT)
        assert (await a.prompt(session.session_id, f"use {token}")).stop_reason == "end_turn"
        sent = received(a.editor)
        assert "agent_message_chunk" in sent
    assert token not in sent
    files = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert any(p.name == "phoenix-lsp.log" for p in files)
    for path in files:
        assert token.encode() not in path.read_bytes(), path
    assert token not in json.dumps([r.messages for r in fake_anthropic.requests])  # nor to the model provider


@pytest.mark.req("REQ-ACP-003", "REQ-ACP-016")
async def test_malformed_requests_get_errors_that_say_what_and_the_agent_keeps_serving(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id

        async def refused(call: Any) -> acp.RequestError:
            with pytest.raises(acp.RequestError) as info:
                await asyncio.wait_for(call, TIMEOUT)
            return info.value

        error = await refused(a.conn.set_session_mode(session_id=sid, mode_id="yolo"))
        assert error.code == -32602 and "restricted or unrestricted" in str(error.data)
        for call in (a.conn.set_session_mode(session_id="no-such-session", mode_id="restricted"),
                     a.conn.prompt(session_id="no-such-session", prompt=[acp.text_block("hi")])):
            error = await refused(call)
            assert error.code == -32602 and "no session 'no-such-session'" in str(error.data)
        error = await refused(a.conn._conn.send_request("session/prompt", {"sessionId": sid, "prompt": [
            {"type": "hologram", "text": "x"}]}))
        assert error.code == -32602  # the SDK's validation: an unknown content type
        error = await refused(a.conn._conn.send_request("session/prompt", {"sessionId": sid}))
        assert error.code == -32602 and "prompt" in str(error.data)
        error = await refused(a.conn._conn.send_request("session/teleport", {"sessionId": sid}))
        assert error.code == -32601  # method not found
        huge = "word " * (3 * 2**20)  # a 15 MB prompt
        error = await refused(a.conn.prompt(session_id=sid, prompt=[acp.text_block(huge)]))
        assert error.code in (-32602, -32600) and "too long" in str(error.data), str(error.data)[:300]
        await a.conn.cancel(session_id="no-such-session")  # a notification: nothing to answer, nothing breaks
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert "still serving" in a.editor.text()


@pytest.mark.req("REQ-ACP-016")
async def test_malformed_lines_on_stdin_are_skipped_and_the_agent_keeps_serving(fake_anthropic: FakeAnthropic,
                                                                               tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        stdin = a.process.stdin
        for line in (b"this is not json\n", b"[1, 2, 3]\n", b"42\n", b'"a string"\n', b"null\n",
                     b'["line-token-5d2e8f9a"]\n',
                     b'{"jsonrpc": "2.0", "id": 9001, "method": "session/teleport", "params": {}}\n'):
            stdin.write(line)
        await stdin.drain()
        answer = await a.editor.wait_until(lambda: next((m for m in a.editor.wire if m.get("id") == 9001
                                                         and m["direction"] == "incoming"), None))
        assert answer["error"]["code"] == -32601  # the SDK's answer: method not found
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert a.process.returncode is None
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert "skipped" in log and "line-token-5d2e8f9a" not in log  # said, without what the line held


@pytest.mark.req("REQ-ACP-016", "REQ-ACP-019")
async def test_a_line_over_the_message_cap_is_refused_by_its_id_and_the_agent_keeps_serving(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cap = 64 * 1024  # the lowest cap PHOENIX_MAX_MESSAGE_BYTES takes: the test stays light
    async with agent(fake_anthropic, tmp_path, env={"PHOENIX_MAX_MESSAGE_BYTES": str(cap)}) as a:
        sid = (await a.new()).session_id
        stdin = a.process.stdin
        filler = "x" * (5 * cap)
        stdin.write(b'{"jsonrpc": "2.0", "id": 9002, "method": "session/teleport", "params": {"text": "'
                    + filler.encode() + b'"}}\n')
        stdin.write(b'{"jsonrpc": "2.0", "method": "session/cancel", "params": {"note": "' + filler.encode()
                    + b'"}}\n')  # no id: only logged
        stdin.write(b'{"jsonrpc": "2.0", "id": 9003, "method": "session/teleport", "params": {}}\n')
        await stdin.drain()
        def answered() -> list[dict[str, Any]]:
            found = [m for m in a.editor.wire if m["direction"] == "incoming" and m.get("id") in (9002, 9003)]
            return found if len(found) == 2 else []

        answers = await a.editor.wait_until(answered)
        [over] = [m for m in answers if m["id"] == 9002]
        assert over["error"]["code"] == -32600, over  # not the SDK's "method not found": it was never read
        message = over["error"]["message"]
        assert f"{cap:,} bytes" in message and "PHOENIX_MAX_MESSAGE_BYTES" in message and "send less" in message
        [after] = [m for m in answers if m["id"] == 9003]
        assert after["error"]["code"] == -32601  # the next line is read as ever
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert a.process.returncode is None
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert log.count("over the limit") >= 2 and "xxxx" not in log


@pytest.mark.req("REQ-ACP-016", "REQ-BED-018")
async def test_a_client_cannot_take_a_subagent_as_its_session(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    import re

    def route(body: dict[str, Any]) -> Reply | None:
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else first[0].get("text", "")
        if text == "look around":  # the sub-agent
            return Reply.tool_reply(ToolUseBlock("submit_result", {"result": "looked"}, id="toolu_submit"))
        if len(body["messages"]) == 1:
            return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": ["look around"]}, id="toolu_spawn"))
        return Reply.text_reply("all done")

    fake_anthropic.handler = route
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        assert (await a.prompt(sid, "delegate")).stop_reason == "end_turn"
        aggregate = str(tool_result(fake_anthropic, "toolu_spawn")["content"])
        [child] = re.findall(r"Sub-agent 1 \(([^)\s]+)\)", aggregate)
        loaded = a.conn.load_session(cwd=str(a.workdir), session_id=child, mcp_servers=[])
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(loaded, TIMEOUT)
        assert "sub-agent" in str(refused.value.data), refused.value.data
        with pytest.raises(acp.RequestError):  # never made a session of this connection
            await asyncio.wait_for(a.conn.set_session_mode(session_id=child, mode_id="unrestricted"), TIMEOUT)
        fake_anthropic.handler = None
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"


@pytest.mark.req("REQ-ACP-007", "REQ-ACP-008", "REQ-ACP-016")
async def test_an_answer_with_an_option_never_offered_approves_nothing(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write"}, id="toolu_up")),
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write"}, id="toolu_up2")),
        Reply.text_reply("stayed restricted"))
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        answers = iter(["always", "yolo"])  # allow_always is never offered for an upgrade; "yolo" never at all
        a.editor.answer = lambda asked: next(answers)
        assert (await a.prompt(sid, "go")).stop_reason == "end_turn"
        assert not [u for u in a.editor.updates if u.session_update == "current_mode_update"]
        fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"}, id="toolu_b1")),
                               Reply.text_reply("not made"))
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        a.editor.answer = lambda asked: "allow-please"
        assert (await a.prompt(sid, "make it")).stop_reason == "end_turn"
        assert a.editor.statuses("toolu_b1")[-1] == "failed"
    assert not (tmp_path / "work" / "made.txt").exists()
    for call_id in ("toolu_up", "toolu_up2", "toolu_b1"):
        assert tool_result(fake_anthropic, call_id)["is_error"], call_id


@pytest.mark.req("REQ-ACP-010", "REQ-ACP-016")
async def test_a_patch_to_a_denied_path_never_asks_the_editor_to_read_it(fake_anthropic: FakeAnthropic,
                                                                         tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "private").mkdir(parents=True)
    (work / "private" / "notes.txt").write_text("one\n")
    edit = [{"operation": "replace", "oldText": "one", "newText": "two"}]
    fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("patch", {"path": "private/notes.txt", "patches": edit},
                                                         id="toolu_p1")), Reply.text_reply("done"))
    async with agent(fake_anthropic, tmp_path, env={"PHOENIX_LSP_DENY_READ": str(work / "private")}) as a:
        sid = (await a.new()).session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(sid, "change it")).stop_reason == "end_turn"
        assert a.editor.reads == []  # neither for the approval's diff nor for the patch
        assert not [m for m in a.editor.wire if m.get("method") == "fs/read_text_file"]


@pytest.mark.req("REQ-ACP-014", "REQ-ACP-016")
async def test_an_embedded_file_on_the_deny_read_list_never_reaches_the_model(fake_anthropic: FakeAnthropic,
                                                                            tmp_path: Path) -> None:
    """The editor read the file and embeds its text (an @-mention): an LSP attachment of it is refused, and so is
    this, before anything goes to the model provider."""
    work = tmp_path / "work"
    (work / "private").mkdir(parents=True)
    key = work / "private" / "id_rsa"
    key.write_text(f"-----BEGIN KEY----- {SECRET}\n")
    fake_anthropic.enqueue(Reply.text_reply("fine"))
    async with agent(fake_anthropic, tmp_path, env={"PHOENIX_LSP_DENY_READ": str(work / "private")}) as a:
        session = await a.new()
        blocks = [acp.text_block("what is this?"),
                  acp.resource_block(acp.embedded_text_resource(key.as_uri(), key.read_text()))]
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(a.conn.prompt(session_id=session.session_id, prompt=blocks), TIMEOUT)
        assert refused.value.code == -32602 and "deny-read list" in str(refused.value.data)
        assert (await a.prompt(session.session_id, "hello")).stop_reason == "end_turn"  # and it keeps serving
    assert fake_anthropic.requests and SECRET not in json.dumps([r.body for r in fake_anthropic.requests])
