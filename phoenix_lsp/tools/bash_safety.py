"""Command safety checks (REQ-BASH-007): refuse blind `git add`, force pushes and catastrophic `rm -rf`.

The command is parsed with tree-sitter and its bash grammar (not regular expressions), so a dangerous
command is found wherever bash would run it: behind `sudo`/`env`/`nice`/`xargs`..., in pipelines, `&&`/`||`
/`;` lists, subshells, `{ }` groups, if/for/while/case bodies, functions, `$( )` and backticks, and inside
the strings given to `bash -c`, `sh -c`, `su -c`, `env -S` and `eval` (parsed again, recursively).

Why tree-sitter-bash rather than bashlex: it covers the whole bash grammar (case, functions, `[[ ]]`,
here-documents, process substitution...), which bashlex does not (it raises on several of these, and the
rule "unparseable means refused" would then refuse ordinary commands); it is maintained by the
tree-sitter project and used by editors, and its C parser takes microseconds.

This is a guard-rail against mistakes, not the security boundary: the kernel sandbox is.

Over 300 lines: one parse of the command and the checks that walk it (git, rm, scripts fed to a shell) share the
tree-sitter helpers and are reviewed as one rule.
"""

from __future__ import annotations

import codecs
import functools
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass

import tree_sitter
import tree_sitter_bash

MAX_NESTING = 6  # bash -c 'bash -c "..."' depth we follow before refusing


@dataclass(frozen=True)
class SafetyVerdict:
    """Result of checking one command line. `rule` is None when the command may run."""

    rule: str | None = None  # "git_add_blind" | "git_push_force" | "rm_rf_dangerous" | "unparseable"
    message: str | None = None
    offending: str | None = None  # the (sub)command that was refused

    @property
    def allowed(self) -> bool:
        return self.rule is None


ALLOWED = SafetyVerdict()


@functools.cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


# ----------------------------------------------------------------------------------- word evaluation

_UNKNOWN = "\x00"  # stands for text only known at run time (command substitution...)


