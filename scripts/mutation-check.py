#!/usr/bin/env python3
"""Mutation check of the pure core (issue 18), the agent's capability gate and the confined reader (issue 24): run
mutmut on some files, sort the survivors, report.

    .venv/bin/python scripts/mutation-check.py                      # permissions.py: CI runs it
    .venv/bin/python scripts/mutation-check.py capability_gate      # phoenix_lsp/agent/capability_gate.py: CI too
    .venv/bin/python scripts/mutation-check.py confined             # phoenix_lsp/confined.py: CI too (a few minutes)
    .venv/bin/python scripts/mutation-check.py sink                 # phoenix_lsp/llm/sink.py: CI too (issue 34)
    .venv/bin/python scripts/mutation-check.py uris                 # phoenix_lsp/uris.py: CI too
    .venv/bin/python scripts/mutation-check.py options rules        # scoped Always Allow (issue 34): CI too
    .venv/bin/python scripts/mutation-check.py state turns          # other files of phoenix_lsp/core
    .venv/bin/python scripts/mutation-check.py --all                # the whole core (8-12 minutes on 2 cores)
    .venv/bin/python scripts/mutation-check.py --no-run machine     # only report the last run's results

mutmut (configured in pyproject's [tool.mutmut]) changes one thing in the code at a time (a mutant) and runs
the fast tests against it (tests/core for the core, tests/agent/test_capability_gate.py for the gate,
tests/test_confined.py for the confined reader): mutmut runs every test of its selection once to learn which
tests run which function, then tries each mutant against only those, so a mutant of the reader meets
tests/test_confined.py alone. A mutant the tests fail on is *killed*; one they pass on *survived*, so nothing
pins the thing it changed.
A survivor is *text only* when all it changes is the wording of a message (a string literal with a space in
it, or a literal part of an f-string); anything else is a *logic* survivor: an operator, a number, a
condition, an argument, or a code or key string such as "mode" or "toolUseId".

A mutant that made a test hang (a *timeout*) counts as caught, and is reported.

The exit status is 1 when a logic mutant survived in a checked file, unless it is listed as
equivalent in tests/core/mutants.md (its full name in backquotes, with the reason; the confined reader's
are in their own section there). Text-only survivors are
reported, never fatal. Runs mutmut niced, with at most ``--max-children`` test processes (default 2).
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = Path("phoenix_lsp/core")
EQUIVALENT = ROOT / "tests/core/mutants.md"
ALL_FILES = ("machine", "table", "steps", "turns", "dispatch", "approvals", "changes", "subagents", "interruptions",
             "notifications", "permissions", "state", "rules", "options", "effects", "events", "texts", "tools",
             "values")
#: what the check can mutate, by name: the core's files, the agent's capability gate, the confined reader (issue 24)
TARGETS = {**{m: CORE / f"{m}.py" for m in ALL_FILES},
           "capability_gate": Path("phoenix_lsp/agent/capability_gate.py"),
           "confined": Path("phoenix_lsp/confined.py"),
           "sink": Path("phoenix_lsp/llm/sink.py"),
           "uris": Path("phoenix_lsp/uris.py")}


def _mutmut() -> Path:
    return Path(sys.executable).with_name("mutmut")


def run_mutmut(modules: list[str], max_children: int) -> float:
    """Run mutmut on the mutants of ``modules`` (phoenix_lsp.core.<module>); returns the seconds it took."""
    patterns = [".".join(TARGETS[m].with_suffix("").parts) + ".*" for m in modules]
    command = ["nice", "-n", "15", str(_mutmut()), "run", "--max-children", str(max_children), *patterns]
    print("+", " ".join(command), flush=True)
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    seconds = time.monotonic() - start
    if done.returncode != 0:
        print(done.stdout[-5000:])
        raise SystemExit(f"mutmut failed (exit {done.returncode})")
    return seconds


def _without_text(tree: ast.AST) -> str:
    """The tree with the words of messages blanked out: prose string literals and f-string literal parts."""

    class Blank(ast.NodeTransformer):
        def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
            node.values = [
                ast.Constant("") if isinstance(v, ast.Constant) else self.visit(v) for v in node.values
            ]
            return node

        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            if isinstance(node.value, str) and re.search(r"\s", node.value):
                return ast.Constant("")
            return node

    return ast.dump(Blank().visit(tree))


def classify(name: str, path: Path) -> str:
    """Text when the mutant only changes the wording of a message, otherwise logic."""
    import libcst as cst
    from mutmut.mutation.diff_apply import (
        read_functions_from_index,
        read_mutant_function,
        read_mutants_module,
        read_original_function,
    )

    functions = read_functions_from_index(name, path)
    if functions is None:
        module = read_mutants_module(path)
        functions = (read_original_function(module, name), read_mutant_function(module, name))
    original, mutant = (ast.parse(cst.Module([f]).code) for f in functions)
    if ast.dump(original) == ast.dump(mutant):
        return "logic"  # nothing visible changed: treat it as logic so that someone looks at it
    return "text" if _without_text(original) == _without_text(mutant) else "logic"


def diff(name: str, path: Path) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    return get_diff_for_mutant(name, path=path)


def equivalent_names() -> set[str]:
    if not EQUIVALENT.exists():
        return set()
    return set(re.findall(r"`([\w.ǁ]+__mutmut_\d+)`", EQUIVALENT.read_text()))


def report(modules: list[str], show_diffs: bool) -> bool:
    """Print the figures per file and the survivors; True when no unlisted logic mutant survived."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code

    listed = equivalent_names()
    ok = True
    print(f"\n{'file':<16}{'mutants':>8}{'killed':>8}{'survived: logic':>16}{'text':>6}{'timeout':>8}{'other':>7}"
          f"{'logic killed':>14}")
    for module in modules:
        path = TARGETS[module]
        data = SourceFileMutationData(path=path)
        data.load()
        counts: Counter[str] = Counter()
        bad: list[tuple[str, str]] = []
        for name, code in sorted(data.exit_code_by_key.items(), key=lambda kv: _natural(kv[0])):
            status = status_by_exit_code[code]
            kind = classify(name, path)
            counts[f"all {kind}"] += 1
            if status == "killed" or status == "caught by type check":
                counts["killed"] += 1
                counts[f"killed {kind}"] += 1
            elif status in ("survived", "no tests"):
                counts[kind] += 1
                if kind == "logic" and name not in listed:
                    bad.append((name, status))
            elif status == "timeout":  # the mutant made a test hang: caught, but reported
                counts["timeout"] += 1
            else:
                counts["other"] += 1
                bad.append((name, status))
        total = len(data.exit_code_by_key)
        logic = counts["all logic"]
        share = f"{counts['killed logic']}/{logic} ({100 * counts['killed logic'] / logic:.1f}%)" if logic else "-"
        print(
            f"{module + '.py':<16}{total:>8}{counts['killed']:>8}{counts['logic']:>16}{counts['text']:>6}"
            f"{counts['timeout']:>8}{counts['other']:>7}  {share}"
        )
        for name, status in bad:
            ok = False
            print(f"  {status}: {name}")
            if show_diffs:
                print("    " + diff(name, path).replace("\n", "\n    "))
    return ok


def _natural(name: str) -> tuple[str, int]:
    stem, _, number = name.rpartition("__mutmut_")
    return stem, int(number) if number.isdigit() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("modules", nargs="*", help=f"of {', '.join(TARGETS)} (default: permissions)")
    parser.add_argument("--all", action="store_true", help="every file of phoenix_lsp/core")
    parser.add_argument("--no-run", action="store_true", help="report the results of the last run only")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--diffs", action="store_true", help="print the diff of every unlisted survivor")
    args = parser.parse_args()
    modules = list(ALL_FILES) if args.all else (args.modules or ["permissions"])
    unknown = set(modules) - set(TARGETS)
    if unknown:
        parser.error(f"not a target: {', '.join(sorted(unknown))}")
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    if not args.no_run:
        seconds = run_mutmut(modules, args.max_children)
        print(f"mutmut ran {', '.join(modules)} in {seconds:.0f} s")
    ok = report(modules, args.diffs or not args.no_run)
    if not ok:
        print(
            "\nA logic mutant survived: a test should fail when that code changes. Add one (or, if the mutant "
            f"cannot change behaviour, list it with the reason in {EQUIVALENT.relative_to(ROOT)})."
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
