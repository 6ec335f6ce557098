import { test } from "node:test";
import assert from "node:assert/strict";
import { ROUTES, routeLabel, withRoute } from "../src/core/routes";

test("the route selector offers ask (the default, first) and agent, each with its words (REQ-AGENT-001)", () => {
  assert.deepEqual(ROUTES, ["ask", "agent"]);
  assert.equal(routeLabel("ask").text, "Ask");
  assert.equal(routeLabel("agent").text, "Agent");
  assert.match(routeLabel("ask").tooltip, /^Route: ask\. .*default/);
  assert.match(routeLabel("agent").tooltip, /^Route: agent\. .*orchestrator/);
  for (const r of ROUTES) assert.match(routeLabel(r).tooltip, /every client on this machine/i);
});

test("every sendMessage carries the selected route; before the server has said, none (the server's own) (REQ-AGENT-001)", () => {
  const params = { conversationId: "c1", text: "hi" };
  assert.deepEqual(withRoute(params, "agent"), { conversationId: "c1", text: "hi", route: "agent" });
  assert.deepEqual(withRoute(params, "ask"), { conversationId: "c1", text: "hi", route: "ask" });
  assert.deepEqual(withRoute(params, undefined), { conversationId: "c1", text: "hi" });
  assert.ok(!("route" in withRoute(params, undefined)));
  assert.deepEqual(params, { conversationId: "c1", text: "hi" }, "the params given are not changed");
});
