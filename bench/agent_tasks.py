"""Seed 004's criteria 3 and 4 (REQ-AGENT-024/025) measured against the real ask route, on a family of tasks
(issues 25 and 37).

Two real MCP servers of our own (``tests/agent/issues_server.py``, started over stdio by the SDK): ``issues``
with 1,000 GitHub-like issues (lists come back as plain lists, output schemas declared), and ``people`` (the
same program under another name) for a join. Seven tasks, from the simplest (one read) to data-heavy ones where
the data must be read to decide, one where a server-side filter already exists, issue 25's own task (read,
decide, post a comment) and one where the ask route needs four model turns (find the newest open bug, its
author's team, post on it). Arms, each replayed by one fake model server scripted as a capable model would act
on that route:

- **agent**: the real server on the agent route, its requests carrying only what planning needs (the planning
  prompt and the route's tools, REQ-AGENT-040): on a multi-tool flow one ``run_plan`` written from the
  catalogue's signatures, its scripts using the helpers (REQ-AGENT-036), run on warm engine workers
  (REQ-AGENT-037), whose last node renders the answer (REQ-AGENT-039): one model request per task. The
  single-call tasks too: the planning prompt (REQ-AGENT-047) asks for a one-node rendered plan when a script can
  word the reply (a listing, a count, a field), and for ``call_tool`` only when the model must read the result to
  answer (judgement, prose); each of the three single-call tasks' answers is a rendering of one tool's data
  (``bench/agent_staged.py`` says why, task by task);
- **direct**: the single-call tasks with the prompt's rule off: the one tool called directly (``call_tool``,
  REQ-AGENT-041), then the reply, as the prompt taught before REQ-AGENT-047 (two model requests, as the ask route);
- **objects**: the agent arm's plans in the object form a model wrote before REQ-AGENT-045 (each node's id,
  tools, outputs, depends_on and inputs beside its code; goal and ``answer: true``): the plan as scripts off;
- **full**: the agent arm with the route's own requests off (``PHOENIX_AGENT_ASK_PROMPT=1``: the ask route's
  system prompt and tools in every request, as before REQ-AGENT-040) and so a rendered plan for every task;
- **late**: the agent arm's plans with the nodes started only once the whole plan is decoded
  (``PHOENIX_AGENT_EARLY_START=false``, the route before REQ-AGENT-044). On the multi-tool flows the
  model writes the reads first, each a node of its own (``bench/agent_staged.py``), so on the other
  arms rendering a plan they start while it still writes the rest (REQ-AGENT-044);
- **plan**: the same with the lever off: the plan's results go back to the model, which writes the reply (the
  route before issue 37: two requests; the task's one script ending with the dict of its results);
- **ask**: the baseline of criteria 3 and 4: the real server on the ask route with the same MCP tools offered
  as ``mcp__<server>__<tool>`` (issue 37); the model calls them one per turn, each result coming back in the
  next request as the route gives it (scrubbed, capped like bash output: the aggregate's 1,000 records are cut,
  so that arm's answer could not be right and its tokens are fewer than the data's);
- **demand**: the plan arm with the catalogue on demand (REQ-AGENT-038, ``PHOENIX_AGENT_CATALOGUE_INLINE_MAX=0``):
  ``describe_tools`` for the task's tools, then the same plan;
- **naive** and **fair**, for comparison (issue 25's synthetic arms: the ask route's request built in-process
  with the MCP tools as direct tools): naive one call per turn, results as the tools return them; fair the
  direct calls used well (independent calls in parallel in one turn, results projected to the fields needed,
  the server-side filter where one exists).

Each task prints, per arm, the input and output tokens of its requests (the last warm run), the output split
into what the model decodes: on the agent route the plan's code, the answer's template (the last node's last
line) and the rest (JSON framing and escaping, the tool call's block), a direct call, a describe_tools call; on
the ask route its tool calls and the answer.

Every arm shows the user the same final text (checked from the server's textDelta events for the served arms)
and leaves the same final state. Tokens are counted by the fake server for every block of every request
(bytes / 4; tools, system, messages, output): *raw* is all of them; *billed* prices cached reads and cache
writes as the product does (``llm/pricing.py``: 0.1x and 1.25x of uncached input), output at 1x. Latency: one
modelled model, the same for every arm: time to first token (0.4 s) + uncached input tokens x 1/20,000 s +
output tokens x 1/80 s (``bench/agent_route.py``'s rates, x0.25 with ``--quick``), so a model turn costs what it
would, not nothing. The reply streams as a real model's does, for every arm alike: the first token after the time
to first token and the prefill, then deltas of 16 characters (about 4 tokens), each sent when its tokens are
decoded (``stream_decode`` of the fake), so a client that acts on a partial reply gains what it would with a real
model (the ask route's text too; its tool calls run once complete, as the route does). *Cold* is the first run
of a fresh server (its MCP servers start), *warm* the median of the later runs. Goals (issue 37), judged against
the ask route: on the multi-tool flows (the join, the aggregate, issue 25's task, the four-turn task) >= 85 %
fewer raw tokens (criterion 3) and >= 30 % lower warm latency (criterion 4); on the single-call tasks never more
than 5 % worse. Each lever's effect is printed beside it (on / off, same run). Where the warm time goes is
printed per task for the agent and the ask route (:func:`breakdown`, one clock for both): the model's time
and ours before it, between turns and after its last byte, split by the server's own timing lines.

Run: python -m bench agent_tasks [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
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
from bench.agent_staged import scripts, staged  # noqa: E402
from phoenix_lsp.llm.pricing import READ, WRITE_5M  # noqa: E402
from phoenix_lsp.server.agent_route import CATALOGUE_INLINE_MAX  # noqa: E402

ISSUES = 1000
#: the arms: the agent route (catalogue inline), the agent route with its catalogue on demand, the two direct ones
ARMS = ("agent", "direct", "objects", "plan", "ask", "demand", "full", "late", "naive", "fair")
#: the arms that run through the real server, with the environment they need beside the registry's
SERVED = (("agent", "direct", "objects", "plan", "ask"), ("demand",), ("full",), ("late",))
EXTRA_ENV = ({}, {"PHOENIX_AGENT_CATALOGUE_INLINE_MAX": "0"}, {"PHOENIX_AGENT_ASK_PROMPT": "1"},
             {"PHOENIX_AGENT_EARLY_START": "false"})
#: the fake model's deltas when it streams at the decode rate (about 4 tokens each)
CHUNK_BYTES = 16
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
    rendered: str = ""  # the plan's script when it renders the answer (REQ-AGENT-039): the same nodes, 'answer' last
    posts: int = 0  # the issue the task comments on (0: none); the comment is ``answer`` up to its "; "

    @property
    def single(self) -> bool:
        """A single-call task: one tool's call answers it (the direct arm calls it directly, REQ-AGENT-041)."""
        return not self.name.startswith(MULTI)


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
    newest_bug = newest_bugs[0]
    routed = f"Routed to team {teams[next(i['author'] for i in _data()['issues'] if i['number'] == newest_bug)]}"
    return [
        Task("simplest: one read (the comments of issue #1)", "How many comments does issue #1 have?",
             "simplest", "{'comments': issues_get_issue(number=1)['comments']}", (get,),
             ((("issues_get_issue", {"number": 1}),),), ((("issues_get_issue", {"number": 1}),),),
             "Issue #1 has 0 comments.",
             "{'answer': 'Issue #1 has ' + str(issues_get_issue(number=1)['comments']) + ' comments.'}"),
        Task("filter on content (20 newest open issues, body mentions module 3)",
             "Which of the 20 newest open issues mention module 3 in their body?", "data-heavy",
             "{'found': [i['number'] for i in having(issues_list_issues(state='open', limit=20), 'body', "
             "'module 3;')]}",
             (l1,),
             ((("issues_list_issues", {"state": "open", "limit": 20}),),),
             ((("issues_list_issues", {"state": "open", "limit": 20, "fields": ["number", "body"]}),),),
             f"These mention module 3: {', '.join(f'#{n}' for n in module) or 'none'}.",
             "found = ['#' + str(i['number']) for i in having(issues_list_issues(state='open', limit=20), 'body', "
             "'module 3;')]\n{'answer': 'These mention module 3: ' + (', '.join(found) or 'none') + '.'}"),
        Task("join two servers (teams of the authors of the 20 newest open bugs)",
             "Which teams wrote the 20 newest open bugs?", "data-heavy",
             "bugs = where(issues_list_issues(state='open', limit=200), labels='bug')[:20]\n"
             "{'teams': sorted(set([i['team'] for i in join(bugs, people_list_users(), 'author', 'login')]))}",
             (l1, users),
             ((("issues_list_issues", {"state": "open", "limit": 200}),), (("people_list_users", {}),)),
             ((("issues_search_issues", {"label": "bug", "limit": 20, "fields": ["number", "author"]}),
               ("people_list_users", {})),),
             f"The teams: {', '.join(sorted({teams[a] for a in bug_authors}))}.",
             "bugs = where(issues_list_issues(state='open', limit=200), labels='bug')[:20]\n"
             "teams = sorted(set([i['team'] for i in join(bugs, people_list_users(), 'author', 'login')]))\n"
             "{'answer': 'The teams: ' + ', '.join(teams) + '.'}"),
        Task(f"aggregate {ISSUES} records (issues per label)", f"How many of all {ISSUES} issues carry each label?",
             "data-heavy",
             f"{{'counts': count(issues_list_issues(state='all', limit={ISSUES}), 'labels')}}", (l1,),
             ((("issues_list_issues", {"state": "all", "limit": ISSUES}),),),
             ((("issues_list_issues", {"state": "all", "limit": ISSUES, "fields": ["labels"]}),),),
             "Per label: " + ", ".join(f"{k} {v}" for k, v in sorted(labels.items())) + ".",
             f"c = count(issues_list_issues(state='all', limit={ISSUES}), 'labels')\n"
             "{'answer': 'Per label: ' + ', '.join([k + ' ' + str(c[k]) for k in sorted(c)]) + '.'}"),
        Task("a server-side filter exists (numbers of the 20 newest open bugs)",
             "List the numbers of the 20 newest open issues labelled bug.", "server-filter",
             "{'numbers': [i['number'] for i in issues_search_issues(label='bug', limit=20, fields=['number'])]}",
             (l2,), ((("issues_search_issues", {"label": "bug", "limit": 20}),),),
             ((("issues_search_issues", {"label": "bug", "limit": 20, "fields": ["number"]}),),),
             "The 20 newest open bugs: " + ", ".join(f"#{n}" for n in newest_bugs) + ".",
             "n = ['#' + str(i['number']) for i in issues_search_issues(label='bug', limit=20, fields=['number'])]\n"
             "{'answer': 'The 20 newest open bugs: ' + ', '.join(n) + '.'}"),
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
             f"{comment}; posted on #1.",
             "bugs = [i['number'] for i in issues_list_issues(state='open', limit=10) if 'bug' in i['labels']]\n"
             "text = 'Bugs among the 10 newest open issues: ' + ', '.join(['#' + str(n) for n in bugs])\n"
             "issues_add_comment(number=1, body=text)\n{'answer': text + '; posted on #1.'}", posts=1),
        Task("four model turns on the ask route (route the newest open bug to its author's team)",
             "Route the newest open bug: find its author's team and post 'Routed to team <team>' on it.",
             "multi-tool",
             "bug = issues_search_issues(label='bug', limit=1)[0]\n"
             "team = [u['team'] for u in people_list_users() if u['login'] == bug['author']][0]\n"
             "issues_add_comment(number=bug['number'], body='Routed to team ' + team)\n"
             "{'number': bug['number'], 'team': team}", (l2, users, post),
             ((("issues_search_issues", {"label": "bug", "limit": 1}),), (("people_list_users", {}),),
              (("issues_add_comment", {"number": newest_bug, "body": routed}),)),
             ((("issues_search_issues", {"label": "bug", "limit": 1, "fields": ["number", "author"]}),
               ("people_list_users", {})), (("issues_add_comment", {"number": newest_bug, "body": routed}),)),
             f"{routed}; posted on #{newest_bug}.",
             "bug = issues_search_issues(label='bug', limit=1, fields=['number', 'author'])[0]\n"
             "team = [u['team'] for u in people_list_users() if u['login'] == bug['author']][0]\n"
             "issues_add_comment(number=bug['number'], body='Routed to team ' + team)\n"
             "{'answer': 'Routed to team ' + team + '; posted on #' + str(bug['number']) + '.'}", posts=newest_bug),
    ]


