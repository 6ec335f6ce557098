"""The agent route against direct tool calls on a family of tasks (issue 25), each against both baselines.

Two real MCP servers of our own (``tests/agent/issues_server.py``, started over stdio by the SDK): ``issues``
with 1,000 GitHub-like issues (lists come back as plain lists, output schemas declared), and ``people`` (the
same program under another name) for a join. Six tasks, from the simplest (one read) to data-heavy ones where
the data must be read to decide, one where a server-side filter already exists, and issue 25's own task
(read, decide, post a comment). Three arms per task, each replayed by one fake model server:

- **agent**: the real server on the agent route: one ``run_plan`` written from the catalogue's signatures,
  an answer; its scripts use the helpers (REQ-AGENT-036) where they make a script shorter, as run_plan asks;
  its nodes run on warm engine workers (REQ-AGENT-037);
- **demand**: the same with the catalogue on demand (REQ-AGENT-038, forced by
  ``PHOENIX_AGENT_CATALOGUE_INLINE_MAX=0``): ``describe_tools`` for the task's tools, then the same plan;
- **naive**: the ask route's loop with the MCP tools as direct tools, one tool call per model turn, results
  as the tools return them;
- **fair**: direct calls used well: independent calls in parallel in one turn, results projected to the
  fields needed by the tools' own ``fields`` argument, the server-side filter where one exists.

Every arm answers with the same final text and must leave the same final state. Tokens are counted by the
fake server for every block of every request (bytes / 4; tools, system, messages, output): *raw* is all of
them; *billed* counts cached reads at 0.1x and cache writes at 1.25x (Anthropic's prices relative to
uncached input). Latency: one modelled model (time to first token + uncached input tokens x prefill rate +
output tokens x decode rate), *cold* the first run of an arm (a fresh agent server: its MCP servers start),
*warm* the median of the later ones. Goals (issue 25), each printed beside its baselines: >= 85 % fewer raw
tokens than naive on every task; >= 50 % fewer than fair on the data-heavy tasks; never more than 5 % more
than fair on the simplest; >= 30 % lower warm latency than fair on the multi-tool flows.

Run: python -m bench agent_tasks [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.agent_route import DECODE_S_PER_TOKEN, PREFILL_S_PER_TOKEN, QUICK_SCALE, TTFT_S  # noqa: E402
from phoenix_lsp.server.agent_route import CATALOGUE_INLINE_MAX  # noqa: E402

ISSUES = 1000
#: the arms: the agent route (catalogue inline), the agent route with its catalogue on demand, the two direct ones
ARMS = ("agent", "demand", "naive", "fair")
SERVER = ROOT / "tests" / "agent" / "issues_server.py"
Call = tuple[str, dict[str, Any]]  # (function name, arguments)


@dataclass
class Task:
    name: str
    prompt: str
    kind: str  # "simplest" | "data-heavy" | "server-filter" | "multi-tool"
    plan: str  # the agent's script (one node)
    tools: tuple[str, ...]  # the URIs the plan uses (described first)
    naive: tuple[tuple[Call, ...], ...]  # the naive arm's turns, one call each
    fair: tuple[tuple[Call, ...], ...]  # the fair arm's turns, parallel calls in one
    answer: str
    posts: bool = False  # the task writes a comment on issue #1


def _data() -> dict[str, Any]:
    from tests.agent.issues_server import dataset

    return dataset(ISSUES)


def _open_newest(count: int) -> list[dict[str, Any]]:
    issues = [i for i in _data()["issues"] if i["state"] == "open"]
    return sorted(issues, key=lambda i: -i["number"])[:count]


def tasks() -> list[Task]:
    from tests.agent.issues_server import AUTHORS

    l1, l2 = "mcp://issues/list_issues", "mcp://issues/search_issues"
    get, users, post = "mcp://issues/get_issue", "mcp://people/list_users", "mcp://issues/add_comment"
    module = [i["number"] for i in _open_newest(20) if "module 3;" in i["body"]]
    bug_authors = {i["author"] for i in [i for i in _open_newest(ISSUES) if "bug" in i["labels"]][:20]}
    teams = {a: ("core", "web", "data")[k % 3] for k, a in enumerate(AUTHORS)}
    newest_bugs = [i["number"] for i in sorted((i for i in _data()["issues"] if i["state"] == "open"
                                                and "bug" in i["labels"]), key=lambda i: -i["number"])[:20]]
    labels = Counter(label for i in _data()["issues"] for label in i["labels"])
    ten = [i["number"] for i in _open_newest(10) if "bug" in i["labels"]]
    comment = "Bugs among the 10 newest open issues: " + ", ".join(f"#{n}" for n in ten)
    return [
        Task("simplest: one read (the comments of issue #1)", "How many comments does issue #1 have?",
             "simplest", "{'comments': issues_get_issue(number=1)['comments']}", (get,),
             ((("issues_get_issue", {"number": 1}),),), ((("issues_get_issue", {"number": 1}),),),
             "Issue #1 has 0 comments."),
        Task("filter on content (20 newest open issues, body mentions module 3)",
             "Which of the 20 newest open issues mention module 3 in their body?", "data-heavy",
             "{'found': [i['number'] for i in having(issues_list_issues(state='open', limit=20), 'body', "
             "'module 3;')]}",
             (l1,),
             ((("issues_list_issues", {"state": "open", "limit": 20}),),),
             ((("issues_list_issues", {"state": "open", "limit": 20, "fields": ["number", "body"]}),),),
             f"These mention module 3: {', '.join(f'#{n}' for n in module) or 'none'}."),
        Task("join two servers (teams of the authors of the 20 newest open bugs)",
             "Which teams wrote the 20 newest open bugs?", "data-heavy",
             "bugs = where(issues_list_issues(state='open', limit=200), labels='bug')[:20]\n"
             "{'teams': sorted(set([i['team'] for i in join(bugs, people_list_users(), 'author', 'login')]))}",
             (l1, users),
             ((("issues_list_issues", {"state": "open", "limit": 200}),), (("people_list_users", {}),)),
             ((("issues_search_issues", {"label": "bug", "limit": 20, "fields": ["number", "author"]}),
               ("people_list_users", {})),),
             f"The teams: {', '.join(sorted({teams[a] for a in bug_authors}))}."),
        Task(f"aggregate {ISSUES} records (issues per label)", f"How many of all {ISSUES} issues carry each label?",
             "data-heavy",
             f"{{'counts': count(issues_list_issues(state='all', limit={ISSUES}), 'labels')}}", (l1,),
             ((("issues_list_issues", {"state": "all", "limit": ISSUES}),),),
             ((("issues_list_issues", {"state": "all", "limit": ISSUES, "fields": ["labels"]}),),),
             "Per label: " + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())) + "."),
        Task("a server-side filter exists (numbers of the 20 newest open bugs)",
             "List the numbers of the 20 newest open issues labelled bug.", "server-filter",
             "{'numbers': [i['number'] for i in issues_search_issues(label='bug', limit=20, fields=['number'])]}",
             (l2,), ((("issues_search_issues", {"label": "bug", "limit": 20}),),),
             ((("issues_search_issues", {"label": "bug", "limit": 20, "fields": ["number"]}),),),
             "The 20 newest open bugs: " + ", ".join(f"#{n}" for n in newest_bugs) + "."),
        Task("issue 25's task (10 newest open issues: which are bugs; post the list on #1)",
             "Among the 10 newest open issues, which are labelled bug? Post the list as a comment on issue #1.",
             "multi-tool",
             "bugs = [i['number'] for i in issues_list_issues(state='open', limit=10) if 'bug' in i['labels']]\n"
             "text = 'Bugs among the 10 newest open issues: ' + ', '.join(['#' + str(n) for n in bugs])\n"
             "issues_add_comment(number=1, body=text)\n{'bugs': bugs}", (l1, post),
             ((("issues_list_issues", {"state": "open", "limit": 10}),), (("issues_add_comment",
                                                                          {"number": 1, "body": comment}),)),
             ((("issues_list_issues", {"state": "open", "limit": 10, "fields": ["number", "labels"]}),),
              (("issues_add_comment", {"number": 1, "body": comment}),)),
             f"{comment}; posted on #1.", posts=True),
    ]


class Model:
    """Replays what a model writes for the current task and arm (set before each run)."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.arm = "agent"

    def __call__(self, body: dict[str, Any]) -> Any:
        from tests.fake_anthropic import Reply, ToolUseBlock

        task = self.task
        assert task is not None
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if self.arm == "demand":  # the catalogue on demand (REQ-AGENT-038): describe the tools, then plan
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": list(task.tools)}))
            turn -= 1
        if self.arm in ("agent", "demand"):  # the catalogue shows each call's signature: no describe_tools turn
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("run_plan", {"goal": task.prompt, "nodes": [
                    {"id": "n", "code": task.plan, "tools": list(task.tools), "outputs": []}]}))
            return Reply.text_reply(task.answer)
        turns = task.naive if self.arm == "naive" else task.fair
        if turn < len(turns):
            return Reply.tool_reply(*(ToolUseBlock(name, args) for name, args in turns[turn]))
        return Reply.text_reply(task.answer)


