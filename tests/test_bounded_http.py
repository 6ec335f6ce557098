"""``bounded_http``: an HTTP answer bounded as it arrives, per event, before an SDK reads it (REQ-PROTO-063)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from phoenix_lsp import bounded_http, limits

SMALL = limits.HttpBounds("the test's answer", limits.Bounds("one event", 1000, 50, max_depth=8), 10_000,
                          "Do less.")


class _Chunks:
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks
        self.closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self.chunks:
            yield chunk

    async def aclose(self) -> None:
        self.closed = True


def _read(chunks: list[bytes], bounds: limits.HttpBounds = SMALL) -> bytes:
    async def go() -> bytes:
        stream = bounded_http.BoundedStream(_Chunks(chunks), bounds)
        return b"".join([chunk async for chunk in stream])

    return asyncio.run(go())


@pytest.mark.req("REQ-PROTO-063")
def test_events_within_the_bounds_pass_unchanged_however_they_are_cut() -> None:
    for end in (b"\n", b"\r\n", b"\r"):  # SSE's three line ends
        events = b"".join(b'event: delta%sdata: {"a":[%d,[[[[{"b":"]]]]]]]]]]"}]]]]]}%s%s' % (end, i, end, end)
                          for i in range(20))
        for size in (1, 2, 7, 64, len(events)):
            chunks = [events[i:i + size] for i in range(0, len(events), size)]
            assert _read(chunks) == events


@pytest.mark.req("REQ-PROTO-063")
def test_a_crlf_cut_between_two_chunks_is_one_line_end_not_a_blank_line() -> None:
    # the two halves of a 9-deep event, each 5 deep: were the CR and LF two line ends, each half would pass alone
    with pytest.raises(bounded_http.TooBig, match="more than 8 levels deep"):
        _read([b"data: [[[[[\r", b"\ndata: [[[[1]]]]]]]]]\r\n\r\n"])


@pytest.mark.req("REQ-PROTO-063")
def test_a_line_over_the_event_bound_is_refused_before_it_ends() -> None:
    with pytest.raises(bounded_http.TooBig, match=r"one event is 1,0[0-9][0-9] bytes long or more, over the limit "
                                                  r"of 1,000 bytes.*not read further. Do less"):
        _read([b"data: ", *[b"x" * 100] * 100])  # never ends, and is cut at the bound


@pytest.mark.req("REQ-PROTO-063")
def test_nesting_across_the_lines_of_one_event_or_a_json_answer_is_measured_whole() -> None:
    with pytest.raises(bounded_http.TooBig, match="more than 8 levels deep"):
        _read([b"data: [\n" * 9, b"data: 1\n", b"\n"])
    with pytest.raises(bounded_http.TooBig, match="more than 8 levels deep"):
        _read([b'{"a":\n' * 9, b"1", b"}" * 9])  # no blank line: the whole answer is one unit
    assert _read([b"data: [[[[\n\n"] * 5) == b"data: [[[[\n\n" * 5  # each event on its own


@pytest.mark.req("REQ-PROTO-063")
def test_too_many_tokens_in_one_event_and_the_whole_answer_are_refused() -> None:
    with pytest.raises(bounded_http.TooBig, match="more than 50 strings"):
        _read([b"data: [" + b'"",' * 60 + b"1]\n\n"])
    with pytest.raises(bounded_http.TooBig, match=r"the test's answer is 10,[0-9,]+ bytes long or more, over the "
                                                  r"limit of 10,000"):
        _read([b"data: 1\n\n" * 100] * 20)


@pytest.mark.req("REQ-PROTO-063")
def test_a_wrapped_refusal_is_found_and_the_models_listing_has_its_own_bound() -> None:
    try:
        try:
            raise bounded_http.TooBig("over")
        except bounded_http.TooBig as exc:
            raise RuntimeError("the SDK's wrapper") from exc
    except RuntimeError as wrapped:
        assert isinstance(bounded_http.found(wrapped), bounded_http.TooBig)
    assert bounded_http.found(RuntimeError("no")) is None
    assert limits.provider_answer("/v1/models") is limits.PROVIDER_LISTING
    assert limits.provider_answer("/v1/messages") is limits.PROVIDER_STREAM
