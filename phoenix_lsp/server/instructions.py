"""Project instructions: the user's ``AGENTS.md`` / ``CLAUDE.md`` files, read for a conversation (REQ-INSTR-001).

Files, farthest first (a nearer file refines the ones before it): one user-level ``AGENTS.md`` in the
configuration directory, then in each directory from the workspace folder that holds the working directory
down to the working directory, ``AGENTS.md`` then ``CLAUDE.md``. The text is capped (``CAP_BYTES``): the
nearest files are kept whole first, and what was cut is said, in the prompt and in the file list. An
unreadable or non-UTF-8 file is skipped and reported, never a failed conversation. The text is read once,
when a conversation starts (or the user asks to reload): it stays byte-stable for the prompt cache.

Every file is read through the confined reader (REQ-READ-006): a file of the workspace beneath the workspace
folder (the user-level one beneath the configuration directory), never through a symlink that leads out of
it (a cloned repository can ship ``AGENTS.md -> ~/.ssh/id_rsa``), never from the deny-read list or /proc,
regular files only, the cap counted on the bytes read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from .. import confined
from ..core.values import InstructionFile
from ..sandbox.denylist import DenyCheck

NAMES = ("AGENTS.md", "CLAUDE.md")
CAP_BYTES = 32 * 1024
#: A file larger than this is not read at all (its first ``CAP_BYTES`` would be cut anyway).
READ_LIMIT_BYTES = 4 * CAP_BYTES


@dataclass(frozen=True)
class Instructions:
    text: str  # what the system prompt carries ("" when there are none)
    files: tuple[InstructionFile, ...]  # farthest first; a skipped file has its problem


def config_dir(configured: Path | None = None) -> Path:
    """Where the user-level file lives: the ``config_dir`` setting (``PHOENIX_CONFIG_DIR``), else the platform's
    configuration directory (``~/.config/phoenix-lsp`` on Linux)."""
    if configured is not None:
        return configured

    return Path(platformdirs.user_config_dir("phoenix-lsp", appauthor=False))


def candidates(working_directory: Path, roots: Iterable[Path], user_dir: Path | None) -> list[Path]:
    """The files to look for, farthest first."""
    return [path for path, _ in _candidates(working_directory, roots, user_dir)]


def _candidates(working_directory: Path, roots: Iterable[Path], user_dir: Path | None) -> list[tuple[Path, Path]]:
    """(file, the directory it must stay beneath), farthest first."""
    wd = working_directory.resolve()
    top = wd
    for root in sorted((r.resolve() for r in roots), key=lambda r: len(r.parts)):
        if wd == root or root in wd.parents:
            top = root
            break
    dirs = [top, *(p for p in reversed(wd.parents) if top in p.parents), wd] if top != wd else [wd]
    paths = [(user_dir / "AGENTS.md", user_dir)] if user_dir is not None else []
    return paths + [(d / name, top) for d in dirs for name in NAMES]


def _problem(refused: confined.ReadRefused, beneath: Path) -> str | None:
    """What the file list says about a file the confined reader refused (None: there is no such file)."""
    match refused.reason:
        case "missing" | "not_regular":
            return None  # no file of that name (a directory or FIFO of that name is no instructions file)
        case "outside":
            return (f"skipped: it is a symlink that leads outside {beneath}; instructions are read only from "
                    "inside the workspace folder (and phoenix-lsp's configuration directory). Copy the file in "
                    "instead of linking to it")
        case "denied":
            return (f"skipped: it leads to {refused.entry}, which is on the deny-read list (credentials, "
                    "phoenix-lsp's own data, process state): its contents would go to the model provider. "
                    "Remove the link")
        case "too_large":
            return f"skipped: it has more than the {READ_LIMIT_BYTES:,} bytes read; shorten it"
        case "loop":
            return "skipped: it goes through a symlink loop; fix or remove the link"
        case _:
            return f"skipped: it could not be read ({refused.cause or refused})"


def read(
    working_directory: Path,
    roots: Iterable[Path] = (),
    *,
    user_dir: Path | None = None,
    cap: int = CAP_BYTES,
    redact: Callable[[str], str] = lambda text: text,
    deny: DenyCheck | None = None,
) -> Instructions:
    """The instructions in effect for a conversation in ``working_directory``. `deny`: the deny-read list
    (the server passes its own; procfs, sysfs and devices are refused whatever it holds)."""
    found: list[tuple[Path, str]] = []
    skipped: dict[Path, InstructionFile] = {}
    order: list[Path] = []
    for path, beneath in _candidates(working_directory, roots, user_dir):
        try:
            data = confined.read(path, [beneath], max_bytes=READ_LIMIT_BYTES, deny=deny).data
        except confined.ReadRefused as refused:
            problem = _problem(refused, beneath)
            if problem is not None:
                order.append(path)
                skipped[path] = InstructionFile(str(path), 0, 0, problem)
            continue
        order.append(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped[path] = InstructionFile(str(path), len(data), 0,
                                            "skipped: it is not UTF-8 text; save it as UTF-8")
            continue
        if text.strip():
            found.append((path, redact(text)))
        else:
            order.remove(path)
    # the budget goes to the nearest files first: they refine the others
    budget = cap
    kept: dict[Path, str] = {}
    for path, text in reversed(found):
        data = text.encode()
        part = data[: max(budget, 0)].decode("utf-8", errors="ignore")
        kept[path] = part
        budget -= len(part.encode())
    texts = dict(found)
    files: list[InstructionFile] = []
    sections: list[str] = []
    for path in order:
        if path in skipped:
            files.append(skipped[path])
            continue
        text, part = texts[path], kept[path]
        size, used = len(text.encode()), len(part.encode())
        files.append(InstructionFile(str(path), size, used))
        if not part:
            continue
        cut = "" if used == size else f"\n[{size - used:,} bytes cut: project instructions are capped at {cap:,} bytes]"
        sections.append(f"## {path}\n{part}{cut}")
    if not sections:
        return Instructions("", tuple(files))
    head = (
        "# Project instructions\n"
        "The user's instruction files follow, farthest first; a nearer file refines the ones before it."
    )
    return Instructions("\n\n".join([head, *sections]), tuple(files))
