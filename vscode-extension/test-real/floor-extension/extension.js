// Measurement only (never shipped; README.md): the floor of activation -> server ready in this VS Code.
// When VS Code loads the module (as the Phoenix extension's entry does, before `activate`) it spawns the command
// of $PHOENIX_FLOOR_CONFIG ({kind, command, args, frame (base64), log}), writes the initialize frame and appends
// one JSON line to `log` when the answer's first bytes arrive: {kind, loadedAt, spawnedAt, readyAt} (Date.now(),
// the clock of VS Code's own log lines). `activate` only registers the view.
"use strict";
const { spawn } = require("child_process");
const fs = require("fs");
const vscode = require("vscode");

const loadedAt = Date.now();
const config = JSON.parse(fs.readFileSync(process.env.PHOENIX_FLOOR_CONFIG, "utf8"));
const cwd = vscode.workspace.workspaceFolders && vscode.workspace.workspaceFolders[0].uri.fsPath;
const child = spawn(config.command, config.args, { cwd, stdio: ["pipe", "pipe", "ignore"] });
const spawnedAt = Date.now();
child.stdin.write(Buffer.from(config.frame, "base64"));
let done = false;
child.stdout.on("data", () => {
  if (done) return;
  done = true;
  const readyAt = Date.now();
  fs.appendFileSync(config.log, JSON.stringify({ kind: config.kind, loadedAt, spawnedAt, readyAt }) + "\n");
  child.kill();
});

function activate(context) {
  context.subscriptions.push(
    { dispose: () => child.kill() },
    vscode.window.registerWebviewViewProvider("phoenix-floor.view", {
      resolveWebviewView(view) {
        view.webview.html = "<!DOCTYPE html><html><body><p>floor</p></body></html>";
      },
    }),
    vscode.commands.registerCommand("phoenix-floor.open", () =>
      vscode.commands.executeCommand("workbench.view.extension.phoenix-floor"),
    ),
  );
}

function deactivate() {
  child.kill();
}

module.exports = { activate, deactivate };
