"""Tool calls, approvals and modes over ACP: kinds and statuses, the kernel sandbox, request_permission (issue 28)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.acp.harness import TIMEOUT, agent, tool_result
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


@pytest.mark.req("REQ-ACP-005", "REQ-ACP-006")
async def test_a_restricted_write_is_refused_by_the_kernel_and_shown(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("read_file", {"path": "notes.md"}, id="toolu_r1")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo plan > out.txt"}, id="toolu_b1")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo plan > out2.txt; true"}, id="toolu_b2")),
        Reply.text_reply("could not write"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        (a.workdir / "notes.md").write_text("the notes\n")
        session = await a.new()
        answer = await a.prompt(session.session_id, "write the plan")
        assert answer.stop_reason == "end_turn"
        editor = a.editor
        start = editor.call_updates("toolu_r1")[0]
        assert start.session_update == "tool_call" and start.kind == "read"
        assert start.locations[0].path == str(a.workdir / "notes.md")
        assert editor.statuses("toolu_r1") == ["pending", "in_progress", "completed"]  # its final update once
        bash = editor.call_updates("toolu_b1")[0]
        assert bash.kind == "execute" and bash.title.startswith("Run `echo plan")
        assert editor.statuses("toolu_b1")[:2] == ["pending", "in_progress"]
        assert editor.statuses("toolu_b1")[-1] == "failed"
        shown = editor.call_text("toolu_b1")
        assert "Permission denied" in shown or "Read-only" in shown  # the kernel's own error
        hidden = editor.call_text("toolu_b2")  # the command's exit code is 0: the kernel's error is still shown
        assert "Permission denied" in hidden or "Read-only" in hidden
    assert not (tmp_path / "work" / "out.txt").exists()  # the witness: nothing reached the disk
    assert not (tmp_path / "work" / "out2.txt").exists()
    assert tool_result(fake_anthropic, "toolu_b1")["is_error"]


@pytest.mark.req("REQ-ACP-006", "REQ-ACP-009")
async def test_a_patch_in_restricted_fails_naming_the_upgrade(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("patch", {"path": "a.txt", "patches": [
            {"operation": "replace", "oldText": "one", "newText": "two"}]}, id="toolu_p1")),
        Reply.text_reply("ok"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        (a.workdir / "a.txt").write_text("one\n")
        session = await a.new()
        await a.prompt(session.session_id, "change it")
        assert a.editor.call_updates("toolu_p1")[0].kind == "edit"
        assert a.editor.statuses("toolu_p1")[-1] == "failed"
        assert "request_mode_upgrade" in a.editor.call_text("toolu_p1")
        assert not a.editor.writes
    assert (tmp_path / "work" / "a.txt").read_text() == "one\n"


@pytest.mark.req("REQ-ACP-008")
async def test_an_upgrade_the_model_asks_for_is_a_permission_request(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write notes.txt"}, id="toolu_up")),
        Reply.text_reply("now unrestricted"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        running = a.prompt(session.session_id, "take notes")
        asked = await a.editor.wait_until(lambda: a.editor.asked and a.editor.asked[0])
        assert asked.tool_call.kind == "switch_mode" and asked.tool_call.tool_call_id == "toolu_up"
        assert a.editor.option_kinds(asked) == ["allow_once", "reject_once"]
        asked.answer.set_result(a.editor.option(asked, "allow_once"))
        assert (await running).stop_reason == "end_turn"
        modes = [u.current_mode_id for u in a.editor.updates if u.session_update == "current_mode_update"]
        assert modes == ["unrestricted"]
        assert a.editor.statuses("toolu_up")[-1] == "completed"


@pytest.mark.req("REQ-ACP-007")
async def test_approvals_offer_once_always_and_reject_and_a_rejection_is_a_denial(fake_anthropic: FakeAnthropic,
                                                                                  tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "touch made.txt"}, id="toolu_b1")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": "echo hello"}, id="toolu_b2")),
        Reply.text_reply("done"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        sid = session.session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=sid, mode_id="unrestricted"), TIMEOUT)
        running = a.prompt(sid, "make a file")
        first = await a.editor.wait_until(lambda: a.editor.asked and a.editor.asked[0])
        assert a.editor.option_kinds(first) == ["allow_once", "allow_always", "reject_once"]
        assert first.tool_call.kind == "execute"
        assert a.editor.statuses("toolu_b1") == ["pending"]  # shown before it is asked about
        first.answer.set_result(a.editor.option(first, "reject_once"))
        second = await a.editor.wait_until(lambda: len(a.editor.asked) > 1 and a.editor.asked[1])
        always = next(o for o in second.options if o.kind == "allow_always")
        assert "echo" in always.name  # scoped as everywhere: the command's parsed prefix
        second.answer.set_result(always.option_id)
        assert (await running).stop_reason == "end_turn"
        assert a.editor.statuses("toolu_b1")[-1] == "failed"
        assert a.editor.statuses("toolu_b2")[-1] == "completed"
    assert not (tmp_path / "work" / "made.txt").exists()
    denied = tool_result(fake_anthropic, "toolu_b1")
    assert denied["is_error"] and "den" in str(denied["content"]).lower()
