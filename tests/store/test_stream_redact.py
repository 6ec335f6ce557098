"""The stream redactor (REQ-SEC-041): a secret written across the pieces of a stream never reaches a client,
whatever the split; joined, what is let through is ``redact`` of the whole text, and nothing is lost."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.store import SecretGuard
from phoenix_lsp.store.secrets import REDACTED
from phoenix_lsp.store.stream_redact import StreamRedactor

KEY = "sk-ant-api03-StreamKey0123456789abcdef"
QUOTED = "pa'ss\\word-with\nescapes"  # its repr forms differ from it: redact replaces those too


def _guard(*secrets: str) -> SecretGuard:
    guard = SecretGuard(environ={})
    for secret in secrets:
        guard.add_secret(secret)
    return guard


def _run(guard: SecretGuard, pieces: list[str]) -> list[str]:
    stream = StreamRedactor(guard)
    return [stream.feed(p) for p in pieces] + [stream.end()]


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@pytest.mark.req("REQ-SEC-041")
def test_a_secret_in_thirty_pieces_is_let_through_redacted_and_nothing_else_waits() -> None:
    text = f"Here it is: {KEY} - keep it safe."
    size = -(-len(text) // 30)
    pieces = [text[i:i + size] for i in range(0, len(text), size)]
    out = _run(_guard(KEY), pieces)
    assert "".join(out) == f"Here it is: {REDACTED} - keep it safe."
    sent = ""
    for part in out:
        sent += part
        assert KEY[:len(KEY) // 2] not in sent  # not even half of it reaches the client
    # text that cannot be the start of a secret is let through at once
    assert _run(_guard(KEY), ["hello ", "world"]) == ["hello ", "world", ""]


@pytest.mark.req("REQ-SEC-041")
def test_the_held_text_is_released_at_the_end_and_is_no_longer_than_a_secret() -> None:
    stream = StreamRedactor(_guard(KEY))
    assert stream.feed("the prefix sk-ant-") == "the prefix "
    assert stream.held == "sk-ant-"
    assert stream.feed("api") == ""
    assert stream.feed("03 was not a key") == "sk-ant-api03 was not a key"
    assert stream.feed("sk") == "" and stream.end() == "sk"  # the end decides: nothing is lost
    assert stream.end() == ""


@pytest.mark.req("REQ-SEC-041")
def test_a_stream_with_no_secret_known_holds_nothing() -> None:
    stream = StreamRedactor(_guard())
    assert stream.feed("sk-ant-") == "sk-ant-" and stream.held == ""


_alphabet = st.sampled_from(list("ab'\\\n-x"))


@pytest.mark.req("REQ-SEC-041")
@settings(max_examples=300, deadline=None)
@given(secrets=st.lists(st.text(_alphabet, min_size=8, max_size=14), min_size=1, max_size=3),
       filler=st.lists(st.text(_alphabet, max_size=12), min_size=1, max_size=6),
       cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=40),
       data=st.data())
def test_for_any_split_the_joined_output_is_redact_of_the_whole_and_no_start_holds_a_secret(
        secrets: list[str], filler: list[str], cuts: list[int], data: st.DataObject) -> None:
    guard = _guard(*secrets)
    # text made of the secrets (in every form redact knows), their pieces and other text, in any order
    forms = [f for s in secrets for f in (s, repr(s)[1:-1], repr(s.encode())[2:-1], s[: len(s) // 2])]
    parts = data.draw(st.lists(st.sampled_from(forms + filler), max_size=12))
    text = "".join(parts)
    out = _run(guard, _split(text, cuts))
    assert "".join(out) == guard.redact(text)
    sent = ""
    for part in out:
        sent += part
        assert not any(f in sent for s in secrets for f in (s, repr(s)[1:-1], repr(s.encode())[2:-1])
                       if f not in guard.redact(text)), "a secret was assembled before the end"


@pytest.mark.req("REQ-SEC-041")
def test_escaped_forms_are_held_back_too() -> None:
    escaped = repr(QUOTED)[1:-1]
    out = _run(_guard(QUOTED), list(f"said {escaped}!"))
    assert "".join(out) == f"said {REDACTED}!"
