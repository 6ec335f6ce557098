"""Attachments of a message: files (or some of their lines) and the editor's diagnostics, as the labelled text
the model sees once (REQ-ATTACH-001..003).

A file is read from the editor's unsaved buffer when it is open, else from disk. It must lie in the
conversation's working directory or one of the editor's workspace folders, must not be on the deny-read list
(credentials and phoenix-lsp's own data), must be text (UTF-8, no NUL byte) and at most ``MAX_BYTES``. Any
refusal names the file and says why and what to do; then nothing of the message is sent. The disk is read
through the confined reader (``phoenix_lsp.confined``), with the deny-read list always, whatever the
conversation's mode or working directory (a working directory of ``/`` or the home directory included).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .. import confined, uris
from ..protocol.params import DiagnosticsAttachment, FileAttachment
from ..sandbox.denylist import DenyCheck

MAX_BYTES = 256 * 1024


class AttachmentError(Exception):
    """An attachment cannot be used. ``index`` is its place in the message's list."""

    def __init__(self, index: int, message: str) -> None:
        super().__init__(message)
        self.index = index


def _path(index: int, uri: str) -> Path:
    """The attached file's canonical path by the one URI rule (REQ-URI-001), before any check looks at it."""
    try:
        return Path(uris.file_path(uri))
    except uris.UriError as exc:
        raise AttachmentError(index, f"{exc} It was not attached (nothing was sent).") from None


def _inside(real: str, places: Iterable[Path]) -> bool:
    for place in places:
        root = os.path.realpath(place)
        if real == root or real.startswith(root.rstrip("/") + "/"):
            return True
    return False


def _shown(path: Path, working_directory: Path) -> str:
    try:
        return str(path.relative_to(working_directory))
    except ValueError:
        return str(path)


def _read_disk(index: int, real: str, shown: str, places: Sequence[Path], deny: DenyCheck) -> bytes:
    """The file's bytes through the confined reader (REQ-READ-002..004): opened once beneath the place that
    holds it, so a directory swapped for a symlink after the checks above is refused, not followed."""
    try:
        return confined.read(real, places, max_bytes=MAX_BYTES, deny=deny).data
    except confined.ReadRefused as refused:
        match refused.reason:
            case "outside":
                why = ("it leads outside the workspace and the conversation's working directory, so it was not "
                       "attached (nothing was sent). Attach files of the project.")
            case "denied":
                why = (f"it is on the deny-read list ({refused.entry}: credentials, phoenix-lsp's own data, process "
                       "and device state), so it was not attached (nothing was sent); its contents would go to "
                       "the model provider.")
            case "not_regular":
                why = "it is not a file, so it was not attached (nothing was sent)."
            case "too_large":
                why = (f"it has {MAX_BYTES + 1:,} bytes or more, more than the {MAX_BYTES:,} an attachment may have, "
                       "so it was not attached (nothing was sent). Attach a range of lines instead.")
            case "missing":
                why = "it does not exist, so it was not attached (nothing was sent). Check the path."
            case _:
                why = (f"it could not be read ({refused.cause or refused.reason}), so it was not attached (nothing "
                       "was sent).")
        raise AttachmentError(index, f"{shown}: {why}") from None


def file_text(
    index: int,
    item: FileAttachment,
    *,
    working_directory: Path,
    workspace: Sequence[Path],
    deny: DenyCheck,
    open_documents: Mapping[Path, str],
) -> str:
    """The labelled text of a file attachment, or :class:`AttachmentError`."""
    path = _path(index, item.uri)
    real = os.path.realpath(path)
    shown = _shown(path, working_directory)
    if not _inside(real, [working_directory, *workspace]):
        raise AttachmentError(index, f"{shown} is outside the workspace and the conversation's working "
                              "directory, so it was not attached (nothing was sent). Attach files of the project.")
    entry = deny.entry_for(real, resolved=True)
    if entry is not None:
        raise AttachmentError(index, f"{shown} is on the deny-read list ({entry}: credentials and phoenix-lsp's own "
                              "data), so it was not attached (nothing was sent); its contents would go to the "
                              "model provider.")
    text = open_documents.get(Path(real)) or open_documents.get(path)
    if text is None:
        data = _read_disk(index, real, shown, [working_directory, *workspace], deny)
        if b"\0" in data:
            raise AttachmentError(index, f"{shown} is a binary file, so it was not attached (nothing was sent). "
                                  "Only text files can be attached.")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise AttachmentError(index, f"{shown} is not UTF-8 text, so it was not attached (nothing was "
                                  "sent).") from None
    elif len(text.encode()) > MAX_BYTES:
        raise AttachmentError(index, f"{shown} has more than the {MAX_BYTES:,} bytes an attachment may have, so it "
                              "was not attached (nothing was sent). Attach a range of lines instead.")
    lines = text.splitlines(keepends=True)
    label = f"{shown}, all {len(lines)} lines"
    if item.range is not None:
        first, last = item.range.start_line, item.range.end_line
        if last < first or first >= max(len(lines), 1):
            raise AttachmentError(index, f"{shown} has {len(lines)} lines; lines {first + 1}-{last + 1} are not in "
                                  "it, so nothing was attached (nothing was sent).")
        lines = lines[first : last + 1]
        label = f"{shown}, lines {first + 1}-{first + len(lines)}"
    body = "".join(lines)
    if body and not body.endswith("\n"):
        body += "\n"
    return f'<attachment path="{shown}" lines="{label}">\n{body}</attachment>'


def diagnostics_text(index: int, item: DiagnosticsAttachment, *, working_directory: Path) -> str:
    path = _path(index, item.uri)
    shown = _shown(path, working_directory)
    head = f'<attachment path="{shown}" kind="diagnostics">'
    if not item.diagnostics:
        return f"{head}\nThe editor shows no problems in {shown}.\n</attachment>"
    rows = []
    for d in sorted(item.diagnostics, key=lambda d: d.line):
        source = f" ({d.source})" if d.source else ""
        rows.append(f"line {d.line + 1}: {d.severity or 'problem'}{source}: {' '.join(d.message.split())}")
    body = "\n".join(rows)
    return f"{head}\nThe editor shows these problems:\n{body}\n</attachment>"