class Model:
    """Replays what a model writes for the current task and arm (set before each run)."""

    def __init__(self) -> None:
        self.task: Task | None = None
        self.arm = "agent"
        self.log: list[dict[str, float]] = []  # each reply's output tokens by part (``split``), in request order

    def __call__(self, body: dict[str, Any]) -> Any:
        reply = self.reply(body)
        self.log.append(split(reply.content_json()))
        return reply

    def reply(self, body: dict[str, Any]) -> Any:
        from tests.fake_anthropic import Reply, ToolUseBlock

        task = self.task
        assert task is not None
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if self.arm == "demand":  # the catalogue on demand (REQ-AGENT-038): describe the tools, then plan
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": list(task.tools)}))
            turn -= 1
        if self.arm == "direct":  # one call, directly (REQ-AGENT-041): the call, then the reply
            if turn == 0:
                ((name, args),) = task.naive[0]
                return Reply.tool_reply(ToolUseBlock("call_tool", {name: args}))
            return Reply.text_reply(task.answer)
        if self.arm in ("agent", "full", "late"):  # REQ-AGENT-039/045/047: the plan renders the reply
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("run_plan", {"nodes": scripts(task.name)}))
            return Reply.text_reply("A SECOND TURN: the plan's answer was not rendered")  # fails the text check
        if self.arm == "objects":  # the plan as objects, as before REQ-AGENT-045
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("run_plan", {"goal": task.prompt, "answer": True, "nodes": (
                    staged(task.name) or [{"id": "n", "code": task.rendered, "tools": list(task.tools),
                                           "outputs": []}])}))
            return Reply.text_reply("A SECOND TURN: the plan's answer was not rendered")
        if self.arm in ("plan", "demand"):  # the catalogue shows each call's signature: no describe_tools turn
            if turn == 0:  # one script ending with the dict of its results: they go back to the model
                return Reply.tool_reply(ToolUseBlock("run_plan", {"nodes": [task.plan]}))
            return Reply.text_reply(task.answer)
        turns = task.fair if self.arm == "fair" else task.naive  # the ask route: one call per turn, as naive
        if turn < len(turns):
            return Reply.tool_reply(*(ToolUseBlock(_direct_name(name) if self.arm == "ask" else name, args)
                                      for name, args in turns[turn]))
        return Reply.text_reply(task.answer)


