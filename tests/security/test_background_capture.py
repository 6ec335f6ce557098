"""Attacks on a background command's layer (REQ-BASH-043): a command that keeps writing once its review is asked,
and one whose layer fills the disk cap. Real launcher, real overlay, real quota; the witnesses are the disk,
what the client was asked and what the fake model server was told."""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import background, overlay, scratch
from phoenix_lsp.tools import bash
from tests.e2e.harness import Buffers, session, tool_results, wait_idle
from tests.e2e.test_approval import answer, approval_after, start
from tests.e2e.test_background_review import launchers
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.sandbox.capture import tree_digest
from tests.server.test_shell_review import capture
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]

#: the command returns at once; a child it leaves behind keeps appending to the workspace
LINGERING = "echo first > bg.txt && (while :; do echo more >> late.txt; sleep 0.01; done) & sleep 0.3"


@pytest.mark.req("REQ-BASH-043")
async def test_a_background_command_that_keeps_writing_lands_only_what_was_reviewed(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path) as s:
        w = s.workdir
        s.on_apply_edit = Buffers(s).apply
        cid = await unrestricted(s, policy="interactive")
        first = ToolUseBlock("bash", {"command": LINGERING, "run": "background"})
        mark = await start(s, cid, Reply.tool_reply(first), Reply.text_reply("started"))
        await answer(s, cid, (await approval_after(s, cid, mark))["toolUseId"], "allow")
        idle = await wait_idle(s, cid, mark)
        told = str(tool_results(s.fake.requests[-1])[first.id]["content"])
        log = Path(re.search(r"output goes to (\S+);", told).group(1))  # type: ignore[union-attr]
        await eventually(lambda: log.exists() and log.read_text().strip(), "the background command ended", 30)
        await eventually(lambda: not launchers(s.pid), "its launcher is gone", 30)
        assert not (w / "late.txt").exists(), "nothing lands before the review"
        # it ended at rest: its review is asked at once (REQ-BASH-044)
        review = await approval_after(s, cid, int(idle["seq"]))
        assert review["toolName"] == "patch"
        shown = review["diff"].count("+more\n")
        assert shown > 0
        await answer(s, cid, review["toolUseId"], "allow")
        await s.wait_event(lambda e: e["conversationId"] == cid and e["seq"] > review["seq"] and e["kind"] == "message")
        # what landed is what the user saw: the writer was gone before the review was read, and stays gone
        assert (w / "late.txt").read_text() == "more\n" * shown
        mark = await start(s, cid, Reply.tool_reply(ToolUseBlock("bash", {"command": "true"})),
                           Reply.text_reply("done"))
        await answer(s, cid, (await approval_after(s, cid, mark))["toolUseId"], "allow")
        await wait_idle(s, cid, mark)
        assert (w / "late.txt").read_text() == "more\n" * shown


@pytest.mark.req("REQ-BASH-043")
async def test_a_background_layer_that_fills_its_cap_is_stopped_and_nothing_lands(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(overlay, "make_layer", functools.partial(overlay.make_layer, cap_bytes=1024 * 1024))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("kept\n")
    before = tree_digest(ws)
    data = tmp_path / "data"

    def ctx() -> bash.BashContext:
        return bash.BashContext(working_directory=ws, restricted=False, conversation_id="c-cap",
                                background_dir=tmp_path / "bg", capture=capture("c-cap", data))

    started = await bash.run_bash({"command": "head -c 64M /dev/zero > big.bin; sleep 60", "run": "background"},
                                  ctx())
    assert started.outcome == "background", started.output
    jobs = background.background_jobs("c-cap")
    assert len(jobs) == 1 and jobs[0].layer is not None
    await asyncio.to_thread(jobs[0].finished.wait, 60)
    told = await bash.run_bash({"command": "true"}, ctx())
    assert "the command wrote more than the layer allows" in told.output, told.output
    assert tree_digest(ws) == before and not (ws / "big.bin").exists()
    scratch.wait_for_removals()
    assert not [p for p in (data / "layers").iterdir() if p.is_dir()], "the layer is gone"
