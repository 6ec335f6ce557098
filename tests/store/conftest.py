"""Fixtures for the store tests: every test gets a real SQLite file in its own temporary directory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from phoenix_lsp.store import ConversationRecord, Store

MakeRecord = Callable[..., ConversationRecord]


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # A key in the developer's environment must not change what these tests write or refuse.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "data" / "phoenix.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[Store]:
    with Store(db_path) as opened:
        yield opened


@pytest.fixture
def make_record() -> MakeRecord:
    """Build a ConversationRecord with sensible defaults; keyword arguments override fields."""
    counter = iter(range(1_000_000))

    def make(**fields: object) -> ConversationRecord:
        n = next(counter)
        values: dict[str, object] = {
            "id": f"conv-{n}",
            "parent_id": None,
            "origin_id": None,
            "is_subagent": False,
            "working_directory": "/path/to/project",
            "model": "claude-sonnet-4-5",
            "title": f"conversation {n}",
            "created_at": 1_700_000_000.0 + n,
        }
        values.update(fields)
        return ConversationRecord(**values)  # type: ignore[arg-type]

    return make
