"""A GitHub-like issues MCP server of our own, built with the official SDK (``MCPServer``), as a user would write
one: its tools return plain lists (which the SDK wraps as ``{"result": [...]}`` in ``structuredContent``) and
declare output schemas (the SDK derives them from the return types).

Run: ``python tests/agent/issues_server.py --data FILE [--issues N] [--name NAME] [--require-env VAR] [--log FILE]``
(``--log``: each tool call appends a line ``{"tool": name, "arguments": {...}}`` as it arrives, a witness of
what reached the server and in which order)

- ``--issues N`` deterministic issues (default 40), newest has the highest number; every third is labelled
  ``bug``; each has a ~300-character body so raw payloads are large. Saved to ``--data`` (created if missing)
  after every write, so a test reads the final state there.
- Reads (``readOnlyHint: true``): ``list_issues(state, limit)`` (newest first), ``search_issues(label, state)``
  (the server-side filter), ``get_issue(number)``, ``list_comments(number)``, ``list_users()``.
  Writes (``readOnlyHint: false``): ``add_comment(number, body)``, ``add_labels(number, labels)``.
- ``--require-env VAR``: refuses to start unless the environment variable VAR is set (a credential the
  registry's ``secretsRef`` must provide).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from typing_extensions import TypedDict

READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False)
AUTHORS = ("ana", "bo", "chen", "dee", "eli")
LABELS = ("bug", "docs", "feature", "question")


class Issue(TypedDict, total=False):  # total=False: ``fields`` may leave some out
    number: int
    title: str
    state: str
    labels: list[str]
    author: str
    comments: int
    body: str


class Comment(TypedDict):
    id: int
    author: str
    body: str


class User(TypedDict):
    login: str
    name: str
    team: str


def dataset(count: int = 40) -> dict[str, Any]:
    """The issues, always the same for the same count; comments start empty."""
    issues = []
    for number in range(1, count + 1):
        labels = []
        if number % 3 == 0:
            labels.append("bug")
        labels.append(LABELS[1 + number % 3])
        sentence = (f"Issue {number} reports a problem seen by the {AUTHORS[number % 5]} team in module "
                    f"{number * 7 % 13}; steps, logs and expectations follow. ")
        issues.append({"number": number, "title": f"Problem {number} in module {number * 7 % 13}",
                       "state": "closed" if number % 4 == 0 else "open", "labels": labels,
                       "author": AUTHORS[number % 5], "comments": 0, "body": (sentence * 4)[:300]})
    return {"issues": issues, "comments": {}}


def expected_bugs(count: int = 40, newest: int = 10) -> list[int]:
    """The task's answer: among the `newest` newest open issues, the numbers of those labelled bug."""
    issues = sorted((i for i in dataset(count)["issues"] if i["state"] == "open"), key=lambda i: -i["number"])
    return [i["number"] for i in issues[:newest] if "bug" in i["labels"]]


def build(data: Path, count: int, name: str = "issues", log: Path | None = None) -> MCPServer:
    server = MCPServer(name, version="1.0.0")

    def note(tool: str, **arguments: Any) -> None:
        if log is not None:
            with log.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"tool": tool, "arguments": arguments}) + "\n")
    if not data.exists():
        data.write_text(json.dumps(dataset(count)), encoding="utf-8")

    def load() -> dict[str, Any]:
        return dict(json.loads(data.read_text(encoding="utf-8")))

    def save(db: dict[str, Any]) -> None:
        data.write_text(json.dumps(db), encoding="utf-8")

    def find(db: dict[str, Any], number: int) -> dict[str, Any]:
        for issue in db["issues"]:
            if issue["number"] == number:
                return dict(issue)
        raise ToolError(f"not found: there is no issue #{number}")

    def project(issues: list[dict[str, Any]], fields: list[str] | None) -> list[Issue]:
        return [{k: v for k, v in i.items() if not fields or k in fields} for i in issues]  # type: ignore[misc]

    @server.tool(annotations=READ)
    def list_issues(state: str = "open", limit: int = 30, fields: list[str] | None = None) -> list[Issue]:
        """Issues in this state ("open", "closed" or "all"), newest first, at most `limit`; only `fields` of
        each if given."""
        note("list_issues", state=state, limit=limit)
        issues = [i for i in load()["issues"] if state == "all" or i["state"] == state]
        return project(sorted(issues, key=lambda i: -i["number"])[:limit], fields)

    @server.tool(annotations=READ)
    def search_issues(label: str, state: str = "open", limit: int = 100,
                      fields: list[str] | None = None) -> list[Issue]:
        """Issues carrying this label, in this state, newest first, at most `limit`; only `fields` of each if
        given."""
        note("search_issues", label=label)
        issues = [i for i in load()["issues"] if label in i["labels"] and (state == "all" or i["state"] == state)]
        return project(sorted(issues, key=lambda i: -i["number"])[:limit], fields)

    @server.tool(annotations=READ)
    def get_issue(number: int) -> Issue:
        """One issue by number."""
        note("get_issue", number=number)
        return find(load(), number)  # type: ignore[return-value]

    @server.tool(annotations=READ)
    def list_comments(number: int) -> list[Comment]:
        """The comments of one issue, oldest first."""
        note("list_comments", number=number)
        db = load()
        find(db, number)
        return list(db["comments"].get(str(number), []))

    @server.tool(annotations=READ)
    def list_users() -> list[User]:
        """The people who write issues: login, name, team."""
        note("list_users")
        return [{"login": a, "name": a.capitalize(), "team": ("core", "web", "data")[k % 3]}
                for k, a in enumerate(AUTHORS)]

    @server.tool(annotations=WRITE)
    def add_comment(number: int, body: str) -> Comment:
        """Post a comment on an issue."""
        note("add_comment", number=number, body=body)
        db = load()
        find(db, number)
        comments = db["comments"].setdefault(str(number), [])
        comment = {"id": len(comments) + 1, "author": "phoenix", "body": body}
        comments.append(comment)
        for issue in db["issues"]:
            if issue["number"] == number:
                issue["comments"] = len(comments)
        save(db)
        return comment  # type: ignore[return-value]

    @server.tool(annotations=WRITE)
    def add_labels(number: int, labels: list[str]) -> Issue:
        """Add labels to an issue."""
        note("add_labels", number=number)
        db = load()
        for issue in db["issues"]:
            if issue["number"] == number:
                issue["labels"] = sorted(set(issue["labels"]) | set(labels))
                save(db)
                return issue  # type: ignore[no-any-return]
        raise ToolError(f"not found: there is no issue #{number}")

    return server


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="issues_server")
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--issues", type=int, default=40)
    parser.add_argument("--name", default="issues")
    parser.add_argument("--require-env", metavar="VAR")
    parser.add_argument("--log", type=Path, help="append each tool call as a JSON line to this file")
    args = parser.parse_args(argv)
    if args.require_env and not os.environ.get(args.require_env):
        print(f"issues_server: {args.require_env} is not set; refusing to start", file=sys.stderr)
        return 2
    build(args.data, args.issues, args.name, args.log).run("stdio")
    return 0


if __name__ == "__main__":
    sys.exit(main())
