"""What a restricted command may not even read: credentials, the server's own data, and devices.

The seeds' "read-only" is about writes. Everything a restricted command prints goes to the model provider,
so Restricted also keeps the user's secrets out of reach, enforced by the kernel (Landlock) rather than by
asking the model (issue 12).

Landlock rights are additive: a rule on ``/`` would grant everything beneath it, with no way to take a
subtree back. So instead of one rule on ``/`` the policy grants read (and execute) on every *sibling* along
the path to each denied entry: for ``~/.ssh`` that is every entry of ``/`` except ``/home``, every entry of
``/home`` except the user's home, and every entry of the home except ``.ssh``. Directories on the way to a
denied entry get no rule of their own, so listing ``/`` or the home directory itself is refused, while
everything inside them (except the denied entries) stays readable. ``/dev`` is denied the same way, with
an allow-list of devices granted back (:data:`ALLOWED_DEVICES`).

Limits, by nature of path rules: a hard link to a denied file placed elsewhere, or a bind mount of a denied
directory at another place, is reached through a granted path. Symlinks are no way round: Landlock checks
the resolved target.

Settings: ``PHOENIX_LSP_DENY_READ`` (paths separated by ``os.pathsep``, ``~`` expanded) and the
``denyRead`` initialization option add entries; the defaults cannot be removed.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "ALLOWED_DEVICES",
    "ARTIFACT_DIR_ENV",
    "DEFAULT_DENY_READ",
    "DENY_READ_ENV",
    "DenyCheck",
    "ReadRules",
    "current_deny_read",
    "deny_read_paths",
    "read_rules",
    "variable_entries",
]

DENY_READ_ENV = "PHOENIX_LSP_DENY_READ"
#: the agent route's artifact directory (server/config.py ``artifact_dir``), denied wherever it is
ARTIFACT_DIR_ENV = "PHOENIX_ARTIFACT_DIR"

#: Credentials and private data that a restricted command may not read, relative to the home directory.
DEFAULT_DENY_READ: tuple[str, ...] = (
    # keys and cloud / cluster credentials
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker/config.json",
    "~/.netrc", "~/.git-credentials", "~/.config/gh", "~/.npmrc", "~/.pypirc",
    "~/.local/share/keyrings", "~/.password-store",
    # browser profiles (cookies, saved passwords, session tokens)
    "~/.mozilla", "~/.config/google-chrome", "~/.config/chromium", "~/.config/BraveSoftware",
    "~/.config/microsoft-edge", "~/.config/vivaldi", "~/.config/opera", "~/snap/firefox",
    "~/snap/chromium", "~/.var/app/org.mozilla.firefox", "~/.var/app/com.google.Chrome",
    "~/.var/app/org.chromium.Chromium",
)

#: The only devices a restricted command may open, and why each one:
#: /dev/null (discarding output, empty input: read and write), /dev/full (ENOSPC on write, zeros on read:
#: read and write), /dev/zero (zeros: read), /dev/random and /dev/urandom (random numbers: read). /dev/stdin,
#: /dev/stdout, /dev/stderr and /dev/fd/N need no rule: they are symlinks into /proc/self/fd, whose magic
#: links lead to the command's own pipes and files (bash's `<(...)` uses them). Everything else under /dev
#: is refused: terminals (/dev/pts/N: another terminal's keystrokes; /dev/ptmx: pty exhaustion), /dev/shm
#: (other programs' shared memory), /dev/tty, block devices.
ALLOWED_DEVICES: Mapping[str, str] = {
    "/dev/null": "rw", "/dev/zero": "r", "/dev/full": "rw", "/dev/random": "r", "/dev/urandom": "r",
}


def _expand(entry: str, home: Path) -> Path | None:
    entry = entry.strip()
    if not entry:
        return None
    if entry == "~" or entry.startswith("~/"):
        entry = str(home) + entry[1:]
    if not os.path.isabs(entry):
        return None  # relative entries name nothing stable; the settings reader reports them
    return Path(os.path.normpath(entry))


def deny_read_paths(extra: Iterable[str] = (), data_dirs: Iterable[Path | str] = (),
                    environ: Mapping[str, str] | None = None, home: Path | None = None) -> tuple[Path, ...]:
    """Every path a restricted command may not read: the defaults, phoenix-lsp's own data directory (the
    platform default, ``PHOENIX_LSP_DATA_DIR``, and each of `data_dirs`), the agent route's artifact
    directory (``PHOENIX_ARTIFACT_DIR``, which may lie outside the data directory) and `extra` (the user's entries:
    the server passes its settings' ``PHOENIX_LSP_DENY_READ`` and ``denyRead``; outside the server see
    :func:`variable_entries`). Absolute, normalised, deduplicated, in a stable order; relative entries are
    ignored (see :func:`invalid_entries`)."""
    from phoenix_lsp.store.paths import default_data_dir  # lazy: the store package is heavy to import

    env = os.environ if environ is None else environ
    user_home = home or Path(env.get("HOME") or Path.home())
    entries: list[str] = list(DEFAULT_DENY_READ)
    def under_home(path: Path) -> Path:  # the platform's directory, for the home this list is made for
        real = Path.home()
        return user_home / path.relative_to(real) if path.is_relative_to(real) else path

    entries.append(str(under_home(default_data_dir(env))))
    # The platform default too when PHOENIX_LSP_DATA_DIR points elsewhere: an earlier server kept it there.
    entries.append(str(under_home(default_data_dir({k: v for k, v in env.items() if k != "PHOENIX_LSP_DATA_DIR"}))))
    if env.get(ARTIFACT_DIR_ENV, "").strip():  # the agent route's artifacts: the server's data, wherever they are
        entries.append(env[ARTIFACT_DIR_ENV].strip())
    entries += [str(d) for d in data_dirs]
    entries += list(extra)
    out: dict[Path, None] = {}
    for entry in entries:
        path = _expand(entry, user_home)
        if path is not None:
            out[path] = None
    return tuple(out)


def variable_entries(environ: Mapping[str, str] | None = None) -> list[str]:
    """The entries of ``PHOENIX_LSP_DENY_READ``, for the sandbox used outside the server (``sandbox run``,
    ``doctor``, a context without a list); the server reads the variable through its config model."""
    env = os.environ if environ is None else environ
    return [entry for entry in env.get(DENY_READ_ENV, "").split(os.pathsep) if entry.strip()]


_CURRENT_KEYS = ("HOME", "XDG_DATA_HOME", "PHOENIX_LSP_DATA_DIR", ARTIFACT_DIR_ENV, DENY_READ_ENV)


def current_deny_read() -> tuple[Path, ...]:
    """:func:`deny_read_paths` for the server's environment as it is now (cached per value of the variables
    it depends on): the list when no ``denyRead`` setting was given."""
    return _deny_read_for(tuple(os.environ.get(k, "") for k in _CURRENT_KEYS))


def deny_read_of(configured: Iterable[Path] | None) -> tuple[Path, ...]:
    """The deny-read list in force: the configured one (``denyRead``), or the sandbox's defaults when none was
    given. The one place that choice is made: the kernel rule, the read tools, attachments, the editor's sight
    and the ACP adapter all ask here."""
    return tuple(configured) if configured is not None else current_deny_read()


def deny_check(configured: Iterable[Path] | None) -> DenyCheck:
    """:class:`DenyCheck` of :func:`deny_read_of` ``(configured)``."""
    return DenyCheck(deny_read_of(configured))


@functools.lru_cache(maxsize=8)
def _deny_read_for(_key: tuple[str, ...]) -> tuple[Path, ...]:
    return deny_read_paths(variable_entries())


class DenyCheck:
    """The in-process twin of the kernel rule (REQ-BASH-026): tells whether a path lies in a deny-read
    entry. Entries are resolved once, when the check is made (one per tool call), as :func:`read_rules`
    resolves them, so the server's read tools and the kernel agree on where a denied entry really is."""

    def __init__(self, denied: Iterable[Path]) -> None:
        self._entries: list[tuple[str, str, Path]] = []
        for entry in denied:
            real = os.path.realpath(entry)
            if real != "/":  # denying "/" is a misconfiguration, ignored as read_rules ignores it
                self._entries.append((real, real.rstrip("/") + "/", entry))

    def __bool__(self) -> bool:
        return bool(self._entries)

    def entry_for(self, path: str | os.PathLike[str], resolved: bool = False) -> Path | None:
        """The deny-read entry covering `path` (the entry itself or anything beneath it; symlinks are
        resolved unless `resolved` says `path` is real already), or None when `path` may be read."""
        real = os.fspath(path) if resolved else os.path.realpath(path)
        for denied_real, prefix, entry in self._entries:
            if real == denied_real or real.startswith(prefix):
                return entry
        return None


