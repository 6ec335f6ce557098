"""End-to-end: approvals, always-allow, mode upgrade and user mode commands (issue 5, specs/modes.md).

The real server runs as a subprocess behind a real LSP client with VS Code's and Neovim's capability sets;
the model is the fake Anthropic server, whose recorded requests show what the model was told.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import (
    Buffers,
    Session,
    await_status,
    last_seq,
    session,
    tool_results,
    wait_idle,
)
from tests.e2e.test_write_patch import PATCH_DISABLED, patch, turn, unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

DENIED = "The user denied this tool call."


def append(path: str, text: str) -> ToolUseBlock:
    return patch(path, {"operation": "append_eof", "newText": text})


async def start(s: Session, cid: str, *replies: Reply, text: str = "go") -> int:
    """Script the model's replies and send a user message; returns the seq mark before it."""
    s.fake.enqueue(*replies)
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    return mark


async def approval_after(s: Session, cid: str, mark: int) -> dict[str, Any]:
    return await s.wait_event(
        lambda e: e["conversationId"] == cid and e["seq"] > mark and e["kind"] == "approvalRequested"
    )


async def answer(s: Session, cid: str, tool_use_id: str, decision: str) -> Any:
    return await s.request(
        "phoenix/respondToApproval", {"conversationId": cid, "toolUseId": tool_use_id, "decision": decision}
    )


async def conversation(s: Session, cid: str) -> dict[str, Any]:
    return dict(await s.request("phoenix/getConversation", {"conversationId": cid}))


@pytest.mark.req("REQ-PERM-002", "REQ-PERM-005", "REQ-PERM-015", "REQ-PROTO-012", "REQ-PERM-018")
async def test_allow_runs_the_patch_only_after_the_answer(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        call = append("a.txt", "two\n")
        mark = await start(s, cid, Reply.tool_reply(call), Reply.text_reply("done"))
        asked = await approval_after(s, cid, mark)
        assert asked["toolName"] == "patch" and asked["toolUseId"] == call.id
        assert asked["arguments"] == call.input and "patch" in asked["description"].lower()
        assert "+two" in asked["diff"], "a patch approval shows the diff the edit would make"
        # a request answered after the approval: anything the server did before answering it (an edit, an
        # event) reached us first, on the same ordered stream
        conv = await conversation(s, cid)
        assert s.edits == [], "nothing reaches the editor before the user answers"
        assert last_seq(s, cid) == asked["seq"], "and nothing else happened in the conversation"
        assert conv["status"] == "awaiting_approval"
        assert conv["pendingApproval"]["toolUseId"] == asked["toolUseId"]
        assert conv["pendingApproval"]["diff"] == asked["diff"]

        result = await answer(s, cid, asked["toolUseId"], "allow")
        assert result == {"toolUseId": asked["toolUseId"], "decision": "allow"}
        await wait_idle(s, cid, mark)
        assert len(s.edits) == 1 and s.edits[0].edit.change_annotations is None  # asked once, not twice
        assert (s.workdir / "a.txt").read_text() == "one\ntwo\n"
        assert tool_results(fake_anthropic.requests[-1])[call.id]["is_error"] is False
        resolved = s.of("approvalResolved", cid)
        assert [(e["toolUseId"], e["decision"]) for e in resolved] == [(asked["toolUseId"], "allow")]


@pytest.mark.req("REQ-PERM-004", "REQ-PERM-002")
async def test_deny_goes_back_to_the_model_as_a_rejection(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await unrestricted(s, policy="interactive")
        call = append("a.txt", "two\n")
        mark = await start(s, cid, Reply.tool_reply(call), Reply.text_reply("understood"))
        asked = await approval_after(s, cid, mark)
        await answer(s, cid, asked["toolUseId"], "deny")
        await wait_idle(s, cid, mark)
        assert s.edits == [] and (s.workdir / "a.txt").read_text() == "one\n"
        result = tool_results(fake_anthropic.requests[-1])[call.id]
        assert result["is_error"] is True and result["content"].startswith(DENIED)


@pytest.mark.req("REQ-PERM-003", "REQ-PROTO-018", "REQ-PROTO-019")
async def test_always_allow_is_remembered_listed_and_revocable(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        mark = await start(s, cid, Reply.tool_reply(append("a.txt", "1\n")), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)
        await answer(s, cid, asked["toolUseId"], "alwaysAllow")
        await wait_idle(s, cid, mark)
        listed = await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid})
        assert [t["toolName"] for t in listed["tools"]] == ["patch"]
        assert (await conversation(s, cid))["alwaysAllowed"] == ["patch"]
        assert [(e["toolName"], e["allowed"]) for e in s.of("alwaysAllowChanged", cid)] == [("patch", True)]

        mark = last_seq(s, cid)
        await turn(s, cid, append("a.txt", "2\n"))  # runs without asking
        assert not [e for e in s.of("approvalRequested", cid) if e["seq"] > mark]
        assert (s.workdir / "a.txt").read_text() == "1\n2\n"
        other = await s.new()  # never carried over to another conversation
        assert (await s.request("phoenix/listAlwaysAllowed", {"conversationId": other}))["tools"] == []

        revoke = {"conversationId": cid, "toolName": "patch"}
        assert await s.request("phoenix/revokeAlwaysAllow", revoke) == {"revoked": True}
        assert await s.request("phoenix/revokeAlwaysAllow", revoke) == {"revoked": False}
        assert (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid}))["tools"] == []
        assert s.of("alwaysAllowChanged", cid)[-1]["allowed"] is False
        mark = await start(s, cid, Reply.tool_reply(append("a.txt", "3\n")), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)  # asked again after the revocation
        await answer(s, cid, asked["toolUseId"], "deny")
        await wait_idle(s, cid, mark)
        assert (s.workdir / "a.txt").read_text() == "1\n2\n"


