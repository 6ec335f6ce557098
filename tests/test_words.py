"""One word per idea (specs/modes.md, "Words with more than one use"; issue 26): no banned word in code, on the
wire, in specs or in UI text.

A ban names the idea's one word. A word survives only where the glossary says so: a quote of a seed in specs
(inside quotes or backticks, in a paragraph naming a seed), the glossary's own rows, and the few places listed
in ``ALLOWED``, each with its reason.
"""

from __future__ import annotations

import fnmatch
import pathlib
import re
from dataclasses import dataclass

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: what is scanned: code, the wire, specs and what the user reads (READMEs, the extension's manifest)
SCANNED = (
    ("phoenix_lsp", ("*.py", "*.c")),
    ("nvim", ("*.lua", "*.vim", "*.txt")),
    ("vscode-extension/src", ("*.ts", "*.css", "*.html")),
    ("vscode-extension/media", ("*.css", "*.js", "*.html", "*.svg")),
    ("specs", ("*.md", "*.json")),
    ("scripts", ("*.py", "*.sh")),
)
SCANNED_FILES = ("README.md", "vscode-extension/README.md", "vscode-extension/package.json", "pyproject.toml",
                 ".ci/run")


@dataclass(frozen=True)
class Ban:
    pattern: str
    word: str  # the banned word, as the glossary names it
    use: str  # the one word for the idea

    def finds(self, text: str) -> list[re.Match[str]]:
        return list(re.finditer(self.pattern, text))


BANS = (
    Ban(r"(?i)\bphases?\b", "phase", "mode (seed 002's planning = restricted, execution = unrestricted)"),
    Ban(r"\bMVP\b", "MVP", "policy auto, shown as 🚀 Auto"),
    Ban(r"\bapprovalPolicy\b|\bapproval_policy\b", "approvalPolicy (a field)", "policy"),
    Ban(r"\bpolicy_gate\b|\bPolicyGate\b|(?i:\bpolicy gate\b)", "policy gate", "capability gate"),
    Ban(r"\bPolicyDecision\b", "PolicyDecision", "ApprovalDecision"),
    Ban(r"\bPOLICY\b", "POLICY (an error kind)", "DENIED"),
    Ban(r"\bSANDBOX\b", "SANDBOX (an error kind)", "ENGINE"),
    Ban(r"\bSandboxEngine\b|\bNullSandbox\b|\bSandboxHealth\b", "Sandbox (the script engine)", "engine"),
    Ban(r"\bagent_(time_limit_s|max_turns|concurrency)\b|\bPHOENIX_AGENT_(TIME_LIMIT_S|MAX_TURNS|CONCURRENCY)\b",
        "agent (a sub-agent's setting)", "subagent"),
    Ban(r"\bconfig\.agent\b(?!_)", "HubConfig.agent", "HubConfig.agent_route"),
    Ban(r"(?i)\bserver'?s settings\b|\bsettings model\b|\bserver/settings\.py\b", "settings (the server's)",
        "config"),
    Ban(r"\bplan_patch\b|\bPatchPlan\b|\bPlannedEdit\b|\bplan_workspace_edit\b|\bwrite_plan\b",
        "plan (the patch's edit)", "prepared"),
)

#: file names no module may have again (the module was merged, renamed or split)
BANNED_PATHS = {
    "phoenix_lsp/server/settings.py": "merged into server/config.py: one module is the server's config",
    "phoenix_lsp/agent/policy_gate.py": "the capability gate is agent/capability_gate.py",
    "phoenix_lsp/sandbox/policy.py": "the kernel sandbox's rules live in modules named for their jobs (landlock, "
    "seccomp, limits, cgroups...); 'policy' is the approval policy",
    "phoenix_lsp/tools/patch/plan.py": "the patch's computed edit is prepared: tools/patch/prepare.py",
}

#: (file or glob, what the line holds, why the word survives there)
ALLOWED = (
    ("phoenix_lsp/protocol/params.py", r'AliasChoices\("policy", "approvalPolicy"\)|old name approvalPolicy',
     "migration alias: newConversation still accepts approvalPolicy (tests/server/test_old_names.py)"),
    ("specs/protocol.schema.json", r"old name approvalPolicy", "the alias, as the schema documents it"),
    ("vscode-extension/src/protocol.generated.ts", r"old name approvalPolicy", "the alias, as generated"),
    ("phoenix_lsp/server/config.py", r'"PHOENIX_AGENT_(TIME_LIMIT_S|MAX_TURNS|CONCURRENCY)"',
     "migration alias: the sub-agent variables' old names are still read"),
    ("phoenix_lsp/client/*.py", r"/policy POLICY", "the help's placeholder for a policy, not an error kind"),
    ("*", r"\bphoenix\.approvalPolicy\b",
     "the VS Code setting phoenix.approvalPolicy: a user's stored choice, its key in the long form"),
    ("vscode-extension/src/host/settings.ts", r'get<Policy>\("approvalPolicy"', "reads that setting by its key"),
)

SEED = re.compile(r"\b[Ss]eeds?\b")
QUOTED = re.compile(r'"[^"\n]*"|“[^”\n]*”|`[^`\n]*`')
GLOSSARY = re.compile(r"<!-- words:begin -->.*?<!-- words:end -->", re.S)


def scanned() -> list[pathlib.Path]:
    paths = [ROOT / name for name in SCANNED_FILES]
    for folder, globs in SCANNED:
        for glob in globs:
            paths.extend(p for p in (ROOT / folder).rglob(glob) if "node_modules" not in p.parts)
    return sorted(set(paths))


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with the given spans blanked out (newlines kept, so line numbers stay true)."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            if chars[i] != "\n":
                chars[i] = " "
    return "".join(chars)


def exempt(rel: str, text: str) -> str:
    """The text with what the glossary allows blanked out."""
    spans: list[tuple[int, int]] = []
    if rel.endswith(".md"):
        spans += [m.span() for m in GLOSSARY.finditer(text)]
        offset = 0
        for paragraph in re.split(r"(\n\s*\n)", text):
            if SEED.search(paragraph):  # a seed's words, quoted, are the seed's
                spans += [(offset + m.start(), offset + m.end()) for m in QUOTED.finditer(paragraph)]
            offset += len(paragraph)
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    for path, holds, _why in ALLOWED:
        if fnmatch.fnmatch(rel, path):
            for number, line in enumerate(lines):
                for m in re.finditer(holds, line):
                    spans.append((starts[number] + m.start(), starts[number] + m.end()))
    return _blank(text, spans)


def findings() -> list[str]:
    found = []
    for path in scanned():
        rel = str(path.relative_to(ROOT))
        text = exempt(rel, path.read_text(errors="replace"))
        for ban in BANS:
            for m in ban.finds(text):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{rel}:{line}: {m.group(0)!r} — {ban.word} is banned here; say {ban.use}")
    return found


@pytest.mark.req("REQ-LAYER-009")
def test_no_banned_word_in_code_wire_specs_or_ui_text() -> None:
    found = findings()
    assert not found, "banned words (specs/modes.md, Words with more than one use):\n" + "\n".join(found)


@pytest.mark.req("REQ-LAYER-009")
def test_no_module_keeps_a_banned_name() -> None:
    kept = {path: why for path, why in BANNED_PATHS.items() if (ROOT / path).exists()}
    assert not kept, f"modules under a banned name: {kept}"


@pytest.mark.req("REQ-LAYER-009")
def test_the_check_finds_a_banned_word_and_spares_a_seed_quote() -> None:
    """The scanner itself: a banned word is found in plain text, spared in a quoted seed word and in the
    glossary, and found again outside the quote."""
    bare = exempt("specs/x.md", "The execution phase starts.")
    quoted = exempt("specs/x.md", 'Source: seed 002 ("execution phase"); issue 5')
    unquoted_beside_seed = exempt("specs/x.md", "Source: seed 002; the phase of it")
    glossary = exempt("specs/x.md", "<!-- words:begin -->\n| phase | banned |\n<!-- words:end -->")
    phase = BANS[0]
    assert phase.finds(bare) and not phase.finds(quoted) and phase.finds(unquoted_beside_seed)
    assert not phase.finds(glossary)
    assert not exempt("phoenix_lsp/client/commands.py", "  /policy POLICY    interactive").strip().endswith("POLICY")


def test_the_mutation_check_names_only_files_that_exist() -> None:
    """A rename sweep must carry the build along: mutmut's file lists in pyproject.toml are read only by the
    mutation check, which runs after the whole suite in CI, so a renamed module or test would surface only there."""
    import tomllib

    mutmut = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mutmut"]
    named = [*mutmut["only_mutate"], *mutmut["pytest_add_cli_args_test_selection"]]
    missing = [name for name in named if not any(ROOT.glob(name))]
    assert missing == [], f"pyproject.toml's [tool.mutmut] names files that do not exist: {missing}"
