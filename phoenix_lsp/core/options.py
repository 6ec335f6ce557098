"""What a scoped Always Allow rule never covers unseen: options that write a file or run a program (REQ-PERM-026).

A prefix rule (``bash: git log *``) is derived from one approved call. It covers later calls with the same prefix
only when each of their *option kinds* was in the approved call too (``rules.py``). ``option_kinds`` reads the
kinds from one simple command's words (already parsed outside the core by ``tools/bash_scope.py``):

- for a command listed in ``COMMANDS`` below: every option that is not known to only choose what is read or how
  it is printed — its writing and program-running options (``sort -o``, ``git log --output``, ``find -exec``,
  ``sed -i`` and the ``w``/``W``/``e`` commands of its script, ...) and every option the table does not know;
- for the git subcommands whose operands name what they do or create (``git remote add``, ``git branch NEW``,
  ``git stash drop``, ``git config KEY VALUE``): each operand, as ``<operand>``;
- for any other command: nothing (its options are not judged; the rule's prefix is all it asks).

Options are read the way GNU getopt reads them: ``--name=value`` and ``--name value``, combined short flags
(``-no`` holds ``-o``), a short option's value joined (``-oFILE``) or in the next word, options after operands,
and ``--`` ending the options — unless the word before it may be an option's value (an option the table does
not know), so ``sort -t -- -o x`` still counts ``-o``. An abbreviated long option (``--out``) is not the option
it abbreviates: it is an unknown option, a kind of its own. A word bash expands at run time that may expand to
an option (a glob or brace starting with ``*``, ``?``, ``[`` or ``{``) is the kind ``<glob>``.

The table is data, here and nowhere else. A kind is named with its command (and subcommand for git):
``sort --output``, ``git log --output``, ``sed script w``.

Over 300 lines: one table of option specs per command and the reader of sed scripts, a pure module whose parts are
read together.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

#: Marks a parsed word whose value bash decides at run time (``*.py``, ``{a,b}``, ``~``): set by the parser.
DYNAMIC = "\x00"
#: The kind of a word bash expands at run time that may expand to an option (a file named ``-oX``).
GLOB = "<glob>"
#: The kind of an operand that names a file the command writes (``tee FILE``, ``uniq IN OUT``).
WRITTEN_OPERAND = "<file written>"

_COUNT = re.compile(r"-[0-9]+\Z")  # `head -5`, `git log -1`: a count, never a writing option


@dataclass(frozen=True, slots=True)
class Spec:
    """How one command reads its options: what is safe, what writes or runs, and its few odd rules."""

    safe: frozenset[str] = frozenset()  # options that only choose what is read or how it is printed
    values: frozenset[str] = frozenset()  # options whose value is the next word (or the rest of a short group)
    writes: Mapping[str, str] = field(default_factory=dict)  # option -> its kind: writes a file or runs a program
    joined: frozenset[str] = frozenset()  # short options whose optional value can only be joined (`sed -i.bak`)
    ends: bool = True  # `--` ends the options
    long_single_dash: bool = False  # find: `-name` is one option, not -n -a -m -e
    plus: bool = False  # less, more: `+cmd` runs a command of the pager
    dashless_first: bool = False  # tar: `tar xf a.tar` is `tar -x -f a.tar`
    written_operand: int | None = None  # the index of the first operand that names a file written
    script: frozenset[str] = frozenset()  # sed: options whose value is a script (else the first operand is one)
    operand_kinds: bool = False  # git branch, remote...: each operand (a name to create, an action) is a kind
    subcommands: Mapping[str, Spec] = field(default_factory=dict)  # git: the spec after its subcommand


def _s(text: str) -> frozenset[str]:
    return frozenset(text.split())  # pragma: no mutate (runs only while the table is built, at import)


# ------------------------------------------------------------------------------------------------ the table

# git's log, show and diff share the diff and revision options
_GIT_REVISIONS = _s(
    "--oneline --graph --decorate --no-decorate --all --stat --numstat --shortstat --name-only --name-status -p -u "
    "--patch --no-patch -s --format --pretty --abbrev-commit --no-abbrev-commit --abbrev --no-abbrev --color "
    "--no-color -n --max-count --skip --since --until --after --before --author --committer --grep -i "
    "--regexp-ignore-case --all-match --invert-grep -E -F -P --extended-regexp --fixed-strings --perl-regexp "
    "--reverse --first-parent --merges --no-merges --follow -L -S -G --pickaxe-all --pickaxe-regex --date "
    "--relative-date --word-diff --color-words --color-moved --cached --staged -w -b --ignore-space-change "
    "--ignore-all-space --ignore-blank-lines -U --unified --summary --raw --full-history --topo-order "
    "--date-order --left-right --cherry-pick --boundary -M -C --find-renames --find-copies --no-renames "
    "--diff-filter --no-ext-diff --no-textconv --check --exit-code --quiet -q --branches --tags --remotes "
    "--no-walk --simplify-by-decoration --source --mailmap --use-mailmap --full-index --binary -z --histogram "
    "--patience --minimal --dirstat --submodule --no-prefix --relative -R --text -a -W --function-context "
    "--notes --no-notes -g --walk-reflogs --parents --children --count --ancestry-path --name-status "
    "--merge-base --no-index -m --cc --dd --remerge-diff --diff-merges --show-linear-break --expand-tabs"
)
_GIT_REVISION_VALUES = _s("-n --max-count --skip --since --until --after --before --author --committer --grep -L "
                          "-S -G --diff-filter --date")
_GIT_REVISION_WRITES = {"--output": "--output", "--ext-diff": "--ext-diff", "--textconv": "--textconv"}

_GIT = Spec(
    # before the subcommand: `-c name=value` and `--config-env` can name a program to run (a pager, a diff tool)
    safe=_s("--no-pager -P --paginate -p -C --git-dir --work-tree --bare --no-replace-objects --literal-pathspecs "
            "--no-optional-locks --glob-pathspecs --noglob-pathspecs --icase-pathspecs"),
    values=_s("-C --git-dir --work-tree -c --config-env"),
    writes={"-c": "-c", "--config-env": "--config-env", "--exec-path": "--exec-path"},
    subcommands={
        "log": Spec(_GIT_REVISIONS, _GIT_REVISION_VALUES, _GIT_REVISION_WRITES),
        "show": Spec(_GIT_REVISIONS, _GIT_REVISION_VALUES, _GIT_REVISION_WRITES),
        "diff": Spec(_GIT_REVISIONS, _GIT_REVISION_VALUES, _GIT_REVISION_WRITES),
        "rev-list": Spec(_GIT_REVISIONS, _GIT_REVISION_VALUES, _GIT_REVISION_WRITES),
        # what these do is named by an operand (`git remote add`, `git branch NEW`, `git config KEY VALUE`)
        **{sub: Spec(operand_kinds=True) for sub in ("stash", "config", "worktree", "submodule", "notes")},
        "remote": Spec(_s("-v --verbose"), operand_kinds=True),
        "status": Spec(_s("-s --short -b --branch --porcelain --long -v --verbose -u --untracked-files --ignored "
                          "-z --ignore-submodules --column --no-column --ahead-behind --no-ahead-behind "
                          "--show-stash --renames --no-renames")),
        "branch": Spec(_s("-a --all -r --remotes -v -vv --verbose -l --list --contains --no-contains --merged "
                          "--no-merged --sort --format --show-current --points-at --color --no-color --column "
                          "--no-column -i --ignore-case"),
                       _s("--contains --no-contains --merged --no-merged --sort --format --points-at"),
                       operand_kinds=True),
        "grep": Spec(
            _s("-n --line-number -i --ignore-case -w --word-regexp -v --invert-match -l --files-with-matches -L "
               "--files-without-match -c --count -e -E -F -P -G --extended-regexp --fixed-strings --perl-regexp "
               "--basic-regexp -h -H --cached --untracked --no-index -o --only-matching -A -B -C --context "
               "--after-context --before-context --max-depth -q --quiet -z --null --heading --break -p "
               "--show-function -W --function-context --color --no-color --name-only --all-match --and --or "
               "--not -I --recurse-submodules --column -r --recursive --full-name -a --text --threads"),
            _s("-e -A -B -C --context --after-context --before-context --max-depth --threads"),
            {"-O": "--open-files-in-pager", "--open-files-in-pager": "--open-files-in-pager"},
            joined=_s("-O"),
        ),
        "blame": Spec(_s("-L -w -M -C -e -s -l -t -p --porcelain --line-porcelain --date --root --show-stats -f "
                         "--show-name -n --show-number --since --incremental --reverse -b --abbrev --color-lines "
                         "--color-by-age --ignore-rev --ignore-revs-file --first-parent --show-email"),
                      _s("-L --date --since --ignore-rev --ignore-revs-file")),
        "rev-parse": Spec(_s("--abbrev-ref --short --verify -q --quiet --show-toplevel --git-dir --git-common-dir "
                             "--absolute-git-dir --is-inside-work-tree --is-inside-git-dir --is-bare-repository "
                             "--symbolic --symbolic-full-name --all --branches --tags --remotes --show-prefix "
                             "--show-cdup --sq --revs-only --no-revs --flags --no-flags --default "
                             "--show-superproject-working-tree --show-object-format --path-format"),
                          _s("--default")),
        "ls-files": Spec(_s("-c --cached -d --deleted -m --modified -o --others -i --ignored -s --stage -u "
                            "--unmerged -k --killed -z -t -v --exclude-standard --exclude -x --exclude-from "
                            "--full-name --error-unmatch --directory --no-empty-directory --recurse-submodules "
                            "--abbrev --format --eol --deduplicate --sparse"),
                         _s("--exclude -x --exclude-from --format")),
        "ls-tree": Spec(_s("-r -t -d -l --long --name-only --name-status --full-name --full-tree -z --abbrev "
                           "--object-only --format")),
        "describe": Spec(_s("--tags --always --abbrev --long --dirty --broken --all --exact-match --match "
                            "--exclude --contains --first-parent --candidates"),
                         _s("--match --exclude --candidates")),
        "tag": Spec(_s("-l --list -n --sort --contains --no-contains --points-at --merged --no-merged --format "
                       "--column --no-column -i --ignore-case --color"),
                    _s("--sort --contains --no-contains --points-at --merged --no-merged --format"),
                    operand_kinds=True),
        "shortlog": Spec(_s("-s --summary -n --numbered -e --email -c --committer --all --no-merges --since "
                            "--until --author --format --group -w"),
                         _s("--since --until --author --format --group")),
        "cat-file": Spec(_s("-p -t -s -e --batch --batch-check --batch-all-objects --textconv --filters "
                            "--follow-symlinks --buffer -Z")),
        "show-ref": Spec(_s("--heads --tags --branches -d --dereference -s --hash --abbrev --verify -q --quiet "
                            "--head --exists")),
        "reflog": Spec(_GIT_REVISIONS, _GIT_REVISION_VALUES, _GIT_REVISION_WRITES),
    },
)

_SED_SAFE = _s("-n --quiet --silent -s --separate -E -r --regexp-extended -z --null-data -u --unbuffered --posix "
               "--debug --sandbox -l --line-length -b --binary --follow-symlinks -e --expression")

COMMANDS: Mapping[str, Spec] = {
    "git": _GIT,
    "sort": Spec(
        _s("-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z -k -t -S -T --key --field-separator "
           "--buffer-size --temporary-directory --parallel --ignore-leading-blanks --dictionary-order "
           "--ignore-case --general-numeric-sort --ignore-nonprinting --month-sort --human-numeric-sort "
           "--numeric-sort --random-sort --reverse --version-sort --check --merge --stable --unique "
           "--zero-terminated --sort --debug"),
        _s("-k -t -S -T --key --field-separator --buffer-size --temporary-directory --parallel --sort -o --output "
           "--compress-program --random-source"),
        # --compress-program runs a program; --files0-from reads the names to sort from a file the call names
        {"-o": "--output", "--output": "--output", "--compress-program": "--compress-program",
         "--random-source": "--random-source"},
    ),
    "sed": Spec(
        _SED_SAFE,
        _s("-l --line-length -e --expression -f --file"),
        {"-i": "--in-place", "--in-place": "--in-place", "-f": "--file", "--file": "--file"},
        joined=_s("-i"),
        script=_s("-e --expression -f --file"),  # a script file's name read as a script only finds more
    ),
    "find": Spec(
        _s("-H -L -P -name -iname -type -xtype -path -ipath -wholename -iwholename -regex -iregex -regextype "
           "-lname -ilname -maxdepth -mindepth -size -empty -mtime -mmin -atime -amin -ctime -cmin -newer -anewer "
           "-cnewer -used -perm -user -group -uid -gid -nouser -nogroup -links -inum -samefile -readable "
           "-writable -executable -follow -xdev -mount -depth -d -daystart -noleaf -ignore_readdir_race "
           "-noignore_readdir_race -true -false -prune -quit -print -print0 -printf -ls -not -a -and -o -or "
           "-fstype -context"),
        writes={"-exec": "-exec", "-execdir": "-execdir", "-ok": "-ok", "-okdir": "-okdir", "-delete": "-delete",
                "-fprint": "-fprint", "-fprint0": "-fprint0", "-fprintf": "-fprintf", "-fls": "-fls"},
        ends=False,
        long_single_dash=True,
    ),
    "tar": Spec(
        _s("-t --list -v --verbose -z --gzip --gunzip -j --bzip2 -J --xz --zstd --lzma -a --auto-compress -f "
           "--file -O --to-stdout --wildcards --no-wildcards --exclude --anchored --no-anchored --strip-components "
           "--numeric-owner -p --same-permissions --utc --full-time --show-transformed-names --quiet"),
        _s("-f --file --exclude --strip-components --to-command -I --use-compress-program -F --info-script "
           "--new-volume-script -g --listed-incremental --checkpoint-action --rsh-command --rmt-command"),
        {"-x": "--extract", "--extract": "--extract", "--get": "--extract", "-c": "--create", "--create": "--create",
         "-r": "--append", "--append": "--append", "-u": "--update", "--update": "--update", "-A": "--catenate",
         "--catenate": "--catenate", "--concatenate": "--catenate", "--delete": "--delete",
         "--to-command": "--to-command", "-I": "--use-compress-program", "--use-compress-program":
         "--use-compress-program", "--checkpoint-action": "--checkpoint-action", "-F": "--info-script",
         "--info-script": "--info-script", "--new-volume-script": "--info-script", "--rsh-command": "--rsh-command",
         "--rmt-command": "--rmt-command", "-g": "--listed-incremental", "--listed-incremental":
         "--listed-incremental"},
        dashless_first=True,
    ),
    "less": Spec(
        _s("-N --LINE-NUMBERS -n --line-numbers -S --chop-long-lines -R --RAW-CONTROL-CHARS -r --raw-control-chars "
           "-F --quit-if-one-screen -X --no-init -i --ignore-case -I --IGNORE-CASE -M --LONG-PROMPT -m "
           "--long-prompt -s --squeeze-blank-lines -E --QUIT-AT-EOF -e --quit-at-eof -q --quiet -Q --QUIET -K "
           "--quit-on-intr -x --tabs -j --jump-target"),
        _s("-x --tabs -j --jump-target -o --log-file -O --LOG-FILE"),
        {"-o": "--log-file", "--log-file": "--log-file", "-O": "--LOG-FILE", "--LOG-FILE": "--LOG-FILE"},
        plus=True,
    ),
    "more": Spec(_s("-d --silent -l --logical -f --no-pause -p --print-over -c --clean-print -s --squeeze -u "
                    "--plain -n --lines"), _s("-n --lines"), plus=True),
    "man": Spec(
        _s("-k --apropos -f --whatis -a --all -w --where --path --location -W --where-cat --location-cat -s -S "
           "--sections -M --manpath -L --locale -e --extension -i --ignore-case -I --match-case --regex "
           "--wildcard --names-only -7 --ascii -E --encoding --no-hyphenation --no-justification"),
        _s("-s -S --sections -M --manpath -L --locale -e --extension -E --encoding -P --pager -p "
           "--preprocessor"),
        {"-P": "--pager", "--pager": "--pager", "-H": "--html", "--html": "--html", "-p": "--preprocessor",
         "--preprocessor": "--preprocessor", "-X": "--gxditview", "--gxditview": "--gxditview"},
        joined=_s("-H -X"),
    ),
    "curl": Spec(
        _s("-s --silent -S --show-error -L --location -I --head -i --include -f --fail --fail-with-body -v "
           "--verbose -H --header -A --user-agent --compressed -m --max-time --connect-timeout -w --write-out "
           "-e --referer --retry --http1.1 --http2 -4 -6 --ipv4 --ipv6 --no-progress-meter -#"),
        _s("-H --header -A --user-agent -m --max-time --connect-timeout -w --write-out -e --referer --retry -o "
           "--output -D --dump-header -c --cookie-jar --trace --trace-ascii --stderr -K --config --output-dir "
           "--libcurl --etag-save --hsts --alt-svc"),
        {"-o": "--output", "--output": "--output", "-O": "--remote-name", "--remote-name": "--remote-name",
         "--remote-name-all": "--remote-name", "-D": "--dump-header", "--dump-header": "--dump-header",
         "-c": "--cookie-jar", "--cookie-jar": "--cookie-jar", "--trace": "--trace", "--trace-ascii": "--trace",
         "--stderr": "--stderr", "-K": "--config", "--config": "--config", "--output-dir": "--output",
         "--libcurl": "--libcurl", "--etag-save": "--etag-save", "--hsts": "--hsts", "--alt-svc": "--alt-svc"},
    ),
    "wget": Spec(
        _s("-q --quiet -S --server-response --spider -nv --no-verbose -T --timeout -t --tries"),
        _s("-T --timeout -t --tries -O --output-document -o --output-file -a --append-output -P "
           "--directory-prefix -i --input-file -e --execute"),
        {"-O": "--output-document", "--output-document": "--output-document", "-o": "--output-file",
         "--output-file": "--output-file", "-a": "--append-output", "--append-output": "--append-output",
         "-P": "--directory-prefix", "--directory-prefix": "--directory-prefix", "-r": "--recursive",
         "--recursive": "--recursive", "-m": "--mirror", "--mirror": "--mirror", "-i": "--input-file",
         "--input-file": "--input-file", "-e": "--execute", "--execute": "--execute"},
    ),
    "rg": Spec(
        _s("-i --ignore-case -S --smart-case -s --case-sensitive -w --word-regexp -x --line-regexp -v "
           "--invert-match -n --line-number -N --no-line-number -l --files-with-matches --files-without-match -c "
           "--count --count-matches -o --only-matching -F --fixed-strings -e --regexp -g --glob --iglob -t --type "
           "-T --type-not -A -B -C --after-context --before-context --context --hidden --no-ignore -u -uu -uuu -L "
           "--follow --json --files --type-list -m --max-count -d --max-depth -U --multiline --multiline-dotall "
           "--heading --no-heading --color --colors -0 --null --sort --sortr --vimgrep --stats -p --pretty "
           "--column -r --replace --trim --max-columns --max-columns-preview --one-file-system -a --text -P --pcre2 "
           "-E --encoding -H --with-filename -I --no-filename -q --quiet -b --byte-offset --no-messages "
           "--glob-case-insensitive --no-ignore-vcs --no-ignore-parent --no-ignore-global -j --threads -M "
           "--passthru --line-buffered --block-buffered"),
        _s("-e --regexp -g --glob --iglob -t --type -T --type-not -A -B -C --after-context --before-context "
           "--context -m --max-count -d --max-depth --colors --sort --sortr -r --replace --max-columns -E "
           "--encoding -j --threads -M --pre --pre-glob"),
        # --pre runs a program on every file searched; -z runs decompression programs
        {"--pre": "--pre", "--pre-glob": "--pre", "-z": "--search-zip", "--search-zip": "--search-zip"},
    ),
    "tee": Spec(_s("-a --append -i --ignore-interrupts -p --output-error"), written_operand=0),
    "uniq": Spec(_s("-c --count -d --repeated -D -u --unique -i --ignore-case -f --skip-fields -s --skip-chars -w "
                    "--check-chars -z --zero-terminated --all-repeated --group"),
                 _s("-f --skip-fields -s --skip-chars -w --check-chars"), written_operand=1),
}


# --------------------------------------------------------------------------------------------- the reading


def spec_for(name: str) -> Spec | None:
    """The table's entry for a command, by its name or the name of the program a path runs (`/usr/bin/sort`)."""
    return COMMANDS.get(posixpath.basename(name))


