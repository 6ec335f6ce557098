"""End-to-end: the agent route as a new user meets it (issue 25), through the real server, the real sandboxed
script engine and an MCP server of our own that a user could have written (``tests/agent/issues_server.py``:
a GitHub-like issues server whose tools return plain lists and declare output schemas), started by the server
from its registry over stdio. The model is the fake Anthropic server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agent.issues_server import expected_bugs
from tests.e2e.harness import Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock

pytestmark = [pytest.mark.slow]

SERVER = Path(__file__).parents[1] / "agent" / "issues_server.py"
LIST = "mcp://issues/list_issues"
GET = "mcp://issues/get_issue"
COMMENTS = "mcp://issues/list_comments"
COMMENT = "mcp://issues/add_comment"


def issues_entry(data: Path, *extra: str, trust: bool = True, **more: Any) -> dict[str, Any]:
    return {"command": [sys.executable, str(SERVER)], "args": ["--data", str(data), *extra],
            "trustAnnotations": trust, "connectTimeoutS": 60, **more}  # a loaded machine starts it slowly


def issues_files(tmp_path: Path, *, manifest: dict[str, Any] | None = None, trust: bool = True,
                 entry: dict[str, Any] | None = None) -> dict[str, str]:
    """The server's environment: a registry with the issues server, a manifest allowing its tools."""
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"servers": {"issues": entry or issues_entry(tmp_path / "issues.json",
                                                                                 trust=trust)}}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps(manifest or {"allow": ["mcp://issues/*"]}))
    return {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities)}


async def agent_turn(s: Session, cid: str, *replies: Reply, text: str = "go") -> list[RecordedRequest]:
    s.fake.enqueue(*replies)
    before, mark = len(s.fake.requests), last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, "route": "agent"})
    await wait_idle(s, cid, mark, timeout=120)
    return s.fake.requests[before:]


def one_node(code: str, tools: list[str], outputs: list[str], goal: str = "issues") -> ToolUseBlock:
    return ToolUseBlock("run_plan", {"goal": goal, "nodes": [
        {"id": "n", "code": code, "tools": tools, "outputs": outputs}]})


async def run_one(s: Session, cid: str, code: str, tools: list[str], outputs: list[str]) -> str:
    block = one_node(code, tools, outputs)
    requests = await agent_turn(s, cid, Reply.tool_reply(block), Reply.text_reply("ok"))
    return str(tool_results(requests[1])[block.id]["content"])


COUNT = "{'count': issues_get_issue(number=1)['comments']}"