@pytest.mark.req("REQ-PERM-004", "REQ-PERM-002", "REQ-BED-004")
async def test_mixed_batch_runs_the_allowed_call_and_reports_both(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("a\n")
        (s.workdir / "b.txt").write_text("b\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        first, second = append("a.txt", "A\n"), append("b.txt", "B\n")
        mark = await start(s, cid, Reply.tool_reply(first, second), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)
        assert asked["toolUseId"] == first.id, "approvals of one batch are asked one at a time, in order"
        await answer(s, cid, asked["toolUseId"], "deny")
        asked2 = await s.wait_event(lambda e: e["kind"] == "approvalRequested" and e["toolUseId"] == second.id)
        await answer(s, cid, asked2["toolUseId"], "allow")
        await wait_idle(s, cid, mark)
        assert len(fake_anthropic.requests) == 2
        results = tool_results(fake_anthropic.requests[1])  # both results, together
        assert results[first.id]["is_error"] is True and results[first.id]["content"].startswith(DENIED)
        assert results[second.id]["is_error"] is False
        assert (s.workdir / "a.txt").read_text() == "a\n" and (s.workdir / "b.txt").read_text() == "b\nB\n"


@pytest.mark.req("REQ-PERM-007", "REQ-PROTO-013")
async def test_policy_switch_mid_turn_applies_from_the_next_call(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        first, second = append("a.txt", "1\n"), append("a.txt", "2\n")
        mark = await start(s, cid, Reply.tool_reply(first, second), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)
        policy = await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "auto"})
        assert policy == {"policy": "auto"}
        conv = await conversation(s, cid)  # the open approval stays open until answered
        assert conv["status"] == "awaiting_approval" and s.edits == []
        changed = s.of("policyChanged", cid)[-1]
        assert last_seq(s, cid) == changed["seq"], "the policy change resolved nothing by itself"
        await answer(s, cid, asked["toolUseId"], "allow")
        await wait_idle(s, cid, mark)
        assert len(s.of("approvalRequested", cid)) == 1, "the next call runs under the new policy"
        assert (s.workdir / "a.txt").read_text() == "1\n2\n"
        assert s.of("policyChanged", cid)[-1]["policy"] == "auto"


@pytest.mark.req("REQ-PERM-008", "REQ-PROTO-023", "REQ-PERM-018")
async def test_plain_client_answers_through_show_message_request(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor, rich=False) as s:
        (s.workdir / "a.txt").write_text("")
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        choices = iter(["Allow", None, "Deny", "Always Allow"])
        s.on_show = lambda params: next(choices)
        cid = await unrestricted(s, policy="interactive")
        calls = [append("a.txt", f"{i}\n") for i in range(4)]
        s.fake.enqueue(Reply.tool_reply(*calls), Reply.text_reply("ok"))
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        await fake_anthropic.await_for(lambda r: len(r) == 2, timeout=10)
        await await_status(s, cid, "idle")
        assert s.events == [], "a plain client gets no phoenix/event"
        assert len(s.shown) == 4, "one question per call, never two for the same edit"
        shown = s.shown[0]
        assert shown.type == types.MessageType.Warning
        assert [a.title for a in shown.actions or []] == ["Allow", "Deny", "Always Allow"]
        assert "patch" in shown.message and cid[:8] in shown.message
        assert json.dumps(calls[0].input, separators=(",", ":")) in shown.message  # compact JSON arguments
        results = tool_results(fake_anthropic.requests[1])
        assert [results[c.id]["is_error"] for c in calls] == [False, True, True, False]  # dismissed = deny
        assert (s.workdir / "a.txt").read_text() == "0\n3\n" and len(s.edits) == 2
        listed = await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid})
        assert [t["toolName"] for t in listed["tools"]] == ["patch"]


