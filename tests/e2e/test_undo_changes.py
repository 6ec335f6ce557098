"""End-to-end: an accepted change set taken back afterwards (issue 36, REQ-BASH-040/041, REQ-PROTO-070).

A real LSP client (pytest-lsp) drives the real server; the model is the fake Anthropic server scripted to call
bash or patch; the command runs for real in a real kernel overlay and its review is accepted; then the client
asks ``phoenix/undoChanges``. The editor's buffers are harness.py's ``Buffers`` fake, which applies each workspace
edit the way the editors do. The witnesses are the disk (the tree hashed), the edits the client received and what
the fake model server was told next.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp import limits
from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Buffers, session
from tests.e2e.test_shell_review import COMMAND, bash, run_reviewed, workspace
from tests.e2e.test_write_patch import turn, unrestricted
from tests.fake_anthropic import FakeAnthropic, ToolUseBlock
from tests.sandbox.capture import tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

#: edits, creates, deletes and renames text files; writes a binary file, makes a folder, changes a mode
FULL = (COMMAND + " && mkdir -p build/sub && printf 'B\\0IN' > build/sub/x.bin && printf '\\0\\1' > data.bin "
        "&& chmod 600 tool.sh && ln -s a.txt link")


def full_workspace(w: Path) -> None:
    workspace(w)
    (w / "data.bin").write_bytes(b"\0old binary\0")
    (w / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(w / "tool.sh", 0o755)


@pytest.mark.req("REQ-BASH-040", "REQ-BASH-041", "REQ-PROTO-070")
async def test_a_command_accepted_then_undone_leaves_the_disk_byte_identical(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        full_workspace(w)
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        _, told = await run_reviewed(s, cid, FULL, None)
        assert "reviewed and applied" in told and "the user can undo it" in told
        assert tree_digest(w) != before
        kept = s.data_dir / "undo"
        modes = {oct(p.stat().st_mode & 0o777) for p in kept.rglob("*") if not p.is_symlink()}
        assert modes <= {"0o700", "0o600"}, modes  # the user's files: only the server reads them
        edits = len(s.edits)
        result = await s.request("phoenix/undoChanges", {"conversationId": cid, "changeSetId": "latest"})
        assert result["undone"] is True and result["refused"] == [], result["message"]
        assert tree_digest(w) == before
        assert len(s.edits) == edits + 1, "the text part is one workspace/applyEdit"
        assert {"a.txt", "gone.txt", "old.txt", "new.txt", "moved.txt", "data.bin", "build"} <= set(result["restored"])
        # the model is told in the conversation that the user undid it
        await turn(s, cid, text="next")
        notes = [b.get("text", "") for m in s.fake.requests[-1].messages for b in
                 (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])]
        assert any(f"The user undid change set {result['changeSetId']}" in n for n in notes), notes
        again = await s.error("phoenix/undoChanges", {"conversationId": cid, "changeSetId": result["changeSetId"]})
        assert again.data["kind"] == "invalidParams" and again.data["field"] == "changeSetId"


@pytest.mark.req("REQ-BASH-040", "REQ-BASH-041")
async def test_a_patch_is_undone(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "p.txt").write_text("alpha\nbeta\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        patch = ToolUseBlock("patch", {"path": "p.txt", "patches": [
            {"operation": "replace", "oldText": "beta", "newText": "BETA"}]})
        await turn(s, cid, patch)
        assert (w / "p.txt").read_text() == "alpha\nBETA\n"
        result = await s.request("phoenix/undoChanges", {"conversationId": cid})
        assert result["undone"] is True and result["restored"] == ["p.txt"] and result["label"] == "patch p.txt"
        assert (w / "p.txt").read_text() == "alpha\nbeta\n"


@pytest.mark.req("REQ-BASH-041")
async def test_an_editor_change_after_the_accept_is_not_lost(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        cid = await unrestricted(s, policy="auto")
        await run_reviewed(s, cid, COMMAND, None)
        buffers.open(w / "a.txt", (w / "a.txt").read_text())
        buffers.change(w / "a.txt", "zero\nONE\ntwo\nthe user's line after the accept\n")
        result = await s.request("phoenix/undoChanges", {"conversationId": cid})
        assert [r["path"] for r in result["refused"]] == ["a.txt"] and "changed since" in result["refused"][0]["why"]
        assert buffers.text(w / "a.txt") == "zero\nONE\ntwo\nthe user's line after the accept\n"
        assert (w / "gone.txt").read_text() == "bye\n" and (w / "old.txt").read_text() == "kept text\n"
        assert not (w / "new.txt").exists() and not (w / "moved.txt").exists()
        assert "a.txt" in result["message"]


@pytest.mark.req("REQ-BASH-040")
async def test_the_bound_drops_the_oldest_set(fake_anthropic: FakeAnthropic, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        ids = []
        for i in range(limits.UNDO_SETS + 1):
            (w / f"f{i}.txt").write_text(f"{i}\n")
            _, told = await run_reviewed(s, cid, f"echo changed >> f{i}.txt", None)
            ids.append(told.rsplit("change set ", 1)[1].split(";")[0])
        oldest = await s.error("phoenix/undoChanges", {"conversationId": cid, "changeSetId": ids[0]})
        assert oldest.data["field"] == "changeSetId" and "no change set" in oldest.message
        result = await s.request("phoenix/undoChanges", {"conversationId": cid, "changeSetId": ids[1]})
        assert result["undone"] and (w / "f1.txt").read_text() == "1\n"


@pytest.mark.req("REQ-BASH-041")
async def test_undo_while_a_turn_runs_is_refused_as_busy(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        await run_reviewed(s, cid, "echo x >> a.txt", "allow")
        from tests.e2e.test_approval import approval_after, start
        from tests.fake_anthropic import Reply
        mark = await start(s, cid, Reply.tool_reply(bash("true")), Reply.text_reply("done"))
        await approval_after(s, cid, mark)  # the turn waits for the user: busy
        refused = await s.error("phoenix/undoChanges", {"conversationId": cid})
        assert refused.data["kind"] == "agentBusy"
        assert (w / "a.txt").read_text().endswith("x\n")



@pytest.mark.req("REQ-BASH-041")
async def test_an_editor_that_refuses_the_undo_leaves_everything_as_it_was(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        full_workspace(w)
        before = tree_digest(w)
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        cid = await unrestricted(s, policy="auto")
        await run_reviewed(s, cid, FULL, None)
        after = tree_digest(w)
        from lsprotocol import types
        s.on_apply_edit = lambda _: types.ApplyWorkspaceEditResult(applied=False, failure_reason="user said no")
        refused = await s.request("phoenix/undoChanges", {"conversationId": cid})
        assert refused["undone"] is False and "user said no" in refused["message"]
        assert tree_digest(w) == after, "the server's part was taken back: nothing landed partly"
        s.on_apply_edit = buffers.apply
        result = await s.request("phoenix/undoChanges", {"conversationId": cid, "changeSetId": refused["changeSetId"]})
        assert result["undone"] is True and tree_digest(w) == before
