"""The agent arm's plans on the multi-tool flows of ``bench agent_tasks``, written as a model that knows its
reads start while it still writes the plan (REQ-AGENT-044) would write them: each read first, a node of its own,
then the node that combines them, writes and renders the answer (REQ-AGENT-039). The same calls and the same
answer as the task's one-node script (``Task.rendered``); the single-call tasks keep their one node."""

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
