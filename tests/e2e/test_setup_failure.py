"""A server that cannot open its store says why on every request, instead of failing silently (REQ-SEC-002)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from tests.e2e.harness import session
from tests.fake_anthropic import FakeAnthropic


@pytest.mark.req("REQ-SEC-002", "REQ-PROTO-034")
async def test_unusable_data_directory_is_reported(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the data directory should be")
    async with session(fake_anthropic, tmp_path, data_dir=blocker) as s:
        with pytest.raises(JsonRpcException) as info:
            await s.request("phoenix/newConversation", {"workingDirectory": str(s.workdir)})
        assert "could not start" in info.value.message and "data directory" in info.value.message
        assert any("could not start" in m.message for m in s.client.messages)
