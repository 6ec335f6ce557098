"""The bounds of each kind of input (limits.py) and the id of a whole message found without decoding it."""

from __future__ import annotations

import pytest

from phoenix_lsp import limits
from phoenix_lsp.server.transport import message_id


@pytest.mark.req("REQ-PROTO-063")
def test_an_answer_has_its_methods_bounds_never_above_the_messages() -> None:
    whole = limits.message(64 * 1024 * 1024, 1_000_000)
    diagnostics = limits.answer("phoenix/editorDiagnostics", whole)
    assert diagnostics.max_bytes == 4 * 1024 * 1024 and diagnostics.max_tokens == 200_000
    assert limits.answer("some/otherMethod", whole) == whole and limits.answer(None, whole) == whole
    small = limits.message(64 * 1024, 10_000)  # a message limit set lower wins
    lowered = limits.answer("phoenix/editorDiagnostics", small)
    assert (lowered.max_bytes, lowered.max_tokens) == (64 * 1024, 10_000)


@pytest.mark.req("REQ-PROTO-061")
@pytest.mark.parametrize(("body", "refused"), [
    (b'{"a":[1,2,3]}', None),
    (b'{"a":"' + b"x" * 200 + b'"}', "bytes long, over the limit of 100 bytes"),
    (b"[" * 12 + b"]" * 12, "levels deep"),
    (b"[" + b'"a",' * 20 + b'"a"]', "strings, commas and brackets"),
])
def test_bounds_refuse_what_is_over_and_say_which(body: bytes, refused: str | None) -> None:
    bounds = limits.Bounds("the test input", 100, 41, max_depth=10)
    if refused is None:
        bounds.check(body)
    else:
        with pytest.raises(limits.Refused, match=refused):
            bounds.check(body)


@pytest.mark.req("REQ-PROTO-063")
def test_a_tool_input_is_decoded_within_its_bounds() -> None:
    assert limits.decode('{"path": "a.py"}', limits.TOOL_INPUT) == {"path": "a.py"}
    with pytest.raises(ValueError, match="levels deep"):
        limits.decode('{"a":' + "[" * 5_000 + "]" * 5_000 + "}", limits.TOOL_INPUT)


@pytest.mark.req("REQ-PROTO-063")
@pytest.mark.parametrize(("body", "found"), [
    (b'{"jsonrpc":"2.0","id":"ab-1","result":{"files":[]}}', "ab-1"),
    (b'{"jsonrpc":"2.0","result":{"files":[' + b" " * 100_000 + b']},"id":"ab-2"}', "ab-2"),  # last, after 64 KiB
    (b'{"jsonrpc":"2.0","result":{"files":[' + b" " * 100_000 + b']}, "id" : 17 }\r\n', 17),
    (b'{"jsonrpc":"2.0","result":{"x":' + b" " * 100_000 + b'{"id":5}}}', None),  # a nested id is not the id
    (b'{"jsonrpc":"2.0","result":{"x":' + b" " * 100_000 + b'}, "id": true}', None),
])
def test_the_id_of_an_answer_is_found_first_or_last_without_decoding(body: bytes, found: object) -> None:
    assert message_id(body) == found
