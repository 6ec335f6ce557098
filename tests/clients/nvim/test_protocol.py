"""The protocol's words in the Neovim plugin come from the published schema, and each fact is kept once
(REQ-NVIM-020, REQ-PROTO-037): nvim/lua/phoenix/protocol.lua is generated from specs/protocol.schema.json, the
status words are written in one module and cover every status, and the catch-up rule is decided in one module."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
LUA = ROOT / "nvim" / "lua" / "phoenix"
GENERATOR = ROOT / "nvim" / "scripts" / "gen-protocol.py"


def code(path: Path) -> str:
    """A Lua file without its comments."""
    return re.sub(r"--[^\n]*", "", path.read_text())


@pytest.mark.req("REQ-NVIM-020", "REQ-PROTO-037")
def test_the_generated_protocol_module_is_what_the_schema_gives() -> None:
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    schema = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())
    text = (LUA / "protocol.lua").read_text()
    for status in schema["$defs"]["Status"]["properties"]["status"]["enum"]:
        assert f'"{status}"' in text


@pytest.mark.req("REQ-NVIM-020")
def test_no_module_but_the_generated_one_writes_down_a_protocol_enum() -> None:
    """A Lua table naming two values of one of the schema's enums is a hand-kept copy of it."""
    schema = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())
    defs = schema["$defs"]
    enums = [defs["Status"]["properties"]["status"]["enum"], defs["Mode"]["enum"], defs["Policy"]["enum"],
             defs["Style"]["enum"], defs["GetRouteResult"]["properties"]["route"]["enum"]]
    found = []
    for path in sorted(LUA.glob("*.lua")):
        if path.name == "protocol.lua":
            continue
        for table in re.findall(r"\{[^{}]*\}", code(path)):
            strings = set(re.findall(r'"([a-z_]+)"', table))
            for enum in enums:
                if len(strings & set(enum)) >= 2 and not re.search(r"\b[a-z_]+\s*=", table):
                    found.append(f"{path.name}: {table.strip()[:80]}")
    assert not found, f"use require('phoenix.protocol') instead: {found}"


@pytest.mark.req("REQ-NVIM-020", "REQ-NVIM-010")
def test_the_catch_up_rule_and_the_status_words_are_each_in_one_module() -> None:
    seq_rule = [p.name for p in LUA.glob("*.lua") if re.search(r"last_seq\s*\+\s*1|seq\s*<=", code(p))]
    assert seq_rule == ["sequence.lua"], seq_rule
    words = [p.name for p in LUA.glob("*.lua") if "thinking…" in code(p)]
    assert words == ["status.lua"], words


@pytest.mark.req("REQ-NVIM-020", "REQ-NVIM-005", "REQ-NVIM-010")
def test_every_status_has_words_and_every_handled_event_is_a_protocol_event(run_nvim: Any) -> None:
    run = run_nvim(
        """
        local protocol = require("phoenix.protocol")
        local status = require("phoenix.status")
        local sequence = require("phoenix.sequence")
        T.data.words = {}
        for _, s in ipairs(protocol.Status) do T.data.words[s] = status.WORDS[s] or vim.NIL end
        T.data.handled = vim.tbl_keys(require("phoenix.events").handle)
        T.data.kinds = protocol.EventKind
        T.data.places = { sequence.place(4, 3), sequence.place(4, 4), sequence.place(4, 5), sequence.place(4, 7) }
        """
    )
    words = run.data["words"]
    schema = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())
    assert set(words) == set(schema["$defs"]["Status"]["properties"]["status"]["enum"]), words
    assert all(words.values()), {status: word for status, word in words.items() if not word}
    assert set(run.data["handled"]) <= set(run.data["kinds"]), set(run.data["handled"]) - set(run.data["kinds"])
    assert run.data["places"] == ["seen", "seen", "next", "gap"]
