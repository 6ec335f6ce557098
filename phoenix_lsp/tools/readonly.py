"""The read-only file tools: ``read_file``, ``list_directory`` and ``search_files``.

Available in both modes. Every path goes through :func:`resolve_in_workspace`, so nothing outside the
conversation's working directory can be read, whether by ``..``, an absolute path or a symlink
(REQ-BED-010). In Restricted mode (sub-agents included) the deny-read list the kernel enforces on commands
applies here too: a :class:`DenyCheck` refuses credentials and phoenix-lsp's own data, whether read, listed
or searched (REQ-BASH-026). ``open_documents`` maps absolute paths to the editor's unsaved text: an open document wins
over the disk, so the model sees what the user sees. Bad input gives an error :class:`ToolOutput`, never an
exception (REQ-SEC-002).

Over 300 lines: the three read-only tools share the confined reads, the deny check and the output limits; each tool
is one function.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import regex  # type: ignore[import-untyped]  # no stubs installed

from phoenix_lsp import confined, limits
from phoenix_lsp.sandbox.denylist import DenyCheck
from phoenix_lsp.tools.inputs import ListDirectoryInput, ReadFileInput, SearchFilesInput, ToolInput, validate
from phoenix_lsp.tools.paths import PathError, resolve_in_workspace

M = TypeVar("M", bound=ToolInput)

__all__ = [
    "LIST_DIRECTORY_DESCRIPTION",
    "READ_FILE_DESCRIPTION",
    "SEARCH_FILES_DESCRIPTION",
    "ToolOutput",
    "run_list_directory",
    "run_read_file",
    "run_search_files",
]

READ_DEFAULT_LIMIT = 2_000
"""Lines returned by read_file when no limit is given."""
READ_MAX_FILE_BYTES = limits.READ_FILE_BYTES
"""The largest file read_file reads (a bigger one is refused, not cut: its lines would be numbered wrongly)."""
READ_MAX_CHARS = 100_000
"""Most characters of file text one read_file call returns (about 25k tokens)."""
LINE_MAX_CHARS = 2_000
"""Longer lines are cut in read_file output."""
LIST_MAX_ENTRIES = 1_000
SEARCH_MAX_MATCHES = 200
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_FILE_BYTES = 5 * 1024 * 1024
SEARCH_LINE_SHOWN = 300
SEARCH_REGEX_TIMEOUT_S = 0.5
"""Per-file budget for the regex, so a catastrophic pattern cannot hang the conversation."""
SEARCH_TIME_BUDGET_S = 10.0
_BINARY_SNIFF = 8_192
# Line endings as LSP counts them, so line numbers agree with the editor's.
_LINE_BREAK = regex.compile(r"\r\n|\r|\n")

READ_FILE_DESCRIPTION = (
    "Read a text file inside the working directory, with line numbers. If the file is open in the "
    "user's editor, its current (possibly unsaved) text is returned. Long files are returned in parts: "
    "use offset (first line, 1-based) and limit (number of lines) to read further."
)

LIST_DIRECTORY_DESCRIPTION = (
    "List the entries of a directory inside the working directory (default: the working directory). "
    "Directories end with '/', files show their size, symlinks show their target."
)

SEARCH_FILES_DESCRIPTION = (
    "Search the text files under a directory of the working directory for a regular expression "
    "(Python syntax), line by line. Returns 'path:line: text' for each match, at most "
    f"{SEARCH_MAX_MATCHES}. Skips .git, binary files and files over {SEARCH_MAX_FILE_BYTES // 2**20} MB. "
    "Files open in the editor are searched in their current text."
)


@dataclass(frozen=True)
class ToolOutput:
    """What a tool returns to the model: its text, and whether it reports an error."""

    text: str
    is_error: bool = False


def _error(text: str) -> ToolOutput:
    return ToolOutput(text, is_error=True)


def _parse(model: type[M], tool: str, tool_input: object) -> M | ToolOutput:
    """The validated input (the model of ``phoenix_lsp.tools.inputs``), or the error the model is told."""
    if isinstance(tool_input, model):
        return tool_input
    checked = validate(model, tool, tool_input)
    return _error(checked) if isinstance(checked, str) else checked


def _open_text(open_documents: Mapping[Path, str], target: Path) -> str | None:
    """The editor's text for ``target``, whichever spelling of the path the editor used."""
    if target in open_documents:
        return open_documents[target]
    for path, text in open_documents.items():
        try:
            if Path(os.path.realpath(path)) == target:
                return text
        except (OSError, ValueError):
            continue
    return None


