"""The JSON-RPC converter both ends of the phoenix protocol use.

pygls turns the params of methods it has no types for (all of phoenix/*) into nested namedtuples, renaming
keys that are not identifiers and dropping a key named ``type_name``. This converter keeps them as the plain
dicts they arrived as; the receiver validates them (pydantic on the server).

cattrs structures an LSP array from any iterable: a 100 KB string where an array belongs (``contentChanges``)
became 100,000 element errors, 170 MB and seconds of CPU (a 64 MB one would exhaust memory). Here an array is
structured from a JSON array only (REQ-PROTO-044).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cattrs.cols import homogenous_tuple_structure_factory, is_mutable_sequence, is_sequence, list_structure_factory
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter


def _arrays_only(factory: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """cattrs's ``factory`` for a sequence type, refusing at once a value that is not a JSON array."""

    def make(kind: Any, converter: Any) -> Any:
        inner = factory(kind, converter)

        def structure(value: Any, cls: Any) -> Any:
            if not isinstance(value, list | tuple):
                raise TypeError(f"expected an array, got {type(value).__name__}")
            return inner(value, cls)

        return structure

    return make


def plain_converter() -> Any:
    """pygls' converter, but custom params and results stay plain dicts."""
    factory: Callable[[], Any] = default_converter  # pygls leaves it unannotated
    converter = factory()

    def keep(obj: dict[str, Any], cls: type) -> Any:
        return cls(**obj)

    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, keep)
    converter.register_structure_hook_factory(is_sequence, _arrays_only(homogenous_tuple_structure_factory))
    converter.register_structure_hook_factory(is_mutable_sequence, _arrays_only(list_structure_factory))
    return converter
