"""Attacks with witnesses outside phoenix-lsp on the files read for the model or the server (issue 24, the
confined reader: specs/reading.md). Each attack worked before the confined reader; the witness is a secret in
a request the fake model provider received, or the server still answering after a FIFO was planted.

The end-to-end attacks drive the real server as a subprocess; the races are made deterministic by a hook at a
moment both the old and the new code pass through after their checks (an editor buffer lookup, the display of
a search hit), which swaps a directory for a symlink exactly between the check and the read.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.protocol.params import FileAttachment
from phoenix_lsp.sandbox.denylist import DenyCheck, deny_read_paths
from phoenix_lsp.server import attachments
from phoenix_lsp.tools import readonly
from tests.e2e.harness import Session, session
from tests.fake_anthropic import FakeAnthropic, Reply

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nSECRET-KEY-7f3a9c\n-----END OPENSSH PRIVATE KEY-----\n"
CANARY = "CANARY-TOKEN-51d0e2"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fake home directory with a private key in ~/.ssh (on the default deny-read list)."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    return home


def _everything_sent(fake: FakeAnthropic) -> str:
    return "\n".join(repr(r.body) for r in fake.requests)


async def _turn(s: Session, cid: str, text: str, **params: Any) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, **params})
    await s.wait_status(cid, "idle", since=seen)


# ------------------------------------------------------------------------------ project instructions


@pytest.mark.slow
@pytest.mark.req("REQ-READ-006", "REQ-READ-002")
async def test_an_agents_md_linked_to_a_private_key_never_reaches_the_model(
        fake_anthropic: FakeAnthropic, tmp_path: Path, home: Path) -> None:
    """A cloned repository ships AGENTS.md -> ~/.ssh/id_rsa; a Restricted conversation starts in it."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    (work / "CLAUDE.md").write_text("PROJECT: run make test")
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, env={"HOME": str(home)}) as s:
        cid = await s.new()
        await _turn(s, cid, "hello")
        assert "PROJECT: run make test" in fake_anthropic.requests[-1].system  # the rest is still used
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    assert "SECRET-KEY-7f3a9c" not in _everything_sent(fake_anthropic)
    problem = {Path(f["path"]).name: f.get("problem") for f in conv["instructions"]}["AGENTS.md"]
    assert problem is not None and "outside" in problem


@pytest.mark.slow
@pytest.mark.req("REQ-READ-006", "REQ-READ-004")
async def test_an_agents_md_linked_into_a_denied_folder_beneath_the_working_directory_is_refused(
        fake_anthropic: FakeAnthropic, tmp_path: Path, home: Path) -> None:
    """The link stays beneath the working directory, so only the deny-read list can refuse it. (The home folder
    itself can no longer be a working directory, REQ-URI-002: a denied folder of the project stands for it.)"""
    work = tmp_path / "work"
    (work / ".ssh").mkdir(parents=True)
    (work / ".ssh" / "id_rsa").write_text(KEY)
    (work / "AGENTS.md").symlink_to(".ssh/id_rsa")
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, env={"HOME": str(home),
                                                      "PHOENIX_LSP_DENY_READ": str(work / ".ssh")}) as s:
        cid = await s.new()
        await _turn(s, cid, "hello")
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
    assert "SECRET-KEY-7f3a9c" not in _everything_sent(fake_anthropic)
    problem = {Path(f["path"]).name: f.get("problem") for f in conv["instructions"]}["AGENTS.md"]
    assert problem is not None and "deny-read list" in problem


@pytest.mark.slow
@pytest.mark.req("REQ-READ-006", "REQ-READ-003")
@pytest.mark.parametrize("target", ["/proc/self/environ", "/proc/thread-self/environ"])
async def test_a_nested_claude_md_linked_to_the_servers_environment_never_reaches_the_model(
        fake_anthropic: FakeAnthropic, tmp_path: Path, target: str) -> None:
    """procfs says size 0, so a size check passes; the server's environment holds tokens."""
    pkg = tmp_path / "work" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "CLAUDE.md").symlink_to(target)
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    # a fresh interpreter (not a fork of the test's zygote): /proc/self/environ is what a process was started with
    async with session(fake_anthropic, tmp_path, env={"SOME_SERVICE_TOKEN": CANARY}, launcher=[]) as s:
        cid = await s.new(workingDirectory=str(pkg))
        await _turn(s, cid, "hello")
    assert CANARY not in _everything_sent(fake_anthropic)


