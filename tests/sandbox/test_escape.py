"""The escape suite (REQ-BASH-008, REQ-BED-014): attacks that must all fail under Restricted.

Each attack is judged by a witness OUTSIDE the sandbox (the file's content, a listener's queue, a
sniffer on the loopback interface, another process's state seen through /proc, the launcher's own
report of the kernel signal), never only by the command's exit code. Every attack runs twice: with the
compiled helper and with the pure-Python launcher.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pty
import secrets
import shutil
import socket
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from phoenix_lsp.sandbox import cgroups, spawn
from phoenix_lsp.sandbox.limits import Limits

from .conftest import IS_ROOT, PY, Runner, needs_root, needs_sandbox, pid_alive, py, run_while_watching

# slow: the escape suite: every attack twice, with each launcher
pytestmark = [
    pytest.mark.slow, needs_sandbox, pytest.mark.req("REQ-BASH-008", "REQ-BED-014"),
    pytest.mark.usefixtures("launcher"),
]

ORIGINAL = "original content\n"


def _unchanged(ws: Path) -> None:
    assert (ws / "secret.txt").read_text() == ORIGINAL


# ------------------------------------------------------------------------------------- filesystem


async def test_create_file(restricted: Runner, workspace: Path) -> None:
    res = await restricted("echo pwned > new.txt")
    assert not (workspace / "new.txt").exists()
    assert "Permission denied" in res.output and res.sandbox_refused


async def test_overwrite_file(restricted: Runner, workspace: Path) -> None:
    await restricted("echo pwned > secret.txt")
    _unchanged(workspace)


async def test_append_to_file(restricted: Runner, workspace: Path) -> None:
    await restricted("echo pwned >> secret.txt")
    _unchanged(workspace)


async def test_truncate_command(restricted: Runner, workspace: Path) -> None:
    await restricted("truncate -s 0 secret.txt")
    _unchanged(workspace)


async def test_truncate_syscall(restricted: Runner, workspace: Path) -> None:
    res = await restricted(py("import os; os.truncate('secret.txt', 0)"))
    _unchanged(workspace)
    assert "PermissionError" in res.output


async def test_delete_file(restricted: Runner, workspace: Path) -> None:
    await restricted("rm -f secret.txt; unlink secret.txt")
    _unchanged(workspace)


async def test_make_directory(restricted: Runner, workspace: Path) -> None:
    await restricted("mkdir newdir; mkfifo fifo; mknod node c 1 3")
    assert sorted(p.name for p in workspace.iterdir()) == [".git", "notes.md", "secret.txt"]


async def test_rename_within_workspace(restricted: Runner, workspace: Path) -> None:
    await restricted("mv secret.txt moved.txt")
    _unchanged(workspace)
    assert not (workspace / "moved.txt").exists()


async def test_rename_into_scratch(restricted: Runner, workspace: Path) -> None:
    res = await restricted('mv secret.txt "$TMPDIR"/ && echo moved')
    _unchanged(workspace)
    assert "moved" not in res.output.split("\n")


async def test_hard_link_into_scratch_then_write(restricted: Runner, workspace: Path) -> None:
    await restricted('d=$(mktemp -d); ln secret.txt "$d/link"; echo pwned > "$d/link"')
    _unchanged(workspace)


async def test_symlink_in_scratch_then_write(restricted: Runner, workspace: Path) -> None:
    res = await restricted(f'd=$(mktemp -d); ln -s {workspace}/secret.txt "$d/s" && echo pwned > "$d/s"')
    _unchanged(workspace)
    assert "Permission denied" in res.output


async def test_chmod(restricted: Runner, workspace: Path) -> None:
    before = (workspace / "secret.txt").stat().st_mode
    await restricted("chmod 777 secret.txt; chmod -R o+w .")
    assert (workspace / "secret.txt").stat().st_mode == before


async def test_change_times(restricted: Runner, workspace: Path) -> None:
    before = (workspace / "secret.txt").stat().st_mtime_ns
    await restricted("touch -d 2001-01-01 secret.txt")
    assert (workspace / "secret.txt").stat().st_mtime_ns == before


async def test_set_xattr(restricted: Runner, workspace: Path) -> None:
    target = workspace / "secret.txt"
    before = os.listxattr(target)
    await restricted(py("import os; os.setxattr('secret.txt', 'user.pwned', b'1')"))
    assert os.listxattr(target) == before


async def test_git_commit(restricted: Runner, workspace: Path) -> None:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True).stdout
    await restricted("git -c user.name=x -c user.email=x@x commit --allow-empty -m pwned")
    after = subprocess.run(["git", "rev-parse", "HEAD"], cwd=workspace, capture_output=True, text=True).stdout
    assert after == head


async def test_write_via_proc_fd_of_outside_process(restricted: Runner, tmp_path: Path) -> None:
    target = tmp_path / "held-open.txt"
    target.write_text(ORIGINAL)
    with open(target, "r+") as held:  # this (outside) process holds a writable descriptor
        await restricted(f"echo pwned > /proc/{os.getpid()}/fd/{held.fileno()}")
    assert target.read_text() == ORIGINAL


async def test_write_through_inherited_descriptor(restricted: Runner, tmp_path: Path) -> None:
    target = tmp_path / "inherited.txt"
    target.write_text(ORIGINAL)
    fd = os.open(target, os.O_WRONLY | os.O_APPEND)
    os.set_inheritable(fd, True)  # as if the server leaked it
    try:
        await restricted(f"echo pwned >&{fd}")
    finally:
        os.close(fd)
    assert target.read_text() == ORIGINAL


async def test_dev_shm(restricted: Runner) -> None:
    name = Path(f"/dev/shm/phoenix-escape-{secrets.token_hex(4)}")
    await restricted(f"echo pwned > {name}")
    assert not name.exists()


@needs_root
async def test_write_proc_sys(restricted: Runner) -> None:
    knob = Path("/proc/sys/kernel/domainname")
    before = knob.read_text()
    try:
        await restricted(f"echo pwned-{secrets.token_hex(2)} > {knob}")
        assert knob.read_text() == before
    finally:
        if knob.read_text() != before:
            knob.write_text(before)


@needs_root
async def test_sethostname(restricted: Runner) -> None:
    before = socket.gethostname()
    try:
        set_name = py("import socket; socket.sethostname('pwned')")
        await restricted(f"hostname pwned-{secrets.token_hex(2)}; {set_name}")
        assert socket.gethostname() == before
    finally:
        if socket.gethostname() != before:
            socket.sethostname(before)


@needs_root
async def test_mount_over_workspace(restricted: Runner, workspace: Path) -> None:
    try:
        res = await restricted(f"mount -t tmpfs none {workspace}; unshare -m true")
        assert str(workspace) not in Path("/proc/self/mountinfo").read_text()
        _unchanged(workspace)
        assert res.is_error
    finally:
        if str(workspace) in Path("/proc/self/mountinfo").read_text():
            subprocess.run(["umount", str(workspace)], check=False)


def _sysv_shm_keys() -> set[str]:
    lines = Path("/proc/sysvipc/shm").read_text().splitlines()[1:]
    return {line.split()[0] + ":" + line.split()[1] for line in lines}


async def test_sysv_shared_memory(restricted: Runner) -> None:
    before = _sysv_shm_keys()
    await restricted("ipcmk -M 4096")
    assert _sysv_shm_keys() == before


# ----------------------------------------------------------------------------------------- network


@contextlib.contextmanager
def _tcp_listener(family: int = socket.AF_INET, host: str = "127.0.0.1") -> Iterator[socket.socket]:
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        s.listen(8)
        s.setblocking(False)
        yield s


def _no_connection(listener: socket.socket) -> None:
    with pytest.raises(BlockingIOError):
        conn, _ = listener.accept()
        conn.close()


def _no_datagram(sock: socket.socket) -> None:
    sock.setblocking(False)
    with pytest.raises(BlockingIOError):
        sock.recv(4096)


async def test_tcp_dev_tcp(restricted: Runner) -> None:
    with _tcp_listener() as listener:
        port = listener.getsockname()[1]
        res = await restricted(f"echo pwned > /dev/tcp/127.0.0.1/{port}")
        _no_connection(listener)
    assert "Operation not permitted" in res.output


async def test_tcp_connect_python(restricted: Runner) -> None:
    with _tcp_listener() as listener:
        port = listener.getsockname()[1]
        await restricted(py(f"import socket; socket.create_connection(('127.0.0.1', {port})).send(b'x')"))
        _no_connection(listener)


async def test_tcp_curl(restricted: Runner) -> None:
    if shutil.which("curl") is None:
        pytest.skip("curl not installed")
    with _tcp_listener() as listener:
        port = listener.getsockname()[1]
        await restricted(f"curl -sS -m 2 http://127.0.0.1:{port}/")
        _no_connection(listener)


async def test_tcp_ipv6(restricted: Runner) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6")
    with _tcp_listener(socket.AF_INET6, "::1") as listener:
        port = listener.getsockname()[1]
        await restricted(f"echo pwned > /dev/tcp/::1/{port}; "
                         + py(f"import socket; socket.create_connection(('::1', {port}))"))
        _no_connection(listener)


async def test_tcp_bind_and_listen(restricted: Runner) -> None:
    with socket.socket() as probe_sock:
        probe_sock.bind(("127.0.0.1", 0))
        port = probe_sock.getsockname()[1]
    code = (f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
            "print('listening', flush=True); time.sleep(1.5)")
    connected: list[bool] = []

    def try_connect() -> None:
        with socket.socket() as c:
            c.settimeout(0.05)
            if c.connect_ex(("127.0.0.1", port)) == 0:
                connected.append(True)

    res = await run_while_watching(restricted(py(code)), try_connect)
    assert not connected
    assert "listening" not in res.output


async def test_udp_sendto(restricted: Runner) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))
        port = sink.getsockname()[1]
        await restricted(py(f"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                            f".sendto(b'pwned', ('127.0.0.1', {port}))"))
        _no_datagram(sink)


async def test_udp_dev_udp(restricted: Runner) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sink:
        sink.bind(("127.0.0.1", 0))
        port = sink.getsockname()[1]
        await restricted(f"echo pwned > /dev/udp/127.0.0.1/{port}")
        _no_datagram(sink)


async def test_udp_ipv6(restricted: Runner) -> None:
    with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as sink:
        sink.bind(("::1", 0))
        port = sink.getsockname()[1]
        await restricted(f"echo pwned > /dev/udp/::1/{port}; "
                         + py(f"import socket; socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)"
                              f".sendto(b'pwned', ('::1', {port}))"))
        _no_datagram(sink)


async def test_unix_pathname_stream_socket(restricted: Runner, tmp_path: Path) -> None:
    path = tmp_path / "daemon.sock"  # stands for docker.sock / the D-Bus socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(path))
        listener.listen(8)
        listener.setblocking(False)
        await restricted(py(f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); "
                            "s.send(b'pwned')"))
        _no_connection(listener)


async def test_unix_pathname_datagram_socket(restricted: Runner, tmp_path: Path) -> None:
    path = tmp_path / "log.sock"  # stands for /dev/log, the journal socket
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sink:
        sink.bind(str(path))
        await restricted(py(f"import socket; socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)"
                            f".sendto(b'pwned', {str(path)!r})"))
        await restricted(py(f"import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
                            f"a.sendto(b'pwned', {str(path)!r})"))
        _no_datagram(sink)


async def test_unix_abstract_socket(restricted: Runner) -> None:
    name = f"\0phoenix-escape-{secrets.token_hex(4)}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(name)
        listener.listen(8)
        listener.setblocking(False)
        await restricted(py(f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({name!r})"))
        _no_connection(listener)


@needs_root
async def test_netlink_add_link(restricted: Runner) -> None:
    if shutil.which("ip") is None:
        pytest.skip("iproute2 not installed")
    address = f"127.{secrets.randbelow(200) + 20}.{secrets.randbelow(250)}.{secrets.randbelow(250) + 1}"

    def on_lo() -> bool:
        shown = subprocess.run(["ip", "-o", "addr", "show", "dev", "lo"], capture_output=True, text=True)
        return f" {address}/" in shown.stdout

    try:
        res = await restricted(f"ip addr add {address}/32 dev lo")
        assert not on_lo()
        assert res.is_error
    finally:
        if on_lo():
            subprocess.run(["ip", "addr", "del", f"{address}/32", "dev", "lo"], check=False)


@contextlib.contextmanager
def _loopback_sniffer() -> Iterator[socket.socket]:
    """An AF_PACKET socket on lo (root only): sees every frame any process sends over loopback."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind(("lo", 0))
    s.setblocking(False)
    try:
        yield s
    finally:
        s.close()


