"""Attacks on the way a URI or a path becomes a file (issue 34, cases 1 and 2; REQ-URI-001, REQ-URI-002), through
every door that takes one: ACP's ``session/new`` and embedded resources (the ACP SDK's client side), LSP's
``phoenix/newConversation`` and ``phoenix/sendMessage`` attachments, and the editor's sight (a real LSP client).
The witness is outside the server: what the fake model provider received.

Each door used to convert URIs with code of its own: a folder of ``//`` passed the "not the whole disk" check,
and an embedded ``file://localhost/…``, ``FILE://…``, ``File://…``, ``file://127.0.0.1/…``, ``file:////…``, a bare
path or ``~/…`` missed the deny-read list, so a private key the client embedded went to the model."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import acp
import pytest

from tests.acp.harness import TIMEOUT, agent
from tests.e2e.harness import Session, session
from tests.e2e.test_sight import ORIGINAL, SightEditor, result_text, turn
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the server or the agent as a subprocess

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nURI-SECRET-KEY-2b7d91\n-----END OPENSSH PRIVATE KEY-----\n"
MARKER = "URI-SECRET-KEY-2b7d91"
OUTSIDE = "OUTSIDE-THE-PROJECT-c41e0a"


def sent(fake: FakeAnthropic) -> str:
    return json.dumps([r.body for r in fake.requests])


def fake_home(tmp_path: Path) -> Path:
    """A home folder (``$HOME`` of the server) holding a private key (on the default deny-read list), and a note
    that is on no list but is not the project's."""
    home = tmp_path / "up" / "home"
    (home / ".ssh" / "sub").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(KEY)
    (home / "notes.txt").write_text(f"{OUTSIDE} in the home folder\n")
    (tmp_path / "up" / "beside-home.txt").write_text(f"{OUTSIDE} beside the home folder\n")
    (tmp_path / "outside.txt").write_text(f"{OUTSIDE} outside the project\n")
    return home


def folders(tmp_path: Path, home: Path) -> dict[str, tuple[str, Path]]:
    """Session folders that would confine nothing, each with a file the session would then reach."""
    return {
        "//": ("//", tmp_path / "outside.txt"),
        "//tmp/../": ("//tmp/../", tmp_path / "outside.txt"),
        "/.": ("/.", tmp_path / "outside.txt"),
        "/": ("/", tmp_path / "outside.txt"),
        "the home folder": (str(home), home / "notes.txt"),
        "the home folder, spelt //…/./": ("/" + str(home) + "/./", home / "notes.txt"),
        "a parent of the home folder": (str(home.parent), home.parent / "beside-home.txt"),
    }


def embedded(home: Path, work: Path) -> dict[str, str]:
    """URIs and paths an ACP client may give an embedded resource, each naming the private key."""
    key = home / ".ssh" / "id_rsa"
    up = "/".join([".."] * len(work.parts[1:]))  # from the session folder up to /
    return {
        "file://localhost/~/": "file://localhost/~/.ssh/id_rsa",
        "file://localhost/": f"file://localhost{key}",
        "FILE://": f"FILE://{key}",
        "File://": f"File://{key}",
        "file://127.0.0.1/": f"file://127.0.0.1{key}",
        "file:////": f"file:///{key}",
        "bare absolute path": str(key),
        "bare //path": f"/{key}",
        "~/": "~/.ssh/id_rsa",
        "percent-encoded ..": f"{work.as_uri()}/{'/'.join(['%2e%2e'] * len(work.parts[1:]))}{key}",
        "relative ..": f"{up}{key}",
        "a link, then ..": f"{work.as_uri()}/keys/../id_rsa",  # keys -> ~/.ssh/sub: the kernel's ".." is ~/.ssh
        "a bare link, then ..": "keys/../id_rsa",
    }


# ------------------------------------------------------------------------------ ACP