def _direct_name(function: str) -> str:
    """A script's function name (``issues_list_issues``) as the ask route offers the tool: ``mcp__issues__...``."""
    server, tool = function.split("_", 1)
    return f"mcp__{server}__{tool}"


def _template(code: str) -> str:
    """A plan's last node's last line: the answer's template."""
    return code.rstrip().rsplit("\n", 1)[-1]


def split(blocks: list[dict[str, Any]]) -> dict[str, float]:
    """A reply's output tokens (bytes / 4 of each block, as the fake counts them) by what the model decodes: a
    plan's code, its answer's template and the rest (JSON framing and escaping, the block itself); a direct call
    (call_tool), describe_tools; the ask route's tool calls and answer."""
    from tests.fake_anthropic import count_tokens

    parts: Counter[str] = Counter()
    for block in blocks:
        total = count_tokens(block)
        if block["type"] == "text":
            parts["answer"] += total
        elif block["name"] == "run_plan":
            codes = [n if isinstance(n, str) else n["code"] for n in block["input"]["nodes"]]
            template = len(_template(codes[-1]).encode()) / 4
            code = sum(len(c.encode()) for c in codes) / 4 - template
            parts.update({"plan code": code, "answer template": template, "framing": total - code - template})
        else:
            parts[{"call_tool": "direct call", "describe_tools": "describe"}.get(block["name"], "tool calls")] += total
    return dict(parts)