def option_kinds(words: tuple[str, ...]) -> frozenset[str]:
    """The option kinds of one simple command a rule must have seen to cover it, each named with its command
    (``sort --output``); empty for a command the table does not list."""
    spec = spec_for(words[0]) if words else None
    if spec is None:
        return frozenset()
    reader = _Reader(spec, iter(words[1:]))
    out = {f"{words[0]} {k}" for k in reader.kinds}
    if reader.subcommand:  # git: the subcommand's own options, named with it
        sub = reader.subcommand[0]
        inner = _Reader(spec.subcommands.get(sub, Spec()), iter(reader.subcommand[1:]))
        out |= {f"{words[0]} {sub} {k}" for k in inner.kinds}
    return frozenset(out)


class _Reader:
    """Reads one command's words as getopt would; ``kinds`` are those of the options the table does not call
    safe, ``subcommand`` the words from a subcommand on (git)."""

    def __init__(self, spec: Spec, words: Iterator[str]) -> None:
        self.spec, self.words = spec, words
        self.kinds: set[str] = set()
        self.scripts: list[str] = []  # sed: the scripts its options give
        self.subcommand: tuple[str, ...] = ()
        operands = self._read()
        if spec.written_operand is not None and len(operands) > spec.written_operand:
            self.kinds.add(WRITTEN_OPERAND)
        if spec.operand_kinds:
            self.kinds |= {f"<{o}>" for o in operands}
        if spec.script and not self.scripts and operands:
            self.scripts.append(operands[0])
        for script in self.scripts:
            self.kinds |= {f"script {c}" for c in sed_script_kinds(script)}

    def _read(self) -> list[str]:
        """Reads every word; returns the operands."""
        spec, ended, before = self.spec, False, ""
        operands: list[str] = []
        for n, raw in enumerate(self.words):
            word = raw.removeprefix(DYNAMIC)
            if word != raw and word[:1] in ("*", "?", "[", "{"):
                self.kinds.add(GLOB)  # may expand to a file named like an option
            before, previous = word, before
            if n == 0 and spec.dashless_first and not word.startswith("-"):
                self._short("-" + word)  # `tar tf a.tar`
            elif ended or word == "-" or not word.startswith(("+", "-") if spec.plus else "-"):
                if spec.subcommands and not ended:
                    self.subcommand = (word, *self.words)
                    return operands
                operands.append(word)
            elif word == "--" and spec.ends:
                ended = not previous.startswith("-")  # else it may be the value of the option before it
            elif word.startswith("+"):
                self.kinds.add(word)  # a pager's command
            elif word.startswith("--") or spec.long_single_dash:
                name, eq, value = word.partition("=")
                self._kind(name)
                if name in spec.values:
                    self._took(name, value if eq else next(self.words, ""))
            elif not _COUNT.match(word):
                self._short(word)
        return operands

    def _kind(self, name: str) -> None:
        if name in self.spec.writes:
            self.kinds.add(self.spec.writes[name])
        elif name not in self.spec.safe:
            self.kinds.add(name)

    def _took(self, name: str, value: str) -> None:
        if name in self.spec.script:
            self.scripts.append(value)

    def _short(self, word: str) -> None:
        """Reads a group of short flags (``-nro``); a flag that takes a value takes the rest of the group
        (``-oFILE``) or the next word (``-o FILE``)."""
        for j, letter in enumerate(word[1:], start=2):
            flag = "-" + letter
            self._kind(flag)
            if flag in self.spec.joined:
                return
            if flag in self.spec.values:
                self._took(flag, word[j:] or next(self.words, ""))
                return


