"""REQ-READ-001: the confined reader is the only door. This test reads the source of ``phoenix_lsp/`` and fails
when a module outside ``phoenix_lsp/confined.py`` opens, reads or lists a file by path, unless the call is on the
allow-list below with the reason it is not a read for the model or the server of a path that a user, a
repository, a model or another process can steer."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "phoenix_lsp"

#: calls that open or read a file by path, by how they are spelt (``Path(...).read_text`` is any ``.read_text``)
OPENERS_BY_NAME = {"open"}
OPENERS_BY_MODULE = {("os", "open"), ("io", "open"), ("os", "fdopen"), ("os", "scandir"), ("os", "listdir"),
                     ("os", "walk"), ("os", "readlink"), ("os", "fwalk")}
OPENERS_BY_METHOD = {"read_text", "read_bytes", "open", "iterdir", "glob", "rglob"}

#: (module, the call as written) -> why it may open a path itself
ALLOWED: dict[tuple[str, str], str] = {
    # a captured shell command's overlay (issue 36, REQ-BASH-029..031): the layer and the workspace are walked
    # beneath directory descriptors the server opened on its own layer and folder, each name opened O_NOFOLLOW
    # relative to them (never a path string a model or a client gives). What is read is shown to the user (the
    # review's diff, redacted like every event) and applied; the model is told only the changed paths
    # (REQ-BASH-032), never the texts
    ("tools/shell_changes/scan.py", "os.open"): "the layer's and the folder's roots, as directory descriptors",
    ("tools/shell_changes/scan.py", "os.scandir"): "lists a layer directory through its descriptor",
    ("tools/shell_changes/scan.py", "os.readlink"): "a symlink the command made, read (never followed) to "
                                                    "report its target",
    ("tools/shell_changes/files.py", "os.open"): "a layer or folder file by name beneath a directory descriptor, "
                                                 "O_NOFOLLOW | O_NONBLOCK, regular files only, capped",
    ("tools/shell_changes/edit.py", "os.open"): "the folder's or the layer's root and each folder on the way to "
                                                "a changed file, as directory descriptors, O_NOFOLLOW; the file "
                                                "itself through files.py's read_at",
    ("tools/shell_changes/accept.py", "os.open"): "the real folder's root as a directory descriptor; a layer file "
                                                  "copied into place beneath descriptors, O_NOFOLLOW",
    ("tools/shell_changes/accept.py", "os.readlink"): "a symlink of the layer, recreated as a symlink (never "
                                                      "followed)",
    ("tools/shell_changes/accept.py", "os.fdopen"): "wraps the two descriptors of that copy",
    # undo afterwards (REQ-BASH-040/041): the before copies live in the server's own data directory (undo/, 0700,
    # ids the server made and checks); the workspace is read beneath directory descriptors, O_NOFOLLOW. What is
    # read goes back to the disk or to the editor, never to the model (it is told the paths only)
    ("tools/shell_changes/kept.py", "os.walk"): "walks a before copy just moved into the data directory's undo/ "
                                                "folder (no symlinked directory followed)",
    ("tools/shell_changes/kept.py", "os.open"): "digests and writes the server's own kept copies, O_NOFOLLOW",
    ("tools/shell_changes/kept.py", "os.fdopen"): "wraps the descriptor of a kept copy or manifest it creates "
                                                  "(O_CREAT | O_EXCL, 0600)",
    ("tools/shell_changes/kept.py", "os.readlink"): "a symlink among the kept copies, recorded (never followed)",
    ("tools/shell_changes/kept.py", "home.iterdir"): "lists a conversation's kept sets (its undo/ folder) to keep "
                                                     "them within the bound",
    ("tools/shell_changes/record.py", "os.readlink"): "what a symlink the accepted set left points to, recorded "
                                                      "(never followed); the undo checks it again through "
                                                      "descriptors",
    ("tools/shell_changes/restore.py", "os.open"): "a folder beneath the workspace's descriptor, O_NOFOLLOW, to "
                                                   "list it or write a restored file into it",
    ("tools/shell_changes/restore.py", "os.listdir"): "names in a folder the set made, through its descriptor, to "
                                                      "see that nothing else was put there since",
    ("tools/shell_changes/restore.py", "os.fdopen"): "wraps the descriptor of a restored file's temporary copy it "
                                                     "creates (O_CREAT | O_EXCL | O_NOFOLLOW)",
    ("tools/shell_changes/restore.py", "os.readlink"): "a symlink in the workspace beneath a descriptor, compared "
                                                       "with what the set left (never followed)",
    # leftover layers swept (REQ-BASH-042): the server's own layers directory, never through a symlink
    ("sandbox/overlay.py", "os.open"): "the layers directory it made, as a descriptor (O_NOFOLLOW) to flock it",
    ("sandbox/layer_sweep.py", "os.scandir"): "lists the layers directory through that descriptor: names only",
    ("sandbox/layer_sweep.py", "os.open"): "a layer beneath that descriptor (O_NOFOLLOW) and its held file, to "
                                           "try the flock a live server holds",
    # the sandbox: it builds and runs the kernel's rules; every path here is the system's, not steered
    ("sandbox/launcher/restrict.py", "os.open"): "opens each Landlock rule's path (O_PATH) to make the rule, and "
                                                 "the private /tmp's kept directories to bind them",
    ("sandbox/launcher/restrict.py", "open"): "writes its own /proc/self uid_map, gid_map and setgroups",
    ("sandbox/launcher/child.py", "os.open"): "the command's stdin: /dev/null",
    ("sandbox/launcher/child.py", "open"): "joins the cgroups it made (cgroup.procs)",
    ("sandbox/launcher/child.py", "os.listdir"): "lists its own /proc/self/fd to close the descriptors",
    ("sandbox/launcher/cgroup.py", "open"): "the files of the cgroups it made",
    ("sandbox/launcher/measure.py", "open"): "/proc/<pid>/stat of its tree, /proc/loadavg",
    ("sandbox/launcher/measure.py", "os.listdir"): "lists /proc to find its tree",
    ("sandbox/launcher/measure.py", "os.scandir"): "sums the disk use of a command's scratch tree, never through a "
                                                   "symlink",
    ("sandbox/limits.py", "os.scandir"): "counts the server's own processes in /proc",
    ("sandbox/limits.py", "open"): "reads /proc/<pid>/stat of the server's own processes",
    ("sandbox/cgroups.py", "Path('/proc/self/cgroup').read_text"): "the server's own cgroup, a fixed path",
    ("sandbox/cgroups.py", "Path('/proc/self/mountinfo').read_text"): "the server's own mounts, a fixed path",
    ("sandbox/cgroups.py", "(parent / 'cgroup.subtree_control').read_text"): "the cgroup it manages",
    ("sandbox/cgroups.py", "procs.read_text"): "cgroup.procs of the command cgroups it made",
    ("sandbox/cgroups.py", "parent.iterdir"): "lists the command cgroups it made, to remove stale ones",
    ("sandbox/scratch.py", "os.open"): "removes a scratch directory it made, level by level (O_NOFOLLOW)",
    ("sandbox/scratch.py", "os.scandir"): "lists a scratch directory it removes (by descriptor)",
    ("sandbox/backstop.py", "os.scandir"): "lists /proc to find what still holds a command's output pipe",
    ("sandbox/backstop.py", "os.listdir"): "lists /proc/<pid>/fd of a process that may hold the output pipe",
    ("sandbox/backstop.py", "os.readlink"): "reads the /proc/<pid>/fd links of those processes (pipe:[inode])",
    ("sandbox/background.py", "base.iterdir"): "lists the background log directories of server processes",
    ("sandbox/background.py", "open"): "opens a background command's output file (in the data directory) to append",
    ("sandbox/denylist.py", "os.scandir"): "lists the siblings along a denied path to build Landlock rules: names "
                                           "and types only, never contents",
    ("sandbox/build.py", "HELPER_SOURCE.read_bytes"): "the sandbox helper's C source, shipped in the package",
    # the agent route's hermetic engine: its own scratch files, made by the server
    ("agent/worker_process.py", "os.open"): "opens the reply FIFO it made itself (O_NONBLOCK) in its scratch dir, "
                                            "and /proc/<pid>/stat of the worker its launcher reported (its parent)",
    ("agent/worker.py", "os.open"): "the sandboxed worker opens /dev/null",
    ("agent/worker.py", "os.fdopen"): "the worker wraps its own stdout descriptor",
    ("agent/worker.py", "open"): "the sandboxed worker reads the unit and FIFO the engine made in its scratch dir",
    # writes and stores: they open to write what the server made, not to read what someone steers
    ("atomic.py", "os.fdopen"): "atomic writes: the temporary file mkstemp made",
    ("store/database.py", "os.open"): "creates the database file (O_CREAT | O_EXCL, 0600) in the data directory",
    ("client/workspace_edit.py", "open"): "the terminal client plays the editor: it reads the file a workspace "
                                          "edit the user approved changes, as any editor does; not the server",
    ("client/workspace_edit.py", "os.fdopen"): "the terminal client writes an edited file through mkstemp",
    ("client/workspace_edit.py", "Path('/proc/self/status').read_text"): "the terminal client's own umask, a "
                                                                          "fixed path",
    ("llm/images.py", "PILImage.open"): "decodes image bytes already in memory (io.BytesIO), not a path",
    ("agent/artifacts.py", "self.directory.iterdir"): "lists the artifact directory's own scope folders (c-<hash>) "
                                                      "to delete those of gone conversations; reads no content "
                                                      "and removes no symlink",
    # listings: names, types and sizes, never contents (the deny-read list applies: REQ-BASH-026)
    ("tools/readonly.py", "os.scandir"): "list_directory lists a directory resolve_in_workspace confined",
    ("tools/readonly.py", "os.readlink"): "list_directory shows where a symlink leads (its text, not the target)",
    ("tools/readonly.py", "os.walk"): "search_files walks names (no symlinked directory); each file is then "
                                      "read by the confined reader",
}


def _openers(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in OPENERS_BY_NAME:
            found.append((node.lineno, f.id))
        elif isinstance(f, ast.Attribute) and (
                f.attr in OPENERS_BY_METHOD
                or (isinstance(f.value, ast.Name) and (f.value.id, f.attr) in OPENERS_BY_MODULE)):
            found.append((node.lineno, ast.unparse(f)))
    return found


def _all_openers() -> dict[tuple[str, str], list[int]]:
    calls: dict[tuple[str, str], list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == "confined.py":
            continue
        for line, call in _openers(path):
            calls.setdefault((module, call), []).append(line)
    return calls


@pytest.mark.req("REQ-READ-001")
def test_no_module_but_the_confined_reader_opens_a_path() -> None:
    calls = _all_openers()
    unexplained = [f"phoenix_lsp/{module}:{lines[0]}: {call}" for (module, call), lines in calls.items()
                   if (module, call) not in ALLOWED]
    assert not unexplained, (
        "these read files without the confined reader (phoenix_lsp/confined.py): read through it, or, when the "
        "path is not one a user, a repository, a model or another process can steer, add the call to ALLOWED "
        "with the reason:\n" + "\n".join(unexplained))


@pytest.mark.req("REQ-READ-001")
def test_every_allowed_call_still_exists() -> None:
    calls = _all_openers()
    stale = [f"{module}: {call}" for module, call in ALLOWED if (module, call) not in calls]
    assert not stale, "remove these from ALLOWED (the code no longer makes the call):\n" + "\n".join(stale)


@pytest.mark.req("REQ-READ-001")
def test_the_scan_sees_each_spelling_of_an_open(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("import os, io\nfrom pathlib import Path\n"
                      "open('a')\nos.open('b', 0)\nio.open('c')\nPath('d').read_text()\np.read_bytes()\n"
                      "p.open()\nos.scandir('e')\nos.fdopen(3)\nos.walk('f')\nast.walk(tree)\nx.read()\n")
    assert [call for _, call in _openers(sample)] == [
        "open", "os.open", "io.open", "Path('d').read_text", "p.read_bytes", "p.open", "os.scandir", "os.fdopen",
        "os.walk"]
