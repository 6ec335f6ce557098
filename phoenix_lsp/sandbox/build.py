"""Finding the launcher that applies the sandbox: the compiled helper, or the Python launcher.

The helper (``helper.c``) is compiled at first use with the system C compiler into a per-user cache
directory (keyed by a hash of its source, so an upgrade recompiles it). When no compiler is available,
the pure-Python ``launcher/`` does the same job with the same command line, only slower (a Python
start-up per command, ~30-40 ms); a warning says so once.

Environment:
    PHOENIX_LSP_SANDBOX_LAUNCHER  ``compiled`` or ``python`` to force one (tests, benchmarks).
    PHOENIX_LSP_CACHE_DIR         where the compiled helper is kept (default: XDG cache dir).
    CC                            the C compiler to use (default: ``cc``, then ``gcc``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

HELPER_SOURCE = Path(__file__).with_name("helper.c")
LAUNCHER_SCRIPT = Path(__file__).with_name("launcher")  # a directory run by Python (its __main__.py)

_lock = threading.Lock()
_cached: Launcher | None = None
_warned = False


@dataclass(frozen=True)
class Launcher:
    """How to start the sandbox launcher: `argv` is prepended to its options."""

    kind: str  # "compiled" | "python"
    argv: tuple[str, ...]
    note: str | None = None  # why the Python launcher is used, when it is


class BuildError(RuntimeError):
    """The helper could not be compiled."""


def cache_dir() -> Path:
    """Per-user directory for the compiled helper."""
    explicit = os.environ.get("PHOENIX_LSP_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "phoenix-lsp"


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name and shutil.which(name):
            return name
    return None


def compile_helper(target_dir: Path | None = None) -> Path:
    """Compile helper.c (statically when the C library allows, which saves ~0.2 ms per spawn) and return
    the binary's path. Reuses an existing binary built from the same source."""
    source = HELPER_SOURCE.read_bytes()
    digest = hashlib.sha256(source + platform.machine().encode()).hexdigest()[:16]
    directory = target_dir or cache_dir()
    binary = directory / f"sandbox-helper-{digest}"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    cc = _compiler()
    if cc is None:
        raise BuildError("no C compiler found (looked for $CC, cc, gcc)")
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    errors = []
    for extra in (["-static"], []):
        # Each builder (thread, server, test worker) compiles into its own temporary name and renames the
        # finished, executable file into place: the binary's name never shows a partly written file, and
        # concurrent builders race harmlessly (the last rename wins, with identical content).
        fd, tmp = tempfile.mkstemp(prefix=".helper-", dir=directory)
        os.close(fd)
        try:
            cmd = [cc, "-O2", "-std=gnu11", *extra, "-o", tmp, str(HELPER_SOURCE)]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
            if proc.returncode == 0:
                os.chmod(tmp, 0o755)
                os.replace(tmp, binary)
                return binary
            errors.append(f"{' '.join(cmd)}: {proc.stderr.strip()[-500:]}")
        finally:
            with contextlib.suppress(FileNotFoundError):  # renamed into place, or left by a failed compiler
                os.unlink(tmp)
    raise BuildError("compiling the sandbox helper failed:\n" + "\n".join(errors))


def launcher() -> Launcher:
    """The launcher to use (compiled at first call if needed; cached for the process)."""
    global _cached, _warned
    forced = os.environ.get("PHOENIX_LSP_SANDBOX_LAUNCHER", "").strip().lower()
    python = Launcher("python", (sys.executable, "-I", "-S", str(LAUNCHER_SCRIPT)))
    if forced == "python":
        return Launcher("python", python.argv, "forced by PHOENIX_LSP_SANDBOX_LAUNCHER=python")
    with _lock:
        if _cached is not None and (forced != "compiled" or _cached.kind == "compiled"):
            return _cached
        try:
            binary = compile_helper()
            _cached = Launcher("compiled", (str(binary),))
        except (BuildError, OSError, subprocess.SubprocessError) as exc:
            if forced == "compiled":
                raise
            note = (f"the compiled sandbox helper is unavailable ({exc}); using the Python launcher, which "
                    "adds ~30-40 ms to every command. Install gcc (or set CC) to get the fast helper.")
            if not _warned:
                log.warning("%s", note)
                _warned = True
            _cached = Launcher("python", python.argv, note)
        return _cached


def reset_cache() -> None:
    """Forget the cached launcher choice (tests)."""
    global _cached
    with _lock:
        _cached = None
