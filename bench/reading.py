"""Benchmark: the confined reader against the read path it replaced (issue 24).

Figures (each next to a baseline measured in the same run, in alternating rounds):
- ``read_file`` of a 1 MB text file (the model's first 2,000 lines), median ms; baseline: today's code before
  the confined reader (a copy of the old ``run_read_file`` below, labelled BASELINE), on the same file.
- ``search_files`` over 10,000 files (a pattern that matches in 1 % of them), median ms; baseline: the old
  ``run_search_files`` (copied below), on the same tree.
Goal: within 10 % of the baseline (ratio <= 1.10).

Run: ``python -m bench reading`` (``--quick`` for fewer rounds).
"""

from __future__ import annotations

import os
import shutil
import stat
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import regex  # type: ignore[import-untyped]  # no stubs installed

from phoenix_lsp.sandbox.denylist import DenyCheck, current_deny_read
from phoenix_lsp.tools import readonly
from phoenix_lsp.tools.inputs import ReadFileInput, SearchFilesInput
from phoenix_lsp.tools.paths import PathError, resolve_in_workspace
from phoenix_lsp.tools.readonly import (
    _LINE_BREAK,
    LINE_MAX_CHARS,
    READ_DEFAULT_LIMIT,
    READ_MAX_CHARS,
    SEARCH_LINE_SHOWN,
    SEARCH_MAX_FILE_BYTES,
    SEARCH_MAX_FILES,
    SEARCH_MAX_MATCHES,
    SEARCH_REGEX_TIMEOUT_S,
    SEARCH_TIME_BUDGET_S,
    ToolOutput,
    _denied,
    _display,
    _error,
    _glob_matches,
    _is_binary,
    _open_text,
    _parse,
    _walk,
)

FILE_BYTES = 1 << 20
SEARCH_FILES = 10_000

# ---------------------------------------------------------------------------------------------------------------
# BASELINE: the read path before the confined reader, copied verbatim from phoenix_lsp/tools/readonly.py as it was
# (commit fc3e0f3), so both run in the same process on the same files. Not used by phoenix-lsp.
# ---------------------------------------------------------------------------------------------------------------


def old_run_read_file(tool_input: object, root: Path, open_documents: Mapping[Path, str],
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
        if target.is_dir():
            return _error(f"{shown} is a directory, not a file. Use list_directory to see what it contains.")
        try:
            mode = target.stat().st_mode
        except OSError:
            mode = stat.S_IFREG  # gone or unreadable: the read below says which
        if not stat.S_ISREG(mode):  # a FIFO would block the read for ever; a device is never text
            return _error(f"{shown} is not a regular file (a device, FIFO or socket); read_file reads text "
                          "files only.")
        try:
            data = target.read_bytes()
        except FileNotFoundError:
            return _error(f"{shown} does not exist. Use list_directory or search_files to find the file.")
        except OSError as exc:
            return _error(f"{shown} cannot be read: {exc.strerror or exc}. Check its permissions.")
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


def old_run_search_files(tool_input: object, root: Path, open_documents: Mapping[Path, str],
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
        if deny and deny.entry_for(real, resolved=True) is not None:
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
            try:
                st = os.stat(real)
                if not stat.S_ISREG(st.st_mode):
                    continue
                if st.st_size > SEARCH_MAX_FILE_BYTES:
                    skipped_big += 1
                    continue
                data = Path(real).read_bytes()
            except OSError:
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


# ---------------------------------------------------------------------------------------------------------------
# end of BASELINE
# ---------------------------------------------------------------------------------------------------------------


def _make_tree(base: Path) -> None:
    line = "def handler_{i}(request):  # the request handler number {i}, nothing to see\n"
    big = "".join(line.format(i=i) for i in range(FILE_BYTES // len(line.format(i=0)) + 1)).encode()[:FILE_BYTES]
    (base / "big.py").write_bytes(big)
    for i in range(SEARCH_FILES):
        d = base / "src" / f"pkg{i // 100:03}"
        d.mkdir(parents=True, exist_ok=True)
        body = "".join(line.format(i=j) for j in range(12))
        if i % 100 == 0:
            body += "NEEDLE = True\n"
        (d / f"mod{i:05}.py").write_text(body)


def _alternating(a: Callable[[], object], b: Callable[[], object], rounds: int) -> tuple[float, float]:
    """Median ms of `a` and of `b`, run in alternating rounds (after one warm-up each)."""
    a(), b()
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(rounds):
        for fn, out in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            fn()
            out.append((time.perf_counter() - t0) * 1000)
    return statistics.median(ta), statistics.median(tb)


def figures(quick: bool = False) -> list[dict[str, Any]]:
    global SEARCH_TIME_BUDGET_S
    rounds = 5 if quick else 25
    base = Path(tempfile.mkdtemp(prefix="bench-reading-"))
    # the searches' time budget (10 s) would cut a search on a loaded machine and time the budget, not the search
    budget = readonly.SEARCH_TIME_BUDGET_S
    readonly.SEARCH_TIME_BUDGET_S = SEARCH_TIME_BUDGET_S = 600.0
    try:
        _make_tree(base)
        deny = DenyCheck(current_deny_read())  # Restricted: the deny-read list applies to both
        docs: dict[Path, str] = {}

        def new_read() -> object:
            out = readonly.run_read_file({"path": "big.py"}, base, docs, deny)
            assert not out.is_error, out.text
            return out

        def old_read() -> object:
            out = old_run_read_file({"path": "big.py"}, base, docs, deny)
            assert not out.is_error, out.text
            return out

        assert new_read() == old_read(), "the two read paths must answer the same"
        read_new, read_old = _alternating(new_read, old_read, rounds)

        search = {"pattern": "NEEDLE", "path": "src"}
        new_out = readonly.run_search_files(search, base, docs, deny)
        old_out = old_run_search_files(search, base, docs, deny)
        assert new_out == old_out and new_out.text.count("NEEDLE") == SEARCH_FILES // 100, new_out.text[-300:]
        search_new, search_old = _alternating(lambda: readonly.run_search_files(search, base, docs, deny),
                                              lambda: old_run_search_files(search, base, docs, deny),
                                              max(3, rounds // 5))
    finally:
        readonly.SEARCH_TIME_BUDGET_S = SEARCH_TIME_BUDGET_S = budget
        shutil.rmtree(base, ignore_errors=True)
    return [
        {"name": "read_file of a 1 MB file through the confined reader (median)", "value": round(read_new, 3),
         "unit": "ms", "baseline_name": "the read path before it (copied in bench/reading.py), same file",
         "baseline_value": round(read_old, 3), "goal": "within 10 % of the baseline"},
        {"name": f"search_files over {SEARCH_FILES:,} files through the confined reader (median)",
         "value": round(search_new, 1), "unit": "ms",
         "baseline_name": "the search before it (copied in bench/reading.py), same tree",
         "baseline_value": round(search_old, 1), "goal": "within 10 % of the baseline"},
    ]


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures(quick="--quick" in sys.argv))