@pytest.mark.req("REQ-AGENT-019", "REQ-AGENT-029")
async def test_a_read_after_a_write_sees_the_write_in_the_same_and_a_new_conversation(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        assert '"count":0' in await run_one(s, cid, COUNT, [GET], ["count"])
        posted = await run_one(s, cid, "{'posted': issues_add_comment(number=1, body='seen')['id']}",
                               [COMMENT], ["posted"])
        assert '"posted":1' in posted, posted
        assert '"count":1' in await run_one(s, cid, COUNT, [GET], ["count"])  # the same plan, the new data
        other = await unrestricted(s, "auto")
        assert '"count":1' in await run_one(s, other, COUNT, [GET], ["count"])
        # a write made outside phoenix-lsp (anyone's) is seen too
        data = json.loads((tmp_path / "issues.json").read_text())
        data["comments"]["1"].append({"id": 2, "author": "someone", "body": "me too"})
        next(i for i in data["issues"] if i["number"] == 1)["comments"] = 2
        (tmp_path / "issues.json").write_text(json.dumps(data))
        assert '"count":2' in await run_one(s, cid, COUNT, [GET], ["count"])
        assert expected_bugs()  # the dataset has bugs among the newest open issues (used by the other tests)


@pytest.mark.req("REQ-AGENT-030", "REQ-AGENT-017")
async def test_a_list_reaches_the_script_as_the_list_and_describe_tools_shows_what_it_returns(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """The plan a model writes from the documentation runs on its first try: the task of issue 25."""
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        describe = ToolUseBlock("describe_tools", {"tools": [LIST, COMMENT]})
        code = ("newest = issues_list_issues(state='open', limit=10)\n"
                "bugs = [i['number'] for i in newest if 'bug' in i['labels']]\n"
                "issues_add_comment(number=1, body='bugs: ' + ', '.join([str(n) for n in bugs]))\n"
                "{'bugs': bugs}")
        run = one_node(code, [LIST, COMMENT], ["bugs"])
        requests = await agent_turn(s, cid, Reply.tool_reply(describe), Reply.tool_reply(run),
                                    Reply.text_reply("posted"))
        described = str(tool_results(requests[1])[describe.id]["content"])
        lines = {line.split(" ", 1)[0]: line for line in described.splitlines()}
        # the list tool's output schema is the list itself (not the SDK's wrapper), with the item's fields
        returns = json.loads(lines[LIST].split("; returns: ", 1)[1])
        assert returns["type"] == "array" and "result" not in json.dumps(returns)
        assert {"number", "labels", "title"} <= set(json.dumps(returns["$defs"]).replace('"', " ").split())
        assert "issues_list_issues(**arguments)" in lines[LIST] and '"limit"' in lines[LIST]
        assert "; returns: " in lines[COMMENT] and '"Title"' not in described  # compact: no derived titles
        # run_plan's catalogue already shows each call in one line, its result's shape included
        assert (f"{LIST} [read] issues_list_issues(state: str = 'open', limit: int = 30, fields: list[str] | None "
                "= None) -> list[{number, title, state, labels, author, comments, body}]") in catalogue_of(requests[0])
        summary = str(tool_results(requests[2])[run.id]["content"])
        bugs = expected_bugs()
        assert json.dumps({"bugs": bugs}, separators=(",", ":")) in summary, summary
        data = json.loads((tmp_path / "issues.json").read_text())
        assert data["comments"]["1"][0]["body"] == "bugs: " + ", ".join(str(n) for n in bugs)


def catalogue_of(request: RecordedRequest) -> str:
    return str(next(t for t in request.body["tools"] if t["name"] == "run_plan")["description"])


@pytest.mark.req("REQ-AGENT-033")
async def test_an_allow_only_manifest_says_why_its_reads_count_as_writes_and_what_to_change(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path, trust=False)) as s:
        cid = await s.new()  # Restricted
        block = one_node("{'n': len(issues_list_issues())}", [LIST], ["n"])
        requests = await agent_turn(s, cid, Reply.tool_reply(block), Reply.text_reply("refused"))
        catalogue = catalogue_of(requests[0])
        assert f"{LIST} [write]" in catalogue  # the safe default holds...
        assert "count as writes only because nothing says they read" in catalogue  # ...and is explained
        assert '"kind": "read"' in catalogue and "trustAnnotations" in catalogue
        text = str(tool_results(requests[1])[block.id]["content"])
        assert "DENIED/MODE_DENIED" in text and "request_mode_upgrade" in text
        assert f"{LIST} counts as a write only because nothing says it reads" in text, text
        assert "PHOENIX_CAPABILITIES" in text and "trustAnnotations" in text and "changes data" not in text
        # the user sees the same text: it is run_plan's result in the conversation every client shows
        history = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert "counts as a write only because nothing says it reads" in json.dumps(history)


@pytest.mark.req("REQ-AGENT-031")
async def test_an_unset_secret_variable_is_the_reason_the_model_and_the_client_are_given(
        fake_anthropic: FakeAnthropic, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variable = "PHX_TEST_ISSUES_TOKEN_NEVER_SET"
    monkeypatch.delenv(variable, raising=False)
    entry = issues_entry(tmp_path / "issues.json", "--require-env", "ISSUES_TOKEN",
                         secretsRef={"ISSUES_TOKEN": f"env:{variable}"})
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path, entry=entry)) as s:
        cid = await unrestricted(s, "auto")
        describe = ToolUseBlock("describe_tools", {"tools": [LIST]})
        requests = await agent_turn(s, cid, Reply.tool_reply(describe), Reply.text_reply("cannot"))
        catalogue = catalogue_of(requests[0])
        assert "No MCP tool is available" not in catalogue
        assert variable in catalogue and "not set" in catalogue and "'issues'" in catalogue, catalogue
        described = str(tool_results(requests[1])[describe.id]["content"])
        assert variable in described and "not set" in described
        logs = " ".join(m.message for m in s.client.log_messages)
        assert variable in logs and "not set" in logs  # the client's log shows it too
