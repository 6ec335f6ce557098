"""Attacks on scoped Always Allow (issue 34, case 3): a rule derived from a harmless call must not grant an
option that writes a file or runs a program, which the user never saw approved (REQ-PERM-026).

Real server, pytest-lsp client, the fake Anthropic server scripting the model. The user answers Always Allow
(the narrowest scope, as every client's default) to a read-only call; the model then calls the same command
with a writing option. The witnesses are outside the server: the approval the client received (or not) and
the file the writing option would have written, on disk.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import TIMEOUT, agent
from tests.e2e.harness import Session, last_seq, session, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

# (the approved call, the scope it offers first, the call that writes FILE, the scope that call offers first)
CASES = [
    pytest.param("git log --oneline -1", "git log *", "git log -1 --output=FILE",
                 "git log * (with git log --output)", id="git-log-output"),
    pytest.param("sort -r in.txt", "sort *", "sort -o FILE in.txt", "sort * (with sort --output)", id="sort-o"),
    pytest.param("sort -r in.txt", "sort *", "sort -ro FILE in.txt", "sort * (with sort --output)",
                 id="sort-combined-flags"),
    pytest.param("find . -name in.txt", "find *", "find . -name in.txt -exec touch FILE ';'",
                 "find * (with find -exec)", id="find-exec"),
    pytest.param("sed -n 1p in.txt", "sed *", "sed -n '1w FILE' in.txt", "sed * (with sed script w)",
                 id="sed-w"),
    pytest.param("sed -n 1p in.txt", "sed *", "sed -i.bak s/a/b/ in.txt", "sed * (with sed --in-place)",
                 id="sed-i"),
]


def _repository(workdir: Path) -> None:
    """A git repository with one commit, so `git log` has something to print."""
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_GLOBAL": os.devnull}
    for args in (["init", "-q"], ["add", "in.txt"], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", *args], cwd=workdir, env=env, check=True, capture_output=True)


async def _call(s: Session, cid: str, command: str, call_id: str) -> dict[str, Any]:
    """The model calls bash with ``command``: the first of its approval or the conversation coming to rest."""
    s.fake.enqueue(Reply.tool_reply(ToolUseBlock("bash", {"command": command}, id=call_id)), Reply.text_reply("ok"))
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
    return await s.wait_event(
        lambda e: e["conversationId"] == cid and e["seq"] > mark
        and (e["kind"] == "approvalRequested" or (e["kind"] == "status" and e["status"] == "idle"))
    )


@pytest.mark.req("REQ-PERM-026", "REQ-PERM-019")
@pytest.mark.parametrize(("approved", "scope", "attack", "attack_scope"), CASES)
async def test_always_allow_of_a_read_never_covers_a_writing_option_of_the_same_command(
    fake_anthropic: FakeAnthropic, tmp_path: Path, approved: str, scope: str, attack: str, attack_scope: str
) -> None:
    witness = tmp_path / "written-unasked"
    async with session(fake_anthropic, tmp_path) as s:
        (s.workdir / "in.txt").write_text("a\nb\n")
        _repository(s.workdir)
        cid = await unrestricted(s, policy="interactive")

        asked = await _call(s, cid, approved, "toolu_read")
        assert asked["kind"] == "approvalRequested" and asked["scopes"][0]["rule"] == scope
        mark = last_seq(s, cid)
        await s.request("phoenix/respondToApproval",
                        {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "alwaysAllow"})
        await wait_idle(s, cid, mark)
        assert [r["rule"] for r in (await s.request("phoenix/listAlwaysAllowed", {"conversationId": cid}))["tools"]] \
            == [scope]

        asked = await _call(s, cid, approved, "toolu_again")  # the rule covers the call it was derived from
        assert asked["kind"] == "status", "the approved call itself asked again"

        asked = await _call(s, cid, attack.replace("FILE", str(witness)), "toolu_write")
        assert asked["kind"] == "approvalRequested", f"{attack!r} ran under the rule {scope!r} without asking"
        assert asked["scopes"][0]["rule"] == attack_scope, "the scope offered hides the writing option"
        mark = last_seq(s, cid)
        await s.request("phoenix/respondToApproval",
                        {"conversationId": cid, "toolUseId": asked["toolUseId"], "decision": "deny"})
        await wait_idle(s, cid, mark)
        assert (s.workdir / "in.txt").read_text() == "a\nb\n"
        assert not list(s.workdir.glob("in.txt.bak"))
    assert not witness.exists()


@pytest.mark.req("REQ-PERM-026", "REQ-ACP-007")
async def test_over_acp_allow_always_of_a_read_never_covers_a_writing_option(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    """The same rule through the ACP adapter: its allow_always adds the narrowest scope, as every client's does."""
    witness = tmp_path / "written-unasked"
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("bash", {"command": "sort -r in.txt"}, id="toolu_read")),
        Reply.tool_reply(ToolUseBlock("bash", {"command": f"sort -o {witness} in.txt"}, id="toolu_write")),
        Reply.text_reply("done"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        (a.workdir / "in.txt").write_text("a\nb\n")
        session_id = (await a.new()).session_id
        await asyncio.wait_for(a.conn.set_session_mode(session_id=session_id, mode_id="unrestricted"), TIMEOUT)
        running = a.prompt(session_id, "sort it")
        first = await a.editor.wait_until(lambda: a.editor.asked and a.editor.asked[0])
        always = next(o for o in first.options if o.kind == "allow_always")
        assert "sort *" in always.name
        first.answer.set_result(always.option_id)
        asked_again = asyncio.ensure_future(a.editor.wait_until(lambda: len(a.editor.asked) > 1))
        await asyncio.wait({asked_again, running}, return_when=asyncio.FIRST_COMPLETED)  # asked, or the turn ended
        asked_again.cancel()
        assert len(a.editor.asked) == 2, "sort -o ran under the rule `sort *` without asking"
        second = a.editor.asked[1]
        assert any("sort --output" in o.name for o in second.options if o.kind == "allow_always")
        second.answer.set_result(a.editor.option(second, "reject_once"))
        assert (await running).stop_reason == "end_turn"
    assert not witness.exists()
