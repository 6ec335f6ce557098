"""End-to-end: what makes the agent route's savings hold (issue 25), through the real server, the real sandboxed
engine and our issues MCP server (plain lists, output schemas declared): plans run on warm engine workers, each
used once, so nothing passes between units, runs or conversations (REQ-AGENT-037); the catalogue comes on
demand once it is over its size (REQ-AGENT-038)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest

from phoenix_lsp.agent.monty_engine import is_worker
from tests.agent.issues_server import expected_bugs
from tests.e2e.harness import last_seq, tool_results, wait_idle
from tests.e2e.test_agent_issues import COMMENT, LIST, agent_turn, catalogue_of, issues_files, one_node
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock
from tests.waiting import eventually

from .harness import session

pytestmark = [pytest.mark.slow]


def idle_workers(server: int) -> list[int]:
    """The server's engine workers that wait for a unit (no unit.json in their directory yet)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if is_worker(argv) and not (Path(os.readlink(entry / "cwd")) / "unit.json").exists() \
                    and _under(int(entry.name), server):
                found.append(int(entry.name))
    return found


def _three(pids: list[int]) -> list[int] | None:
    return pids if len(pids) == 3 else None


def _alive(pid: int) -> bool:
    """Whether the process runs (not gone, not a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _under(pid: int, root: int) -> bool:
    while pid > 1:
        if pid == root:
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            return False
    return False


@pytest.mark.req("REQ-AGENT-037", "REQ-AGENT-030")
async def test_plans_run_on_warm_workers_and_nothing_passes_between_nodes_or_conversations(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        first = one_node("{'n': len(issues_list_issues(limit=3))}", [LIST], ["n"])
        requests = await agent_turn(s, cid, Reply.tool_reply(first), Reply.text_reply("ok"))
        assert '"n":3' in str(tool_results(requests[1])[first.id]["content"])  # the list itself, not a wrapper
        # workers wait, started ahead of need (three by default); the next plan's nodes take them (b, which fails
        # early, runs again with the plan: a third), and each ends with its node
        waiting = await eventually(lambda: _three(idle_workers(s.pid)), "three warm workers wait", timeout=60)
        run = ToolUseBlock("run_plan", {"goal": "leak", "nodes": [
            {"id": "a", "code": "leaked = 41\nprint('from a')\n{'n': len(issues_list_issues(limit=2))}",
             "tools": [LIST], "outputs": ["n"]},
            {"id": "b", "code": "{'x': leaked}", "depends_on": ["a"], "outputs": ["x"]}]})
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        summary = str(tool_results(requests[1])[run.id]["content"])
        assert '"n":2' in summary and "NameError" in summary and "leaked" in summary, summary
        await eventually(lambda: sum(not _alive(pid) for pid in waiting) >= 2,
                         "the warm workers ran the nodes and ended with them", timeout=20)
        other = await unrestricted(s, "auto")  # another conversation: the same pool, nothing of the first
        again = one_node("{'x': leaked}", [], ["x"])
        requests = await agent_turn(s, other, Reply.tool_reply(again), Reply.text_reply("ok"))
        assert "NameError" in str(tool_results(requests[1])[again.id]["content"])


@pytest.mark.req("REQ-AGENT-038", "REQ-AGENT-030")
async def test_a_catalogue_over_its_size_comes_on_demand_and_a_plan_written_from_it_runs(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    env = {**issues_files(tmp_path), "PHOENIX_AGENT_CATALOGUE_INLINE_MAX": "0"}  # any catalogue is over it
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        describe = ToolUseBlock("describe_tools", {"tools": [LIST, COMMENT]})
        code = ("bugs = [i['number'] for i in where(issues_list_issues(state='open', limit=10), labels='bug')]\n"
                "issues_add_comment(number=1, body='bugs: ' + ', '.join([str(n) for n in bugs]))\n{'bugs': bugs}")
        run = one_node(code, [LIST, COMMENT], ["bugs"])
        requests = await agent_turn(s, cid, Reply.tool_reply(describe), Reply.tool_reply(run),
                                    Reply.text_reply("posted"))
        catalogue = catalogue_of(requests[0])
        # an index: each server's tools by name, writes marked, and what to ask; no calls, no shapes
        assert "- issues: list_issues, search_issues, get_issue" in catalogue, catalogue
        assert "add_comment [write]" in catalogue and "describe_tools" in catalogue
        assert "issues_list_issues(" not in catalogue and "->" not in catalogue
        described = str(tool_results(requests[1])[describe.id]["content"])
        assert "issues_list_issues(**arguments)" in described and "; returns: " in described
        summary = str(tool_results(requests[2])[run.id]["content"])
        assert json.dumps({"bugs": expected_bugs()}, separators=(",", ":")) in summary, summary
        assert catalogue_of(requests[2]) == catalogue  # byte-stable: the prompt cache keeps it


@pytest.mark.req("REQ-AGENT-034", "REQ-AGENT-035", "REQ-AGENT-036")
async def test_issue_25s_task_under_the_interactive_policy_asks_once_showing_what_is_written(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """The task as the issue's user ran it: a plan written from the catalogue alone (no describe_tools turn),
    reads that ask nothing, and one question for the one write, showing the tool, its arguments and the node."""
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        code = ("bugs = [i['number'] for i in where(issues_list_issues(state='open', limit=10), labels='bug')]\n"
                "issues_add_comment(number=1, body='bugs: ' + ', '.join([str(n) for n in bugs]))\n{'bugs': bugs}")
        run = ToolUseBlock("run_plan", {"goal": "post the bugs", "nodes": [
            {"id": "post", "code": code, "tools": [LIST, COMMENT], "outputs": ["bugs"]}]})
        s.fake.enqueue(Reply.tool_reply(run), Reply.text_reply("posted"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        event = await s.wait_event(lambda e: e["conversationId"] == cid and e["kind"] == "approvalRequested"
                                   and e["seq"] > mark, timeout=60)
        body = "bugs: " + ", ".join(str(n) for n in expected_bugs())
        assert event["toolName"] == COMMENT and event["arguments"] == {"number": 1, "body": body}
        assert "'post the bugs'" in event["description"] and "'post'" in event["description"]
        assert json.loads((tmp_path / "issues.json").read_text())["comments"].get("1", []) == []  # not yet
        await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": event["toolUseId"],
                                                      "decision": "allow"})
        await wait_idle(s, cid, mark, timeout=60)
        assert len(s.of("approvalRequested", cid)) == 1  # the reads and the approval node asked nothing
        assert json.loads((tmp_path / "issues.json").read_text())["comments"]["1"][0]["body"] == body
