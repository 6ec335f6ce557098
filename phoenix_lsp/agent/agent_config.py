"""The agent route's three configuration files (REQ-AGENT-014/016/017/022), read and validated together.

- the MCP registry (``PHOENIX_MCP_REGISTRY``): which MCP servers exist and how to reach them;
- the capability manifest (``PHOENIX_CAPABILITIES``): which of their tools a plan may use, how, how often;
- the budgets file (``PHOENIX_BUDGETS``): ``contracts.BudgetsFile``.

``load_agent_config`` returns an ``AgentConfig`` or an ``AgentConfigError`` naming the file and what is wrong
with it; with an error the agent route is unavailable and the ask route is unaffected. Nothing here imports
the MCP SDK: reading the configuration stays cheap.

Secrets are never written in these files: a server's ``secretsRef`` maps an environment variable (stdio) or
an HTTP header to a reference (``env:NAME``), resolved by the MCP client when it connects (see
``mcp_hub.py``). For a header the variable holds the header's whole value (``Bearer ...``).

Over 300 lines: the three files are read and validated together (a manifest entry names a registry server), so their
models and the cross-checks live in one place.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Protocol

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from .. import confined, safe_json
from ..protocol.base import Wire
from .contracts import TOOL_URI, BudgetsFile


class AgentSettings(Protocol):
    """The settings that name the agent route's files (``server.config.Config``'s fields of these names)."""

    @property
    def mcp_registry(self) -> Path | None: ...
    @property
    def capabilities(self) -> Path | None: ...
    @property
    def budgets(self) -> Path | None: ...
    @property
    def artifact_dir(self) -> Path | None: ...

#: a secret reference: ``env:NAME``, read from the environment of the process that connects
SECRET_REF = re.compile(r"^env:(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
#: a server's key in the registry (the ``<server>`` of ``mcp://<server>/<tool>``)
SERVER_NAME = r"^[A-Za-z][A-Za-z0-9_-]{0,63}$"
#: a tool pattern of the manifest: a tool URI whose server and tool parts may hold ``*`` globs (not ``?``,
#: which starts a scope)
TOOL_PATTERN = re.compile(r"^mcp://(?P<server>[A-Za-z0-9_*.-]{1,64})/(?P<tool>[A-Za-z0-9_*.-]{1,128})"
                          r"(?:\?(?P<scope>[^\s#]*))?$")
MAX_FILE_BYTES = 1 << 20


def _command(value: Any) -> Any:
    """``"command"`` may be one string or a list (executable, then its first arguments)."""
    return [value] if isinstance(value, str) else value


class _File(Wire):
    """A model of a configuration file: an unknown key is an error (a misspelt key would else be ignored)."""

    model_config = ConfigDict(extra="forbid")


class _ServerBase(_File):
    secrets_ref: dict[str, str] = Field(default_factory=dict, description=(
        "environment variable (stdio) or HTTP header (http) -> a reference such as env:RECORDS_TOKEN, resolved "
        "from the environment of the server process when it connects; never the secret itself"))
    connect_timeout_s: float | None = Field(default=None, gt=0, le=300)
    trust_annotations: bool = Field(default=False, description=(
        "take the server's readOnlyHint as a tool's kind where the manifest names none. MCP annotations are the "
        "server's own claim, so by default they are not trusted: a tool the manifest does not call read is a "
        "write (refused in Restricted, asked about under the interactive policy)"))
    #: values given inline by a source that holds them (the ``env`` / ``headers`` of ``.mcp.json``, the user-level
    #: file, an ACP session): environment variables (stdio) or headers (http) handled like the resolved
    #: ``secretsRef`` values (scrubbed from every message and result). Never read from the registry file.
    inline_secrets: dict[str, SecretStr] = Field(default_factory=dict, exclude=True, repr=False)

    @field_validator("secrets_ref")
    @classmethod
    def _references(cls, value: dict[str, str]) -> dict[str, str]:
        for key, reference in value.items():
            if SECRET_REF.match(reference) is None:
                # the value is not echoed: it may be a secret pasted by mistake
                raise ValueError(f"secretsRef[{key!r}] must be a reference of the form env:NAME (the secret "
                                 "itself never goes in this file; put it in that environment variable)")
        return value


class StdioServer(_ServerBase):
    """A server started as a subprocess, spoken to over its stdin/stdout."""

    command: Annotated[tuple[str, ...], BeforeValidator(_command)] = Field(min_length=1)
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description=(
        "variables; their values (8 characters or more) are kept out of every output like a secret (REQ-SEC-045): "
        "name a credential with secretsRef"))
    cwd: Path | None = None

    @property
    def transport(self) -> Literal["stdio"]:
        return "stdio"

    def argv(self) -> list[str]:
        return [*self.command, *self.args]


class HttpServer(_ServerBase):
    """A server reached over MCP's streamable HTTP transport."""

    url: str = Field(pattern=r"^https?://\S+$")
    headers: dict[str, str] = Field(default_factory=dict, description=(
        "headers; their values (8 characters or more) are kept out of every output like a secret (REQ-SEC-045): "
        "name a credential with secretsRef"))

    @property
    def transport(self) -> Literal["http"]:
        return "http"


