"""Ordinary read-only work still works under Restricted (REQ-BASH-012, REQ-BED-014)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from .conftest import PY, Runner, needs_sandbox, py

pytestmark = [needs_sandbox, pytest.mark.req("REQ-BASH-012", "REQ-BED-014")]


@pytest.fixture
def project(workspace: Path) -> Path:
    """The workspace grown into a small Python project with a second commit, a Makefile and tests."""
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "__init__.py").write_text("")
    (workspace / "pkg" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (workspace / "tests").mkdir()
    (workspace / "tests" / "test_calc.py").write_text(
        "from pkg.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_add_neg():\n    assert add(-1, 1) == 0\n")
    (workspace / "Makefile").write_text("build:\n\techo building > build.log\n")
    (workspace / "data.json").write_text('{"name": "phoenix", "items": [1, 2, 3]}\n')
    (workspace / "words.txt").write_text("pear\napple\npear\nfig\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "add", "pkg", "tests", "Makefile", "data.json", "words.txt"], cwd=workspace,
                   check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "add calc"], cwd=workspace, check=True, env=env)
    (workspace / "notes.md").write_text("# Notes\nneedle in a haystack\nchanged line\n")  # unstaged change
    return workspace


CASES: list[tuple[str, str]] = [
    ("git status", "modified:   notes.md"),
    ("git log --oneline", "add calc"),
    ("git diff", "+changed line"),
    ("git diff HEAD~1 --stat", "pkg/calc.py"),
    ("git show --stat HEAD", "add calc"),
    ("git branch --list", "main"),
    ("git blame pkg/calc.py", "return a + b"),
    ("grep -rn needle .", "notes.md:2:needle"),
    ("find . -name '*.py' -not -path './.git/*' | sort", "./pkg/calc.py"),
    (py("print(open('pkg/calc.py').read().count('return'))"), "1"),
    ("ls -la", "secret.txt"),
    ("cat secret.txt", "original content"),
    ("wc -l words.txt", "4 words.txt"),
    ("head -n 1 notes.md && tail -n 1 words.txt", "fig"),
    ("sort words.txt | uniq -c | sort -rn | head -n 1", "2 pear"),
    ("make -n build", "echo building > build.log"),
    (f"{PY} -m pytest --collect-only -q -p no:cacheprovider tests", "2 tests collected"),
    ("du -sh pkg", "pkg"),
    ("stat -c '%s %n' secret.txt", "17 secret.txt"),
    ("sha256sum secret.txt", "secret.txt"),
    ("diff <(echo a) <(echo b); true", "> b"),
    ("awk '{n += length($0)} END {print n}' words.txt", "16"),
    ("sed -n '2p' notes.md", "needle in a haystack"),
    ("jq -r .name data.json", "phoenix"),
    ("tar -cf - pkg | tar -tf -", "pkg/calc.py"),
    ('f=$(mktemp) && echo scratch-ok > "$f" && cat "$f"', "scratch-ok"),  # $TMPDIR is writable
    ("echo discarded > /dev/null && echo devnull-ok", "devnull-ok"),
    ("env | grep ^PHOENIX_LSP_SANDBOX=", "PHOENIX_LSP_SANDBOX=restricted"),
    ("uname -s && id -u", "Linux"),
]


@pytest.mark.parametrize(("command", "expected"), CASES, ids=[c for c, _ in CASES])
async def test_read_only_command_works(restricted: Runner, project: Path, command: str, expected: str) -> None:
    if command.startswith("jq") and not Path("/usr/bin/jq").exists():
        pytest.skip("jq not installed")
    res = await restricted(command)
    assert res.exit_code == 0, res.output
    assert expected in res.output
    assert not res.sandbox_refused


def test_at_least_20_commands() -> None:
    assert len(CASES) >= 20


async def test_read_only_commands_leave_the_tree_untouched(restricted: Runner, project: Path) -> None:
    before = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=project, capture_output=True,
                            text=True).stdout
    for command, _ in CASES[:16]:
        await restricted(command)
    after = subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=project, capture_output=True,
                           text=True).stdout
    assert after == before
    assert not (project / "build.log").exists()
