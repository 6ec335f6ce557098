"""Sub-agents end to end (issue 6): the real server, a real LSP client, the fake Anthropic server.

The fake routes the concurrent requests by content: a sub-agent's request carries the sub-agent system prompt
and its task as the first user message; the parent's requests are told apart by how many messages they carry.
Parallelism is proven from the request times the fake records (and a barrier in the fake that only opens
once every sub-agent's request is in flight), never by sleeping.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.server.config import Config
from phoenix_lsp.server.prompts import SUBAGENT
from tests.e2e.harness import WAIT_S, Session, session, tool_results
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock
from tests.waiting import eventually, exited

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

STANDARD = ["read_file", "list_directory", "search_files", "bash", "patch"]


# ------------------------------------------------------------------------------------------------ helpers


def is_sub(body: dict[str, Any]) -> bool:
    """Whether a request body comes from a sub-agent (its system prompt carries the sub-agent text)."""
    system = body.get("system", "")
    text = system if isinstance(system, str) else " ".join(b.get("text", "") for b in system)
    return SUBAGENT in text


def first_text(body: dict[str, Any]) -> str:
    """The text of the first user message: for a sub-agent, its task."""
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def task_of(request: RecordedRequest) -> str:
    return first_text(request.body)


def sub_requests(fake: FakeAnthropic, task: str | None = None) -> list[RecordedRequest]:
    """The recorded sub-agent requests (of one task, if given), in arrival order."""
    return [r for r in fake.requests if is_sub(r.body) and (task is None or task_of(r) == task)]


def parent_requests(fake: FakeAnthropic) -> list[RecordedRequest]:
    return [r for r in fake.requests if not is_sub(r.body)]


def submit(result: str, **kw: Any) -> Reply:
    return Reply.tool_reply(ToolUseBlock("submit_result", {"result": result}), **kw)


def spawn(*tasks: str, call_id: str = "toolu_spawn") -> Reply:
    return Reply.tool_reply(ToolUseBlock("spawn_agents", {"tasks": list(tasks)}, id=call_id))


Script = Callable[[str, int], Reply]


def router(parent: list[Reply], agents: Script) -> Callable[[dict[str, Any]], Reply]:
    """A fake handler: the parent's replies in order; a sub-agent's reply from ``agents(task, turn)``.

    ``turn`` counts the sub-agent's requests from 0 (its history grows by two messages per turn).
    """
    lock = threading.Lock()
    queue = list(parent)

    def handle(body: dict[str, Any]) -> Reply:
        if is_sub(body):
            return agents(first_text(body), (len(body["messages"]) - 1) // 2)
        with lock:
            if not queue:
                return Reply.error(400, "test script: no more parent replies")
            return queue.pop(0)

    return handle


def barrier(fake: FakeAnthropic, count: int, timeout: float = 15.0) -> None:
    """Block the fake's handler thread until ``count`` sub-agent requests have arrived (proves they overlap)."""
    if not fake.wait_for(lambda reqs: sum(1 for r in reqs if is_sub(r.body)) >= count, timeout):
        raise AssertionError(f"fewer than {count} sub-agent requests were ever in flight at once")


def aggregate(fake: FakeAnthropic, call_id: str = "toolu_spawn") -> dict[str, Any]:
    """The parent's request that carries the aggregated result of the spawn call; asserts it is the only one."""
    carrying = [r for r in parent_requests(fake) if call_id in tool_results(r)]
    assert len(carrying) == 1, f"expected one parent request with the spawn result, got {len(carrying)}"
    results = tool_results(carrying[0])
    assert list(results) == [call_id], f"the aggregate must be ONE tool_result, got {list(results)}"
    return results[call_id]


def sections(content: str) -> dict[str, str]:
    """The aggregate split per sub-agent: task -> its part of the text."""
    parts = re.split(r"^## Sub-agent \d+ \([^)]*\): ", content, flags=re.M)
    return {p.split("\n", 1)[0]: p.split("\n", 1)[1].strip() for p in parts if p.strip()}


