"""End-to-end: where MCP servers come from and the user's consent before a project's server starts (issue 37,
REQ-MCP-008..010), through the real server and a real LSP client, with the tests' own stdio MCP server
(``tests/tools/tracker_server.py``, started by ``witness_server.py``, whose witness file says whether it ran)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.tools.tracker import TOKEN, project_server, received, starts, witness_path

pytestmark = pytest.mark.slow

LIST = "mcp__tracker__list_issues"
START, DECLINE = "Start it", "Do not start it"


def offered(s: Session, index: int = -1) -> set[str]:
    names = s.fake.requests[index].tool_names
    return set(names or ())


def write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")


async def say(s: Session, cid: str, text: str = "what is open?") -> None:
    s.fake.enqueue(Reply.text_reply("ok"))
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await wait_idle(s, cid, mark, timeout=120)


def consent_questions(s: Session) -> list[types.ShowMessageRequestParams]:
    return [p for p in s.shown if "MCP server" in p.message]


@pytest.mark.req("REQ-MCP-009", "REQ-MCP-008")
async def test_a_project_server_starts_only_after_consent_and_a_changed_definition_asks_again(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    answers = iter([START, DECLINE])
    started_when_asked: list[int] = []

    def answer(params: types.ShowMessageRequestParams) -> str | None:
        started_when_asked.append(starts(tmp_path))  # the witness, at the moment the user is asked
        return next(answers)

    async with session(fake_anthropic, tmp_path) as s:
        write(s.workdir / ".mcp.json", {"mcpServers": {"tracker": project_server(tmp_path)}})
        s.on_show = answer
        cid = await s.new()
        await say(s, cid)
        asked = consent_questions(s)
        assert len(asked) == 1 and started_when_asked == [0], "nothing ran before the user's answer"
        message = asked[0].message
        assert str(witness_path(tmp_path)) in message and "--label one" in message and "tracker" in message
        assert "TRACKER_TOKEN" in message and TOKEN not in message  # the variable's name, never its value
        assert [a.title for a in asked[0].actions or []] == [START, DECLINE]
        assert starts(tmp_path) == 1 and LIST in offered(s), "approved: started, its tools offered"
        await say(s, cid, "and now?")
        assert len(consent_questions(s)) == 1 and starts(tmp_path) == 1, "asked once, started once"
        # the definition changes (as a pull could change it): asked again, declined, its tools withdrawn
        write(s.workdir / ".mcp.json", {"mcpServers": {"tracker": project_server(tmp_path, label="two")}})
        await say(s, cid, "after the pull?")
        asked = consent_questions(s)
        assert len(asked) == 2 and "--label two" in asked[1].message and "changed" in asked[1].message
        assert not any(name.startswith("mcp__tracker__") for name in offered(s))
        assert starts(tmp_path) == 1, "the declined definition never ran"
        await say(s, cid, "still?")
        assert len(consent_questions(s)) == 2, "a declined definition is not asked about again"
    consents = json.loads((tmp_path / "data" / "mcp_consents.json").read_text())["consents"]
    assert sorted(c["decision"] for c in consents.values()) == ["approved", "declined"]
    assert not (s.workdir / ".phoenix").exists() and TOKEN not in json.dumps(consents)


@pytest.mark.req("REQ-MCP-008", "REQ-MCP-009")
async def test_vscode_mcp_json_expands_the_workspace_folder(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        server = project_server(tmp_path)
        server["args"] = [a.replace(str(tmp_path / "tracker-calls.jsonl"), "${workspaceFolder}/calls.jsonl")
                          for a in server["args"]]
        write(s.workdir / ".vscode" / "mcp.json", {"servers": {"tracker": {"type": "stdio", **server}}})
        s.on_show = lambda params: START
        cid = await s.new()
        call = ToolUseBlock(LIST, {})
        s.fake.enqueue(Reply.tool_reply(call), Reply.text_reply("two"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "open?"})
        await wait_idle(s, cid, mark, timeout=120)
        asked = consent_questions(s)
        assert len(asked) == 1 and f"{s.workdir}/calls.jsonl" in asked[0].message and ".vscode" in asked[0].message
        # a project's tool is a write unless the manifest calls it a read: Restricted refuses it, never runs it
        assert "request_mode_upgrade" in tool_results(s.fake.requests[-1])[call.id]["content"]
        cid = await unrestricted(s)
        s.fake.enqueue(Reply.tool_reply(ToolUseBlock(LIST, {}, id="toolu_l2")), Reply.text_reply("two"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "open?"})
        await wait_idle(s, cid, mark, timeout=120)
        assert "#1 the build is red" in tool_results(s.fake.requests[-1])["toolu_l2"]["content"]
    calls = (s.workdir / "calls.jsonl").read_text().splitlines()
    assert [json.loads(line)["tool"] for line in calls] == ["list_issues"]


@pytest.mark.req("REQ-MCP-008")
async def test_a_user_level_server_starts_without_asking(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write(tmp_path / "user-config" / "mcp.json", {"mcpServers": {"tracker": project_server(tmp_path)}})
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await say(s, cid)
        assert not consent_questions(s) and starts(tmp_path) == 1 and LIST in offered(s)


@pytest.mark.req("REQ-MCP-008")
async def test_a_malformed_mcp_json_says_which_file_and_field_and_the_others_still_work(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    write(tmp_path / "user-config" / "mcp.json", {"mcpServers": {"tracker": project_server(tmp_path)}})
    async with session(fake_anthropic, tmp_path) as s:
        write(s.workdir / ".mcp.json", {"mcpServers": {"broken": {"command": "x", "args": "not-a-list"},
                                                       "other": {"url": "ftp://nowhere"}}})
        cid = await s.new()
        await say(s, cid)
        shown = [m for m in s.client.messages if "broken" in m.message or "other" in m.message]
        text = " ".join(m.message for m in shown)
        assert str(s.workdir / ".mcp.json") in text and "mcpServers.broken.args" in text, text
        assert "mcpServers.other.url" in text
        assert not consent_questions(s) and LIST in offered(s), "the user-level server still works"
    log = (tmp_path / "data" / "phoenix-lsp.log").read_text()
    assert "mcpServers.broken.args" in log


@pytest.mark.req("REQ-MCP-008", "REQ-MCP-010")
async def test_a_token_in_the_env_of_mcp_json_never_reaches_the_model_the_log_or_the_database(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_LOG_LEVEL": "DEBUG"}) as s:
        write(s.workdir / ".mcp.json", {"mcpServers": {"tracker": project_server(tmp_path)}})
        s.on_show = lambda params: START
        cid = await unrestricted(s)
        call = ToolUseBlock("mcp__tracker__whoami", {})
        s.fake.enqueue(Reply.tool_reply(call), Reply.text_reply("done"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "who are you?"})
        await wait_idle(s, cid, mark, timeout=120)
        assert received(tmp_path) == ["whoami"]
        result = str(tool_results(s.fake.requests[-1])[call.id]["content"])
        assert "my token is" in result and TOKEN not in result
        events = json.dumps(s.events)
        assert TOKEN not in events
    for request in fake_anthropic.requests:
        assert TOKEN not in json.dumps(request.body), "the token reached the model"
    data = tmp_path / "data"
    written = [p for p in data.rglob("*") if p.is_file()]
    assert any(p.name == "phoenix-lsp.log" for p in written)
    for path in written:
        assert TOKEN.encode() not in path.read_bytes(), f"the token was written to {path.name}"
    with sqlite3.connect(next(p for p in written if p.suffix == ".db")) as db:
        rows = db.execute("select name from sqlite_master where type='table'").fetchall()
        for (table,) in rows:
            assert TOKEN not in json.dumps(db.execute(f"select * from {table}").fetchall(), default=str)


@pytest.mark.req("REQ-MCP-009")
async def test_a_turn_cancelled_while_the_user_is_asked_takes_the_question_back_and_starts_nothing(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        write(s.workdir / ".mcp.json", {"mcpServers": {"tracker": project_server(tmp_path)}})
        s.hold_show = True  # the user leaves the question open
        cid = await s.new()
        s.fake.enqueue(Reply.text_reply("ok"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_until(lambda: consent_questions(s), what="the consent question")
        await s.request("phoenix/cancel", {"conversationId": cid})
        await wait_idle(s, cid, mark, timeout=60)
        await s.wait_until(lambda: s.withdrawn, what="the question taken back")
        assert "MCP server" in s.withdrawn[0].message
        assert starts(tmp_path) == 0 and not s.fake.requests, "nothing started, nothing sent to the model"
