"""The server's own read tools keep the deny-read list in Restricted mode (REQ-BASH-026): a home directory
as the working directory, with the user's keys, cloud credentials and phoenix-lsp's data in it, is
readable by read_file / list_directory / search_files in Unrestricted mode and not in Restricted mode,
whatever way the model asks (direct path, symlink, editor text, listing, search from above)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.core.values import Mode, ToolUse
from phoenix_lsp.sandbox import denylist
from phoenix_lsp.sandbox.denylist import DenyCheck
from phoenix_lsp.tools import registry
from phoenix_lsp.tools.readonly import run_list_directory, run_read_file, run_search_files
from phoenix_lsp.tools.registry import ToolContext

KEY = "-----BEGIN OPENSSH PRIVATE KEY----- hunter2-key"
TOKEN = "aws_secret_access_key = hunter2-aws"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home directory used as the working directory: code next to credentials and the server's data."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text(KEY + "\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(TOKEN + "\n")
    (home / ".netrc").write_text("machine example.com password hunter2-netrc\n")
    (home / "data").mkdir()
    (home / "data" / "phoenix.db").write_text("hunter2-db\n")
    (home / "project").mkdir()
    (home / "project" / "main.py").write_text("print('hunter2 is not a secret here')\n")
    (home / "project" / "key-link").symlink_to(home / ".ssh" / "id_ed25519")
    return home


@pytest.fixture
def deny(home: Path) -> DenyCheck:
    return DenyCheck(denylist.deny_read_paths(data_dirs=[home / "data"], environ={}, home=home))


def _context(home: Path, mode: Mode, deny_read: tuple[Path, ...] | None) -> ToolContext:
    return ToolContext(working_directory=home, mode=mode, conversation_id="c", deny_read=deny_read)


@pytest.mark.req("REQ-BASH-026")
@pytest.mark.parametrize("path", [".ssh/id_ed25519", ".aws/credentials", ".netrc", "data/phoenix.db",
                                  "project/key-link", "project/../.ssh/id_ed25519"])
def test_read_file_refuses_denied_paths_with_what_why_and_what_next(home: Path, deny: DenyCheck, path: str) -> None:
    out = run_read_file({"path": path}, home, {}, deny)
    assert out.is_error
    assert "hunter2" not in out.text
    assert "deny-read list" in out.text  # what
    assert "sent to the model provider" in out.text  # why
    assert "ask the user" in out.text  # what next
    assert not run_read_file({"path": path}, home, {}).is_error  # without the list (Unrestricted) it reads


@pytest.mark.req("REQ-BASH-026")
def test_read_file_refuses_the_editors_unsaved_text_of_a_denied_file(home: Path, deny: DenyCheck) -> None:
    docs = {home / ".aws" / "credentials": TOKEN + " (unsaved)\n"}
    out = run_read_file({"path": ".aws/credentials"}, home, docs, deny)
    assert out.is_error and "hunter2" not in out.text


@pytest.mark.req("REQ-BASH-026")
def test_list_directory_refuses_denied_directories_and_marks_denied_entries(home: Path, deny: DenyCheck) -> None:
    out = run_list_directory({"path": ".ssh"}, home, {}, deny)
    assert out.is_error and "id_ed25519" not in out.text and "deny-read list" in out.text
    listing = run_list_directory({"path": "."}, home, {}, deny)
    assert not listing.is_error
    lines = {line.split()[0]: line for line in listing.text.splitlines()[1:]}
    assert "deny-read list" in lines[".netrc"] and "bytes" not in lines[".netrc"]
    assert "deny-read list" in lines[".ssh"]
    assert lines["project/"] == "project/"
    link = run_list_directory({"path": "project"}, home, {}, deny)
    assert "key-link  (on the deny-read list" in link.text and ".ssh" not in link.text  # target not shown


@pytest.mark.req("REQ-BASH-026")
def test_search_files_skips_denied_entries_and_refuses_a_denied_start(home: Path, deny: DenyCheck) -> None:
    out = run_search_files({"pattern": "hunter2"}, home, {}, deny)
    assert not out.is_error
    assert "project/main.py:1:" in out.text
    assert "-key" not in out.text and "-aws" not in out.text and "-netrc" not in out.text and "-db" not in out.text
    assert "path(s) on the deny-read list skipped" in out.text
    refused = run_search_files({"pattern": "hunter2", "path": ".aws"}, home, {}, deny)
    assert refused.is_error and "deny-read list" in refused.text and "-aws" not in refused.text
    # in Unrestricted mode the same search finds them
    assert "hunter2-aws" in run_search_files({"pattern": "hunter2"}, home, {}).text


@pytest.mark.req("REQ-BASH-026")
async def test_the_registry_applies_the_list_in_restricted_mode_only(home: Path) -> None:
    denied = denylist.deny_read_paths(data_dirs=[home / "data"], environ={}, home=home)
    call = ToolUse("t1", "read_file", {"path": ".ssh/id_ed25519"})
    restricted = await registry.run(call, _context(home, Mode.RESTRICTED, denied))
    assert restricted.is_error and "hunter2" not in restricted.output
    for name, tool_input in (("list_directory", {"path": ".aws"}), ("search_files", {"pattern": "hunter2"})):
        done = await registry.run(ToolUse("t", name, tool_input), _context(home, Mode.RESTRICTED, denied))
        assert "hunter2-aws" not in done.output and "credentials  (" not in done.output  # no content, no listing
    unrestricted = await registry.run(call, _context(home, Mode.UNRESTRICTED, denied))
    assert not unrestricted.is_error and KEY in unrestricted.output


@pytest.mark.req("REQ-BASH-026")
async def test_without_a_setting_the_registry_uses_the_defaults_for_this_home(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    monkeypatch.setenv(denylist.DENY_READ_ENV, str(home / "project" / "main.py"))
    done = await registry.run(ToolUse("t1", "read_file", {"path": ".ssh/id_ed25519"}),
                              _context(home, Mode.RESTRICTED, None))
    assert done.is_error and "hunter2" not in done.output
    extra = await registry.run(ToolUse("t2", "read_file", {"path": "project/main.py"}),
                               _context(home, Mode.RESTRICTED, None))
    assert extra.is_error and "deny-read list" in extra.output  # PHOENIX_LSP_DENY_READ extends it


def test_read_file_refuses_a_fifo_instead_of_blocking(home: Path) -> None:
    os.mkfifo(home / "project" / "pipe")
    out = run_read_file({"path": "project/pipe"}, home, {})
    assert out.is_error and "not a regular file" in out.text