def usage(requests: list[Any]) -> tuple[int, float]:
    """(raw tokens, billed-equivalent tokens) of these requests."""
    raw, billed = 0, 0.0
    for request in requests:
        u = request.usage or {}
        fresh, write, read, out = (u.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                          "cache_read_input_tokens", "output_tokens"))
        raw += fresh + write + read + out
        billed += fresh + WRITE_5M * write + READ * read + out
    return raw, billed


def reset(data: Path) -> None:
    data.write_text(json.dumps(_data()), encoding="utf-8")


def comments(data: Path, number: int) -> list[str]:
    return [c["body"] for c in json.loads(data.read_text())["comments"].get(str(number), [])]


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


async def served(arm: str, task: Task, fake: Any, s: Any,
                 parts: list[dict[str, float]] | None = None) -> tuple[float, tuple[int, float]]:
    """One run of an arm through the real server: a new Unrestricted conversation (auto policy), the task's
    message on the arm's route, timed from sendMessage to the idle status; what the user was shown must be the
    task's answer. ``parts``: where the run's time went is appended to it (:func:`breakdown`)."""
    from tests.e2e.harness import last_seq, wait_idle

    cid = await s.new(policy="auto")
    await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
    before, mark = len(fake.requests), last_seq(s, cid)
    route = "ask" if arm == "ask" else "agent"
    log = s.data_dir / "phoenix-lsp.log"
    logged = log.stat().st_size if log.exists() else 0
    started = time.monotonic()  # the fake's clock (system-wide monotonic), for the breakdown
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": task.prompt, "route": route})
    idle = await wait_idle(s, cid, mark, timeout=300)
    wall = time.monotonic() - started
    if parts is not None:
        arrived = s.arrivals[next(i for i, e in enumerate(s.events) if e is idle)] / 1e9
        with log.open("rb") as f:
            f.seek(logged)
            lines = f.read().decode("utf-8", "replace")
        parts.append(breakdown(fake, started, arrived, fake.requests[before:], lines))
    shown = "".join(e["text"] for e in s.of("textDelta", cid) if e["seq"] > mark)
    assert shown == task.answer, f"{task.name} ({arm}): the user was shown {shown[:300]!r}"
    if arm in ("plan", "demand"):
        text = json.dumps(fake.requests[-1].body["messages"][-1])
        assert ": ok (" in text.split("agent run", 1)[-1][:60], f"{task.name}: the plan did not succeed: {text[:800]}"
    return wall, usage(fake.requests[before:])


