"""Always-allow rules as values (REQ-PERM-003, REQ-PERM-019..022): a tool, optionally narrowed to command prefixes.

A rule is ``patch`` or ``bash`` (the whole tool) or ``bash: git status *`` (bash calls whose every simple
command starts with the words ``git status``). The core never parses shell: a bash call arrives with its
simple commands already parsed (``ToolUse.commands``, filled by the server with ``tools/bash_scope.py``),
or with ``None`` when the parser could not prove what the line runs — then only a whole-tool rule covers it.

A call is covered when a whole-tool rule names its tool, or when every one of its simple commands starts
with a prefix of some rule of its tool and uses only option kinds that rule saw approved (``options.py``).
``git status; rm -rf x`` is therefore never covered by ``git status *``: ``rm -rf x`` matches no prefix; and
``git log -1 --output=FILE`` is not covered by ``git log *`` derived from ``git log --oneline -1``: the user
never saw ``--output`` approved (REQ-PERM-026).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from .mcp_names import is_mcp, rule_names
from .options import option_kinds
from .tools import BASH
from .values import ToolUse

Prefix = tuple[str, ...]

#: Commands that run other code given in their arguments: a prefix of them is as wide as the whole tool,
#: so no prefix scope is offered for them (the user can still allow the whole tool).
RUNNERS = frozenset(
    {
        "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox", "su", "sudo", "doas", "env",
        "nice", "ionice", "nohup", "time", "timeout", "command", "builtin", "exec", "eval", "source", ".",
        "xargs", "stdbuf", "chronic", "unbuffer", "watch", "parallel", "ssh", "script", "setsid",
        "python", "python3", "python2", "node", "deno", "bun", "perl", "ruby", "php", "lua", "awk", "gawk",
        "osascript", "pwsh", "powershell", "npx", "pnpx", "bunx", "uvx", "trap", "alias",
    }
)
#: Commands whose first word is a subcommand: their narrowest useful prefix keeps it (`git status *`).
SUBCOMMANDS = frozenset(
    {
        "git", "npm", "pnpm", "yarn", "cargo", "go", "docker", "podman", "kubectl", "helm", "gh", "pip",
        "pip3", "poetry", "uv", "apt", "apt-get", "brew", "systemctl", "dotnet", "mvn", "gradle", "make",
        "just", "terraform", "rustup", "conda", "hg", "svn", "bundle", "gem", "composer", "mix", "stack",
        "cabal", "swift", "flutter", "dart", "nix", "tox", "nox", "pytest", "ruff", "mypy",
    }
)
#: `npm run test` keeps the script's name too: `npm run *` would allow every script.
SCRIPT_RUNNERS = {("npm", "run"), ("pnpm", "run"), ("yarn", "run"), ("bun", "run"), ("uv", "run"),
                  ("poetry", "run"), ("cargo", "run")}
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9_:.-]*\Z")


@dataclass(frozen=True, slots=True, order=True)
class AllowRule:
    """Always allow ``tool``: the whole tool when ``prefixes`` is empty, else calls whose every simple
    command starts with one of ``prefixes`` (bash only) and uses no option kind outside ``options``: the
    writing, program-running and unknown options (``sort --output``) the approved call used."""

    tool: str
    prefixes: tuple[Prefix, ...] = ()
    options: tuple[str, ...] = ()

    @property
    def whole_tool(self) -> bool:
        return not self.prefixes

    @property
    def rule(self) -> str:
        """How clients name the rule: the tool name for a whole-tool rule, else its prefixes (``git status *``)."""
        if self.whole_tool:
            return self.tool
        text = "; ".join(" ".join(shlex.quote(w) for w in p) + " *" for p in self.prefixes)
        return f"{text} (with {', '.join(self.options)})" if self.options else text

    @property
    def label(self) -> str:
        """The rule with its tool, for lists and audit entries (``bash: git status *``)."""
        return self.tool if self.whole_tool else f"{self.tool}: {self.rule}"

    def names(self, text: str) -> bool:
        """Whether ``text`` names this rule (its ``rule`` or its ``label``)."""
        return text.strip() in (self.rule, self.label)


def _starts_with(words: tuple[str, ...], prefix: Prefix) -> bool:
    return len(words) >= len(prefix) and words[: len(prefix)] == prefix


def command_covered(words: tuple[str, ...], rules: Iterable[AllowRule], tool: str = BASH) -> bool:
    """Whether one simple command starts with a prefix of a rule of ``tool`` that saw each of its option
    kinds approved (REQ-PERM-026)."""
    matching = [r for r in rules if r.tool == tool and any(_starts_with(words, p) for p in r.prefixes)]
    if not matching:
        return False
    kinds = option_kinds(words)  # read only when a prefix matches: most commands of a line match none
    return any(kinds.issubset(r.options) for r in matching)


def covers(rules: Iterable[AllowRule], call: ToolUse) -> bool:
    """Whether ``rules`` allow ``call`` without asking. Conservative: an unparsed call needs a whole-tool rule."""
    if is_mcp(call.name):  # the tool's own rule or its whole server's (core/mcp_rules.py)
        names = rule_names(call.name)
        return any(r.whole_tool and r.tool in names for r in rules)
    mine = [r for r in rules if r.tool == call.name]
    if any(r.whole_tool for r in mine):
        return True
    if call.name != BASH or not call.commands:
        return False
    return all(command_covered(words, mine, call.name) for words in call.commands)


def narrowest_prefix(words: tuple[str, ...]) -> Prefix | None:
    """The narrowest useful prefix of one simple command, or None when no prefix is narrower than the tool."""
    name = words[0]
    if name in RUNNERS or ("/" in name and name.rsplit("/", 1)[-1] in RUNNERS) or not name.strip():
        return None
    if name in SUBCOMMANDS and len(words) > 1 and _SUBCOMMAND.match(words[1]):
        if (name, words[1]) in SCRIPT_RUNNERS and len(words) > 2 and _SUBCOMMAND.match(words[2]):
            return (name, words[1], words[2])
        return (name, words[1])
    return (name,)


def scopes_for(rules: Iterable[AllowRule], call: ToolUse) -> tuple[AllowRule, ...]:
    """The rules Always Allow may add for ``call``, narrowest first; the whole tool is always the last.

    For an MCP tool: the tool, then every tool of its server (``mcp__github__*``).
    For bash the narrow scope names a prefix for each simple command the existing rules do not cover yet
    (``git log | head`` with ``git log *`` allowed offers ``head *``).
    """
    if is_mcp(call.name):  # an MCP tool: the tool, then its whole server (REQ-MCP-004)
        return tuple(AllowRule(name) for name in rule_names(call.name))
    whole = AllowRule(call.name)
    if call.name != BASH or not call.commands:
        return (whole,)
    existing = tuple(rules)
    prefixes: list[Prefix] = []
    options: set[str] = set()
    for words in call.commands:
        if command_covered(words, existing, call.name):
            continue
        prefix = narrowest_prefix(words)
        if prefix is None:
            return (whole,)
        if prefix not in prefixes:
            prefixes.append(prefix)
        options |= option_kinds(words)  # what the user sees approved, and all the rule will cover
    if not prefixes:
        return (whole,)
    return (AllowRule(call.name, tuple(prefixes), tuple(sorted(options))), whole)


def add_rule(rules: tuple[AllowRule, ...], rule: AllowRule) -> tuple[AllowRule, ...]:
    """The rules with ``rule`` added (kept sorted, no duplicates)."""
    return rules if rule in rules else tuple(sorted((*rules, rule)))
