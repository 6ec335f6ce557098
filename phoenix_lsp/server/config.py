"""The server's config: one model for every ``PHOENIX_*`` variable and initialization option.

Initialization options win over the environment, which wins over the defaults. One rule for every bad
value, wherever it comes from: it is reported at start-up naming where it came from (the variable or the
option), what it must be and the default that is used instead; the server still starts (REQ-PROTO-034).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from .. import safe_json
from ..limits import DEFAULT_MAX_MESSAGE_TOKENS
from ..llm.cache import CacheSettings
from ..llm.models import DEFAULT_MODEL, PRICES
from ..llm.pricing import Price
from ..protocol.params import InitializationOptions, ModelPriceIn
from ..sandbox.denylist import deny_read_paths, invalid_entries
from .transport import DEFAULT_MAX_MESSAGE_BYTES

ENV_PREFIX = "PHOENIX_"
#: the largest catalogue sent inline in run_plan's definition by default, in bytes (REQ-AGENT-038)
CATALOGUE_INLINE_MAX = 8000
#: how long phoenix-lsp acp waits for the client's answer to fs/read_text_file by default, in seconds
ACP_READ_TIMEOUT_S = 5.0


class Config(BaseSettings):
    """Everything the server can be told. Field ``x`` is the variable ``PHOENIX_X``."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore", frozen=True)

    model: str = Field(default=DEFAULT_MODEL, min_length=1, description="the model new conversations use")
    lsp_data_dir: Path | None = Field(default=None, description="where conversations are stored")
    config_dir: Path | None = Field(default=None, description="where the user-level AGENTS.md is (REQ-INSTR-001)")
    retry_base_ms: int = Field(default=1000, ge=0, le=60_000, description="first retry delay of the LLM")
    retry_after_max_ms: int = Field(
        default=60_000, ge=0, le=600_000, description="the longest retry-after of a 429/529 that is waited out"
    )
    event_coalesce_ms: float = Field(
        default=1.0, ge=0, le=100, description="text deltas are stored and sent at most this often (REQ-PROTO-049)"
    )
    llm_idle_timeout_s: float = Field(
        default=45.0, ge=0.1, le=600, description="a model stream that sends nothing this long has stalled"
    )
    bash_timeout_s: float | None = Field(default=None, gt=0, le=3600, description="bash's default timeout")
    subagent_time_limit_s: float = Field(default=600.0, ge=0.001, description="a sub-agent's time limit")
    subagent_max_turns: int = Field(default=50, ge=1, description="model turns a sub-agent may take")
    subagent_concurrency: int = Field(default=4, ge=1, description="sub-agents streaming at once")
    log_level: str = Field(default="INFO", pattern="(?i)^(DEBUG|INFO|WARNING|ERROR)$")
    max_message_bytes: int = Field(
        default=DEFAULT_MAX_MESSAGE_BYTES, ge=64 * 1024, le=2**31 - 1,
        description="the largest LSP message read; a longer one is refused and skipped (REQ-PROTO-044)",
    )
    max_message_tokens: int = Field(
        default=DEFAULT_MAX_MESSAGE_TOKENS, ge=10_000, le=2**31 - 1,
        description="the most strings, commas and brackets in one LSP message or ACP line; one with more is "
        "refused before it is decoded (REQ-PROTO-061)",
    )
    acp_read_timeout_s: float = Field(
        default=ACP_READ_TIMEOUT_S, gt=0, le=600, description="how long phoenix-lsp acp waits for the client to "
        "answer fs/read_text_file; then the disk is read (REQ-ACP-020)"
    )
    # the editor's sight (issue 29, REQ-SIGHT-003)
    sight_settle_ms: int = Field(
        default=1500, ge=0, le=30_000, description="after a patch, the longest wait for the editor's problems "
        "to change"
    )
    sight_timeout_ms: int = Field(
        default=1500, ge=100, le=30_000, description="how long the editor may take to answer a sight request "
        "beyond the settle time; a later answer is not waited for"
    )
    # prompt caching and prices (issue 16, REQ-CACHE-004/006)
    prompt_cache: bool = Field(default=True, description="prompt caching on or off")
    prompt_cache_ttl: Literal["5m", "1h"] = Field(default="5m", description="how long the API keeps a prefix")
    model_prices: Annotated[dict[str, ModelPriceIn], NoDecode] = Field(
        default_factory=dict, description="prices added to or replacing the built-in ones, per model (JSON)"
    )
    # the sandbox (issue 12, REQ-BASH-016/024)
    lsp_deny_read: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(), description="more paths Restricted commands may not read (separated by ':'; the denyRead "
        "option adds to them)"
    )
    background_timeout_s: float | None = Field(
        default=None, gt=0, le=7 * 24 * 3600, description="a background command's time limit (None: one hour)"
    )
    # the agent route's script engine (issue 14, REQ-AGENT-010/022)
    agent_engine: Literal["monty", "null"] = Field(
        default="monty", description="the script engine of the agent route: monty, or null (runs nothing)"
    )
    agent_trace_sample: float = Field(
        default=0.1, ge=0, le=1, description="the share of successful agent runs traced node by node (failed "
        "runs always are, REQ-AGENT-020)"
    )
    agent_catalogue_inline_max: int = Field(
        default=CATALOGUE_INLINE_MAX, ge=0, description="the largest catalogue of MCP tools sent inline in "
        "run_plan's definition, in bytes; above it, an index and describe_tools (0: always on demand, REQ-AGENT-038)"
    )
    agent_ask_prompt: bool = Field(
        default=False, description="for measurement only (python -m bench agent_tasks prints the route with it and "
        "without): the agent route's requests carry the ask route's system prompt and tools, as before REQ-AGENT-040"
    )
    agent_early_start: bool = Field(
        default=True, description="start a plan's read-only nodes while the model still writes the plan "
        "(REQ-AGENT-044); false waits for the whole plan"
    )
    mcp_call_timeout_s: float = Field(
        default=60.0, gt=0, le=3600, description="the longest one call of an MCP tool in the conversation may take "
        "before it is a tool error (issue 37, REQ-MCP-005)"
    )
    doctor_connect_s: float = Field(
        default=10.0, gt=0, le=600, description="the longest phoenix-lsp doctor waits for one MCP server to start "
        "and list its tools (a server's shorter connectTimeoutS wins, REQ-AGENT-032)"
    )
    # the agent route's files (issue 14, REQ-AGENT-022); read by phoenix_lsp.agent.agent_config
    mcp_registry: Path | None = Field(default=None, description="the MCP registry file (JSON; none: no MCP tools)")
    capabilities: Path | None = Field(
        default=None, description="the capability manifest (JSON; none: no MCP tool is allowed)"
    )
    budgets: Path | None = Field(default=None, description="the agent route's budgets file (JSON; none: defaults)")
    providers: Path | None = Field(
        default=None, description="the providers file (JSON; none: only the providers the environment configures)"
    )
    artifact_dir: Path | None = Field(
        default=None, description="where the agent route keeps artifacts (none: artifacts/ in the data directory)"
    )

    @field_validator("lsp_deny_read", mode="before")
    @classmethod
    def _paths(cls, value: Any) -> Any:
        """The variable holds paths separated by ``os.pathsep``; empty entries mean nothing."""
        if isinstance(value, str):
            return tuple(entry for entry in value.split(os.pathsep) if entry.strip())
        return value

    @field_validator("model_prices", mode="before")
    @classmethod
    def _json(cls, value: Any) -> Any:
        """The variable holds JSON; decoded here, so text that is not JSON is reported like any bad value."""
        if isinstance(value, str):
            try:
                return safe_json.loads(value)
            except ValueError:
                raise ValueError("not valid JSON") from None
        return value


