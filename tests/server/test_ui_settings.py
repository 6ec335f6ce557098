"""``ui_settings.json`` in the data directory (REQ-PROTO-051, REQ-PROTO-052): the route read and written without
the server (the fast tier; tests/e2e/test_route.py drives the same through the protocol)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from phoenix_lsp.server import ui_settings
from phoenix_lsp.server.ui_settings import read_route, write_route


def _file(data_dir: Path) -> object:
    return json.loads((data_dir / "ui_settings.json").read_text(encoding="utf-8"))


@pytest.mark.req("REQ-PROTO-051")
def test_no_file_is_ask_and_reading_writes_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert read_route(tmp_path / "missing") == "ask"
        assert read_route(tmp_path) == "ask"
    assert list(tmp_path.iterdir()) == [] and not caplog.records


@pytest.mark.req("REQ-PROTO-052")
def test_write_returns_the_previous_route_and_keeps_other_keys(tmp_path: Path) -> None:
    data = tmp_path / "data"  # created by the first write
    assert write_route(data, "agent") == "ask"
    assert _file(data) == {"route": "agent"} and read_route(data) == "agent"
    (data / "ui_settings.json").write_text(json.dumps({"route": "agent", "theme": {"dark": True}, "n": 3}))
    assert write_route(data, "ask") == "agent"
    assert _file(data) == {"route": "ask", "theme": {"dark": True}, "n": 3}
    assert write_route(data, "ask") == "ask"
    assert sorted(p.name for p in data.iterdir()) == ["ui_settings.json"], "no temporary file is left"


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"{not json", "is not valid JSON"),
        (b"\xff\xfe", "could not be read"),
        (b"[1, 2]", "holds a JSON list, not an object"),
        (b'{"route": "Agent"}', "'Agent', which is no route (expected one of ask, agent)"),
        (b'{"route": null}', "None, which is no route"),
    ],
    ids=["corrupt", "not-utf8", "list", "wrong-case", "null"],
)
@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
def test_a_file_that_cannot_be_used_is_ask_with_a_warning_and_a_write_replaces_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes, said: str
) -> None:
    path = tmp_path / "ui_settings.json"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING, logger=ui_settings.__name__):
        assert read_route(tmp_path) == "ask"
    [record] = caplog.records
    message = record.getMessage()
    assert record.levelno == logging.WARNING and str(path) in message and said in message, message
    assert "using the route 'ask'" in message, message
    assert path.read_bytes() == content, "reading never rewrites the file"
    assert write_route(tmp_path, "agent") == "ask"
    assert _file(tmp_path) == {"route": "agent"}


@pytest.mark.req("REQ-PROTO-052")
def test_a_failed_write_leaves_the_file_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_route(tmp_path, "agent")

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_route(tmp_path, "ask")
    assert _file(tmp_path) == {"route": "agent"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ui_settings.json"], "the temporary file is removed"


def test_only_the_two_routes_are_written(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'fast' is no route: expected one of ask, agent"):
        write_route(tmp_path, "fast")  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_the_value_set_is_the_protocols() -> None:
    from typing import get_args

    from phoenix_lsp.protocol.params import Route

    assert ui_settings.ROUTES == get_args(Route) == ("ask", "agent")