def _transport(value: Any) -> str:
    if isinstance(value, dict):
        return "stdio" if "command" in value else "http"
    return value.transport  # type: ignore[no-any-return]


McpServerConfig = Annotated[Annotated[StdioServer, Tag("stdio")] | Annotated[HttpServer, Tag("http")],
                            Discriminator(_transport)]


class McpRegistry(_File):
    """The MCP registry file: ``{"servers": {name: {"command": [...], ...} | {"url": ..., ...}}}``."""

    servers: dict[Annotated[str, Field(pattern=SERVER_NAME)], McpServerConfig] = Field(default_factory=dict)

    @field_validator("servers", mode="before")
    @classmethod
    def _kind(cls, value: Any) -> Any:
        if isinstance(value, dict):
            for name, server in value.items():
                if isinstance(server, dict) and ({"inlineSecrets", "inline_secrets"} & set(server)):
                    raise ValueError(f"server {name!r}: secrets are not written in the registry; name them with "
                                     "secretsRef (env:NAME) and set that variable")
                if isinstance(server, dict) and ("command" in server) == ("url" in server):
                    raise ValueError(f"server {name!r} needs either a command (stdio) or a url (http), not "
                                     "both and not neither")
        return value


class RateLimit(_File):
    """At most ``calls`` calls of one tool in any window of ``window_s`` seconds."""

    calls: int = Field(ge=0, le=1_000_000)
    window_s: float = Field(gt=0, le=7 * 24 * 3600)


class ToolRule(_File):
    """What the manifest says of one tool (or a glob of tools)."""

    kind: Literal["read", "write"] | None = None


def _check_pattern(pattern: str, *, scope_allowed: bool) -> str:
    match = TOOL_PATTERN.match(pattern)
    if match is None:
        raise ValueError(f"{pattern!r} is not a tool URI pattern (mcp://<server>/<tool>, where both parts may "
                         "use *, e.g. mcp://records/*)")
    if match["scope"] is not None and not scope_allowed:
        raise ValueError(f"{pattern!r}: only allow entries may carry a scope (?argument=values)")
    if match["scope"] is not None:
        parse_scope(match["scope"])
    return pattern


def parse_scope(query: str) -> dict[str, frozenset[str]]:
    """``fields=status,priority&owner=infra`` -> ``{"fields": {"status", "priority"}, "owner": {"infra"}}``.
    Raises ValueError for a malformed scope (see ``capability_gate`` for what a scope allows)."""
    scope: dict[str, frozenset[str]] = {}
    for part in query.split("&"):
        if not part:
            continue
        key, equals, values = part.partition("=")
        if not equals or not key.isidentifier():
            raise ValueError(f"the scope part {part!r} is not argument=value[,value...]")
        if key in scope:
            raise ValueError(f"the scope names the argument {key!r} twice")
        scope[key] = frozenset(v for v in values.split(",") if v)
    return scope


class CapabilityManifest(_File):
    """The capability manifest file (REQ-AGENT-014).

    ``allow`` / ``deny``: tool URI patterns (``mcp://records/*``, ``mcp://records/get_record``); an allow
    entry may carry a scope (``mcp://records/update_record?fields=status``). ``tools``: pattern -> ``{"kind":
    "read" | "write"}``, which overrides the server's ``readOnlyHint``. ``rateLimits``: pattern -> ``{"calls",
    "windowS"}``, counted per tool. No manifest at all means no MCP tool is allowed.
    """

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    tools: dict[str, ToolRule] = Field(default_factory=dict)
    rate_limits: dict[str, RateLimit] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _patterns(self) -> CapabilityManifest:
        for pattern in self.allow:
            _check_pattern(pattern, scope_allowed=True)
        for pattern in (*self.deny, *self.tools, *self.rate_limits):
            _check_pattern(pattern, scope_allowed=False)
        return self

    def servers(self) -> set[str]:
        """The server names the manifest spells out (no glob)."""
        names = set()
        for pattern in (*self.allow, *self.deny, *self.tools, *self.rate_limits):
            match = TOOL_PATTERN.match(pattern)
            if match is not None and "*" not in match["server"]:
                names.add(match["server"])
        return names


def matches(pattern: str, uri: str) -> bool:
    """Whether a manifest pattern (scope ignored) covers a tool URI (scope ignored): a glob on the whole
    ``mcp://server/tool`` where ``*`` matches any run of characters (``/`` included), case-sensitive."""
    glob = pattern.split("?", 1)[0].replace("[", "[[]")
    return fnmatch.fnmatchcase(uri.split("?", 1)[0], glob)


class AgentConfig(Wire):
    """The agent route's configuration, valid as a whole."""

    registry: McpRegistry = Field(default_factory=McpRegistry)
    manifest: CapabilityManifest = Field(default_factory=CapabilityManifest)
    budgets: BudgetsFile = Field(default_factory=BudgetsFile)
    artifact_dir: Path
    #: what deserves a look but does not stop the route (e.g. the manifest names a server not in the registry)
    warnings: tuple[str, ...] = ()