@pytest.mark.req("REQ-URI-002", "REQ-ACP-016")
async def test_acp_a_session_over_the_whole_disk_or_the_home_folder_is_refused(fake_anthropic: FakeAnthropic,
                                                                                tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    through: list[str] = []
    async with agent(fake_anthropic, tmp_path, env={"HOME": str(home)}) as a:
        for name, (cwd, target) in folders(tmp_path, home).items():
            try:
                session_id = (await asyncio.wait_for(a.conn.new_session(cwd=cwd, mcp_servers=[]),
                                                     TIMEOUT)).session_id
            except acp.RequestError as refused:
                assert refused.code == -32602, (name, refused)
                assert "give the project folder" in str(refused.data), (name, refused.data)
                continue
            through.append(name)  # the old code: the session reads a file outside any project
            fake_anthropic.enqueue(Reply.tool_reply(ToolUseBlock("read_file", {"path": str(target)})),
                                   Reply.text_reply("read"))
            await a.prompt(session_id, "read it")
        good = (await a.new()).session_id
        for cwd in ("//", str(home)):  # session/load names a folder too: held to the same rule
            try:
                await asyncio.wait_for(a.conn.load_session(cwd=cwd, session_id=good, mcp_servers=[]), TIMEOUT)
                through.append(f"session/load in {cwd}")
            except acp.RequestError as refused:
                assert refused.code == -32602 and "give the project folder" in str(refused.data), refused.data
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        assert (await a.prompt(good, "hello")).stop_reason == "end_turn"
    assert OUTSIDE not in sent(fake_anthropic), through
    assert through == []


@pytest.mark.req("REQ-URI-001", "REQ-ACP-014", "REQ-ACP-016")
async def test_acp_an_embedded_private_key_never_reaches_the_model_however_its_uri_is_spelt(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    through: list[str] = []
    async with agent(fake_anthropic, tmp_path, env={"HOME": str(home)}) as a:
        (a.workdir / "keys").symlink_to(home / ".ssh" / "sub")
        sid = (await a.new()).session_id
        for name, uri in embedded(home, a.workdir).items():
            blocks = [acp.text_block("what is this?"), acp.resource_block(acp.embedded_text_resource(uri, KEY))]
            fake_anthropic.enqueue(Reply.text_reply("a key"))
            try:
                await asyncio.wait_for(a.conn.prompt(session_id=sid, prompt=blocks), TIMEOUT)
            except acp.RequestError as refused:
                assert refused.code == -32602, (name, refused)
                assert "nothing was sent" in str(refused.data).lower(), (name, refused.data)
                continue
            through.append(name)
        fake_anthropic.enqueue(Reply.text_reply("fine"))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"  # and it keeps serving
    assert fake_anthropic.requests and MARKER not in sent(fake_anthropic), through
    assert through == []


@pytest.mark.req("REQ-URI-001", "REQ-ACP-014")
async def test_acp_an_embedded_project_file_is_still_taken_in_any_spelling(fake_anthropic: FakeAnthropic,
                                                                           tmp_path: Path) -> None:
    """The rule refuses what names no local file or a denied one, not the project's files."""
    async with agent(fake_anthropic, tmp_path) as a:
        (a.workdir / "a.py").write_text("x = 1\n")
        sid = (await a.new()).session_id
        uris = [f"FILE://{a.workdir}/a.py", f"file://localhost{a.workdir}/a.py", "a.py", "untitled:Untitled-1"]
        for i, uri in enumerate(uris):
            fake_anthropic.enqueue(Reply.text_reply("seen"))
            blocks = [acp.text_block("look"), acp.resource_block(acp.embedded_text_resource(uri, f"TEXT-{i}"))]
            answer = await asyncio.wait_for(a.conn.prompt(session_id=sid, prompt=blocks), TIMEOUT)
            assert answer.stop_reason == "end_turn", uri
    for i in range(len(uris)):
        assert f"TEXT-{i}" in sent(fake_anthropic)


# ------------------------------------------------------------------------------ LSP


async def _turn(s: Session, cid: str, text: str, **params: Any) -> None:
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, **params})
    await s.wait_status(cid, "idle", since=seen)


@pytest.mark.req("REQ-URI-002")
async def test_lsp_a_conversation_over_the_whole_disk_or_the_home_folder_is_refused(fake_anthropic: FakeAnthropic,
                                                                                     tmp_path: Path) -> None:
    home = fake_home(tmp_path)
    through: list[str] = []
    async with session(fake_anthropic, tmp_path, env={"HOME": str(home)}) as s:
        for name, (cwd, target) in folders(tmp_path, home).items():
            try:
                cid = await s.new(workingDirectory=cwd)
            except Exception as refused:
                assert "give the project folder" in str(refused).lower(), (name, refused)
                continue
            through.append(name)  # the old code: a file outside any project is attached
            fake_anthropic.enqueue(Reply.text_reply("read"))
            await _turn(s, cid, "what is this?", attachments=[{"kind": "file", "uri": target.as_uri()}])
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        await _turn(s, await s.new(), "hello")
    assert OUTSIDE not in sent(fake_anthropic), through
    assert through == []


