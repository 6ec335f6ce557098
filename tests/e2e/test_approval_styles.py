"""End-to-end: styles never change the mode (seed 002's mandatory tests, through the LSP) and the audit log.

The real server runs as a subprocess behind a real LSP client; the model is the fake Anthropic server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Buffers, Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import PATCH_DISABLED, patch, turn
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


async def mode_of(s: Session, cid: str) -> str:
    return str((await s.request("phoenix/getConversation", {"conversationId": cid}))["mode"])


async def set_style(s: Session, cid: str, style: str) -> dict[str, Any]:
    return dict(await s.request("phoenix/setStyle", {"conversationId": cid, "style": style}))


@pytest.mark.req("REQ-LAYER-001", "REQ-LAYER-006", "REQ-LAYER-007", "REQ-PATCH-009", "REQ-PROTO-014")
async def test_mode_cannot_bypass_phase(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await s.new(policy="auto")
        answer = await set_style(s, cid, "development")
        assert answer["style"] == "development" and answer["mode"] == "restricted"
        assert answer["suggestion"]["mode"] == "unrestricted" and answer["suggestion"]["command"] == "/execute"
        (event,) = s.of("styleSuggestion", cid)
        assert (event["mode"], event["command"]) == ("unrestricted", "/execute")
        assert await mode_of(s, cid) == "restricted", "a style suggests, never switches"
        write = ToolUseBlock("bash", {"command": "echo escaped > b.txt"})
        change = patch("a.txt", {"operation": "append_eof", "newText": "two\n"})
        requests = await turn(s, cid, write, change)
        results = tool_results(requests[1])
        assert not (s.workdir / "b.txt").exists(), "bash still runs in the read-only sandbox"
        assert results[write.id]["is_error"] is True
        assert results[change.id]["content"] == PATCH_DISABLED and s.edits == []
        assert await mode_of(s, cid) == "restricted"


@pytest.mark.req("REQ-LAYER-001", "REQ-LAYER-003", "REQ-LAYER-006")
async def test_mode_change_preserves_phase(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new(policy="interactive")
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        before = await s.request("phoenix/getConversation", {"conversationId": cid})
        for style in ("chat", "discussion", "chat", "discussion"):
            await set_style(s, cid, style)
            after = await s.request("phoenix/getConversation", {"conversationId": cid})
            assert (after["mode"], after["policy"], after["status"]) == ("unrestricted", "interactive", "idle")
        assert after["alwaysAllowed"] == before["alwaysAllowed"]
        suggestions = s.of("styleSuggestion", cid)  # discussion hints restricted: suggested, not applied
        assert suggestions and all(e["command"] == "/plan" for e in suggestions)
        assert [e["mode"] for e in s.of("modeChanged", cid)] == ["unrestricted"]


@pytest.mark.req("REQ-LAYER-002", "REQ-LAYER-001")
async def test_phase_transition_requires_explicit_command(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        for style in ("task", "development"):
            await set_style(s, cid, style)
        # neither a message that mentions the command nor the model's own text changes the mode
        fake_anthropic.enqueue(Reply.text_reply("/execute"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "please /execute now"})
        await wait_idle(s, cid, mark)
        assert await mode_of(s, cid) == "restricted" and not s.of("modeChanged", cid)
        result = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        assert result["mode"] == "unrestricted" and await mode_of(s, cid) == "unrestricted"
        assert len(fake_anthropic.requests) == 1


@pytest.mark.req("REQ-LAYER-004", "REQ-PROTO-017")
async def test_audit_log_records_actor_mode_and_style_separately(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("")
        s.on_apply_edit = Buffers(s).apply
        cid = await s.new(policy="interactive")
        await set_style(s, cid, "development")
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        fake_anthropic.enqueue(
            Reply.tool_reply(patch("a.txt", {"operation": "append_eof", "newText": "1\n"})), Reply.text_reply("ok")
        )
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        asked = await s.wait_event(lambda e: e["kind"] == "approvalRequested" and e["seq"] > mark)
        await s.request(
            "phoenix/respondToApproval",
            {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "alwaysAllow"},
        )
        await wait_idle(s, cid, mark)
        await s.request("phoenix/revokeAlwaysAllow", {"conversationId": cid, "toolName": "patch"})
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/plan"})
        await turn(s, cid, patch("a.txt", {"operation": "append_eof", "newText": "2\n"}))

        entries = (await s.request("phoenix/getAuditLog", {"conversationId": cid}))["entries"]
        seen = [(e["kind"], e["actor"], e["mode"], e["style"]) for e in entries]
        expected = [
            ("styleChanged", "user", "restricted", "development"),
            ("modeChanged", "user", "unrestricted", "development"),
            ("approvalRequested", "agent", "unrestricted", "development"),
            ("approvalResolved", "user", "unrestricted", "development"),
            ("alwaysAllowGranted", "user", "unrestricted", "development"),
            ("alwaysAllowRevoked", "user", "unrestricted", "development"),
            ("modeChanged", "user", "restricted", "development"),
            ("toolRefused", "system", "restricted", "development"),
        ]
        assert seen == expected
        for entry in entries:
            assert entry["conversationId"] == cid and isinstance(entry["id"], int) and entry["time"] > 0
        by_kind = {e["kind"]: e["details"] for e in entries}
        assert by_kind["approvalResolved"]["decision"] == "alwaysAllow"
        assert by_kind["alwaysAllowRevoked"]["tool"] == "patch" and by_kind["toolRefused"]["tool"] == "patch"
