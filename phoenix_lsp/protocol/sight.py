"""The editor's sight (specs/sight.md): requests the server sends to a client that announced
``capabilities.experimental.phoenix.editorSight`` at initialize (server -> client, the reverse of the
phoenix/* methods of ``methods.py``).

- ``phoenix/editorDiagnostics``: the problems the editor shows for some files (or all), optionally once they
  have changed since a count the client gave earlier, or once ``settleMs`` have passed (REQ-SIGHT-001/003);
- ``phoenix/editorLocations``: the editor's definition or references of the symbol at a position, asking
  again within ``waitMs`` while the answer is empty (REQ-SIGHT-002/005).

Positions are LSP's: zero-based lines, characters in UTF-16 code units.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from .base import Wire

EDITOR_DIAGNOSTICS = "phoenix/editorDiagnostics"
EDITOR_LOCATIONS = "phoenix/editorLocations"

UINTEGER_MAX = 2**31 - 1


class EditorPosition(Wire):
    line: int = Field(ge=0, le=UINTEGER_MAX)
    character: int = Field(ge=0, le=UINTEGER_MAX)


class EditorRange(Wire):
    start: EditorPosition
    end: EditorPosition


class EditorDiagnostic(Wire):
    """One problem the editor shows (a subset of LSP's Diagnostic)."""

    range: EditorRange
    severity: int = Field(default=1, ge=1, le=4, description="LSP DiagnosticSeverity: 1 error .. 4 hint")
    message: str = Field(max_length=100_000)
    source: str | None = Field(default=None, max_length=200, description="who reports it (a server, a linter)")
    code: str | int | None = Field(default=None, description="the reporter's code for it")


class EditorDiagnosticsParams(Wire):
    uris: list[str] | None = Field(default=None, description="the files; none: every file the editor knows")
    since: dict[str, int] | None = Field(
        default=None,
        description="uri -> the count of diagnostic changes the client answered earlier: answer once each of "
        "these files' diagnostics changed again, or once settleMs have passed",
    )
    settle_ms: int = Field(default=0, ge=0, le=60_000, description="the longest wait for a change")


class EditorFileDiagnostics(Wire):
    uri: str
    changes: int = Field(ge=0, description="how often this file's diagnostics changed in the editor so far")
    diagnostics: list[EditorDiagnostic]


class EditorDiagnosticsResult(Wire):
    files: list[EditorFileDiagnostics]


class EditorLocationsParams(Wire):
    kind: Literal["definition", "references"]
    uri: str
    position: EditorPosition
    wait_ms: int = Field(
        default=0,
        ge=0,
        le=60_000,
        description="how long the client may keep asking while its providers answer nothing (a language server "
        "still starting for a file it had not opened); the server's own wait for the answer is longer",
    )


class EditorLocation(Wire):
    uri: str
    range: EditorRange


class EditorLocationsResult(Wire):
    locations: list[EditorLocation]


@dataclass(frozen=True)
class ClientMethod:
    name: str
    params: type[Wire]
    result: type[Wire]


#: the requests the server sends to a client with the editor's sight
CLIENT_METHODS: dict[str, ClientMethod] = {
    m.name: m
    for m in (
        ClientMethod(EDITOR_DIAGNOSTICS, EditorDiagnosticsParams, EditorDiagnosticsResult),
        ClientMethod(EDITOR_LOCATIONS, EditorLocationsParams, EditorLocationsResult),
    )
}
