"""The pure conversation core: ``transition(state, event) -> (state, effects)``.

No I/O happens here (no asyncio, pygls, subprocess, sqlite3, time or random): ids and outcomes arrive in
events, and everything to be done leaves as effects for the server to carry out.
"""

from .machine import TABLE, new_conversation, transition
from .state import ConversationState, Settings

__all__ = ["TABLE", "ConversationState", "Settings", "new_conversation", "transition"]
