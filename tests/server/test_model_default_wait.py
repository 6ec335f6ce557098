"""The wait of a client whose first message leaves at once (a headless run) for the Models API's default
(REQ-MODEL-004): it bounds the API's answer, not the SDK's import and client, which the message needs anyway
and which on a loaded machine alone outlasted the bound (``phoenix-lsp run`` then started on the table's
default although the API had listed a newer Sonnet)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import pytest

from phoenix_lsp.llm.models import DEFAULT_MODEL, ListedModel
from phoenix_lsp.server.usecases import models
from phoenix_lsp.store import Store
from tests.server.test_runtime import RecordingSink, ScriptedLlm, make_hub, stop

#: the wait's bound: the API answers at once here, but the answer still needs the event loop, which a machine
#: loaded to 20 can keep from this process for more than 0.1 s (the bound this test had)
BOUND_S = 1.0
#: the SDK's import and client, as long as the wait's bound three times over (a loaded machine's)
PREPARE_S = 3 * BOUND_S


@dataclass
class SlowSdkLlm(ScriptedLlm):
    """A model router whose SDK is slow to make, as the real client's is: its first listing makes it first
    (``LlmClient._built``), unless :meth:`prepare` has; the API itself answers at once."""

    prepared: bool = False

    async def prepare(self) -> None:
        if not self.prepared:
            await asyncio.sleep(PREPARE_S)
            self.prepared = True

    async def list_models(self, limit: int = 1000) -> list[ListedModel]:
        await self.prepare()
        return [ListedModel(id="claude-sonnet-9-0", name="Claude Sonnet 9.0", created_at=2.0, lifecycle="active",
                            line="sonnet"),
                ListedModel(id="claude-opus-9-1", name="Claude Opus 9.1", created_at=3.0, lifecycle="active",
                            line="opus")]


@pytest.mark.req("REQ-MODEL-004")
async def test_a_slow_sdk_is_not_counted_in_the_wait_for_the_listed_default(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(models, "kept", models.ModelList())  # the module's one listing: this test's own
    store = Store(tmp_path / "phoenix.db")
    llm = SlowSdkLlm()
    hub = make_hub(store, RecordingSink(), llm)
    hub.config.model, hub.config.model_chosen = DEFAULT_MODEL, False  # no --model: the API names the default
    try:
        await models.default_settled(hub, timeout=BOUND_S)
        assert hub.config.model == "claude-sonnet-9-0"  # not the table's default
        assert llm.prepared
        assert models.kept.newest_sonnet == "claude-sonnet-9-0"
    finally:
        await stop(hub)
        store.close()
