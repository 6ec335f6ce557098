"""The triage flow of issue 14's benchmark and its token test (REQ-AGENT-024/025): a model replayed for three
arms, and the direct arms' loop.

Among the 50 records of the records MCP server, the 12 open ones get "triaged". The arms:

- **agent**: the real server on the agent route: ``describe_tools`` for the two tools the plan needs, then
  ``run_plan`` with one script that reads, filters and updates inside the engine, then an answer;
- **direct, naive**: the ask route's loop with the MCP tools offered as direct tools: one tool call per model
  turn (list the records, then update them one by one);
- **direct, fair**: the same loop, the model at its best: one search that returns only the fields needed, then
  all updates as parallel tool calls in one turn.

The direct arms are a harness, not the server (our ask route has no MCP tools): it builds its requests as the
server does (the same system prompt, the ask route's tool definitions plus the MCP tools, the same prompt
caching through ``llm/cache.py``, the same SDK client) and calls the MCP server through the same ``McpHub``.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from pathlib import Path
from typing import Any

TASK = "Mark every open record as triaged, then tell me which ones you changed."
LIST, SEARCH, UPDATE = "mcp://records/list_records", "mcp://records/search_records", "mcp://records/update_record"
TRIAGE = """rows = records_list_records()["records"]
picked = [r["id"] for r in rows if r["status"] == "open"]
for i in picked:
    records_update_record(id=i, fields={"status": "triaged"})
{"updated": picked}
"""


def expected() -> list[int]:
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


def tokens(requests: list[Any]) -> int:
    total = 0
    for request in requests:
        usage = request.usage or {}
        total += sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                               "cache_read_input_tokens", "output_tokens"))
    return total


def reset(data: Path) -> None:
    from tests.agent.records_server import dataset

    data.write_text(json.dumps(dataset(), indent=1), encoding="utf-8")


def triaged(data: Path) -> list[int]:
    return sorted(r["id"] for r in json.loads(data.read_text()) if r["status"] == "triaged")


async def direct(arm: str, fake: Any, hub: Any, workdir: Path) -> tuple[float, int]:
    """One run of a direct arm: the ask route's loop with the MCP tools as direct tools."""
    from phoenix_lsp.agent.contracts import function_name
    from phoenix_lsp.core.values import Style
    from phoenix_lsp.llm.cache import CacheSettings, build_request
    from phoenix_lsp.llm.client import LlmClient
    from phoenix_lsp.llm.models import DEFAULT_MODEL
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
        request = build_request(model=DEFAULT_MODEL, system=system, messages=messages, tools=tools,
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
    return wall, tokens(fake.requests[before:])




async def agent(fake: Any, tmp: Path, env: dict[str, str], data: Path,
                 runs: int) -> list[tuple[float, int, list[int]]]:
    """Agent-route runs in one fresh server: the first is cold (its MCP server starts), the others warm."""
    from tests.e2e.harness import last_seq, session, wait_idle

    out = []
    async with session(fake, tmp, env=env, check_schema=False) as s:
        for _ in range(runs):
            reset(data)
            cid = await s.new(policy="auto")
            await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
            before, mark = len(fake.requests), last_seq(s, cid)
            started = time.perf_counter()
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": TASK, "route": "agent"})
            await wait_idle(s, cid, mark, timeout=300)
            out.append((time.perf_counter() - started, tokens(fake.requests[before:]), triaged(data)))
    return out


def environment(tmp: Path) -> tuple[dict[str, str], Path, dict[str, Any]]:
    """The server's environment for the flow (a registry with the records server, a manifest allowing its
    tools, the token its secretsRef names), the records file, and the registry entry."""
    from tests.agent.mcp_helpers import TOKEN, TOKEN_VARIABLE, stdio_entry

    data = tmp / "records.json"
    entry = stdio_entry(data)
    (tmp / "registry.json").write_text(json.dumps({"servers": {"records": entry}}))
    (tmp / "capabilities.json").write_text(json.dumps({
        "allow": ["mcp://records/*"], "tools": {UPDATE: {"kind": "write"}}}))
    env = {"PHOENIX_MCP_REGISTRY": str(tmp / "registry.json"),
           "PHOENIX_CAPABILITIES": str(tmp / "capabilities.json"), TOKEN_VARIABLE: TOKEN}
    return env, data, entry


async def arms(fake: Any, model: Model, tmp: Path, agent_runs: int = 1, direct_runs: int = 1,
               ) -> tuple[list[tuple[float, int]], dict[str, list[tuple[float, int]]]]:
    """Every arm on ``fake`` (answered by ``model``): the agent route's runs (the first in a fresh server),
    then the direct arms; each run must leave the same final state. (wall s, tokens) per run."""
    import os

    from phoenix_lsp.agent.agent_config import McpRegistry
    from phoenix_lsp.agent.mcp_hub import McpHub
    from tests.agent.mcp_helpers import TOKEN, TOKEN_VARIABLE

    env, data, entry = environment(tmp)
    want = expected()
    model.arm = "agent"
    runs = await agent(fake, tmp, env, data, agent_runs)
    for _wall, _tokens, left in runs:
        assert left == want, f"the agent arm left {left} triaged, not {want}"
    done: dict[str, list[tuple[float, int]]] = {}
    hub = McpHub(McpRegistry.model_validate({"servers": {"records": entry}}), environ={**os.environ,
                                                                                        TOKEN_VARIABLE: TOKEN})
    try:
        for arm in ("naive", "fair"):
            model.arm = arm
            for _ in range(direct_runs):
                reset(data)
                hub.catalogue()  # the MCP server is up before the clock starts (warm, like the agent's)
                done.setdefault(arm, []).append(await direct(arm, fake, hub, tmp))
                assert triaged(data) == want, f"the {arm} arm left {triaged(data)} triaged, not {want}"
    finally:
        hub.close()
    return [(wall, used) for wall, used, _ in runs], done
