"""What a scoped Always Allow rule never covers unseen (REQ-PERM-026): the option kinds of one simple command
(``core/options.py``) and the rule derived from an approved call, as tables and a property. Pure and fast: the
mutation check of ``options`` and ``rules`` runs this file against each mutant."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.core.options import COMMANDS, DYNAMIC, GLOB, WRITTEN_OPERAND, option_kinds, sed_script_kinds, spec_for
from phoenix_lsp.core.rules import AllowRule, covers, scopes_for
from phoenix_lsp.core.values import ToolUse


def words(text: str) -> tuple[str, ...]:
    """A command's words split on spaces; ``%`` marks a word bash expands at run time."""
    return tuple(DYNAMIC + w[1:] if w.startswith("%") else w for w in text.split(" "))


def kinds(text: str) -> set[str]:
    return set(option_kinds(words(text)))


def call(*commands: str) -> ToolUse:
    return ToolUse("t1", "bash", {"command": "; ".join(commands)}, tuple(words(c) for c in commands))


def derived(*commands: str) -> AllowRule:
    """The rule Always Allow adds (the narrowest scope) when the user approves ``commands``."""
    return scopes_for((), call(*commands))[0]


# ------------------------------------------------------------------------------------------- option kinds

KINDS = [
    # read-only calls: nothing a rule must have seen
    ("git log --oneline -1", set()),
    ("git log -n5 --format=%h --author alice", set()),
    ("git log -n 5", set()),  # a value in the next word
    ("git -C dir --no-pager log -1", set()),  # git's own options, then the subcommand's
    ("git status -sb", set()),
    ("git grep -o -C 3 foo", set()),  # git grep's -o and -C are safe, and -C takes a value
    ("git log -- -o --output=x", set()),  # after `--`: paths
    ("sort -r -k2 -t, in.txt", set()),
    ("sort -t -- in.txt", set()),  # `--` is -t's value here: then in.txt is an operand
    ("sort -- -o x", set()),  # `--` ends the options: `-o` is a file to sort
    ("sed -n 1,5p in.txt", set()),
    ("sed -e 1p -e $p in.txt", set()),
    ("sed --expression=s/w/e/ in.txt", set()),  # w and e inside the pattern are not commands
    ("find . -name x -type f -print", set()),
    ("find . -name x -o -name y", set()),  # `-o` is find's or
    ("tar -tzf a.tar", set()),
    ("tar tf a.tar", set()),  # old style: the first word is the flags
    ("tar -tf -x", set()),  # -f takes the next word: an archive named -x
    ("less -N f", set()),
    ("man -k printf", set()),
    ("curl -sL -H x http://h", set()),
    ("rg -n -g *.py foo", set()),
    ("uniq -c in", set()),
    ("head -5 f", set()),  # not in the table: no kinds
    ("ls --weird -o x", set()),
    ("sort -", set()),  # `-` is standard input
    ("sort +1 k", set()),  # `+` starts an option of a pager only; and sort has no script
    ("sort -k", set()),  # a value left out at the end
    ("sort --key", set()),
    ("sed -e", set()),  # an empty script
    ("sed --expression", set()),
    ("sort in.txt -- -o", set()),
    ("git log -1 -- path", set()),
    ("tar -tf a.tar x", set()),  # only the first word can be old-style flags
    # writing or program-running options, under one name for every spelling
    ("git log -1 --output=FILE", {"git log --output"}),
    ("git log -1 --output FILE", {"git log --output"}),
    ("git show --ext-diff", {"git show --ext-diff"}),
    ("git -c core.pager=x log", {"git -c"}),
    ("git --config-env=a=b status", {"git --config-env"}),
    ("git grep -Ovim foo", {"git grep --open-files-in-pager"}),
    ("git commit -m x", {"git commit -m"}),
    ("git branch -a", set()),
    ("git branch evil", {"git branch <evil>"}),  # its operand creates a branch
    ("git branch -D main", {"git branch -D", "git branch <main>"}),
    ("git tag -l v1", {"git tag <v1>"}),
    ("git remote -v", set()),
    ("git remote add x u", {"git remote <add>", "git remote <x>", "git remote <u>"}),
    ("git stash drop", {"git stash <drop>"}),  # a subcommand the table does not know: every option
    ("git --frob log", {"git --frob"}),
    ("sort -o F in.txt", {"sort --output"}),
    ("sort -oF in.txt", {"sort --output"}),
    ("sort -ro F in.txt", {"sort --output"}),
    ("sort --output=F in.txt", {"sort --output"}),
    ("sort in.txt -o F", {"sort --output"}),  # options after operands
    ("sort -t -- -o x", {"sort --output"}),  # `--` was -t's value: -o is an option
    ("sort -x -- -o x", {"sort -x", "sort --output"}),  # an unknown option may take `--` as its value
    ("sort --out=F in.txt", {"sort --out"}),  # an abbreviation is a kind of its own
    ("sort --key 2 -o F", {"sort --output"}),
    ("sort -r -- -o F", {"sort --output"}),  # `--` after an option: it may be that option's value
    ("sort --compress-program=gzip x", {"sort --compress-program"}),
    ("/usr/bin/sort -o F", {"/usr/bin/sort --output"}),
    ("sed -i s/a/b/ f", {"sed --in-place"}),
    ("sed -i.bak s/a/b/ f", {"sed --in-place"}),
    ("sed -ni 1p f", {"sed --in-place"}),
    ("sed --in-place=.b s/a/b/ f", {"sed --in-place"}),
    ("sed -f s.sed f", {"sed --file"}),
    ("sed --file=s.sed f", {"sed --file"}),
    ("sed -n 1w%out f", {"sed script w"}),
    ("sed -e 1p -e 2W%x f", {"sed script W"}),
    ("sed -ne 1e f", {"sed script e"}),
    ("sed --expression=s/a/b/w%x f", {"sed script w"}),
    ("sed --expression 1w%x f", {"sed script w"}),
    ("sed -n f", {"sed script ?"}),  # the first operand is the script
    ("find . -exec touch x ;", {"find -exec"}),
    ("find -- . -delete", {"find --", "find -delete"}),  # `--` does not end find's expression
    ("find . -fprint x", {"find -fprint"}),
    ("find . -newerXY x", {"find -newerXY"}),
    ("tar -xf a.tar", {"tar --extract"}),
    ("tar tf a.tar -x", {"tar --extract"}),
    ("tar xzf a.tar", {"tar --extract"}),
    ("tar -tf a.tar --to-command=sh", {"tar --to-command"}),
    ("less -o log f", {"less --log-file"}),
    ("less +!ls f", {"less +!ls"}),
    ("more +/x f", {"more +/x"}),
    ("man -P cat ls", {"man --pager"}),
    ("man -Hfirefox ls", {"man --html"}),
    ("curl -o f http://h", {"curl --output"}),
    ("curl -sO http://h", {"curl --remote-name"}),
    ("wget -O f http://h", {"wget --output-document"}),
    ("rg --pre cat foo", {"rg --pre"}),
    ("rg -z foo", {"rg --search-zip"}),
    ("tee out", {f"tee {WRITTEN_OPERAND}"}),
    ("tee -a", set()),
    ("uniq in out", {f"uniq {WRITTEN_OPERAND}"}),
    ("uniq - out", {f"uniq {WRITTEN_OPERAND}"}),  # `-` is an operand
    # a word bash expands at run time may become an option
    ("sort %*", {f"sort {GLOB}"}),
    ("sort %{-o,x} y", {f"sort {GLOB}"}),
    ("sort %?x", {f"sort {GLOB}"}),
    ("sort %[a]", {f"sort {GLOB}"}),
    ("sort %a*", set()),  # starts with a letter: never an option
    ("sort %-o*", {"sort --output"}),
]


