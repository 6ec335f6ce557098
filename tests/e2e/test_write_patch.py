"""End-to-end: the patch tool becomes one minimal ``workspace/applyEdit`` (issue 5, specs/patch.md).

A real LSP client (pytest-lsp, VS Code's and Neovim's capability sets) drives the real server; the model is
the fake Anthropic server, and the editor's buffers are the ``Buffers`` fake of harness.py. What the model is
told is read from the ``tool_result`` blocks of the next request the fake receives.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from tests.e2e.harness import Buffers, Session, apply_text_edits, last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

PATCH_DISABLED = "Patch tool is disabled in Restricted mode. Use request_mode_upgrade to request write access."


def patch(path: str, *patches: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock("patch", {"path": path, "patches": list(patches)})


async def unrestricted(s: Session, policy: str = "auto") -> str:
    """A conversation the user has switched to Unrestricted (a user mode action), with ``policy``."""
    cid = await s.new(policy=policy)
    result = await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
    assert result["mode"] == "unrestricted"
    return cid


async def turn(s: Session, cid: str, *calls: ToolUseBlock, text: str = "go") -> list[RecordedRequest]:
    """One user turn: the model answers with ``calls``, then ends with text. Returns the turn's requests."""
    s.fake.enqueue(Reply.tool_reply(*calls), Reply.text_reply("done"))
    before, mark = len(s.fake.requests), last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    await wait_idle(s, cid, mark)
    return s.fake.requests[before:]


class DocEdit:
    """The one ``TextDocumentEdit`` of an applyEdit, with its plain text edits."""

    def __init__(self, change: types.TextDocumentEdit) -> None:
        self.text_document = change.text_document
        self.edits = [e for e in change.edits if isinstance(e, types.TextEdit)]
        assert len(self.edits) == len(change.edits), "phoenix sends plain TextEdits (no snippets, no annotations)"


def single_text_edit(params: types.ApplyWorkspaceEditParams) -> DocEdit:
    changes = params.edit.document_changes or []
    assert len(changes) == 1 and isinstance(changes[0], types.TextDocumentEdit), changes
    return DocEdit(changes[0])


