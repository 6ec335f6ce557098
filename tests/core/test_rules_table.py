"""The narrowest scope Always Allow offers for one simple command, as a table (REQ-PERM-020), and the small
value functions the core counts and writes with. Added for the whole-core mutation run (issue 18)."""

from __future__ import annotations

import pytest

from phoenix_lsp.core.rules import AllowRule, Prefix, add_rule, narrowest_prefix
from phoenix_lsp.core.values import Image, Message, Text, ToolResult, Usage, UsageTotals


@pytest.mark.req("REQ-PERM-020")
@pytest.mark.parametrize(
    ("words", "prefix"),
    [
        (("ls", "-l"), ("ls",)),
        (("git",), ("git",)),  # a subcommand tool alone: its name
        (("git", "status", "-s"), ("git", "status")),
        (("git", "Status"), ("git",)),  # not a subcommand's shape
        (("npm", "install", "x"), ("npm", "install")),  # only script runners keep a third word
        (("npm", "run"), ("npm", "run")),
        (("npm", "run", "test"), ("npm", "run", "test")),
        (("npm", "run", "test", "-x"), ("npm", "run", "test")),
        (("npm", "run", "-x"), ("npm", "run")),
        (("./run.sh", "x"), ("./run.sh",)),  # a path to a program that is not a runner
        (("/usr/bin/sudo", "ls"), None),
        (("/usr/local/bin/python3", "x.py"), None),  # a runner by path runs code given as arguments
        (("sudo", "ls"), None),
        (("",), None),
        ((" ",), None),
    ],
)
def test_narrowest_prefix(words: tuple[str, ...], prefix: Prefix | None) -> None:
    assert narrowest_prefix(words) == prefix


@pytest.mark.req("REQ-PERM-003")
def test_add_rule_keeps_the_rules_sorted_and_each_once() -> None:
    git, ls = AllowRule("bash", (("git", "log"),)), AllowRule("bash", (("ls",),))
    assert add_rule((ls,), git) == (git, ls)
    assert add_rule((git, ls), ls) == (git, ls)


@pytest.mark.req("REQ-CACHE-005")
def test_usage_totals_add_one_response_or_other_totals() -> None:
    totals = UsageTotals(2, 10, 20, 30, 40, 5, 6)
    assert totals.add(Usage(1, 2, 3, 4, 5, 6)) == UsageTotals(3, 11, 22, 33, 44, 10, 12)
    assert totals.add(UsageTotals(3, 1, 1, 1, 1, 1, 1)) == UsageTotals(5, 11, 21, 31, 41, 6, 7)


@pytest.mark.req("REQ-BED-013")
def test_a_messages_text_is_its_text_blocks_joined() -> None:
    message = Message("user", (Text("a"), Image("sha256:x", "image/png"), ToolResult("t", "r"), Text("b")))
    assert message.text() == "ab"