# ------------------------------------------------------------------------------------------------ sed scripts

_SED_SIMPLE = set("=dDgGhHlnNpPqQxzF}{!")


def sed_script_kinds(script: str) -> frozenset[str]:
    """The commands of a sed script that write a file or run a program: ``w``, ``W`` and ``e``, the ``w`` and
    ``e`` flags of ``s``, and ``?`` for anything this reader does not know. A command's text, label or file name
    is taken to end at the first ``;`` or newline, so a reading that ends early only finds more."""
    kinds: set[str] = set()
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t\n;" or c in _SED_SIMPLE or c.isdigit() or c in "$,~+":
            i += 1
        elif c == "#":
            i = _to_end(script, i)
        elif c == "/" or c == "\\":
            if c == "\\":
                i += 1
                if i >= n:
                    kinds.add("?")
                    break
            i = _past(script, i + 1, script[i])
            while i < n and script[i] in "IM":
                i += 1
        elif c in "sy":
            if i + 1 >= n or script[i + 1] in "\\\n":
                kinds.add("?")
                break
            delim = script[i + 1]
            i = _past(script, _past(script, i + 2, delim), delim)
            while c == "s" and i < n and script[i] in "gpiImMe0123456789w":
                if script[i] in "we":
                    kinds.add(script[i])
                if script[i] == "w":
                    i = _to_end(script, i)
                    break
                i += 1
        elif c in "wWe":
            kinds.add(c)
            i = _to_end(script, i)
        elif c in "aicrRbtT:v":  # text, a file read, a label, a version: up to the end of the command
            i = _to_end(script, i)
        else:
            kinds.add("?")
            break
    return frozenset(kinds)


def _past(script: str, i: int, delim: str) -> int:
    """The index after the first ``delim`` at or after ``i`` that no backslash escapes (the end if none)."""
    while i < len(script):
        if script[i] == "\\":
            i += 2
            continue
        if script[i] == delim:
            return i + 1
        i += 1
    return len(script)


def _to_end(script: str, i: int) -> int:
    """The index of the ``;`` or newline that ends the command at ``i`` (the end if none)."""
    while i < len(script) and script[i] not in ";\n":
        i += 1
    return i
