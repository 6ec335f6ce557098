"""The terminal chat's input reader (``client/items.read_lines``), on a real pipe: lines in order, and a line
over the message limit dropped as it is read, whether its newline comes or the input ends first (REQ-TERM-005)."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest

from phoenix_lsp.client.items import EOF, LINE_MAX, Line, TooLong, read_lines
from phoenix_lsp.protocol.params import MESSAGE_TEXT_MAX


def read_all(data: bytes, most: int) -> list[Any]:
    """Everything ``read_lines`` posts for ``data`` written to a pipe in one go (a writer thread)."""
    read_fd, write_fd = os.pipe()
    posted: list[Any] = []

    def write() -> None:
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        read_lines(read_fd, posted.append, most)
    finally:
        writer.join()
        os.close(read_fd)
    return posted


@pytest.mark.req("REQ-TERM-005")
def test_the_limit_is_the_servers_message_limit() -> None:
    assert LINE_MAX == MESSAGE_TEXT_MAX


@pytest.mark.req("REQ-TERM-005")
def test_lines_within_the_limit_come_whole_and_in_order() -> None:
    posted = read_all("one\r\ntwo é\n\nlast without newline".encode(), most=100)
    assert posted == [Line("one"), Line("two é"), Line(""), Line("last without newline"), EOF]


@pytest.mark.req("REQ-TERM-005")
def test_a_line_over_the_limit_is_dropped_and_counted_and_the_next_one_comes() -> None:
    long = "é" * 300_000  # two bytes each, over several reads
    posted = read_all(f"before\n{long}\nafter\n".encode(), most=1000)
    assert posted == [Line("before"), TooLong(300_000), Line("after"), EOF]


@pytest.mark.req("REQ-TERM-005")
def test_input_that_ends_inside_an_over_long_line_says_so() -> None:
    posted = read_all(b"x" * 200_000, most=1000)
    assert posted == [TooLong(200_000, ended=True), EOF]
    assert "the input ended inside it" in posted[0].refusal()


@pytest.mark.req("REQ-TERM-005")
def test_a_line_of_exactly_the_limit_is_kept() -> None:
    assert read_all(b"y" * 1000 + b"\n", most=1000) == [Line("y" * 1000), EOF]
    assert read_all(b"y" * 1001 + b"\n", most=1000) == [TooLong(1001), EOF]
