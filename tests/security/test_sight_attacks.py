"""Attacks on the editor's sight (issue 29), a surface that reads files for the model: the editor (or a hostile
language server behind it) chooses the locations and problems the server is told about. Witnesses outside
phoenix-lsp: the requests the fake model API received, and the server still answering.

What the editor answers is a claim, never a licence to read: a location's line is shown only for a file beneath
the conversation's working directory, read by the confined reader (REQ-READ-001) with the deny-read list in
Restricted; problems of files outside the working directory are not shown at all (REQ-SIGHT-002)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.e2e.harness import session
from tests.e2e.test_sight import ORIGINAL, SightEditor, result_text, turn
from tests.fake_anthropic import FakeAnthropic, ToolUseBlock

pytestmark = pytest.mark.slow

SECRET_LINE = "SIGHT-SECRET-4e81b7 = 'a private key line'"


def everything_sent(fake: FakeAnthropic) -> str:
    return "\n".join(repr(r.body) for r in fake.requests)


def at(path: Path, line: int = 0) -> dict[str, object]:
    return {"uri": path.as_uri(), "range": {"start": {"line": line, "character": 0},
                                            "end": {"line": line, "character": 5}}}


FIND = ToolUseBlock("find_definition", {"path": "app.py", "line": 7, "symbol": "area"})


@pytest.mark.req("REQ-SIGHT-002", "REQ-READ-001")
async def test_a_location_outside_the_working_directory_is_named_but_its_line_never_read(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere" / "secret.py"
    secret.parent.mkdir()
    secret.write_text(SECRET_LINE + "\n")
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL + "\nprint(area(2))\n")
        (s.workdir / "linked.py").symlink_to(secret)  # inside by its name, outside in truth
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.locations = [at(secret), at(s.workdir / "linked.py")]
        cid = await s.new()
        told = result_text((await turn(s, cid, FIND))[1])
    assert "secret.py" in told and "linked.py" in told, told  # the locations are named...
    assert "SIGHT-SECRET-4e81b7" not in everything_sent(fake_anthropic)  # ...their lines never sent


@pytest.mark.req("REQ-SIGHT-002", "REQ-READ-004")
async def test_a_location_in_a_denied_folder_of_the_working_directory_is_not_shown_in_restricted(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """(The home folder can no longer be a working directory, REQ-URI-002: a denied folder of the project
    stands for its ~/.ssh.)"""
    work = tmp_path / "work"
    (work / ".ssh").mkdir(parents=True)
    (work / ".ssh" / "id_rsa").write_text(SECRET_LINE + "\n")
    async with session(fake_anthropic, tmp_path, sight=True,
                       env={"PHOENIX_LSP_DENY_READ": str(work / ".ssh")}) as s:
        app = work / "app.py"
        app.write_text(ORIGINAL + "\nprint(area(2))\n")
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.locations = [at(work / ".ssh" / "id_rsa")]
        cid = await s.new()  # Restricted: the deny-read list applies
        await turn(s, cid, FIND)
    assert "SIGHT-SECRET-4e81b7" not in everything_sent(fake_anthropic)


@pytest.mark.req("REQ-SIGHT-002", "REQ-SIGHT-003", "REQ-READ-003")
async def test_a_location_on_a_fifo_neither_hangs_the_turn_nor_the_server(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL + "\nprint(area(2))\n")
        os.mkfifo(s.workdir / "pipe.py")  # nobody ever writes to it: a blocking open would wait for ever
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.locations = [at(s.workdir / "pipe.py")]
        cid = await s.new()
        told = result_text((await turn(s, cid, FIND))[1])  # the turn ends: the FIFO was not opened to read
        assert "pipe.py" in told, told
        listed = await s.request("phoenix/listConversations", {})  # and the server still answers
        assert any(c["conversationId"] == cid for c in listed["conversations"])


@pytest.mark.req("REQ-SIGHT-002")
async def test_problems_of_files_outside_the_working_directory_are_not_shown(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "other.py"
    outside.parent.mkdir()
    outside.write_text("x = 1\n")
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.diagnostics[outside.as_uri()] = [{
            "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
            "severity": 1, "message": SECRET_LINE, "source": "hostile"}]
        cid = await s.new()
        told = result_text((await turn(s, cid, ToolUseBlock("editor_problems", {})))[1])
    assert "F401" in told, told  # the workspace's own problems are shown
    assert "SIGHT-SECRET-4e81b7" not in everything_sent(fake_anthropic)
