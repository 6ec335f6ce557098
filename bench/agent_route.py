"""The agent route against direct tool calls (issue 14; REQ-AGENT-024 fewer tokens, REQ-AGENT-025 lower latency).

The task: among the 50 records of a real MCP server (``tests/agent/records_server.py``, the same SDK, started
over stdio), mark "triaged" every open record (12 of them). Three arms do it:

- **agent**: the real server on the agent route: the model calls ``describe_tools`` for the two tools it needs,
  then ``run_plan`` with one script that reads, filters and updates inside the sandboxed engine, then answers
  from the compact result;
- **direct, naive**: the ask route's loop with the MCP tools offered as direct tools: one tool call per model
  turn (list the records, then update them one by one);
- **direct, fair**: the same loop, the model at its best: one search that returns only the fields needed, then
  all updates as parallel tool calls in one turn.

The direct arms are a harness, not the server: our ask route has no MCP tools. The harness builds its requests
exactly as the server does (the same system prompt, the ask route's tool definitions plus the MCP tools, the
same prompt caching through ``llm/cache.py``, the same SDK client), and calls the MCP server through the same
``McpHub``.

One fake model server (in this process) answers every arm. It replays what a model would write for each arm
(the replies below), and its latency per request is: time to first token + uncached input tokens x prefill
rate + output tokens x decode rate, with fixed rates. Tokens are counted the same way for every request of every
arm: bytes / 4 of every block (tools, system, messages; cached ones included) plus the output.

Figures: tokens per arm (agent as a ratio of each direct arm), wall time per arm (agent cold: a fresh server
that starts its MCP server, agent warm: the next run), and a check that every arm left the same final state.
Run: python -m bench agent_route [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# fixed latency model: a fast hosted model (0.4 s to first token, 20k tokens/s prefill, 80 tokens/s decode)
TTFT_S = 0.4
PREFILL_S_PER_TOKEN = 1 / 20_000
DECODE_S_PER_TOKEN = 1 / 80
QUICK_SCALE = 0.25  # --quick: every rate x this (same ratios, shorter run)

TASK = "Mark every open record as triaged, then tell me which ones you changed."
LIST, SEARCH, UPDATE = "mcp://records/list_records", "mcp://records/search_records", "mcp://records/update_record"
TRIAGE = """rows = records_list_records()["records"]
picked = [r["id"] for r in rows if r["status"] == "open"]
for i in picked:
    records_update_record(id=i, fields={"status": "triaged"})
{"updated": picked}
"""


def _expected() -> list[int]:
    from tests.agent.records_server import dataset

    return sorted(r["id"] for r in dataset() if r["status"] == "open")


# ------------------------------------------------------------------------------------- the replayed model


def _last_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    last = body["messages"][-1]
    content = last["content"] if isinstance(last["content"], list) else []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def _text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return str(content or "")


def _assistant_turns(body: dict[str, Any]) -> int:
    return sum(1 for m in body["messages"] if m["role"] == "assistant")


class Model:
    """What a model writes in each arm, decided from the request like a model would: from the tools offered
    and the results so far. ``arm`` is set by the benchmark before each run."""

    def __init__(self) -> None:
        self.arm = "agent"

    def __call__(self, body: dict[str, Any]) -> Any:
        from tests.fake_anthropic import Reply, ToolUseBlock

        turn = _assistant_turns(body)
        results = _last_results(body)
        if self.arm == "agent":
            if turn == 0:
                return Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": [LIST, UPDATE]}),
                                        text="I'll check the arguments of the two tools I need.")
            if turn == 1:
                plan = {"goal": "triage the open records", "constraints": ["only the open ones"],
                        "nodes": [{"id": "triage", "code": TRIAGE, "tools": [LIST, UPDATE], "outputs": ["updated"]}]}
                return Reply.tool_reply(ToolUseBlock("run_plan", plan), text=(
                    "One script can read the records, pick the open ones and update "
                    "them, so no record has to pass through this conversation."))
            ids = [int(i) for i in re.findall(r"\d+", _text(results[0]).split('"updated"', 1)[-1].split("]")[0])]
            return Reply.text_reply(self._answer(ids))
        if turn == 0:
            if self.arm == "naive":
                return Reply.tool_reply(ToolUseBlock("records_list_records", {}), text="Let me list the records.")
            return Reply.tool_reply(ToolUseBlock("records_search_records", {
                "status": "open", "fields": ["id"]}), text="Let me find the open ones.")
        found = self._found(body)
        done = sum(1 for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])
                   if isinstance(b, dict) and b.get("type") == "tool_use" and b.get("name") == "records_update_record")
        if self.arm == "fair" and done == 0:
            return Reply.tool_reply(*(ToolUseBlock("records_update_record", {"id": i, "fields": {"status": "triaged"}})
                                      for i in found), text=f"Updating the {len(found)} records.")
        if self.arm == "naive" and done < len(found):
            return Reply.tool_reply(ToolUseBlock("records_update_record", {
                "id": found[done], "fields": {"status": "triaged"}}), text=f"Updating record {found[done]}.")
        return Reply.text_reply(self._answer(found))

    @staticmethod
    def _found(body: dict[str, Any]) -> list[int]:
        """The ids the first tool result (the list or the search) shows, as the model would read them."""
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    rows = json.loads(_text(block))["records"]
                    return sorted(r["id"] for r in rows if r.get("status", "open") == "open")
        return []

    @staticmethod
    def _answer(ids: list[int]) -> str:
        return (f"Done: I marked {len(ids)} records as triaged, every record that was open: "
                f"{', '.join(map(str, ids))}. Nothing else was changed.")


# ------------------------------------------------------------------------------------------------- arms


def _tokens(requests: list[Any]) -> int:
    total = 0
    for request in requests:
        usage = request.usage or {}
        total += sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens", "output_tokens"))
    return total


def _reset(data: Path) -> None:
    from tests.agent.records_server import dataset

    data.write_text(json.dumps(dataset(), indent=1), encoding="utf-8")


def _triaged(data: Path) -> list[int]:
    return sorted(r["id"] for r in json.loads(data.read_text()) if r["status"] == "triaged")


async def _direct(arm: str, fake: Any, hub: Any, workdir: Path) -> tuple[float, int]:
    """One run of a direct arm: the ask route's loop with the MCP tools as direct tools."""
    from phoenix_lsp.agent.contracts import function_name
    from phoenix_lsp.core.values import Style
    from phoenix_lsp.llm.cache import CacheSettings, build_request
    from phoenix_lsp.llm.client import LlmClient
    from phoenix_lsp.server import prompts
    from phoenix_lsp.tools import registry

    client = LlmClient(api_key="sk-ant-bench-key-0000000000", base_url=fake.base_url)
    uris = {function_name(u): u for u in (LIST, SEARCH, UPDATE)}
    mcp_tools = [{"name": name, "description": hub.info(uri).description or name, "input_schema": hub.schema(uri)}
                 for name, uri in uris.items()]
    tools = registry.definitions(False, str(workdir)) + mcp_tools
    system = prompts.system_prompt(Style.CHAT, str(workdir), False, True)
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": TASK}]}]
    before = len(fake.requests)
    started = time.perf_counter()
    for _ in range(40):
        request = build_request(model="claude-sonnet-4-5", system=system, messages=messages, tools=tools,
                                cache=CacheSettings())
        outcome = await client.stream(request, lambda _text: None)
        content = outcome.content  # type: ignore[union-attr]
        messages.append({"role": "assistant", "content": content})
        calls = [b for b in content if b.get("type") == "tool_use"]
        if not calls:
            break
        results = []
        for call in calls:
            value = await asyncio.to_thread(hub.call, uris[call["name"]], call["input"], 30.0)
            results.append({"type": "tool_result", "tool_use_id": call["id"], "content": json.dumps(value)})
        messages.append({"role": "user", "content": results})
    wall = time.perf_counter() - started
    return wall, _tokens(fake.requests[before:])


