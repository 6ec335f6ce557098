"""The MCP servers of the files users already have, in the agent route's one registry, and the user's consent
before a project's server starts (issue 37, REQ-MCP-008/009).

:class:`McpSources` belongs to the server's ``AgentRoute``: at start-up the user-level file's servers join the
registry (they start without asking); before each turn of a conversation, the conversation's folder's
``.mcp.json`` and ``.vscode/mcp.json`` are read again and the core's rule (``core/mcp_consent.py``) says which of
their servers start, which the user is asked about (through the conversation's client: the adapters'
``ask_mcp_consent``, with the words of :func:`consent_question`), and which were declined. The answers are kept by
``agent/mcp_consent_store.ConsentStore`` in the data directory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..agent.mcp_consent_store import ConsentStore
from ..agent.mcp_sources import ORIGINS, Sourced, merge, read_project, read_user
from ..agent.server_secrets import server_secrets
from ..core.mcp_consent import Candidate, Consent, decide

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConsentQuestion:
    """What every client asks before a project's MCP server first starts (REQ-MCP-009): the same words in
    each (``text``), its two answers, and the server's name."""

    name: str
    shown: str  # the exact command and arguments, or the URL; never an env or header value
    where: str  # the file that defines it
    text: str
    changed: bool  # an earlier definition of this server was answered about
    url: bool = False  # it is reached at a URL (else it is a command that runs)

    APPROVE: ClassVar[str] = "Start it"
    DECLINE: ClassVar[str] = "Do not start it"


def consent_question(server: Sourced, changed: bool) -> ConsentQuestion:
    kind = "run the command" if server.config.transport == "stdio" else "connect to"
    again = " Its definition changed since you last answered, so you are asked again." if changed else ""
    text = (f"The workspace's {server.where()} defines the MCP server {server.name!r}: starting it would {kind} "
            f"{server.shown}. A project's server runs only if you allow it (whoever wrote the repository chose "
            f"this command).{again} Start it and offer its tools to the model? The answer is kept for this exact "
            "definition; a changed definition is asked about again.")
    return ConsentQuestion(server.name, server.shown, server.where(), text, changed,
                           url=server.config.transport == "http")


class McpSources:
    """Where the route's servers came from, and the project's servers' consent (see the module docstring)."""

    def __init__(self, route: Any, consents: ConsentStore | None) -> None:
        """``route``: the server's ``agent_route.AgentRoute`` (its registry, its guard, ``join`` / ``leave``)."""
        self.route = route
        self.consents = consents
        self.origins: dict[str, Sourced] = {}  # name -> its source, for every server not from the registry
        self.problems: list[str] = []  # what was wrong with the sources (each names its file and field)
        self.declined: dict[str, Sourced] = {}  # the project's servers the user declined (a change asks again)
        self._lock = asyncio.Lock()

    def add_user(self, config_dir: Path) -> None:
        """The user-level file's servers (REQ-MCP-008): they start without asking, after the registry's and the
        ACP sessions' (a name those define keeps theirs)."""
        route = self.route
        if route.settings is None:
            return
        loaded = read_user(config_dir)
        taken = {name: ORIGINS["registry"] for name in route.settings.registry.servers}
        merged = merge([loaded.servers], taken)
        for server in merged.servers:
            self._learn(server)
            route.join(server)
        self._report([*loaded.problems, *merged.problems])

    def _learn(self, server: Sourced) -> None:
        """A file's server's secrets (its env / header values, its URL's), never logged, stored or sent: found by
        the one function that finds them (REQ-SEC-045)."""
        for secret, label in server_secrets(server.name, server.config):
            self.route.add_secret(secret, f"{label} ({server.where()})")

    def _report(self, problems: Sequence[str]) -> list[str]:
        """The problems not reported before (each once per server life), logged; returned for the client."""
        new = [p for p in problems if p not in self.problems]
        self.problems += new
        for problem in new:
            log.warning("%s", self.route.redact(problem))
        return new

    async def project(self, folder: str, ask: Callable[[ConsentQuestion], Awaitable[bool | None]],
                      notice: Callable[[str], None]) -> None:
        """The workspace folder's servers (``.mcp.json``, ``.vscode/mcp.json``), read again before each turn:
        those whose current definition the user approved join the registry; each one not answered about is
        asked through the client (``ask``: True to start it, False to decline, None when no answer came: asked
        again at the next turn); a declined definition is not asked about again until it changes
        (``core/mcp_consent.py``, REQ-MCP-009). What is wrong with the files goes to ``notice`` once."""
        route = self.route
        if route.settings is None or self.consents is None or not folder:
            return
        async with self._lock:
            loaded = await asyncio.to_thread(read_project, Path(folder))
            if not loaded.servers and not any(o.project for o in self.origins.values()) and not loaded.problems:
                return
            here = Path(folder)
            ours = self._ours(here)
            taken = {name: (self.origins[name].where() if name in self.origins else ORIGINS["registry"])
                     for name in route.settings.registry.servers if name not in ours}
            merged = merge([loaded.servers], taken)
            for problem in self._report([*loaded.problems, *merged.problems]):
                notice(route.redact(problem))
            for server in merged.servers:
                self._learn(server)
            by_name = {s.name: s for s in merged.servers}
            candidates = [Candidate(s.name, True, s.digest) for s in merged.servers]
            consents = await asyncio.to_thread(self.consents.load)
            verdict = decide(candidates, consents)
            # a changed or withdrawn definition stops before anything is asked: only an approved one runs
            await asyncio.to_thread(self._settle, here, {name: by_name[name] for name in verdict.start})
            # the MCP client is made (the SDK imported: seconds on a loaded machine) while the user decides, so
            # the turn's gathering of the tools, which is bounded, is left the servers' own start; no server
            # process starts before it is gathered
            warming = asyncio.ensure_future(asyncio.to_thread(route.start)) if verdict.ask else None
            for candidate in verdict.ask:
                server = by_name[candidate.name]
                changed = candidate.name in ours or candidate.name in self.declined
                answer = await ask(consent_question(server, changed))
                if answer is None:
                    continue  # not answered: asked again at the next turn, and not started meanwhile
                consent = Consent.APPROVED if answer else Consent.DECLINED
                try:
                    await asyncio.to_thread(self.consents.record, server.digest, consent, name=server.name,
                                            folder=server.folder)
                except OSError as exc:
                    notice(f"Your answer about the MCP server {server.name!r} could not be kept ({exc}); it holds "
                           "for now and you will be asked again after a restart.")
                consents = {**consents, server.digest: consent}
            if warming is not None:
                await warming
            verdict = decide(candidates, consents)
            self.declined = {name: by_name[name] for name in verdict.declined}
            await asyncio.to_thread(self._settle, here, {name: by_name[name] for name in verdict.start})

    def _ours(self, folder: Path) -> dict[str, Sourced]:
        return {name: s for name, s in self.origins.items() if s.project and s.folder == folder}

    def _settle(self, folder: Path, start: Mapping[str, Sourced]) -> None:
        """The registry holds exactly the folder's approved servers, as now defined (blocking)."""
        route = self.route
        for name, server in self._ours(folder).items():
            if start.get(name) is None or start[name].digest != server.digest:
                route.leave(name)
        for name, server in start.items():
            if name not in self.origins:
                route.join(server)
