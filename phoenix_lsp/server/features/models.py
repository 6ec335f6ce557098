"""Which model answers: the models the keys can use (phoenix/listModels) and the switch between turns
(phoenix/setModel), translated to and from the use cases of ``usecases/models.py``, where the rules live."""

from __future__ import annotations

from ...protocol import params as p
from ...protocol import results as res
from ..errors import invalid, refusal
from ..lsp import PhoenixServer
from ..requests import Handler, conversation, hub
from ..usecases import models as usecase
from ..usecases.errors import Invalid, Refused


def check_model(ls: PhoenixServer, model: str) -> None:
    """Refuse a model id no provider can answer (REQ-MODEL-007), naming ``model`` and what to do."""
    try:
        usecase.check_model(hub(ls).llm, model)
    except Invalid as exc:
        raise invalid("model", f"Invalid params: 'model': {exc.reason}") from None


async def list_models(ls: PhoenixServer, p: p.ListModelsParams) -> res.ListModelsResult:
    return await usecase.list_models(hub(ls), p.refresh)


def set_model(ls: PhoenixServer, p: p.SetModelParams) -> res.SetModelResult:
    runtime = conversation(ls, p.conversation_id)
    try:
        chosen = usecase.choose_model(hub(ls), runtime, p.model)
    except Invalid as exc:
        raise invalid("model", f"Invalid params: 'model': {exc.reason}") from None
    except Refused as exc:
        raise refusal(exc.reject, exc.status) from None
    return res.SetModelResult(model=chosen.model, previous=chosen.previous, changed=chosen.changed,
                              context_window=chosen.context_window)


#: the phoenix/* requests this module serves, each with its handler (installed by ``served.py``)
HANDLERS: dict[str, Handler] = {
    "phoenix/listModels": list_models,
    "phoenix/setModel": set_model,
}
