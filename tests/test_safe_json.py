"""The depth scan of safe_json: brackets in strings and escapes do not fool it, and it never recurses."""

from __future__ import annotations

import pytest

from phoenix_lsp import safe_json


@pytest.mark.req("REQ-SEC-005")
@pytest.mark.parametrize(("text", "deeper"), [
    ("[" * 64 + "]" * 64, False),
    ("[" * 65 + "]" * 65, True),
    ('{"a":' * 65 + "1" + "}" * 65, True),
    ('["' + "[" * 100 + '"]', False),  # inside a string
    ('["\\"' + "[" * 100 + '"]', False),  # an escaped quote does not end the string
    ('["\\\\"' + "[" * 100 + "]" * 100 + "]", True),  # an escaped backslash does: the brackets are outside
    ('"never closed ' + "[" * 100, False),
    ("[]" * 10_000, False),  # many, but shallow
    ("[" * 200_000, True),
])
def test_depth_is_measured_outside_strings(text: str, deeper: bool) -> None:
    assert safe_json.deeper_than(text) is deeper
    assert safe_json.deeper_than(text.encode()) is deeper


@pytest.mark.req("REQ-SEC-005")
def test_loads_refuses_deep_text_with_a_value_error_that_says_what_to_do() -> None:
    with pytest.raises(ValueError, match=r"more than 64 levels deep.*less nesting"):
        safe_json.loads("[" * 100_000 + "]" * 100_000)
    assert safe_json.loads('{"a": [[1]]}') == {"a": [[1]]}


@pytest.mark.req("REQ-SEC-005")
def test_a_decoded_value_is_measured_without_recursion() -> None:
    value: list[object] = []
    for _ in range(100_000):
        value = [value]
    assert safe_json.value_deeper_than(value)
    assert not safe_json.value_deeper_than({"a": [[{"b": 1}]]})
