"""End-to-end: the agent route (issue 14, seed 004) through the real server, the real sandboxed script engine and
a real MCP server (``tests/agent/records_server.py``, started by the server from its registry over stdio).

The model is the fake Anthropic server: it plans like a model would (describe_tools, then run_plan, then an
answer), and its recorded requests show what the model was told.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.agent.mcp_helpers import TOKEN, TOKEN_VARIABLE, stdio_entry
from tests.agent.triage_flow import LIST, TRIAGE, UPDATE
from tests.agent.triage_flow import expected as expected_ids
from tests.e2e.harness import API_KEY, Session, last_seq, session, tool_results, wait_idle
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock
from tests.waiting import eventually, exited

pytestmark = [pytest.mark.slow, pytest.mark.req("REQ-AGENT-003", "REQ-AGENT-005", "REQ-AGENT-014")]


def agent_files(tmp_path: Path, *, manifest: dict[str, Any] | None = None) -> dict[str, str]:
    """The server's environment for the agent route: a registry with the records server, a manifest."""
    data = tmp_path / "records.json"
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps({"servers": {"records": stdio_entry(data)}}))
    capabilities = tmp_path / "capabilities.json"
    capabilities.write_text(json.dumps(manifest or {
        "allow": ["mcp://records/*"], "deny": ["mcp://records/crash"],
        "tools": {UPDATE: {"kind": "write"}}}))
    return {"PHOENIX_MCP_REGISTRY": str(registry), "PHOENIX_CAPABILITIES": str(capabilities),
            TOKEN_VARIABLE: TOKEN}


def records(tmp_path: Path) -> list[dict[str, Any]]:
    return list(json.loads((tmp_path / "records.json").read_text()))


def plan(code: str = TRIAGE, tools: tuple[str, ...] = (LIST, UPDATE)) -> ToolUseBlock:
    return ToolUseBlock("run_plan", {"goal": "triage the urgent open records", "nodes": [
        {"id": "triage", "code": code, "tools": list(tools), "outputs": ["updated"]}]})


async def agent_turn(s: Session, cid: str, *replies: Reply, text: str = "triage the urgent open records",
                     wait: bool = True) -> list[RecordedRequest]:
    s.fake.enqueue(*replies)
    before, mark = len(s.fake.requests), last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": text, "route": "agent"})
    if wait:
        await wait_idle(s, cid, mark, timeout=120)
    return s.fake.requests[before:]


def result_of(request: RecordedRequest, block: ToolUseBlock) -> dict[str, Any]:
    return tool_results(request)[block.id]


