"""End-to-end: what an Unrestricted bash command changes is reviewed before it lands (issue 36, REQ-BASH-032).

A real LSP client (pytest-lsp, VS Code's and Neovim's capabilities) drives the real server; the model is the
fake Anthropic server scripted to call bash; the command runs for real in a real kernel overlay; the editor's
buffers are harness.py's ``Buffers`` fake, which applies each workspace edit the way the editors do. The
witnesses are the disk, the edits the client received and what the fake model server was told.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Buffers, Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_approval import answer, approval_after, start
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import run_plain, tree_digest

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

COMMAND = "sed -i s/one/ONE/ a.txt && echo new > new.txt && rm gone.txt && mv old.txt moved.txt"


def workspace(w: Path) -> None:
    (w / "a.txt").write_text("zero\none\ntwo\n")
    (w / "gone.txt").write_text("bye\n")
    (w / "old.txt").write_text("kept text\n")


def expected(w: Path, tmp_path: Path, command: str = COMMAND) -> dict[str, str]:
    """What the command would have produced, run as today in a copy of the workspace."""
    copy = tmp_path / "expected"
    shutil.copytree(w, copy, symlinks=True)
    run_plain(command, copy)
    return tree_digest(copy)


def bash(command: str) -> ToolUseBlock:
    return ToolUseBlock("bash", {"command": command})


async def run_reviewed(s: Session, cid: str, command: str, decision: str | None) -> tuple[dict[str, Any] | None, str]:
    """One turn whose model runs ``command`` (the bash question allowed), then the review answered with
    ``decision`` (None: the policy answers it). Returns the review's question and what the model was told."""
    call = bash(command)
    mark = await start(s, cid, Reply.tool_reply(call), Reply.text_reply("done"))
    asked = None
    if decision is not None:
        first = await approval_after(s, cid, mark)
        assert first["toolName"] == "bash"
        await answer(s, cid, first["toolUseId"], "allow")
        asked = await approval_after(s, cid, first["seq"])
        await answer(s, cid, asked["toolUseId"], decision)
    await wait_idle(s, cid, mark)
    told = tool_results(s.fake.requests[-1])[call.id]["content"]
    return asked, told