def usage(requests: list[Any]) -> tuple[int, float]:
    """(raw tokens, billed-equivalent tokens) of these requests."""
    raw, billed = 0, 0.0
    for request in requests:
        u = request.usage or {}
        fresh, write, read, out = (u.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                          "cache_read_input_tokens", "output_tokens"))
        raw += fresh + write + read + out
        billed += fresh + 1.25 * write + 0.1 * read + out
    return raw, billed


def reset(data: Path) -> None:
    data.write_text(json.dumps(_data()), encoding="utf-8")


def comments(data: Path) -> list[str]:
    return [c["body"] for c in json.loads(data.read_text())["comments"].get("1", [])]


def registry(tmp: Path) -> dict[str, Any]:
    # a shared machine under load can take more than the default 10 s to start a Python MCP server
    entry = {"command": [sys.executable, str(SERVER)], "trustAnnotations": True, "connectTimeoutS": 60}
    return {"issues": {**entry, "args": ["--data", str(tmp / "issues.json"), "--issues", str(ISSUES)]},
            "people": {**entry, "args": ["--data", str(tmp / "people.json"), "--name", "people"]}}


async def direct(arm: str, task: Task, fake: Any, hub: Any, workdir: Path) -> tuple[float, tuple[int, float]]:
    """One run of a direct arm: the ask route's loop, the MCP tools as direct tools, calls of a turn in parallel."""
    from phoenix_lsp.agent.contracts import function_name
    from phoenix_lsp.core.values import Style
    from phoenix_lsp.llm.cache import CacheSettings, build_request
    from phoenix_lsp.llm.client import LlmClient
    from phoenix_lsp.llm.models import DEFAULT_MODEL
    from phoenix_lsp.server import prompts
    from phoenix_lsp.tools import registry as tool_registry

    client = LlmClient(api_key="sk-ant-bench-key-0000000000", base_url=fake.base_url)
    uris = {function_name(t.uri): t.uri for t in hub.catalogue()}
    mcp_tools = [{"name": name, "description": hub.info(uri).description or name, "input_schema": hub.schema(uri)}
                 for name, uri in uris.items()]
    tools = tool_registry.definitions(False, str(workdir)) + mcp_tools
    system = prompts.system_prompt(Style.CHAT, str(workdir), False, True)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": task.prompt}]}]
    before = len(fake.requests)
    started = time.perf_counter()
    for _ in range(20):
        request = build_request(model=DEFAULT_MODEL, system=system, messages=messages, tools=tools,
                                cache=CacheSettings())
        outcome = await client.stream(request, lambda _text: None)
        content = outcome.content  # type: ignore[union-attr]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in content if b.get("type") == "tool_use"]
        if not calls:
            break
        values = await asyncio.gather(*(asyncio.to_thread(hub.call, uris[c["name"]], c["input"], 60.0)
                                        for c in calls))
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c["id"], "content": json.dumps(v)}
            for c, v in zip(calls, values, strict=True)]})
    return time.perf_counter() - started, usage(fake.requests[before:])


