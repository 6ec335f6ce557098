"""One way to turn a URI or a path into a file, and one rule for a session's folder (REQ-URI-001, REQ-URI-002).

Every adapter (the LSP server's attachments, sight, commands and open documents, the ACP agent's sessions and
prompts, the terminal client's workspace edits and folder) calls these functions instead of converting URIs on
its own, so the checks after them (the deny-read list, "inside the folder") always see one canonical path.

:func:`file_path` turns a ``file:`` URI (or, where the protocol allows one, a bare path) into an absolute,
normalised path:

* the scheme is compared without regard to case (``FILE:``, ``File:``); any other scheme is refused;
* the host is empty or ``localhost`` (any case); any other host (``127.0.0.1``, ``server``, ``user@localhost``,
  a port) is refused: such a file is not this machine's by its name;
* the path is percent-decoded exactly once (``%252e`` stays ``%2e``); a query or fragment is not part of it;
* ``~`` is never expanded, and a path with a component beginning with ``~`` is refused: an editor or a shell may
  read it as a home folder, so whatever the deny-read list would say of that folder cannot be told;
* a relative bare path is resolved against the session folder (``base``);
* the result is normalised (``/./``, ``..``, repeated slashes, a leading ``//`` included) before anything else
  looks at it, and, when ``inside`` is given, it must lie in one of those folders.

:func:`check_session_folder` refuses, as a session's folder, ``/`` in any spelling, the home folder, and any
folder that holds the home folder: the tools' confinement and the deny-read list would confine nothing there.

Everything here is pure (no file system) except :func:`session_folder`, which also resolves symbolic links and
checks the folder exists. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import pwd  # POSIX: the product runs on Linux only (Landlock, seccomp)
import re
from collections.abc import Iterable, Sequence
from urllib.parse import unquote_to_bytes

#: the longest URI or path looked at (a path has at most 4,096 bytes; a URI may percent-encode each of them)
MAX_CHARS = 16_384

_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


class UriError(ValueError):
    """A URI or a path that does not name a usable file or folder. ``reason`` is a short fixed word for code;
    the message says what was given, why it is refused and what to do."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _shown(text: str) -> str:
    return repr(text[:200] + ("…" if len(text) > 200 else ""))


def scheme(text: str) -> str | None:
    """The URI's scheme in lower case, or None when ``text`` has none (a bare path)."""
    found = _SCHEME.match(text)
    return found.group(1).lower() if found else None


def normal(path: str) -> str:
    """``path`` (absolute) with ``.``, ``..`` and repeated slashes collapsed, a leading ``//`` included (POSIX
    lets ``//`` mean something else; no file system here does, and the checks must see one spelling)."""
    collapsed = posixpath.normpath(path)
    if collapsed.startswith("//"):
        collapsed = "/" + collapsed.lstrip("/")
    return collapsed