def _denied(tool: str, shown: str, entry: Path) -> ToolOutput:
    """What the model is told when a Restricted read reaches the deny-read list: what, why, what next."""
    what = "is" if shown == str(entry) else f"lies under {entry}, which is"
    return _error(
        f"{tool}: {shown} {what} on the deny-read list (credentials and phoenix-lsp's own data), so it "
        "cannot be read in Restricted mode: everything a tool reads is sent to the model provider, and the "
        "kernel sandbox keeps commands away from it too. Work without it; if you need something from it, "
        "ask the user to paste the part that is not secret (the list is in `phoenix-lsp doctor`; the user "
        "can add entries with the denyRead setting, not remove the defaults)."
    )


def _is_binary(data: bytes) -> bool:
    return b"\x00" in data[:_BINARY_SNIFF]


def _display(root: Path, target: Path) -> str:
    real_root = Path(os.path.realpath(root))
    try:
        rel = target.relative_to(real_root).as_posix()
    except ValueError:
        return str(target)
    return rel or "."


def _read_refused(refused: confined.ReadRefused, shown: str, target: Path, deny: DenyCheck | None) -> ToolOutput:
    """What the model is told when the confined reader refused a read_file (REQ-READ-002..004)."""
    match refused.reason:
        case "not_regular" if os.path.isdir(target):
            return _error(f"{shown} is a directory, not a file. Use list_directory to see what it contains.")
        case "not_regular":  # a FIFO would block the read for ever; a device is never text
            return _error(f"{shown} is not a regular file (a device, FIFO or socket); read_file reads text "
                          "files only.")
        case "missing":
            return _error(f"{shown} does not exist. Use list_directory or search_files to find the file.")
        case "denied" if deny is not None and refused.entry is not None and refused.entry not in confined.NEVER_READ:
            return _denied("read_file", shown, Path(refused.entry))
        case "denied":
            return _error(f"read_file: {shown} is in {refused.entry} (process, kernel or device state, not a file "
                          "of the project), so it is never read: what a tool reads goes to the model provider.")
        case "outside":
            return _error(f"read_file: {shown} leads outside the working directory (through a symlink or '..'), "
                          "so it was not read: tools may only use files inside it. Use a path whose real location "
                          "is inside the working directory.")
        case "too_large":
            return _error(f"{shown} has more than {READ_MAX_FILE_BYTES // 2**20} MB; read_file reads files up to "
                          "that size. Use search_files to find the part you need.")
        case "loop":
            return _error(f"{shown} goes through a symlink loop, so it names no file. Fix or remove the link.")
        case _:
            return _error(f"{shown} cannot be read: {refused.cause or refused}. Check its permissions.")


def run_read_file(tool_input: object, root: Path, open_documents: Mapping[Path, str],
                  deny: DenyCheck | None = None) -> ToolOutput:
    """Return lines of a file with 1-based line numbers; the editor's unsaved text wins over the disk.
    `deny`: the deny-read list (Restricted mode), checked before the editor's text or the disk is read."""
    checked = _parse(ReadFileInput, "read_file", tool_input)
    if isinstance(checked, ToolOutput):
        return checked
    offset = checked.offset or 1
    limit = checked.limit or READ_DEFAULT_LIMIT
    try:
        target = resolve_in_workspace(root, checked.path, for_write=False)
    except PathError as exc:
        return _error(str(exc))
    shown = _display(root, target)
    if deny and (entry := deny.entry_for(target, resolved=True)) is not None:
        return _denied("read_file", shown, entry)
    text = _open_text(open_documents, target)
    source = "editor (unsaved changes included)" if text is not None else "disk"
    if text is None:
        try:
            with confined.Root(root, deny=deny) as beneath:
                data = beneath.read(target, max_bytes=READ_MAX_FILE_BYTES).data
        except OSError as exc:  # the working directory itself cannot be opened
            return _error(f"{shown} cannot be read: {exc.strerror or exc}. Check the working directory.")
        except confined.ReadRefused as refused:
            return _read_refused(refused, shown, target, deny)
        if _is_binary(data):
            return _error(f"{shown} looks binary (it contains NUL bytes); read_file shows text files only.")
        text = data.decode("utf-8", errors="replace")
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # a final line ending does not start another line
    total = len(lines)
    if total == 0:
        return ToolOutput(f"{shown} is empty (source: {source}).")
    if offset > total:
        return _error(f"{shown} has {total} lines; offset {offset} is past the end. Use an offset <= {total}.")
    out: list[str] = []
    used = 0
    last = offset - 1
    for number in range(offset, min(total, offset - 1 + limit) + 1):
        line = lines[number - 1]
        if len(line) > LINE_MAX_CHARS:
            line = line[:LINE_MAX_CHARS] + f" [... line cut: {len(line) - LINE_MAX_CHARS} more characters]"
        if used + len(line) > READ_MAX_CHARS and out:
            break
        out.append(f"{number:6}\t{line}")
        used += len(line) + 8
        last = number
    header = f"{shown} (source: {source}), lines {offset}-{last} of {total}"
    footer = ""
    if last < total:
        footer = f"\n[{total - last} more lines: call read_file with offset={last + 1} to continue]"
    return ToolOutput(header + "\n" + "\n".join(out) + footer)


