"""Shared pieces of the agent route's attack tests: the hostile MCP server (``agent_server.py``) in a server's
registry, its call log (the witness outside phoenix-lsp), and one agent turn."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from tests.e2e.harness import Session, last_seq, wait_idle
from tests.fake_anthropic import RecordedRequest, Reply, ToolUseBlock

SERVER = Path(__file__).with_name("agent_server.py")
#: the hostile server's own credential, given to it through the registry's secretsRef
TOKEN = "hst-cred-7Qx9Lm2Vb81"
TOKEN_VARIABLE = "PHX_TEST_HOSTILE_TOKEN"
WHOAMI = "mcp://hostile/whoami"
UPDATE = "mcp://hostile/update"
SLOW = "mcp://hostile/slow"
GET = "mcp://hostile/get_record"
PURGE = "mcp://hostile/get_or_purge"


def agent_env(tmp_path: Path, *, manifest: dict[str, Any] | None = None, trust: bool = False,
              budgets: dict[str, Any] | None = None, **extra: str) -> dict[str, str]:
    """The server's environment: a registry with the hostile server, a manifest (default: every tool of it,
    ``update`` a write, ``get_record`` a read by its exact URI), budgets if given."""
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"servers": {"hostile": {
        "command": [sys.executable, str(SERVER)], "args": ["--log", str(calls_log(tmp_path))],
        "secretsRef": {"HOSTILE_TOKEN": f"env:{TOKEN_VARIABLE}"}, "trustAnnotations": trust,
        # a loaded machine (the suite's own workers) can take more than the default 10 s to start a Python server
        "connectTimeoutS": 60}}}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps(manifest or {
        "allow": ["mcp://hostile/*"], "tools": {UPDATE: {"kind": "write"}, GET: {"kind": "read"},
                                                WHOAMI: {"kind": "read"}, SLOW: {"kind": "read"}}}))
    env = {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities),
           TOKEN_VARIABLE: TOKEN, **extra}
    if budgets is not None:
        (tmp_path / "budgets.json").write_text(json.dumps(budgets))
        env["PHOENIX_BUDGETS"] = str(tmp_path / "budgets.json")
    return env


def calls_log(tmp_path: Path) -> Path:
    return tmp_path / "hostile-calls.jsonl"


def calls(tmp_path: Path) -> list[dict[str, Any]]:
    """Every call the hostile server received, in order (its own log)."""
    path = calls_log(tmp_path)
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def one_node(code: str, tools: list[str], outputs: list[str] | None = None, goal: str = "look") -> ToolUseBlock:
    return ToolUseBlock("run_plan", {"goal": goal, "nodes": [
        {"id": "n", "code": code, "tools": tools, "outputs": outputs or []}]})


async def agent_turn(s: Session, cid: str, *replies: Reply, text: str = "go",
                     timeout: float = 120) -> list[RecordedRequest]:
    s.fake.enqueue(*replies)
    before, mark = len(s.fake.requests), last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, "route": "agent"})
    await wait_idle(s, cid, mark, timeout=timeout)
    return s.fake.requests[before:]


def leaks(secret: str, tmp_path: Path, requests: list[RecordedRequest]) -> list[str]:
    """Where ``secret`` (or its reversal) shows: files of the data directory, requests the model received."""
    found = []
    forms = (secret, secret[::-1])
    for path in (tmp_path / "data").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path.name}: {form[:5]}..." for form in forms if form.encode() in data]
    for index, request in enumerate(requests):
        body = json.dumps(request.body)
        found += [f"model request {index}: {form[:5]}..." for form in forms if form in body]
    return found
