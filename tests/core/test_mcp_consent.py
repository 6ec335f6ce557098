"""The core's rule of which MCP servers may start (REQ-MCP-009, ``core/mcp_consent.py``): a project's server only
with the user's approval of its current definition; everything else without asking."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from phoenix_lsp.core.mcp_consent import Candidate, Consent, decide, record

NAMES = st.sampled_from(["tracker", "db", "docs"])
DIGESTS = st.sampled_from(["d0", "d1", "d2", "d3"])


@dataclass(frozen=True)
class Define:  # a source now defines the server so (a pull, an edit of .mcp.json)
    name: str
    project: bool
    digest: str


@dataclass(frozen=True)
class Answer:  # the user answered about a definition
    digest: str
    consent: Consent


@dataclass(frozen=True)
class Remove:  # the server left its file
    name: str


EVENTS = st.one_of(
    st.builds(Define, NAMES, st.booleans(), DIGESTS),
    st.builds(Answer, DIGESTS, st.sampled_from(list(Consent))),
    st.builds(Remove, NAMES),
)


@pytest.mark.req("REQ-MCP-009")
@settings(max_examples=400, deadline=None)
@given(st.lists(EVENTS, max_size=30))
def test_no_sequence_of_events_starts_a_project_server_whose_current_definition_was_not_approved(
        events: list[Define | Answer | Remove]) -> None:
    defined: dict[str, Candidate] = {}
    consents: dict[str, Consent] = {}
    approved_last: dict[str, bool] = {}  # the model's own account: digest -> whether the last answer approved
    for event in events:
        if isinstance(event, Define):
            defined[event.name] = Candidate(event.name, event.project, event.digest)
        elif isinstance(event, Answer):
            consents = record(consents, event.digest, event.consent)
            approved_last[event.digest] = event.consent is Consent.APPROVED
        else:
            defined.pop(event.name, None)
        verdict = decide(defined.values(), consents)
        for name in verdict.start:
            candidate = defined[name]
            assert not candidate.project or approved_last.get(candidate.digest) is True, (name, events)
        for candidate in verdict.ask:  # asked: a project's server never answered about
            assert candidate.project and candidate.digest not in approved_last
        for name in verdict.declined:
            assert approved_last.get(defined[name].digest) is False
        # every candidate has exactly one fate
        fates = [*verdict.start, *(c.name for c in verdict.ask), *verdict.declined]
        assert sorted(fates) == sorted(defined)


@pytest.mark.req("REQ-MCP-009")
def test_a_changed_definition_is_asked_about_again_and_a_declined_one_is_not() -> None:
    consents = record({}, "old", Consent.APPROVED)
    assert decide([Candidate("tracker", True, "old")], consents).start == ("tracker",)
    changed = decide([Candidate("tracker", True, "new")], consents)
    assert changed.start == () and [c.digest for c in changed.ask] == ["new"]
    consents = record(consents, "new", Consent.DECLINED)
    again = decide([Candidate("tracker", True, "new")], consents)
    assert again.ask == () and again.declined == ("tracker",)
    # the user's own servers start without asking, whatever was answered
    assert decide([Candidate("mine", False, "new")], consents).start == ("mine",)
