"""The store's images, kept once per content (their id is the sha256 of their bytes)."""

from __future__ import annotations

import hashlib
import time

from phoenix_lsp.store.database import Database
from phoenix_lsp.store.errors import ImageNotFoundError, InvalidRecordError


class Images(Database):
    """Image bytes with their media type."""

    def put_image(self, data: bytes, media_type: str) -> str:
        """Store image bytes; return their id (sha256 hex). Storing the same bytes again is a no-op."""
        if not data:
            raise InvalidRecordError("refusing to store an empty image: the data has no bytes")
        if not media_type:
            raise InvalidRecordError("an image needs a media type such as 'image/png'")
        self.guard.check(media_type, "an image media type")
        self.guard.check_bytes(data, "an image")
        image_id = hashlib.sha256(data).hexdigest()
        with self._write() as conn:
            conn.execute(
                "INSERT INTO images (id, media_type, size, created_at, data) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING",
                (image_id, media_type, len(data), time.time(), data),
            )
        return image_id

    def get_image(self, image_id: str) -> tuple[bytes, str]:
        """``(data, media_type)`` of a stored image; ``ImageNotFoundError`` (a KeyError) if unknown."""
        row = self._conn.execute("SELECT data, media_type FROM images WHERE id = ?", (image_id,)).fetchone()
        if row is None:
            raise ImageNotFoundError(image_id)
        return bytes(row[0]), str(row[1])

    def image_size(self, image_id: str) -> int | None:
        """How many bytes the store holds for an image (read from the row, not its data): what a history shows
        and what a reader checks before it reads them; None if unknown."""
        row = self._conn.execute("SELECT length(data) FROM images WHERE id = ?", (image_id,)).fetchone()
        return None if row is None else int(row[0])
