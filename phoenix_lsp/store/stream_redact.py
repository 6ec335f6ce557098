"""Redaction of a stream of text (REQ-SEC-041): a model's answer arrives in small pieces, and a client joins
them, so redacting each piece (or each batch of pieces) on its own lets a secret written across two of them
reach the client whole.

A :class:`StreamRedactor` holds back the end of the text that could still be the start of a known secret (or of
one of the escaped forms ``SecretGuard.redact`` replaces) until the next piece or the end of the stream decides
it, and lets through the rest, redacted. What it lets through, joined, is ``guard.redact`` of the whole text:
nothing more, nothing less, and no start of it ever holds a secret. ``end`` releases the held text, redacted;
it must be called when the stream ends, however it ends (done, failed, cancelled), or that text is lost.
"""

from __future__ import annotations

from .secrets import SecretGuard


class StreamRedactor:
    """The redaction of one stream of text (one model request's answer)."""

    def __init__(self, guard: SecretGuard) -> None:
        self.guard = guard
        self.held = ""

    def feed(self, piece: str) -> str:
        """The text that can be sent now that ``piece`` came, redacted; the rest waits for more."""
        text = self.held + piece
        cut = self.guard.decided(text)
        self.held = text[cut:]
        return self.guard.redact(text[:cut]) if cut else ""

    def end(self) -> str:
        """The held text, redacted: the stream is over."""
        text, self.held = self.held, ""
        return self.guard.redact(text) if text else ""
