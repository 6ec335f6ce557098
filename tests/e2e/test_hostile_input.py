"""Hostile or broken inputs get a clear error and lose nothing (REQ-SEC-001, REQ-SEC-002), and cannot end
the server, flood the user with popups or leave a request unanswered (REQ-PROTO-044..048)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.harness import session
from tests.e2e.raw import RawServer, frame, raw_server
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


@pytest.mark.req("REQ-SEC-002", "REQ-PROTO-034")
async def test_unusable_data_directory_is_reported(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be")
    async with session(fake_anthropic, tmp_path, data_dir=blocker) as s:
        with pytest.raises(JsonRpcException) as info:
            await s.request("phoenix/newConversation", {"workingDirectory": str(s.workdir)})
        assert "could not start" in info.value.message and "data directory" in info.value.message
        assert any("could not start" in m.message for m in s.client.messages)


@pytest.mark.req("REQ-SEC-001")
async def test_a_pasted_api_key_never_reaches_the_model(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    from tests.e2e.harness import API_KEY
    from tests.fake_anthropic import Reply

    fake_anthropic.enqueue(Reply.text_reply("noted"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": f"my key is {API_KEY}, keep it"})
        await s.wait_status(cid, "idle")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    sent = str(fake_anthropic.requests[0].messages)
    assert API_KEY not in sent and "[REDACTED]" in sent
    assert API_KEY not in str(conv) and API_KEY not in str(s.events)


# ------------------------------------------------------------------ transport and lifecycle (issue 13)


async def _alive(s: RawServer) -> None:
    """The server still serves: a request after the hostile input is answered."""
    answer = await s.request("phoenix/listConversations", {})
    assert "result" in answer, answer


@pytest.mark.req("REQ-PROTO-044")
@pytest.mark.parametrize("length", ["100000000000000", "9" * 30, "9" * 5000])
async def test_a_huge_content_length_neither_kills_nor_bloats_the_server(tmp_path: Path, length: str) -> None:
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        s.write(b"Content-Length: " + length.encode() + b"\r\n\r\n" + b'{"jsonrpc":"2.0","id":"huge","method":"x"}')
        await _alive(s)
        if len(length) < 20:  # a byte count, over the limit: the request is answered, not left hanging
            refused = await s.answer("huge")
            assert refused["error"]["code"] == -32600 and "over the limit" in refused["error"]["message"]
        assert any("refused a message" in line for line in s.logs)
        assert s.popups == []


@pytest.mark.req("REQ-PROTO-044", "REQ-PROTO-034")
async def test_a_message_over_the_configured_limit_is_refused_and_the_stream_goes_on(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    limit = 64 * 1024
    async with raw_server(tmp_path / "data", {"PHOENIX_MAX_MESSAGE_BYTES": str(limit)}) as s:
        await s.initialize(tmp_path / "work")
        await _alive(s)  # initialized has run: the configured limit is in force
        big = s.send("phoenix/listConversations", {"padding": "x" * 4 * limit})
        answer = await s.answer(big)
        assert answer["error"]["code"] == -32600 and f"{limit:,}" in answer["error"]["message"]
        assert "PHOENIX_MAX_MESSAGE_BYTES" in answer["error"]["message"]
        await _alive(s)
        assert s.popups == []


@pytest.mark.req("REQ-PROTO-045")
async def test_a_request_without_params_is_answered(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        listed = await s.request("phoenix/listConversations", omit_params=True)  # Neovim: request(method, nil)
        assert listed["result"] == {"conversations": []}
        missing = await s.request("phoenix/getConversation", omit_params=True)
        assert missing["error"]["code"] == -32602 and missing["error"]["data"]["field"] == "conversationId"
        assert s.popups == []


@pytest.mark.req("REQ-PROTO-046")
@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        ("phoenix/getAuditLog", {"afterId": 10**30}, "afterId"),
        ("phoenix/getConversation", {"conversationId": "c", "afterSeq": 10**30}, "afterSeq"),
        ("phoenix/getConversation", {"conversationId": "\ud800"}, "conversationId"),
        ("phoenix/getAuditLog", {"conversationId": "a\udfffb"}, "conversationId"),
        ("phoenix/newConversation", {"workingDirectory": "/" + "a" * 5000}, "workingDirectory"),
        ("phoenix/newConversation", {"workingDirectory": "/" + "a" * 300}, "workingDirectory"),  # NAME_MAX
        ("phoenix/newConversation", {"workingDirectory": ""}, "workingDirectory"),
        ("phoenix/sendMessage", {"conversationId": "c", "text": "x", "attachments": [
            {"kind": "file", "uri": "file:///a", "range": {"startLine": 10**30, "endLine": 1}}]},
         "attachments[0].range.startLine"),
    ],
)
async def test_values_the_store_or_the_os_cannot_take_are_invalid_params(
    tmp_path: Path, method: str, params: dict[str, Any], field: str
) -> None:
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        answer = await s.request(method, params)
        assert answer["error"]["code"] == -32602, answer
        assert answer["error"]["data"]["field"] == field and field in answer["error"]["message"]
        assert (await s.request("phoenix/listConversations", {}))["result"] == {"conversations": []}, (
            "an empty working directory must not silently mean the workspace root"
        )


@pytest.mark.req("REQ-PROTO-047")
async def test_a_second_initialize_is_refused_and_the_client_stays_rich(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("still rich"))
    async with session(fake_anthropic, tmp_path) as s:
        plain = types.InitializeParams(capabilities=types.ClientCapabilities(), process_id=None, root_uri=None)
        error = await s.error("initialize", plain)
        assert error.code == -32600 and "already" in error.message
        cid = await s.new()
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hello"})
        await s.wait_status(cid, "idle")  # phoenix/event still comes: the client was not turned plain


@pytest.mark.req("REQ-PROTO-047")
async def test_a_second_initialized_builds_no_second_hub(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    from tests.e2e.harness import Buffers, wait_idle
    from tests.e2e.test_approval import answer, approval_after, start
    from tests.e2e.test_write_patch import patch, unrestricted

    async with session(fake_anthropic, tmp_path) as s:
        (s.workdir / "a.txt").write_text("one\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        call = patch("a.txt", {"operation": "append_eof", "newText": "two\n"})
        mark = await start(s, cid, Reply.tool_reply(call), Reply.text_reply("done"))
        await approval_after(s, cid, mark)
        s.client.protocol.notify("initialized", types.InitializedParams())
        await s.request("phoenix/listConversations", {})  # answered after the notification was handled
        assert len(s.of("approvalRequested", cid)) == 1, "the open approval was announced once"
        await answer(s, cid, call.id, "allow")
        await wait_idle(s, cid, mark)
        assert (s.workdir / "a.txt").read_text() == "one\ntwo\n"
        assert not any(m.type == 1 for m in s.client.messages), "no error popup"


@pytest.mark.req("REQ-PROTO-048")
async def test_malformed_input_is_answered_and_logged_but_shows_no_popup(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    async with raw_server(tmp_path / "data") as s:
        await s.initialize(tmp_path / "work")
        sent = []
        for _ in range(50):
            s.write(frame(b"{not json"))
            s.notify("textDocument/didChange", {"textDocument": 5})
            s.notify("$/cancelRequest", None)
            sent.append(s.send("textDocument/hover", {"position": "nowhere"}))
            sent.append(s.send("phoenix/getConversation", {"conversationId": 5}))
        for msg_id in sent:
            await s.answer(msg_id)
        await _alive(s)
        assert s.popups == [], [p.get("params") for p in s.popups[:3]]
        errors = [a for a in s.received if "error" in a]
        assert len(errors) >= 150 and {a["error"]["code"] for a in errors} == {-32700, -32602}
        assert len([line for line in s.logs if "malformed" in line]) <= 25, "the log is rate-limited"