# ------------------------------------------------------------------------------ attachments


@pytest.mark.slow
@pytest.mark.req("REQ-READ-004")
@pytest.mark.parametrize("target", ["/proc/self/maps", "/proc/thread-self/smaps"])
async def test_with_proc_as_working_directory_the_servers_memory_map_is_not_attached(
        fake_anthropic: FakeAnthropic, tmp_path: Path, target: str) -> None:
    """Working directory /proc: "inside the workspace" holds the process files ("/" itself is refused as a
    working directory, REQ-URI-002). The server's memory map (it defeats address randomisation) is text, and a
    sandboxed command cannot read it (Landlock scopes ptrace access)."""
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(workingDirectory="/proc")
        with pytest.raises(Exception, match="not attached"):
            await _turn(s, cid, "what is this?", attachments=[{"kind": "file", "uri": Path(target).as_uri()}])
        await _turn(s, cid, "still there?")  # the conversation goes on
    assert "[stack]" not in _everything_sent(fake_anthropic)


class _SwapOnLookup(Mapping[Path, str]):
    """The editor's open documents (none), whose lookup, which the server makes after its checks and before
    reading the disk, is the moment a racing process swaps a directory for a symlink."""

    def __init__(self, swap: Any) -> None:
        self.swap = swap

    def __getitem__(self, key: Path) -> str:
        raise KeyError(key)

    def __iter__(self) -> Iterator[Path]:
        self.swap()
        return iter(())

    def __len__(self) -> int:
        return 0

    def get(self, key: Path, default: Any = None) -> Any:
        self.swap()
        return default


def _swapper(directory: Path, target: Path) -> Any:
    def swap() -> None:
        if directory.is_symlink():
            return
        shutil.rmtree(directory)
        directory.symlink_to(target)

    return swap


