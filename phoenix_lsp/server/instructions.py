"""Project instructions: the user's ``AGENTS.md`` / ``CLAUDE.md`` files, read for a conversation (REQ-INSTR-001).

Files, farthest first (a nearer file refines the ones before it): one user-level ``AGENTS.md`` in the
configuration directory, then in each directory from the workspace folder that holds the working directory
down to the working directory, ``AGENTS.md`` then ``CLAUDE.md``. The text is capped (``CAP_BYTES``): the
nearest files are kept whole first, and what was cut is said, in the prompt and in the file list. An
unreadable or non-UTF-8 file is skipped and reported, never a failed conversation. The text is read once,
when a conversation starts (or the user asks to reload): it stays byte-stable for the prompt cache.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..core.values import InstructionFile

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
    import platformdirs

    return Path(platformdirs.user_config_dir("phoenix-lsp", appauthor=False))


def candidates(working_directory: Path, roots: Iterable[Path], user_dir: Path | None) -> list[Path]:
    """The files to look for, farthest first."""
    wd = working_directory.resolve()
    top = wd
    for root in sorted((r.resolve() for r in roots), key=lambda r: len(r.parts)):
        if wd == root or root in wd.parents:
            top = root
            break
    dirs = [top, *(p for p in reversed(wd.parents) if top in p.parents), wd] if top != wd else [wd]
    paths = [user_dir / "AGENTS.md"] if user_dir is not None else []
    return paths + [d / name for d in dirs for name in NAMES]


def read(
    working_directory: Path,
    roots: Iterable[Path] = (),
    *,
    user_dir: Path | None = None,
    cap: int = CAP_BYTES,
    redact: Callable[[str], str] = lambda text: text,
) -> Instructions:
    """The instructions in effect for a conversation in ``working_directory``."""
    found: list[tuple[Path, str]] = []
    skipped: dict[Path, InstructionFile] = {}
    order: list[Path] = []
    for path in candidates(working_directory, roots, user_dir):
        size = 0
        try:
            if not path.is_file():
                continue
            order.append(path)
            size = path.stat().st_size
            if size > READ_LIMIT_BYTES:
                skipped[path] = InstructionFile(str(path), size, 0, f"skipped: {size:,} bytes is more than the "
                                                f"{READ_LIMIT_BYTES:,} read; shorten it")
                continue
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            skipped[path] = InstructionFile(str(path), size, 0, "skipped: it is not UTF-8 text; save it as UTF-8")
            continue
        except OSError as exc:
            skipped[path] = InstructionFile(str(path), size, 0,
                                            f"skipped: it could not be read ({exc.strerror or exc})")
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