def run_list_directory(tool_input: object, root: Path, open_documents: Mapping[Path, str],
                       deny: DenyCheck | None = None) -> ToolOutput:
    """List one directory: sorted entries, '/' after directories, sizes of files, targets of symlinks.
    `deny`: the deny-read list (Restricted mode): a denied directory is not listed, a denied entry is
    named but neither its size nor its target is shown."""
    del open_documents  # listing shows the disk; unsaved buffers change contents, not names
    checked = _parse(ListDirectoryInput, "list_directory", tool_input)
    if isinstance(checked, ToolOutput):
        return checked
    try:
        target = resolve_in_workspace(root, checked.path, for_write=False)
    except PathError as exc:
        return _error(str(exc))
    shown = _display(root, target)
    if deny and (denied_by := deny.entry_for(target, resolved=True)) is not None:
        return _denied("list_directory", shown, denied_by)
    try:
        with os.scandir(target) as it:
            entries = sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        return _error(f"{shown} does not exist. List its parent directory to see what is there.")
    except NotADirectoryError:
        return _error(f"{shown} is a file, not a directory. Use read_file to read it.")
    except OSError as exc:
        return _error(f"{shown} cannot be listed: {exc.strerror or exc}.")
    lines = []
    for entry in entries[:LIST_MAX_ENTRIES]:
        try:
            if deny and deny.entry_for(entry.path) is not None:
                lines.append(f"{entry.name}  (on the deny-read list: not readable in Restricted mode)")
            elif entry.is_symlink():
                lines.append(f"{entry.name} -> {os.readlink(entry.path)}")
            elif entry.is_dir():
                lines.append(entry.name + "/")
            else:
                lines.append(f"{entry.name}  ({entry.stat().st_size} bytes)")
        except OSError:
            lines.append(f"{entry.name}  (unreadable)")
    header = f"{shown}: {len(entries)} entries"
    if not entries:
        return ToolOutput(f"{shown} is empty.")
    if len(entries) > LIST_MAX_ENTRIES:
        lines.append(
            f"[{len(entries) - LIST_MAX_ENTRIES} more entries not shown: list a subdirectory or use "
            "search_files with a glob]"
        )
    return ToolOutput(header + "\n" + "\n".join(lines))


