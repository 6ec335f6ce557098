"""Artifacts (REQ-AGENT-023): large results kept on disk, out of the model's context, named by a handle.

Content-addressed: ``artifact://sha256-<hex>``, where the digest covers the type and the bytes, so the same
value always gives the same handle (REQ-AGENT-021) and a second ``put`` writes nothing. A value is stored as
UTF-8 text (a ``str``: type ``text``) or canonical JSON (sorted keys, no spaces: type ``table`` for a list of
objects, ``json`` otherwise). A handle is validated strictly before any file is touched: only that exact
form is accepted, so no handle can name a path outside the directory. Writes are atomic (a temporary file in
the same directory, then a rename), and a value over the store's size cap is refused.

Scoped to a conversation (issue 24): the server never uses the artifact directory itself, only
``store.scoped(conversation_id)``, a directory of its own per conversation (``c-<sha256 of the id>``, so no id
can name a path). A handle is served only from the store of the conversation that made it, and
``remove_scope`` deletes a conversation's artifacts with it. An artifact file is read by the confined reader
(REQ-READ-003): a regular file beneath the directory, opened non-blocking, capped on the bytes read.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import confined
from ..atomic import write_bytes
from .contracts import ArtifactHandle

HANDLE = re.compile(r"artifact://sha256-(?P<digest>[0-9a-f]{64})")
TYPES = ("table", "text", "json")
#: the default cap on one artifact (a node's output is bounded by maxOutputBytes, at most 16 MiB)
MAX_ARTIFACT_BYTES = 32 << 20


class InvalidHandle(ValueError):
    """Not an artifact handle of this store's form (``artifact://sha256-<64 hex>``)."""


class ArtifactNotFound(LookupError):
    """A well-formed handle with no artifact behind it (or one whose content no longer matches)."""


class ArtifactTooLarge(ValueError):
    """The value is over the store's size cap."""


def canonical_json(value: Any) -> str:
    """The one JSON text of `value`: sorted keys, no spaces, non-ASCII kept."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def encode(value: Any) -> tuple[str, bytes]:
    """(type, bytes) of a value as it is stored."""
    if isinstance(value, str):
        return "text", value.encode("utf-8", "surrogatepass")
    kind = "table" if isinstance(value, list) and value and all(isinstance(row, dict) for row in value) else "json"
    return kind, canonical_json(value).encode("utf-8", "surrogatepass")


def digest(kind: str, data: bytes) -> str:
    return hashlib.sha256(kind.encode() + b"\n" + data).hexdigest()


def parse_handle(handle: str | ArtifactHandle) -> str:
    """The digest of a handle; raises InvalidHandle for anything but ``artifact://sha256-<64 lowercase hex>``."""
    text = handle.handle if isinstance(handle, ArtifactHandle) else handle
    match = HANDLE.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        shown = repr(text)[:80]
        raise InvalidHandle(f"{shown} is not an artifact handle; a handle is artifact://sha256-<64 hex digits>, "
                            "exactly as a result gave it")
    return match["digest"]


class ArtifactStore:
    """The artifact directory (``PHOENIX_ARTIFACT_DIR``)."""

    def __init__(self, directory: Path | str, *, max_bytes: int = MAX_ARTIFACT_BYTES) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.max_bytes = max_bytes

    @staticmethod
    def scope_name(conversation_id: str) -> str:
        """The directory name of a conversation's artifacts: a digest, so no id can name a path."""
        return "c-" + hashlib.sha256(conversation_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]

    def scoped(self, conversation_id: str) -> ArtifactStore:
        """The store of one conversation's artifacts (created on first use)."""
        return ArtifactStore(self.directory / self.scope_name(conversation_id), max_bytes=self.max_bytes)

    def remove_scope(self, conversation_id: str) -> bool:
        """Delete one conversation's artifacts; True when there were some."""
        return _remove(self.directory / self.scope_name(conversation_id))

    def sweep(self, conversation_ids: Iterable[str]) -> int:
        """Delete the artifacts of every conversation not among ``conversation_ids`` (those that no longer
        exist); returns how many conversations' artifacts went."""
        keep = {self.scope_name(cid) for cid in conversation_ids}
        gone = 0
        for entry in self.directory.iterdir():
            if entry.name.startswith("c-") and entry.name not in keep and _remove(entry):
                gone += 1
        return gone

    def _path(self, hexdigest: str, kind: str) -> Path:
        return self.directory / f"sha256-{hexdigest}.{kind}"

    def put(self, value: Any) -> ArtifactHandle:
        """Store `value` (a str, or any JSON value) and return its handle; the same value, the same handle."""
        kind, data = encode(value)
        if len(data) > self.max_bytes:
            raise ArtifactTooLarge(f"the value is {len(data)} bytes; an artifact may hold {self.max_bytes}. "
                                   "Produce a smaller result (filter or aggregate in the script)")
        hexdigest = digest(kind, data)
        path = self._path(hexdigest, kind)
        if not path.exists():
            write_bytes(path, data)
        return ArtifactHandle(handle=f"artifact://sha256-{hexdigest}", type=kind, size=len(data))

    def get(self, handle: str | ArtifactHandle) -> tuple[ArtifactHandle, bytes]:
        """The artifact behind `handle`: its handle (with type and size) and its bytes. Raises InvalidHandle
        for a malformed handle (before touching any file) and ArtifactNotFound when there is none."""
        hexdigest = parse_handle(handle)
        for kind in TYPES:
            path = self._path(hexdigest, kind)
            try:  # the confined reader: regular file beneath the directory, non-blocking, capped (REQ-READ-003)
                data = confined.read(path, [self.directory], max_bytes=self.max_bytes + 1).data
            except confined.ReadRefused as exc:
                if exc.reason == "missing":
                    continue
                raise ArtifactNotFound(f"artifact://sha256-{hexdigest} cannot be read: {exc}") from None
            if len(data) > self.max_bytes or digest(kind, data) != hexdigest:
                raise ArtifactNotFound(f"artifact://sha256-{hexdigest} is damaged (its content does not match "
                                       "its handle); run the plan again to recreate it")
            return ArtifactHandle(handle=f"artifact://sha256-{hexdigest}", type=kind, size=len(data)), data
        raise ArtifactNotFound(f"no artifact artifact://sha256-{hexdigest} in the artifact directory; it may have "
                               "been removed: run the plan again to recreate it")


def _remove(directory: Path) -> bool:
    if directory.is_symlink() or not directory.is_dir():
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return True
