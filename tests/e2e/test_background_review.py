"""End-to-end: a background command's changes are held in a layer of its own and reviewed once it has ended
(issue 36, REQ-BASH-043), through the very review a foreground command gets.

A real LSP client drives the real server; the model is the fake Anthropic server scripted to call bash; the
command runs for real in a real kernel overlay. The witnesses are the disk, the question the client was asked
and what the fake model server was told.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Buffers, Session, session, tool_results, wait_idle
from tests.e2e.test_approval import answer, approval_after, start
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import tree_digest
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

BACKGROUND = "echo bg > bg.txt && sed -i s/one/ONE/ a.txt"


def launchers(server_pid: int) -> list[int]:
    """The server's background launchers still running (a zombie has exited)."""
    found = []
    for task in Path(f"/proc/{server_pid}/task").iterdir():
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                state = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0]
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if state != "Z" and b"-B" in cmdline:
                found.append(int(child))
    return found


async def call(s: Session, cid: str, tool_input: dict[str, str], decision: str | None) -> str:
    """One turn whose model makes one bash call (the bash question allowed); then the review, when one is asked,
    answered with `decision`. Returns what the model was told."""
    block = ToolUseBlock("bash", tool_input)
    mark = await start(s, cid, Reply.tool_reply(block), Reply.text_reply("done"))
    first = await approval_after(s, cid, mark)
    assert first["toolName"] == "bash"
    await answer(s, cid, first["toolUseId"], "allow")
    if decision is not None:
        asked = await approval_after(s, cid, first["seq"])
        assert asked["toolName"] == "patch" and asked["arguments"]["command"] == BACKGROUND
        assert "+bg\n" in asked["diff"] and "-one\n+ONE\n" in asked["diff"]
        await answer(s, cid, asked["toolUseId"], decision)
    await wait_idle(s, cid, mark)
    return str(tool_results(s.fake.requests[-1])[block.id]["content"])


async def started_and_ended(s: Session, cid: str) -> None:
    """The model starts BACKGROUND; returns once it has ended, its changes held back."""
    w = s.workdir
    before = tree_digest(w)
    told = await call(s, cid, {"command": BACKGROUND, "run": "background"}, None)
    assert "Started in the background" in told and "held back and reviewed" in told
    log = Path(re.search(r"output goes to (\S+);", told).group(1))  # type: ignore[union-attr]
    await eventually(lambda: log.exists() and log.read_text().strip(), "the background command ended", timeout=30)
    await eventually(lambda: not launchers(s.pid), "its launcher is gone", timeout=30)
    assert tree_digest(w) == before, "nothing of a background command lands before its review"


@pytest.mark.req("REQ-BASH-043")
@pytest.mark.parametrize("decision", ["allow", "deny"])
async def test_a_background_command_that_ends_during_a_turn_is_reviewed_by_its_next_bash_call(
        fake_anthropic: FakeAnthropic, tmp_path: Path, decision: str) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        (w / "a.txt").write_text("zero\none\n")
        before = tree_digest(w)
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        await s.request("phoenix/setApprovalPolicy", {"conversationId": cid, "policy": "interactive"})
        # one turn: the command starts in the background, a foreground wait outlasts it, then one more call; the
        # command ends while the turn runs, so one of the turn's next bash calls reviews it, before its command
        started = ToolUseBlock("bash", {"command": BACKGROUND, "run": "background"})
        wait = ToolUseBlock("bash", {"command": "sleep 2"})
        last = ToolUseBlock("bash", {"command": "true"})
        mark = await start(s, cid, Reply.tool_reply(started), Reply.tool_reply(wait), Reply.tool_reply(last),
                           Reply.text_reply("done"))
        seen = mark
        asked: dict[str, Any] | None = None
        while True:
            question = await s.wait_event(lambda e, after=seen: e["conversationId"] == cid and e["seq"] > after
                                          and (e["kind"] == "approvalRequested" or
                                               (e["kind"] == "status" and e["status"] == "idle")))
            if question["kind"] == "status":
                break
            seen = question["seq"]
            if question["toolName"] == "patch":
                asked = question
                assert question["arguments"]["command"] == BACKGROUND
                assert "+bg\n" in question["diff"] and "-one\n+ONE\n" in question["diff"]
                assert tree_digest(w) == before, "nothing of it lands before the answer"
            await answer(s, cid, question["toolUseId"], decision if question["toolName"] == "patch" else "allow")
        assert asked is not None, "its review was asked during the turn"
        results = tool_results(s.fake.requests[-1]) | tool_results(s.fake.requests[-2])
        told = str(results.get(wait.id, {}).get("content", "")) + str(results.get(last.id, {}).get("content", ""))
        assert f"the background command `{BACKGROUND}`" in told
        if decision == "allow":
            assert (w / "bg.txt").read_text() == "bg\n" and (w / "a.txt").read_text() == "zero\nONE\n"
            assert "reviewed and applied" in told
        else:
            assert tree_digest(w) == before
            assert "not applied (the user rejected them)" in told


@pytest.mark.req("REQ-BASH-043")
async def test_a_background_commands_layer_is_discarded_when_the_server_stops(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        w = s.workdir
        (w / "a.txt").write_text("zero\none\n")
        before = tree_digest(w)
        cid = await unrestricted(s, policy="interactive")
        await started_and_ended(s, cid)
    assert tree_digest(w) == before
    assert not [p for p in (data / "layers").iterdir() if p.is_dir()], "the layer went with the server"


@pytest.mark.req("REQ-BASH-043")
async def test_a_background_command_stopped_by_the_model_is_reviewed_when_the_turn_ends(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="auto")
        block = ToolUseBlock("bash", {"command": "echo so far > partial.txt && sleep 300", "run": "background"})
        mark = await start(s, cid, Reply.tool_reply(block), Reply.text_reply("started"))
        await wait_idle(s, cid, mark)
        told = str(tool_results(s.fake.requests[-1])[block.id]["content"])
        pgid = re.search(r"process group (\d+)", told).group(1)  # type: ignore[union-attr]
        # the model stops it (at the user's request): nothing has landed yet
        stop = ToolUseBlock("bash", {"command": f"kill -TERM -- -{pgid}"})
        mark = await start(s, cid, Reply.tool_reply(stop), Reply.text_reply("stopped"))
        await wait_idle(s, cid, mark)
        await eventually(lambda: not launchers(s.pid), "the stopped command's launcher is gone", timeout=30)
        assert not (w / "partial.txt").exists()
        # it ended as the turn came to rest: reviewed then (auto: applied), the model told in the history
        await s.wait_until(lambda: (w / "partial.txt").exists(), what="its changes reviewed and applied")
        await s.wait_until(lambda: any("reviewed and applied" in str(e["message"]) for e in s.of("message", cid)),
                           what="what the model is told, in the history")
        after = ToolUseBlock("bash", {"command": "cat partial.txt"})
        mark = await start(s, cid, Reply.tool_reply(after), Reply.text_reply("done"))
        await wait_idle(s, cid, mark)
        told = str(tool_results(s.fake.requests[-1])[after.id]["content"])
        assert told.rstrip().endswith("so far")
        assert (w / "partial.txt").read_text() == "so far\n"
