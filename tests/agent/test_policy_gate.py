"""The policy gate (REQ-AGENT-014): allow/deny globs (deny wins), argument scopes, rate limits on an
injected clock, and the kind of a tool (manifest over readOnlyHint over the safe default)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from phoenix_lsp.agent.agent_config import CapabilityManifest
from phoenix_lsp.agent.contracts import ErrorCode, ErrorKind
from phoenix_lsp.agent.policy_gate import PolicyGate


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def gate(clock: Clock | None = None, **manifest: Any) -> PolicyGate:
    return PolicyGate(CapabilityManifest.model_validate(manifest), clock or Clock())


def test_nothing_is_allowed_without_an_allow_entry() -> None:
    refused = gate().check_tool("mcp://records/get_record")
    assert refused is not None and (refused.kind, refused.code) == (ErrorKind.POLICY, ErrorCode.CAPABILITY_DENIED)
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
    assert limited is not None and (limited.kind, limited.code) == (ErrorKind.POLICY, ErrorCode.RATE_LIMITED)
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
