"""One launcher process watched from the event loop: its end seen through a pidfd, its output and status read
by non-blocking readers, never a wait on a pipe without a bound (REQ-BASH-018).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable

from phoenix_lsp.sandbox.backstop import kill_leftovers
from phoenix_lsp.sandbox.outcome import OutputCapture

#: How long the launcher gets to kill the tree after SIGTERM before it is killed itself.
TERMINATE_GRACE_S = 2.0


class WatchedLauncher:
    """One launcher process watched from the event loop without ever blocking on its pipes.

    asyncio's own subprocess support resolves ``wait()`` only once every pipe is closed (CPython 3.11),
    so a tree member that outlives a killed launcher and keeps the output pipe open hung the call for
    ever. Here the launcher's end is seen through a pidfd (a thread with ``waitid(WNOWAIT)`` where there
    is none), without reaping it: its pid, which names the command's cgroups, stays ours until the
    backstop has run. Output and status are read by non-blocking readers on the loop."""

    def __init__(self, popen: subprocess.Popen[bytes], capture: OutputCapture) -> None:
        assert popen.stdout is not None and popen.stderr is not None
        self.popen = popen
        self.pid = popen.pid
        self.status = bytearray()
        self.loop = asyncio.get_running_loop()
        self.out_fd, self.err_fd = popen.stdout.fileno(), popen.stderr.fileno()
        self.out_inode = os.fstat(self.out_fd).st_ino
        self.out_eof: asyncio.Future[None] = self.loop.create_future()
        self.err_eof: asyncio.Future[None] = self.loop.create_future()
        self.exited: asyncio.Future[None] = self.loop.create_future()
        #: the launcher has ended (exited), or has told the end and closed its pipes (told_end): the result is known
        self.ended: asyncio.Future[None] = self.loop.create_future()
        self.returncode: int | None = None
        self._pidfd = -1
        self._reaped = False
        for fd in (self.out_fd, self.err_fd):
            os.set_blocking(fd, False)
        self.loop.add_reader(self.out_fd, self._on_readable, self.out_fd, capture.feed, self.out_eof)
        # The status lines are read as they come ("clock" and "started" at the start, the end's lines in one write):
        # the launcher of a captured command tells the end and closes its pipes before it exits, and its exit then
        # waits for the overlay's teardown (helper.c): the result is the server's without waiting for that.
        self.loop.add_reader(self.err_fd, self._on_readable, self.err_fd, self.status.extend, self.err_eof)
        for eof in (self.out_eof, self.err_eof):
            eof.add_done_callback(self._on_eof)
        try:
            self._pidfd = os.pidfd_open(self.pid)
        except (OSError, AttributeError):
            threading.Thread(target=self._wait_thread, daemon=True, name=f"phoenix-wait-{self.pid}").start()
        else:
            self.loop.add_reader(self._pidfd, self._on_exit)

    def _on_readable(self, fd: int, sink: Callable[[bytes], object], eof: asyncio.Future[None]) -> None:
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            sink(data)
            return
        self.loop.remove_reader(fd)
        if not eof.done():
            eof.set_result(None)

    @property
    def told_end(self) -> bool:
        """The launcher closed its output and status pipes after a status line saying how the command ended (`exit`
        or `signal`, written with the end's other lines at once): it did its whole work (the tree is gone, its
        cgroups removed), whether or not it has exited yet. A launcher killed halfway says no such line."""
        if not (self.out_eof.done() and self.err_eof.done()):
            return False
        return any(line.startswith((b"exit ", b"signal ")) for line in bytes(self.status).splitlines())

    def _on_eof(self, _done: asyncio.Future[None]) -> None:
        if self.told_end and not self.ended.done():
            self.ended.set_result(None)

    def _on_exit(self) -> None:
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
        if not self.err_eof.done() and not self._reaped:
            # Only the launcher writes there, and it has ended: read it to its end now; should anything still hold
            # it, the rest is read as it comes (the server waits for it with a bound).
            while True:
                try:
                    data = os.read(self.err_fd, 65536)
                except BlockingIOError:
                    break
                except OSError:
                    data = b""
                if not data:
                    self.loop.remove_reader(self.err_fd)
                    self.err_eof.set_result(None)
                    break
                self.status.extend(data)
        if not self.exited.done():
            self.exited.set_result(None)
        if not self.ended.done():
            self.ended.set_result(None)

    def _wait_thread(self) -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            self.loop.call_soon_threadsafe(self._on_exit)

    def killed_by_signal(self) -> bool:
        """The launcher has exited (it is not reaped yet) and a signal ended it."""
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
        except ChildProcessError:
            return self.returncode is not None and self.returncode < 0
        return info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED)

    def signal(self, signum: int) -> None:
        if not self._reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)

    async def terminate(self) -> None:
        """Ask the launcher to kill the tree (SIGTERM) and wait for it to end; SIGKILL it only as a last
        resort (a stopped or starved launcher)."""
        if self.exited.done():
            return
        self.signal(signal.SIGTERM)
        if not await self.drain(self.exited, TERMINATE_GRACE_S):
            self.signal(signal.SIGKILL)
            await asyncio.shield(self.exited)

    @staticmethod
    async def drain(future: asyncio.Future[None], seconds: float | None) -> bool:
        """Wait up to `seconds` (None: without a bound) for `future` (the end of a pipe, of the launcher);
        True when it came."""
        if future.done():
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(future), seconds)
        return future.done()

    def reap(self) -> None:
        """Reap the launcher and let go of every descriptor, the lifeline included. A launcher that told the end
        (told_end) and is still tearing a captured command's namespace down is reaped when it exits, without
        waiting here; any other that still runs is killed first (only after an unexpected error: never leave a
        launcher and its tree behind). Idempotent."""
        if self._reaped:
            return
        later = not self.exited.done() and self.told_end
        if not self.exited.done() and not later:
            self.signal(signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            kill_leftovers(self.pid, None)
        self._reaped = True
        for fd in (self.out_fd, self.err_fd):
            self.loop.remove_reader(fd)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if later:
            self.exited.add_done_callback(lambda _done: self._wait())
        else:
            self._wait()

    def _wait(self) -> None:
        if self._pidfd >= 0:
            self.loop.remove_reader(self._pidfd)
            with contextlib.suppress(OSError):
                os.close(self._pidfd)
            self._pidfd = -1
        self.popen.wait()
        self.returncode = self.popen.returncode