@pytest.mark.req("REQ-PATCH-001", "REQ-PATCH-007", "REQ-PATCH-010", "REQ-PERM-001", "REQ-PERM-018")
async def test_each_operation_is_one_minimal_workspace_edit(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        w = s.workdir
        big = "".join(f"line {i}\n" for i in range(300))
        (w / "big.py").write_text(big)
        (w / "tail.txt").write_text("a\nb\n")
        (w / "head.txt").write_text("x\n")
        (w / "cfg.ini").write_text("a=1\nb=2\nc=3\n")
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        cid = await unrestricted(s)
        calls = [
            patch("big.py", {"operation": "replace", "oldText": "line 150\n", "newText": "line 150 changed\n"}),
            patch("tail.txt", {"operation": "append_eof", "newText": "c\n"}),
            patch("head.txt", {"operation": "prepend_bof", "newText": "# head\n"}),
            patch("cfg.ini", {"operation": "overwrite", "newText": "a=1\nb=20\nc=3\n"}),
            patch("new/dir/made.txt", {"operation": "overwrite", "newText": "hello\nworld\n"}),
        ]
        requests = await turn(s, cid, *calls)

        assert len(s.edits) == 5, "one workspace/applyEdit per patch call"
        replace, append, prepend, overwrite, create = s.edits
        # replace: only the changed characters of line 150, never the whole file
        edit = single_text_edit(replace)
        assert edit.text_document.version is None  # not open in the editor: version null (Neovim rejects 0)
        assert all(e.range.start.line == 150 and e.range.end.line <= 151 for e in edit.edits), edit.edits
        assert sum(len(e.new_text) for e in edit.edits) <= len(" changed\n")
        # append / prepend: a pure insertion at the end / start
        (ins,) = single_text_edit(append).edits
        start, end = types.Position(2, 0), types.Position(2, 0)
        assert (ins.range.start, ins.range.end, ins.new_text) == (start, end, "c\n")
        (ins,) = single_text_edit(prepend).edits
        start = end = types.Position(0, 0)
        assert (ins.range.start, ins.range.end, ins.new_text) == (start, end, "# head\n")
        # overwrite of an existing file: still only the difference
        edits = single_text_edit(overwrite).edits
        assert all(e.range.start.line == 1 for e in edits) and sum(len(e.new_text) for e in edits) <= 2
        # overwrite of a missing file: CreateFile, then the insertion of its content
        changes = create.edit.document_changes or []
        assert isinstance(changes[0], types.CreateFile) and changes[0].uri == (w / "new/dir/made.txt").as_uri()
        assert isinstance(changes[1], types.TextDocumentEdit) and changes[1].text_document.version is None
        assert [e.new_text for e in DocEdit(changes[1]).edits] == ["hello\nworld\n"]
        for params in s.edits:  # one confirmation per edit: the edit needs none of its own (REQ-PERM-018)
            assert params.edit.change_annotations is None
            for change in params.edit.document_changes or []:
                if isinstance(change, types.TextDocumentEdit):
                    assert not any(isinstance(e, types.AnnotatedTextEdit) for e in change.edits)

        # what the editor ended up with is exactly what the patches asked for
        assert (w / "big.py").read_text() == big.replace("line 150\n", "line 150 changed\n")
        assert (w / "tail.txt").read_text() == "a\nb\nc\n"
        assert (w / "head.txt").read_text() == "# head\nx\n"
        assert (w / "cfg.ini").read_text() == "a=1\nb=20\nc=3\n"
        assert (w / "new/dir/made.txt").read_text() == "hello\nworld\n"

        results = tool_results(requests[1])
        assert [results[c.id]["is_error"] for c in calls] == [False] * 5
        assert results[calls[0].id]["content"].startswith("Patched big.py: 1 patch(es) applied")
        assert results[calls[4].id]["content"].startswith("Created new/dir/made.txt")
        diffs = {Path(e["path"]).name: e["diff"] for e in s.of("diff", cid)}
        assert "-line 150\n+line 150 changed" in diffs["big.py"]  # the user's unified diff (REQ-PATCH-007)


@pytest.mark.req("REQ-PATCH-001", "REQ-PATCH-002", "REQ-PATCH-005", "REQ-PATCH-011")
async def test_failed_patches_send_nothing_and_tell_the_model(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        original = "x = 1\nx = 1\ny = 2\n"
        (s.workdir / "dup.py").write_text(original)
        cid = await unrestricted(s)
        calls = [
            patch("dup.py", {"operation": "replace", "oldText": "zzz = 9", "newText": "q"}),
            patch("dup.py", {"operation": "replace", "oldText": "x = 1\n", "newText": "x = 2\n"}),
            patch("missing.py", {"operation": "replace", "oldText": "a", "newText": "b"}),
            patch(
                "dup.py",
                {"operation": "replace", "oldText": "y = 2", "newText": "y = 3"},
                {"operation": "replace", "oldText": "nope", "newText": "never"},
            ),
        ]
        requests = await turn(s, cid, *calls)
        assert s.edits == [], "a refused patch must not reach the editor"
        assert (s.workdir / "dup.py").read_text() == original
        assert not (s.workdir / "missing.py").exists()
        results = tool_results(requests[1])
        assert all(results[c.id]["is_error"] for c in calls)
        assert "old text not found" in results[calls[0].id]["content"]
        assert "more than once" in results[calls[1].id]["content"]
        assert "does not exist" in results[calls[2].id]["content"]
        atomic = results[calls[3].id]["content"]
        assert "patches[1]" in atomic and "Nothing was changed" in atomic  # all or nothing (REQ-PATCH-002)


@pytest.mark.req("REQ-PATCH-010", "REQ-PATCH-011", "REQ-PROTO-027")
async def test_patch_targets_the_unsaved_buffer_and_detects_a_stale_one(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        path = s.workdir / "mod.py"
        path.write_text("def f():\n    return 1\n")
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        buffers.open(path, "def f():\n    return 1\n", version=4)
        buffers.change(path, "def f():\n    return 1  # unsaved\n")  # version 5, not on disk
        cid = await unrestricted(s)

        first = patch("mod.py", {"operation": "replace", "oldText": "return 1  # unsaved", "newText": "return 2"})
        requests = await turn(s, cid, first)
        edit = single_text_edit(s.edits[0])
        assert edit.text_document.version == 5, "the edit names the buffer version it was computed against"
        assert buffers.text(path) == "def f():\n    return 2\n"
        assert path.read_text() == "def f():\n    return 1\n", "the server never writes the file itself"
        assert tool_results(requests[1])[first.id]["is_error"] is False

        # The user types while the edit is on its way: the editor refuses the outdated version.
        def user_types_first(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            buffers.change(path, "def f():\n    return 2  # typing\n")
            return buffers.apply(params)

        s.on_apply_edit = user_types_first
        second = patch("mod.py", {"operation": "replace", "oldText": "return 2", "newText": "return 3"})
        requests = await turn(s, cid, second)
        assert single_text_edit(s.edits[1]).text_document.version == 6
        result = tool_results(requests[1])[second.id]
        assert result["is_error"] is True
        assert "changed in the editor" in result["content"] and "Read the file again" in result["content"]
        assert buffers.text(path) == "def f():\n    return 2  # typing\n", "the user's text is not corrupted"


@pytest.mark.req("REQ-PATCH-011")
async def test_the_editors_answer_decides_what_the_model_is_told(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        answers = iter([
            types.ApplyWorkspaceEditResult(applied=False),
            types.ApplyWorkspaceEditResult(applied=False, failure_reason="the file is read-only on disk"),
        ])
        s.on_apply_edit = lambda params: next(answers)
        cid = await unrestricted(s)
        rejected = patch("a.txt", {"operation": "append_eof", "newText": "two\n"})
        failed = patch("a.txt", {"operation": "prepend_bof", "newText": "zero\n"})
        requests = await turn(s, cid, rejected, failed)
        assert len(s.edits) == 2
        results = tool_results(requests[1])
        assert results[rejected.id]["is_error"] and "rejected" in results[rejected.id]["content"]
        assert results[failed.id]["is_error"] and "the file is read-only on disk" in results[failed.id]["content"]
        assert not s.of("diff", cid), "no diff is reported for an edit that was not applied"


@pytest.mark.req("REQ-PATCH-011")
async def test_a_client_without_apply_edit_gets_an_error_and_nothing_is_written(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor, apply_edit=False) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await unrestricted(s)
        change = patch("a.txt", {"operation": "append_eof", "newText": "two\n"})
        create = patch("b.txt", {"operation": "overwrite", "newText": "new\n"})
        requests = await turn(s, cid, change, create)
        assert s.edits == []
        assert (s.workdir / "a.txt").read_text() == "one\n" and not (s.workdir / "b.txt").exists()
        results = tool_results(requests[1])
        for call in (change, create):
            assert results[call.id]["is_error"] is True
            assert "does not support workspace/applyEdit" in results[call.id]["content"]


@pytest.mark.req("REQ-PATCH-011")
async def test_a_client_that_cannot_create_files_gets_an_error_for_a_new_file(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    async with session(fake_anthropic, tmp_path, "visual_studio_code", no_create=True) as s:
        cid = await unrestricted(s)
        create = patch("b.txt", {"operation": "overwrite", "newText": "new\n"})
        requests = await turn(s, cid, create)
        assert s.edits == [] and not (s.workdir / "b.txt").exists()
        result = tool_results(requests[1])[create.id]
        assert result["is_error"] is True and "cannot create files" in result["content"]


@pytest.mark.req("REQ-PROTO-033", "REQ-PROTO-027")
async def test_read_file_returns_the_unsaved_buffer(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        path = s.workdir / "notes.md"
        path.write_text("on disk\n")
        s.client.text_document_did_open(
            types.DidOpenTextDocumentParams(types.TextDocumentItem(path.as_uri(), "markdown", 1, "opened text\n"))
        )
        s.client.text_document_did_change(  # an incremental change: "opened" -> "edited"
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(version=2, uri=path.as_uri()),
                [types.TextDocumentContentChangePartial(
                    range=types.Range(types.Position(0, 0), types.Position(0, 6)), text="edited")],
            )
        )
        cid = await s.new()  # Restricted: reading needs no write access
        read = ToolUseBlock("read_file", {"path": "notes.md"})
        requests = await turn(s, cid, read)
        content = tool_results(requests[1])[read.id]["content"]
        assert "edited text" in content and "on disk" not in content

        s.client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(path.as_uri())))
        read = ToolUseBlock("read_file", {"path": "notes.md"})
        requests = await turn(s, cid, read)
        assert "on disk" in tool_results(requests[1])[read.id]["content"]


@pytest.mark.req("REQ-PATCH-012", "REQ-BED-010", "REQ-SEC-002")
async def test_paths_outside_the_working_directory_or_into_git_are_refused(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "secret.txt").write_text("keep\n")
        (s.workdir / "link").symlink_to(outside)
        (s.workdir / ".git").mkdir()
        (s.workdir / ".git" / "config").write_text("[core]\n")
        buffers = Buffers(s)
        s.on_apply_edit = buffers.apply
        cid = await unrestricted(s)
        calls = [
            patch("../outside/x.txt", {"operation": "overwrite", "newText": "escape\n"}),
            patch(str(outside / "secret.txt"), {"operation": "append_eof", "newText": "escape\n"}),
            patch("link/secret.txt", {"operation": "append_eof", "newText": "escape\n"}),
            patch(".git/config", {"operation": "append_eof", "newText": "[alias]\n"}),
            patch(".git/hooks/pre-commit", {"operation": "overwrite", "newText": "#!/bin/sh\n"}),
        ]
        requests = await turn(s, cid, *calls)
        assert s.edits == [], "nothing may be sent to the editor for a confined path"
        assert (outside / "secret.txt").read_text() == "keep\n" and not (outside / "x.txt").exists()
        assert (s.workdir / ".git" / "config").read_text() == "[core]\n"
        assert not (s.workdir / ".git" / "hooks").exists()
        results = tool_results(requests[1])
        messages = [results[c.id]["content"] for c in calls]
        assert all(results[c.id]["is_error"] for c in calls)
        assert "'../outside/x.txt'" in messages[0] and "climbs out" in messages[0]
        assert "outside the working directory" in messages[1]
        assert "symlink" in messages[2]
        assert ".git" in messages[3] and ".git" in messages[4]


@pytest.mark.req("REQ-PATCH-009", "REQ-PERM-001", "REQ-LAYER-004")
async def test_restricted_patch_is_refused_exactly_and_nothing_reaches_the_editor(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await s.new(policy="auto")  # even policy auto never overrides the mode
        assert (await s.request("phoenix/getConversation", {"conversationId": cid}))["mode"] == "restricted"
        calls = [
            patch("a.txt", {"operation": "append_eof", "newText": "two\n"}),
            patch("new.txt", {"operation": "overwrite", "newText": "x\n"}),
        ]
        requests = await turn(s, cid, *calls)
        assert s.edits == [] and not s.of("approvalRequested", cid)
        assert (s.workdir / "a.txt").read_text() == "one\n" and not (s.workdir / "new.txt").exists()
        results = tool_results(requests[1])
        for call in calls:
            assert results[call.id] == {
                "type": "tool_result", "tool_use_id": call.id, "content": PATCH_DISABLED, "is_error": True
            }
        refused = await s.request("phoenix/getAuditLog", {"conversationId": cid})
        entries = [e for e in refused["entries"] if e["kind"] == "toolRefused"]
        assert len(entries) == 2 and entries[0]["details"]["tool"] == "patch"
        assert entries[0]["actor"] == "system" and entries[0]["mode"] == "restricted"


@pytest.mark.req("REQ-PATCH-009", "REQ-BED-016", "REQ-LAYER-002")
async def test_downgrade_during_a_running_tool_refuses_the_next_patch(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    async with session(fake_anthropic, tmp_path, editor) as s:
        (s.workdir / "a.txt").write_text("one\n")
        cid = await unrestricted(s)
        bash = ToolUseBlock("bash", {"command": "sleep 1; echo unsandboxed > ran.txt; echo finished"})
        late = patch("a.txt", {"operation": "append_eof", "newText": "two\n"})
        fake_anthropic.enqueue(Reply.tool_reply(bash), Reply.tool_reply(late), Reply.text_reply("ok"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
        await s.wait_event(lambda e: e["kind"] == "toolStart" and e["toolUseId"] == bash.id)
        before = len(fake_anthropic.requests)
        answer = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/plan"})
        assert answer["command"] == "plan" and answer["mode"] == "restricted"
        assert len(fake_anthropic.requests) == before, "/plan acts at once, without the model"
        await wait_idle(s, cid, mark)
        # the running call was not cut: it finished, unsandboxed, as it started; what it wrote is decided when it
        # ends, under the mode of then (issue 36): Restricted refuses it, as it refuses the next patch
        assert not (s.workdir / "ran.txt").exists()
        requests = fake_anthropic.requests
        bash_result = tool_results(requests[1])[bash.id]
        assert bash_result["is_error"] is False and "finished" in bash_result["content"]
        assert "not applied (the conversation is Restricted now)" in bash_result["content"]
        assert tool_results(requests[2])[late.id]["content"] == PATCH_DISABLED
        assert s.edits == [] and (s.workdir / "a.txt").read_text() == "one\n"


@pytest.mark.req("REQ-PATCH-010")
async def test_an_edit_in_a_large_file_is_proportional_to_the_change(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    async with session(fake_anthropic, tmp_path, "neovim") as s:
        text = "".join(f"value_{i} = {i}\n" for i in range(50_000))  # about 1 MB
        (s.workdir / "big.py").write_text(text)
        cid = await unrestricted(s)
        old, new = "value_25000 = 25000\n", "value_25000 = 0\n"
        call = patch("big.py", {"operation": "replace", "oldText": old, "newText": new})
        await turn(s, cid, call)
        edit = single_text_edit(s.edits[0])
        assert sum(len(e.new_text) for e in edit.edits) < 10
        assert apply_text_edits(text, edit.edits) == text.replace(old, new)
