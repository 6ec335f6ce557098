"""Where MCP servers come from (issue 37, REQ-MCP-008): the files users already have, read into the one registry.

The sources, in the order that decides a name two of them define (the first one keeps it; the later one is left
out with a warning naming both files):

1. the registry (``PHOENIX_MCP_REGISTRY``, ``agent_config.py``), with the capability manifest and ``secretsRef``;
2. the servers an ACP client passes in ``session/new`` / ``session/load`` (``server/acp/mcp.py``);
3. the user-level file, ``mcp.json`` in the configuration directory (``PHOENIX_CONFIG_DIR``, else
   ``$XDG_CONFIG_HOME/phoenix-lsp``, i.e. ``~/.config/phoenix-lsp/mcp.json``), in the format of ``.mcp.json``;
4. the workspace's ``.mcp.json`` (``{"mcpServers": {name: {"command", "args", "env"} | {"type": "http", "url",
   "headers"}}}``);
5. the workspace's ``.vscode/mcp.json`` (``{"servers": {...}}``, the same entries, ``${workspaceFolder}``
   expanded to the folder).

The last two are the *project's*: a command line chosen by whoever wrote the repository, started only with the
user's consent (``core/mcp_consent.py``), keyed by :func:`digest`, the hash of the canonical JSON of the server's
definition (its folder and name, and its ``env`` / ``headers`` values, which are never shown). A stdio server of
the project runs in the workspace folder.

Every ``env`` / ``headers`` value is taken as a secret: it travels in the server's ``inline_secrets`` (handled
like a resolved ``secretsRef``: scrubbed from every message and result) and the server's guard learns it before
anything starts, so it reaches no log, no store and no prompt. A file is bounded before it is decoded
(``limits.MCP_CONFIG``); a malformed file, or one malformed server of it, is one problem naming the file and the
field, and every other server still works.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, SecretStr, ValidationError, field_validator

from .. import confined, limits
from ..protocol.base import Wire
from .agent_config import SERVER_NAME, HttpServer, StdioServer

Origin = Literal["registry", "session", "user", "project", "vscode"]
#: where each origin's servers come from, as doctor and the warnings say it
ORIGINS: dict[str, str] = {"registry": "the registry (PHOENIX_MCP_REGISTRY)", "session": "the ACP session",
                           "user": "the user-level file", "project": ".mcp.json", "vscode": ".vscode/mcp.json"}
#: the origins whose servers ask for the user's consent before they start
PROJECT_ORIGINS = frozenset({"project", "vscode"})
PROJECT_FILE = ".mcp.json"
VSCODE_FILE = Path(".vscode") / "mcp.json"
USER_FILE = "mcp.json"
#: how long a server of these files may take to start and list its tools (often an npx or uvx that downloads)
CONNECT_TIMEOUT_S = 60.0
WORKSPACE_FOLDER = "${workspaceFolder}"


class _Entry(Wire):
    """One server of ``.mcp.json`` / ``.vscode/mcp.json`` / the user-level file. Keys other tools add (``type``
    values they know, ``disabled``, ...) are ignored; those this reads must be well-formed."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    type: Literal["stdio", "http", "streamable-http", "streamableHttp"] | None = None
    command: str | None = Field(default=None, min_length=1, max_length=4096)
    args: tuple[str, ...] = ()
    env: dict[str, str | None] = Field(default_factory=dict)
    url: str | None = Field(default=None, pattern=r"^https?://\S+$")
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("type", mode="before")
    @classmethod
    def _known(cls, value: Any) -> Any:
        if value == "sse":
            raise ValueError("phoenix-lsp speaks to MCP servers over stdio and streamable HTTP, not SSE: use the "
                             "server's streamable HTTP endpoint (type \"http\")")
        return value


@dataclass(frozen=True)
class Sourced:
    """A server as a source defines it: its registry entry, where it came from, the hash its consent is keyed
    by, and what the user is shown of it (the exact command and arguments, or the URL; never a value of its
    ``env`` or ``headers``)."""

    name: str
    origin: Origin
    config: StdioServer | HttpServer
    digest: str
    shown: str
    file: Path | None = None
    folder: Path | None = None  # the workspace folder, for a project's server

    @property
    def project(self) -> bool:
        return self.origin in PROJECT_ORIGINS

    def where(self) -> str:
        return str(self.file) if self.file is not None else ORIGINS[self.origin]


@dataclass
class Loaded:
    """Servers read from some sources, and what was wrong (each problem names its file and field)."""

    servers: list[Sourced] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def user_file(config_dir: Path) -> Path:
    """The user-level file in the configuration directory (``instructions.config_dir``)."""
    return config_dir / USER_FILE