async def agent(task: Task, fake: Any, s: Any, data: Path) -> tuple[float, tuple[int, float]]:
    from tests.e2e.harness import last_seq, wait_idle

    cid = await s.new(policy="auto")
    await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
    before, mark = len(fake.requests), last_seq(s, cid)
    started = time.perf_counter()
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": task.prompt, "route": "agent"})
    await wait_idle(s, cid, mark, timeout=300)
    wall = time.perf_counter() - started
    text = json.dumps(fake.requests[-1].body["messages"][-1])
    assert ": ok (" in text.split("agent run", 1)[-1][:60], f"{task.name}: the plan did not succeed: {text[:800]}"
    return wall, usage(fake.requests[before:])


def _check(task: Task, data: Path, arm: str) -> None:
    if task.posts:
        assert len(comments(data)) == 1 and comments(data)[0] == task.answer.split(";")[0], (arm, comments(data))


async def _run(quick: bool) -> list[dict[str, Any]]:
    from phoenix_lsp.agent.agent_config import McpRegistry
    from phoenix_lsp.agent.mcp_hub import McpHub
    from tests.e2e.harness import session
    from tests.fake_anthropic import FakeAnthropic

    scale = QUICK_SCALE if quick else 1.0
    runs = 2 if quick else 3
    model = Model()
    fake = FakeAnthropic().start()
    fake.handler = model
    fake.ttft_base_s, fake.prefill_s_per_token = TTFT_S * scale, PREFILL_S_PER_TOKEN * scale
    fake.decode_s_per_token, fake.count_output_tokens = DECODE_S_PER_TOKEN * scale, True
    results: dict[str, dict[str, list[tuple[float, tuple[int, float]]]]] = {}
    fixed: dict[str, float] = {}
    first = tasks()[0]
    try:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            data = tmp / "issues.json"
            servers = registry(tmp)
            (tmp / "registry.json").write_text(json.dumps({"servers": servers}))
            (tmp / "capabilities.json").write_text(json.dumps({"allow": ["mcp://issues/*", "mcp://people/*"]}))
            env = {"PHOENIX_MCP_REGISTRY": str(tmp / "registry.json"),
                   "PHOENIX_CAPABILITIES": str(tmp / "capabilities.json")}
            for task in tasks():
                model.task = task
                per: dict[str, list[tuple[float, tuple[int, float]]]] = {arm: [] for arm in ARMS}
                for arm, arm_env in (("agent", env), ("demand", {**env, "PHOENIX_AGENT_CATALOGUE_INLINE_MAX": "0"})):
                    model.arm = arm
                    base = tmp / f"{arm}-{len(results)}"
                    base.mkdir()
                    async with session(fake, base, env=arm_env, check_schema=False) as s:  # a fresh server: cold
                        for _ in range(runs):
                            reset(data)
                            per[arm].append(await agent(task, fake, s, data))
                            _check(task, data, arm)
                            if arm == "agent" and task.name == first.name:
                                fixed.update(_fixed(fake.requests[-2].body))
                hub = McpHub(McpRegistry.model_validate({"servers": servers}), environ=dict(os.environ),
                             connect_timeout_s=60)
                try:
                    hub.catalogue()  # the MCP servers are up before the clock starts (like the agent's warm runs)
                    for arm in ("naive", "fair"):
                        model.arm = arm
                        for _ in range(runs):
                            reset(data)
                            per[arm].append(await direct(arm, task, fake, hub, tmp))
                            _check(task, data, arm)
                finally:
                    hub.close()
                results[task.name] = per
    finally:
        fake.stop()
    return _fixed_rows(fixed) + _rows(results)


