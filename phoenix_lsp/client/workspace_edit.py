"""Apply an LSP ``WorkspaceEdit`` to files on disk, as the terminal client's "editor" does.

The server never writes files itself (REQ-PATCH-010): it asks the editor with ``workspace/applyEdit``. The
terminal client has no buffers, so it applies the edit to the files directly. The edit is prepared completely
in memory first (every text edit located, every resource operation checked) and only then written, so a
failing edit changes nothing. Positions are LSP positions: zero-based lines and UTF-16 code-unit columns.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from lsprotocol import types

from .. import uris

__all__ = ["EditError", "PreparedEdit", "apply_text_edits", "prepare_workspace_edit", "write_prepared"]


class EditError(Exception):
    """The edit cannot be applied; the message says why (it becomes the ``failureReason``)."""


@dataclass
class PreparedEdit:
    """The outcome of preparing: new content per path (``None`` = delete) and the originals, for diffs."""

    new: dict[Path, str | None] = field(default_factory=dict)
    old: dict[Path, str | None] = field(default_factory=dict)
    renames: list[tuple[Path, Path]] = field(default_factory=list)

    def diff(self, root: Path | None = None) -> str:
        """A unified diff of every changed file (paths relative to ``root`` when inside it)."""
        chunks: list[str] = []
        for path, new in self.new.items():
            old = self.old.get(path)
            if old == new:
                continue
            name = _display(path, root)
            a = (old or "").splitlines(keepends=True)
            b = (new or "").splitlines(keepends=True)
            lines = difflib.unified_diff(
                a, b, fromfile=f"a/{name}" if old is not None else "/dev/null",
                tofile=f"b/{name}" if new is not None else "/dev/null", n=2,
            )
            chunks.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
        return "".join(chunks)


def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root))
        except ValueError:
            pass
    return str(path)


def _uri_path(uri: str) -> Path:
    """The file an edit names, by the one URI rule (REQ-URI-001) the server uses too."""
    try:
        return Path(uris.file_path(uri))
    except uris.UriError as exc:
        raise EditError(f"cannot edit it: {exc}") from None


def _line_starts(text: str) -> list[int]:
    """Offsets where each LSP line starts (lines end at \\n, \\r\\n or a lone \\r)."""
    starts = [0]
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\r":
            if i + 1 < n and text[i + 1] == "\n":
                i += 1
            starts.append(i + 1)
        elif ch == "\n":
            starts.append(i + 1)
        i += 1
    return starts


def _offset(text: str, starts: list[int], pos: types.Position) -> int:
    """The str offset of an LSP position; a column past the line's end means the end (LSP clamps)."""
    if pos.line >= len(starts):
        return len(text)
    begin = starts[pos.line]
    end = starts[pos.line + 1] if pos.line + 1 < len(starts) else len(text)
    # the line's content without its end-of-line characters
    while end > begin and text[end - 1] in "\r\n":
        end -= 1
    units = 0
    i = begin
    while i < end and units < pos.character:
        units += 2 if ord(text[i]) > 0xFFFF else 1
        i += 1
    return i


def apply_text_edits(text: str, edits: list[types.TextEdit] | list[types.TextEdit | types.AnnotatedTextEdit]) -> str:
    """``text`` with ``edits`` applied; all ranges refer to the original text (LSP semantics).

    Inserts at the same position keep their order in the list. Overlapping ranges are an error.
    """
    starts = _line_starts(text)
    located = []
    for index, edit in enumerate(edits):
        start = _offset(text, starts, edit.range.start)
        end = _offset(text, starts, edit.range.end)
        if end < start:
            raise EditError(
                f"a text edit's range ends before it starts (line {edit.range.start.line + 1}); the edit is malformed"
            )
        located.append((start, end, index, edit.new_text))
    located.sort(key=lambda item: (item[0], item[2]))
    out: list[str] = []
    cursor = 0
    for start, end, _, new_text in located:
        if start < cursor:
            raise EditError("two text edits overlap; an editor cannot apply them together")
        out.append(text[cursor:start])
        out.append(new_text)
        cursor = max(cursor, end)
    out.append(text[cursor:])
    return "".join(out)


