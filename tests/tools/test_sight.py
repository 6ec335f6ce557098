"""The "what is new" comparison of the editor's problems around an edit, and the texts the model is given
(issue 29, REQ-SIGHT-001)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from phoenix_lsp.tools.patch import Position, Range, TextEdit
from phoenix_lsp.tools.sight import (
    MAX_LISTED,
    Location,
    Problem,
    SymbolInput,
    column_of,
    line_span,
    locations_text,
    new_problems,
    patch_report,
    problems_text,
)

pytestmark = pytest.mark.req("REQ-SIGHT-001")


def edit(start: int, end: int, text: str, start_char: int = 0, end_char: int = 0) -> TextEdit:
    return TextEdit(Range(Position(start, start_char), Position(end, end_char)), text)


def p(line: int, message: str = "Undefined name `x`", severity: int = 1, character: int = 0,
      source: str = "Ruff", code: str = "F821") -> Problem:
    return Problem(line, character, severity, message, source, code)


def test_a_problem_moved_by_the_line_shift_is_not_new() -> None:
    edits = [edit(0, 0, "import sys\nimport re\n")]  # two lines in front of line 0
    assert new_problems([p(5)], [p(7)], edits) == []
    assert new_problems([p(5)], [p(5)], edits) == [p(5)], "the old problem moved to 7: the one on 5 is new"


def test_lines_removed_shift_the_lines_after_them_up() -> None:
    edits = [edit(2, 5, "")]  # lines 2, 3, 4 removed
    assert line_span(1, edits) == (1, 1)
    assert line_span(9, edits) == (6, 6)
    assert new_problems([p(9)], [p(6)], edits) == []


def test_a_problem_on_an_edited_line_may_be_anywhere_in_what_replaced_it() -> None:
    edits = [edit(3, 3, "  more", 4, 8)]  # within line 3
    assert line_span(3, edits) == (3, 3)
    assert new_problems([p(3, character=10)], [p(3, character=12)], edits) == []
    wide = [edit(3, 4, "a\nb\nc\n")]  # line 3 replaced by three lines
    assert line_span(3, wide) == (3, 6)
    assert new_problems([p(3)], [p(5)], wide) == []


def test_each_old_problem_accounts_for_one_new_one() -> None:
    assert new_problems([p(1)], [p(1), p(1, character=4)], []) == [p(1, character=4)]


def test_a_different_message_source_code_or_severity_is_new() -> None:
    for other in (p(1, "other"), p(1, source="pyright"), p(1, code="F401"), p(1, severity=2)):
        assert new_problems([p(1)], [other], []) == [other]


def test_several_edits_add_their_shifts() -> None:
    edits = [edit(1, 1, "a\n"), edit(4, 6, ""), edit(10, 10, "b\nc\nd\n")]
    assert line_span(0, edits) == (0, 0)
    assert line_span(3, edits) == (4, 4)  # +1
    assert line_span(8, edits) == (7, 7)  # +1 -2
    assert line_span(12, edits) == (14, 14)  # +1 -2 +3


problems = st.builds(p, line=st.integers(0, 50), message=st.sampled_from(["a", "b", "c"]),
                     severity=st.integers(1, 4), character=st.integers(0, 20))


@given(st.lists(problems, max_size=12), st.integers(0, 60), st.integers(0, 5))
def test_problems_that_only_moved_are_never_new(before: list[Problem], at: int, added: int) -> None:
    """Lines inserted at line ``at``: every old problem at or after it moves down by ``added``."""
    edits = [edit(at, at, "x\n" * added)]
    moved = [Problem(q.line + added if q.line > at else q.line, q.character, q.severity, q.message, q.source, q.code)
             for q in before]
    assert new_problems(before, moved, edits) == []


@given(st.lists(problems, max_size=12), st.lists(problems, max_size=12))
def test_what_is_new_is_part_of_after_and_no_more_than_it_outnumbers_before(
    before: list[Problem], after: list[Problem]
) -> None:
    fresh = new_problems(before, after, [])
    assert all(f in after for f in fresh)
    assert len(fresh) >= len(after) - len(before)


def test_the_report_names_each_new_problem_with_its_source() -> None:
    text = patch_report("app.py", [], [p(11, character=4, message='"x" is not defined', source="pyright", code="")],
                        [])
    assert text == ('After this patch the editor reports 1 error new in app.py:\n'
                    '- 12:5 error pyright: "x" is not defined')


def test_nothing_new_is_said_in_a_few_words() -> None:
    assert patch_report("app.py", [p(1)], [p(1)], []) == "The editor reports no new problems in app.py."
    # infos and hints are not reported as problems of the patch
    assert patch_report("app.py", [], [p(1, severity=3), p(2, severity=4)], []).startswith("The editor reports no")


def test_the_report_is_capped() -> None:
    many = [p(i, message=f"problem {i} " + "y" * 1000) for i in range(40)]
    text = patch_report("app.py", [], many, [])
    assert text.count("\n- ") == MAX_LISTED + 1 and text.endswith(f"- and {40 - MAX_LISTED} more")
    assert len(text) < 4_000


def test_problems_and_locations_texts() -> None:
    assert problems_text({}, "app.py") == "The editor shows no problems in app.py."
    text = problems_text({"b.py": [p(0, severity=2)], "a.py": [p(3)]}, "the files the editor knows")
    assert text.index("a.py:") < text.index("b.py:") and "2 problems" in text
    places = [Location("app.py", 3, 4, "def area(r):"), Location("/lib/x.py", 0, 0)]
    found = locations_text("references", "area", places)
    assert found == "The editor found 2 references of area:\napp.py:4:5  def area(r):\n/lib/x.py:1:1"
    assert "no definition for area" in locations_text("definition", "area", [])


def test_a_symbol_is_found_on_its_line_in_utf16_columns() -> None:
    assert column_of("print(area(2))", "area") == 6
    assert column_of("s = '😀'; area", "area") == 10  # the emoji is two UTF-16 code units
    assert column_of("print(x)", "area") is None
    with pytest.raises(ValueError, match="symbol's name"):
        SymbolInput.model_validate({"path": "a.py", "line": 1})