@pytest.mark.req("REQ-BASH-032")
async def test_allow_applies_one_workspace_edit_equal_to_the_commands_result(
        fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        w = s.workdir
        workspace(w)
        want = expected(w, tmp_path)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        asked, told = await run_reviewed(s, cid, COMMAND, "allow")
        assert asked is not None and asked["toolName"] == "patch"
        assert asked["arguments"]["files"] == ["a.txt", "gone.txt", "moved.txt", "new.txt"]
        diff = asked["diff"]
        assert "-one\n+ONE\n" in diff and "+++ /dev/null" in diff and "--- a/old.txt\n+++ b/moved.txt" in diff
        assert "+new\n" in diff
        assert [e["kind"] for e in s.events if e.get("toolUseId") == asked["toolUseId"]] == [
            "approvalRequested", "approvalResolved"]
        assert len(s.edits) == 1, "the text part is one workspace/applyEdit"
        kinds = [type(c).__name__ for c in s.edits[0].edit.document_changes or []]
        assert kinds == ["DeleteFile", "RenameFile", "CreateFile", "TextDocumentEdit", "TextDocumentEdit"]
        assert tree_digest(w) == want
        assert "reviewed and applied" in told and "modified a.txt" in told and "deleted gone.txt" in told


@pytest.mark.req("REQ-BASH-032", "REQ-BASH-030")
async def test_deny_leaves_the_disk_byte_identical(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        (w / "node_modules").mkdir()
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        _, told = await run_reviewed(s, cid, COMMAND + " && echo dep > node_modules/x.js", "deny")
        assert tree_digest(w) == before and not s.edits
        assert "not applied (the user rejected them)" in told and "node_modules/x.js" in told
        assert not list((s.data_dir / "layers").iterdir()) or all(
            p.name.startswith(".discarded-") for p in (s.data_dir / "layers").iterdir())


@pytest.mark.req("REQ-BASH-032")
async def test_auto_applies_without_asking(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        want = expected(w, tmp_path)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        _, told = await run_reviewed(s, cid, COMMAND, None)
        assert not s.of("approvalRequested", cid)
        assert len(s.edits) == 1 and tree_digest(w) == want
        assert "reviewed and applied" in told


@pytest.mark.req("REQ-BASH-032")
async def test_an_ignored_folder_and_a_git_commit_are_summarised_and_placed_on_accept(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    command = ("mkdir -p node_modules/pkg && echo 'module.exports = 1' > node_modules/pkg/index.js && "
               "git init -q && git -c user.email=a@b -c user.name=a add a.txt && "
               "git -c user.email=a@b -c user.name=a commit -qm first && echo built > a.txt")
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "a.txt").write_text("source\n")
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        asked, told = await run_reviewed(s, cid, command, "allow")
        assert asked is not None
        diff = asked["diff"]
        assert "# ignored folder node_modules:" in diff and "# ignored folder .git:" in diff
        assert "-source\n+built\n" in diff
        assert (w / "node_modules/pkg/index.js").read_text() == "module.exports = 1\n"
        assert (w / "a.txt").read_text() == "built\n"
        log = __import__("subprocess").run(["git", "log", "--format=%s"], cwd=w, capture_output=True, text=True)
        assert log.stdout == "first\n" and "reviewed and applied" in told


@pytest.mark.req("REQ-BASH-031", "REQ-BASH-032")
async def test_an_unsaved_editor_change_is_not_lost(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        buffers.open(w / "a.txt", "zero\none\ntwo\nthe user's unsaved line\n")
        cid = await unrestricted(s, policy="auto")
        _, told = await run_reviewed(s, cid, COMMAND, None)
        assert buffers.text(w / "a.txt") == "zero\none\ntwo\nthe user's unsaved line\n"
        assert (w / "a.txt").read_text() == "zero\none\ntwo\n"  # the command's sed is dropped, by name
        assert (w / "new.txt").read_text() == "new\n" and not (w / "gone.txt").exists()
        assert "not applied: a.txt: changed in the editor" in told


@pytest.mark.req("REQ-BASH-032")
async def test_an_editor_that_refuses_the_edit_leaves_nothing_landed(fake_anthropic: FakeAnthropic,
                                                                      tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        before = tree_digest(w)
        s.on_apply_edit = lambda _: types.ApplyWorkspaceEditResult(applied=False, failure_reason="user said no")
        cid = await unrestricted(s, policy="auto")
        _, told = await run_reviewed(s, cid, COMMAND + " && mkdir build && printf '\\0' > build/x.bin", None)
        assert len(s.edits) == 1 and tree_digest(w) == before  # the server's part (build/) was taken back
        assert "user said no" in told and "Nothing of them landed" in told


@pytest.mark.req("REQ-BASH-032")
async def test_an_editor_without_the_resource_operations_is_refused_and_nothing_lands(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, no_create=True) as s:
        w = s.workdir
        workspace(w)
        before = tree_digest(w)
        cid = await unrestricted(s, policy="interactive")
        mark = last_seq(s, cid)
        call = bash(COMMAND)
        await start(s, cid, Reply.tool_reply(call), Reply.text_reply("done"))
        first = await approval_after(s, cid, mark)
        await answer(s, cid, first["toolUseId"], "allow")
        await wait_idle(s, cid, mark)
        told = tool_results(s.fake.requests[-1])[call.id]["content"]
        assert len(s.of("approvalRequested", cid)) == 1, "nothing to ask about: it cannot land"
        assert tree_digest(w) == before and not s.edits
        assert "cannot create or delete files through a workspace edit" in told


@pytest.mark.req("REQ-BASH-032", "REQ-BED-005")
async def test_cancel_while_the_review_waits_discards_the_changes(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        workspace(w)
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        mark = await start(s, cid, Reply.tool_reply(bash(COMMAND)), Reply.text_reply("done"))
        first = await approval_after(s, cid, mark)
        await answer(s, cid, first["toolUseId"], "allow")
        review = await approval_after(s, cid, first["seq"])
        layers = s.data_dir / "layers"
        assert [p for p in layers.iterdir() if not p.name.startswith(".")], "the layer waits with the question"
        await s.request("phoenix/cancel", {"conversationId": cid})
        await s.wait_event(lambda e: e["kind"] == "approvalResolved" and e["toolUseId"] == review["toolUseId"]
                           and e["decision"] == "cancelled")
        # the command's task ends cancelled (its toolEnd) once the layer is discarded
        await s.wait_event(lambda e: e["kind"] == "toolEnd" and e["toolUseId"] == first["toolUseId"])
        assert not [p for p in layers.iterdir() if not p.name.startswith(".")], "the layer outlived the cancel"
        assert tree_digest(w) == before and not s.edits
