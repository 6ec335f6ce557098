"""REQ-PROTO-054: the status words are written once (the core) and the catch-up rule once (for Python clients).

The words are pinned to the core's status classes and to the wire schema; a scan of the package fails on a new
copy of them or of the rule. The rule itself is pinned by its cases.
"""

from __future__ import annotations

import ast
import dataclasses
import json
from pathlib import Path
from typing import get_args

import pytest

from phoenix_lsp.core import state as core_state
from phoenix_lsp.protocol.catch_up import EventSeq
from phoenix_lsp.protocol.statuses import RESTING, STATUSES, WORKING, is_resting

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "phoenix_lsp"
#: where the words are defined (the core) and where the rule is written (for Python clients)
DEFINITION = PACKAGE / "core" / "state.py"
RULE = PACKAGE / "protocol" / "catch_up.py"


def _kind(cls: type) -> str:
    """The word a core status class names itself with (its ``kind`` field's default)."""
    [field] = [f for f in dataclasses.fields(cls) if f.name == "kind"]
    return str(field.default)


@pytest.mark.req("REQ-PROTO-054")
def test_the_status_words_are_the_cores_own() -> None:
    assert tuple(_kind(cls) for cls in get_args(core_state.Status)) == STATUSES
    assert len(set(STATUSES)) == len(STATUSES) == 10
    assert {_kind(cls) for cls in core_state.RESTING} == RESTING
    assert {_kind(cls) for cls in core_state.BUSY} == WORKING
    assert set(STATUSES) == RESTING | WORKING and not RESTING & WORKING
    assert [s for s in STATUSES if is_resting(s)] == ["idle", "error", "exhausted", "finished"]


@pytest.mark.req("REQ-PROTO-054")
def test_the_wire_schema_carries_exactly_the_cores_words() -> None:
    """The schema is what the VS Code extension's types are generated from: the same words reach TypeScript."""
    defs = json.loads((ROOT / "specs" / "protocol.schema.json").read_text())["$defs"]
    assert defs["Status"]["properties"]["status"]["enum"] == list(STATUSES)
    assert defs["Status"]["properties"]["previous"]["enum"] == list(STATUSES)
    assert defs["GetConversationResult"]["properties"]["status"]["enum"] == list(STATUSES)


def _status_literals(tree: ast.AST) -> list[tuple[int, set[str]]]:
    """Tuples, lists and sets in ``tree`` that spell two or more status words."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in STATUSES}
            if len(words) >= 2:
                found.append((node.lineno, words))
    return found


def _catch_up_rules(tree: ast.AST) -> list[tuple[int, str]]:
    """Comparisons of an event number with a number plus 1: the catch-up rule, written out."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            text = ast.unparse(node)
            if "seq" in text and "+ 1" in text:
                found.append((node.lineno, text))
    return found


@pytest.mark.req("REQ-PROTO-054")
def test_no_module_writes_the_words_or_the_rule_again() -> None:
    copies, rules = [], []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        where = path.relative_to(ROOT).as_posix()
        if path != DEFINITION:
            copies += [f"{where}:{line}: {sorted(words)}" for line, words in _status_literals(tree)]
        if path != RULE:
            rules += [f"{where}:{line}: {text}" for line, text in _catch_up_rules(tree)]
    assert not copies, ("status words spelt outside the core; take them from phoenix_lsp.protocol.statuses:\n"
                        + "\n".join(copies))
    assert not rules, ("the catch-up rule written outside phoenix_lsp/protocol/catch_up.py; use EventSeq:\n"
                       + "\n".join(rules))


@pytest.mark.req("REQ-PROTO-054")
def test_the_scans_see_a_copy_of_the_words_and_of_the_rule() -> None:
    sample = ast.parse('RESTING = ("idle", "error")\n'
                       'if last and event.seq > last + 1:\n    catch_up(last)\n'
                       'x = ("idle",)\n')
    assert [words for _, words in _status_literals(sample)] == [{"idle", "error"}]
    assert [text for _, text in _catch_up_rules(sample)] == ["event.seq > last + 1"]


@pytest.mark.req("REQ-PROTO-054", "REQ-PROTO-024", "REQ-PROTO-039")
def test_the_words_shown_for_a_status_cover_every_status() -> None:
    from phoenix_lsp.server import plain, transcript

    assert set(plain.STATUS_WORDS) == WORKING  # a turn's progress, while it runs
    assert set(plain.END_WORDS) == RESTING  # how it ended
    assert set(transcript.STATUS_WORDS) == set(STATUSES)


@pytest.mark.req("REQ-PROTO-054", "REQ-PROTO-007", "REQ-PROTO-020")
@pytest.mark.parametrize(("last", "seq", "missed", "after"), [
    (0, 1, None, 1),  # the first event
    (0, 7, None, 7),  # nothing processed yet: nothing to catch up from
    (3, 4, None, 4),  # the next one
    (3, 5, 3, 5),  # one missed: catch up after 3
    (3, 40, 3, 40),
    (5, 5, None, 5),  # again
    (5, 2, None, 5),  # late: the last processed never moves back
])
def test_the_catch_up_rule(last: int, seq: int, missed: int | None, after: int) -> None:
    order = EventSeq(last)
    assert order.arrive(seq) == missed
    assert order.last == after


@pytest.mark.req("REQ-PROTO-054", "REQ-PROTO-007")
def test_a_stream_with_holes_catches_up_once_per_hole() -> None:
    order = EventSeq()
    asked = [after for seq in (1, 2, 3, 6, 7, 7, 9, 4, 10) if (after := order.arrive(seq)) is not None]
    assert asked == [3, 7] and order.last == 10
