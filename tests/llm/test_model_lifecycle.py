"""The default model picked from a Models API listing (issue 38, REQ-MODEL-004): the newest generally available
Sonnet, by the API's ``line`` when it names one, else by the id for an API that names no line."""

from __future__ import annotations

import pytest

from phoenix_lsp.llm.models import DEFAULT_MODEL, KNOWN_MODELS, ListedModel, newest_sonnet


def _m(mid: str, created: float, lifecycle: str | None = "active", line: str | None = None) -> ListedModel:
    return ListedModel(id=mid, name=mid, created_at=created, lifecycle=lifecycle, line=line)  # type: ignore[arg-type]


@pytest.mark.req("REQ-MODEL-004")
def test_the_newest_active_sonnet_by_line_not_a_newer_opus_or_a_deprecated_or_retired_sonnet() -> None:
    listing = [
        _m("claude-opus-9", 900, line="opus"),
        _m("claude-sonnet-5", 500, line="sonnet"),
        _m("claude-sonnet-7", 700, line="sonnet"),
        _m("claude-sonnet-8", 800, "deprecated", "sonnet"),
        _m("claude-sonnet-9", 950, "retired", "sonnet"),
        _m("claude-sonnet-lookalike", 990, line="opus"),  # the line, not the id, says what it is
    ]
    assert newest_sonnet(listing) == "claude-sonnet-7"


@pytest.mark.req("REQ-MODEL-004")
def test_an_api_that_names_no_line_is_read_by_the_id_and_a_listing_without_sonnet_gives_none() -> None:
    assert newest_sonnet([_m("claude-sonnet-4-6", 1), _m("claude-sonnet-4-7", 2), _m("claude-opus-5", 3)]) == (
        "claude-sonnet-4-7")
    assert newest_sonnet([_m("claude-opus-5", 3), _m("claude-sonnet-4-7", 2, lifecycle=None)]) is None
    assert newest_sonnet([]) is None


@pytest.mark.req("REQ-MODEL-014")
def test_the_tables_default_is_active_and_its_deprecated_rows_say_when_they_retire() -> None:
    by_id = {m.id: m for m in KNOWN_MODELS}
    assert by_id[DEFAULT_MODEL].lifecycle == "active"
    assert all(m.retires_at for m in KNOWN_MODELS if m.lifecycle == "deprecated")
    assert by_id["claude-sonnet-4-5"].retires_at == "2026-11-30"
