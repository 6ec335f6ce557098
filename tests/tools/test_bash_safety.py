"""REQ-BASH-007: safety checks with a real shell parser, looking through wrappers and shell structure."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.sandbox import SandboxSupport
from phoenix_lsp.tools.bash import BashContext, run_bash
from phoenix_lsp.tools.bash_safety import check_command

pytestmark = pytest.mark.req("REQ-BASH-007")

REFUSED = [
    # blind git add
    ("git add -A", "git_add_blind"),
    ("git add .", "git_add_blind"),
    ("git add --all", "git_add_blind"),
    ("git add '*'", "git_add_blind"),
    ("git add ./", "git_add_blind"),
    ("git add -vA", "git_add_blind"),
    ("git add -- .", "git_add_blind"),
    ("git -C repo -c core.x=1 add -A", "git_add_blind"),
    # force push
    ("git push --force", "git_push_force"),
    ("git push -f origin main", "git_push_force"),
    ("git push -fu origin feature", "git_push_force"),
    ("git push origin +main", "git_push_force"),
    # rm -rf on the forbidden targets, any spelling
    ("rm -rf /", "rm_rf_dangerous"),
    ("rm -fr ~", "rm_rf_dangerous"),
    ("rm -r -f $HOME", "rm_rf_dangerous"),
    ('rm -Rf "$HOME"', "rm_rf_dangerous"),
    ("rm --recursive --force .git", "rm_rf_dangerous"),
    ("rm -rf '*'", "rm_rf_dangerous"),
    ("rm -rf *", "rm_rf_dangerous"),
    ("rm -rf .*", "rm_rf_dangerous"),
    ("rm -rf ~/", "rm_rf_dangerous"),
    ("rm -rf /*", "rm_rf_dangerous"),
    ("rm -rf repo/.git", "rm_rf_dangerous"),
    ("/bin/rm -rf /", "rm_rf_dangerous"),
    ("r\\m -rf /", "rm_rf_dangerous"),
    # looked through: sudo and other wrappers
    ("sudo rm -rf /", "rm_rf_dangerous"),
    ("sudo -u root -- git push --force", "git_push_force"),
    ("env A=1 B=2 git add .", "git_add_blind"),
    ("nice -n 5 timeout 10 git add -A", "git_add_blind"),
    ("find . -name '*.py' | xargs -n 1 git add .", "git_add_blind"),
    ("FOO=bar command git add -A", "git_add_blind"),
    # pipelines, lists, subshells, compound commands, substitutions
    ("ls | git add -A", "git_add_blind"),
    ("make && git add . && git commit -m x", "git_add_blind"),
    ("false || git push -f", "git_push_force"),
    ("echo a; (cd sub && rm -rf ~)", "rm_rf_dangerous"),
    ("{ git add --all; }", "git_add_blind"),
    ("if true; then git push --force; fi", "git_push_force"),
    ("for f in a b; do git add .; done", "git_add_blind"),
    ("while false; do rm -rf /; done", "rm_rf_dangerous"),
    ("case x in x) git add -A ;; esac", "git_add_blind"),
    ("f() { rm -rf ~; }; f", "rm_rf_dangerous"),
    ("echo $(git add .)", "git_add_blind"),
    ("echo `git push -f`", "git_push_force"),
    ("cat <(git add -A)", "git_add_blind"),
    # shell code in strings
    ("bash -c 'git add -A'", "git_add_blind"),
    ("sh -c \"rm -rf /\"", "rm_rf_dangerous"),
    ("bash -lc 'cd x && git push -f'", "git_push_force"),
    ("bash -c \"sh -c 'rm -rf .git'\"", "rm_rf_dangerous"),
    ("sudo bash -c 'git add .'", "git_add_blind"),
    ("su -c 'rm -rf /' root", "rm_rf_dangerous"),
    ("eval 'git add -A'", "git_add_blind"),
    ("env -S 'git push --force'", "git_push_force"),
    ("bash <<EOF\nrm -rf /\nEOF", "rm_rf_dangerous"),
    ("bash <<< 'git add .'", "git_add_blind"),
    ("echo 'git add -A' | sh", "git_add_blind"),
    # unparseable: refused, never run unchecked
    ("echo 'unterminated", "unparseable"),
    ("if true; then echo x", "unparseable"),
]

ALLOWED = [
    "git add src/app.py tests/test_app.py",
    "git add -p",
    "git add -u src",
    "git push --force-with-lease",
    "git push --force-with-lease=main origin main",
    "git push origin main",
    "git status && git diff",
    "rm -rf build dist",
    "rm -rf ./node_modules",
    "rm -f /tmp/x",
    "rm -r old_dir",
    "rm .git/index.lock",
    "echo 'git add -A'",
    "grep -r 'rm -rf /' docs",
    "cat <<EOF\nrm -rf /\nEOF",
    "echo git push -f | cat",
    "for f in *.tmp; do rm -f \"$f\"; done",
    "find . -name '*.pyc' -delete",
    "[[ -d .git ]] && git log --oneline | head",
    "python3 -c 'print(1)'",
]


@pytest.mark.parametrize(("command", "rule"), REFUSED, ids=[c for c, _ in REFUSED])
def test_refused(command: str, rule: str) -> None:
    verdict = check_command(command)
    assert verdict.rule == rule
    assert verdict.message and "Refused" in verdict.message


@pytest.mark.parametrize("command", ALLOWED)
def test_allowed(command: str) -> None:
    assert check_command(command).allowed, check_command(command).message


def test_messages_say_why_and_what_to_do() -> None:
    add = check_command("git add -A").message or ""
    assert "Name the files" in add and "git status" in add
    push = check_command("git push -f").message or ""
    assert "--force-with-lease" in push
    rm = check_command("rm -rf ~").message or ""
    assert "specific paths" in rm
    broken = check_command("echo 'x").message or ""
    assert "could not be parsed" in broken and "line 1" in broken


@pytest.mark.parametrize("restricted", [True, False], ids=["restricted", "unrestricted"])
async def test_refusal_happens_before_running_in_every_mode(tmp_path: Path, restricted: bool) -> None:
    marker = tmp_path / "ran"
    ctx = BashContext(working_directory=tmp_path, restricted=restricted)
    res = await run_bash({"command": f"touch {marker}; git add -A"}, ctx)
    assert res.outcome == "refused" and res.error_id == "bash.safety_check" and res.is_error
    assert not marker.exists()  # nothing of the command ran


async def test_refusal_also_when_the_sandbox_is_unavailable(tmp_path: Path) -> None:
    degraded = SandboxSupport(False, None, False, ("everything",), "no Landlock (test double)")
    ctx = BashContext(working_directory=tmp_path, restricted=False, sandbox=degraded)
    res = await run_bash({"command": "sudo rm -rf /"}, ctx)
    assert res.outcome == "refused" and res.error_id == "bash.safety_check"
