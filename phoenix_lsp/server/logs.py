"""The server's log: a file in the data directory and ``window/logMessage``, secrets redacted (REQ-PROTO-034).

Every handler the process installs formats with ``log_redact.RedactingFormatter`` (REQ-SEC-042).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from lsprotocol import types

from ..log_redact import RedactingFormatter

if TYPE_CHECKING:  # lsp.py imports this module at start-up; the store (and the core under it) load later
    from ..store.secrets import SecretGuard


class ClientLogHandler(logging.Handler):
    """Forwards the server's own log records to the client as window/logMessage."""

    LEVELS = {
        logging.ERROR: types.MessageType.Error,
        logging.WARNING: types.MessageType.Warning,
        logging.INFO: types.MessageType.Info,
    }

    def __init__(self, send: Callable[[types.LogMessageParams], Any], guard: SecretGuard) -> None:
        super().__init__(logging.INFO)
        self.send = send
        self.setFormatter(RedactingFormatter("%(name)s: %(message)s", guard))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = self.LEVELS.get(record.levelno, types.MessageType.Log)
            self.send(types.LogMessageParams(type=kind, message=self.format(record)))
        except Exception:  # logging must never break the server
            self.handleError(record)


class RateLimit(logging.Filter):
    """At most ``burst`` warnings and errors per ``window_s`` seconds from one logger; the others are counted,
    and the next line let through says how many were left out. Hostile input (REQ-PROTO-048) can cause one
    such line per message: the log must say so without growing by a traceback per message."""

    def __init__(self, burst: int = 20, window_s: float = 10.0, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst, self.window_s, self.clock = burst, window_s, clock
        self.started = -window_s
        self.passed = 0
        self.dropped = 0

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        if now - self.started >= self.window_s:
            self.started, self.passed = now, 0
        if self.passed >= self.burst:
            self.dropped += 1
            return False
        self.passed += 1
        if self.dropped:
            left_out = f"{self.dropped} similar lines left out: at most {self.burst} per {self.window_s:g} s"
            record.msg = f"{record.msg} ({left_out})"
            self.dropped = 0
        return True


#: the loggers that write a line (pygls: with a traceback) per malformed message or failed request
HOSTILE_INPUT_LOGGERS = (
    "phoenix_lsp.server.transport",
    "pygls.protocol.json_rpc",
    "pygls.protocol.language_server",
    "pygls.server",
    "pygls.feature_manager",
    "pygls.workspace.workspace",
    "pygls.workspace.text_document",
)


def limit_hostile_input_logs() -> None:
    """Rate-limit the loggers of :data:`HOSTILE_INPUT_LOGGERS` (once per process)."""
    for name in HOSTILE_INPUT_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, RateLimit) for f in logger.filters):
            logger.addFilter(RateLimit())


def to_stream(stream: TextIO, guard: SecretGuard, prefix: str) -> logging.Handler:
    """Warnings and errors also on ``stream`` (a headless run's stderr: its stdout carries only its output),
    through the one redacting formatter; the handler installed on the root logger is returned."""
    handler = logging.StreamHandler(stream)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(RedactingFormatter(f"{prefix}: %(levelname)s %(name)s: %(message)s", guard))
    logging.getLogger().addHandler(handler)
    return handler


def setup(data_dir: Path, level: str, guard: SecretGuard) -> None:
    """Log to a file in the data directory (never to stdout: that is the LSP channel)."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(data_dir / "phoenix-lsp.log")
    except OSError:
        handler = logging.StreamHandler()  # stderr
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", guard))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    logging.getLogger("pygls").setLevel(logging.WARNING)
