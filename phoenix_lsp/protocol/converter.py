"""The JSON-RPC converter both ends of the phoenix protocol use.

pygls turns the params of methods it has no types for (all of phoenix/*) into nested namedtuples, renaming
keys that are not identifiers and dropping a key named ``type_name``. This converter keeps them as the plain
dicts they arrived as; the receiver validates them (pydantic on the server).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter


def plain_converter() -> Any:
    """pygls' converter, but custom params and results stay plain dicts."""
    factory: Callable[[], Any] = default_converter  # pygls leaves it unannotated
    converter = factory()

    def keep(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, keep)
    return converter