async def spawned(s: Session, cid: str, timeout: float = 10.0) -> list[dict[str, Any]]:
    event = await s.wait_event(lambda e: e["kind"] == "subAgentsSpawned" and e["conversationId"] == cid, timeout)
    return list(event["agents"])


async def send(s: Session, cid: str, text: str) -> int:
    """Send a message; returns the seq seen before it (for wait_status(since=...))."""
    seen = s.last_seq(cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text})
    return seen


# ------------------------------------------------------------------------------------------------- tests


@pytest.mark.req("REQ-BED-008", "REQ-BED-009", "REQ-PROTO-022")
async def test_agents_run_in_parallel_and_report_in_one_aggregated_result(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    tasks = ["count the tests", "list the modules", "find the TODOs", "read the missing file"]

    def agents(task: str, turn: int) -> Reply:
        if task == tasks[0]:
            barrier(fake_anthropic, 4)
            return submit("there are 42 tests", text="counting", deltas=3)
        if task == tasks[1]:
            barrier(fake_anthropic, 4)
            return submit("modules: a, b")
        if task == tasks[2]:
            barrier(fake_anthropic, 4)
            return Reply.text_reply("I looked around and I am done.")  # ends its turn without submitting
        barrier(fake_anthropic, 4)
        return Reply.error(400, "messages: the fake refuses this one")  # an LLM error

    fake_anthropic.handler = router([spawn(*tasks), Reply.text_reply("all four reported")], agents)
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        since = await send(s, cid, "survey the project")
        agents_listed = await spawned(s, cid)
        await s.wait_status(cid, "idle", timeout=20, since=since)

        # one independent conversation per task, announced on the parent (REQ-PROTO-022)
        assert [a["task"] for a in agents_listed] == tasks
        ids = [a["conversationId"] for a in agents_listed]
        assert len(set(ids)) == 4 and cid not in ids
        finished = {e["agentId"]: e for e in s.of("subAgentFinished", cid)}
        assert set(finished) == set(ids)
        assert [finished[i]["outcome"] for i in ids] == ["submitted", "submitted", "failed", "failed"]
        assert "without calling submit_result" in finished[ids[2]]["reason"]

        # the sub-agents' own events reach the client tagged with the parent, each with its own seq series
        for agent_id in ids:
            own = [e for e in s.events if e["conversationId"] == agent_id]
            assert own and all(e.get("parentConversationId") == cid for e in own)
            assert [e["seq"] for e in own] == list(range(1, len(own) + 1))
        assert "".join(e["text"] for e in s.of("textDelta", ids[0])) == "counting"
        assert all("parentConversationId" not in e for e in s.events if e["conversationId"] == cid)

        # not in the list, but inspectable with the id from the parent's events (REQ-BED-009)
        listing = (await s.request("phoenix/listConversations", {}))["conversations"]
        assert [c["conversationId"] for c in listing] == [cid]
        everything = (await s.request("phoenix/listConversations", {"includeSubAgents": True}))["conversations"]
        assert {c["conversationId"] for c in everything} == {cid, *ids}
        child = await s.request("phoenix/getConversation", {"conversationId": ids[0]})
        assert child["isSubAgent"] is True and child["parentConversationId"] == cid
        assert child["status"] == "finished" and child["mode"] == "restricted"
        assert child["messages"][0]["content"] == [{"type": "text", "text": tasks[0]}]
        calls = [b for m in child["messages"] for b in m["content"] if b["type"] == "toolUse"]
        assert calls[-1]["toolName"] == "submit_result"
        assert calls[-1]["arguments"] == {"result": "there are 42 tests"}
        parent = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert parent["isSubAgent"] is False
        assert {a["conversationId"]: a["status"] for a in parent["subAgents"]} == dict.fromkeys(ids, "finished")

    # parallel: every sub-agent request was in flight together (the barrier opened only then)
    subs = sub_requests(fake_anthropic)
    assert len(subs) == 4
    assert all(a.overlaps(b) for a in subs for b in subs if a is not b)

    # ONE aggregated tool_result with each agent's result or failure reason
    result = aggregate(fake_anthropic)
    per_agent = sections(result["content"])
    assert list(per_agent) == tasks
    assert per_agent[tasks[0]].strip() == "Result:\nthere are 42 tests"
    assert per_agent[tasks[1]].strip() == "Result:\nmodules: a, b"
    assert per_agent[tasks[2]].startswith("FAILED:") and "without calling submit_result" in per_agent[tasks[2]]
    assert per_agent[tasks[3]].startswith("FAILED:") and "the fake refuses this one" in per_agent[tasks[3]]
    assert result["is_error"] is False  # some agents succeeded

    # tool lists: sub-agents get the standard tools plus submit_result, nothing else (REQ-BED-009)
    assert all(r.tool_names == [*STANDARD, "submit_result"] for r in subs)
    first_parent = parent_requests(fake_anthropic)[0]
    assert first_parent.tool_names is not None
    assert {"spawn_agents", "request_mode_upgrade"} <= set(first_parent.tool_names)
    assert "submit_result" not in first_parent.tool_names


@pytest.mark.req("REQ-BED-009", "REQ-BED-018")
async def test_nesting_and_upgrade_are_refused_as_unknown_tools(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    def agents(task: str, turn: int) -> Reply:
        if turn == 0:
            return Reply.tool_reply(
                ToolUseBlock("spawn_agents", {"tasks": ["a grandchild"]}, id="toolu_nest"),
                ToolUseBlock("request_mode_upgrade", {"reason": "I want to write"}, id="toolu_up"),
            )
        return submit("could not nest, could not upgrade")

    fake_anthropic.handler = router([spawn("try to escalate"), Reply.text_reply("ok")], agents)
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        [agent] = await spawned(s, cid)
        await s.wait_status(cid, "idle", timeout=20, since=since)
        child_id = agent["conversationId"]
        assert not s.of("upgradeRequested"), "no upgrade request may reach the user"
        assert len(s.of("subAgentsSpawned")) == 1, "the sub-agent must not spawn agents of its own"
        everything = (await s.request("phoenix/listConversations", {"includeSubAgents": True}))["conversations"]
        assert {c["conversationId"] for c in everything} == {cid, child_id}
        child = await s.request("phoenix/getConversation", {"conversationId": child_id})
        assert child["mode"] == "restricted"
        # no protocol action changes a sub-agent's mode, finished or not (REQ-BED-018)
        await s.error("phoenix/setMode", {"conversationId": child_id, "mode": "unrestricted"})
        assert (await s.request("phoenix/getConversation", {"conversationId": child_id}))["mode"] == "restricted"

    first, second = sub_requests(fake_anthropic)
    assert "spawn_agents" not in (first.tool_names or []) and "request_mode_upgrade" not in (first.tool_names or [])
    # the calls name tools the sub-agent's requests do not offer, so the next request carries them, and their
    # refusals, as text the model reads (REQ-AGENT-046): each refusal quoted after the call
    assert not tool_results(second)
    texts = [b["text"] for b in second.messages[-1]["content"] if b.get("type") == "text"]
    for call_id, name in (("toolu_nest", "spawn_agents"), ("toolu_up", "request_mode_upgrade")):
        [refused] = [t for t in texts if f"The result of the {name} call {call_id} above (an error)" in t]
        assert f"Unknown tool '{name}'" in refused
        assert "submit_result" in refused  # it names the tools that do exist
    assert sections(aggregate(fake_anthropic)["content"]) == {
        "try to escalate": "Result:\ncould not nest, could not upgrade"
    }


@pytest.mark.req("REQ-BED-018", "REQ-BASH-008", "REQ-BED-009")
async def test_subagent_of_unrestricted_parent_is_restricted_by_the_kernel(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    write = "echo x > f"

    def agents(task: str, turn: int) -> Reply:
        if turn == 0:
            return Reply.tool_reply(ToolUseBlock("bash", {"command": write}, id="toolu_write"))
        if turn == 1:
            return Reply.tool_reply(ToolUseBlock("patch", {"path": "f", "content": "x"}, id="toolu_patch"))
        return submit("tried to write f")

    fake_anthropic.handler = router([spawn("write the file f"), Reply.text_reply("ok")], agents)
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(policy="auto")
        answer = await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "/execute"})
        assert answer["mode"] == "unrestricted"
        since = await send(s, cid, "delegate the write")
        [agent] = await spawned(s, cid)
        await s.wait_status(cid, "idle", timeout=20, since=since)
        child_id = agent["conversationId"]
        [start] = [e for e in s.of("toolStart", child_id) if e["toolUseId"] == "toolu_write"]
        assert start["mode"] == "restricted"
        parent = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert parent["mode"] == "unrestricted"
    assert not (s.workdir / "f").exists(), "the sandboxed write must not reach the disk"
    requests = sub_requests(fake_anthropic)
    bash_result = tool_results(requests[1])["toolu_write"]
    assert bash_result["is_error"] is True
    assert "Permission denied" in bash_result["content"] or "Read-only" in bash_result["content"]
    patch_result = tool_results(requests[2])["toolu_patch"]
    assert patch_result["is_error"] is True and "Restricted" in patch_result["content"]
    assert not s.edits, "a restricted sub-agent must never send a workspace edit"


def peak(requests: list[RecordedRequest]) -> int:
    """How many of ``requests`` were served at the same instant (each up to its ``served_until``)."""
    points: list[tuple[float, int]] = []
    for r in requests:
        end = r.served_until
        assert end is not None, "a request is still being served"
        points += [(r.started_at, 1), (end, -1)]
    best = current = 0
    for _, step in sorted(points, key=lambda p: (p[0], p[1])):
        current += step
        best = max(best, current)
    return best


@pytest.mark.req("REQ-BED-008")
async def test_concurrency_bound_from_environment(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    tasks = [f"task {i}" for i in range(5)]

    def agents(task: str, turn: int) -> Reply:
        barrier(fake_anthropic, 2)  # two streams at once, at least
        return submit(f"done {task}", text="working " * 10, deltas=10, delay_s=0.03)

    fake_anthropic.handler = router([spawn(*tasks), Reply.text_reply("ok")], agents)
    env = {"PHOENIX_SUBAGENT_CONCURRENCY": "2"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        await s.wait_status(cid, "idle", timeout=30, since=since)
    subs = sub_requests(fake_anthropic)
    assert sorted(task_of(r) for r in subs) == tasks
    assert peak(subs) == 2, "at most PHOENIX_SUBAGENT_CONCURRENCY sub-agent streams may be open at once"
    per_agent = sections(aggregate(fake_anthropic)["content"])
    assert per_agent == {task: f"Result:\ndone {task}" for task in tasks}


@pytest.mark.req("REQ-BED-008")
async def test_time_limit_fails_a_hanging_agent_and_closes_its_stream(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    def agents(task: str, turn: int) -> Reply:
        if task == "hang":
            return Reply.hanging(after_events=3, limit_s=30)
        return submit("quick result")

    fake_anthropic.handler = router([spawn("hang", "be quick"), Reply.text_reply("ok")], agents)
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_SUBAGENT_TIME_LIMIT_S": "1.5"}) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        agents_listed = await spawned(s, cid)
        await s.wait_status(cid, "idle", timeout=20, since=since)
        hang_id = agents_listed[0]["conversationId"]
        [finished] = [e for e in s.of("subAgentFinished", cid) if e["agentId"] == hang_id]
        assert finished["outcome"] == "failed" and "timed out after 1.5 s" in finished["reason"]
        assert (await s.request("phoenix/getConversation", {"conversationId": hang_id}))["status"] == "finished"
    [hung] = sub_requests(fake_anthropic, "hang")
    assert hung.disconnected, "the fake must see the timed-out stream disconnect"
    assert hung.ended_at is not None and 1.4 <= hung.ended_at - hung.started_at < 10
    per_agent = sections(aggregate(fake_anthropic)["content"])
    assert per_agent["hang"].startswith("FAILED:") and "timed out after 1.5 s" in per_agent["hang"]
    assert per_agent["be quick"].strip() == "Result:\nquick result"


@pytest.mark.req("REQ-BED-024", "REQ-BED-008")
async def test_context_exhaustion_fails_the_agent_without_summary_then_parent_respawns(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    def agents(task: str, turn: int) -> Reply:
        if task == "read everything":  # 95 % of the 200k window, and a tool call that must not run
            return Reply.tool_reply(
                ToolUseBlock("read_file", {"path": "big.txt"}, id="toolu_big"), usage={"input_tokens": 190_000}
            )
        return submit("the narrow answer")

    parent = [
        spawn("read everything"),
        spawn("read only the header", call_id="toolu_spawn2"),  # the replacement (REQ-BED-024)
        Reply.text_reply("ok"),
    ]
    fake_anthropic.handler = router(parent, agents)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "big.txt").write_text("big\n")
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new(model="claude-haiku-4-5")  # a 200k window; sub-agents answer with the parent's model
        since = await send(s, cid, "go")
        [first] = await spawned(s, cid)
        await s.wait_status(cid, "idle", timeout=20, since=since)
        first_id = first["conversationId"]
        assert not s.of("toolStart", first_id), "no tool of the exhausting response may run"
        assert not s.of("continuationStarted", first_id), "sub-agents run no continuation flow"
        child = await s.request("phoenix/getConversation", {"conversationId": first_id})
        assert child["status"] == "finished"
    exhausted = sub_requests(fake_anthropic, "read everything")
    assert len(exhausted) == 1, "no summary (or any other) request may follow for the exhausted agent"
    failure = sections(aggregate(fake_anthropic)["content"])["read everything"]
    assert failure.startswith("FAILED:") and "context window reached its limit (95%)" in failure
    assert sections(aggregate(fake_anthropic, "toolu_spawn2")["content"]) == {
        "read only the header": "Result:\nthe narrow answer"
    }


@pytest.mark.req("REQ-BED-008")
async def test_turn_limit_from_environment(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    def agents(task: str, turn: int) -> Reply:
        return Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."}, id=f"toolu_ls{turn}"))

    fake_anthropic.handler = router([spawn("loop forever"), Reply.text_reply("ok")], agents)
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_SUBAGENT_MAX_TURNS": "3"}) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        await s.wait_status(cid, "idle", timeout=20, since=since)
    failure = sections(aggregate(fake_anthropic)["content"])["loop forever"]
    assert failure.startswith("FAILED:") and "turn limit (3)" in failure
    # the limit stops the loop (the core lets the agent make one request past it: see the next test)
    assert len(sub_requests(fake_anthropic, "loop forever")) <= 4


@pytest.mark.req("REQ-BED-008")
async def test_turn_limit_allows_exactly_that_many_model_turns(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    def agents(task: str, turn: int) -> Reply:
        return Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."}, id=f"toolu_ls{turn}"))

    fake_anthropic.handler = router([spawn("loop forever"), Reply.text_reply("ok")], agents)
    async with session(fake_anthropic, tmp_path, env={"PHOENIX_SUBAGENT_MAX_TURNS": "2"}) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        await s.wait_status(cid, "idle", timeout=20, since=since)
    assert "turn limit (2)" in sections(aggregate(fake_anthropic)["content"])["loop forever"]
    assert len(sub_requests(fake_anthropic, "loop forever")) == 2


def _processes_with(marker: str) -> list[int]:
    """Pids whose command line contains ``marker`` (NUL-separated argv joined with spaces)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline:
            found.append(int(proc.name))
    return found


@pytest.mark.req("REQ-BED-005", "REQ-BED-008", "REQ-BED-018")
async def test_parent_cancel_stops_every_agent_its_tools_and_streams(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    # The command and the two streams last until the cancel: longer than every wait before it (WAIT_S each, a
    # hang guard: at load 20 a sandboxed command took over 5 s to appear), and the streams past the server's
    # idle timeout (45 s), so that nothing but the cancel can end them within the waits below.
    sleeper = "sleep 231.25"
    idle_s = Config().llm_idle_timeout_s

    def agents(task: str, turn: int) -> Reply:
        if task == "run a long command":
            return Reply.tool_reply(ToolUseBlock("bash", {"command": sleeper}, id="toolu_sleep"))
        return Reply.hanging(after_events=3, limit_s=4 * idle_s)

    tasks = ["run a long command", "think for ever", "think for ever too"]
    fake_anthropic.handler = router([spawn(*tasks)], agents)
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        ids = [a["conversationId"] for a in await spawned(s, cid)]
        await s.wait_event(lambda e: e["kind"] == "toolStart" and e["conversationId"] == ids[0])
        assert await fake_anthropic.await_for(
            lambda reqs: sum(1 for r in reqs if is_sub(r.body) and r.events_sent >= 3 and not r.disconnected) >= 2,
            WAIT_S,
        ), "both hanging sub-agents must be streaming before the cancel"
        # toolStart goes out before the sandboxed process exists, and that process can tell no one it started
        await eventually(lambda: _processes_with(sleeper), "the sub-agent's command started", WAIT_S)
        assert _processes_with(sleeper), "the sub-agent's command must be running before the cancel"
        commands = _processes_with(sleeper)
        # a running sub-agent's mode cannot be changed by the user either (REQ-BED-018)
        err = await s.error("phoenix/setMode", {"conversationId": ids[1], "mode": "unrestricted"})
        assert "sub-agent" in err.message

        assert not any(r.ended_at for r in sub_requests(fake_anthropic) if task_of(r) != tasks[0])
        cancelled_at = time.monotonic()
        answer = await s.request("phoenix/cancel", {"conversationId": cid})
        assert answer == {"cancelled": True, "status": "idle"}
        await s.wait_status(cid, "idle", since=since)
        for agent_id in ids:
            child = await s.request("phoenix/getConversation", {"conversationId": agent_id})
            assert child["status"] == "finished", agent_id
        finished = {e["agentId"]: e for e in s.of("subAgentFinished", cid)}
        assert set(finished) == set(ids)
        assert all(e["outcome"] == "failed" and "cancelled" in e["reason"] for e in finished.values())
        end = await s.wait_event(lambda e: e["kind"] == "toolEnd" and e["conversationId"] == ids[0])
        assert end["summary"] == "cancelled" and end["isError"] is True
        parent = await s.request("phoenix/getConversation", {"conversationId": cid})
        [result] = [b for b in parent["messages"][-1]["content"] if b["type"] == "toolResult"]
        assert result["toolUseId"] == "toolu_spawn" and result["isError"] and "Cancelled" in result["content"]

        hung = [r for r in sub_requests(fake_anthropic) if task_of(r) != tasks[0]]
        assert await fake_anthropic.await_for(lambda _: all(r.ended_at is not None for r in hung), WAIT_S)
        assert all(r.disconnected for r in hung)
        # the cancel closed them: they were open when it was sent, and the client left before the fake's hang
        # ended or the idle timeout since their last byte could have closed them (how fast the cancel closes
        # them, 100 ms budget, is measured in bench/subagents.py)
        assert all(cancelled_at < (r.ended_at or 0) < (r.first_byte_at or 0) + idle_s for r in hung)
        assert await exited(commands, WAIT_S) == [], "the sub-agent's command must be killed with the cancel"
        assert not _processes_with(sleeper), "the sub-agent's command must be killed with the cancel"
    assert len(sub_requests(fake_anthropic)) == 3, "no sub-agent may call the model after the cancel"


async def _interrupted_by_restart(fake: FakeAnthropic, tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Spawn two agents; one submits, one hangs; SIGKILL the server; start it again on the same data.

    Returns the parent's and the agents' getConversation answers after the restart.
    """

    def agents(task: str, turn: int) -> Reply:
        if task == "answer quickly":
            return submit("the quick answer is 7")
        return Reply.hanging(after_events=3, limit_s=30)

    fake.handler = router([spawn("answer quickly", "think for ever")], agents)
    async with session(fake, tmp_path) as s:
        cid = await s.new()
        await send(s, cid, "go")
        ids = [a["conversationId"] for a in await spawned(s, cid)]
        await s.wait_event(lambda e: e["kind"] == "subAgentFinished" and e["agentId"] == ids[0])
        assert await fake.await_for(lambda reqs: any(task_of(r) == "think for ever" and r.events_sent >= 3
                                                     for r in reqs if is_sub(r.body)))
        await s.kill()
    [hung] = sub_requests(fake, "think for ever")
    assert await fake.await_for(lambda _: hung.disconnected, 5)
    before = len(fake.requests)
    async with session(fake, tmp_path, data_dir=s.data_dir) as again:
        parent = await again.request("phoenix/getConversation", {"conversationId": cid})
        children = [await again.request("phoenix/getConversation", {"conversationId": i}) for i in ids]
        listing = (await again.request("phoenix/listConversations", {}))["conversations"]
        assert [c["conversationId"] for c in listing] == [cid]
    assert len(fake.requests) == before, "nothing may call the model after the restart"
    return parent, children


@pytest.mark.req("REQ-BED-008", "REQ-BED-007")
async def test_restart_leaves_no_agent_running_and_the_parent_idle(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    parent, children = await _interrupted_by_restart(fake_anthropic, tmp_path)
    assert parent["status"] == "idle"
    assert [c["status"] for c in children] == ["finished", "finished"]
    [result] = [b for b in parent["messages"][-1]["content"] if b["type"] == "toolResult"]
    assert result["toolUseId"] == "toolu_spawn"
    assert "stopped because the server restarted" in result["content"]
    assert result["isError"] is False  # one agent had submitted: the answer is partial, not a failure


@pytest.mark.req("REQ-BED-008")
async def test_restart_result_says_what_each_agent_had_submitted(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    parent, _ = await _interrupted_by_restart(fake_anthropic, tmp_path)
    [result] = [b for b in parent["messages"][-1]["content"] if b["type"] == "toolResult"]
    assert "the quick answer is 7" in result["content"]
    assert "think for ever" in result["content"]


@pytest.mark.req("REQ-BED-008")
async def test_bad_agent_limits_are_reported_and_defaults_kept(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    env = {"PHOENIX_SUBAGENT_CONCURRENCY": "many", "PHOENIX_SUBAGENT_MAX_TURNS": "0"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        await s.wait_until(lambda: len(s.client.messages) >= 2, what="two warnings shown")
        texts = [m.message for m in s.client.messages]
    [concurrency] = [t for t in texts if "PHOENIX_SUBAGENT_CONCURRENCY" in t]
    assert "'many'" in concurrency and "default 4" in concurrency and "at least 1" in concurrency
    [turns] = [t for t in texts if "PHOENIX_SUBAGENT_MAX_TURNS" in t]
    assert "default 50" in turns and "at least 1" in turns


@pytest.mark.req("REQ-BED-008")
async def test_aggregate_names_each_agent_id(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.handler = router([spawn("one", "two"), Reply.text_reply("ok")], lambda task, turn: submit(task))
    async with session(fake_anthropic, tmp_path) as s:
        cid = await s.new()
        since = await send(s, cid, "go")
        ids = [a["conversationId"] for a in await spawned(s, cid)]
        await s.wait_status(cid, "idle", timeout=20, since=since)
    content = aggregate(fake_anthropic)["content"]
    assert all(agent_id in content for agent_id in ids)
