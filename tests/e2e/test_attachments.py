"""Attachments through a real LSP client: files (from the unsaved buffer or disk), ranges, diagnostics, and every
refusal (REQ-ATTACH-001..003)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


def _user_texts(body: dict[str, Any]) -> list[str]:
    content = body["messages"][-1]["content"]
    return [content] if isinstance(content, str) else [b["text"] for b in content if b.get("type") == "text"]


async def _send(s: Session, cid: str, text: str, attachments: list[dict[str, Any]]) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, "attachments": attachments})
    await s.wait_status(cid, "idle", since=seen)


@pytest.mark.req("REQ-ATTACH-001", "REQ-ATTACH-002", "REQ-ATTACH-003")
async def test_a_file_range_an_unsaved_buffer_and_diagnostics_reach_the_model_once_labelled(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    fake_anthropic.enqueue(Reply.text_reply("seen"), Reply.text_reply("seen too"))
    async with session(fake_anthropic, tmp_path) as s:
        work = s.workdir
        (work / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n")
        (work / "open.py").write_text("on disk\n")
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem((work / "open.py").as_uri(), "python", 3, "unsaved buffer text\n")))
        cid = await s.new()
        await _send(s, cid, "Why does add subtract?", [
            {"kind": "file", "uri": (work / "calc.py").as_uri(), "range": {"startLine": 0, "endLine": 1}},
            {"kind": "file", "uri": (work / "open.py").as_uri()},
            {"kind": "diagnostics", "uri": (work / "calc.py").as_uri(), "diagnostics": [
                {"line": 1, "severity": "warning", "message": "suspicious\n  operator", "source": "lint"}]},
        ])
        texts = _user_texts(fake_anthropic.requests[-1].body)
        assert texts[0] == "Why does add subtract?"
        assert texts[1] == ('<attachment path="calc.py" lines="calc.py, lines 1-2">\n'
                            "def add(a, b):\n    return a - b\n</attachment>")
        assert "unsaved buffer text" in texts[2] and "on disk" not in texts[2]
        assert texts[3].endswith("line 2: warning (lint): suspicious operator\n</attachment>")
        # the transcript keeps what was attached: a restored view shows it
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        shown = [b["text"] for b in conv["messages"][0]["content"] if b["type"] == "text"]
        assert shown == texts
        # the model sees each attachment once: the next turn does not repeat it
        await _send(s, cid, "thanks", [])
        later = fake_anthropic.requests[-1].body["messages"]
        assert sum(str(m["content"]).count("def add(a, b)") for m in later) == 1


@pytest.mark.req("REQ-ATTACH-001")
@pytest.mark.parametrize("case", ["outside", "large", "binary", "denied", "not-utf8", "range", "not-a-file-uri"])
async def test_a_refused_attachment_names_the_file_and_nothing_is_sent(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path, case: str) -> None:
    secret_dir = tmp_path / "work" / "creds"
    env = {"PHOENIX_LSP_DENY_READ": str(secret_dir)}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        work = s.workdir
        files = {
            "outside": (tmp_path / "elsewhere.txt", b"far away\n", "outside the workspace"),
            "large": (work / "big.log", b"x" * (256 * 1024 + 1), "more than the 262,144 an attachment may have"),
            "binary": (work / "image.bin", b"PK\x03\x04\x00\x00", "binary file"),
            "denied": (secret_dir / "token", b"hunter2\n", "deny-read list"),
            "not-utf8": (work / "latin1.txt", b"caf\xe9\n", "not UTF-8"),
            "range": (work / "short.txt", b"one\ntwo\n", "lines 10-12 are not in it"),
        }
        attachment: dict[str, Any]
        if case == "not-a-file-uri":
            attachment, expected = {"kind": "file", "uri": "https://example.invalid/x.py"}, "not a file: URI"
        else:
            path, data, expected = files[case]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            attachment = {"kind": "file", "uri": path.as_uri()}
            if case == "range":
                attachment["range"] = {"startLine": 9, "endLine": 11}
        cid = await s.new()
        error = await s.error("phoenix/sendMessage", {
            "conversationId": cid, "text": "look", "attachments": [{"kind": "diagnostics", "uri": (
                work / "a.py").as_uri(), "diagnostics": []}, attachment]})
        assert error.code == -32602 and error.data["field"] == "attachments[1]"
        assert expected in error.message and "nothing was sent" in error.message
        if case != "not-a-file-uri":
            assert files[case][0].name in error.message
        assert fake_anthropic.requests == []
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["messages"] == [] and conv["status"] == "idle"