def _tokens(value: Any) -> float:
    return len(json.dumps(value, separators=(",", ":")).encode()) / 4


def _fixed(body: dict[str, Any]) -> dict[str, float]:
    """The parts of an agent-route request that every request pays (the plan's request of the simplest task)."""
    tools = body["tools"]
    route = [t for t in tools if t["name"] in ("describe_tools", "run_plan")]
    plan = next(t for t in route if t["name"] == "run_plan")
    catalogue = plan["description"].split("\n\n", 1)[1] if "\n\n" in plan["description"] else ""
    return {"ask": sum(_tokens(t) for t in tools if t not in route) + _tokens(body.get("system", "")),
            "route": sum(_tokens(t) for t in route) - len(catalogue.encode()) / 4,
            "catalogue": len(catalogue.encode()) / 4}


def _fixed_rows(fixed: dict[str, float]) -> list[dict[str, Any]]:
    """What every agent-route request carries, raw (a cached read bills 0.1x of it)."""
    if not fixed:
        return []
    return [{"name": "fixed per request: the route's two definitions without the catalogue", "unit": "tokens",
             "value": round(fixed["route"]), "baseline_name": "the ask route's tools and system prompt",
             "baseline_value": round(fixed["ask"])},
            {"name": "fixed per request: the catalogue inline (REQ-AGENT-038: on demand above "
                     f"{CATALOGUE_INLINE_MAX} bytes)", "unit": "tokens", "value": round(fixed["catalogue"]),
             "baseline_name": "the ask route's tools and system prompt", "baseline_value": round(fixed["ask"])}]