def _glob_matches(rel: str, glob: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    if "/" not in glob:
        return fnmatch.fnmatchcase(name, glob)
    if fnmatch.fnmatchcase(rel, glob):
        return True
    return glob.startswith("**/") and fnmatch.fnmatchcase(rel, glob[3:])


def _walk(start: Path, deny: DenyCheck | None = None, pruned: list[str] | None = None) -> Iterator[Path]:
    """Files under `start` (itself when a file); never through a symlinked directory; denied directories
    are not entered (their paths go to `pruned`)."""
    if not start.is_dir():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
        # .git holds objects, not the user's code; a search there is noise and slow.
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        if deny:  # `start` is real and the walk follows no link, so these paths are real too
            kept = [d for d in dirnames if deny.entry_for(os.path.join(dirpath, d), resolved=True) is None]
            if pruned is not None and len(kept) != len(dirnames):
                pruned += [os.path.join(dirpath, d) for d in dirnames if d not in kept]
            dirnames[:] = kept
        for name in sorted(filenames):
            yield Path(dirpath, name)


def run_search_files(tool_input: object, root: Path, open_documents: Mapping[Path, str],
                     deny: DenyCheck | None = None) -> ToolOutput:
    """Find lines matching a regex in the text files under a path, with caps on files, size and matches.
    `deny`: the deny-read list (Restricted mode): a denied start is refused, denied entries under it are
    skipped (and counted in a note)."""
    checked = _parse(SearchFilesInput, "search_files", tool_input)
    if isinstance(checked, ToolOutput):
        return checked
    pattern_text, glob = checked.pattern, checked.glob
    try:
        start = resolve_in_workspace(root, checked.path, for_write=False)
    except PathError as exc:
        return _error(str(exc))
    try:
        pattern = regex.compile(pattern_text, regex.MULTILINE)
    except (regex.error, ValueError, OverflowError) as exc:
        return _error(
            f"search_files: the pattern {pattern_text!r} is not a valid regular expression ({exc}). "
            "Escape special characters such as ( [ . * + ? with a backslash."
        )
    if deny and (denied_by := deny.entry_for(start, resolved=True)) is not None:
        return _denied("search_files", _display(root, start), denied_by)
    if not start.exists() and _open_text(open_documents, start) is None:
        return _error(f"{_display(root, start)} does not exist. Use list_directory to find the right path.")
    real_root = os.path.realpath(root)
    open_by_real = {Path(os.path.realpath(p)): t for p, t in open_documents.items()}
    try:
        beneath = confined.Root(real_root, deny=deny)
    except OSError as exc:
        return _error(f"search_files: the working directory cannot be opened ({exc.strerror or exc}).")
    with beneath:
        return _search(pattern, pattern_text, glob, root, start, real_root, open_by_real, deny, beneath)


def _search(pattern: regex.Pattern[str], pattern_text: str, glob: str | None, root: Path, start: Path,
            real_root: str, open_by_real: Mapping[Path, str], deny: DenyCheck | None,
            beneath: confined.Root) -> ToolOutput:
    results: list[str] = []
    files = skipped_big = skipped_binary = timed_out = 0
    truncated = False
    deadline = time.monotonic() + SEARCH_TIME_BUDGET_S
    pruned: list[str] = []
    skipped_denied = 0
    for path in _walk(start, deny, pruned):
        real = os.path.realpath(path)
        if not (real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)):
            continue  # a symlink leading out of the working directory is never read
        if beneath.denied(real) is not None:  # remembered: the reader's own check below costs nothing more
            skipped_denied += 1
            continue
        rel = _display(root, Path(real)) if path.is_symlink() else _display(root, path)
        if glob is not None and not _glob_matches(rel, glob):
            continue
        files += 1
        if files > SEARCH_MAX_FILES or time.monotonic() > deadline:
            truncated = True
            break
        text = open_by_real.get(Path(real))
        if text is None:
            try:  # the confined reader: opened once beneath the working directory, regular files only
                data = beneath.read(real, max_bytes=SEARCH_MAX_FILE_BYTES).data
            except confined.ReadRefused as refused:
                if refused.reason == "too_large":
                    skipped_big += 1
                elif refused.reason == "denied" and refused.entry not in confined.NEVER_READ:
                    skipped_denied += 1
                continue
            if _is_binary(data):
                skipped_binary += 1
                continue
            text = data.decode("utf-8", errors="replace")
        last_line, line_no, counted_to = 0, 1, 0
        try:
            for m in pattern.finditer(text, timeout=SEARCH_REGEX_TIMEOUT_S):
                line_no += text.count("\n", counted_to, m.start())
                counted_to = m.start()
                if line_no == last_line:
                    continue  # one result per line
                last_line = line_no
                line_start = text.rfind("\n", 0, m.start()) + 1
                line_end = text.find("\n", m.start())
                line = text[line_start : line_end if line_end >= 0 else len(text)].rstrip("\r")
                if len(line) > SEARCH_LINE_SHOWN:
                    line = line[:SEARCH_LINE_SHOWN] + " [...]"
                results.append(f"{rel}:{line_no}: {line}")
                if len(results) >= SEARCH_MAX_MATCHES:
                    truncated = True
                    break
        except TimeoutError:
            timed_out += 1
            continue
        if len(results) >= SEARCH_MAX_MATCHES:
            break
    notes = []
    if truncated:
        notes.append("results were cut at a limit: narrow the pattern, path or glob to see everything")
    if skipped_big:
        notes.append(f"{skipped_big} file(s) over {SEARCH_MAX_FILE_BYTES // 2**20} MB skipped")
    if skipped_binary:
        notes.append(f"{skipped_binary} binary file(s) skipped")
    if skipped_denied or pruned:
        notes.append(f"{skipped_denied + len(pruned)} path(s) on the deny-read list skipped (credentials and "
                     "phoenix-lsp's data are not readable in Restricted mode)")
    if timed_out:
        notes.append(f"{timed_out} file(s) skipped because the pattern took too long on them; simplify it")
    tail = "".join(f"\n[{n}]" for n in notes)
    if not results:
        return ToolOutput(f"No match for {pattern_text!r} in {_display(root, start)}." + tail)
    return ToolOutput("\n".join(results) + tail)
