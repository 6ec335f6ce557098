"""Which MCP servers may start (issue 37, REQ-MCP-009): a pure rule over where each server came from and the
consents the user gave.

A *project* server (from the workspace's ``.mcp.json`` or ``.vscode/mcp.json``) is a command line chosen by whoever
wrote the repository: it starts only when the user approved its definition, and the consent is keyed by the hash
of that definition (``agent/mcp_sources.py``), so a changed definition is a new question. A declined definition
is not asked about again until it changes. Every other server (the registry, the user-level file, an ACP
session's) was chosen by the user and starts without asking.

Standard library only, no I/O: the server reads the sources and the stored consents and acts on the verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum


class Consent(Enum):
    """The user's answer about one definition (by its hash)."""

    APPROVED = "approved"
    DECLINED = "declined"


@dataclass(frozen=True)
class Candidate:
    """A server as the rule sees it: its name, whether it comes from the project (asks for consent), and the
    hash of its current definition."""

    name: str
    project: bool
    digest: str


@dataclass(frozen=True)
class Verdict:
    """What to do with the candidates: start these, ask about those, and leave these (declined) alone."""

    start: tuple[str, ...]
    ask: tuple[Candidate, ...]
    declined: tuple[str, ...]


def decide(candidates: Iterable[Candidate], consents: Mapping[str, Consent]) -> Verdict:
    """The verdict for ``candidates`` (in order) given ``consents`` (definition hash -> the user's answer)."""
    start: list[str] = []
    ask: list[Candidate] = []
    declined: list[str] = []
    for candidate in candidates:
        if not candidate.project:
            start.append(candidate.name)
            continue
        consent = consents.get(candidate.digest)
        if consent is Consent.APPROVED:
            start.append(candidate.name)
        elif consent is Consent.DECLINED:
            declined.append(candidate.name)
        else:
            ask.append(candidate)
    return Verdict(tuple(start), tuple(ask), tuple(declined))


def record(consents: Mapping[str, Consent], digest: str, consent: Consent) -> dict[str, Consent]:
    """The consents with the user's answer about the definition ``digest`` (the latest answer holds)."""
    return {**consents, digest: consent}


__all__ = ["Candidate", "Consent", "Verdict", "decide", "record"]
