/** The output channels: "Phoenix" (the extension's and the server's log) and "Phoenix Trace" (LSP traffic). */

import * as vscode from "vscode";

export class Logs implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel = vscode.window.createOutputChannel("Phoenix", { log: true });
  readonly trace: vscode.LogOutputChannel = vscode.window.createOutputChannel("Phoenix Trace", { log: true });

  info(message: string): void {
    this.output.info(message);
  }

  error(message: string, error?: unknown): void {
    this.output.error(error === undefined ? message : `${message}: ${describe(error)}`);
  }

  show(): void {
    this.output.show(true);
  }

  dispose(): void {
    this.output.dispose();
    this.trace.dispose();
  }
}

export function describe(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (error && typeof error === "object" && "message" in error) return String((error as { message: unknown }).message);
  return String(error);
}