class AgentConfigError(Wire):
    """Why the agent route is unavailable: which file (its setting and path) and what is wrong with it."""

    setting: str  # PHOENIX_MCP_REGISTRY | PHOENIX_CAPABILITIES | PHOENIX_BUDGETS
    path: Path
    message: str

    def describe(self) -> str:
        return (f"the agent route is unavailable: {self.setting} names {self.path}, which {self.message}. Fix "
                "the file or unset the variable; the ask route still works.")


def _read(path: Path, model: type[Wire], setting: str) -> Wire | AgentConfigError:
    def error(message: str) -> AgentConfigError:
        return AgentConfigError(setting=setting, path=path, message=message)

    # The user chose this path (a setting), so symlinks in it are theirs to follow: it is resolved first, then
    # read by the confined reader (regular file, non-blocking, capped on the bytes read: REQ-READ-001/003).
    real = Path(os.path.realpath(path))
    try:
        text = confined.read(real, [real.parent], max_bytes=MAX_FILE_BYTES).data.decode("utf-8")
    except confined.ReadRefused as refused:
        if refused.reason == "too_large":
            return error(f"is over the {MAX_FILE_BYTES:,}-byte limit")
        if refused.reason == "not_regular":
            return error("cannot be read (it is not a regular file)")
        if refused.reason == "missing":
            return error("cannot be read (No such file or directory)")
        return error(f"cannot be read ({refused.cause or refused.reason.replace('_', ' ')})")
    except UnicodeDecodeError:
        return error("is not UTF-8 text")
    try:
        data = safe_json.loads(text)
    except ValueError as exc:
        return error(f"is not valid JSON ({exc})")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(top level)'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_input=False)[:5])
        more = f" (and {exc.error_count() - 5} more)" if exc.error_count() > 5 else ""
        return error(f"is not a valid {model.__name__} file: {problems}{more}")


def is_glob(pattern: str) -> bool:
    return "*" in pattern  # a ``tools`` pattern carries no scope (this module refuses one)


def read_glob_warnings(manifest: CapabilityManifest, trusted: Mapping[str, bool]) -> list[str]:
    """One warning per read glob of the manifest that covers a server the registry does not trust
    (``trusted``: server name -> trustAnnotations): it makes no tool of that server a read."""
    warnings = []
    for pattern, rule in manifest.tools.items():
        if rule.kind != "read" or not is_glob(pattern):
            continue
        servers = sorted(name for name, trust in trusted.items()
                         if not trust and matches(pattern, f"mcp://{name}/{pattern.rsplit('/', 1)[1]}"))
        if servers:
            warnings.append(
                f"the capability manifest's read entry {pattern} is a glob over tool names, and the registry "
                f"does not trust {', '.join(repr(s) for s in servers)} (trustAnnotations): it is ignored there, "
                "so those tools are writes (refused in Restricted, asked about under the interactive policy). "
                "Name each read tool exactly, or set trustAnnotations if the server's names can be trusted")
    return warnings


def load_agent_config(config: AgentSettings, data_dir: Path) -> AgentConfig | AgentConfigError:
    """Read and validate the files ``config`` names. A file not configured takes its default: no registry is
    no MCP server (the route works with no tools), no manifest allows no tool, no budgets file is the
    defaults of ``BudgetsFile``. The artifact directory defaults to ``artifacts/`` in ``data_dir``."""
    values: dict[str, Any] = {}
    for field, setting, model in (("registry", "PHOENIX_MCP_REGISTRY", McpRegistry),
                                  ("manifest", "PHOENIX_CAPABILITIES", CapabilityManifest),
                                  ("budgets", "PHOENIX_BUDGETS", BudgetsFile)):
        path = getattr(config, {"registry": "mcp_registry", "manifest": "capabilities",
                                "budgets": "budgets"}[field])
        if path is None:
            continue
        loaded = _read(Path(path).expanduser(), model, setting)
        if isinstance(loaded, AgentConfigError):
            return loaded
        values[field] = loaded
    registry: McpRegistry = values.get("registry", McpRegistry())
    manifest: CapabilityManifest = values.get("manifest", CapabilityManifest())
    warnings = [f"the capability manifest names the MCP server {name!r}, which the registry does not list"
                for name in sorted(manifest.servers() - set(registry.servers))]
    warnings += read_glob_warnings(manifest, {name: s.trust_annotations for name, s in registry.servers.items()})
    artifact_dir = Path(config.artifact_dir).expanduser() if config.artifact_dir else data_dir / "artifacts"
    return AgentConfig(**values, artifact_dir=artifact_dir, warnings=tuple(warnings))


def tool_parts(uri: str) -> tuple[str, str, str | None]:
    """``mcp://records/update_record?fields=status`` -> ``("records", "update_record", "fields=status")``.
    Raises ValueError for anything that is not a tool URI."""
    match = TOOL_URI.match(uri)
    if match is None:
        raise ValueError(f"{uri!r} is not a tool URI (mcp://<server>/<tool>)")
    return match["server"], match["tool"], match["scope"]
