"""The MCP client's secrets (REQ-AGENT-016): the values of the servers' ``secretsRef`` it has resolved, scrubbed
from every message it makes and from every string of every tool result, where the result enters (with the
server's own redactor, when given). See ``mcp_hub.py``."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import SecretStr

#: resolved secrets shorter than this are not scrubbed from messages (they would garble every word)
MIN_SECRET_CHARS = 4


class McpSecrets:
    """The secrets of one MCP client: ``environ`` is where ``secretsRef`` is resolved (default: this process's
    environment); ``redact`` the server's redactor, applied to every string of a tool result too."""

    def __init__(self, *, environ: Mapping[str, str] | None, redact: Callable[[str], str] | None) -> None:
        self._environ = dict(os.environ if environ is None else environ)
        self._redact = redact
        self._secrets: list[SecretStr] = []
        self._secrets_lock = threading.Lock()

    def _scrub(self, text: str) -> str:
        """``text`` with every resolved secret value replaced."""
        with self._secrets_lock:
            values = [s.get_secret_value() for s in self._secrets]
        for value in values:
            if len(value) >= MIN_SECRET_CHARS:
                text = text.replace(value, "[secret]")
        return text

    def _scrub_value(self, value: Any) -> Any:
        """A tool result with every secret gone from every string in it (object keys too), at any depth. The
        secrets are gathered once for the whole value (the server's redactor's ``redactor()`` when it has one,
        ``SecretGuard``'s: it reads the environment once, not at each of a thousand records' strings)."""
        with self._secrets_lock:
            values = [v for v in (s.get_secret_value() for s in self._secrets) if len(v) >= MIN_SECRET_CHARS]
        batch = getattr(getattr(self._redact, "__self__", None), "redactor", None)
        redact = batch() if callable(batch) else self._redact

        def scrub(item: Any) -> Any:
            if isinstance(item, str):
                for secret in values:
                    item = item.replace(secret, "[secret]")
                return redact(item) if redact is not None else item
            if isinstance(item, list):
                return [scrub(part) for part in item]
            if isinstance(item, dict):
                return {scrub(str(key)): scrub(part) for key, part in item.items()}
            return item

        return scrub(value)