#: initialization option -> Config field
_OPTIONS = {
    "model": "model",
    "data_dir": "lsp_data_dir",
    "retry_base_ms": "retry_base_ms",
    "bash_timeout_s": "bash_timeout_s",
    "prompt_cache": "prompt_cache",
    "prompt_cache_ttl": "prompt_cache_ttl",
    "background_timeout_s": "background_timeout_s",
}

#: Config field -> the variable it had before issue 26 named sub-agents "subagent": still read when the new
#: variable is not set, so an existing environment keeps working (the new name wins when both are set)
_OLD_VARIABLES = {
    "subagent_time_limit_s": "PHOENIX_AGENT_TIME_LIMIT_S",
    "subagent_max_turns": "PHOENIX_AGENT_MAX_TURNS",
    "subagent_concurrency": "PHOENIX_AGENT_CONCURRENCY",
}


def _variable(field: str, environ: Mapping[str, str]) -> str:
    """The variable a field was read from: its own, or the old name it is still read under."""
    variable = ENV_PREFIX + field.upper()
    old = _OLD_VARIABLES.get(field)
    return old if old is not None and variable not in environ and old in environ else variable


#: what a value must be, for the fields whose type says too little
_RULES = {
    "prompt_cache": "on or off",
    "prompt_cache_ttl": "5m or 1h",
    "agent_engine": "monty or null",
    "model_prices": 'a JSON object such as {"claude-sonnet-4-6": {"input": 3, "output": 15}} (USD per million tokens)',
}