def within(path: str, folder: str) -> bool:
    """Whether the normalised ``path`` is ``folder`` or lies beneath it (both absolute; compared by name)."""
    path, folder = normal(path), normal(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _decoded(text: str, rest: str) -> str:
    """The path of a ``file:`` URI's part after the scheme, percent-decoded once."""
    for mark in "?#":  # a query or a fragment is no part of the path
        rest = rest.partition(mark)[0]
    if rest.startswith("//"):
        host, slash, path = rest[2:].partition("/")
        if host.lower() not in ("", "localhost"):
            raise UriError("host", f"{_shown(text)} names the host {_shown(host)}: only files on this machine "
                           "(no host, or localhost) can be used. Give a file: URI without a host, e.g. "
                           "file:///home/me/project/a.py.")
        path = slash + path
    else:
        path = rest
    if not path.startswith("/"):
        raise UriError("relative", f"{_shown(text)} has no absolute path, so it names no file. Give a file: URI "
                       "with an absolute path, e.g. file:///home/me/project/a.py.")
    return os.fsdecode(unquote_to_bytes(path))


def file_path(text: str, *, base: str | None = None, bare: bool = False,
              inside: Sequence[str] | None = None) -> str:
    """The absolute, normalised path ``text`` names (see the module's rules), or :class:`UriError`.

    ``bare``: a path without a scheme is accepted (only where the protocol allows one, e.g. an ACP embedded
    resource); a relative one is resolved against ``base``, the session folder. ``inside``: the path must lie
    in one of these folders (compared by name: the caller still resolves symbolic links when it reads)."""
    path = normal(spelt_path(text, base=base, bare=bare))
    if inside is not None and not any(within(path, folder) for folder in inside):
        raise UriError("outside", f"{_shown(text)} is outside the session's folders ({', '.join(inside)}), "
                       "so it was not used. Use a file of the project.")
    return path


def spelt_path(text: str, *, base: str | None = None, bare: bool = False) -> str:
    """The absolute path ``text`` names as it is spelt, by the rules of :func:`file_path` but before ``..`` is
    collapsed by name: the path the kernel would resolve (a symbolic link before the ``..`` after it). Only for
    checking a file someone else opened by that name (an ACP client's embedded resource): everything else uses
    :func:`file_path`."""
    if len(text) > MAX_CHARS:
        raise UriError("too_long", f"a URI of {len(text):,} characters was given, more than the {MAX_CHARS:,} a "
                       "file's may have, so it was not used. Give the file's own URI.")
    found = scheme(text)
    if found is None:
        if not bare:
            raise UriError("not_uri", f"{_shown(text)} is not a URI, and here a file is named by a file: URI. "
                           "Give one, e.g. file:///home/me/project/a.py.")
        path = text
    elif found != "file":
        raise UriError("not_file", f"{_shown(text)} is a {found}: URI, not a file: URI (a file on this machine), "
                       "so it was not used. Give a file: URI, e.g. file:///home/me/project/a.py.")
    else:
        path = _decoded(text, text[len(found) + 1:])
    if not path or "\0" in path:
        raise UriError("empty" if not path else "nul", f"{_shown(text)} names no file (it is empty or holds a NUL "
                       "character). Give the file's path.")
    if any(part.startswith("~") for part in path.split("/")):
        raise UriError("tilde", f"{_shown(text)} has a part beginning with '~', which may mean a home folder: it "
                       "is never expanded, and such a path is refused rather than guessed. Give the file's full "
                       "path without '~'.")
    if not path.startswith("/"):
        if base is None or not base.startswith("/"):
            raise UriError("relative", f"{_shown(text)} is a relative path and there is no folder to read it "
                           "against. Give the file's absolute path.")
        path = base + "/" + path
    return path


def check_session_folder(folder: str, homes: Iterable[str]) -> str:
    """``folder`` normalised, or :class:`UriError` when it cannot be a session's folder: not absolute, ``/`` in
    any spelling, one of ``homes`` or a folder that holds one of them. Pure: the caller gives the home folders
    (and checks the folder's real path too: see :func:`session_folder`)."""
    if not folder or "\0" in folder or len(folder) > MAX_CHARS or not folder.startswith("/"):
        raise UriError("relative", f"{_shown(folder)} is not an existing absolute directory: give the folder "
                       "the agent should work in, as an absolute path.")
    canonical = normal(folder)
    if canonical == "/":
        raise UriError("root", f"{_shown(folder)} is the whole file system: the agent's tools are confined to "
                       "the session's folder, so give the project folder the agent should work in.")
    for home in homes:
        if home.startswith("/") and within(home, canonical):
            raise UriError("home", f"{_shown(folder)} is your home folder or holds it: the agent's tools would "
                           "reach every project and credential beneath it, so give the project folder the "
                           "agent should work in.")
    return canonical


def home_folders() -> list[str]:
    """The user's home folders: ``$HOME`` and the account's, each also with its links resolved."""
    homes = [os.environ["HOME"]] if "HOME" in os.environ else []
    with contextlib.suppress(KeyError):  # a uid the account database does not know: $HOME alone
        homes.append(pwd.getpwuid(os.getuid()).pw_dir)
    found = [h for h in homes if h.startswith("/")]
    return found + [os.path.realpath(h) for h in found]


def session_folder(folder: str) -> str:
    """The session's folder as the tools will use it (links resolved), or :class:`UriError`: the rule of
    :func:`check_session_folder` applied to the folder as given and to its real path, and the folder must exist.
    Touches the file system: call it off the event loop."""
    homes = home_folders()
    real = os.path.realpath(check_session_folder(folder, homes))  # no NUL by then: realpath does not raise
    if not os.path.isdir(real):
        raise UriError("missing", f"{_shown(folder)} is not an existing absolute directory: give the folder the "
                       "agent should work in.")
    return check_session_folder(real, homes)
