/**
 * "Phoenix: Review Background Command" (REQ-BASH-045), the flow without VS Code: what a running background
 * command changed so far is asked for (read-only) and shown as a diff document; the user then keeps it running
 * or stops it, and a stopped command's changes are reviewed by the server like any command's (its question comes
 * as any review's). The host gives the flow its client and its window (`BackgroundUi`), so a unit test drives it.
 */
import type { BackgroundChanges, ReviewBackgroundResult } from "../protocol/wire";

export interface BackgroundClient {
  reviewBackground(conversationId: string, pid?: number, stop?: boolean): Promise<ReviewBackgroundResult>;
}

export interface BackgroundUi {
  /** One of the running commands, when there are several (undefined: the user dismissed the pick). */
  pick(items: { label: string; description: string; pid: number }[]): Promise<number | undefined>;
  /** The changes so far, as a read-only document (a diff). */
  show(document: string): Promise<void>;
  /** Ask what to do now; the chosen label, or undefined when dismissed. */
  ask(message: string, choices: string[]): Promise<string | undefined>;
  info(message: string): void;
  warn(message: string): void;
}

export const STOP = "Stop It and Review";
export const KEEP = "Keep It Running";

/** The document that shows one command's changes so far: its summary as comment lines, then its diff. */
export function changesDocument(command: BackgroundChanges): string {
  const head = [`# PID ${command.pid}: ${command.command}`, "# What it changed so far (read-only; nothing has landed):",
    ...command.files.map((f) => `#   ${f}`)];
  return `${head.join("\n")}\n${command.diff}`;
}

export async function reviewBackground(client: BackgroundClient, ui: BackgroundUi, conversationId: string,
                                       errorMessage: (e: unknown) => string): Promise<void> {
  let shown: ReviewBackgroundResult;
  try {
    shown = await client.reviewBackground(conversationId);
  } catch (error) {
    ui.warn(errorMessage(error));
    return;
  }
  let command = shown.commands[0];
  if (shown.commands.length > 1) {
    const pid = await ui.pick(shown.commands.map((c) => ({
      label: c.command.slice(0, 80), description: `PID ${c.pid}: ${c.files.length} path(s) changed so far`, pid: c.pid,
    })));
    const picked = shown.commands.find((c) => c.pid === pid);
    if (!picked) return;
    command = picked;
  }
  if (!command) return;
  await ui.show(changesDocument(command));
  const choice = await ui.ask(
    `\`${command.command.slice(0, 80)}\` changed ${command.files.length} path(s) so far. Nothing lands while it runs: ` +
    "stop it to review all it changed now.", [STOP, KEEP]);
  if (choice !== STOP) return;
  try {
    const stopped = await client.reviewBackground(conversationId, command.pid, true);
    ui.info(stopped.message);
  } catch (error) {
    ui.warn(errorMessage(error));
  }
}