@pytest.mark.req("REQ-PERM-026")
@pytest.mark.parametrize(("text", "expected"), KINDS)
def test_option_kinds(text: str, expected: set[str]) -> None:
    assert kinds(text) == expected


@pytest.mark.req("REQ-PERM-026")
def test_no_words_and_unknown_commands_have_no_kinds() -> None:
    assert option_kinds(()) == frozenset()
    assert spec_for("/bin/sed") is COMMANDS["sed"] and spec_for("sedx") is None


SED = [
    ("1,5p", set()),
    ("$!N;s/\\n/ /g", set()),
    ("/w/Id", set()),
    ("/x/Ie", {"e"}),
    ("/x/Xp", {"?"}),
    ("//e", {"e"}),
    ("1,\\%x%w y", {"w"}),
    ("\\%x%e", {"e"}),
    ("Xp", {"?"}),
    ("s/", set()),
    ("1s\\a\\b\\", {"?"}),
    ("s//x/w y", {"w"}),
    ("y/a/b/I", {"?"}),  # y has no flags
    ("s/a/b/I", set()),
    ("s/a/b/M", set()),
    ("s/a/b/m", set()),
    ("s/a/b/X", {"?"}),
    ("s/a/b/gw x", {"w"}),
    ("2R /etc/hostname", set()),
    ("T end", set()),
    ("s/\\/e/x/", set()),  # an escaped delimiter: `e` is in the pattern
    ("s/\\//x/e", {"e"}),
    ("/a\\/w/p", set()),  # an escaped delimiter stays in the address
    ("\\%w%p", set()),
    ("y/we/ew/", set()),
    ("a w text", set()),  # text up to the end of the command
    ("1r /etc/hostname", set()),  # reading a file prints it: not a write
    ("b end;:end", set()),
    ("0~3d", set()),
    ("# w comment\np", set()),
    ("q5", set()),
    ("s/a/b/w out", {"w"}),
    ("s/a/b/gpw out", {"w"}),
    ("s/a/b/e", {"e"}),
    ("s|a|b|e", {"e"}),
    ("s/a/b/2;w x", {"w"}),
    ("a x;w y", {"w"}),  # a command's text ends at `;` for this reader: it finds more, never less
    ("1e id", {"e"}),
    ("W x", {"W"}),
    ("e", {"e"}),
    ("/x/ { w y\n}", {"w"}),
    ("k", {"?"}),
    ("s", {"?"}),
    ("s\\a\\b\\", {"?"}),
    ("\\", {"?"}),
    ("/unterminated", set()),
]


