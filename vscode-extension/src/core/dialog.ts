/**
 * The approval dialog's keyboard state machine (seed 003, REQ-PERM-012/013/014): a vertical list of
 * choices, the first (Allow / Approve) focused when it opens, Up/Down move, Enter confirms, Y / N / A
 * answer at once, Escape denies. While the dialog is open it consumes every key. Pure: no DOM.
 */

import type { ApprovalRequest, UpgradeRequest } from "../protocol/wire";
import { mcpParts, scopeWords } from "./toolNames";

export type Answer =
  | { kind: "approval"; toolUseId: string; decision: "allow" | "deny" | "alwaysAllow"; rule?: string }
  | { kind: "upgrade"; toolUseId: string; approve: boolean };

export interface Choice {
  label: string;
  /** the shortcut letter shown next to the label (lower case) */
  key?: string;
  answer: Answer;
  /** Always Allow's scope: a command prefix or an MCP tool (`narrow`), the whole tool, or an MCP tool's whole
   * server (`server`) */
  scope?: "narrow" | "tool" | "server";
}

export interface DialogState {
  kind: "approval" | "upgrade";
  id: string;
  choices: Choice[];
  selected: number;
}

export interface KeyInput {
  key: string;
  shiftKey?: boolean;
  ctrlKey?: boolean;
  altKey?: boolean;
  metaKey?: boolean;
}

export interface KeyResult {
  state: DialogState;
  /** the answer to send, when the key decided */
  answer?: Answer;
  /** always true while the dialog is open: no key reaches the chat input (REQ-PERM-014) */
  consumed: boolean;
}

/**
 * The dialog for an approval: Allow, Deny, Always Allow. Always Allow offers the server's scopes
 * (REQ-PERM-020): the narrowest first (A, e.g. `git status *`), the whole tool as the other choice (T).
 * A call with one scope (a patch, an unparsable command) gets the single "Always Allow". An MCP tool's are the
 * tool (A, "Always Allow create_issue") and every tool of its server (S, "Always Allow every tool of tracker"),
 * REQ-MCP-023.
 */
export function approvalDialog(request: ApprovalRequest): DialogState {
  const id = request.toolUseId;
  const scopes = request.scopes ?? [];
  const always = (rule: string | undefined): Answer => ({
    kind: "approval",
    toolUseId: id,
    decision: "alwaysAllow",
    ...(rule !== undefined ? { rule } : {}),
  });
  const wide = scopes[scopes.length - 1]?.rule ?? "";
  const alwaysChoices: Choice[] =
    scopes.length > 1 && mcpParts(wide)
      ? [
          {
            label: `Always Allow ${scopeWords(scopes[0].rule)}`,
            key: "a",
            answer: always(scopes[0].rule),
            scope: "narrow",
          },
          { label: `Always Allow ${scopeWords(wide)}`, key: "s", answer: always(wide), scope: "server" },
        ]
      : scopes.length > 1
      ? [
          { label: `Always Allow ${scopes[0].rule}`, key: "a", answer: always(scopes[0].rule), scope: "narrow" },
          {
            label: `Always Allow every ${scopes[scopes.length - 1].rule} call`,
            key: "t",
            answer: always(scopes[scopes.length - 1].rule),
            scope: "tool",
          },
        ]
      : [{ label: "Always Allow", key: "a", answer: always(scopes[0]?.rule), scope: "tool" }];
  return {
    kind: "approval",
    id,
    choices: [
      { label: "Allow", key: "y", answer: { kind: "approval", toolUseId: id, decision: "allow" } },
      { label: "Deny", key: "n", answer: { kind: "approval", toolUseId: id, decision: "deny" } },
      ...alwaysChoices,
    ],
    selected: 0,
  };
}

/** The dialog for an upgrade request: Approve, Deny. */
export function upgradeDialog(request: UpgradeRequest): DialogState {
  const id = request.toolUseId;
  return {
    kind: "upgrade",
    id,
    choices: [
      { label: "Approve", key: "y", answer: { kind: "upgrade", toolUseId: id, approve: true } },
      { label: "Deny", key: "n", answer: { kind: "upgrade", toolUseId: id, approve: false } },
    ],
    selected: 0,
  };
}

/** The deny answer of a dialog (Escape, or a dialog closed without a choice). */
export function denyAnswer(state: DialogState): Answer {
  return state.kind === "approval"
    ? { kind: "approval", toolUseId: state.id, decision: "deny" }
    : { kind: "upgrade", toolUseId: state.id, approve: false };
}

export function handleKey(state: DialogState, input: KeyInput): KeyResult {
  if (input.ctrlKey || input.metaKey || input.altKey) return { state, consumed: true };
  const last = state.choices.length - 1;
  switch (input.key) {
    case "ArrowUp":
    case "Up":
      return { state: { ...state, selected: Math.max(0, state.selected - 1) }, consumed: true };
    case "ArrowDown":
    case "Down":
      return { state: { ...state, selected: Math.min(last, state.selected + 1) }, consumed: true };
    case "Home":
      return { state: { ...state, selected: 0 }, consumed: true };
    case "End":
      return { state: { ...state, selected: last }, consumed: true };
    case "Enter":
    case " ":
      return { state, answer: state.choices[state.selected].answer, consumed: true };
    case "Escape":
    case "Esc":
      return { state, answer: denyAnswer(state), consumed: true };
  }
  if (input.key.length === 1) {
    const letter = input.key.toLowerCase();
    const index = state.choices.findIndex((c) => c.key === letter);
    if (index >= 0) return { state: { ...state, selected: index }, answer: state.choices[index].answer, consumed: true };
  }
  return { state, consumed: true };
}

/** The hint line at the bottom of the dialog. */
export function shortcutHint(state: DialogState): string {
  const letters = state.choices
    .filter((c) => c.key)
    .map((c) => `${c.key!.toUpperCase()} ${c.label}`);
  return `↑/↓ move · Enter confirm · ${letters.join(" · ")} · Esc deny`;
}

/** An approval's arguments as compact JSON, all of them: never cut (REQ-PERM-023). */
export function wholeArguments(args: Record<string, unknown>): string {
  return JSON.stringify(args);
}

/** Arguments as compact JSON (no insignificant whitespace), long values cut for display (REQ-PERM-005): for
 * tool cards in the timeline, never for an approval. */
export function compactArguments(args: Record<string, unknown>, maxValue = 400): string {
  const cut = (value: unknown): unknown => {
    if (typeof value === "string" && value.length > maxValue) {
      return `${value.slice(0, maxValue)}… (${value.length - maxValue} more characters)`;
    }
    if (Array.isArray(value)) return value.map(cut);
    if (value && typeof value === "object") {
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, cut(v)]));
    }
    return value;
  };
  return JSON.stringify(cut(args));
}
