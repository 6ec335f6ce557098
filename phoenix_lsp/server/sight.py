"""The editor's sight, on the server's side (specs/sight.md): asks a client that announced
``experimental.phoenix.editorSight`` for its diagnostics and its language servers' locations.

A client that does not answer within its time (``sight_timeout_ms`` beyond the settle time) is treated as
unable for that call: the turn never waits longer (REQ-SIGHT-003). What the model is told is made by the pure
helpers of ``tools/sight.py``.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pygls.lsp.server import LanguageServer

from .. import confined, limits, uris
from ..core.values import Mode
from ..protocol.base import Wire, to_wire
from ..protocol.sight import (
    EDITOR_DIAGNOSTICS,
    EDITOR_LOCATIONS,
    EditorDiagnostic,
    EditorDiagnosticsParams,
    EditorDiagnosticsResult,
    EditorLocationsParams,
    EditorLocationsResult,
    EditorPosition,
)
from ..sandbox.denylist import DenyCheck, deny_check
from ..tools import sight
from ..tools.patch import TextEdit
from ..tools.paths import PathError, resolve_in_workspace
from .adapter import Conversation, SightSettings

log = logging.getLogger(__name__)
R = TypeVar("R", bound=Wire)
#: the most of a file read to find a symbol's line or show a location's line (as search_files caps a file)
TEXT_MAX_BYTES = 5 * 1024 * 1024


def problem(d: EditorDiagnostic) -> sight.Problem:
    return sight.Problem(d.range.start.line, d.range.start.character, d.severity, d.message, d.source or "",
                         "" if d.code is None else str(d.code))


@dataclass(frozen=True)
class Snapshot:
    """A file's problems as the editor showed them, and how often they had changed by then."""

    changes: int
    problems: tuple[sight.Problem, ...]


def _uri_path(uri: str) -> Path | None:
    """The file an editor's URI names, by the one URI rule (REQ-URI-001); None for what names no local file."""
    try:
        return Path(uris.file_path(uri))
    except uris.UriError:
        return None


