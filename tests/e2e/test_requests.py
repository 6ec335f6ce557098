"""One behaviour test per phoenix/* request, through a real LSP client against the server subprocess.

The model is the local fake Anthropic server (tests/fake_anthropic.py), driven through the real SDK.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


async def _turn(s: Session, cid: str, text: str, status: str = "idle") -> None:
    """Send one message and wait until the conversation rests in ``status``."""
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await s.wait_status(cid, status, since=seen)


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") if b["type"] == "text" else str(b.get("content", "")) for b in content)


@pytest.mark.req("REQ-PROTO-004", "REQ-BED-014", "REQ-BED-010", "REQ-PROTO-001")
async def test_new_conversation_answers_every_field(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        phoenix = s.initialize_result.capabilities.experimental["phoenix"]
        assert "phoenix/newConversation" in phoenix["methods"]
        assert phoenix["sandbox"]["available"] is True
        result = await s.request(
            "phoenix/newConversation",
            {"workingDirectory": str(s.workdir), "style": "plan", "policy": "auto", "model": "claude-x"},
        )
        assert result["mode"] == "restricted"  # the sandbox is available here (REQ-BED-014)
        assert result["style"] == "plan" and result["policy"] == "auto" and result["model"] == "claude-x"
        assert result["workingDirectory"] == str(s.workdir.resolve())
        assert result["sandbox"]["available"] is True and isinstance(result["sandbox"]["landlockAbi"], int)
        # without workingDirectory the client's workspace root is used (REQ-BED-010)
        default = await s.request("phoenix/newConversation", {})
        assert default["workingDirectory"] == str(s.workdir.resolve())
        assert default["style"] == "chat" and default["policy"] == "interactive"
        err = await s.error("phoenix/newConversation", {"workingDirectory": str(tmp_path / "missing")})
        assert err.code == -32602 and "workingDirectory" in err.message and err.data["field"] == "workingDirectory"


@pytest.mark.req("REQ-PROTO-005", "REQ-BED-009")
async def test_list_conversations_newest_first_with_titles(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.enqueue(Reply.text_reply("one"), Reply.text_reply("two"), Reply.text_reply("three"))
    async with session(fake_anthropic, tmp_path) as s:
        first = await s.new()
        second = await s.new()
        await _turn(s, first, "first question about parsing")
        await _turn(s, second, "second question")
        await _turn(s, first, "follow-up")  # first is now the most recently updated
        listing = (await s.request("phoenix/listConversations", {}))["conversations"]
        assert [c["conversationId"] for c in listing] == [first, second]
        by_id = {c["conversationId"]: c for c in listing}
        assert by_id[first]["title"] == "first question about parsing"
        assert by_id[first]["status"] == "idle"
        assert all(c["updatedAt"] >= c["createdAt"] for c in listing)


@pytest.mark.req("REQ-PROTO-006", "REQ-PROTO-007", "REQ-BED-011")
async def test_get_conversation_pages_and_catches_up_after_seq(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("answer one"), Reply.text_reply("answer two"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        await _turn(s, cid, "question one")
        seen = s.seqs(cid)[-1]  # a client that processed everything so far
        await _turn(s, cid, "question two")
        full = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in full["messages"]] == ["user", "assistant", "user", "assistant"]
        assert full["status"] == "idle" and full["mode"] == "restricted" and full["hasMore"] is False
        assert full["lastSeq"] == s.seqs(cid)[-1]
        assert full["contextUsage"]["contextWindow"] > 0 and full["contextUsage"]["usedTokens"] > 0
        # every message's seq is that of the "message" event announcing it
        announced = {e["message"]["messageId"]: e["seq"] for e in s.of("message", cid)}
        assert {m["messageId"]: m["seq"] for m in full["messages"]} == announced
        catch_up = await s.request("phoenix/getConversation", {"conversationId": cid, "afterSeq": seen})
        assert [m["content"][0]["text"] for m in catch_up["messages"]] == ["question two", "answer two"]
        page = await s.request("phoenix/getConversation", {"conversationId": cid, "limit": 3})
        assert len(page["messages"]) == 3 and page["hasMore"] is True
        rest = await s.request(
            "phoenix/getConversation", {"conversationId": cid, "afterSeq": page["messages"][-1]["seq"]}
        )
        assert [m["messageId"] for m in page["messages"] + rest["messages"]] == [
            m["messageId"] for m in full["messages"]
        ]


@pytest.mark.req("REQ-PROTO-008", "REQ-BED-002", "REQ-BED-003")
async def test_send_message_is_accepted_before_the_model_answers(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    fake_anthropic.enqueue(Reply.hanging("slow answer", after_events=2))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        result = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        assert result["accepted"] is True and result["messageId"]
        # the answer came while the model still streams: the user message is persisted and announced
        await s.wait_status(cid, "awaiting_llm")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["status"] == "awaiting_llm"
        assert [m["content"][0]["text"] for m in conv["messages"]] == ["hello"]
        assert conv["messages"][0]["messageId"] == result["messageId"]
        await s.request("phoenix/cancel", {"conversationId": cid})


@pytest.mark.req("REQ-PROTO-008", "REQ-BED-002", "REQ-PROTO-003")
async def test_busy_conversation_rejects_a_message_and_says_cancel(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    fake_anthropic.enqueue(Reply.hanging("still thinking"), Reply.text_reply("done"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "first"})
        await s.wait_event(lambda e: e["kind"] == "textDelta")
        err = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "second"})
        assert err.code == -32002 and err.data["kind"] == "agentBusy"
        assert "busy" in err.message and "cancel" in err.message
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["content"][0]["text"] for m in conv["messages"]] == ["first"]  # no hidden queue
        await s.request("phoenix/cancel", {"conversationId": cid})
        await _turn(s, cid, "second")  # after cancelling, the message goes through
        assert len(fake_anthropic.requests) == 2


@pytest.mark.req("REQ-PROTO-009", "REQ-BED-005")
async def test_cancel_when_idle_is_a_harmless_no_op(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        before = s.seqs(cid)
        result = await s.request("phoenix/cancel", {"conversationId": cid})
        assert result == {"cancelled": False, "status": "idle"}
        assert s.seqs(cid) == before


@pytest.mark.req("REQ-PROTO-010", "REQ-BED-016", "REQ-BED-017", "REQ-LAYER-002")
async def test_set_mode_upgrade_and_downgrade_reach_the_model(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        up = await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        assert up == {"mode": "unrestricted", "changed": True}
        same = await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        assert same == {"mode": "unrestricted", "changed": False}
        down = await s.request("phoenix/setMode", {"conversationId": cid, "mode": "restricted"})
        assert down == {"mode": "restricted", "changed": True}
        changes = [(e["mode"], e["previous"]) for e in s.of("modeChanged", cid)]
        assert changes == [("unrestricted", "restricted"), ("restricted", "unrestricted")]
        await _turn(s, cid, "what mode am I in?")
        sent = str(fake_anthropic.requests[-1].body["messages"])
        assert "Restricted" in sent  # the synthetic mode note reaches the model (REQ-BED-017)
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["mode"] == "restricted"


@pytest.mark.req("REQ-PROTO-011", "REQ-BED-015", "REQ-PROTO-021")
async def test_respond_to_mode_upgrade_approves_and_resumes(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    upgrade = ToolUseBlock("request_mode_upgrade", {"reason": "I need to edit main.py"})
    fake_anthropic.enqueue(Reply.tool_reply(upgrade), Reply.text_reply("thanks, now unrestricted"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        err = await s.error("phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True})
        assert err.code == -32003 and err.data["kind"] == "requestNotOpen"
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "please fix main.py"})
        requested = await s.wait_event(lambda e: e["kind"] == "upgradeRequested")
        assert requested["reason"] == "I need to edit main.py"
        wrong = await s.error(
            "phoenix/respondToModeUpgrade", {"conversationId": cid, "approve": True, "toolUseId": "nope"}
        )
        assert wrong.code == -32003
        mark = s.last_seq(cid)
        result = await s.request(
            "phoenix/respondToModeUpgrade",
            {"conversationId": cid, "approve": True, "toolUseId": requested["toolUseId"]},
        )
        assert result == {"mode": "unrestricted"}
        await s.wait_status(cid, "idle", since=mark)
        resolved = s.of("upgradeResolved", cid)[-1]
        assert resolved["approved"] is True and resolved["toolUseId"] == requested["toolUseId"]
        tool_result = fake_anthropic.requests[-1].messages[-1]["content"][0]
        assert tool_result["type"] == "tool_result" and tool_result["tool_use_id"] == upgrade.id
        assert "approved" in str(tool_result["content"])


@pytest.mark.req("REQ-PROTO-012", "REQ-PERM-004", "REQ-PROTO-013")
async def test_respond_to_approval_deny_and_policy(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    bash = ToolUseBlock("bash", {"command": "echo hi > note.txt"})
    fake_anthropic.enqueue(Reply.tool_reply(bash), Reply.text_reply("understood"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        policy = await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "auto"})
        assert policy == {"policy": "auto"}
        policy = await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "interactive"})
        assert policy == {"policy": "interactive"}
        assert [e["policy"] for e in s.of("policyChanged", cid)] == ["auto", "interactive"]
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "write a note"})
        asked = await s.wait_event(lambda e: e["kind"] == "approvalRequested")
        assert asked["toolName"] == "bash" and asked["arguments"] == {"command": "echo hi > note.txt"}
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["pendingApproval"]["toolUseId"] == asked["toolUseId"]
        err = await s.error(
            "phoenix/respondToApproval", {"conversationId": cid, "toolUseId": "other", "decision": "allow"}
        )
        assert err.code == -32003 and err.data["kind"] == "requestNotOpen"
        mark = s.last_seq(cid)
        result = await s.request(
            "phoenix/respondToApproval", {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "deny"}
        )
        assert result == {"toolUseId": asked["toolUseId"], "decision": "deny"}
        await s.wait_status(cid, "idle", since=mark)
        assert not (s.workdir / "note.txt").exists()
        denied = fake_anthropic.requests[-1].messages[-1]["content"][0]
        assert denied["is_error"] is True and "denied" in str(denied["content"])


@pytest.mark.req("REQ-PROTO-014", "REQ-LAYER-001", "REQ-LAYER-006")
async def test_set_style_changes_only_the_style(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    fake_anthropic.enqueue(Reply.text_reply("planned"))
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        before = await s.request("phoenix/getConversation", {"conversationId": cid})
        result = await s.request("phoenix/setStyle", {"conversationId": cid, "style": "development"})
        assert result["style"] == "development"
        after = await s.request("phoenix/getConversation", {"conversationId": cid})
        for key in ("mode", "policy", "status", "alwaysAllowed"):
            assert after[key] == before[key]
        assert after["style"] == "development"
        assert [(e["style"], e["previous"]) for e in s.of("styleChanged", cid)] == [("development", "chat")]
        suggestion = s.of("styleSuggestion", cid)[-1]  # development while restricted suggests /execute
        assert suggestion["command"] == "/execute" and suggestion["mode"] == "unrestricted"
        await s.request("phoenix/setStyle", {"conversationId": cid, "style": "plan"})
        await _turn(s, cid, "plan it")
        assert "planning" in fake_anthropic.requests[-1].system.lower()


@pytest.mark.req("REQ-PROTO-015", "REQ-PROTO-016", "REQ-BED-020", "REQ-BED-021", "REQ-BED-023")
async def test_trigger_continuation_then_continue_in_a_new_conversation(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    fake_anthropic.enqueue(
        Reply.text_reply("we discussed the parser"),
        Reply.text_reply("SUMMARY: the parser needs a rewrite"),
        Reply.text_reply("continuing"),
    )
    async with session(fake_anthropic, tmp_path, editor) as s:
        cid = await s.new()
        await _turn(s, cid, "let us talk about the parser")
        result = await s.request("phoenix/triggerContinuation", {"conversationId": cid})
        assert result == {"status": "summarizing"}
        continuation = await s.wait_event(lambda e: e["kind"] == "continuation")
        assert continuation["summary"] == "SUMMARY: the parser needs a rewrite"
        # with prompt caching on (the default) the summary request keeps the turn's tools, so it shares the
        # cached prefix (REQ-CACHE-001); its instruction says not to call them
        summary, turn = fake_anthropic.requests[-1], fake_anthropic.requests[-2]
        assert summary.tool_names == turn.tool_names and "Do not call tools" in str(summary.messages[-1])
        assert s.of("status", cid)[-1]["status"] == "exhausted"
        err = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "more"})
        assert err.code == -32005 and "new conversation" in err.message
        again = await s.error("phoenix/triggerContinuation", {"conversationId": cid})
        assert again.code == -32005
        new = await s.request("phoenix/newConversation", {"continueFrom": cid, "seedWithSummary": True})
        assert new["continuedFrom"] == cid
        conv = await s.request("phoenix/getConversation", {"conversationId": new["conversationId"]})
        assert conv["continuedFrom"] == cid
        assert conv["messages"][0]["tag"] == "continuation"
        await _turn(s, new["conversationId"], "go on")
        assert "the parser needs a rewrite" in str(fake_anthropic.requests[-1].messages)
        # continuing from a conversation that is not exhausted is refused
        refused = await s.error("phoenix/newConversation", {"continueFrom": new["conversationId"]})
        assert refused.code == -32006


@pytest.mark.req("REQ-PROTO-017", "REQ-PROTO-018", "REQ-PROTO-019")
async def test_always_allow_listing_revoking_and_audit(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    bash = ToolUseBlock("bash", {"command": "echo allowed"})
    fake_anthropic.enqueue(Reply.tool_reply(bash), Reply.text_reply("done"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
        assert (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid})) == {"tools": []}
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "run it"})
        asked = await s.wait_event(lambda e: e["kind"] == "approvalRequested")
        mark = s.last_seq(cid)
        await s.request(
            "phoenix/respondToApproval",
            {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "alwaysAllow"},
        )
        await s.wait_status(cid, "idle", since=mark)
        assert "allowed" in str(fake_anthropic.requests[-1].messages[-1]["content"][0]["content"])
        tools = (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid}))["tools"]
        assert [t["toolName"] for t in tools] == ["bash"]
        assert (await s.request("phoenix/revokeAlwaysAllow", {"conversationId": cid, "toolName": "bash"})) == {
            "revoked": True
        }
        assert s.of("alwaysAllowChanged", cid)[-1]["allowed"] is False
        assert (await s.request("phoenix/revokeAlwaysAllow", {"conversationId": cid, "toolName": "bash"})) == {
            "revoked": False
        }
        assert (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid})) == {"tools": []}
        audit = await s.request("phoenix/getAuditLog", {"conversationId": cid})
        entries = audit["entries"]
        assert entries and all(e["conversationId"] == cid for e in entries)
        assert [e["id"] for e in entries] == sorted(e["id"] for e in entries)
        assert len(entries) >= 4  # mode change, approval request, decision, grant, revoke
        page = await s.request("phoenix/getAuditLog", {"conversationId": cid, "limit": 2})
        assert len(page["entries"]) == 2 and page["nextAfterId"] == page["entries"][-1]["id"]
        rest = await s.request("phoenix/getAuditLog", {"conversationId": cid, "afterId": page["nextAfterId"]})
        assert [e["id"] for e in page["entries"] + rest["entries"]] == [e["id"] for e in entries]


@pytest.mark.req("REQ-PROTO-001")
async def test_initialize_announces_exactly_the_methods_the_server_serves(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    """The announcement is the protocol's table, and every method in it is served: a request with empty params
    gets an answer or an invalid-params error, never "method not found"."""
    from pygls.exceptions import JsonRpcException

    from phoenix_lsp.protocol.methods import METHODS

    async with session(fake_anthropic, tmp_path, editor) as s:
        s.check_schema = False  # empty params are refused: there is no result to check
        assert s.initialize_result.capabilities.experimental["phoenix"]["methods"] == list(METHODS)
        not_found = []
        for method in METHODS:
            try:
                await s.request(method, {})
            except JsonRpcException as exc:
                if exc.code == -32601:
                    not_found.append(method)
        assert not_found == []
