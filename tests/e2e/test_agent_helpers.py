"""End-to-end: a plan written with the script helpers (REQ-AGENT-036), through the real server, the real
sandboxed engine and the issues MCP server of ``test_agent_issues.py``. The model is the fake Anthropic server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agent.issues_server import dataset, expected_bugs
from tests.e2e.harness import session, tool_results
from tests.e2e.test_agent_issues import COMMENT, GET, LIST, agent_turn, catalogue_of, issues_files, one_node
from tests.e2e.test_write_patch import unrestricted
from tests.fake_anthropic import FakeAnthropic, Reply

pytestmark = [pytest.mark.slow]


@pytest.mark.req("REQ-AGENT-036")
async def test_issue_25s_task_in_a_three_line_script_with_the_helpers(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        code = ("bugs = [i['number'] for i in where(issues_list_issues(state='open', limit=10), labels='bug')]\n"
                "issues_add_comment(number=1, body='bugs: ' + ', '.join([str(n) for n in bugs]))\n"
                "{'bugs': bugs, 'labels': count(issues_list_issues(state='all', limit=40), 'labels')}")
        run = one_node(code, [LIST, COMMENT], ["bugs", "labels"])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("posted"))
        # the model learns the helpers from run_plan's definition, beside the catalogue of its tools
        assert "where(rows, field=value)" in catalogue_of(requests[0])
        assert "count(rows, field)" in catalogue_of(requests[0])
        summary = str(tool_results(requests[1])[run.id]["content"])
        bugs = expected_bugs()
        assert json.dumps(bugs, separators=(",", ":")) in summary, summary
        labels: dict[str, int] = {}
        for issue in dataset(40)["issues"]:
            for label in issue["labels"]:
                labels[label] = labels.get(label, 0) + 1
        for label, n in labels.items():
            assert f'"{label}":{n}' in summary, summary
        data = json.loads((tmp_path / "issues.json").read_text())
        assert data["comments"]["1"][0]["body"] == "bugs: " + ", ".join(str(n) for n in bugs)


@pytest.mark.req("REQ-AGENT-036", "REQ-AGENT-012")
async def test_a_helper_given_an_object_tells_the_model_what_to_pass(
        fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, env=issues_files(tmp_path)) as s:
        cid = await unrestricted(s, "auto")
        run = one_node("{'n': count(issues_get_issue(number=1), 'labels')}", [GET], ["n"])
        requests = await agent_turn(s, cid, Reply.tool_reply(run), Reply.text_reply("re-plan"))
        summary = str(tool_results(requests[1])[run.id]["content"])
        assert "CODE/INVALID_ARGUMENTS" in summary and "count: rows must be a list of objects, got an object" \
            in summary, summary