def _read(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise EditError(f"{path} is a directory, not a text file") from None
    except UnicodeDecodeError:
        raise EditError(f"{path} is not UTF-8 text, so it cannot be edited as text") from None
    except OSError as exc:
        raise EditError(f"{path} cannot be read ({exc.strerror or exc})") from None


def prepare_workspace_edit(edit: types.WorkspaceEdit, root: Path | None = None) -> PreparedEdit:
    """Compute every file's new content without writing anything.

    ``root``, when given, confines the edit: a change outside it is refused (the client only edits the
    conversation's working directory, whatever the server asks).
    """
    prepared = PreparedEdit()
    resolved_root = root.resolve() if root is not None else None

    def check(path: Path) -> Path:
        if resolved_root is not None:
            real = Path(os.path.realpath(path))
            if real != resolved_root and resolved_root not in real.parents:
                raise EditError(f"{path} is outside the working directory {resolved_root}; the edit was refused")
        return path

    def current(path: Path) -> str | None:
        if path in prepared.new:
            return prepared.new[path]
        content = _read(path)
        prepared.old.setdefault(path, content)
        return content

    def set_content(path: Path, content: str | None) -> None:
        if path not in prepared.old:
            prepared.old[path] = _read(path)
        prepared.new[path] = content

    changes: list[object] = list(edit.document_changes or [])
    for uri, text_edits in (edit.changes or {}).items():
        changes.append(
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=None),
                edits=list(text_edits),
            )
        )
    for change in changes:
        if isinstance(change, types.TextDocumentEdit):
            path = check(_uri_path(change.text_document.uri))
            text = current(path)
            if text is None:
                raise EditError(f"{path} does not exist, so its text cannot be edited")
            set_content(path, apply_text_edits(text, list(change.edits)))  # type: ignore[arg-type]
        elif isinstance(change, types.CreateFile):
            path = check(_uri_path(change.uri))
            options = change.options
            exists = current(path) is not None
            if exists and not (options and options.overwrite):
                if options and options.ignore_if_exists:
                    continue
                raise EditError(f"{path} already exists, and the edit did not ask to overwrite it")
            set_content(path, "")
        elif isinstance(change, types.DeleteFile):
            path = check(_uri_path(change.uri))
            if current(path) is None:
                if change.options and change.options.ignore_if_not_exists:
                    continue
                raise EditError(f"{path} does not exist, so it cannot be deleted")
            set_content(path, None)
        elif isinstance(change, types.RenameFile):
            old_path = check(_uri_path(change.old_uri))
            new_path = check(_uri_path(change.new_uri))
            content = current(old_path)
            if content is None:
                raise EditError(f"{old_path} does not exist, so it cannot be renamed")
            target_exists = current(new_path) is not None
            rename_options = change.options
            if target_exists and not (rename_options and rename_options.overwrite):
                if rename_options and rename_options.ignore_if_exists:
                    continue
                raise EditError(f"{new_path} already exists, and the rename did not ask to overwrite it")
            set_content(new_path, content)
            set_content(old_path, None)
            prepared.renames.append((old_path, new_path))
        else:
            raise EditError(f"unsupported change in the workspace edit: {type(change).__name__}")
    return prepared


def _umask() -> int:
    """The process's umask, read without changing it (Linux's /proc; the usual 022 elsewhere)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def _write_atomic(path: Path, content: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o666 & ~_umask()  # a new file: as an editor makes one (mkstemp's 0600 would differ from any editor's)
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".phoenix-tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_prepared(prepared: PreparedEdit) -> None:
    """Write a prepared edit to disk (each file replaced atomically)."""
    for path, content in prepared.new.items():
        if content == prepared.old.get(path) and path.exists() == (content is not None):
            continue
        if content is None:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        else:
            _write_atomic(path, content)