#: a line of the server's log that times a part of the route (``phoenix_lsp.agent.timing``): "timing name=ms ..."
TIMING = re.compile(r"\btiming (?P<what>[^:]+): (?P<parts>.*)$", re.MULTILINE)
PART = re.compile(r"(?P<name>[\w.-]+)=(?P<ms>\d+(?:\.\d+)?)ms")


def breakdown(fake: Any, started: float, arrived: float, requests: list[Any], log: str) -> dict[str, float]:
    """Where one run's time went, in seconds, on one clock (the system-wide monotonic one the fake, the bench's
    client and the server all read): *model* is each request from its last byte received by the fake to the
    last byte of its reply (the modelled model, ``modelled``: TTFT + prefill + decode as the fake computed them,
    and the fake's own serving); *ours* is the rest: before the first request (sendMessage to the request), between
    a reply's last byte and the next request (the tool calls on the ask route, call_tool's on the agent route),
    and after the last reply's last byte to the idle status at the client (the plan's rest and its answer on
    the agent route). The server's own ``timing`` log lines (``agent/timing.py``) split ours further: their
    parts, summed over the run, as ``server.<part>``."""
    out = {"wall": arrived - started, "model": 0.0, "modelled": 0.0, "before": 0.0, "between": 0.0, "after": 0.0}
    last = started
    for number, request in enumerate(requests):
        end = request.last_write_at if request.last_write_at is not None else request.ended_at
        out["before" if number == 0 else "between"] += request.started_at - last
        out["model"] += end - request.started_at
        u = request.usage or {}
        out["modelled"] += (fake.ttft_base_s + (u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0))
                            * fake.prefill_s_per_token + u.get("output_tokens", 0) * fake.decode_s_per_token)
        last = end
    out["after"] = arrived - last
    for line in TIMING.finditer(log):
        for part in PART.finditer(line["parts"]):
            key = f"server.{line['what']}.{part['name']}"
            out[key] = out.get(key, 0.0) + float(part["ms"]) / 1000
    return out


def _check(task: Task, data: Path, arm: str) -> None:
    if task.posts:
        posted = comments(data, task.posts)
        assert len(posted) == 1 and posted[0] == task.answer.split(";")[0], (arm, posted)


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
    fake.stream_decode, fake.stream_chunk_bytes = True, CHUNK_BYTES  # streamed as a real model streams
    results: dict[str, dict[str, list[tuple[float, tuple[int, float]]]]] = {}
    parts: dict[str, dict[str, dict[str, float]]] = {}  # task -> arm -> its last run's tokens by part
    fixed: dict[str, float] = {}
    phases: dict[tuple[str, str], list[dict[str, float]]] = {}  # (task, arm) -> each run's breakdown
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
                # the direct arm only where one call answers: on a multi-tool flow it is no way to answer
                per: dict[str, list[tuple[float, tuple[int, float]]]] = {
                    arm: [] for arm in ARMS if arm != "direct" or task.single}
                split_of = parts.setdefault(task.name, {})
                for arms, extra in zip(SERVED, EXTRA_ENV, strict=True):
                    arm_env = {**env, **extra}
                    base = tmp / f"{arms[0]}-{len(results)}"
                    base.mkdir()
                    # a fresh server: the first run of its first arm is cold (its MCP servers start)
                    async with session(fake, base, env=arm_env, check_schema=False) as s:
                        for arm in (a for a in arms if a in per):
                            model.arm = arm
                            for _ in range(runs):
                                reset(data)
                                mark = (len(fake.requests), len(model.log))
                                runs_of = phases.setdefault((task.name, arm), [])
                                per[arm].append(await served(arm, task, fake, s, runs_of))
                                split_of[arm] = _parts(fake.requests[mark[0]:], model.log[mark[1]:], scale)
                                _check(task, data, arm)
                                if arm in ("agent", "full") and task.name == first.name:
                                    fixed.update({f"{arm} {k}": v for k, v in _fixed(fake.requests[-1].body).items()})
                hub = McpHub(McpRegistry.model_validate({"servers": servers}), environ=dict(os.environ),
                             connect_timeout_s=60)
                try:
                    hub.catalogue()  # the MCP servers are up before the clock starts (like the agent's warm runs)
                    for arm in ("naive", "fair"):
                        model.arm = arm
                        for _ in range(runs):
                            reset(data)
                            mark = (len(fake.requests), len(model.log))
                            per[arm].append(await direct(arm, task, fake, hub, tmp))
                            split_of[arm] = _parts(fake.requests[mark[0]:], model.log[mark[1]:], scale)
                            _check(task, data, arm)
                finally:
                    hub.close()
                results[task.name] = per
    finally:
        fake.stop()
    model_row = {"name": "the modelled model, the same fake server for every arm: time to first token "
                         f"{TTFT_S * scale:.3g} s + uncached input tokens x {PREFILL_S_PER_TOKEN * scale * 1e6:.3g} us "
                         f"+ output tokens x {DECODE_S_PER_TOKEN * scale * 1e3:.3g} ms, streamed: the first token "
                         f"after the first two, then {CHUNK_BYTES}-character deltas each sent when decoded (every arm "
                         "alike)", "value": f"{runs} runs per arm", "unit": ""}
    return [model_row, *_fixed_rows(fixed), *_rows(results, parts), *_phase_rows(phases)]


