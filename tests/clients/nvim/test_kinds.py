"""REQ-PROTO-055 in the Neovim plugin: events.lua's tables (M.handle, M.ignored) name exactly the schema's event
kinds, a schema with one more kind fails the plugin's own comparison (events.check), and an event of a kind the
plugin does not know is said to the user once, never dropped silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.req("REQ-PROTO-055")
def test_the_plugins_event_tables_are_the_schemas_kinds_and_an_unknown_kind_is_said(run_nvim: Any) -> None:
    schema = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())
    kinds = sorted(schema["$defs"]["PhoenixEvent"]["discriminator"]["mapping"])
    run = run_nvim(
        f"""
        local events = require("phoenix.events")
        local status = require("phoenix.status")
        local kinds = vim.json.decode({json.dumps(json.dumps(kinds))})
        T.data.problems = events.check(kinds)
        T.data.generated = events.check(require("phoenix.protocol").EventKind)
        local grown = vim.deepcopy(kinds)
        table.insert(grown, "fakeKind")
        T.data.grown = events.check(grown)
        T.data.named = vim.list_extend(vim.tbl_keys(events.handle), vim.tbl_keys(events.ignored))
        local said, notify = {{}}, vim.notify
        vim.notify = function(message, level) table.insert(said, {{ message, level }}) end
        status.state.conversation = "c1"
        status.state.last_seq = 0
        events.on_event(nil, {{ kind = "fakeKind", conversationId = "c1", seq = 1, time = 0 }})
        events.on_event(nil, {{ kind = "fakeKind", conversationId = "c1", seq = 2, time = 0 }})
        vim.notify = notify
        T.data.said = said
        T.data.last_seq = status.state.last_seq
        T.data.warn = vim.log.levels.WARN
        """
    )
    assert run.data["problems"] == [], run.data["problems"]
    assert run.data["generated"] == [], "protocol.lua's EventKind is the schema's"
    assert sorted(run.data["named"]) == kinds
    assert run.data["grown"] == ["events.lua does not handle the kind 'fakeKind': add it to M.handle or M.ignored"]
    said = run.data["said"]
    assert len(said) == 1, f"said once per kind: {said}"
    message, level = said[0]
    assert "'fakeKind'" in message and "Update the phoenix plugin" in message and level == run.data["warn"]
    assert run.data["last_seq"] == 2, "the sequence goes on"