def _sniffed(sniffer: socket.socket, marker: bytes) -> bool:
    while True:
        try:
            frame = sniffer.recv(65535)
        except BlockingIOError:
            return False
        if marker in frame:
            return True


@needs_root
async def test_raw_ip_socket(restricted: Runner) -> None:
    marker = secrets.token_hex(8).encode()
    code = (f"import socket; s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP); "
            f"s.sendto(b'\\x08\\x00\\x00\\x00\\x00\\x00\\x00\\x00' + {marker!r}, ('127.0.0.1', 0))")
    with _loopback_sniffer() as sniffer:
        await restricted(py(code))
        assert not _sniffed(sniffer, marker)


@needs_root
async def test_packet_socket(restricted: Runner) -> None:
    marker = secrets.token_hex(8).encode()
    code = (f"import socket; s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind(('lo', 0)); "
            f"s.send(b'\\x00' * 12 + b'\\x08\\x00' + {marker!r} * 4)")
    with _loopback_sniffer() as sniffer:
        await restricted(py(code))
        assert not _sniffed(sniffer, marker)


# ---------------------------------------------------------------------------------------- processes


@contextlib.contextmanager
def _outside_process() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


async def test_kill_outside_process(restricted: Runner) -> None:
    with _outside_process() as victim:
        res = await restricted(f"kill -9 {victim.pid}; kill -TERM -{os.getpgid(0)} 2>/dev/null; kill -9 {os.getpid()}")
        assert victim.poll() is None and pid_alive(victim.pid)
    assert "Operation not permitted" in res.output


