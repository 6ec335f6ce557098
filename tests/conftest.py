"""Project-wide fixtures and the requirement-traceability collection hook."""

from __future__ import annotations

import pytest

from tests.fake_anthropic import fake_anthropic

__all__ = ["fake_anthropic"]

#: requirement id -> test node ids naming it, filled while collecting
REQ_INDEX: dict[str, list[str]] = {}


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in item.iter_markers("req"):
            for req in marker.args:
                REQ_INDEX.setdefault(str(req), []).append(item.nodeid)
