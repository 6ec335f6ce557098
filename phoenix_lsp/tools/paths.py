"""Confinement of tool paths to a conversation's working directory (REQ-BED-010).

Every file tool resolves the model's path through :func:`resolve_in_workspace`. Relative paths start at
the conversation's working directory; absolute paths are accepted only when they point inside it. The
check is done twice: once on the path as written (so ``..`` cannot climb out) and once on the path with
every symlink resolved (so a link inside the working directory cannot lead outside it). Writes are also
refused anywhere inside a ``.git`` directory, because a patch there could corrupt the repository or plant
a hook that runs later outside any sandbox.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

__all__ = ["PathError", "resolve_in_workspace"]


class PathError(ValueError):
    """A tool path that cannot be used; the message says what, why, and what to do instead."""


def _is_within(path: str, root: str) -> bool:
    """True when ``path`` equals ``root`` or lies below it (both normalised, absolute)."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _relative_parts(path: str, root: str) -> tuple[str, ...]:
    if path == root:
        return ()
    return tuple(p for p in path[len(root.rstrip(os.sep)) + 1 :].split(os.sep) if p)


def _has_git_component(path: str, root: str) -> bool:
    # casefold: on case-insensitive file systems ".GIT" is the same directory.
    return any(part.casefold() == ".git" for part in _relative_parts(path, root))


def resolve_in_workspace(root: Path, user_path: str, *, for_write: bool) -> Path:
    """Resolve ``user_path`` against the working directory ``root`` and confine it there.

    Returns the absolute path with every symlink resolved (the file that would really be read or written).
    The target need not exist. Raises :class:`PathError` for: a non-string, empty or NUL-containing path;
    an absolute path outside ``root``; a ``..`` escape; a symlink anywhere along the path that leads outside
    ``root`` (or a symlink loop); and, when ``for_write`` is true, any path inside a ``.git`` directory.
    """
    if not isinstance(user_path, str):
        raise PathError(
            f"The path must be a string, got {type(user_path).__name__}. "
            'Pass a file path relative to the working directory, e.g. "src/main.py".'
        )
    if not user_path.strip():
        raise PathError('The path is empty. Pass a file path relative to the working directory, e.g. "src/main.py".')
    if "\x00" in user_path:
        raise PathError(
            "The path contains a NUL character, which no file name can contain. "
            "Pass the path exactly as it appears in a directory listing."
        )

    root_lexical = os.path.normpath(os.path.abspath(os.fspath(root)))
    root_real = os.path.realpath(root_lexical)
    candidate = user_path if os.path.isabs(user_path) else os.path.join(root_lexical, user_path)
    lexical = os.path.normpath(candidate)
    # normpath keeps a leading "//" (POSIX allows it a special meaning); it is never inside root anyway.

    if not (_is_within(lexical, root_lexical) or _is_within(lexical, root_real)):
        if os.path.isabs(user_path):
            raise PathError(
                f"The path {user_path!r} is outside the working directory {root_lexical}: tools may only "
                "use files inside it. Use a path relative to the working directory."
            )
        raise PathError(
            f"The path {user_path!r} climbs out of the working directory with '..': tools may only use "
            f"files inside {root_lexical}. Use a path that stays inside it."
        )

    real = os.path.realpath(lexical)
    if os.path.islink(real):
        # realpath stops at a symlink it cannot follow (a loop); stat tells us why.
        try:
            os.stat(real)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathError(
                    f"The path {user_path!r} goes through a symlink loop, so it names no file. "
                    "Fix or remove the link, or use another path."
                ) from None
    if not _is_within(real, root_real):
        raise PathError(
            f"The path {user_path!r} goes through a symlink that leads outside the working directory "
            f"(to {real}); tools may only use files inside {root_lexical}. Use a path whose real location "
            "is inside the working directory."
        )

    if for_write and (
        _has_git_component(real, root_real)
        or (_is_within(lexical, root_lexical) and _has_git_component(lexical, root_lexical))
        or (_is_within(lexical, root_real) and _has_git_component(lexical, root_real))
    ):
        raise PathError(
            f"The path {user_path!r} is inside a .git directory: changing git's own files can corrupt the "
            "repository or install hooks, so file tools never write there. Use git commands through the "
            "bash tool instead."
        )
    return Path(real)
