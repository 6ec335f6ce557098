"""The prompt of a headless run (REQ-RUN-002): the argument, or stdin when it is absent or ``-``; stdin beside an
argument is context, attached to the message. stdin is bounded (``limits.RUN_STDIN_MAX_BYTES``) before it is
decoded."""

from __future__ import annotations

from dataclasses import dataclass
from typing import BinaryIO

from ... import limits


class PromptError(ValueError):
    """The prompt cannot be used; the message says what, why and what to do."""


@dataclass(frozen=True)
class Prompt:
    text: str
    context: str | None = None  # stdin beside an argument


def read_bounded(stream: BinaryIO, limit: int = limits.RUN_STDIN_MAX_BYTES) -> str:
    """At most ``limit`` bytes of ``stream``, decoded as UTF-8; more, or bytes that are not UTF-8, is refused."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise PromptError(f"stdin holds more than {limit:,} bytes, the most a run reads from it (it was not "
                          "read further nor sent). Send a shorter text, or name the files in the prompt and let the "
                          "agent read them.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PromptError(f"stdin is not UTF-8 text (byte {exc.start}); nothing was sent. Pipe text, or name a "
                          "binary file in the prompt instead.") from None


def read_prompt(argument: str | None, stdin: BinaryIO | None, stdin_is_terminal: bool) -> Prompt:
    """The prompt from ``argument`` (None or ``-``: from stdin) and the context from stdin beside it (read only
    when stdin is not a terminal)."""
    if argument is None or argument == "-":
        if stdin is None or stdin_is_terminal:
            raise PromptError("no prompt: give it as an argument (phoenix-lsp run 'what to do'), or pipe it on "
                              "stdin (echo 'what to do' | phoenix-lsp run).")
        text = read_bounded(stdin)
        if not text.strip():
            raise PromptError("the prompt read from stdin is empty: pipe the text to send, or give it as an argument.")
        return Prompt(text)
    if not argument.strip():
        raise PromptError("the prompt is empty: give the text to send as the argument.")
    context = None
    if stdin is not None and not stdin_is_terminal:
        piped = read_bounded(stdin)
        context = piped if piped.strip() else None
    return Prompt(argument, context)


def context_attachment(context: str) -> str:
    """stdin beside an argument as the attachment the model sees (fenced so it cannot close its fence)."""
    longest, run = 2, 0
    for ch in context:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    return f"The user piped this on standard input, as context for the prompt:\n{fence}\n{context}\n{fence}"
