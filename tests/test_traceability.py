"""Every requirement in specs/ is named by a test, or listed in specs/deferred.md with the issue that covers it.

Test modules are scanned statically for ``pytest.mark.req(...)`` so the check does not depend on which tests
were selected for this run.
"""

from __future__ import annotations

import ast
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
SPECS = ROOT / "specs"
HEADING = re.compile(r"^### (REQ-[A-Z]+-\d{3})\b", re.M)
DEFERRED = re.compile(r"^- (REQ-[A-Z]+-\d{3}): issue (\d+|none) — \S", re.M)


def spec_ids() -> dict[str, str]:
    ids: dict[str, str] = {}
    for path in sorted(SPECS.glob("*.md")):
        for req in HEADING.findall(path.read_text()):
            assert req not in ids, f"{req} is defined twice ({ids[req]} and {path.name})"
            ids[req] = path.name
    return ids


def deferred_ids() -> dict[str, str]:
    text = (SPECS / "deferred.md").read_text()
    return {m.group(1): m.group(2) for m in DEFERRED.finditer(text)}


def ids_named_by_tests() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "req"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "mark"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                        found.setdefault(arg.value, set()).add(str(path.relative_to(ROOT)))
    return found


def test_every_requirement_has_a_test_or_is_deferred() -> None:
    specs, deferred, tested = spec_ids(), deferred_ids(), ids_named_by_tests()
    assert len(specs) > 100, "specs/ should hold every requirement of the seeds"
    missing = sorted(set(specs) - set(tested) - set(deferred))
    assert not missing, f"requirements with no test and not deferred in specs/deferred.md: {missing}"


def test_deferred_list_holds_only_untested_existing_ids() -> None:
    specs, deferred, tested = spec_ids(), deferred_ids(), ids_named_by_tests()
    unknown = sorted(set(deferred) - set(specs))
    assert not unknown, f"specs/deferred.md names ids that are not in specs/: {unknown}"
    stale = sorted(set(deferred) & set(tested))
    assert not stale, f"these ids have tests now: remove them from specs/deferred.md: {stale}"


def test_tests_name_only_existing_requirements() -> None:
    specs, tested = spec_ids(), ids_named_by_tests()
    unknown = {req: files for req, files in tested.items() if req not in specs}
    assert not unknown, f"tests name requirement ids that specs/ does not define: {unknown}"
