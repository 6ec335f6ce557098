"""Support detection and degradation (REQ-BASH-009), the policy's shape, and the command line
(REQ-BASH-014): `sandbox run` and the doctor lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import SandboxSupport, cgroups, landlock, launch_options, limits, probe, protections, seccomp
from phoenix_lsp.sandbox.cli import doctor_lines

from .conftest import SUPPORT, needs_sandbox

ROOT = Path(__file__).parents[2]


@pytest.mark.req("REQ-BASH-009")
def test_probe_reports_the_running_kernel() -> None:
    support = probe()
    assert support is probe()  # cached
    assert support.available == (support.landlock_abi is not None)
    assert support.landlock_abi == landlock.landlock_abi()
    if support.available:
        assert support.reason is None and support.active
    else:
        assert support.reason and "5.13" in support.reason


@pytest.mark.req("REQ-BASH-009")
@pytest.mark.parametrize(("abi", "seccomp", "expected"), [
    (1, True, ["Landlock ABI 1 < 2", "ABI 1 < 3", "ABI 1 < 5", "ABI 1 < 6"]),
    (3, False, ["no TCP rules: Landlock ABI 3 < 4", "no seccomp filter", "abstract Unix socket"]),
    (4, True, ["ABI 4 < 5", "no signal scoping"]),
    (5, True, ["no signal scoping: signals to processes outside the sandbox are possible (Landlock ABI 5 < 6"]),
    (6, True, []),
    (7, False, ["no seccomp filter: UDP"]),
])
def test_missing_protections_name_exactly_what_an_old_kernel_lacks(abi: int, seccomp: bool,
                                                                   expected: list[str]) -> None:
    missing = " | ".join(protections.missing_protections(abi, seccomp))
    for text in expected:
        assert text in missing
    if not expected:
        assert missing == ""


@pytest.mark.req("REQ-BASH-009")
def test_no_landlock_warning_explains_the_kernel_requirement() -> None:
    support = SandboxSupport(False, None, True, protections.missing_protections(None, True),
                             "this kernel does not offer Landlock (test double)")
    assert "unavailable" in (support.warning() or "")
    assert "5.13" in protections.missing_protections(None, True)[0]


@pytest.mark.req("REQ-BASH-008")
def test_policy_handles_every_right_the_abi_knows() -> None:
    assert landlock.fs_rights(1) == (1 << 13) - 1
    assert landlock.fs_rights(3) & landlock.FS_TRUNCATE and not landlock.fs_rights(2) & landlock.FS_TRUNCATE
    assert landlock.fs_rights(5) & landlock.FS_IOCTL_DEV
    args = launch_options.restricted_args(6, Path("/scratch"), limits.Limits(), with_seccomp=True)
    assert args[args.index("-l") + 1] == f"{landlock.fs_rights(6):x}:3:3"
    rules = [args[i + 1] for i, a in enumerate(args) if a == "-p"]
    assert f"{landlock.FS_READ_FILE | landlock.FS_WRITE_FILE | landlock.FS_TRUNCATE:x}:/dev/null" in rules
    assert rules[-1] == f"{landlock.fs_rights(6):x}:/scratch"
    assert "d:/" not in rules  # no blanket read grant on / (issue 12): siblings of denied paths instead
    grants = [args[i + 1].split(":", 1)[1] for i, a in enumerate(args) if a == "-P"]
    assert "/usr" in grants and "/dev" not in grants and "/" not in grants
    assert "-n" in args and "-k" in args and "-f" in args


@pytest.mark.req("REQ-BASH-008")
@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_seccomp_program_assembles_for_each_architecture(machine: str) -> None:
    program = seccomp.seccomp_program(machine)
    assert len(program) % 8 == 0 and 50 < len(program) // 8 < 256


# ------------------------------------------------------------------------------------------- the CLI


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "phoenix_lsp.tools.sandbox_run", *args], cwd=cwd, text=True,
                          capture_output=True, timeout=60, env={**__import__("os").environ,
                                                                 "PYTHONPATH": str(ROOT)})


@pytest.mark.req("REQ-BASH-014")
@needs_sandbox
def test_sandbox_run_restricted_exits_with_the_command_code(tmp_path: Path) -> None:
    proc = _cli("sandbox", "run", "--cwd", str(tmp_path), "--", "echo hi > f; exit 3", cwd=tmp_path)
    assert proc.returncode == 3
    assert "f: Permission denied" in proc.stdout and "[exit code 3]" in proc.stdout
    assert not (tmp_path / "f").exists()


@pytest.mark.req("REQ-BASH-014")
def test_sandbox_run_unrestricted_words_and_timeout(tmp_path: Path) -> None:
    proc = _cli("sandbox", "run", "--mode", "unrestricted", "--cwd", str(tmp_path), "--", "touch", "a b",
                cwd=tmp_path)
    assert proc.returncode == 0 and (tmp_path / "a b").exists()  # several words: shell-quoted
    proc = _cli("sandbox", "run", "--mode", "unrestricted", "--timeout", "0.3", "--", "sleep 5; echo no",
                cwd=tmp_path)
    assert proc.returncode == 124 and "timeout" in proc.stdout


@pytest.mark.req("REQ-BASH-014", "REQ-BASH-007")
def test_sandbox_run_applies_the_safety_checks(tmp_path: Path) -> None:
    proc = _cli("sandbox", "run", "--mode", "unrestricted", "--", "git add -A", cwd=tmp_path)
    assert proc.returncode == 126 and "Refused by the safety check" in proc.stderr


@pytest.mark.req("REQ-BASH-014", "REQ-BASH-009")
def test_doctor_lines_report_active_and_missing_protections() -> None:
    lines = doctor_lines()
    text = "\n".join(lines)
    if SUPPORT.available:
        assert f"Landlock: ABI {SUPPORT.landlock_abi}" in text
        assert "Restricted mode: available" in text and "launcher:" in text
        assert any(line.startswith("active: seccomp") for line in lines) == SUPPORT.seccomp
        assert "self-test: ok" in text
        kernel_rule = cgroups.pids_cgroup_parent() is not None
        assert ("active: process limit enforced by the kernel" in text) == kernel_rule
        assert ("active: process limit enforced by a watchdog" in text) == (not kernel_rule)
    else:
        assert "UNAVAILABLE" in text


def test_the_start_up_probe_leaves_the_cgroup_probe_for_later(monkeypatch: pytest.MonkeyPatch) -> None:
    """initialize calls probe(); the cgroup probe (a subprocess, ~20 ms) must not run there."""
    import phoenix_lsp.sandbox as sandbox

    def forbidden() -> None:
        raise AssertionError("the cgroup probe ran during the start-up probe")

    monkeypatch.setattr(cgroups, "pids_cgroup_parent", forbidden)
    sandbox.probe.cache_clear()
    try:
        assert sandbox.probe().landlock_abi == SUPPORT.landlock_abi
    finally:
        sandbox.probe.cache_clear()


@pytest.mark.req("REQ-BASH-009")
def test_without_a_c_compiler_the_python_launcher_takes_over(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from phoenix_lsp.sandbox import build

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no cc, no gcc
    monkeypatch.setenv("CC", "no-such-compiler")
    monkeypatch.setenv("PHOENIX_LSP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("PHOENIX_LSP_SANDBOX_LAUNCHER", raising=False)
    build.reset_cache()
    try:
        chosen = build.launcher()
        assert chosen.kind == "python"
        assert chosen.note and "no C compiler" in chosen.note and "gcc" in chosen.note
        with pytest.raises(build.BuildError):
            build.compile_helper(tmp_path / "cache")
    finally:
        build.reset_cache()


@pytest.mark.req("REQ-BASH-008")
def test_the_helper_is_compiled_once_per_source(tmp_path: Path) -> None:
    from phoenix_lsp.sandbox import build

    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler")
    first = build.compile_helper(tmp_path)
    stamp = first.stat().st_mtime_ns
    assert build.compile_helper(tmp_path) == first and first.stat().st_mtime_ns == stamp


MOUNTINFO = """\
22 1 253:1 / / rw,relatime - ext4 /dev/vda rw,discard
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw{v2}
"""


@pytest.mark.req("REQ-BASH-014")
def test_doctor_says_when_a_cgroup_join_waits_for_a_grace_period() -> None:
    note = cgroups.cgroup_lock_note(MOUNTINFO.format(v2=""))
    assert note is not None and "favordynmods /sys/fs/cgroup/pids" in note and "grace period" in note
    assert cgroups.cgroup_lock_note(MOUNTINFO.format(v2=",favordynmods")) is None  # the lock stays ready
    assert cgroups.cgroup_lock_note("22 1 253:1 / / rw,relatime - ext4 /dev/vda rw\n") is None  # no cgroups


@pytest.mark.slow  # four C compilations
@pytest.mark.req("REQ-BASH-008")
def test_concurrent_builds_of_the_helper_all_get_a_complete_binary(tmp_path: Path) -> None:
    """Test workers (pytest-xdist) and servers share one cache directory and may all build at once."""
    if shutil.which("gcc") is None and shutil.which("cc") is None:
        pytest.skip("no C compiler")
    cache = tmp_path / "cache"
    build_one = ("import sys; from pathlib import Path; from phoenix_lsp.sandbox import build; "
                 "print(build.compile_helper(Path(sys.argv[1])))")
    builders = [subprocess.Popen([sys.executable, "-c", build_one, str(cache)], stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    paths = {b.communicate(timeout=240)[0].strip() for b in builders}
    assert [b.returncode for b in builders] == [0, 0, 0, 0]
    (binary,) = paths
    assert os.access(binary, os.X_OK)
    assert [p.name for p in cache.iterdir()] == [Path(binary).name], "no temporary file is left behind"
    probe = subprocess.run([binary], capture_output=True, timeout=30, check=False)
    assert probe.returncode != 0 and probe.stderr, "the binary runs (and, without arguments, says how to use it)"
