"""The suite's start order under xdist (tests/longest_first.py): the longest tests first, a module that shares an
expensive fixture kept whole, ties in the collected order, and every listed duration naming a test that exists."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests import longest_first
from tests.longest_first import KNOWN, SLOW_S, TOGETHER
from tests.longest_first import longest_first as order

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class FakeItem:
    """What the order reads of a pytest item: its node id and whether it is marked slow."""

    nodeid: str
    slow: bool = False
    marks: list[str] = field(default_factory=list)

    def get_closest_marker(self, name: str) -> Any:
        return object() if name == "slow" and self.slow else None


def _ids(items: list[Any]) -> list[str]:
    return [item.nodeid for item in items]


def test_known_long_tests_start_first_then_slow_ones_then_the_rest_in_collected_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(longest_first, "KNOWN", {"tests/b.py::long": 90.0, "tests/c.py::longer": 120.0})
    items = [FakeItem("tests/a.py::one"), FakeItem("tests/a.py::slow_one", slow=True), FakeItem("tests/b.py::long"),
             FakeItem("tests/b.py::two"), FakeItem("tests/c.py::longer"), FakeItem("tests/c.py::slow_two", slow=True),
             FakeItem("tests/c.py::three")]
    assert _ids(order(items)) == ["tests/c.py::longer", "tests/b.py::long", "tests/a.py::slow_one",
                                  "tests/c.py::slow_two", "tests/a.py::one", "tests/b.py::two", "tests/c.py::three"]


def test_a_module_sharing_an_expensive_fixture_moves_as_one_block_ranked_by_its_sum(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Split between workers, the module's fixture would be set up on each: its tests stay together, in their
    order, placed by what they take together."""
    monkeypatch.setattr(longest_first, "KNOWN", {"tests/x.py::set_up_here": 50.0, "tests/y.py::alone": 52.0})
    monkeypatch.setattr(longest_first, "TOGETHER", frozenset({"tests/x.py"}))
    items = [FakeItem("tests/w.py::quick"), FakeItem("tests/x.py::first"), FakeItem("tests/x.py::set_up_here"),
             FakeItem("tests/x.py::last", slow=True), FakeItem("tests/y.py::alone")]
    # the block's 50 + 5 outranks the single 52-second test
    assert SLOW_S == 5.0
    assert _ids(order(items)) == ["tests/x.py::first", "tests/x.py::set_up_here", "tests/x.py::last",
                                  "tests/y.py::alone", "tests/w.py::quick"]


def test_the_order_only_moves_tests() -> None:
    items = [FakeItem(f"tests/m{n % 7}.py::t{n}", slow=n % 3 == 0) for n in range(200)]
    assert sorted(_ids(order(items))) == sorted(_ids(items))


def test_every_listed_test_and_module_exists() -> None:
    """A renamed test would keep a stale line here and lose its place at the front: each name is checked against
    its file."""
    for nodeid in KNOWN:
        path, name = nodeid.split("::", 1)
        test = re.escape(name.split("[", 1)[0].split("::")[0])  # a function, or the class that holds it
        source = (ROOT / path).read_text()
        assert re.search(rf"^(async def|def|class) {test}\b|^{test} = ", source, re.M), f"{nodeid}: not in {path}"
    for module in TOGETHER:
        assert (ROOT / module).is_file(), module
