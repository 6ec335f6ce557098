/**
 * The words the status bar and the chat header show for mode, policy and style (specs/modes.md words).
 * Pure, so the texts are unit-tested (REQ-PERM-009, REQ-LAYER-008).
 */

import type { Mode, Policy, SandboxInfo, Style } from "../protocol/wire";
import type { ServerState } from "./messages";

export interface Label {
  text: string;
  tooltip: string;
  warning?: boolean;
}

export function modeLabel(mode: Mode, sandbox?: SandboxInfo): Label {
  const unavailable = sandbox !== undefined && !sandbox.available;
  if (mode === "restricted") {
    return {
      text: "$(lock) Restricted",
      tooltip:
        "Mode: restricted. Commands run in the kernel sandbox (read-only, no network); patches are refused. " +
        "Click to unrestrict (/execute).",
    };
  }
  return {
    text: unavailable ? "$(warning) Unrestricted" : "$(unlock) Unrestricted",
    tooltip: unavailable
      ? `Mode: unrestricted. The sandbox is unavailable here (${sandbox?.reason ?? "no Landlock"}), so ` +
        "restricted mode cannot be used: every command runs without the kernel sandbox."
      : "Mode: unrestricted. Commands and patches run (subject to the approval policy). Click to restrict (/plan).",
    warning: unavailable,
  };
}

export function policyLabel(policy: Policy): Label {
  return policy === "auto"
    ? {
        text: "🚀 Auto",
        tooltip: "Approval policy: auto: tool calls the mode permits run without asking. " +
          "Click or Shift+Tab in the chat to switch to interactive.",
      }
    : {
        text: "🔒 Interactive",
        tooltip: "Approval policy: interactive: each write or exec tool call waits for Allow / Deny / Always Allow. " +
          "Click or Shift+Tab in the chat to switch to auto.",
      };
}

/** What a new conversation starts with: the settings' policy and style; restricted unless the sandbox is unavailable. */
export interface NewConversationStart {
  sandbox?: SandboxInfo;
  policy: Policy;
  style: Style;
}

/**
 * The status bar before any conversation exists: the mode, policy and style the first one will start with,
 * so a first-time user sees them before sending anything.
 */
export function newConversationLabels(start: NewConversationStart): { mode: Label; policy: Label; style: Label } {
  const mode: Mode = start.sandbox && !start.sandbox.available ? "unrestricted" : "restricted";
  const m = modeLabel(mode, start.sandbox);
  const p = policyLabel(start.policy);
  return {
    mode: {
      ...m,
      tooltip: `No conversation yet: a new one starts ${mode}. ${m.tooltip.replace(/ Click to .*$/, "")} Click to open the chat.`,
    },
    policy: {
      text: p.text,
      tooltip: `No conversation yet: a new one starts with approval policy ${start.policy} (the setting phoenix.approvalPolicy). Click to change the setting.`,
    },
    style: {
      text: styleLabel(start.style).text,
      tooltip: `No conversation yet: a new one starts in style ${start.style} (the setting phoenix.style). Click to change the setting.`,
    },
  };
}

export function styleLabel(style: Style): Label {
  return { text: `$(comment-discussion) ${style}`, tooltip: `Style: ${style} (how the agent talks). Click to change.` };
}

export const STYLES: Style[] = ["chat", "discussion", "plan", "development", "task"];

export function togglePolicy(policy: Policy): Policy {
  return policy === "auto" ? "interactive" : "auto";
}

/** The context key that says a turn runs (package.json shows the chat view's stop button by it). */
export const BUSY_CONTEXT = "phoenix.busy";

/**
 * What the status bar shows, as one string: it changes only with the server, mode, sandbox, policy or style,
 * so the items are not touched on every streamed delta.
 */
export function statusBarKey(
  view: { mode: Mode; policy: Policy; style: Style; sandbox?: SandboxInfo } | undefined,
  server: ServerState,
): string {
  if (server !== "ready" || !view) return `${server}|${view ? "view" : "none"}`;
  return [server, view.mode, view.sandbox?.available ?? "", view.sandbox?.reason ?? "", view.policy, view.style].join("|");
}
