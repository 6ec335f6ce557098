"""A running background command's changes (REQ-BASH-045, REQ-PROTO-071): phoenix/reviewBackground shows them, or
stops the command for their review."""

from __future__ import annotations

from ...protocol import params as p
from ...protocol import results as res
from ..errors import invalid
from ..lsp import PhoenixServer
from ..requests import Handler, conversation, hub
from ..usecases import background
from ..usecases.errors import Invalid


async def review_background(ls: PhoenixServer, p: p.ReviewBackgroundParams) -> res.ReviewBackgroundResult:
    conversation(ls, p.conversation_id)  # a conversation of this server, or the usual error
    try:
        done = await background.review_background(hub(ls), p.conversation_id, p.pid, p.stop)
    except Invalid as exc:
        raise invalid(exc.field, f"Invalid params: '{exc.field}': {exc.reason}") from None
    return res.ReviewBackgroundResult(
        commands=[res.BackgroundChanges(pid=s.pid, command=s.command, running=s.running, files=list(s.files),
                                        summary=s.summary, diff=s.diff) for s in done.commands],
        stopped=list(done.stopped), message=done.message)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {"phoenix/reviewBackground": review_background}