def _unescape_word(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _unescape_dquoted(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in '$`"\\\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _text(node: tree_sitter.Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _value(node: tree_sitter.Node) -> str:
    """The static value of a shell word, as bash would see it after quote removal. Parameter expansions
    stay literal (`$HOME`), run-time-only parts become _UNKNOWN."""
    kind = node.type
    if kind in ("word", "number"):
        return _unescape_word(_text(node))
    if kind == "raw_string":
        return _text(node)[1:-1]
    if kind == "ansi_c_string":
        body = _text(node)[2:-1]
        try:
            return codecs.decode(body, "unicode_escape")
        except UnicodeDecodeError:
            return body
    if kind == "string":
        parts = []
        for child in node.named_children:
            if child.type == "string_content":
                parts.append(_unescape_dquoted(_text(child)))
            else:
                parts.append(_value(child))
        return "".join(parts)
    if kind == "concatenation":
        return "".join(_value(child) for child in node.children)
    if kind in ("simple_expansion", "expansion"):
        return _text(node)
    return _UNKNOWN


# --------------------------------------------------------------------------------- command extraction


def _commands(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """Every `command` node, however deeply nested (lists, pipelines, subshells, bodies, substitutions)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "command":
            yield current
        stack.extend(reversed(current.children))


def _argv(command: tree_sitter.Node) -> list[str]:
    words: list[str] = []
    for child in command.named_children:
        if child.type == "command_name":
            inner = child.named_children
            words.append(_value(inner[0]) if inner else _text(child))
        elif child.type in ("variable_assignment", "file_redirect", "heredoc_redirect",
                            "herestring_redirect", "comment"):
            continue
        elif words:
            words.append(_value(child))
    return words


def _base(name: str) -> str:
    return posixpath.basename(name)


# Wrappers that run another command: the options that take a value (so the value is not mistaken for
# the wrapped command). Everything else starting with "-" is a flag.
_WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group", "--host",
             "--prompt", "--chdir", "--role", "--type", "--other-user", "--command-timeout"},
    "doas": {"-u", "-C"},
    "env": {"-u", "-C", "--unset", "--chdir"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p", "-P", "-u", "--class", "--classdata"},
    "nohup": set(),
    "time": {"-f", "-o", "--format", "--output"},
    "command": set(),
    "builtin": set(),
    "exec": {"-a"},
    "stdbuf": {"-i", "-o", "-e", "--input", "--output", "--error"},
    "xargs": {"-I", "-i", "-n", "-P", "-d", "-a", "-E", "-e", "-L", "-l", "-s", "--max-args",
              "--max-procs", "--delimiter", "--arg-file", "--replace", "--max-lines", "--max-chars"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "chronic": set(),
    "unbuffer": set(),
    "watch": {"-n", "-d", "--interval"},
}
_SHELLS = {"bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "busybox"}


def _unwrap(argv: list[str], nested: list[str]) -> list[str]:
    """Strip wrapper commands; collect strings that will be run as shell code into `nested`."""
    while argv:
        name = _base(argv[0])
        if name not in _WRAPPERS:
            return argv
        takes_value = _WRAPPERS[name]
        i = 1
        while i < len(argv):
            a = argv[i]
            if a == "--":
                i += 1
                break
            if name == "env" and (a in ("-S", "--split-string") or a.startswith("-S")):
                script = argv[i + 1] if a in ("-S", "--split-string") and i + 1 < len(argv) else a[2:]
                nested.append(script)
                return []
            if name == "env" and "=" in a and not a.startswith("-"):
                i += 1
                continue
            if name == "command" and a in ("-v", "-V"):
                return []  # only looks the command up
            if a.startswith("-") and len(a) > 1:
                i += 2 if a in takes_value else 1
                continue
            break
        if name == "timeout" and i < len(argv):
            i += 1  # the duration
        argv = argv[i:]
    return argv


def _shell_script(argv: list[str]) -> str | None:
    """The script of `bash -c SCRIPT` (any flag cluster containing c: -c, -lc, -ec...), `su -c SCRIPT`,
    `eval WORDS`."""
    name = _base(argv[0])
    if name == "eval":
        return " ".join(argv[1:])
    if name == "busybox" and len(argv) > 1 and argv[1] in _SHELLS:
        argv = argv[1:]
        name = argv[0]
    if name in _SHELLS or name == "su":
        want_script = False
        for a in argv[1:]:
            if want_script and not a.startswith("-"):
                return a
            if a == "--command" or a == "-c" or (a.startswith("-") and not a.startswith("--") and "c" in a):
                want_script = True
            elif a.startswith("--command="):
                return a.split("=", 1)[1]
    return None


def _reads_script_from_stdin(argv: list[str]) -> bool:
    """`bash`, `sudo sh -s`, `bash -x`...: a shell with neither -c nor a script file reads stdin."""
    name = _base(argv[0])
    if name not in _SHELLS or name == "busybox":
        return False
    return all(a.startswith("-") for a in argv[1:]) and _shell_script(argv) is None


def _stdin_scripts(command: tree_sitter.Node) -> list[str]:
    """Shell code fed to a shell's stdin: a here-document, a here-string, or `echo ... |`/`printf ... |`
    right before it in a pipeline."""
    scripts: list[str] = []
    for child in command.named_children:
        if child.type == "herestring_redirect":
            scripts += [_value(c) for c in child.named_children]
    parent = command.parent
    if parent is not None and parent.type == "redirected_statement":
        for child in parent.named_children:
            if child.type == "heredoc_redirect":
                scripts += [_text(c) for c in child.named_children if c.type == "heredoc_body"]
    if parent is not None and parent.type == "pipeline":
        previous = command.prev_named_sibling
        if previous is not None and previous.type == "command":
            words = _argv(previous)
            if words and _base(words[0]) in ("echo", "printf"):
                scripts.append(" ".join(w for w in words[1:] if not w.startswith("-")))
    return [s for s in scripts if _UNKNOWN not in s]


# ------------------------------------------------------------------------------------------- the rules


def _short_flags(a: str) -> str:
    return a[1:] if a.startswith("-") and not a.startswith("--") and len(a) > 1 else ""


def _check_git(argv: list[str]) -> SafetyVerdict | None:
    i = 1
    with_value = {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--super-prefix",
                  "--config-env", "--list-cmds"}
    while i < len(argv) and argv[i].startswith("-"):
        i += 2 if argv[i] in with_value else 1
    if i >= len(argv):
        return None
    sub, args = argv[i], argv[i + 1:]
    shown = "git " + " ".join([sub, *args])
    if sub == "add":
        blind = None
        after_dashdash = False
        for a in args:
            if a == "--":
                after_dashdash = True
                continue
            is_option = not after_dashdash and a.startswith("-")
            all_flag = is_option and (a == "--all" or (a.startswith("--al") and "all".startswith(a[2:]))
                                      or "A" in _short_flags(a))
            everything = not is_option and a.rstrip("/") in ("", ".", "*", ":/", ":")
            if all_flag or everything:
                blind = a
        if blind is not None:
            return SafetyVerdict(
                "git_add_blind",
                f"Refused by the safety check: `git add {blind}` stages every change in the working tree, "
                "including files nobody meant to commit (build output, secrets, local settings). Name the "
                "files instead, e.g. `git add src/app.py tests/test_app.py` (run `git status` to list them).",
                shown)
    if sub == "push":
        for a in args:
            if a in ("--force", "-f") or "f" in _short_flags(a) or (a.startswith("+") and len(a) > 1):
                what = "a `+refspec`" if a.startswith("+") else f"`{a}`"
                return SafetyVerdict(
                    "git_push_force",
                    f"Refused by the safety check: `git push` with {what} overwrites the remote branch and "
                    "can destroy commits other people pushed. Use `git push --force-with-lease` (it refuses "
                    "if the remote moved since you last fetched), or push without force.",
                    shown)
    return None


_HOME_FORMS = ("~", "$HOME", "${HOME}")


def _dangerous_rm_target(target: str) -> bool:
    if _UNKNOWN in target:
        return False
    t = target
    while t.startswith("./"):
        t = t[2:]
    if t not in ("/", "//") and t.endswith("/"):
        t = t.rstrip("/") or "/"
    if t in ("/", "//", "/*", "*", ".*", ".git"):
        return True
    if t in _HOME_FORMS or any(t in (h + "/", h + "/*") for h in _HOME_FORMS):
        return True
    return posixpath.basename(t) == ".git"


def _check_rm(argv: list[str]) -> SafetyVerdict | None:
    recursive = force = False
    no_preserve = False
    targets = []
    options_done = False
    for a in argv[1:]:
        if not options_done and a == "--":
            options_done = True
        elif not options_done and a.startswith("--"):
            recursive |= a in ("--recursive", "--recurs", "--recursi", "--recursiv")
            force |= a == "--force"
            no_preserve |= a == "--no-preserve-root"
        elif not options_done and a.startswith("-") and len(a) > 1:
            flags = a[1:]
            recursive |= "r" in flags or "R" in flags
            force |= "f" in flags
        else:
            targets.append(a)
    if not (recursive and force):
        return None
    bad = [t for t in targets if _dangerous_rm_target(t)]
    if no_preserve:
        bad = bad or ["--no-preserve-root"]
    if not bad:
        return None
    return SafetyVerdict(
        "rm_rf_dangerous",
        f"Refused by the safety check: `rm -rf {bad[0]}` would delete the filesystem root, the home "
        "directory, the repository's .git or everything a bare wildcard matches. Delete the specific paths "
        "you mean instead (e.g. `rm -rf build/ dist/`).",
        " ".join(argv))


def _parse_error(root: tree_sitter.Node, source: str) -> SafetyVerdict:
    stack = [root]
    where = None
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            where = node
            break
        stack.extend(reversed(node.children))
    if where is None:
        detail = "the shell parser reported an error"
    else:
        line, col = where.start_point
        snippet = source.encode()[where.start_byte:where.start_byte + 40].decode("utf-8", "replace")
        detail = (f"missing `{where.type}`" if where.is_missing else "syntax error") + \
            f" at line {line + 1}, column {col + 1}, near `{snippet.strip() or 'end of input'}`"
    return SafetyVerdict(
        "unparseable",
        f"Refused by the safety check: the command could not be parsed ({detail}), so it could not be "
        "checked. Fix the syntax or split it into simpler commands.",
        source)


def check_command(command: str, _depth: int = 0) -> SafetyVerdict:
    """Check one command line (REQ-BASH-007). Pure and fast; works in every mode, sandbox or not."""
    if _depth > MAX_NESTING:
        return SafetyVerdict(
            "unparseable",
            f"Refused by the safety check: shell commands nested more than {MAX_NESTING} levels deep "
            "(bash -c inside bash -c ...) are not checked. Run the inner command directly.", command)
    tree = _parser().parse(command.encode("utf-8", "surrogateescape"))
    root = tree.root_node
    if root.has_error:
        return _parse_error(root, command)
    for node in _commands(root):
        nested: list[str] = []
        argv = _unwrap(_argv(node), nested)
        for nested_script in nested:
            verdict = check_command(nested_script, _depth + 1)
            if not verdict.allowed:
                return verdict
        if not argv:
            continue
        script = _shell_script(argv)
        scripts = [script] if script is not None and _UNKNOWN not in script else []
        if _reads_script_from_stdin(argv):
            scripts += _stdin_scripts(node)
        for text in scripts:
            verdict = check_command(text, _depth + 1)
            if not verdict.allowed:
                return verdict
        name = _base(argv[0])
        found = _check_git(argv) if name == "git" else _check_rm(argv) if name == "rm" else None
        if found is not None:
            return found
    return ALLOWED
