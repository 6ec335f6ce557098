"""Attacks (issue 24): budgets and cancel that did not hold in the engine.

Witnesses outside phoenix-lsp: the processes of the engine's tree (``/proc``), and the hostile MCP server's own
log of the calls it received, with the time it received each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import pytest

from phoenix_lsp.agent.monty_engine import is_worker
from tests.e2e.harness import Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.security.agent_helpers import GET, SLOW, agent_env, agent_turn, calls, one_node
from tests.waiting import eventually, exited

pytestmark = [pytest.mark.slow]

#: a node that would spin for two minutes: only a cancel can end it sooner
LONG = {"node": {"cpuS": 120}, "run": {"wallClockS": 600}}


def _parents() -> dict[int, int]:
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parent[int(entry.name)] = int((entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[1])
    return parent


def _descendants(root: int, parent: dict[int, int]) -> list[int]:
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        children = [child for child, par in parent.items() if par == p]
        out += children
        todo += children
    return out


def engine_tree(server: int) -> list[int]:
    """The engine's processes under the server that run a unit: the sandbox launcher, the worker and what it
    started (warm workers waiting for a unit, REQ-AGENT-037, have no unit.json in their directory yet)."""
    parent = _parents()
    for pid in _descendants(server, parent):
        with contextlib.suppress(OSError):
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            if is_worker(argv) and (Path(f"/proc/{pid}/cwd") / "unit.json").exists():  # not its launcher's argv
                launcher = parent.get(pid, 0)
                return [launcher, pid, *_descendants(pid, parent)] if launcher != server else [pid]
    return []


async def cancel_while_spinning(s: Session, cid: str, run: ToolUseBlock,
                                ready: Callable[[], bool] = lambda: True) -> list[int]:
    """Start ``run``, wait for its engine tree to be up (and for ``ready``), cancel the turn; the tree as it was."""
    s.fake.enqueue(Reply.tool_reply(run))
    mark = last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "spin", "route": "agent"})
    tree = await eventually(lambda: (t := engine_tree(s.pid)) and len(t) >= 3 and t,
                            "the engine's tree is up: launcher, worker, monty", timeout=60)
    await eventually(ready, "the script is where the test cancels it", timeout=60)
    await s.request("phoenix/cancel", {"conversationId": cid})
    await wait_idle(s, cid, mark, timeout=60)
    return list(tree)


@pytest.mark.req("REQ-AGENT-028", "REQ-BED-005")
async def test_cancel_while_a_script_loops_ends_the_engines_process_tree(fake_anthropic: FakeAnthropic,
                                                                         tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path, budgets=LONG)) as s:
        cid = await s.new()
        tree = await cancel_while_spinning(s, cid, one_node("while True:\n    pass", [GET]))
        # the CPU budget is two minutes: only the cancel can have ended them
        assert await exited(tree, timeout=20) == [], "processes of the engine's tree still run after cancel"
        # the conversation goes on
        run = one_node("{'r': hostile_get_record(id=4)}", [GET])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        assert "Record 4" in str(tool_results(requests[1])[run.id]["content"])


@pytest.mark.req("REQ-AGENT-028", "REQ-BED-005")
async def test_cancel_after_a_tool_call_ends_the_tree_and_no_later_node_calls_anything(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path, budgets=LONG)) as s:
        cid = await s.new()
        run = ToolUseBlock("run_plan", {"goal": "spin", "nodes": [
            {"id": "a", "code": "r = hostile_get_record(id=1)\nn = 0\nwhile True:\n    n = n + len(r)\n{'n': n}",
             "tools": [GET], "outputs": ["n"]},
            {"id": "b", "code": "{'r': hostile_get_record(id=2)}", "tools": [GET], "depends_on": [],
             "outputs": ["r"]}]})
        # cancelled once node a's call has reached the server (the script spins after it), not before
        tree = await cancel_while_spinning(s, cid, run, ready=lambda: any(
            c["tool"] == "get_record" for c in calls(tmp_path)))
        assert await exited(tree, timeout=20) == [], "processes of the engine's tree still run after cancel"
    received = [c.get("id") for c in calls(tmp_path) if c["tool"] == "get_record"]
    assert received == [1], received  # node b never ran


@pytest.mark.req("REQ-AGENT-028", "REQ-AGENT-013")
async def test_a_node_that_calls_a_slow_tool_in_a_loop_stops_when_the_run_is_out_of_time(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    wall = 4.0
    budgets = {"node": {"cpuS": 60}, "run": {"wallClockS": wall}}
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path, budgets=budgets)) as s:
        cid = await unrestricted(s, "auto")
        run = one_node("for i in range(20):\n    hostile_slow(seconds=1)\n{}", [SLOW])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = str(tool_results(requests[1])[run.id]["content"])
        assert "BUDGET/WALL_CLOCK" in text, text
    received = [c["time"] for c in calls(tmp_path) if c["tool"] == "slow"]
    # the run started before the first call arrived: a call received later than first + wallClockS started
    # after the budget was spent
    late = [t - received[0] for t in received if t > received[0] + wall]
    assert received and late == [], f"{len(late)} calls started after the run's {wall} s were spent"


@pytest.mark.req("REQ-AGENT-028", "REQ-AGENT-013")
async def test_one_call_longer_than_the_runs_time_is_cut_and_nothing_runs_after_it(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    budgets = {"node": {"cpuS": 60}, "run": {"wallClockS": 3}}
    async with session(fake_anthropic, tmp_path, env=agent_env(tmp_path, budgets=budgets)) as s:
        cid = await unrestricted(s, "auto")
        run = one_node("hostile_slow(seconds=40)\n{'r': hostile_get_record(id=7)}", [SLOW, GET])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = str(tool_results(requests[1])[run.id]["content"])
        assert "BUDGET/WALL_CLOCK" in text, text
    assert [c["tool"] for c in calls(tmp_path)] == ["slow"]  # the call after the spent budget never arrived
