"""The route of every message: phoenix/getRoute and phoenix/setRoute through a real LSP client (REQ-PROTO-051,
REQ-PROTO-052), persisted as ``"route"`` in ``ui_settings.json`` in the data directory.

These tests also prove the server's part of REQ-AGENT-001 (the persisted selection); they carry its id once
specs/deferred.md no longer lists it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.harness import session
from tests.e2e.raw import raw_server
from tests.fake_anthropic import FakeAnthropic

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

#: what a client can wait for: the two requests do one small file read or write
ANSWER_S = 1.0


def _file(data_dir: Path) -> dict[str, object]:
    return dict(json.loads((data_dir / "ui_settings.json").read_text(encoding="utf-8")))


def _log(data_dir: Path) -> str:
    path = data_dir / "phoenix-lsp.log"
    return path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""


@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
async def test_the_route_is_ask_by_default_and_set_route_persists_it_across_a_restart(
    fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str
) -> None:
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, editor, data_dir=data) as s:
        assert "phoenix/getRoute" in s.initialize_result.capabilities.experimental["phoenix"]["methods"]
        assert "phoenix/setRoute" in s.initialize_result.capabilities.experimental["phoenix"]["methods"]
        started = time.monotonic()
        assert await s.request("phoenix/getRoute", {}) == {"route": "ask"}
        assert not (data / "ui_settings.json").exists(), "reading the route writes nothing"
        # Neovim sends an empty table as []
        raw = await s.start_request("phoenix/getRoute", [])
        assert raw == {"route": "ask"}
        assert await s.request("phoenix/setRoute", {"route": "agent"}) == {"route": "agent", "previous": "ask"}
        assert await s.request("phoenix/getRoute", {}) == {"route": "agent"}
        assert time.monotonic() - started < 4 * ANSWER_S, "getRoute and setRoute answer at once"
        assert _file(data) == {"route": "agent"}
        # setting the same route again is no error, and says so
        assert await s.request("phoenix/setRoute", {"route": "agent"}) == {"route": "agent", "previous": "agent"}
        # a message may name its route; the field is part of sendMessage's params
        cid = await s.new()
        error = await s.error("phoenix/sendMessage", {"conversationId": cid, "text": "hi", "route": "fast"})
        assert error.code == -32602 and error.data["field"] == "route", error
    # a new server process with the same data directory reads the same choice
    async with session(fake_anthropic, tmp_path, editor, data_dir=data) as s:
        assert await s.request("phoenix/getRoute", {}) == {"route": "agent"}
        assert await s.request("phoenix/setRoute", {"route": "ask"}) == {"route": "ask", "previous": "agent"}
    assert _file(data) == {"route": "ask"}


@pytest.mark.req("REQ-PROTO-052", "REQ-PROTO-002")
async def test_an_invalid_route_is_refused_naming_the_field_and_changes_nothing(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        await s.request("phoenix/setRoute", {"route": "agent"})
        for params in ({"route": "fast"}, {"route": "Agent"}, {"route": None}, {}, {"route": 1}):
            error = await s.error("phoenix/setRoute", params)
            assert error.code == -32602, (params, error)
            assert error.data == {"kind": "invalidParams", "field": "route"}, (params, error)
            assert "'route'" in error.message, error.message
        assert "'ask' or 'agent'" in (await s.error("phoenix/setRoute", {"route": "fast"})).message
        assert await s.request("phoenix/getRoute", {}) == {"route": "agent"}
    assert _file(data) == {"route": "agent"}


@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
async def test_other_keys_of_ui_settings_are_kept(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    others = {"theme": "dark", "panels": {"left": [1, 2]}, "note": "ünïcode"}
    (data / "ui_settings.json").write_text(json.dumps(others), encoding="utf-8")
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        assert await s.request("phoenix/getRoute", {}) == {"route": "ask"}
        assert await s.request("phoenix/setRoute", {"route": "agent"}) == {"route": "agent", "previous": "ask"}
        assert _file(data) == {**others, "route": "agent"}
        await s.request("phoenix/setRoute", {"route": "ask"})
        assert _file(data) == {**others, "route": "ask"}
    # the write is atomic: no temporary file is left beside it
    assert sorted(p.name for p in data.iterdir() if "ui_settings" in p.name) == ["ui_settings.json"]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        ("{not json", "is not valid JSON"),
        ('["route", "agent"]', "not an object"),
        ('{"route": "fast", "theme": "dark"}', "which is no route"),
        ('{"route": 3}', "which is no route"),
    ],
    ids=["corrupt", "not-an-object", "unknown-route", "not-a-string"],
)
@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
async def test_a_corrupt_file_or_a_wrong_value_is_ask_with_a_warning_and_set_route_rewrites_it(
    fake_anthropic: FakeAnthropic, tmp_path: Path, content: str, said: str
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "ui_settings.json").write_text(content, encoding="utf-8")
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        assert await s.request("phoenix/getRoute", {}) == {"route": "ask"}
        # the server lives on, and the log says which file, what is wrong with it, and what happens now
        assert await s.request("phoenix/listConversations", {}) == {"conversations": []}
        assert await s.request("phoenix/setRoute", {"route": "agent"}) == {"route": "agent", "previous": "ask"}
        assert await s.request("phoenix/getRoute", {}) == {"route": "agent"}
    kept = {"theme": "dark"} if "theme" in content else {}
    assert _file(data) == {**kept, "route": "agent"}
    log = _log(data)
    warning = next((line for line in log.splitlines() if "ui_settings.json" in line and said in line), None)
    assert warning is not None, log[-3000:]
    assert "WARNING" in warning and "using the route 'ask'" in warning, warning


@pytest.mark.req("REQ-PROTO-052", "REQ-PROTO-003")
async def test_a_file_that_cannot_be_written_is_a_clear_error_and_changes_nothing(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    (data / "ui_settings.json").mkdir(parents=True)  # a directory in its place: unreadable and unwritable as a file
    async with session(fake_anthropic, tmp_path, data_dir=data) as s:
        assert await s.request("phoenix/getRoute", {}) == {"route": "ask"}
        error = await s.error("phoenix/setRoute", {"route": "agent"})
        assert error.code == -32007, error
        assert error.data == {"kind": "settingsNotSaved", "path": str(data / "ui_settings.json")}, error
        assert error.message.startswith("The route was not changed: ") and "choose the route again" in error.message
        assert await s.request("phoenix/getRoute", {}) == {"route": "ask"}
    assert (data / "ui_settings.json").is_dir()
    assert [p.name for p in data.iterdir() if p.name.endswith(".tmp")] == [], "no temporary file is left"


@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
async def test_one_choice_for_every_server_on_the_data_directory(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    """Two server processes on one data directory (say VS Code's and Neovim's): a route set through one is what
    the other reports, whether it started before or after, and either way round; nothing is cached per process."""
    data = tmp_path / "data"
    async with session(fake_anthropic, tmp_path, data_dir=data) as first:
        assert await first.request("phoenix/setRoute", {"route": "agent"}) == {"route": "agent", "previous": "ask"}
        async with raw_server(data) as second:  # started afterwards, while the first still runs
            await second.initialize(first.workdir)
            assert (await second.request("phoenix/getRoute", {}))["result"] == {"route": "agent"}
            answer = await second.request("phoenix/setRoute", {"route": "ask"})
            assert answer["result"] == {"route": "ask", "previous": "agent"}, answer
            assert await first.request("phoenix/getRoute", {}) == {"route": "ask"}
            await first.request("phoenix/setRoute", {"route": "agent"})
            assert (await second.request("phoenix/getRoute", {}))["result"] == {"route": "agent"}
    assert _file(data) == {"route": "agent"}