#: how a default of None is shown, for the fields where None means the tool's own default
_SHOWN = {
    "bash_timeout_s": "(30 s, 15 min for slow commands)",
    "background_timeout_s": "(one hour)",
    "artifact_dir": "(artifacts/ in the data directory)",
}


def _rule(field: str) -> str:
    if field in _RULES:
        return _RULES[field]
    info = Config.model_fields[field]
    types = [t for t in get_args(info.annotation) if t is not type(None)] or [info.annotation]
    kind = {int: "a whole number", float: "a number", str: "text"}.get(types[0], "a value")
    for bound in info.metadata:
        for attribute, words in (("ge", "at least"), ("gt", "above"), ("le", "at most")):
            value = getattr(bound, attribute, None)
            if value is not None:
                kind += f" {words} {value:g}"
    return kind


def load(options: InitializationOptions, environ: Mapping[str, str]) -> tuple[Config, list[str]]:
    """The config, and one message per bad value (that value's default is used instead)."""
    given: dict[str, Any] = {
        field: getattr(options, option) for option, field in _OPTIONS.items() if getattr(options, option) is not None
    }
    for field, old in _OLD_VARIABLES.items():
        if field not in given and _variable(field, environ) == old:
            given[field] = environ[old]
    problems: list[str] = []
    for _ in range(len(Config.model_fields) + 1):
        try:
            return Config(**given), problems
        except ValidationError as exc:
            error = exc.errors(include_url=False)[0]
            field, why = str(error["loc"][0]), str(error["msg"])
            info = Config.model_fields[field]
            default = info.get_default(call_default_factory=True)
            if field in given and field in _OPTIONS.values():
                where = f"the initialization option {next(o for o, f in _OPTIONS.items() if f == field)}"
                raw = given[field]
            else:
                variable = _variable(field, environ)
                where, raw = variable, environ.get(variable, "")
            shown: Any = _SHOWN.get(field) if default is None else default
            if field == "prompt_cache":
                shown = "on" if default else "off"
            problems.append(
                f"phoenix-lsp: ignoring {where}={raw!r} ({why}); using the default {shown or 'none'}. "
                f"Set it to {_rule(field)}."
            )
            given[field] = default  # an explicit value wins over the environment
    raise AssertionError("unreachable: every field has a valid default")


# ---------------------------------------------------------------------------------- prompt caching (issue 16)

def prompt_cache(config: Config) -> CacheSettings:
    """Caching on or off and its TTL (REQ-CACHE-004), from the config model (options, then the environment)."""
    return CacheSettings(enabled=config.prompt_cache, ttl=config.prompt_cache_ttl)


def model_prices(config: Config, option: Mapping[str, Any] | None) -> dict[str, Price]:
    """The price table (REQ-CACHE-006): the known models' list prices, overridden or extended per model by
    ``PHOENIX_MODEL_PRICES`` (the config model's ``model_prices``) and then by the ``modelPrices`` option."""
    prices = dict(PRICES)
    for table in (config.model_prices, option or {}):
        prices.update({model: _price(entry) for model, entry in table.items()})
    return prices


def _price(entry: Any) -> Price:
    return Price(entry.input, entry.output, entry.cache_write_5m, entry.cache_write_1h, entry.cache_read)
def read_sandbox_settings(config: Config, deny_read: list[str] | None, data_dir: Path,
                          environ: Mapping[str, str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """The sandbox fields of the hub's configuration and the problems to show the user.

    ``deny_read`` (the ``denyRead`` initialization option) adds to the defaults and to
    ``PHOENIX_LSP_DENY_READ`` (the config model's ``lsp_deny_read``); the server's own data directory is
    always denied. An entry that is not an absolute path is reported and ignored, the others still apply
    (dropping a whole list for one typo would expose what the user meant to hide). The background time
    limit comes from the config model, where a bad value is reported like any other.
    """
    env = os.environ if environ is None else environ
    problems: list[str] = []
    entries = [*config.lsp_deny_read, *(deny_read or [])]
    bad = invalid_entries(entries)
    if bad:
        problems.append(f"phoenix-lsp: ignoring deny-read entries that are not absolute paths: {bad!r}. "
                        "Write them as /abs/path or ~/path.")
    # the artifact directory is the server's data wherever it is (PHOENIX_ARTIFACT_DIR may put it elsewhere)
    own = [data_dir, *([Path(config.artifact_dir).expanduser()] if config.artifact_dir else [])]
    settings: dict[str, Any] = {"deny_read": deny_read_paths(entries, own, env)}
    if config.background_timeout_s is not None:
        settings["background_timeout_s"] = config.background_timeout_s
    return settings, problems