def invalid_entries(entries: Iterable[str]) -> list[str]:
    """The entries of a deny-read setting that are not absolute (nor start with ``~/``)."""
    return [e for e in entries if e.strip() and _expand(e, Path("/")) is None]


@dataclass(frozen=True)
class ReadRules:
    """The read grants that replace one rule on ``/``: `granted` paths get read and execute (the launcher
    adapts the rights to a file or directory, skips an entry that vanished, and never follows a symlink);
    `devices` are (path, "r" | "rw") for the allowed devices; `denied` is what they leave out."""

    granted: tuple[str, ...]
    devices: tuple[tuple[str, str], ...]
    denied: tuple[str, ...]


_DENIED = object()


def read_rules(denied: Sequence[Path], devices: Mapping[str, str] = ALLOWED_DEVICES) -> ReadRules:
    """Grants on the siblings along each denied path (and along /dev, with `devices` granted back).

    Denied paths are resolved (a denied ``~/.config`` that is a symlink denies its target), so the rules
    match the real locations Landlock checks. A denied path that does not exist still shapes the rules,
    so creating it later (outside the sandbox) does not make it readable by a command already running.
    """
    trie: dict[str, object] = {}
    real_denied: list[str] = []
    for path in [*denied, Path("/dev")]:
        real = os.path.realpath(path)
        if real == "/":
            continue  # denying "/" would deny everything; that is a misconfiguration, not a policy
        real_denied.append(real)
        node = trie
        parts = [p for p in real.split("/") if p]
        for part in parts[:-1]:
            child = node.setdefault(part, {})
            if child is _DENIED:
                break  # an ancestor is denied already
            assert isinstance(child, dict)
            node = child
        else:
            node[parts[-1]] = _DENIED
    granted: list[str] = []
    stack: list[tuple[str, dict[str, object]]] = [("/", trie)]
    while stack:
        directory, node = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # unreadable or gone: nothing under it is granted
        for entry in entries:
            child = node.get(entry.name)
            if child is _DENIED:
                continue
            try:
                if entry.is_symlink():
                    continue  # no rule needed: Landlock checks where it leads
                is_dir = entry.is_dir(follow_symlinks=False)
                kind_ok = is_dir or entry.is_file(follow_symlinks=False)
            except OSError:
                continue
            if isinstance(child, dict):
                if is_dir:
                    stack.append((entry.path, child))
                continue
            if kind_ok:  # sockets, fifos and device nodes next to a denied path get no grant
                granted.append(entry.path)
    found_devices = tuple((path, mode) for path, mode in devices.items() if os.path.exists(path))
    return ReadRules(tuple(sorted(granted)), found_devices, tuple(real_denied))