class EditorSight:
    """One conversation's way to the editor's sight."""

    def __init__(self, ls: LanguageServer, runtime: Conversation, config: SightSettings) -> None:
        self.ls = ls
        self.runtime = runtime
        self.config = config
        self.settle_ms = int(getattr(config, "sight_settle_ms", 1500))
        self.timeout_s = int(getattr(config, "sight_timeout_ms", 1500)) / 1000

    @property
    def root(self) -> Path:
        return Path(self.runtime.state.working_directory)

    async def _ask(self, method: str, params: Wire, result: type[R], wait_s: float) -> R | None:
        """The client's answer, or None when it did not answer in ``wait_s`` or answered what is not one."""
        future = self.ls.protocol.send_request_async(method, to_wire(params))
        try:
            raw = await asyncio.wait_for(future, wait_s)
            return result.model_validate(raw if isinstance(raw, dict) else {})
        except TimeoutError:
            log.info("the editor did not answer %s within %.1f s: treated as unable this time", method, wait_s)
        except limits.Refused:  # over the bounds of its method's answer (REQ-PROTO-063): the caller says so
            raise
        except Exception as exc:  # an error answer, a malformed one, a client gone
            log.info("the editor's answer to %s cannot be used: %s", method, str(exc)[:300])
        return None

    # ------------------------------------------------------------------------------ after a patch

    async def before(self, uri: str) -> Snapshot | None:
        """The file's problems just before an edit (no waiting), or None when the editor cannot tell."""
        try:
            answer = await self._ask(EDITOR_DIAGNOSTICS, EditorDiagnosticsParams(uris=[uri], settle_ms=0),
                                     EditorDiagnosticsResult, self.timeout_s)
        except limits.Refused:
            return None
        if answer is None:
            return None
        for f in answer.files:
            if f.uri == uri:
                return Snapshot(f.changes, tuple(problem(d) for d in f.diagnostics))
        return Snapshot(0, ())

    async def after(self, uri: str, shown: str, before: Snapshot, edits: Sequence[TextEdit]) -> str | None:
        """What the patch's result says about the problems the edit caused (REQ-SIGHT-001), or None when the
        editor did not answer in time."""
        params = EditorDiagnosticsParams(uris=[uri], since={uri: before.changes}, settle_ms=self.settle_ms)
        try:
            answer = await self._ask(EDITOR_DIAGNOSTICS, params, EditorDiagnosticsResult,
                                     self.settle_ms / 1000 + self.timeout_s)
        except limits.Refused as exc:
            return _refused(exc)
        if answer is None:
            return None
        after = next((tuple(problem(d) for d in f.diagnostics) for f in answer.files if f.uri == uri), ())
        return sight.patch_report(shown, before.problems, after, edits)

    # ------------------------------------------------------------------------------ the read tools

    def _deny(self, mode: Mode) -> DenyCheck | None:
        if mode is not Mode.RESTRICTED:
            return None
        deny_read = getattr(self.config, "deny_read", None)
        return deny_check(deny_read)

    def _shown(self, path: Path, deny: DenyCheck | None) -> tuple[str, bool]:
        """How a file is named to the model, and whether it may be read (inside the working directory and
        not on the deny list)."""
        real_root = Path(os.path.realpath(self.root))
        real = Path(os.path.realpath(path))
        try:
            rel = real.relative_to(real_root).as_posix()
        except ValueError:
            return str(path), False
        return rel, not (deny and deny.entry_for(real, resolved=True) is not None)

    def _text(self, path: Path, documents: Mapping[Path, str], deny: DenyCheck | None) -> str | None:
        """The editor's text of ``path``, else the file's, read by the confined reader beneath the working
        directory (REQ-READ-001): None when it cannot be read."""
        text = documents.get(path)
        if text is not None:
            return text
        try:
            data = confined.read(path, [self.root], max_bytes=TEXT_MAX_BYTES, deny=deny).data
        except confined.ReadRefused:
            return None
        return data.decode("utf-8", errors="replace")

    def _target(self, user_path: str, deny: DenyCheck | None) -> Path | str:
        try:
            target = resolve_in_workspace(self.root, user_path, for_write=False)
        except PathError as exc:
            return str(exc)
        if deny and (entry := deny.entry_for(target, resolved=True)) is not None:
            return (f"{user_path} is on the list of paths Restricted mode may not read ({entry}); its problems "
                    "and symbols are not shown either.")
        return target

    async def problems(self, tool_input: sight.EditorProblemsInput, mode: Mode) -> tuple[str, bool]:
        deny = self._deny(mode)
        asked: list[str] | None = None
        scope = "the files the editor knows"
        if tool_input.path is not None:
            target = self._target(tool_input.path, deny)
            if isinstance(target, str):
                return target, True
            asked, scope = [target.as_uri()], self._shown(target, deny)[0]
        try:
            answer = await self._ask(EDITOR_DIAGNOSTICS, EditorDiagnosticsParams(uris=asked, settle_ms=0),
                                     EditorDiagnosticsResult, self.timeout_s)
        except limits.Refused as exc:
            return _refused(exc), True
        if answer is None:
            return self._no_answer(), True
        files: dict[str, list[sight.Problem]] = {}
        for f in answer.files:
            path = _uri_path(f.uri)
            if path is None:
                continue
            shown, readable = self._shown(path, deny)
            if readable:  # problems elsewhere are not this conversation's to see
                files.setdefault(shown, []).extend(problem(d) for d in f.diagnostics)
        return sight.problems_text(files, scope), False

    async def locations(self, kind: Literal["definition", "references"], tool_input: sight.SymbolInput,
                        mode: Mode, documents: Mapping[Path, str]) -> tuple[str, bool]:
        deny = self._deny(mode)
        target = self._target(tool_input.path, deny)
        if isinstance(target, str):
            return target, True
        text = await asyncio.to_thread(self._text, target, documents, deny)
        if text is None:
            return f"{tool_input.path} cannot be read: check the path with list_directory.", True
        line_text = sight.read_line(text, tool_input.line - 1)
        if line_text is None:
            return f"{tool_input.path} has no line {tool_input.line}: read the file to find the symbol's line.", True
        if tool_input.symbol is not None:
            column = sight.column_of(line_text, tool_input.symbol)
            if column is None:
                return (f"{tool_input.symbol!r} is not on line {tool_input.line} of {tool_input.path} (the line "
                        f"reads: {line_text.strip()[:200]!r}). Read the file and give the line it is on."), True
            symbol = tool_input.symbol
        else:
            column = (tool_input.column or 1) - 1
            symbol = f"the symbol at {tool_input.path}:{tool_input.line}:{column + 1}"
        # the client may ask again while the answer is empty for the time this side waits, less a sixth of it
        # (at least 0.5 s) for its last ask and the way back (REQ-SIGHT-005)
        timeout_ms = int(self.timeout_s * 1000)
        params = EditorLocationsParams(kind=kind, uri=target.as_uri(),
                                       position=EditorPosition(line=tool_input.line - 1, character=column),
                                       wait_ms=min(60_000, max(0, timeout_ms - max(500, timeout_ms // 6))))
        try:
            answer = await self._ask(EDITOR_LOCATIONS, params, EditorLocationsResult, self.timeout_s)
        except limits.Refused as exc:
            return _refused(exc), True
        if answer is None:
            return self._no_answer(), True
        found: list[sight.Location] = []
        for loc in answer.locations:
            path = _uri_path(loc.uri)
            if path is None:
                continue
            shown, readable = self._shown(path, deny)
            line = loc.range.start.line
            line_of = None
            if readable:
                body = await asyncio.to_thread(self._text, path, documents, deny)
                line_of = sight.read_line(body, line) if body is not None else None
            found.append(sight.Location(shown, line, loc.range.start.character, line_of))
        return sight.locations_text(kind, symbol, found), False

    def _no_answer(self) -> str:
        return (f"The editor did not answer within {self.timeout_s:g} s, so what it knows cannot be shown now "
                "(its language servers may still be starting). Try again later, or use read_file and "
                "search_files.")


def _refused(exc: limits.Refused) -> str:
    """What the model is told of an answer refused for its size: what the editor sent, and what to do."""
    return (f"The editor's answer was not read: {exc}. Nothing of it is shown. Ask about one file (give its path) "
            "so that the answer is smaller, or use read_file and search_files.")


def editor_for(ls: Any, runtime: Conversation) -> EditorSight | None:
    """The sight for a patch's result: when the conversation has it and the client connected now offers it
    (the server's ``sight_for``)."""
    if not runtime.state.editor_sight:
        return None
    make = getattr(ls, "sight_for", None)
    return make(runtime) if make is not None else None
