"""The depth scan of safe_json: brackets in strings and escapes do not fool it, and it never recurses."""

from __future__ import annotations

import random
import re

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


def _reference_depth(text: str) -> int:
    """The nesting a plain character-by-character reading finds (closes with nothing open ignored)."""
    level = deepest = 0
    inside = escaped = False
    for c in text:
        if inside:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                inside = False
        elif c == '"':
            inside = True
        elif c in "[{":
            level += 1
            deepest = max(deepest, level)
        elif c in "]}" and level:
            level -= 1
    return deepest


@pytest.mark.req("REQ-PROTO-061")
def test_the_fast_scan_agrees_with_a_plain_reading_on_random_text(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safe_json, "_PART", 5)  # strings cross the parts the text is split in
    rng = random.Random(34)
    for _ in range(4_000):  # JSON-like text: a backslash only inside a string (outside one the decoder stops)
        pieces = [rng.choice(["[", "]", "{", "}", ",", "a", '"']) for _ in range(rng.randint(0, 30))]
        text, inside = "", False
        for piece in pieces:
            if piece == '"':
                inside = not inside
            elif inside and rng.random() < 0.3:
                piece = rng.choice(["\\\\", '\\"', "\\n"])
            text += piece
        depth = _reference_depth(text)
        for limit in (0, 1, 2, 3):
            assert safe_json.deeper_than(text, limit) is (depth > limit), (text, limit)


@pytest.mark.req("REQ-PROTO-061")
@pytest.mark.parametrize(("text", "tokens", "refused"), [
    ('["a","b"]', 5, False),  # 2 strings, 2 brackets, 1 comma
    ('["a","b"]', 4, True),
    ('["a,b,c,[[[]]]"]', 3, False),  # what is inside a string is no token
    ('["' + "a" * 10_000 + '"]', 3, False),  # one long string is one token
    ("[" + "1," * 1_000 + "1]", 1_000, True),  # numbers are counted by their commas
    ('["\\"", "\\\\"]', 5, False),  # escaped quotes and backslashes
])
def test_tokens_are_counted_outside_strings(text: str, tokens: int, refused: bool) -> None:
    if refused:
        with pytest.raises(safe_json.TooMany, match=r"more than [\d,]+ strings, commas and brackets.*Send fewer"):
            safe_json.bound(text, tokens=tokens)
    else:
        safe_json.bound(text, tokens=tokens)


@pytest.mark.req("REQ-PROTO-061")
def test_millions_of_strings_are_refused_from_their_quotes_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    text = b'{"a":[' + b'"x",' * 2_000_000 + b'"x"],"b":' + b"[]," * 100 + b"[]}"

    def no_split(raw: bytes) -> bytes:
        raise AssertionError("the strings were cut out one by one")

    monkeypatch.setattr(safe_json, "_outside", no_split)
    with pytest.raises(safe_json.TooMany, match=r"\(([\d,]+) or more\)") as refused:
        safe_json.bound(text, tokens=1_000_000)
    found = re.search(r"\(([\d,]+) or more\)", str(refused.value))
    assert found is not None
    # over the limit, and counted only until it was: not all 2,000,003 (the count holds the GIL)
    assert 1_000_000 < int(found.group(1).replace(",", "")) < 2_000_003
