"""Session config options (issue 38): mode, model and route offered in ``session/new`` and ``session/load``,
chosen with ``session/set_config_option``, and kept in sync with ``config_option_update`` whenever they change,
from wherever (a mode command, an approved upgrade, ``session/set_mode``). The slash commands are announced with
``available_commands_update``. The ACP SDK's own client side drives ``phoenix-lsp acp``; the witnesses are the
disk, what the fake model server received and what the client received."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.acp.harness import TIMEOUT, Editor, agent
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the agent as a subprocess


def option(options: list[Any], config_id: str) -> Any:
    found = [o for o in options if o.id == config_id]
    assert len(found) == 1, [o.id for o in options]
    return found[0]


def values(select: Any) -> list[str]:
    return [o.value for o in select.options]


def option_updates(editor: Editor) -> list[dict[str, str]]:
    """Each config_option_update the client received, as {option id: current value}."""
    return [{o.id: o.current_value for o in u.config_options} for u in editor.updates
            if u.session_update == "config_option_update"]


def patch(call_id: str, old: str, new: str) -> Reply:
    return Reply.tool_reply(ToolUseBlock("patch", {"path": "a.txt", "patches": [
        {"operation": "replace", "oldText": old, "newText": new}]}, id=call_id))


@pytest.mark.req("REQ-ACP-023", "REQ-ACP-024")
async def test_the_mode_picked_from_config_options_is_the_sessions_mode(fake_anthropic: FakeAnthropic,
                                                                        tmp_path: Path) -> None:
    editor = Editor(save=True)
    editor.answer = lambda asked: editor.option(asked, "allow_once")
    fake_anthropic.enqueue(patch("toolu_p1", "one", "two"), Reply.text_reply("changed"),
                           patch("toolu_p2", "two", "three"), Reply.text_reply("could not"))
    async with agent(fake_anthropic, tmp_path, editor) as a:
        (a.workdir / "a.txt").write_text("one\n")
        session = await a.new()
        sid = session.session_id
        mode = option(session.config_options, "mode")
        assert mode.category == "mode" and mode.current_value == "restricted"
        assert values(mode) == ["restricted", "unrestricted"]
        assert session.modes.current_mode_id == "restricted"  # modes are kept for older clients
        chosen = await asyncio.wait_for(a.conn.set_config_option(config_id="mode", session_id=sid,
                                                                 value="unrestricted"), TIMEOUT)
        assert option(chosen.config_options, "mode").current_value == "unrestricted"
        assert (await a.prompt(sid, "change it")).stop_reason == "end_turn"
        assert (a.workdir / "a.txt").read_text() == "two\n"  # the write ran: the session is Unrestricted
        assert any(u.session_update == "current_mode_update" and u.current_mode_id == "unrestricted"
                   for u in a.editor.updates)
        chosen = await asyncio.wait_for(a.conn.set_config_option(config_id="mode", session_id=sid,
                                                                 value="restricted"), TIMEOUT)
        assert option(chosen.config_options, "mode").current_value == "restricted"
        assert (await a.prompt(sid, "change it again")).stop_reason == "end_turn"
        assert a.editor.statuses("toolu_p2")[-1] == "failed"
        assert "request_mode_upgrade" in a.editor.call_text("toolu_p2")
    assert (tmp_path / "work" / "a.txt").read_text() == "two\n"  # refused in Restricted: nothing written
    assert [p for p, _ in editor.writes] == [str(tmp_path / "work" / "a.txt")]


@pytest.mark.req("REQ-ACP-023", "REQ-ACP-024")
async def test_model_and_route_are_chosen_from_config_options(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    fake_anthropic.models = [("claude-sonnet-4-6", "Claude Sonnet 4.6", 1_000_000),
                             ("claude-opus-4-6", "Claude Opus 4.6", 1_000_000)]
    fake_anthropic.enqueue(Reply.text_reply("from opus"), Reply.text_reply("on the agent route"))
    async with agent(fake_anthropic, tmp_path) as a:
        session = await a.new()
        sid = session.session_id
        model = option(session.config_options, "model")
        assert model.category == "model" and model.current_value == "claude-sonnet-4-6"

        def offered() -> set[str]:  # the answer's list, or the one told once the listing (slow at first) is done
            lists = [{o.id: o for o in session.config_options}] + [
                {o.id: o for o in u.config_options} for u in a.editor.updates
                if u.session_update == "config_option_update"]
            return set(values(lists[-1]["model"]))

        await a.editor.wait_until(lambda: {"claude-sonnet-4-6", "claude-opus-4-6"} <= offered())
        route = option(session.config_options, "route")
        assert route.current_value == "ask" and values(route) == ["ask", "agent"]
        chosen = await asyncio.wait_for(a.conn.set_config_option(config_id="model", session_id=sid,
                                                                 value="claude-opus-4-6"), TIMEOUT)
        assert option(chosen.config_options, "model").current_value == "claude-opus-4-6"
        await a.editor.wait_until(lambda: any(u.get("model") == "claude-opus-4-6" for u in option_updates(a.editor)))
        assert (await a.prompt(sid, "hello")).stop_reason == "end_turn"
        assert fake_anthropic.requests[-1].body["model"] == "claude-opus-4-6"  # the model the user picked answers
        chosen = await asyncio.wait_for(a.conn.set_config_option(config_id="route", session_id=sid,
                                                                 value="agent"), TIMEOUT)
        assert option(chosen.config_options, "route").current_value == "agent"
        assert (await a.prompt(sid, "again")).stop_reason == "end_turn"
        assert "run_plan" in (fake_anthropic.requests[-1].tool_names or [])  # the agent route's tools
    assert json.loads((tmp_path / "data" / "ui_settings.json").read_text())["route"] == "agent"


@pytest.mark.req("REQ-ACP-024")
async def test_config_options_follow_a_mode_command_and_an_upgrade(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    fake_anthropic.enqueue(
        Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": "write notes.txt"}, id="toolu_up")),
        Reply.text_reply("now unrestricted"),
    )
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        assert (await a.prompt(sid, "/execute")).stop_reason == "end_turn"
        assert option_updates(a.editor)[-1]["mode"] == "unrestricted"
        assert (await a.prompt(sid, "/plan")).stop_reason == "end_turn"
        assert option_updates(a.editor)[-1]["mode"] == "restricted"
        a.editor.answer = lambda asked: a.editor.option(asked, "allow_once")
        assert (await a.prompt(sid, "take notes")).stop_reason == "end_turn"
        # from the session's first mode on; the model list, told late, may repeat the mode in effect
        told = ["restricted"] + [u["mode"] for u in option_updates(a.editor)]
        changes = [m for i, m in enumerate(told) if i and m != told[i - 1]]
        assert changes == ["unrestricted", "restricted", "unrestricted"], told


@pytest.mark.req("REQ-ACP-025")
async def test_the_slash_commands_are_announced_after_new_and_load(fake_anthropic: FakeAnthropic,
                                                                  tmp_path: Path) -> None:
    async with agent(fake_anthropic, tmp_path) as a:
        sid = (await a.new()).session_id
        announced = await a.editor.wait_until(lambda: [u for u in a.editor.updates
                                                       if u.session_update == "available_commands_update"])
        names = [c.name for c in announced[0].available_commands]
        assert names == ["execute", "plan", "undo", "background"]  # REQ-BASH-041/045: answered by the adapter
        assert all(c.description for c in announced[0].available_commands)
    async with agent(fake_anthropic, tmp_path) as b:
        loaded = await asyncio.wait_for(b.conn.load_session(cwd=str(b.workdir), session_id=sid, mcp_servers=[]),
                                        TIMEOUT)
        assert option(loaded.config_options, "mode").current_value == "restricted"
        await b.editor.wait_until(lambda: any(u.session_update == "available_commands_update"
                                              for u in b.editor.updates))
