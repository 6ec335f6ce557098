"""End-to-end: the layers a killed server leaves are swept, a live server's never (REQ-BASH-042).

Real servers (each its own process, one data directory) driven by pytest-lsp clients; the model is the fake
Anthropic server scripted to call bash in Unrestricted; the commands run for real in real overlays. The
witness is the data directory's layers on disk.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import overlay
from tests.e2e.harness import Session, session
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually

SUPPORT = overlay.overlay_support()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(SUPPORT is not None, reason=f"no overlay here: {SUPPORT}")]


def layers_with(data: Path, name: str) -> list[Path]:
    """The layers (by their directory) whose upper holds `name`: a command writing it is running in them."""
    layers = data / "layers"
    if not layers.is_dir():
        return []
    return [p for p in layers.iterdir() if (p / "upper" / name).exists()]


async def running(s: Session, data: Path, name: str, ends: bool, seconds: int = 60) -> Path:
    """Has the model run `echo > name; sleep` in Unrestricted, and returns its layer once the command wrote.
    `ends`: the model's turn ends after the command (False: its server is killed before)."""
    cid = await unrestricted(s, policy="auto")
    call = Reply.tool_reply(ToolUseBlock("bash", {"command": f"echo x > {name} && sleep {seconds}", "run": "slow"}))
    s.fake.enqueue(call, Reply.text_reply("done")) if ends else s.fake.enqueue(call)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
    found = await eventually(lambda: layers_with(data, name), f"the command writing {name} runs in a layer",
                             timeout=60)
    return found[0]


@pytest.mark.req("REQ-BASH-042")
async def test_a_killed_servers_layer_is_swept_and_a_live_servers_kept(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    data = tmp_path / "data"
    for name in "abc":
        (tmp_path / name).mkdir()
    async with session(fake_anthropic, tmp_path / "a", data_dir=data) as a:
        dead = await running(a, data, "a.txt", ends=False)
        await a.kill()
    assert dead.is_dir(), "a server killed mid-command leaves its layer behind"
    async with session(fake_anthropic, tmp_path / "b", data_dir=data) as b:
        live = await running(b, data, "b.txt", ends=True)
        await eventually(lambda: not os.path.lexists(dead), "the killed server's layer is swept", timeout=30)
        # a third server starts while the second one's command runs: its sweep keeps the live layer
        planted = data / "layers" / ("d" * 32)  # a leftover of no one's, to know the third sweep has run
        (planted / "upper").mkdir(parents=True)
        async with session(fake_anthropic, tmp_path / "c", data_dir=data):
            await eventually(lambda: not planted.exists(), "the third server's start-up sweep ran", timeout=30)
            assert (live / "upper" / "b.txt").read_text() == "x\n"
        assert live.is_dir()
