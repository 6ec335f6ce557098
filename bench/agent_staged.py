"""The agent arm's plans in ``bench agent_tasks``, written as a model that knows its reads start while it still
writes the plan (REQ-AGENT-044) would write them: each read first, a node of its own, then the node that combines
them, writes and renders the answer (REQ-AGENT-039). The same calls and the same answer as the task's one-node
script (``Task.rendered``).

Two forms of the same plans: ``scripts`` as run_plan's schema and description teach them (REQ-AGENT-045: each node
its script alone, the variables it assigns its outputs, its last expression the reply), and ``staged``, the
object form a model wrote before (id, code, tools, outputs, depends_on, inputs; the lever off). The single-call
tasks are one node (one call and its reply, as run_plan's description asks), in the object form too."""

from __future__ import annotations

from typing import Any

L1, L2 = "mcp://issues/list_issues", "mcp://issues/search_issues"
USERS, POST = "mcp://people/list_users", "mcp://issues/add_comment"
ISSUES = 1000


def _node(node_id: str, code: str, tools: list[str], outputs: list[str], depends_on: list[str] | None = None
          ) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "code": code, "tools": tools, "outputs": outputs}
    if depends_on:
        node.update(depends_on=depends_on, inputs=[o for d in depends_on for o in _OUTPUTS[d]])
    return node


_OUTPUTS = {"bugs": ["bugs"], "users": ["users"], "counts": ["c"], "bug": ["bug"]}

#: task name's start -> its nodes
_STAGED: dict[str, list[dict[str, Any]]] = {
    "join two servers": [
        _node("bugs", "{'bugs': where(issues_list_issues(state='open', limit=200), labels='bug')[:20]}", [L1],
              ["bugs"]),
        _node("users", "{'users': people_list_users()}", [USERS], ["users"]),
        _node("answer", "teams = sorted(set([i['team'] for i in join(bugs, users, 'author', 'login')]))\n"
                        "{'answer': 'The teams: ' + ', '.join(teams) + '.'}", [], [], ["bugs", "users"])],
    "aggregate": [
        _node("counts", f"{{'c': count(issues_list_issues(state='all', limit={ISSUES}), 'labels')}}", [L1], ["c"]),
        _node("answer", "{'answer': 'Per label: ' + ', '.join([k + ' ' + str(c[k]) for k in sorted(c)]) + '.'}",
              [], [], ["counts"])],
    "issue 25's task": [
        _node("bugs", "{'bugs': [i['number'] for i in issues_list_issues(state='open', limit=10) "
                      "if 'bug' in i['labels']]}", [L1], ["bugs"]),
        _node("post", "text = 'Bugs among the 10 newest open issues: ' + ', '.join(['#' + str(n) for n in bugs])\n"
                      "issues_add_comment(number=1, body=text)\n{'answer': text + '; posted on #1.'}", [POST], [],
              ["bugs"])],
    "four model turns": [
        _node("bug", "{'bug': issues_search_issues(label='bug', limit=1, fields=['number', 'author'])[0]}", [L2],
              ["bug"]),
        _node("users", "{'users': people_list_users()}", [USERS], ["users"]),
        _node("post", "team = [u['team'] for u in users if u['login'] == bug['author']][0]\n"
                      "issues_add_comment(number=bug['number'], body='Routed to team ' + team)\n"
                      "{'answer': 'Routed to team ' + team + '; posted on #' + str(bug['number']) + '.'}", [POST], [],
              ["bug", "users"])],
}


def staged(task_name: str) -> list[dict[str, Any]] | None:
    """The task's nodes, reads first, or None: the task keeps its one node."""
    return next((nodes for start, nodes in _STAGED.items() if task_name.startswith(start)), None)


#: task name's start -> its nodes as scripts (REQ-AGENT-045), what run_plan's description asks a model to write
_SCRIPTS: dict[str, list[str]] = {
    # The single-call tasks: the planning prompt (REQ-AGENT-047) says "When a script can word the reply (a listing,
    # a count, a field of the data), call run_plan, even for one call, its last line the reply's expression", and
    # call_tool "only for one call whose result you must read to answer (judgement, a summary in prose)"; run_plan's
    # description: "one call and its reply: one node". So a model given that prompt writes one node for each:
    # "How many comments does issue #1 have?": the reply is one field of one issue, worded around the number.
    "simplest": ["f\"Issue #1 has {issues_get_issue(number=1)['comments']} comments.\""],
    # "Which of the 20 newest open issues mention module 3 in their body?": a listing picked by a text match, which
    # having() does; nothing to judge (a question like "which of them look urgent?" would be call_tool's).
    "filter on content": [
        "found = [i['number'] for i in having(issues_list_issues(state='open', limit=20), 'body', 'module 3;')]\n"
        "f\"These mention module 3: {', '.join(f'#{n}' for n in found) or 'none'}.\""],
    "join two servers": [
        "bugs = where(issues_list_issues(state='open', limit=200), labels='bug')[:20]",
        "users = people_list_users()",
        "f\"The teams: {', '.join(sorted(set(i['team'] for i in join(bugs, users, 'author', 'login'))))}.\""],
    "aggregate": [
        f"c = count(issues_list_issues(state='all', limit={ISSUES}), 'labels')",
        "'Per label: ' + ', '.join(f'{k} {c[k]}' for k in sorted(c)) + '.'"],
    # "List the numbers of the 20 newest open issues labelled bug.": a listing, the server's own filter.
    "a server-side filter exists": [
        "n = [i['number'] for i in issues_search_issues(label='bug', limit=20, fields=['number'])]\n"
        "f\"The 20 newest open bugs: {', '.join(f'#{x}' for x in n)}.\""],
    "issue 25's task": [
        "bugs = [i['number'] for i in issues_list_issues(state='open', limit=10) if 'bug' in i['labels']]",
        "text = 'Bugs among the 10 newest open issues: ' + ', '.join(f'#{n}' for n in bugs)\n"
        "issues_add_comment(number=1, body=text)\ntext + '; posted on #1.'"],
    "four model turns": [
        "bug = issues_search_issues(label='bug', limit=1, fields=['number', 'author'])[0]",
        "users = people_list_users()",
        "team = [u['team'] for u in users if u['login'] == bug['author']][0]\n"
        "issues_add_comment(number=bug['number'], body='Routed to team ' + team)\n"
        "f\"Routed to team {team}; posted on #{bug['number']}.\""],
}


def scripts(task_name: str) -> list[str]:
    """The task's plan as scripts, reads first (REQ-AGENT-045)."""
    return next(nodes for start, nodes in _SCRIPTS.items() if task_name.startswith(start))
