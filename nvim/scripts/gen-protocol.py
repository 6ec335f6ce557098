"""Generate nvim/lua/phoenix/protocol.lua, the protocol's words the Neovim plugin uses, from the published
schema specs/protocol.schema.json (REQ-PROTO-037: clients' protocol types are generated, never written by hand).

    python nvim/scripts/gen-protocol.py          # write the module
    python nvim/scripts/gen-protocol.py --check  # fail when the module is not what the schema gives
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "specs" / "protocol.schema.json"
TARGET = ROOT / "nvim" / "lua" / "phoenix" / "protocol.lua"


def words(schema: dict[str, Any]) -> dict[str, list[str]]:
    defs = schema["$defs"]
    return {
        "Status": defs["Status"]["properties"]["status"]["enum"],  # a conversation's status
        "Mode": defs["Mode"]["enum"],
        "Policy": defs["Policy"]["enum"],
        "Style": defs["Style"]["enum"],
        "Route": defs["GetRouteResult"]["properties"]["route"]["enum"],
        "EventKind": sorted(defs["PhoenixEvent"]["discriminator"]["mapping"]),
        "ToolName": sorted(defs["ToolName"]["enum"]),
        "ErrorDataKind": sorted(defs["ErrorData"]["discriminator"]["mapping"]),
        "Method": sorted(schema["properties"]["requests"]["properties"]),
    }


def render(schema: dict[str, Any]) -> str:
    out = [
        "-- GENERATED from specs/protocol.schema.json by nvim/scripts/gen-protocol.py: do not edit by hand, run it",
        "-- again when the schema changes (the Neovim tests fail until then). The protocol's words the plugin uses,",
        "-- the enums in the schema's order, the names sorted (REQ-PROTO-037).",
        "return {",
    ]
    for name, values in words(schema).items():
        out.append(f"  {name} = {{")
        out.extend(f"    {json.dumps(value)}," for value in values)
        out.append("  },")
    out.append("}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = render(json.loads(SCHEMA.read_text()))
    if "--check" in argv:
        if not TARGET.exists() or TARGET.read_text() != text:
            print(f"{TARGET.relative_to(ROOT)} is not what {SCHEMA.relative_to(ROOT)} gives: run "
                  "python nvim/scripts/gen-protocol.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
