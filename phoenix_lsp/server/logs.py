"""The server's log: a file in the data directory and ``window/logMessage``, secrets redacted (REQ-PROTO-034)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from ..store.secrets import SecretGuard


class RedactingFormatter(logging.Formatter):
    """Formats a record, then lets the process's one redactor replace every known secret (REQ-SEC-001)."""

    def __init__(self, fmt: str, guard: SecretGuard) -> None:
        super().__init__(fmt)
        self.guard = guard

    def format(self, record: logging.LogRecord) -> str:
        return self.guard.redact(super().format(record))


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