@pytest.mark.req("REQ-URI-002", "REQ-ATTACH-001")
@pytest.mark.parametrize("root", ["file:///", "file:////", "FILE:///tmp/..", "home", "above home"])
async def test_lsp_a_workspace_root_over_the_whole_disk_or_the_home_folder_holds_no_file(
        fake_anthropic: FakeAnthropic, tmp_path: Path, root: str) -> None:
    """The editor announces such a root: a conversation is not started in it when no folder is given, and a file
    is not attached for lying in it (the old code took / as a workspace folder, so any file was "inside")."""
    home = fake_home(tmp_path)
    root_uri = {"home": home.as_uri(), "above home": home.parent.as_uri()}.get(root, root)
    target = home / "notes.txt" if root == "home" else tmp_path / "outside.txt"
    async with session(fake_anthropic, tmp_path, env={"HOME": str(home)}, root_uri=root_uri) as s:
        error = await s.error("phoenix/newConversation", {})
        assert "give the project folder" in error.message.lower(), error.message
        cid = await s.new()
        with pytest.raises(Exception, match="not attached"):
            await _turn(s, cid, "what is this?", attachments=[{"kind": "file", "uri": target.as_uri()}])
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        await _turn(s, cid, "hello")
    assert fake_anthropic.requests and OUTSIDE not in sent(fake_anthropic)


@pytest.mark.req("REQ-URI-001", "REQ-ATTACH-001")
async def test_lsp_an_attached_private_key_never_reaches_the_model_however_its_uri_is_spelt(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """The project holds a link to the key, so only the deny-read list, on the canonical path, can refuse it."""
    home = fake_home(tmp_path)
    async with session(fake_anthropic, tmp_path, env={"HOME": str(home)}) as s:
        (s.workdir / "keys").symlink_to(home / ".ssh")
        cid = await s.new()
        link = s.workdir / "keys" / "id_rsa"
        for uri in (f"FILE://{link}", f"File://{link}", f"file://localhost{link}", f"file://127.0.0.1{link}",
                    f"file:///{link}", f"{s.workdir.as_uri()}/%2e%2e/{s.workdir.name}/keys/id_rsa",
                    "file://localhost/~/.ssh/id_rsa", str(link), "~/.ssh/id_rsa", "keys/id_rsa"):
            with pytest.raises(Exception, match="not attached"):
                await _turn(s, cid, "what is this?", attachments=[{"kind": "file", "uri": uri}])
        fake_anthropic.enqueue(Reply.text_reply("still serving"))
        await _turn(s, cid, "hello")
    assert fake_anthropic.requests and MARKER not in sent(fake_anthropic)


@pytest.mark.req("REQ-URI-001", "REQ-SIGHT-002")
async def test_sight_problems_another_host_claims_are_not_taken_for_the_projects(fake_anthropic: FakeAnthropic,
                                                                                 tmp_path: Path) -> None:
    """``file://host/<project>/app.py`` is another machine's file: its problems are not this project's (the old
    code dropped the host and showed them as the local file's)."""
    secret = "SIGHT-HOST-SECRET-93ad1f"
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        for host in ("127.0.0.1", "evil-host", "user@localhost"):
            editor.diagnostics[f"file://{host}{app}"] = [{
                "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}},
                "severity": 1, "message": f"{secret} from {host}", "source": "hostile"}]
        editor.diagnostics[f"FILE://localhost{app}"] = [{
            "range": {"start": {"line": 2, "character": 0}, "end": {"line": 2, "character": 1}},
            "severity": 1, "message": "LOCAL-PROBLEM-5e2c", "source": "local"}]
        cid = await s.new()
        told = result_text((await turn(s, cid, ToolUseBlock("editor_problems", {})))[1])
    assert "LOCAL-PROBLEM-5e2c" in told, told  # the local file's problems, in any spelling, are shown
    assert secret not in sent(fake_anthropic)