def _rows(results: dict[str, dict[str, list[tuple[float, tuple[int, float]]]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    kinds = {t.name: t.kind for t in tasks()}
    plan_of = {t.name: t.plan for t in tasks()}
    for name, per in results.items():
        kind = kinds[name]
        raw = {arm: runs[-1][1][0] for arm, runs in per.items()}  # warm: the prompt cache as in a long session
        billed = {arm: round(runs[-1][1][1]) for arm, runs in per.items()}
        cold = {arm: runs[0][0] for arm, runs in per.items()}
        warm = {arm: statistics.median(w for w, _ in runs[1:]) for arm, runs in per.items()}
        vs_naive = 1 - raw["agent"] / raw["naive"]
        vs_fair = 1 - raw["agent"] / raw["fair"]
        goals = [f"vs naive: {vs_naive:.1%} fewer (goal >= 85%: {'met' if vs_naive >= 0.85 else 'MISSED'})"]
        if kind == "data-heavy":
            goals.append(f"vs fair: {vs_fair:.1%} fewer (goal >= 50%: {'met' if vs_fair >= 0.5 else 'MISSED'})")
        elif kind == "simplest":
            goals.append(f"vs fair: {-vs_fair:+.1%} (goal <= +5%: {'met' if -vs_fair <= 0.05 else 'MISSED'})")
        else:
            goals.append(f"vs fair: {vs_fair:.1%} fewer (no goal)")
        rows.append({"name": f"{name}: raw tokens, agent", "value": raw["agent"], "unit": "tokens",
                     "baseline_name": f"naive {raw['naive']}, fair", "baseline_value": raw["fair"],
                     "goal": "; ".join(goals)})
        rows.append({"name": f"{name}: billed-equivalent tokens (cached reads 0.1x, writes 1.25x), agent",
                     "value": billed["agent"], "unit": "tokens", "baseline_name": f"naive {billed['naive']}, fair",
                     "baseline_value": billed["fair"]})
        rows.append({"name": f"{name}: the plan's script", "value": len(plan_of[name]), "unit": "characters"})
        rows.append({"name": f"{name}: the catalogue on demand (a describe_tools turn first): raw, billed, warm s",
                     "value": f"{raw['demand']}, {billed['demand']}, {warm['demand']:.2f}", "unit": "",
                     "baseline_name": "the catalogue inline (agent)",
                     "baseline_value": f"{raw['agent']}, {billed['agent']}, {warm['agent']:.2f}"})
        faster = 1 - warm["agent"] / warm["fair"]
        goal = (f"warm vs fair: {faster:.1%} lower (goal >= 30%: {'met' if faster >= 0.3 else 'MISSED'})"
                if kind == "multi-tool" or "join" in name else f"warm vs fair: {faster:.1%} lower (no goal)")
        rows.append({"name": f"{name}: latency warm, agent", "value": round(warm["agent"], 2), "unit": "s",
                     "baseline_name": f"naive {warm['naive']:.2f}, fair", "baseline_value": round(warm["fair"], 2),
                     "goal": goal})
        rows.append({"name": f"{name}: latency cold (first run; the agent's server and MCP servers start), agent",
                     "value": round(cold["agent"], 2), "unit": "s",
                     "baseline_name": f"naive {cold['naive']:.2f}, fair", "baseline_value": round(cold["fair"], 2)})
    return rows


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
