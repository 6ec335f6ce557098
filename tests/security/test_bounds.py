"""Bounded input everywhere (issue 34, cases 6, 9 and 10): every message from outside is bounded in size, nesting
and tokens before it is decoded or walked, with limits per kind, and a big one is handled off the event loop.

Witnesses outside the server: the ACP agent still answers through the SDK's own client side after a line nested
600 levels deep; the order in which a real client receives the answers (a cheap request sent after a 36 MB one is
answered first), and the refusal it reads; what the fake model API received after the editor answered
``phoenix/editorDiagnostics`` with far more than a diagnostics answer needs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp import limits
from phoenix_lsp.llm.client import TOOL_INPUT_ERROR_KEY, LlmSuccess
from phoenix_lsp.llm.openai_client import OpenAiClient
from tests.acp.harness import agent
from tests.e2e.harness import session
from tests.e2e.raw import frame, raw_server
from tests.e2e.test_sight import ORIGINAL, SightEditor, result_text, turn
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.fake_openai import FakeOpenAI
from tests.fake_openai import Reply as OpenAiReply
from tests.fake_openai import ToolUseBlock as OpenAiToolUse
from tests.llm.test_openai_client import TOOLS as OPENAI_TOOLS
from tests.llm.test_openai_client import on as openai_on
from tests.llm.test_openai_client import provider as openai_provider
from tests.llm.test_openai_client import request as openai_request

pytestmark = pytest.mark.slow  # each test starts the server or the agent as a subprocess

#: 9 million short strings: 36 MB, the held-out attack's request
STRINGS = 9_000_000


def _many_strings(msg_id: str) -> bytes:
    """A 36 MB request of 9 million one-letter strings, with a hundred empty arrays beside them (more brackets
    than the nesting limit: the depth check cannot take its shortcut)."""
    return (b'{"jsonrpc":"2.0","id":"' + msg_id.encode() + b'","method":"workspace/executeCommand","params":'
            b'{"command":"phoenix.none","arguments":[' + b'"a",' * STRINGS + b'"a"],"more":['
            + b"[]," * 99 + b"[]]}}")


# ------------------------------------------------------------------------------------------------ case 6 (ACP)

@pytest.mark.req("REQ-PROTO-061", "REQ-ACP-016")
async def test_an_acp_line_nested_600_deep_is_answered_and_the_agent_keeps_serving(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        stdin = a.process.stdin
        deep = b"[" * 600 + b"]" * 600  # 1.2 KB: the SDK's observer deep-copied it and its loop ended
        stdin.write(b'{"jsonrpc": "2.0", "id": 9100, "method": "session/prompt", "params": ' + deep + b"}\n")
        stdin.write(b'{"jsonrpc": "2.0", "id": 9101, "method": "session/teleport", "params": {}}\n')
        await stdin.drain()

        def answered() -> list[dict[str, Any]]:
            found = [m for m in a.editor.wire if m["direction"] == "incoming" and m.get("id") in (9100, 9101)]
            return found if len(found) == 2 else []

        answers = await a.editor.wait_until(answered)
        [deep_answer] = [m for m in answers if m["id"] == 9100]
        assert deep_answer["error"]["code"] == -32600, deep_answer
        message = deep_answer["error"]["message"]
        assert "levels deep" in message and "less nesting" in message  # what happened, and what to do
        [after] = [m for m in answers if m["id"] == 9101]
        assert after["error"]["code"] == -32601  # the next line is read by the SDK as ever
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert a.process.returncode is None


# ------------------------------------------------------------------------------------------------ case 9 (LSP)

@pytest.mark.req("REQ-PROTO-061", "REQ-SEC-005")
async def test_a_request_of_nine_million_strings_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        s.write(frame(_many_strings("big")))
        cheap = s.send("phoenix/listConversations", {})
        await s.drain()
        refused = await s.answer("big")
        assert refused["error"]["code"] == -32600, refused
        message = refused["error"]["message"]
        assert f"more than {limits.DEFAULT_MAX_MESSAGE_TOKENS:,} strings, commas and brackets" in message
        assert "Send fewer values" in message  # and what to do
        assert "result" in await s.answer(cheap)
        assert s.proc.returncode is None and s.popups == []


@pytest.mark.req("REQ-PROTO-062")
async def test_a_cheap_request_is_answered_while_a_36_mb_request_is_decoded(tmp_path: Path) -> None:
    """With the token limit raised so that the big request is read whole, it is decoded and walked off the event
    loop: the cheap request written after it is answered before it."""
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data", env={"PHOENIX_MAX_MESSAGE_TOKENS": str(2**31 - 1)}) as s:
        await s.initialize(tmp_path / "work")
        await s.request("phoenix/listConversations", {})  # the settings (and the raised limit) are in place
        s.write(frame(_many_strings("big")))
        cheap = s.send("phoenix/listConversations", {})
        await s.drain()
        await s.answer("big", timeout=120)
        order = [m.get("id") for m in s.received]
        assert cheap in order, order
        assert order.index(cheap) < order.index("big"), order  # not held up behind the big one
        assert s.proc.returncode is None


# ------------------------------------------------------------------------------- case 10 (an answer's kind)

#: some 7 MB: over the diagnostics answer's 4 MiB, far under a message's 64 MiB; few diagnostics with long messages,
#: so the editor builds and sends it fast even on a loaded machine (60,000 short ones took over 1.5 s beside two
#: CPU hogs: the server's wait, not its bound, answered)
DIAGNOSTICS = 3_000
PADDING = " a problem the editor made up" * 80


@pytest.mark.req("REQ-PROTO-063", "REQ-SIGHT-002")
@pytest.mark.parametrize(("count", "cap"), [(DIAGNOSTICS, None), (1_000, 64 * 1024)],
                         ids=["over-the-answer-bound", "over-the-message-cap"])
async def test_a_diagnostics_answer_over_its_bound_is_refused_and_the_model_is_told(
        fake_anthropic: FakeAnthropic, tmp_path: Path, count: int, cap: int | None) -> None:
    """Over the diagnostics answer's own bound, or over the message cap (then the transport refuses it before it is
    read whole): either way the request fails at once, and the model is told why."""
    # the editor's answer gets the longest wait the setting allows, and the turn a load's margin, so only the bound
    # can refuse it
    env = {"PHOENIX_SIGHT_TIMEOUT_MS": "30000", **({"PHOENIX_MAX_MESSAGE_BYTES": str(cap)} if cap else {})}
    async with session(fake_anthropic, tmp_path, sight=True, env=env) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.diagnostics[app.as_uri()] = [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "severity": 2, "message": f"FLOOD-{i:06d}{PADDING}", "source": "hostile"}
            for i in range(count)]
        cid = await s.new()
        told = result_text((await turn(s, cid, ToolUseBlock("editor_problems", {}), timeout=150))[1])
        listed = await s.request("phoenix/listConversations", {})  # the server still answers
        assert any(c["conversationId"] == cid for c in listed["conversations"])
    bound = cap or limits.ANSWERS["phoenix/editorDiagnostics"].max_bytes
    assert "FLOOD-" not in told, told[:500]  # nothing of it reached the model...
    assert "not read" in told and f"over the limit of {bound:,} bytes" in told, told  # ...it was told why
    assert "Ask about one file" in told, told  # and what to do


# ---------------------------------------------------------------------------------- provider streams (a model)

@pytest.mark.req("REQ-PROTO-063", "REQ-MODEL-006")
async def test_a_model_s_tool_arguments_nested_thousands_deep_are_told_not_raised(fake_openai: FakeOpenAI) -> None:
    """The OpenAI provider decoded a tool call's arguments with a bare ``json.loads``: arguments nested 5,000 deep
    raised RecursionError out of the stream. The fake API server sends them through the real SDK."""
    deep = '{"command": ' + "[" * 5_000 + "]" * 5_000 + "}"
    fake_openai.enqueue(OpenAiReply.tool_reply(OpenAiToolUse("bash", id="toolu_deep", raw_json=deep)))
    client = OpenAiClient(openai_provider(fake_openai))
    outcome = await client.stream(openai_request(tools=OPENAI_TOOLS), openai_on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(outcome, LlmSuccess), outcome
    block = outcome.content[0]
    assert block["input"] == {} and "levels deep" in block[TOOL_INPUT_ERROR_KEY], block