def _parts(requests: list[Any], replies: list[dict[str, float]], scale: float) -> dict[str, float]:
    """One run's requests: input tokens (all; uncached: fresh and cache writes), output tokens, the output by
    part, and the seconds the modelled model alone takes for them (time to first token, prefill of the uncached
    input, decoding of the output, at the run's rates): the latency floor of that arm whatever runs the tools."""
    out: Counter[str] = Counter()
    for request in requests:
        u = request.usage or {}
        uncached = u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0)
        out["in"] += uncached + u.get("cache_read_input_tokens", 0)
        out["uncached"] += uncached
        out["out"] += u.get("output_tokens", 0)
        out["model s"] += scale * (TTFT_S + uncached * PREFILL_S_PER_TOKEN + u.get("output_tokens", 0)
                                   * DECODE_S_PER_TOKEN)
    for reply in replies:
        out.update(reply)
    out["requests"] = len(requests)
    return dict(out)


def _parts_text(split: dict[str, float]) -> str:
    order = ("plan code", "answer template", "framing", "direct call", "describe", "tool calls", "answer")
    shown = ", ".join(f"{k} {split[k]:.0f}" for k in order if split.get(k))
    return (f"{split['requests']:.0f} req, in {split['in']:.0f} ({split['uncached']:.0f} uncached), out "
            f"{split['out']:.0f} ({shown}), the model alone {split['model s']:.2f} s")


def _tokens(value: Any) -> float:
    return len(json.dumps(value, separators=(",", ":")).encode()) / 4


def _fixed(body: dict[str, Any]) -> dict[str, float]:
    """The parts of an agent-route request that every request pays: the system prompt and the tools without
    run_plan's catalogue, and the catalogue."""
    plan = next(t for t in body["tools"] if t["name"] == "run_plan")
    catalogue = plan["description"].split("\n\n", 1)[1] if "\n\n" in plan["description"] else ""
    return {"fixed": sum(_tokens(t) for t in body["tools"]) + _tokens(body.get("system", ""))
            - len(catalogue.encode()) / 4, "catalogue": len(catalogue.encode()) / 4}


def _fixed_rows(fixed: dict[str, float]) -> list[dict[str, Any]]:
    """What every agent-route request carries, raw (a cached read bills 0.1x of it)."""
    if "agent fixed" not in fixed or "full fixed" not in fixed:
        return []
    before = ("before REQ-AGENT-040 (PHOENIX_AGENT_ASK_PROMPT=1): the ask route's system prompt and tools, the "
              "route's two")
    return [{"name": "fixed per request: the planning prompt and the route's tools without the catalogue "
                     "(REQ-AGENT-040)", "unit": "tokens", "value": round(fixed["agent fixed"]),
             "baseline_name": before, "baseline_value": round(fixed["full fixed"])},
            {"name": "fixed per request: the catalogue inline (REQ-AGENT-038: on demand above "
                     f"{CATALOGUE_INLINE_MAX} bytes)", "unit": "tokens", "value": round(fixed["agent catalogue"]),
             "baseline_name": before, "baseline_value": round(fixed["full fixed"])}]


#: the multi-tool flows the goals of REQ-AGENT-024/025 are about (issue 37): the rest are single-call tasks
MULTI = ("join two servers", "aggregate", "issue 25's task", "four model turns")


def _verdict(saved: float, multi: bool, goal: float) -> str:
    """'met' or 'MISSED' for a saving: at least ``goal`` on a multi-tool flow, never more than 5 % worse else."""
    return "met" if (saved >= goal if multi else saved >= -0.05) else "MISSED"