@pytest.mark.req("REQ-PERM-026")
@pytest.mark.parametrize(("script", "expected"), SED)
def test_sed_script_kinds(script: str, expected: set[str]) -> None:
    assert sed_script_kinds(script) == expected


# ------------------------------------------------------------------------------------------ derived rules


@pytest.mark.req("REQ-PERM-026", "REQ-PERM-020")
def test_a_rule_names_the_kinds_it_covers_and_covers_nothing_more() -> None:
    rule = derived("sort -o a.txt in.txt")
    assert rule == AllowRule("bash", (("sort",),), ("sort --output",))
    assert rule.rule == "sort * (with sort --output)" and rule.label == "bash: sort * (with sort --output)"
    assert covers((rule,), call("sort -o b.txt other.txt"))  # the kind the user saw, with any value
    assert covers((rule,), call("sort -r x"))
    assert not covers((rule,), call("sort --compress-program=sh x"))
    plain = derived("sort -r in.txt")
    assert plain.rule == "sort *" and plain.options == ()
    assert not covers((plain,), call("sort -o F in.txt"))


@pytest.mark.req("REQ-PERM-026")
def test_a_list_derives_one_rule_with_the_kinds_of_every_command_it_names() -> None:
    rule = derived("git log --output=x", "sed -n 1w%y f")
    assert rule.prefixes == (("git", "log"), ("sed",))
    assert rule.options == ("git log --output", "sed script w")
    assert rule.rule == "git log *; sed * (with git log --output, sed script w)"
    # the kinds are named with their command: sed's `w` does not let git write, nor git's --output sed
    assert not covers((rule,), call("git log --ext-diff"))
    assert covers((rule,), call("git log -1", "sed 2w%z f"))
    existing = AllowRule("bash", (("git", "log"),))
    assert scopes_for((existing,), call("git log -1", "sort -o F")) == (
        AllowRule("bash", (("sort",),), ("sort --output",)),
        AllowRule("bash"),
    )
    assert scopes_for((existing,), call("git log --output=F"))[0] == AllowRule(
        "bash", (("git", "log"),), ("git log --output",)
    )