@pytest.mark.req("REQ-READ-003")
@pytest.mark.parametrize("leads_to", ["ssh", "outside"])
def test_an_attachment_whose_directory_is_swapped_for_a_symlink_after_the_checks_is_not_read(
        tmp_path: Path, home: Path, leads_to: str) -> None:
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "id_rsa").write_text("harmless notes\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text(KEY)
    target = home / ".ssh" if leads_to == "ssh" else outside
    deny = DenyCheck(deny_read_paths(environ={"HOME": str(home)}, home=home))
    item = FileAttachment(kind="file", uri=(work / "notes" / "id_rsa").as_uri())
    try:
        text = attachments.file_text(0, item, working_directory=work, workspace=[], deny=deny,
                                     open_documents=_SwapOnLookup(_swapper(work / "notes", target)))
    except attachments.AttachmentError as refused:
        text = str(refused)
    assert (work / "notes").is_symlink(), "the race happened"
    assert "SECRET-KEY-7f3a9c" not in text


# ------------------------------------------------------------------------------ read_file / search_files


@pytest.mark.req("REQ-READ-002", "REQ-READ-003")
@pytest.mark.parametrize("leads_to", ["outside", "ssh"])
def test_read_file_through_a_directory_swapped_for_a_symlink_out_after_the_checks(
        tmp_path: Path, home: Path, leads_to: str) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "id_rsa").write_text("harmless\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text(KEY)
    target = outside if leads_to == "outside" else home / ".ssh"
    deny = DenyCheck(deny_read_paths(environ={"HOME": str(home)}, home=home))
    out = readonly.run_read_file({"path": "src/id_rsa"}, work, _SwapOnLookup(_swapper(work / "src", target)), deny)
    assert (work / "src").is_symlink(), "the race happened"
    assert "SECRET-KEY-7f3a9c" not in out.text and out.is_error


@pytest.mark.req("REQ-READ-002", "REQ-READ-003")
@pytest.mark.parametrize("leads_to", ["outside", "ssh"])
def test_search_files_through_a_directory_swapped_for_a_symlink_out_after_the_checks(
        tmp_path: Path, home: Path, leads_to: str, monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    (work / "src").mkdir(parents=True)
    (work / "src" / "id_rsa").write_text("harmless SECRET-KEY-decoy\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text(KEY)
    target = outside if leads_to == "outside" else home / ".ssh"
    swap = _swapper(work / "src", target)
    display = readonly._display

    def display_then_swap(root: Path, path: Path) -> str:  # called for each hit, after its checks
        shown = display(root, path)
        swap()
        return shown

    monkeypatch.setattr(readonly, "_display", display_then_swap)
    deny = DenyCheck(deny_read_paths(environ={"HOME": str(home)}, home=home))
    out = readonly.run_search_files({"pattern": "SECRET-KEY", "path": "."}, work, {}, deny)
    assert (work / "src").is_symlink(), "the race happened"
    assert "SECRET-KEY-7f3a9c" not in out.text


@pytest.mark.req("REQ-READ-004")
@pytest.mark.parametrize("path", ["/proc/self/maps", "/proc/thread-self/smaps"])
def test_read_file_with_root_as_working_directory_does_not_read_the_servers_memory_map(
        home: Path, path: str) -> None:
    deny = DenyCheck(deny_read_paths(environ={"HOME": str(home)}, home=home))  # Restricted
    out = readonly.run_read_file({"path": path}, Path("/"), {}, deny)
    assert "[stack]" not in out.text and out.is_error


# ------------------------------------------------------------------------------ FIFOs


@pytest.mark.slow
@pytest.mark.req("REQ-READ-003", "REQ-READ-005")
@pytest.mark.parametrize("first", ["phoenix/getRoute", "phoenix/sendMessage"])
async def test_a_fifo_planted_as_ui_settings_json_does_not_hang_the_server(
        fake_anthropic: FakeAnthropic, tmp_path: Path, first: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    os.mkfifo(data / "ui_settings.json")
    fake_anthropic.enqueue(Reply.text_reply("ok"))
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        cid = await s.new()
        try:
            if first == "phoenix/getRoute":
                answer = await asyncio.wait_for(s.request(first, {}), 60)
                assert answer["route"] == "ask"
            else:
                await asyncio.wait_for(_turn(s, cid, "hello"), 60)
            # and the server still answers everything else
            listed = await asyncio.wait_for(s.request("phoenix/listConversations", {}), 60)
        except TimeoutError:
            os.close(os.open(data / "ui_settings.json", os.O_WRONLY | os.O_NONBLOCK))  # unblock a hung reader
            pytest.fail(f"the server stopped answering after {first} met a FIFO as ui_settings.json")
    assert [c["conversationId"] for c in listed["conversations"]] == [cid]


@pytest.mark.slow
@pytest.mark.req("REQ-READ-003", "REQ-MODEL-011")
async def test_a_fifo_as_the_providers_file_does_not_hang_the_server(fake_anthropic: FakeAnthropic,
                                                                    tmp_path: Path) -> None:
    """The providers file (issue 27) is a file the server reads: a FIFO named there (no writer, ever) is
    refused as not a regular file, and Anthropic keeps answering."""
    fifo = tmp_path / "providers.json"
    os.mkfifo(fifo)
    fake_anthropic.enqueue(Reply.text_reply("still here"))
    async with asyncio.timeout(90), session(fake_anthropic, tmp_path, env={"PHOENIX_PROVIDERS": str(fifo)}) as s:
        # bounded: before the fix the server hung on the FIFO, and so did this test
        listed = await s.request("phoenix/listModels", {})
        assert listed["models"], listed
        cid = await s.new()
        await _turn(s, cid, "hello")
    assert len(fake_anthropic.requests) == 1  # the turn reached the model
