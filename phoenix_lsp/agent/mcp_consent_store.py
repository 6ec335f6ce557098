"""The user's answers about the project's MCP servers (REQ-MCP-009), kept in the server's data directory.

``mcp_consents.json`` there maps a definition's hash (``mcp_sources.digest``) to the answer, with the server's name
and folder for doctor. It lives in the data directory, never in the workspace: a cloned repository must not be
able to approve its own servers (nothing the workspace holds is read as a consent). Written whole and atomically,
readable by the user only; read bounded. A file that cannot be read counts as no consent at all (so every
project server is asked about again), never as an approval.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path

from .. import atomic, confined, limits
from ..core.mcp_consent import Consent

log = logging.getLogger(__name__)

FILE_NAME = "mcp_consents.json"
#: the most answers kept (the oldest go first): one per definition a user ever answered about
MAX_ENTRIES = 10_000


class ConsentStore:
    """The consents of one server's data directory (thread-safe)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._lock = threading.Lock()

    def load(self) -> dict[str, Consent]:
        """Definition hash -> the latest answer."""
        return {digest: Consent(entry["decision"]) for digest, entry in self._entries().items()}

    def record(self, digest: str, consent: Consent, *, name: str, folder: Path | None) -> None:
        """Keep the answer about one definition. Raises OSError when it cannot be written (the caller says so:
        the server is then asked about again next time)."""
        with self._lock:
            entries = self._entries()
            entries.pop(digest, None)
            entries[digest] = {"decision": consent.value, "server": name,
                               "folder": str(folder) if folder is not None else None, "time": time.time()}
            kept = dict(list(entries.items())[-MAX_ENTRIES:])
            self.path.parent.mkdir(parents=True, exist_ok=True)
            data = json.dumps({"version": 1, "consents": kept}, indent=1).encode()
            atomic.write_bytes(self.path, data)
            os.chmod(self.path, 0o600)

    def _entries(self) -> dict[str, dict[str, object]]:
        if not os.path.lexists(self.path):
            return {}
        try:
            data = confined.read(self.path, [self.path.parent], max_bytes=limits.MCP_CONSENTS.max_bytes).data
            top = limits.decode(data, limits.MCP_CONSENTS)
            consents = top.get("consents", {}) if isinstance(top, dict) else {}
            return {str(k): v for k, v in consents.items()
                    if isinstance(v, dict) and v.get("decision") in ("approved", "declined")}
        except (confined.ReadRefused, ValueError, AttributeError) as exc:
            log.warning("the MCP consents in %s cannot be read (%s): every project server is asked about again",
                        self.path, exc)
            return {}


__all__ = ["FILE_NAME", "ConsentStore"]