def digest(folder: Path | None, name: str, definition: Mapping[str, Any]) -> str:
    """The hash a consent is keyed by: SHA-256 of the canonical JSON (sorted keys, no spaces) of the folder,
    the name and the definition as written (``env`` / ``headers`` values included: changing a token is a new
    definition). The folder is part of it: ``python server.py`` is another program in another repository."""
    canonical = json.dumps({"folder": str(folder) if folder is not None else None, "name": name,
                            "definition": definition}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def read_user(config_dir: Path) -> Loaded:
    """The user-level file's servers ({} when there is no file)."""
    path = user_file(config_dir)
    if not os.path.lexists(path):
        return Loaded()
    real = Path(os.path.realpath(path))  # the user's own file: a symlink in its path is theirs
    return _read(real, [real.parent], "user", "mcpServers", None, shown_path=path)


def read_project(folder: Path) -> Loaded:
    """The workspace folder's ``.mcp.json`` then ``.vscode/mcp.json`` (a name both define: ``.mcp.json``'s).
    Read beneath the folder only (no symlink out of it), bounded."""
    loaded = Loaded()
    sources: tuple[tuple[Path, Origin, str], ...] = ((Path(PROJECT_FILE), "project", "mcpServers"),
                                                     (VSCODE_FILE, "vscode", "servers"))
    for relative, origin, key in sources:
        path = folder / relative
        if not os.path.lexists(path):
            continue
        found = _read(path, [folder], origin, key, folder)
        loaded.problems += found.problems
        merged = merge([loaded.servers, found.servers])
        loaded.servers, loaded.problems = merged.servers, loaded.problems + merged.problems
    return loaded


def merge(layers: Iterable[Sequence[Sourced]], taken: Mapping[str, str] | None = None) -> Loaded:
    """The servers of ``layers`` in order, a name kept by the first layer that defines it; ``taken``: names
    already defined elsewhere (name -> where), which keep theirs too."""
    seen: dict[str, str] = dict(taken or {})
    out = Loaded()
    for layer in layers:
        for server in layer:
            if server.name in seen:
                out.problems.append(
                    f"the MCP server {server.name!r} of {server.where()} is not used: {seen[server.name]} defines a "
                    "server of that name first (the registry, then an ACP session, then the user-level file, then "
                    ".mcp.json, then .vscode/mcp.json). Rename one of them")
                continue
            seen[server.name] = server.where()
            out.servers.append(server)
    return out


def _read(path: Path, roots: list[Path], origin: Origin, key: str, folder: Path | None, *,
          shown_path: Path | None = None) -> Loaded:
    shown = shown_path or path

    def problem(message: str) -> Loaded:
        return Loaded(problems=[f"the MCP servers of {shown} are not used: {message}"])

    try:
        data = confined.read(path, roots, max_bytes=limits.MCP_CONFIG.max_bytes).data
    except confined.ReadRefused as refused:
        if refused.reason == "too_large":
            return problem(f"the file is over the {limits.MCP_CONFIG.max_bytes:,}-byte limit")
        return problem(f"the file cannot be read ({refused.cause or refused.reason.replace('_', ' ')})")
    try:
        top = limits.decode(data, limits.MCP_CONFIG)
    except UnicodeDecodeError:
        return problem("it is not UTF-8 text")
    except ValueError as exc:
        return problem(f"it is not valid JSON ({str(exc)[:300]}). Fix the file; the other sources are used")
    if not isinstance(top, dict) or not isinstance(top.get(key, {}), dict):
        return problem(f"{key!r} must be an object of servers by name ({{\"{key}\": {{\"name\": {{...}}}}}})")
    loaded = Loaded()
    for name, raw in top.get(key, {}).items():
        where = f"{shown}, {key}.{name}"
        if re.match(SERVER_NAME, name) is None:
            loaded.problems.append(f"the MCP server {name[:40]!r} of {shown} is not used: {key}.{name[:40]}: a name "
                                   "is a letter then up to 63 letters, digits, '-' or '_'. Rename it")
            continue
        if origin == "vscode":
            raw = _expand(raw, str(folder))
        try:
            loaded.servers.append(_server(name, raw, origin, path if shown_path is None else shown_path, folder))
        except (ValidationError, ValueError) as exc:
            loaded.problems.append(f"the MCP server {name!r} of {shown} is not used: {_why(exc, key, name)}. "
                                   f"Fix {where}; the other servers are used")
    return loaded


def _why(exc: Exception, key: str, name: str) -> str:
    if not isinstance(exc, ValidationError):
        return str(exc)[:300]
    parts = []
    for error in exc.errors(include_url=False, include_input=False)[:3]:  # never the input: it may be a token
        where = ".".join([key, name, *(str(p) for p in error["loc"])])
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def _server(name: str, raw: Any, origin: Origin, file: Path, folder: Path | None) -> Sourced:
    if not isinstance(raw, dict):
        raise ValueError("a server is an object ({\"command\": ..., \"args\": [...]} or {\"type\": \"http\", "
                         "\"url\": ...})")
    entry = _Entry.model_validate(raw)
    env = {k: v for k, v in entry.env.items() if v is not None}
    timeout = CONNECT_TIMEOUT_S
    config: StdioServer | HttpServer
    if entry.url is not None and entry.command is None:
        secrets = dict(entry.headers)
        config = HttpServer(url=entry.url, connect_timeout_s=timeout,
                            inline_secrets={k: SecretStr(v) for k, v in secrets.items()})
        shown = entry.url + (f" (headers: {', '.join(sorted(secrets))})" if secrets else "")
    elif entry.command is not None and entry.url is None:
        secrets = env
        config = StdioServer(command=(entry.command,), args=entry.args, cwd=folder, connect_timeout_s=timeout,
                             inline_secrets={k: SecretStr(v) for k, v in secrets.items()})
        shown = " ".join(shlex.quote(part) for part in (entry.command, *entry.args))
        if secrets:
            shown += f" (environment: {', '.join(sorted(secrets))})"
    else:
        raise ValueError("a server needs either a command (stdio) or a url (http), not both and not neither")
    return Sourced(name=name, origin=origin, config=config, digest=digest(folder, name, raw), shown=shown,
                   file=file, folder=folder)


def _expand(value: Any, folder: str) -> Any:
    """``${workspaceFolder}`` replaced by the folder in every string of a ``.vscode/mcp.json`` server."""
    if isinstance(value, str):
        return value.replace(WORKSPACE_FOLDER, folder)
    if isinstance(value, list):
        return [_expand(item, folder) for item in value]
    if isinstance(value, dict):
        return {key: _expand(item, folder) for key, item in value.items()}
    return value


__all__ = ["ORIGINS", "PROJECT_ORIGINS", "Loaded", "Origin", "Sourced", "digest", "merge", "read_project",
           "read_user", "user_file"]