@pytest.mark.req("REQ-PERM-006", "REQ-BED-007", "REQ-PROTO-003")
async def test_an_approval_survives_a_restart_and_a_second_answer_changes_nothing(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "a.txt").write_text("one\n")
    call = append("a.txt", "two\n")
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await unrestricted(s, policy="interactive")
        mark = await start(s, cid, Reply.tool_reply(call), Reply.text_reply("done"))
        tool_use_id = (await approval_after(s, cid, mark))["toolUseId"]
    async with session(fake_anthropic, tmp_path, editor) as s:  # a new server process, same data directory
        s.on_apply_edit = Buffers(s).apply
        conv = await conversation(s, cid)
        assert conv["status"] == "awaiting_approval" and conv["pendingApproval"]["toolUseId"] == tool_use_id
        busy = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "hello?"})
        assert busy.code == -32002
        mark = last_seq(s, cid)
        await answer(s, cid, tool_use_id, "allow")
        await wait_idle(s, cid, mark)
        assert (s.workdir / "a.txt").read_text() == "one\ntwo\n"
        assert tool_results(fake_anthropic.requests[-1])[call.id]["is_error"] is False

        before = await conversation(s, cid)
        params = {"conversationId": cid, "toolUseId": tool_use_id, "decision": "deny"}
        for bad in (params, {**params, "toolUseId": "no-such-approval"}):
            error = await s.error("phoenix/respondToApproval", bad)
            data = error.data or {}
            assert error.code == -32003 and data["kind"] == "requestNotOpen"
            assert data["toolUseId"] == bad["toolUseId"] and bad["toolUseId"] in str(error)
        after = await conversation(s, cid)
        assert after == before and len(s.edits) == 1 and len(fake_anthropic.requests) == 2


