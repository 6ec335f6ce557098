/**
 * The conversation's statuses, once for the extension host and the webview: what the user reads for each and
 * whether the agent works in it (a message is refused as busy, the stop button shows, Escape cancels).
 *
 * The table is keyed by the generated wire type `Status` (specs/protocol.schema.json): a status the server adds
 * or drops is a compile error here, so this is the one list of them in TypeScript.
 */

import type { Status } from "../protocol/wire";

export const STATUS: { readonly [S in Status]: { readonly text: string; readonly busy: boolean } } = {
  idle: { text: "Ready", busy: false },
  awaiting_llm: { text: "Thinking…", busy: true },
  running_tool: { text: "Running a tool…", busy: true },
  awaiting_approval: { text: "Waiting for your approval", busy: false },
  awaiting_upgrade: { text: "Waiting for your answer to an upgrade request", busy: false },
  awaiting_agents: { text: "Waiting for sub-agents…", busy: true },
  summarizing: { text: "Summarising the conversation…", busy: true },
  error: { text: "Error", busy: false },
  exhausted: { text: "Context exhausted", busy: false },
  finished: { text: "Finished", busy: false },
};

/** Every status, in the wire's order. */
export const STATUSES = Object.keys(STATUS) as Status[];

/** What the user reads for `status` (a status this version does not know: its wire name). */
export function statusText(status: Status): string {
  return STATUS[status]?.text ?? status;
}

/** Whether the agent works in `status` (REQ-VSC-014: the stop button shows only then). */
export function isBusy(status: Status): boolean {
  return STATUS[status]?.busy ?? false;
}
