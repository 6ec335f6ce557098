"""Attacks through another program's FIFO in /tmp (issue 24): Landlock has no rule by file type, so a
Restricted command could open a named pipe that a process outside the sandbox made, and take what it
carries (make's jobserver tokens, a secret handed from one script to another).

The witnesses are outside the sandbox: the writer that waits in ``open()`` for a reader (it stays blocked
when no sandboxed reader came), and the tokens left in a jobserver FIFO that an outside process keeps open.
Both launchers (compiled helper, Python launcher), through the real bash tool.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox import conftest as sandbox_fixtures
from tests.sandbox.conftest import Runner, needs_sandbox

pytestmark = [needs_sandbox, pytest.mark.usefixtures("launcher"), pytest.mark.slow]

# the sandbox tests' fixtures: both launchers, a workspace, and a runner of Restricted commands
launcher = sandbox_fixtures.launcher
workspace = sandbox_fixtures.workspace
restricted = sandbox_fixtures.restricted

SECRET = "fifo-secret-" + secrets.token_hex(6)


@pytest.fixture
def fifo() -> Iterator[Path]:
    """A FIFO in the real /tmp, made by this (outside) process, as make makes its jobserver's."""
    folder = Path(tempfile.mkdtemp(prefix="phoenix-fifo-test-", dir="/tmp"))
    path = folder / "jobserver"
    os.mkfifo(path, 0o666)
    os.chmod(folder, 0o755)
    yield path
    path.unlink(missing_ok=True)
    folder.rmdir()


class _Writer(threading.Thread):
    """An outside process's writer: blocked in open() until some reader opens the FIFO, then writes."""

    def __init__(self, path: Path, data: bytes) -> None:
        super().__init__(daemon=True)
        self.path, self.data = path, data
        self.unblocked = threading.Event()

    def run(self) -> None:
        fd = os.open(self.path, os.O_WRONLY)  # blocks until a reader comes
        self.unblocked.set()
        with contextlib.suppress(OSError):
            os.write(fd, self.data)
        os.close(fd)

    def release(self) -> None:
        """Open the read end ourselves so that the thread ends (the test's own clean-up)."""
        if not self.unblocked.is_set():
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            self.unblocked.wait(5)
            os.close(fd)
        self.join(5)


@pytest.mark.req("REQ-BASH-027")
async def test_a_restricted_command_cannot_read_a_fifo_whose_writer_waits_outside(
    restricted: Runner, fifo: Path
) -> None:
    writer = _Writer(fifo, SECRET.encode())
    writer.start()
    try:
        result = await restricted(f"cat {shlex.quote(str(fifo))}; echo done", timeout=120)
        assert "done" in result.output, result.output
        assert SECRET not in result.output, "the sandboxed command read the outside writer's secret"
        assert not writer.unblocked.is_set(), "the outside writer was unblocked by the sandboxed reader"
    finally:
        writer.release()


@pytest.mark.req("REQ-BASH-027")
async def test_a_restricted_command_cannot_take_jobserver_tokens(restricted: Runner, fifo: Path) -> None:
    keeper = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # make keeps its jobserver open, both ends
    try:
        os.write(keeper, b"++++")
        result = await restricted(f"head -c 2 {shlex.quote(str(fifo))} | od -c; echo done", timeout=120)
        assert "done" in result.output, result.output
        left = os.read(keeper, 16)
        assert left == b"++++", f"the sandboxed command took {4 - len(left)} jobserver tokens"
    finally:
        os.close(keeper)


@pytest.mark.req("REQ-BASH-027")
async def test_tmp_is_private_but_the_scratch_directory_still_works(restricted: Runner, fifo: Path) -> None:
    result = await restricted(
        f"ls {shlex.quote(str(fifo.parent))} 2>&1; echo scratch > \"$TMPDIR/a\" && cat \"$TMPDIR/a\"; "
        "touch /tmp/outside-scratch 2>&1; echo done", timeout=120)
    assert "jobserver" not in result.output, "another program's files in /tmp are visible"
    assert "scratch\n" in result.output, "the command's own temporary directory works"
    assert not Path("/tmp/outside-scratch").exists()
    assert "done" in result.output


@pytest.mark.req("REQ-BASH-027")
async def test_the_real_tmp_is_not_reached_through_another_process_root(restricted: Runner, fifo: Path) -> None:
    """A guard, not an attack that got through: /proc/<outside pid>/root leads to the real /tmp around the private
    one, and Landlock's ptrace rule already keeps it shut (this passes without the private /tmp too)."""
    writer = _Writer(fifo, SECRET.encode())
    writer.start()
    try:
        via = f"/proc/{os.getpid()}/root{fifo}"  # this (outside) process's view of the filesystem
        result = await restricted(f"cat {shlex.quote(via)} 2>&1; echo done", timeout=120)
        assert "done" in result.output, result.output
        assert SECRET not in result.output and not writer.unblocked.is_set()
    finally:
        writer.release()


@pytest.mark.req("REQ-BASH-027")
def test_doctor_says_the_private_tmp_is_active() -> None:
    from phoenix_lsp.sandbox import private_tmp
    from phoenix_lsp.sandbox.cli import doctor_lines

    assert private_tmp.private_tmp() is None, "this machine can make mount namespaces (the tests above rely on it)"
    lines = doctor_lines(self_test=False)
    assert any(line.startswith("active: private /tmp") and "FIFOs" in line for line in lines)
    assert not any("no private /tmp" in line for line in lines)


@pytest.mark.req("REQ-BASH-027")
def test_a_server_installed_under_tmp_keeps_its_interpreter_in_the_private_tmp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent route's script engine runs the server's own interpreter inside the sandbox: a checkout or virtual
    environment in /tmp must stay in sight (its top folder only), or every plan fails with ENOENT."""
    from phoenix_lsp.sandbox import private_tmp

    venv = Path("/tmp") / f"phoenix-venv-{os.getpid()}"
    monkeypatch.setattr("sys.executable", str(venv / "bin" / "python"))
    monkeypatch.setattr("sys.prefix", str(venv))
    keep = private_tmp.private_tmp_keep(tmp_path / "scratch", Path("/"))
    assert str(venv) in keep, keep
    assert "/tmp" not in keep, keep