@pytest.mark.req("REQ-PERM-026")
def test_a_git_rule_never_covers_an_action_or_a_name_its_call_did_not_have() -> None:
    assert not covers((derived("git branch -a"),), call("git branch evil"))
    assert not covers((derived("git remote -v"),), call("git remote add evil http://h"))
    assert not covers((derived("git stash list"),), call("git stash drop"))
    assert covers((derived("git stash list"),), call("git stash list"))
    assert derived("git stash list").rule == "git stash * (with git stash <list>)"


@pytest.mark.req("REQ-PERM-026")
def test_find_gets_a_prefix_scope_now_that_its_writing_primaries_are_kinds() -> None:
    assert derived("find . -name x").rule == "find *"
    assert not covers((derived("find . -name x"),), call("find . -exec rm x ;"))
    assert not covers((derived("find . -name x"),), call("find . -delete"))


# ---------------------------------------------------------------------------------------------- property

#: read-only calls (values joined to their options, so an inserted word is never taken as one)
BASES = [
    ("git", "log", "--oneline", "-1"), ("git", "show", "--stat", "HEAD"), ("git", "diff", "--cached"),
    ("git", "grep", "-n", "foo"), ("git", "status", "-s"), ("git", "branch", "-a"),
    ("sort", "-r", "-k2", "in.txt"), ("sed", "-n", "1p", "in.txt"), ("find", ".", "-name", "x"),
    ("tar", "-tz", "-fa.tar"), ("less", "-N", "f"), ("man", "-k", "x"), ("curl", "-sL", "http://h"),
    ("wget", "-q", "http://h"), ("rg", "-n", "foo"), ("uniq", "-c"), ("more", "f"), ("tee", "-a"),
]


def _forms(name: str, option: str, values: frozenset[str]) -> list[tuple[str, ...]]:
    """How a call may spell a writing option of the table."""
    if name == "find":
        return [(option, "touch", "F", ";") if option.startswith(("-exec", "-ok")) else (option, "F")]
    forms: list[tuple[str, ...]] = [(option, "F") if option in values else (option,)]
    if option.startswith("--"):
        forms.append((f"{option}=F",))
    else:
        forms.append(("-v" + option[1:], "F") if option in values else ("-v" + option[1:],))
    return forms


def _writing(base: tuple[str, ...]) -> list[tuple[int, int, tuple[str, ...]]]:
    """Every writing option of ``base``'s command, with the first and last place it may go: git's own options
    before its subcommand (after it, `-c` is another option: `git grep -c` counts)."""
    spec = COMMANDS[base[0]]
    if not spec.subcommands:
        return [(1, len(base), form) for option in spec.writes for form in _forms(base[0], option, spec.values)]
    sub = spec.subcommands[base[1]]
    return [(2, len(base), form) for option in sub.writes for form in _forms(base[0], option, sub.values)] + [
        (1, 1, form) for option in spec.writes for form in _forms(base[0], option, spec.values)
    ]


WRITING = [(base, *place) for base in BASES for place in _writing(base)]


@pytest.mark.req("REQ-PERM-026")
@settings(max_examples=300, deadline=None)
@given(st.sampled_from(WRITING), st.integers(0, 8))
def test_adding_a_writing_option_to_a_covered_call_never_keeps_it_covered(
    case: tuple[tuple[str, ...], int, int, tuple[str, ...]], place: int
) -> None:
    base, first, last, form = case
    rule = scopes_for((), ToolUse("t1", "bash", {}, (base,)))[0]
    assert covers((rule,), ToolUse("t1", "bash", {}, (base,))), "a rule must cover the call it was derived from"
    where = first + place % (last - first + 1)
    changed = (*base[:where], *form, *base[where:])
    assert not covers((rule,), ToolUse("t1", "bash", {}, (changed,))), f"{changed} is covered by {rule.label}"
