/**
 * The route selector's words (issue 14, REQ-AGENT-001): how a message is processed, `ask` (the model calls
 * tools directly) or `agent` (an orchestrator runs planned scripts). Pure, so the texts are unit-tested.
 */

import type { Route, SendMessageParams } from "../protocol/wire";
import type { Label } from "./labels";

/** The routes, in the selector's order (`ask` is the default). */
export const ROUTES: readonly Route[] = ["ask", "agent"];

const LABELS: Record<Route, Label> = {
  ask: {
    text: "Ask",
    tooltip: "Route: ask. The model answers and calls tools itself (the default). Every client on this machine uses the route chosen here.",
  },
  agent: {
    text: "Agent",
    tooltip: "Route: agent. An orchestrator plans the work and runs short scripts, handing the model compact results. Every client on this machine uses the route chosen here.",
  },
};

export function routeLabel(route: Route): Label {
  return LABELS[route];
}

/**
 * The params of phoenix/sendMessage with the selected route; without one (the server has not said which yet)
 * the field is left out, which the server reads as the persisted route.
 */
export function withRoute(params: SendMessageParams, route: Route | undefined): SendMessageParams {
  return route ? { ...params, route } : params;
}