async def _agent(fake: Any, tmp: Path, env: dict[str, str], data: Path,
                 runs: int) -> list[tuple[float, int, list[int]]]:
    """Agent-route runs in one fresh server: the first is cold (its MCP server starts), the others warm."""
    from tests.e2e.harness import last_seq, session, wait_idle

    out = []
    async with session(fake, tmp, env=env, check_schema=False) as s:
        for _ in range(runs):
            _reset(data)
            cid = await s.new(approvalPolicy="auto")
            await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
            before, mark = len(fake.requests), last_seq(s, cid)
            started = time.perf_counter()
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": TASK, "route": "agent"})
            await wait_idle(s, cid, mark, timeout=300)
            out.append((time.perf_counter() - started, _tokens(fake.requests[before:]), _triaged(data)))
    return out


async def _run(quick: bool) -> list[dict[str, Any]]:
    from phoenix_lsp.agent.agent_config import McpRegistry
    from phoenix_lsp.agent.mcp_hub import McpHub
    from tests.agent.mcp_helpers import TOKEN, TOKEN_VARIABLE, stdio_entry
    from tests.fake_anthropic import FakeAnthropic

    scale = QUICK_SCALE if quick else 1.0
    model = Model()
    fake = FakeAnthropic().start()
    fake.handler = model
    fake.ttft_base_s, fake.prefill_s_per_token = TTFT_S * scale, PREFILL_S_PER_TOKEN * scale
    fake.decode_s_per_token, fake.count_output_tokens = DECODE_S_PER_TOKEN * scale, True
    expected = _expected()
    rows: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            data = tmp / "records.json"
            entry = stdio_entry(data)
            (tmp / "registry.json").write_text(json.dumps({"servers": {"records": entry}}))
            (tmp / "capabilities.json").write_text(json.dumps({
                "allow": ["mcp://records/*"], "tools": {UPDATE: {"kind": "write"}}}))
            env = {"PHOENIX_MCP_REGISTRY": str(tmp / "registry.json"),
                   "PHOENIX_CAPABILITIES": str(tmp / "capabilities.json"), TOKEN_VARIABLE: TOKEN}
            os.environ[TOKEN_VARIABLE] = TOKEN
            model.arm = "agent"
            agent = await _agent(fake, tmp, env, data, runs=2 if quick else 3)
            hub = McpHub(McpRegistry.model_validate({"servers": {"records": entry}}))
            try:
                direct: dict[str, tuple[float, int]] = {}
                for arm in ("naive", "fair"):
                    model.arm = arm
                    _reset(data)
                    hub.catalogue()  # the MCP server is up before the clock starts (warm, like the agent's)
                    direct[arm] = await _direct(arm, fake, hub, tmp)
                    assert _triaged(data) == expected, f"{arm} arm left {_triaged(data)}, not {expected}"
            finally:
                hub.close()
    finally:
        fake.stop()
    for _wall, _tokens_used, triaged in agent:
        assert triaged == expected, f"agent arm left {triaged}, not {expected}"
    cold_wall, agent_tokens, _ = agent[0]
    warm = sorted(w for w, _t, _x in agent[1:])
    warm_wall = warm[len(warm) // 2]
    unit = "tokens"
    for arm, (_wall, tokens) in direct.items():
        saved = 1 - agent_tokens / tokens
        rows.append({"name": f"tokens, agent vs direct {arm} ({saved:.1%} fewer; goal >= 85%)",
                     "value": agent_tokens, "unit": unit, "baseline_name": f"direct {arm}", "baseline_value": tokens})
    for arm, (wall, _tokens) in direct.items():
        faster = 1 - warm_wall / wall
        rows.append({"name": f"wall time, agent warm vs direct {arm} ({faster:.1%} lower; goal >= 30%)",
                     "value": round(warm_wall, 2), "unit": "s", "baseline_name": f"direct {arm}",
                     "baseline_value": round(wall, 2)})
    rows.append({"name": "wall time, agent cold (fresh server: MCP server start, catalogue)",
                 "value": round(cold_wall, 2), "unit": "s", "baseline_name": "agent warm",
                 "baseline_value": round(warm_wall, 2)})
    rows.append({"name": f"final state: every arm triaged the same {len(expected)} records", "value": "yes"})
    return rows


def figures(quick: bool = False) -> list[dict[str, Any]]:
    return asyncio.run(_run(quick))


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures("--quick" in sys.argv))
