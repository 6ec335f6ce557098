"""A run's patches, written by the run itself (REQ-RUN-007): a headless run has no editor, so, as the terminal
client does for an editor's edits, the run is the editor and writes the file (atomically) once the core let the
call run. The patch is prepared against the disk and its target confined again right before the write
(REQ-PATCH-013), as for every editor; a bash command's captured changes are placed by the server whole."""

from __future__ import annotations

import asyncio
from pathlib import Path

from ... import atomic
from ...core.values import ToolUse
from ...protocol.events import Diff
from ...tools.patch import PatchError, prepare_patch, resolve_patch_path, target_identity, verify_before_sending
from ..adapter import Conversation
from ..patch_preview import read_disk


def _write(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_bytes(target, text.encode("utf-8"))


async def apply_patch(conversation: Conversation, call: ToolUse) -> tuple[str, bool]:
    """Write an allowed patch: what the model is told, and whether it failed."""
    root = Path(conversation.state.working_directory)
    target = resolve_patch_path(dict(call.input), root)
    if isinstance(target, PatchError):
        return target.message, True
    identity = await asyncio.to_thread(target_identity, target)
    try:
        original = await asyncio.to_thread(read_disk, target, root)
    except (OSError, UnicodeDecodeError) as exc:
        return f"The patch was not applied: {target.name} cannot be read as UTF-8 text ({exc}).", True
    prepared = prepare_patch(dict(call.input), original, clipboards=conversation.clipboards)
    if isinstance(prepared, PatchError):
        return prepared.message, True
    changed = verify_before_sending(dict(call.input), root, target, identity)  # REQ-PATCH-013
    if changed is not None:
        return changed.message, True
    try:
        await asyncio.to_thread(_write, target, prepared.new_text)
    except OSError as exc:
        return f"The patch was not applied: {target.name} could not be written ({exc.strerror or exc}).", True
    conversation.keep_clipboards(prepared.clipboards)
    conversation.emit(Diff(tool_use_id=call.id, path=str(target), diff=prepared.diff))
    return prepared.message, False
