"""``session/list`` (REQ-ACP-026): a folder's sessions a page at a time, through the conversations use case, with
an opaque cursor that says where the next page starts (bounded before it is decoded)."""

from __future__ import annotations

import base64
import binascii
import json
from datetime import UTC, datetime

from acp.schema import ListSessionsResponse, SessionInfo

from ..adapter import Conversations
from ..usecases import conversations
from . import errors

#: the sessions a session/list answers at most; the rest come with its cursor
PAGE_SIZE = 25
#: the longest cursor read (one this agent gave is under 100 characters)
MAX_CURSOR_CHARS = 200


def page(hub: Conversations, folder: str, cursor: str | None) -> ListSessionsResponse:
    """The page of ``folder``'s sessions that ``cursor`` names (the first without one). ``folder``: held to the
    session-folder rule already. The store's connection is the event loop's: called there."""
    after = _after(cursor) if cursor is not None else None
    found = conversations.page(hub, folder, after, PAGE_SIZE)
    sessions = [SessionInfo(session_id=row.id, cwd=folder, title=row.title or None,
                            updated_at=datetime.fromtimestamp(row.updated_at, UTC).isoformat())
                for row in found.rows]
    return ListSessionsResponse(sessions=sessions, next_cursor=_cursor(found.after) if found.after else None)


def _cursor(after: conversations.After) -> str:
    """The opaque cursor of the page after ``after``."""
    return base64.urlsafe_b64encode(json.dumps(list(after)).encode()).decode()


def _after(cursor: str) -> conversations.After:
    """Where the page a cursor names starts: invalid params for one this agent did not give (bounded first)."""
    wrong = errors.invalid_params("The cursor is not one this agent gave (it is cut, changed or from another "
                                  "agent), so no page was listed: list again without a cursor, then pass the "
                                  "nextCursor of that answer.", cursor=cursor[:40])
    if len(cursor) > MAX_CURSOR_CHARS:
        raise wrong
    try:
        updated_at, conversation_id = json.loads(base64.urlsafe_b64decode(cursor.encode("ascii")))
    except (ValueError, TypeError, binascii.Error, UnicodeError):
        raise wrong from None
    if not isinstance(updated_at, int | float) or not isinstance(conversation_id, str):
        raise wrong
    return float(updated_at), conversation_id