@pytest.mark.req("REQ-AGENT-004", "REQ-AGENT-006", "REQ-AGENT-017", "REQ-AGENT-023")
async def test_a_plan_reads_filters_and_updates_inside_the_engine(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        describe = ToolUseBlock("describe_tools", {"tools": [LIST, UPDATE]})
        run = plan()
        requests = await agent_turn(s, cid, Reply.tool_reply(describe), Reply.tool_reply(run),
                                    Reply.text_reply("Triaged the urgent open records."))
        assert len(requests) == 3
        # the agent route's own tools (REQ-AGENT-040), run_plan's catalogue listing the MCP tools by their call and
        # description only (schemas come with describe_tools)
        names = requests[0].tool_names
        assert names == ["describe_tools", "run_plan", "call_tool", "request_mode_upgrade", "use_ask_route"]
        catalogue = next(t for t in requests[0].body["tools"] if t["name"] == "run_plan")["description"]
        assert f"{LIST} [read] records_list_records() -> dict: All records" in catalogue  # its call, in one line
        assert f"{UPDATE} [write] records_update_record(id: int, fields: dict) -> dict: Change" in catalogue
        assert f"{UPDATE} [write]" in catalogue and "mcp://records/crash" not in catalogue  # denied: not offered
        assert "input_schema" not in catalogue and '"properties"' not in catalogue
        schemas = result_of(requests[1], describe)["content"]
        assert "records_update_record(**arguments)" in schemas and '"fields"' in schemas
        # the plan ran: the 12 records changed in the MCP server; the model got a compact result
        ids = expected_ids()
        assert len(ids) == 12
        assert sorted(r["id"] for r in records(tmp_path) if r["status"] == "triaged") == ids
        summary = result_of(requests[2], run)
        assert summary.get("is_error") is not True
        text = summary["content"]
        assert "triage" in text and json.dumps(ids, separators=(",", ":")) in text
        assert "description" not in text and len(text) < 2000  # no raw records reach the model
        # one tool start and end in the conversation's events, like any tool (REQ-AGENT-003)
        starts = [e for e in s.of("toolStart", cid) if e["toolName"] == "run_plan"]
        assert len(starts) == 1


@pytest.mark.req("REQ-AGENT-006", "REQ-AGENT-023", "REQ-PROTO-028")
async def test_a_large_result_becomes_an_artifact_the_client_can_fetch(fake_anthropic: FakeAnthropic,
                                                                       tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        run = ToolUseBlock("run_plan", {"goal": "all records", "nodes": [
            {"id": "dump", "code": "{'rows': records_list_records()['records']}", "tools": [LIST],
             "outputs": ["rows"]}]})
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("ok"))
        text = result_of(requests[1], run)["content"]
        assert "artifact://" in text and "list of 50 objects" in text and "description" in text  # shape only
        assert len(text) < 2000
        handle = text[text.index("artifact://"):].split()[0].rstrip(".,;)")
        artifact = await s.request("phoenix/getArtifact", {"handle": handle, "conversationId": cid})
        import base64

        rows = json.loads(base64.b64decode(artifact["data"]))
        assert rows == json.loads((tmp_path / "records.json").read_text()) and artifact["size"] > 20_000
        error = await s.error("phoenix/getArtifact", {"handle": "artifact://sha256-../../etc/passwd",
                                                      "conversationId": cid})
        assert error.code == -32602 and "handle" in error.message


@pytest.mark.req("REQ-AGENT-014", "REQ-AGENT-015", "REQ-AGENT-033")
async def test_a_write_in_restricted_is_refused_like_the_patch_tool(fake_anthropic: FakeAnthropic,
                                                                     tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await s.new()  # Restricted: the sandbox exists here
        run = plan()
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("I could not."))
        text = result_of(requests[1], run)["content"]
        assert "DENIED/MODE_DENIED" in text and "Restricted mode" in text and "request_mode_upgrade" in text
        assert "CAPABILITY_DENIED" not in text and "without it" not in text  # one instruction, its own code
        assert all(r["status"] != "triaged" for r in records(tmp_path))  # nothing changed
        audit = await s.request("phoenix/getAuditLog", {"conversationId": cid})
        assert any(e["kind"] == "toolRefused" and e["details"].get("tool") == UPDATE for e in audit["entries"])


@pytest.mark.req("REQ-AGENT-015", "REQ-AGENT-034")
async def test_every_write_waits_for_its_approval(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        code = ("for i in ids:\n    records_update_record(id=i, fields={'status': 'triaged'})\n"
                "{'done': ids}")
        run = ToolUseBlock("run_plan", {"goal": "triage 1 and 2", "nodes": [
            {"id": "write", "code": f"ids = [1, 2]\n{code}", "tools": [UPDATE], "outputs": ["done"]}]})
        s.fake.enqueue(Reply.tool_reply(run), Reply.text_reply("done"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        asked: list[dict[str, Any]] = []
        for decision in ("allow", "deny"):  # one question per write call, none for the approval node
            event = await s.wait_event(lambda e: e["conversationId"] == cid and e["kind"] == "approvalRequested"
                                       and e["seq"] > mark and e not in asked, timeout=60)
            asked.append(event)
            assert event["toolName"] == UPDATE
            # nothing is written before its approval is answered
            changed = [r["id"] for r in records(tmp_path) if r["status"] == "triaged"]
            assert changed == ([] if len(asked) < 2 else [1])
            await s.request("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": event["toolUseId"],
                                                          "decision": decision})
        await wait_idle(s, cid, mark, timeout=60)
        assert len(s.of("approvalRequested", cid)) == 2
        # the one question shows the tool, its arguments and the node that makes the call (REQ-AGENT-034)
        assert [a["arguments"] for a in asked] == [{"id": i, "fields": {"status": "triaged"}} for i in (1, 2)]
        assert all("'triage 1 and 2'" in a["description"] and "'write'" in a["description"]
                   and "Change some fields" in a["description"] for a in asked), asked[0]["description"]
        assert [r["id"] for r in records(tmp_path) if r["status"] == "triaged"] == [1]  # 2 was denied
        text = result_of(s.fake.requests[-1], run)["content"]
        assert "APPROVAL_DENIED" in text
        audit = await s.request("phoenix/getAuditLog", {"conversationId": cid})
        resolved = [e["details"]["decision"] for e in audit["entries"] if e["kind"] == "approvalResolved"]
        assert resolved == ["allow", "deny"]
        passed = [e for e in audit["entries"] if e["kind"] == "hostCallAllowed"]
        assert len(passed) == 2  # the approval node's pass and the allowed write, both on record


@pytest.mark.req("REQ-AGENT-016", "REQ-SEC-001")
async def test_no_secret_reaches_the_model_the_store_the_logs_or_the_artifacts(fake_anthropic: FakeAnthropic,
                                                                              tmp_path: Path) -> None:
    env = agent_files(tmp_path)
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        # a script that tries to get at the credential: no environment, and the token is not in any reply
        leak = "{'env': str(records_list_records()['records'][0])}"
        run = ToolUseBlock("run_plan", {"goal": "look", "nodes": [
            {"id": "a", "code": leak, "tools": [LIST], "outputs": ["env"]}]})
        await agent_turn(s, cid, Reply.tool_reply(ToolUseBlock("describe_tools", {"tools": [LIST]})),
                         Reply.tool_reply(run), Reply.text_reply("ok"), text=f"my token is {TOKEN}")
        await agent_turn(s, cid, Reply.tool_reply(plan()), Reply.text_reply("ok"))
    written = [p for p in (tmp_path / "data").rglob("*") if p.is_file()]
    assert any(p.suffix == ".json" for p in written if "artifacts" in p.parts) or written
    for secret in (TOKEN, API_KEY):
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{secret[:6]}... written to {path.name}"
        for request in fake_anthropic.requests:
            assert secret not in json.dumps(request.body), "a secret reached the model"
    assert any("[REDACTED" in json.dumps(r.body) for r in fake_anthropic.requests)  # the pasted one was caught


@pytest.mark.req("REQ-AGENT-022")
async def test_an_invalid_settings_file_makes_the_route_unavailable_and_ask_still_works(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    env = agent_files(tmp_path)
    Path(env["PHOENIX_CAPABILITIES"]).write_text("{not json")
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await s.new()
        error = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        assert "PHOENIX_CAPABILITIES" in error.message and "capabilities.json" in error.message
        s.fake.enqueue(Reply.text_reply("hello"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hi", "route": "ask"})
        await wait_idle(s, cid, mark)


@pytest.mark.req("REQ-AGENT-002")
async def test_the_ask_route_sends_the_same_bytes_with_or_without_the_agent_route(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    bodies = []
    shared = tmp_path / "project"
    shared.mkdir()
    (shared / "a.txt").write_text("a\n")
    for configured in (False, True):
        base = tmp_path / ("on" if configured else "off")
        base.mkdir()
        env = agent_files(base) if configured else {}
        async with session(fake_anthropic, base, env=env) as s:
            cid = await s.new(workingDirectory=str(shared))
            before = len(fake_anthropic.requests)
            s.fake.enqueue(Reply.tool_reply(ToolUseBlock("list_directory", {"path": "."}, id="tu-fixed")),
                           Reply.text_reply("hello"))
            mark = last_seq(s, cid)
            await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "hi"})
            await wait_idle(s, cid, mark)
            bodies.append([json.dumps(r.body, sort_keys=True) for r in fake_anthropic.requests[before:]])
    assert len(bodies[0]) == 2
    # the one difference: the MCP servers' own tools, after the built-in ones (issue 37, REQ-MCP-002), with the
    # cache breakpoint on the last tool
    without = [json.loads(body) for body in bodies[0]]
    mcp_taken_out = []
    for body in (json.loads(body) for body in bodies[1]):
        names = [t["name"] for t in body["tools"]]
        mcp = [n for n in names if n.startswith("mcp__")]
        assert mcp and names[-len(mcp):] == mcp, "the MCP tools come after the built-in tools"
        body["tools"] = body["tools"][:-len(mcp)]
        mcp_taken_out.append(body)
    for body in (*without, *mcp_taken_out):
        body["tools"][-1].pop("cache_control", None)
    assert [json.dumps(b, sort_keys=True) for b in without] == [json.dumps(b, sort_keys=True) for b in mcp_taken_out]


@pytest.mark.req("REQ-AGENT-003")
async def test_switching_routes_between_messages_keeps_one_conversation(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, Reply.tool_reply(plan()), Reply.text_reply("triaged"))
        assert "run_plan" in (requests[0].tool_names or [])
        s.fake.enqueue(Reply.text_reply("12 records"))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "how many?", "route": "ask"})
        await wait_idle(s, cid, mark)
        ask = s.fake.requests[-1]
        assert "run_plan" not in (ask.tool_names or [])
        # the plan is still in the ask route's history, as text: that route does not offer run_plan (REQ-AGENT-046)
        blocks = [b for m in ask.messages for b in (m["content"] if isinstance(m["content"], list) else [])]
        assert not any(b.get("type") == "tool_use" and b.get("name") == "run_plan" for b in blocks)
        assert any(b.get("type") == "text" and "An earlier call of run_plan" in b["text"] for b in blocks)
        history = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert [m["role"] for m in history["messages"]][-2:] == ["user", "assistant"]


def one_node(code: str, tools: tuple[str, ...] = (LIST,), node_id: str = "n") -> ToolUseBlock:
    return ToolUseBlock("run_plan", {"goal": "check", "nodes": [
        {"id": node_id, "code": code, "tools": list(tools), "outputs": []}]})


@pytest.mark.req("REQ-AGENT-008", "REQ-AGENT-012", "REQ-AGENT-013")
async def test_loops_imports_files_env_and_clock_end_typed_and_the_conversation_goes_on(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    env = {**agent_files(tmp_path), "PHOENIX_BUDGETS": str(tmp_path / "budgets.json")}
    (tmp_path / "budgets.json").write_text(json.dumps({"node": {"cpuS": 1.0}}))
    tries = {
        "while True:\n    pass": "BUDGET/CPU_LIMIT",
        "import os\nos.listdir('/')": "CODE/STATIC_CHECK",
        "open('/etc/hostname').read()": "CODE/STATIC_CHECK",
        "x = __import__('os')": "CODE/STATIC_CHECK",
        "records_update_record(id=1, fields={})": "is not defined",  # not among the node's tools: no such function
    }
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        for code, expected in tries.items():
            run = one_node(code)
            requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("noted"))
            text = result_of(requests[1], run)["content"]
            assert expected in text, (code, text)
        assert all(r["status"] != "triaged" for r in records(tmp_path))


@pytest.mark.req("REQ-AGENT-014")
async def test_a_plan_naming_a_denied_tool_runs_nothing(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    manifest = {"allow": ["mcp://records/list_records"], "deny": [UPDATE]}
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path, manifest=manifest)) as s:
        cid = await unrestricted(s, "auto")
        read = ToolUseBlock("run_plan", {"goal": "read then write", "nodes": [
            {"id": "read", "code": "{'n': len(records_list_records()['records'])}", "tools": [LIST],
             "outputs": ["n"]},
            {"id": "write", "code": "records_update_record(id=1, fields={'status': 'x'})\n{}", "tools": [UPDATE],
             "depends_on": ["read"]}]})
        requests = await agent_turn(s, cid, Reply.tool_reply(read), Reply.text_reply("ok"))
        text = result_of(requests[1], read)["content"]
        assert "DENIED/CAPABILITY_DENIED" in text and "not run" in text
        assert all(r["status"] != "x" for r in records(tmp_path))


@pytest.mark.req("REQ-AGENT-010")
async def test_the_null_engine_is_configuration_only_and_degrades_clearly(fake_anthropic: FakeAnthropic,
                                                                           tmp_path: Path) -> None:
    env = {**agent_files(tmp_path), "PHOENIX_AGENT_ENGINE": "null"}
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        run = one_node("{'n': len(records_list_records()['records'])}")
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("the engine is off"))
        text = result_of(requests[1], run)["content"]
        assert "ENGINE/UNAVAILABLE" in text and "PHOENIX_AGENT_ENGINE" in text, text
        write = plan()  # a plan with a write: nobody is asked to approve what cannot run
        requests = await agent_turn(s, cid, Reply.tool_reply(write), Reply.text_reply("the engine is off"))
        text = result_of(requests[1], write)["content"]
        assert "nobody was asked" in text and not s.of("approvalRequested", cid), text
        assert all(r["status"] != "triaged" for r in records(tmp_path))


@pytest.mark.req("REQ-AGENT-019", "REQ-AGENT-021")
async def test_the_same_plan_gives_the_same_summary_and_artifacts(fake_anthropic: FakeAnthropic,
                                                                   tmp_path: Path) -> None:
    runs = []
    for name in ("first", "second"):  # two servers: nothing shared but the data and the artifact directory
        base = tmp_path / name
        base.mkdir()
        env = {**agent_files(tmp_path), "PHOENIX_ARTIFACT_DIR": str(tmp_path / "artifacts")}
        async with session(fake_anthropic, base, env=env) as s:
            cid = await unrestricted(s, "auto")
            dump = ToolUseBlock("run_plan", {"goal": "open ones", "nodes": [
                {"id": "open", "code": "{'rows': [r for r in records_list_records()['records'] "
                                       "if r['status'] == 'open']}", "tools": [LIST], "outputs": ["rows"]}]})
            requests = await agent_turn(s, cid, Reply.tool_reply(dump), Reply.text_reply("ok"))
            runs.append(result_of(requests[1], dump)["content"])
    assert runs[0] == runs[1] and "artifact://" in runs[0]
    assert len(list((tmp_path / "artifacts").rglob("*"))) >= 1


@pytest.mark.req("REQ-AGENT-015", "REQ-BED-005")
async def test_cancel_while_a_write_waits_for_approval_stops_the_plan_and_writes_nothing(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        cid = await unrestricted(s, "interactive")
        write = plan()
        s.fake.enqueue(Reply.tool_reply(write))
        mark = last_seq(s, cid)
        await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go", "route": "agent"})
        asked = await s.wait_event(lambda e: e["conversationId"] == cid and e["kind"] == "approvalRequested"
                                   and e["seq"] > mark, timeout=60)
        await s.request("phoenix/cancel", {"conversationId": cid})
        await wait_idle(s, cid, mark, timeout=60)
        resolved = [e for e in s.of("approvalResolved", cid) if e["toolUseId"] == asked["toolUseId"]]
        assert resolved and resolved[-1]["decision"] == "cancelled"
        error = await s.error("phoenix/respondToApproval", {"conversationId": cid, "toolUseId": asked["toolUseId"],
                                                             "decision": "allow"})
        assert "no pending approval" in error.message  # a late Allow changes nothing
        assert all(r["status"] != "triaged" for r in records(tmp_path))
        # the conversation goes on: the next agent turn runs a plan again
        read = one_node("{'n': len(records_list_records()['records'])}")
        requests = await agent_turn(s, cid, Reply.tool_reply(read), Reply.text_reply("50"))
        assert '"n":50' in result_of(requests[1], read)["content"].replace(" ", "")
        assert all(r["status"] != "triaged" for r in records(tmp_path))


@pytest.mark.req("REQ-AGENT-017")
async def test_an_mcp_server_that_does_not_start_is_said_and_the_turn_goes_on(fake_anthropic: FakeAnthropic,
                                                                               tmp_path: Path) -> None:
    import sys

    env = agent_files(tmp_path)
    registry = json.loads(Path(env["PHOENIX_MCP_REGISTRY"]).read_text())
    registry["servers"]["broken"] = {"command": [sys.executable, "-c", "import sys; sys.exit('no config here')"]}
    Path(env["PHOENIX_MCP_REGISTRY"]).write_text(json.dumps(registry))
    async with session(fake_anthropic, tmp_path, env=env) as s:
        cid = await unrestricted(s, "auto")
        requests = await agent_turn(s, cid, Reply.text_reply("ok"))
        catalogue = next(t for t in requests[0].body["tools"] if t["name"] == "run_plan")["description"]
        assert LIST in catalogue and "Unreachable now: broken" in catalogue


def descendants(pid: int) -> dict[int, str]:
    """The running processes below ``pid`` (children, their children...), each with its command line."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, IndexError):
                continue  # gone meanwhile
            if state != "Z":  # a zombie has ended; only its exit status is left
                children.setdefault(int(parent), []).append(int(entry.name))
    found: dict[int, str] = {}
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            try:
                found[child] = (Path("/proc") / str(child) / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            todo.append(child)
    return found


async def started_route(s: Session) -> tuple[dict[int, str], list[Path]]:
    """Start the agent route with an agent turn; wait until an MCP server and a warm engine worker run below
    the server. The processes below it, and the workers' scratch directories (their working directories)."""
    cid = await unrestricted(s, "auto")
    await agent_turn(s, cid, Reply.text_reply("Nothing to triage."))  # the catalogue starts the route

    def started() -> dict[int, str]:
        found = descendants(s.pid)
        mcp = any("records_server" in c for c in found.values())
        return found if mcp and workers(found) else {}

    running = await eventually(started, "an MCP server and a warm worker below the server", timeout=60)
    where = {Path(os.readlink(f"/proc/{pid}/cwd")) for pid in workers(running)}  # the launcher's is the server's
    scratch = [path for path in where if path.name.startswith("phoenix-agent-")]
    assert scratch, where
    return running, scratch


def workers(processes: dict[int, str]) -> list[int]:
    """The engine workers among ``processes`` (``python -I -m phoenix_lsp.agent.worker`` or its checkout form),
    with their sandbox launchers (whose command line holds the worker's)."""
    return [pid for pid, command in processes.items()
            if "phoenix_lsp.agent.worker" in command or ("-I -c" in command and "runpy" in command)]


async def ended(s: Session) -> None:
    """Wait for the server process to end after exit; the session has nothing left to shut down."""
    server = s.client._server
    assert server is not None
    await asyncio.wait_for(server.wait(), 30)
    s.killed = True


@pytest.mark.req("REQ-PROTO-050", "REQ-AGENT-037")
async def test_shutdown_ends_the_warm_workers_and_the_mcp_servers(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    """The agent route's warm engine workers and MCP server processes end at shutdown, before exit: none
    outlives the server (closing the route also removes the workers' scratch directories)."""
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        running, scratch = await started_route(s)
        await asyncio.wait_for(s.client.shutdown_async(None), 60)
        assert await exited(list(running), 30) == [], "still running after shutdown: " + "; ".join(
            running[p][:120] for p in running if p in descendants(s.pid))
        assert [path for path in scratch if path.exists()] == []
        s.client.exit(None)
        await ended(s)


@pytest.mark.req("REQ-PROTO-050", "REQ-AGENT-037")
async def test_exit_without_shutdown_ends_them_too(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """An editor that sends exit without shutdown: the server closes the route as it ends (the workers'
    scratch directories are removed, which an ended server cannot do later)."""
    async with session(fake_anthropic, tmp_path, env=agent_files(tmp_path)) as s:
        running, scratch = await started_route(s)
        s.client.exit(None)
        await ended(s)
        assert await exited(list(running), 30) == []
        assert [path for path in scratch if path.exists()] == []