async def test_pidfd_signal_outside_process(restricted: Runner) -> None:
    with _outside_process() as victim:
        await restricted(py(f"import os, signal; fd = os.pidfd_open({victim.pid}); "
                            "signal.pidfd_send_signal(fd, signal.SIGKILL)"))
        assert victim.poll() is None


def _tracer_of(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("TracerPid:"):
            return int(line.split()[1])
    return 0


async def test_ptrace_outside_process(restricted: Runner) -> None:
    with _outside_process() as victim:
        tracers: list[int] = []

        def witness() -> None:
            if _tracer_of(victim.pid):
                tracers.append(_tracer_of(victim.pid))

        cmd = (py(f"import ctypes, time; libc = ctypes.CDLL(None); "
                  f"print(libc.ptrace(16, {victim.pid}, 0, 0)); time.sleep(0.3)")
               + (f"; timeout 1 strace -p {victim.pid}" if shutil.which("strace") else ""))
        await run_while_watching(restricted(cmd), witness)
        assert not tracers
        assert victim.poll() is None


def _buffer_in_this_process() -> tuple[ctypes.Array[ctypes.c_char], int]:
    buf = ctypes.create_string_buffer(b"UNTOUCHED", 16)
    return buf, ctypes.addressof(buf)


async def test_process_vm_writev_into_outside_process(restricted: Runner) -> None:
    buf, address = _buffer_in_this_process()
    code = (f"import ctypes; libc = ctypes.CDLL(None, use_errno=True)\n"
            f"src = ctypes.create_string_buffer(b'PWNED!!!!')\n"
            f"class V(ctypes.Structure): _fields_ = [('b', ctypes.c_void_p), ('n', ctypes.c_size_t)]\n"
            f"l = V(ctypes.addressof(src), 9); r = V({address}, 9); "
            f"print(libc.process_vm_writev({os.getpid()}, ctypes.byref(l), 1, ctypes.byref(r), 1, 0), "
            f"ctypes.get_errno())")
    await restricted(py(code))
    assert buf.value == b"UNTOUCHED"


async def test_proc_mem_write_into_outside_process(restricted: Runner) -> None:
    buf, address = _buffer_in_this_process()
    code = (f"f = open('/proc/{os.getpid()}/mem', 'r+b', buffering=0); f.seek({address}); "
            f"f.write(b'PWNED!!!!')")
    await restricted(py(code))
    assert buf.value == b"UNTOUCHED"


async def test_tiocsti_keystroke_injection(restricted: Runner) -> None:
    master, slave = pty.openpty()
    try:
        tty_path = os.ttyname(slave)
        code = (f"import fcntl, os, termios; fd = os.open({tty_path!r}, os.O_RDONLY | os.O_NOCTTY); "
                "[fcntl.ioctl(fd, termios.TIOCSTI, bytes([c])) for c in b'echo pwned\\n']")
        res = await restricted(py(code))
        os.set_blocking(slave, False)
        with pytest.raises(BlockingIOError):
            os.read(slave, 1024)  # nothing was injected into the terminal's input queue
        assert res.is_error
    finally:
        os.close(master)
        os.close(slave)


async def test_orphans_do_not_outlive_the_command(restricted: Runner) -> None:
    # a setsid'd child, a double-forked orphan (its parent subshell exits at once), a nohup'd child
    res = await restricted("setsid sleep 300 & echo $!; echo $( (setsid sleep 300 >/dev/null 2>&1 & echo $!) ); "
                           "nohup sleep 300 >/dev/null 2>&1 & echo $!")
    pids = [int(x) for x in res.output.split() if x.isdigit()]
    assert len(pids) == 3
    assert not [pid for pid in pids if pid_alive(pid)]


def _procs_named(comm: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "comm").read_text().strip() == comm:
                    found.append(int(entry.name))
    return found


def _status_field(pid: int, field: str) -> str:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return line.split(":", 1)[1].strip()
    return ""


@needs_root
async def test_setuid_binary_gains_nothing(restricted: Runner, tmp_path: Path) -> None:
    binary = tmp_path / f"suid{secrets.token_hex(3)}"
    shutil.copy("/bin/sleep", binary)
    os.chown(binary, 65534, 65534)
    os.chmod(binary, 0o4755)  # setuid: exec would switch the effective uid
    tmp_path.chmod(0o755)
    seen: set[str] = set()

    def witness() -> None:
        for pid in _procs_named(binary.name):
            seen.add(_status_field(pid, "Uid"))

    await run_while_watching(restricted(f"{binary} 0.5"), witness)
    assert seen, "the setuid copy never ran"
    assert all(uids.split()[1] == str(os.geteuid()) for uids in seen if uids)  # effective uid unchanged


@needs_root
async def test_file_capabilities_grant_nothing(restricted: Runner, tmp_path: Path) -> None:
    if shutil.which("setcap") is None:
        pytest.skip("setcap not installed")
    binary = tmp_path / f"capb{secrets.token_hex(3)}"
    shutil.copy("/bin/sleep", binary)
    subprocess.run(["setcap", "cap_net_raw,cap_sys_admin,cap_kill+ep", str(binary)], check=True)
    tmp_path.chmod(0o755)
    seen: set[str] = set()

    def witness() -> None:
        for pid in _procs_named(binary.name):
            seen.add(_status_field(pid, "CapEff"))

    res = await run_while_watching(restricted(f"{binary} 0.5"), witness)
    # Either the kernel refuses the exec (it cannot grant the file's capabilities: empty bounding set),
    # or the program runs without any capability.
    assert seen <= {"0000000000000000", ""}
    assert seen or "Operation not permitted" in res.output


# ------------------------------------------------------------------------------ resource exhaustion


@pytest.fixture(params=["cgroup", "watchdog", "unusable-cgroup"])
def process_limit(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The ways the task limit is kept: a pids cgroup (a kernel rule); the launcher's watchdog alone; and
    a cgroup the launcher fails to create at run time, where it falls back to the watchdog."""
    if request.param == "cgroup" and cgroups.pids_cgroup_parent() is None:
        pytest.skip("no pids cgroup can be created here (needs a writable cgroup with the pids controller)")
    if request.param == "watchdog":
        monkeypatch.setattr(cgroups, "pids_cgroup_parent", lambda: None)
    if request.param == "unusable-cgroup":
        monkeypatch.setattr(cgroups, "pids_cgroup_parent", lambda: tmp_path / "no-such-cgroup")
    return str(request.param)


_real_cgroup_parent = cgroups.pids_cgroup_parent  # the fixture may replace the module's function


def _phoenix_cgroups() -> set[str]:
    parent = _real_cgroup_parent()
    return {p.name for p in parent.iterdir() if p.name.startswith(cgroups.CGROUP_PREFIX)} if parent else set()


async def test_fork_bomb_is_stopped(restricted: Runner, process_limit: str, caplog: pytest.LogCaptureFixture) -> None:
    before = _phoenix_cgroups()
    # the bomb's processes are the forks of its shell, each with the shell's command line: a token in it tells
    # them from every other process on the machine (other tests, other workers come and go meanwhile)
    token = f"bomb-{secrets.token_hex(6)}".encode()

    def count() -> int:
        """The bomb's live processes (a zombie's command line is empty: killed and not yet reaped is gone)."""
        alive = 0
        for p in Path("/proc").iterdir():
            if p.name.isdigit():
                with contextlib.suppress(OSError):
                    alive += token in (p / "cmdline").read_bytes()
        return alive

    peak = [0]

    def witness() -> None:
        peak[0] = max(peak[0], count())

    started = time.monotonic()
    res = await run_while_watching(
        restricted(f": {token.decode()}; grep -qa {token.decode()} /proc/$$/cmdline && echo marked; "
                   "bomb() { bomb | bomb & }; bomb; sleep 20",
                   limits=Limits(max_processes=64), timeout=25),
        witness, interval=0.01)
    assert time.monotonic() - started < 15, "the bomb ran until the timeout"
    assert "beyond 64 processes" in res.output
    assert "marked" in res.output, "the token is in the command line of the bomb's shell (what count() looks for)"
    assert count() == 0  # every bomb process is gone once the command has ended
    assert peak[0] < (100 if process_limit == "cgroup" else 2000)
    # the command's cgroup went with it (one of a launcher still running belongs to a parallel test)
    left = {n for n in _phoenix_cgroups() - before
            if not Path(f"/proc/{n.removeprefix(cgroups.CGROUP_PREFIX).split('-')[0]}").exists()}
    assert not left
    assert ("no pids cgroup for this command" in caplog.text) == (process_limit == "unusable-cgroup")


@pytest.mark.req("REQ-BASH-008")
async def test_task_limit_is_a_kernel_rule_with_a_pids_cgroup(restricted: Runner) -> None:
    """With a pids cgroup the kernel itself refuses the fork past the limit (EAGAIN), also for root; the
    watchdog alone can only kill the tree after it grew."""
    if cgroups.pids_cgroup_parent() is None:
        pytest.skip("no pids cgroup can be created here (needs a writable cgroup with the pids controller)")
    code = ("import os, sys, time\n"
            "n = 0\n"
            "try:\n"
            "    while n < 100:\n"
            "        if os.fork() == 0:\n"
            "            time.sleep(30); os._exit(0)\n"
            "        n += 1\n"
            "except OSError as e:\n"
            "    print('refused after', n, 'errno', e.errno, flush=True)\n"
            "time.sleep(30)\n")
    started = time.monotonic()
    res = await restricted(py(code), limits=Limits(max_processes=20), timeout=25)
    assert time.monotonic() - started < 15
    assert "errno 11" in res.output  # EAGAIN from the kernel, not a kill after the fact
    refused_after = int(res.output.split("refused after ")[1].split()[0])
    assert refused_after < 20  # bash -c exec'd python: python plus its children stay within 20 tasks
    assert "beyond 20 processes" in res.output


async def test_memory_hog_is_stopped(workspace: Path) -> None:
    code = "a = []\nwhile True: a.append(bytearray(16 << 20))"
    req = spawn.SpawnRequest((PY, "-c", code), workspace, restricted=True,
                             limits=Limits(address_space=512 << 20))
    result = await spawn.run(req, timeout=20)
    out = result.capture.parts()[0]
    assert b"MemoryError" in out
    assert result.maxrss_kb is not None and result.maxrss_kb < 600 * 1024  # measured by the launcher


async def test_cpu_burner_is_stopped(restricted: Runner) -> None:
    started = time.monotonic()
    res = await restricted("while :; do :; done", limits=Limits(cpu_seconds=1), timeout=20)
    assert time.monotonic() - started < 10
    assert "SIGXCPU" in res.output and res.exit_code == 128 + 24


async def test_file_size_limit(restricted: Runner) -> None:
    res = await restricted('head -c 5000000 /dev/zero > "$TMPDIR/big"; ls -l "$TMPDIR/big"',
                           limits=Limits(file_size=1 << 20))
    assert "File size limit exceeded" in res.output or "SIGXFSZ" in res.output
    assert " 1048576 " in res.output  # the kernel stopped the file at the limit


# ---------------------------------------------------------------------------------- sanity of the suite


def test_suite_has_at_least_30_attacks() -> None:
    attacks = [name for name in globals() if name.startswith("test_") and name != "test_suite_has_at_least_30_attacks"]
    assert len(attacks) >= 30


def test_root_witnesses_are_meaningful() -> None:
    # Documents why some tests need root: without it the attack is refused by plain permissions.
    assert IS_ROOT or stat.S_IMODE(os.stat("/proc/sys/kernel/domainname").st_mode) == 0o644