@pytest.mark.req("REQ-BED-015", "REQ-BED-017", "REQ-PROTO-011", "REQ-LAYER-004")
async def test_upgrade_approved_then_the_patch_runs(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await s.new(policy="auto")
        upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "I need to fix a.txt"})
        call = append("a.txt", "two\n")
        mark = await start(s, cid, Reply.tool_reply(upgrade), Reply.tool_reply(call), Reply.text_reply("done"))
        asked = await s.wait_event(lambda e: e["kind"] == "upgradeRequested" and e["seq"] > mark)
        assert asked["reason"] == "I need to fix a.txt"
        conv = await conversation(s, cid)
        assert conv["status"] == "awaiting_upgrade" and conv["pendingUpgrade"]["toolUseId"] == asked["toolUseId"]
        answer_ = await s.request("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True})
        assert answer_ == {"mode": "unrestricted"}
        await wait_idle(s, cid, mark)
        told = fake_anthropic.requests[1]
        assert tool_results(told)[upgrade.id]["content"].startswith("The user approved the upgrade")
        assert "now in Unrestricted mode" in json.dumps(told.messages[-1])  # the synthetic system message
        assert (s.workdir / "a.txt").read_text() == "one\ntwo\n"
        assert s.of("modeChanged", cid)[-1]["mode"] == "unrestricted"
        log = (await s.request("phoenix/getAuditLog", {"conversationId": cid}))["entries"]
        kinds = [(e["kind"], e["actor"]) for e in log]
        assert ("upgradeRequested", "agent") in kinds and ("upgradeResolved", "user") in kinds
        assert ("modeChanged", "user") in kinds


@pytest.mark.req("REQ-BED-015", "REQ-PATCH-009", "REQ-PROTO-011")
async def test_upgrade_denied_keeps_the_conversation_restricted(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await s.new(policy="auto")
        upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "write please"})
        call = append("a.txt", "two\n")
        mark = await start(s, cid, Reply.tool_reply(upgrade), Reply.tool_reply(call), Reply.text_reply("done"))
        await s.wait_event(lambda e: e["kind"] == "upgradeRequested" and e["seq"] > mark)
        assert await s.request("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": False}) == {
            "mode": "restricted"
        }
        await wait_idle(s, cid, mark)
        assert "denied the upgrade" in tool_results(fake_anthropic.requests[1])[upgrade.id]["content"]
        assert tool_results(fake_anthropic.requests[2])[call.id]["content"] == PATCH_DISABLED
        assert s.edits == [] and (await conversation(s, cid))["mode"] == "restricted"
        again = await s.error("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True})
        assert again.code == -32003 and (await conversation(s, cid))["mode"] == "restricted"


@pytest.mark.req("REQ-PERM-006", "REQ-BED-015", "REQ-BED-007", "REQ-LAYER-002")
async def test_an_unanswered_upgrade_stays_pending_through_time_and_a_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "need to write"})
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        mark = await start(s, cid, Reply.tool_reply(upgrade), Reply.text_reply("thanks"))
        requested = await s.wait_event(lambda e: e["kind"] == "upgradeRequested" and e["seq"] > mark)
        # no timeout exists to wait out (the core has none: REQ-BED-015); a request answered later shows the
        # request still open and nothing after it, and the restart below is the "later" that matters
        conv = await conversation(s, cid)
        assert last_seq(s, cid) == requested["seq"]
        assert conv["status"] == "awaiting_upgrade" and conv["mode"] == "restricted"
        assert not s.of("upgradeResolved", cid) and len(fake_anthropic.requests) == 1
    async with session(fake_anthropic, tmp_path, editor) as s:
        conv = await conversation(s, cid)
        assert conv["status"] == "awaiting_upgrade" and conv["pendingUpgrade"]["reason"] == "need to write"
        assert conv["mode"] == "restricted"
        # /execute typed by the user answers the open request, at once
        mark = last_seq(s, cid)
        result = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        assert result["mode"] == "unrestricted"
        await wait_idle(s, cid, mark)
        assert tool_results(fake_anthropic.requests[-1])[upgrade.id]["content"].startswith("The user approved")


@pytest.mark.req("REQ-BED-015")
async def test_upgrade_request_in_unrestricted_answers_already(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, "neovim") as s:
        cid = await unrestricted(s)
        upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "x"})
        requests = await turn(s, cid, upgrade)
        assert tool_results(requests[1])[upgrade.id]["content"].startswith("Already in Unrestricted mode")
        assert not s.of("upgradeRequested", cid)