def _rows(results: dict[str, dict[str, list[tuple[float, tuple[int, float]]]]],
          parts: dict[str, dict[str, dict[str, float]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    plan_of = {t.name: _script(t) for t in tasks()}
    verdicts: list[tuple[str, str, str]] = []
    for name, per in results.items():
        multi = name.startswith(MULTI)
        raw = {arm: runs[-1][1][0] for arm, runs in per.items()}  # warm: the prompt cache as in a long session
        billed = {arm: round(runs[-1][1][1]) for arm, runs in per.items()}
        cold = {arm: runs[0][0] for arm, runs in per.items()}
        warm = {arm: statistics.median(w for w, _ in runs[1:]) for arm, runs in per.items()}
        fewer = 1 - raw["agent"] / raw["ask"]
        faster = 1 - warm["agent"] / warm["ask"]
        what = "multi-tool flow" if multi else "single call"
        c3 = (f"{fewer:.1%} fewer raw tokens than the ask route ({what}: goal "
              f"{'>= 85 % fewer' if multi else 'never > 5 % more'}): {_verdict(fewer, multi, 0.85)}")
        c4 = (f"{faster:.1%} lower warm latency than the ask route ({what}: goal "
              f"{'>= 30 % lower' if multi else 'never > 5 % higher'}): {_verdict(faster, multi, 0.30)}")
        verdicts += [(name, "3", _verdict(fewer, multi, 0.85)), (name, "4", _verdict(faster, multi, 0.30))]
        rows.append({"name": f"{name}: raw tokens, agent route", "value": raw["agent"], "unit": "tokens",
                     "baseline_name": f"(naive {raw['naive']}, fair {raw['fair']}) the ask route",
                     "baseline_value": raw["ask"], "goal": f"criterion 3: {c3}"})
        rows.append({"name": f"{name}: billed tokens (cached reads 0.1x, writes 1.25x, as llm/pricing.py), agent route",
                     "value": billed["agent"], "unit": "tokens",
                     "baseline_name": f"(naive {billed['naive']}, fair {billed['fair']}) the ask route",
                     "baseline_value": billed["ask"]})
        rows.append({"name": f"{name}: latency warm, agent route", "value": round(warm["agent"], 2), "unit": "s",
                     "baseline_name": f"(naive {warm['naive']:.2f}, fair {warm['fair']:.2f}) the ask route",
                     "baseline_value": round(warm["ask"], 2), "goal": f"criterion 4: {c4}"})
        if multi:  # the arithmetic of criterion 4: the model's own seconds, agent vs ask, whatever runs the tools
            agent_s, ask_s = parts[name]["agent"]["model s"], parts[name]["ask"]["model s"]
            rows.append({"name": f"{name}: the modelled model alone (TTFT, prefill, decoding), agent route: "
                                 f"{1 - agent_s / ask_s:.1%} lower than the ask route's; the rest of the measured "
                                 "warm latency runs the tools", "value": round(agent_s, 2), "unit": "s",
                         "baseline_name": f"the ask route ({parts[name]['ask']['requests']:.0f} requests; measured "
                                          f"warm: agent {warm['agent']:.2f}, ask {warm['ask']:.2f})",
                         "baseline_value": round(ask_s, 2)})
        rows.append({"name": f"{name}: tokens of each arm's requests (last warm run): input; output by part",
                     "value": "; ".join(f"{arm}: {_parts_text(split)}" for arm, split in parts[name].items()),
                     "unit": ""})
        rows.append({"name": f"{name}: the plan as scripts (REQ-AGENT-045) on, a rendered plan: raw, billed, warm s, "
                             "output tokens",
                     "value": f"{raw['agent']}, {billed['agent']}, {warm['agent']:.2f}, "
                              f"{parts[name]['agent']['out']:.0f}", "unit": "",
                     "baseline_name": "off (the object form: id, tools, outputs, depends_on, inputs, goal, answer)",
                     "baseline_value": f"{raw['objects']}, {billed['objects']}, {warm['objects']:.2f}, "
                                       f"{parts[name]['objects']['out']:.0f}"})
        rows.append({"name": f"{name}: the route's own requests (REQ-AGENT-040) on, a rendered plan: raw, billed, "
                             "warm s", "value": f"{raw['agent']}, {billed['agent']}, {warm['agent']:.2f}",
                     "unit": "", "baseline_name": "off (PHOENIX_AGENT_ASK_PROMPT=1: the ask route's prompt and tools "
                                                  "in every request)",
                     "baseline_value": f"{raw['full']}, {billed['full']}, {warm['full']:.2f}"})
        if not multi:  # the prompt's rule (REQ-AGENT-047) on / off; the verdicts above judge what it teaches
            direct = 1 - warm["direct"] / warm["ask"]
            rows.append({"name": f"{name}: the prompt's rule for one call (REQ-AGENT-047) on, a one-node rendered "
                                 f"plan: raw, billed, warm s, requests ({faster:.1%} lower warm latency than the "
                                 "ask route)",
                         "value": f"{raw['agent']}, {billed['agent']}, {warm['agent']:.2f}, "
                                  f"{parts[name]['agent']['requests']:.0f}", "unit": "",
                         "baseline_name": f"off (the direct call, REQ-AGENT-041: call_tool, then the reply; "
                                          f"{direct:.1%} lower)",
                         "baseline_value": f"{raw['direct']}, {billed['direct']}, {warm['direct']:.2f}, "
                                           f"{parts[name]['direct']['requests']:.0f}"})
        rows.append({"name": f"{name}: the rendered answer (REQ-AGENT-039) on: raw, billed, warm s",
                     "value": f"{raw['agent']}, {billed['agent']}, {warm['agent']:.2f}", "unit": "",
                     "baseline_name": "off (the plan's results go back to the model, which writes the reply; "
                                      "the route's own requests on)",
                     "baseline_value": f"{raw['plan']}, {billed['plan']}, {warm['plan']:.2f}"})
        rows.append({"name": f"{name}: early start (REQ-AGENT-044) on: warm s, cold s"
                             + (" (reads first, nodes of their own)" if staged(name) else " (one node: nothing "
                                "starts before the plan is complete)"),
                     "value": f"{warm['agent']:.2f}, {cold['agent']:.2f}", "unit": "",
                     "baseline_name": "off (PHOENIX_AGENT_EARLY_START=false: the same plan, run once decoded)",
                     "baseline_value": f"{warm['late']:.2f}, {cold['late']:.2f}"})
        rows.append({"name": f"{name}: the catalogue on demand (lever off, a describe_tools turn first): raw, "
                             "billed, warm s",
                     "value": f"{raw['demand']}, {billed['demand']}, {warm['demand']:.2f}", "unit": "",
                     "baseline_name": "the catalogue inline (lever off)",
                     "baseline_value": f"{raw['plan']}, {billed['plan']}, {warm['plan']:.2f}"})
        rows.append({"name": f"{name}: the plan's script (the answer rendered)", "value": len(plan_of[name]),
                     "unit": "characters"})
        rows.append({"name": f"{name}: latency cold (first run of a fresh server: its MCP servers start), agent",
                     "value": round(cold["agent"], 2), "unit": "s",
                     "baseline_name": f"naive {cold['naive']:.2f}, fair", "baseline_value": round(cold["fair"], 2)})
    missed = [f"{n.split(' (')[0]} (criterion {c})" for n, c, v in verdicts if v != "met"]
    rows.append({"name": "verdicts against the ask route, criteria 3 and 4 on every task",
                 "value": f"{len(verdicts) - len(missed)} of {len(verdicts)} met", "unit": "",
                 "goal": "missed: " + ("; ".join(missed) if missed else "none"), "met": not missed})
    return rows


def _phase_rows(phases: dict[tuple[str, str], list[dict[str, float]]]) -> list[dict[str, Any]]:
    """Per task, where the warm time of the agent route and of the ask route goes (:func:`breakdown`): each
    part's median over the warm runs, in seconds."""
    rows: list[dict[str, Any]] = []
    names = list(dict.fromkeys(name for name, _arm in phases))
    for name in names:
        shown = {arm: _phases_text(phases.get((name, arm), [])[1:]) for arm in ("agent", "ask")}
        rows.append({"name": f"{name}: where the warm time goes, agent route", "value": shown["agent"], "unit": "",
                     "baseline_name": "the ask route", "baseline_value": shown["ask"]})
    return rows


def _phases_text(runs: list[dict[str, float]]) -> str:
    if not runs:
        return "-"
    m = {key: statistics.median(run.get(key, 0.0) for run in runs) for key in runs[0] | runs[-1]}
    ours = m["before"] + m["between"] + m["after"]
    server = ", ".join(f"{key.removeprefix('server.')} {value:.3f}" for key, value in sorted(m.items())
                       if key.startswith("server."))
    return (f"wall {m['wall']:.3f} s = model {m['model']:.3f} (modelled {m['modelled']:.3f}) + ours {ours:.3f} "
            f"(before the model {m['before']:.3f}, between turns {m['between']:.3f}, after its last byte "
            f"{m['after']:.3f}){'; the server says: ' + server if server else ''}")


def _script(task: Task) -> str:
    """The agent arm's scripts, all nodes together."""
    return "\n".join(scripts(task.name))


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
