"""The rules every surface shares (issue 35), each driven through every adapter that can reach it: the LSP server
(the phoenix protocol, by a real LSP client), the ACP agent (the ACP SDK's client side) and the terminal client
(``phoenix-lsp chat`` through its pipes). A surface that skipped the send-message use case's rule fails here.

The witness is outside the server: what the fake model server received (nothing, for a message refused), and what
the real client was answered.

- the route rule (REQ-ACP-021, REQ-AGENT-022): the agent route chosen while it is unavailable is refused, saying
  which file and why, never sent on the ask route instead;
- the attachment rule with the deny-read list (REQ-ATTACH-001, REQ-READ-004): a file on the list never reaches
  the model (the terminal client attaches no files: it has no way to name one);
- the limits (REQ-ACP-016): a text over 1,000,000 characters is refused before anything goes to the model;
- the model switch (REQ-MODEL-003, REQ-MODEL-007), through the LSP server and the terminal client's ``/model``
  (an ACP session keeps the model it started with: ACP has no switch): a model whose context window is too small
  for the context in use, or whose provider is not configured, is refused saying why, and the next turn still
  goes to the model that answered before;
- the resume rule (REQ-RUN-008, REQ-TERM-001, REQ-ACP-012, REQ-PROTO-006), through ``phoenix-lsp run``, the
  terminal client, ACP's ``session/load`` and ``phoenix/getConversation`` with a ``workingDirectory``: a
  conversation stored for one folder, taken up from another, is refused naming its folder, and nothing of it is
  shown or sent to the model.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import acp
import pytest

from phoenix_lsp.llm.models import DEFAULT_MODEL
from tests.acp.harness import TIMEOUT, agent, tool_result
from tests.client.conftest import ChatProcess
from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.run.harness import Runner

SECRET = "shared-rule-secret-3f9a1c77e2b64d0d"
TEXT_MAX = 1_000_000
CHAT_KEY = "sk-ant-shared-rules-test-key-0123456789"

pytestmark = pytest.mark.slow


def _agent_route_unavailable(tmp_path: Path) -> dict[str, str]:
    """The user chose the agent route (``ui_settings.json`` in the data directory), and its capabilities file is
    not JSON: the route cannot run."""
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "ui_settings.json").write_text(json.dumps({"route": "agent"}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text("{not json")
    return {"PHOENIX_CAPABILITIES": str(capabilities)}


def _sent_to_model(fake: FakeAnthropic) -> str:
    return json.dumps([r.body for r in fake.requests])


# ------------------------------------------------------------------------------------------- the route rule


async def _route_lsp(fake: FakeAnthropic, tmp_path: Path, env: dict[str, str]) -> str:
    async with session(fake, tmp_path, env=env) as s:
        cid = await s.new()
        error = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "hello there"})
        return error.message


async def _route_acp(fake: FakeAnthropic, tmp_path: Path, env: dict[str, str]) -> str:
    async with agent(fake, tmp_path, env=env) as a:
        sid = (await a.new()).session_id
        try:
            await asyncio.wait_for(a.conn.prompt(session_id=sid, prompt=[acp.text_block("hello there")]), TIMEOUT)
        except acp.RequestError as exc:
            assert exc.code == -32602
            return str(exc.data)
        return "answered: the prompt was sent"


RouteDriver = Callable[[FakeAnthropic, Path, dict[str, str]], Awaitable[str]]


@pytest.mark.req("REQ-ACP-021", "REQ-AGENT-022")
@pytest.mark.parametrize("surface", ["lsp", "acp"])
async def test_an_unavailable_agent_route_is_refused_saying_why_on_every_surface(
        surface: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("sent on a route the user did not choose"))
    drive: RouteDriver = {"lsp": _route_lsp, "acp": _route_acp}[surface]
    said = await drive(fake_anthropic, tmp_path, _agent_route_unavailable(tmp_path))
    assert "capabilities.json" in said and "ask" in said, said[:500]
    assert fake_anthropic.requests == []  # nothing went to the model on another route


@pytest.mark.req("REQ-ACP-021", "REQ-AGENT-022")
def test_an_unavailable_agent_route_is_refused_saying_why_in_the_terminal_client(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("sent on a route the user did not choose"))
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    env |= {**fake_anthropic.env(CHAT_KEY), "NO_COLOR": "1", **_agent_route_unavailable(tmp_path)}
    chat = ChatProcess(["--cwd", str(work), "--data-dir", str(tmp_path / "data")], env)
    try:
        at = chat.wait_for("> ")
        chat.send("hello there")
        chat.wait_for("capabilities.json", at)
    finally:
        chat.kill()
    assert fake_anthropic.requests == []


# ------------------------------------------------------------------------ attachments and the deny-read list


def _private_key(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    key = tmp_path / "work" / "private" / "id_rsa"
    key.parent.mkdir(parents=True)
    key.write_text(f"-----BEGIN KEY----- {SECRET}\n")
    return key, {"PHOENIX_LSP_DENY_READ": str(key.parent)}


@pytest.mark.req("REQ-ATTACH-001", "REQ-READ-004")
@pytest.mark.parametrize("surface", ["lsp", "acp"])
async def test_a_file_on_the_deny_read_list_is_never_attached_on_any_surface(
        surface: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    key, env = _private_key(tmp_path)
    fake_anthropic.enqueue(Reply.text_reply("fine"))
    if surface == "lsp":
        async with session(fake_anthropic, tmp_path, env=env) as s:
            cid = await s.new()
            error = await s.error("phoenix/sendMessage", {
                "conversationId": cid, "text": "what is this?", "attachments": [{"kind": "file", "uri": key.as_uri()}]})
            said = error.message
    else:
        async with agent(fake_anthropic, tmp_path, env=env) as a:
            sid = (await a.new()).session_id
            blocks = [acp.text_block("what is this?"),
                      acp.resource_block(acp.embedded_text_resource(key.as_uri(), key.read_text()))]
            with pytest.raises(acp.RequestError) as refused:
                await asyncio.wait_for(a.conn.prompt(session_id=sid, prompt=blocks), TIMEOUT)
            said = str(refused.value.data)
    assert "deny-read list" in said, said[:500]
    assert SECRET not in _sent_to_model(fake_anthropic) and fake_anthropic.requests == []


# ------------------------------------------------------------------------------------------------ the limits


@pytest.mark.req("REQ-ACP-016")
@pytest.mark.parametrize("surface", ["lsp", "acp"])
async def test_a_text_over_the_limit_is_refused_on_every_surface(
        surface: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    text = "x" * (TEXT_MAX + 1)
    fake_anthropic.enqueue(Reply.text_reply("fine"))
    if surface == "lsp":
        async with session(fake_anthropic, tmp_path) as s:
            cid = await s.new()
            error = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": text})
            said = error.message
    else:
        async with agent(fake_anthropic, tmp_path) as a:
            sid = (await a.new()).session_id
            with pytest.raises(acp.RequestError) as refused:
                await asyncio.wait_for(a.conn.prompt(session_id=sid, prompt=[acp.text_block(text)]), TIMEOUT)
            assert refused.value.code == -32602
            said = str(refused.value.data)
    assert "1000000" in said.replace(",", "") or "1_000_000" in said, said[:500]
    assert fake_anthropic.requests == []


# ------------------------------------------------------------------------------------------ the model switch

#: a model the switch is refused: (its id, what the refusal says)
REFUSED_SWITCHES = {
    "window": ("claude-haiku-4-5", "is too small for the 190,010 tokens in use"),
    "provider": ("nosuch/some-model", "The provider 'nosuch' of 'nosuch/some-model' is not configured"),
}


def _long_turn(fake: FakeAnthropic) -> None:
    """The first answer reports 190,010 tokens in use (input and output): over 90 % of a 200,000-token window."""
    fake.enqueue(Reply.text_reply("A long answer.", usage={"input_tokens": 190_000, "output_tokens": 10}),
                 Reply.text_reply("Still the same model."))


async def _lsp_turn(s: Session, cid: str, text: str) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await s.wait_status(cid, "idle", since=seen)


@pytest.mark.req("REQ-MODEL-003", "REQ-MODEL-007")
@pytest.mark.parametrize("why", sorted(REFUSED_SWITCHES))
async def test_a_refused_model_switch_changes_nothing_through_the_lsp_server(
        why: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    model, reason = REFUSED_SWITCHES[why]
    _long_turn(fake_anthropic)
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await _lsp_turn(s, cid, "a long one")
        error = await s.error("phoenix/setModel", {"conversationId": cid, "model": model})
        assert reason in error.message, error.message[:500]
        await _lsp_turn(s, cid, "and now?")
    assert [r.body["model"] for r in fake_anthropic.requests] == [DEFAULT_MODEL, DEFAULT_MODEL]


@pytest.mark.req("REQ-MODEL-003", "REQ-MODEL-007")
@pytest.mark.parametrize("why", sorted(REFUSED_SWITCHES))
def test_a_refused_model_switch_changes_nothing_in_the_terminal_client(
        why: str, fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    model, reason = REFUSED_SWITCHES[why]
    _long_turn(fake_anthropic)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    env |= {**fake_anthropic.env(CHAT_KEY), "NO_COLOR": "1"}
    chat = ChatProcess(["--cwd", str(work), "--data-dir", str(tmp_path / "data")], env)
    try:
        at = chat.wait_for("> ")
        chat.send("a long one")
        at = chat.wait_for("> ", chat.wait_for("A long answer.", at))
        chat.send(f"/model {model}")
        at = chat.wait_for("> ", chat.wait_for(reason, at))
        chat.send("and now?")
        chat.wait_for("Still the same model.", at)
    finally:
        chat.kill()
    assert [r.body["model"] for r in fake_anthropic.requests] == [DEFAULT_MODEL, DEFAULT_MODEL]


# ------------------------------------------------------------------------------------------- the resume rule

FIRST = "the first question, asked in work"


def _stored_in_work(fake: FakeAnthropic, tmp_path: Path) -> tuple[str, Path, Path, dict[str, str]]:
    """A conversation stored for ``work`` (one real ``phoenix-lsp run`` turn), and an ``other`` folder: its id,
    the two folders and the environment of the commands."""
    fake.enqueue(Reply.text_reply("answered in work"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "PHOENIX_"))}
    env |= {**fake.env(CHAT_KEY), "NO_COLOR": "1", "PHOENIX_RETRY_BASE_MS": "20",
            "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = Runner(tmp_path, env)
    done = run("--output-format", "json", FIRST)
    assert done.returncode == 0, done.stderr
    other = tmp_path / "other"
    other.mkdir()
    assert len(fake.requests) == 1
    return json.loads(done.stdout)["sessionId"], run.work, other, env


@pytest.mark.req("REQ-RUN-008")
def test_another_folders_conversation_is_not_resumed_by_a_run(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cid, work, other, env = _stored_in_work(fake_anthropic, tmp_path)
    fake_anthropic.enqueue(Reply.text_reply("went on in the other folder"))
    done = subprocess.run([sys.executable, "-m", "phoenix_lsp", "run", "--cwd", str(other), "--data-dir",
                           str(tmp_path / "data"), "--resume", cid, "go on here"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, env=env, timeout=90)
    assert done.returncode == 2, done.stderr
    assert f"belongs to {work}" in done.stderr and f"--cwd {work} --resume {cid}" in done.stderr, done.stderr
    assert len(fake_anthropic.requests) == 1  # nothing went to the model


@pytest.mark.req("REQ-TERM-001", "REQ-RUN-008")
def test_another_folders_conversation_is_not_resumed_by_the_terminal_client(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cid, work, other, env = _stored_in_work(fake_anthropic, tmp_path)
    chat = ChatProcess(["--cwd", str(other), "--data-dir", str(tmp_path / "data"), "--resume", cid], env)
    try:
        chat.wait_for(f"belongs to {work}")
        assert chat.wait() == 1
    finally:
        chat.kill()
    assert f"--cwd {work} --resume {cid[:8]}" in chat.out
    assert "resumed conversation" not in chat.out and FIRST not in chat.out  # nothing of it shown
    assert len(fake_anthropic.requests) == 1


@pytest.mark.req("REQ-ACP-012", "REQ-RUN-008")
async def test_another_folders_session_is_not_loaded_over_acp(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cid, work, other, _ = _stored_in_work(fake_anthropic, tmp_path)
    async with agent(fake_anthropic, tmp_path) as a:
        with pytest.raises(acp.RequestError) as refused:
            await asyncio.wait_for(a.conn.load_session(cwd=str(other), session_id=cid, mcp_servers=[]), TIMEOUT)
        assert refused.value.code == -32602
        said = str(refused.value.data)
        assert f"belongs to {work}" in said and f"cwd {work}" in said, said
        assert not [m for m in a.editor.wire if m.get("method") == "session/update"]  # no history replayed
        with pytest.raises(acp.RequestError):  # and no session to prompt in
            await asyncio.wait_for(a.conn.prompt(session_id=cid, prompt=[acp.text_block("go on")]), TIMEOUT)
        loaded = await asyncio.wait_for(a.conn.load_session(cwd=str(work), session_id=cid, mcp_servers=[]), TIMEOUT)
        assert loaded is not None  # in its own folder it loads
    assert len(fake_anthropic.requests) == 1


@pytest.mark.req("REQ-PROTO-006", "REQ-RUN-008")
async def test_another_folders_conversation_is_refused_to_an_lsp_client_that_names_its_folder(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    cid, work, other, _ = _stored_in_work(fake_anthropic, tmp_path)
    async with session(fake_anthropic, tmp_path) as s:
        error = await s.error("phoenix/getConversation", {"conversationId": cid, "workingDirectory": str(other)})
        assert error.data.get("kind") == "notAllowed" and error.data.get("reason") == "otherFolder", error
        assert error.data.get("workingDirectory") == str(work) and f"belongs to {work}" in error.message
        own = await s.request("phoenix/getConversation", {"conversationId": cid, "workingDirectory": str(work)})
        viewed = await s.request("phoenix/getConversation", {"conversationId": cid})  # a view names no folder
        assert own["conversationId"] == viewed["conversationId"] == cid
    assert len(fake_anthropic.requests) == 1


@pytest.mark.req("REQ-PROTO-006", "REQ-RUN-008", "REQ-BED-018")
async def test_a_subagent_is_refused_to_an_lsp_client_that_names_its_folder(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """A sub-agent answers to its parent only: a client that goes on in a folder is refused it, naming the parent,
    even in the sub-agent's own folder; a view (no folder named) still reads it."""
    def route(body: dict[str, Any]) -> Reply | None:
        first = body["messages"][0]["content"]
        text = first if isinstance(first, str) else first[0].get("text", "")
        if text == "look around":  # the sub-agent
            return Reply.tool_reply(ToolUseBlock("submit_result", {"result": "looked"}, id="toolu_submit"))
        if len(body["messages"]) == 1:
            return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": ["look around"]}, id="toolu_spawn"))
        return Reply.text_reply("all done")

    fake_anthropic.handler = route
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await _lsp_turn(s, cid, "delegate")
        [child] = re.findall(r"Sub-agent 1 \(([^)\s]+)\)", str(tool_result(fake_anthropic, "toolu_spawn")["content"]))
        error = await s.error("phoenix/getConversation", {"conversationId": child, "workingDirectory": str(s.workdir)})
        assert error.data.get("reason") == "subAgent" and cid in error.message, error
        viewed = await s.request("phoenix/getConversation", {"conversationId": child})
        assert viewed["isSubAgent"] is True