@pytest.mark.req("REQ-LAYER-002", "REQ-PROTO-008")
async def test_execute_and_plan_act_at_once_without_the_model(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        execute = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        assert execute["accepted"] is True and execute["command"] == "execute" and execute["mode"] == "unrestricted"
        assert (await conversation(s, cid))["mode"] == "unrestricted"
        plan = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/plan"})
        assert plan["command"] == "plan" and plan["mode"] == "restricted"
        again = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/plan"})
        assert again["mode"] == "restricted"
        # idle after all three: no model request was started (one would hold the conversation in awaiting_llm)
        conv = await conversation(s, cid)
        assert fake_anthropic.requests == [], "a mode command never reaches the model"
        assert [(e["mode"], e["actor"]) for e in s.of("modeChanged", cid)] == [
            ("unrestricted", "user"), ("restricted", "user")
        ]
        assert conv["status"] == "idle" and conv["mode"] == "restricted"
        assert "awaiting_llm" not in [e["status"] for e in s.of("status", cid)]


def bash_call(command: str) -> ToolUseBlock:
    return ToolUseBlock("bash", {"command": command})


@pytest.mark.req("REQ-PERM-019", "REQ-PERM-020", "REQ-PERM-021", "REQ-PERM-022")
async def test_scoped_always_allow_for_bash_through_lsp_and_across_a_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await unrestricted(s, policy="interactive")
        mark = await start(s, cid, Reply.tool_reply(bash_call("echo one | cat")), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)
        assert asked["scopes"] == [
            {"kind": "prefix", "rule": "echo *; cat *", "label": "bash: echo *; cat *"},
            {"kind": "tool", "rule": "bash", "label": "bash"},
        ]
        pending = (await conversation(s, cid))["pendingApproval"]
        assert pending["scopes"] == asked["scopes"]
        params = {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "alwaysAllow"}
        bad = await s.error("phoenix/respondToApproval", {**params, "rule": "rm *"})
        assert bad.code == -32602 and (bad.data or {}).get("field") == "rule" and "echo *; cat *" in bad.message
        assert (await conversation(s, cid))["status"] == "awaiting_approval"  # still open
        await s.request("phoenix/respondToApproval", {**params, "rule": "echo *; cat *"})
        await wait_idle(s, cid, mark)
        rules = (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid}))["tools"]
        assert rules == [
            {"toolName": "bash", "kind": "prefix", "rule": "echo *; cat *", "label": "bash: echo *; cat *"}
        ]
        changed = s.of("alwaysAllowChanged", cid)[-1]
        assert (changed["rule"], changed["scope"], changed["allowed"]) == ("echo *; cat *", "prefix", True)

        mark = last_seq(s, cid)
        await turn(s, cid, bash_call("echo two && cat /dev/null"))  # covered: runs without asking
        assert not [e for e in s.of("approvalRequested", cid) if e["seq"] > mark]
        mark = await start(s, cid, Reply.tool_reply(bash_call("echo three; touch made.txt")), Reply.text_reply("ok"))
        asked = await approval_after(s, cid, mark)  # `touch` is not covered: the whole line asks
        assert [x["rule"] for x in asked["scopes"]] == ["touch *", "bash"]
        await answer(s, cid, asked["toolUseId"], "deny")
        await wait_idle(s, cid, mark)
        assert not (s.workdir / "made.txt").exists()

    async with session(fake_anthropic, tmp_path, editor) as s:  # the rules are kept across a restart
        conv = await conversation(s, cid)
        assert conv["alwaysAllowed"] == ["bash: echo *; cat *"]
        assert conv["alwaysAllowRules"][0]["rule"] == "echo *; cat *"
        mark = last_seq(s, cid)
        await turn(s, cid, bash_call("echo four"))
        assert not [e for e in s.of("approvalRequested", cid) if e["seq"] > mark]
        revoke = {"conversationId": cid, "toolName": "bash", "rule": "bash: echo *; cat *"}
        assert await s.request("phoenix/revokeAlwaysAllow", revoke) == {"revoked": True}
        assert await s.request("phoenix/revokeAlwaysAllow", revoke) == {"revoked": False}
        audit = (await s.request("phoenix/getAuditLog", {"conversationId": cid}))["entries"]
        kinds = {e["kind"]: e["details"] for e in audit}
        assert kinds["alwaysAllowGranted"] == {"tool": "bash", "rule": "bash: echo *; cat *"}
        assert kinds["alwaysAllowRevoked"] == {"tool": "bash", "rule": "bash: echo *; cat *"}
        granted = [e for e in audit if e["kind"] == "approvalResolved" and e["details"]["decision"] == "alwaysAllow"]
        assert granted[0]["details"]["rule"] == "bash: echo *; cat *"
