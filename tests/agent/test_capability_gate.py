"""The capability gate (REQ-AGENT-014): allow/deny globs (deny wins), argument scopes, rate limits on an
injected clock, and the kind of a tool (manifest over readOnlyHint over the safe default)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from phoenix_lsp.agent.agent_config import CapabilityManifest
from phoenix_lsp.agent.capability_gate import CapabilityGate
from phoenix_lsp.agent.contracts import ErrorCode, ErrorKind


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate(clock: Clock | None = None, **manifest: Any) -> CapabilityGate:
    return CapabilityGate(CapabilityManifest.model_validate(manifest), clock or Clock())


def test_nothing_is_allowed_without_an_allow_entry() -> None:
    refused = gate().check_tool("mcp://records/get_record")
    assert refused is not None and (refused.kind, refused.code) == (ErrorKind.DENIED, ErrorCode.CAPABILITY_DENIED)
    assert "no allow entry" in refused.message


def test_globs_allow_and_deny_wins() -> None:
    g = gate(allow=["mcp://records/*", "mcp://*/get_item"], deny=["mcp://records/update_*"])
    assert g.check_tool("mcp://records/get_record") is None
    assert g.check_tool("mcp://other/get_item") is None
    assert g.check_tool("mcp://other/get_record") is not None
    denied = g.check_tool("mcp://records/update_record")
    assert denied is not None and "denied" in denied.message and "mcp://records/update_*" in denied.message
    # deny wins even over an exact allow entry
    g = gate(allow=["mcp://records/update_record"], deny=["mcp://records/*"])
    assert g.check_tool("mcp://records/update_record") is not None
    assert g.check_call("mcp://records/update_record", {}) is not None


def test_something_that_is_not_a_tool_uri_is_denied() -> None:
    g = gate(allow=["mcp://*/*"])
    for uri in ("records_get_record", "http://records/get_record", "mcp://records"):
        refused = g.check_tool(uri)
        assert refused is not None and refused.code == ErrorCode.CAPABILITY_DENIED


SCOPED: dict[str, Any] = {"allow": ["mcp://records/*", "mcp://records/update_record?fields=status,priority&id=1,2,3"]}


@pytest.mark.parametrize(("arguments", "allowed"), [
    ({"id": 1, "fields": {"status": "done"}}, True),
    ({"id": 2, "fields": {"status": "done", "priority": 1}}, True),
    ({"id": 3}, True),  # fields absent: not restricted
    ({"id": 3, "fields": None}, True),  # null: as absent
    ({"fields": ["status"]}, True),  # a list: items must be allowed values
    ({"fields": "priority"}, True),
    ({"id": 1, "fields": {"status": "done", "owner": "x"}}, False),  # owner is out of scope
    ({"id": 4, "fields": {"status": "done"}}, False),  # ids compared as JSON text
    ({"fields": ["status", "owner"]}, False),
    ({"fields": [{"status": 1}]}, False),  # not a scalar item
    ({"id": True}, False),  # true is not 1
])
def test_scopes_restrict_arguments(arguments: dict[str, Any], allowed: bool) -> None:
    refused = gate(**SCOPED).check_call("mcp://records/update_record", arguments)
    assert (refused is None) == allowed, refused
    if refused is not None:
        assert refused.code == ErrorCode.CAPABILITY_DENIED and "scope" in refused.message


def test_a_scope_on_one_tool_leaves_the_others_alone() -> None:
    assert gate(**SCOPED).check_call("mcp://records/get_record", {"id": 99, "fields": "anything"}) is None


def test_a_uri_may_narrow_the_manifest_scope_but_not_widen_it() -> None:
    g = gate(**SCOPED)
    assert g.check_tool("mcp://records/update_record?fields=status") is None
    wider = g.check_tool("mcp://records/update_record?fields=status,owner")
    assert wider is not None and "wider" in wider.message
    # the URI's own scope applies to calls too
    narrowed = g.check_call("mcp://records/update_record?fields=status", {"id": 1, "fields": {"priority": 2}})
    assert narrowed is not None and narrowed.code == ErrorCode.CAPABILITY_DENIED
    # a scope on a tool the manifest does not scope is a restriction of the plan's own
    assert g.check_call("mcp://records/get_record?id=5", {"id": 5}) is None
    assert g.check_call("mcp://records/get_record?id=5", {"id": 6}) is not None


def test_rate_limits_count_per_tool_in_a_sliding_window() -> None:
    clock = Clock()
    g = gate(clock, allow=["mcp://records/*"], rateLimits={"mcp://records/*": {"calls": 2, "windowS": 60}})
    assert g.check_call("mcp://records/get_record", {}) is None
    clock.now += 10
    assert g.check_call("mcp://records/get_record", {}) is None
    assert g.check_call("mcp://records/list_records", {}) is None  # another tool, its own count
    limited = g.check_call("mcp://records/get_record", {})
    assert limited is not None and (limited.kind, limited.code) == (ErrorKind.DENIED, ErrorCode.RATE_LIMITED)
    assert "retry in 50.0 s" in limited.message
    clock.now += 50  # the first call leaves the window
    assert g.check_call("mcp://records/get_record", {}) is None
    assert g.check_call("mcp://records/get_record", {}) is not None  # refused calls were not counted
    # a denied call is not counted either, and check_tool never counts
    assert g.check_tool("mcp://records/get_record") is None


def test_a_zero_limit_refuses_every_call_and_the_strictest_limit_applies() -> None:
    clock = Clock()
    g = gate(clock, allow=["mcp://records/*"], rateLimits={"mcp://records/update_record": {"calls": 0, "windowS": 1},
                                                           "mcp://records/*": {"calls": 5, "windowS": 1},
                                                           "mcp://records/get_*": {"calls": 1, "windowS": 1}})
    assert g.check_call("mcp://records/update_record", {}) is not None
    assert g.check_call("mcp://records/get_record", {}) is None
    assert g.check_call("mcp://records/get_record", {}) is not None
    clock.now += 1
    assert g.check_call("mcp://records/get_record", {}) is None


def test_kind_manifest_over_annotation_over_default() -> None:
    g = gate(allow=["mcp://records/*"], tools={"mcp://records/*": {"kind": "read"},
                                              "mcp://records/update_*": {"kind": "write"}})
    assert g.kind("mcp://records/get_record", read_only_hint=False, trusted=True) == "read"  # the manifest wins
    assert g.kind("mcp://records/update_record", read_only_hint=True, trusted=True) == "write"  # the last wins
    assert g.kind("mcp://records/get_record") == "write"  # a read glob counts only for a trusted server
    plain = gate()
    assert plain.kind("mcp://records/get_record", read_only_hint=True, trusted=True) == "read"
    assert plain.kind("mcp://records/get_record", read_only_hint=True) == "write"  # an untrusted claim
    assert plain.kind("mcp://records/update_record", read_only_hint=False, trusted=True) == "write"
    assert plain.kind("mcp://records/describe", trusted=True) == "write"  # no hint: the safe default


@pytest.mark.parametrize("manifest", [
    {"allow": ["records/*"]},
    {"deny": ["mcp://records/update_record?fields=status"]},  # a deny entry carries no scope
    {"allow": ["mcp://records/x?fields"]},
    {"allow": ["mcp://records/x?f=a&f=b"]},
    {"rateLimits": {"mcp://records/*": {"calls": -1, "windowS": 1}}},
    {"tools": {"mcp://records/*": {"kind": "delete"}}},
    {"allowed": ["mcp://records/*"]},  # a misspelt key is an error, not ignored
])
def test_bad_manifests_are_refused(manifest: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        CapabilityManifest.model_validate(manifest)


# ------------------------------------------------------------------ read kinds (issue 24), as tables

TOOLS = {"mcp://hostile/get_*": {"kind": "read"}, "mcp://hostile/get_record": {"kind": "read"},
         "mcp://*/list_*": {"kind": "read"}, "mcp://hostile/update": {"kind": "write"},
         "mcp://hostile/update_*": {"kind": "write"}, "mcp://hostile/odd": {}}
PURGE = "mcp://hostile/get_or_purge"


@pytest.mark.req("REQ-AGENT-027")
@pytest.mark.parametrize(("uri", "hint", "trusted", "expected"), [
    # (kind, source, ignored globs)
    (PURGE, None, False, ("write", "default", ("mcp://hostile/get_*",))),
    (PURGE, True, False, ("write", "default", ("mcp://hostile/get_*",))),
    (PURGE, False, True, ("read", "manifest", ())),
    (PURGE + "?id=1", None, True, ("read", "manifest", ())),
    ("mcp://hostile/get_record", None, False, ("read", "manifest", ("mcp://hostile/get_*",))),
    ("mcp://hostile/get_record?id=1", False, False, ("read", "manifest", ("mcp://hostile/get_*",))),
    ("mcp://other/list_all", None, False, ("write", "default", ("mcp://*/list_*",))),
    ("mcp://other/list_all", True, True, ("read", "manifest", ())),
    ("mcp://hostile/update", True, True, ("write", "manifest", ())),
    ("mcp://hostile/update_all", True, False, ("write", "manifest", ())),
    ("mcp://hostile/odd", True, True, ("read", "annotation", ())),
    ("mcp://hostile/odd", False, True, ("write", "annotation", ())),
    ("mcp://hostile/odd", True, False, ("write", "default", ())),
    ("mcp://hostile/odd", None, True, ("write", "default", ())),
    ("mcp://hostile/odd", None, False, ("write", "default", ())),
])
def test_effective_kind_table(uri: str, hint: bool | None, trusted: bool,
                              expected: tuple[str, str, tuple[str, ...]]) -> None:
    from phoenix_lsp.agent.capability_gate import EffectiveKind, effective_kind, resolve_kind

    manifest = CapabilityManifest.model_validate({"tools": TOOLS})
    found = effective_kind(manifest, uri, hint, trusted)
    assert isinstance(found, EffectiveKind) and (found.kind, found.source, found.ignored) == expected
    assert resolve_kind(manifest, uri, hint, trusted) == expected[:2]
    assert found.reason.startswith(f"{found.kind}: ")
    assert ("was ignored" in found.reason) == bool(found.ignored)
    assert all(glob in found.reason for glob in found.ignored)
    assert effective_kind(manifest, uri, hint) == effective_kind(manifest, uri, hint, False)  # untrusted by default
    assert resolve_kind(manifest, uri, hint) == resolve_kind(manifest, uri, hint, False)


@pytest.mark.req("REQ-AGENT-027")
def test_effective_kind_reasons_say_why() -> None:
    from phoenix_lsp.agent.capability_gate import effective_kind

    manifest = CapabilityManifest.model_validate({"tools": TOOLS})
    assert "names it exactly" in effective_kind(manifest, "mcp://hostile/update").reason
    assert "with a glob" in effective_kind(manifest, PURGE, trusted=True).reason
    assert "names it exactly" not in effective_kind(manifest, PURGE, trusted=True).reason
    assert "readOnlyHint is true" in effective_kind(manifest, "mcp://hostile/odd", True, True).reason
    assert "readOnlyHint is false" in effective_kind(manifest, "mcp://hostile/odd", False, True).reason
    assert "not trusted" in effective_kind(manifest, "mcp://hostile/odd", True, False).reason
    assert "not trusted" not in effective_kind(manifest, "mcp://hostile/odd", None, False).reason
    assert "not trusted" not in effective_kind(manifest, "mcp://hostile/odd", False, True).reason
    assert effective_kind(manifest, "mcp://hostile/odd").reason.endswith("(the safe default)")


@pytest.mark.req("REQ-AGENT-027")
def test_read_globs_on_untrusted_servers_are_warned_about_and_nothing_else() -> None:
    from phoenix_lsp.agent.agent_config import read_glob_warnings

    manifest = CapabilityManifest.model_validate({"tools": {
        "mcp://hostile/get_*": {"kind": "read"}, "mcp://hostile/get_record": {"kind": "read"},
        "mcp://h*/list_*": {"kind": "read"}, "mcp://hostile/*": {"kind": "write"}, "mcp://known/*": {"kind": "read"},
        "mcp://hostile/odd": {}}})
    trust = {"hostile": False, "known": True, "helper": False, "other": False}
    warnings = read_glob_warnings(manifest, trust)
    assert len(warnings) == 2, warnings
    assert "mcp://hostile/get_*" in warnings[0] and "'hostile'" in warnings[0] and "'helper'" not in warnings[0]
    assert "mcp://h*/list_*" in warnings[1] and "'helper', 'hostile'" in warnings[1] and "'other'" not in warnings[1]
    assert all("trustAnnotations" in w for w in warnings)
    assert read_glob_warnings(manifest, {"known": True}) == []
    assert read_glob_warnings(manifest, {}) == []


def test_a_boolean_scope_compares_as_json_text() -> None:
    g = gate(allow=["mcp://records/search?archived=false&limit=10,20"])
    assert g.check_call("mcp://records/search", {"archived": False}) is None
    assert g.check_call("mcp://records/search", {"archived": True}) is not None
    assert g.check_call("mcp://records/search", {"limit": 10, "archived": None}) is None
    assert g.check_call("mcp://records/search", {"limit": 11}) is not None
    truthy = gate(allow=["mcp://records/search?archived=true"])
    assert truthy.check_call("mcp://records/search", {"archived": True}) is None
    assert truthy.check_call("mcp://records/search", {"archived": False}) is not None


def test_a_uri_may_repeat_the_manifest_scope_exactly() -> None:
    g = gate(allow=["mcp://records/update_record?fields=status,owner"])
    assert g.check_tool("mcp://records/update_record?fields=owner,status") is None
    assert g.check_call("mcp://records/update_record?fields=owner,status", {"fields": {"owner": "x"}}) is None


def test_rate_limit_windows_and_the_wait_they_name() -> None:
    clock = Clock()
    g = gate(clock, allow=["mcp://records/*"], rateLimits={"mcp://records/get_*": {"calls": 2, "windowS": 10},
                                                           "mcp://records/*": {"calls": 3, "windowS": 100}})
    uri = "mcp://records/get_record"
    assert g.check_call(uri, {}) is None
    clock.now += 4
    assert g.check_call(uri, {}) is None
    clock.now += 2
    refused = g.check_call(uri, {})  # 2 in the last 10 s; the oldest leaves the window in 4 s
    assert refused is not None and refused.code == ErrorCode.RATE_LIMITED and "retry in 4.0 s" in refused.message
    assert "called 2 times in the last 10 s" in refused.message
    clock.now += 4  # the first call is exactly 10 s old: out of the window
    assert g.check_call(uri, {}) is None
    clock.now += 50
    refused = g.check_call(uri, {})  # the 10 s window is clear, but 3 calls in the last 100 s
    assert refused is not None and "100 s" in refused.message and "retry in 40.0 s" in refused.message
    assert g.check_call("mcp://records/get_other", {}) is None  # counted per tool
    clock.now += 40
    assert g.check_call(uri, {}) is None


def test_the_wait_counts_only_calls_inside_the_window_and_may_be_under_a_second() -> None:
    clock = Clock()
    g = gate(clock, allow=["mcp://records/*"], rateLimits={"mcp://records/get_*": {"calls": 2, "windowS": 10},
                                                           "mcp://records/*": {"calls": 100, "windowS": 100}})
    uri = "mcp://records/get_record"
    for at in (1000.0, 1005.0, 1010.0):  # at 1010 the call of 1000 is exactly 10 s old: out of the window
        clock.now = at
        assert g.check_call(uri, {}) is None
    refused = g.check_call(uri, {})
    assert refused is not None and "retry in 5.0 s" in refused.message  # from the call of 1005, not 1000
    clock.now = 1014.5
    refused = g.check_call(uri, {})
    assert refused is not None and "retry in 0.5 s" in refused.message


def test_a_scope_value_may_hold_a_question_mark() -> None:
    g = gate(allow=["mcp://records/search?q=a?b,c"])
    assert g.check_call("mcp://records/search", {"q": "a?b"}) is None
    assert g.check_call("mcp://records/search", {"q": "c"}) is None
    assert g.check_call("mcp://records/search", {"q": "a"}) is not None


def test_a_refusal_names_the_tool_without_its_scope() -> None:
    g = gate(allow=["mcp://records/*"], deny=["mcp://records/update_record"])
    for uri in ("mcp://records/update_record?fields=status", "mcp://records/update_record?q=a?b"):
        refused = g.check_tool(uri)
        assert refused is not None and refused.message.startswith("mcp://records/update_record is denied ")
    refused = gate().check_tool("mcp://records/get_record?q=a?b")
    assert refused is not None and refused.message.startswith("mcp://records/get_record is not allowed ")
