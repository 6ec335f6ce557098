// Throwaway fixture (test-only): the smallest extension with the mechanisms the real test relies on.
"use strict";
const vscode = require("vscode");

function activate(context) {
  let mode = context.globalState.get("mode", "Restricted");
  const item = vscode.window.createStatusBarItem("phoenixFixture.mode", vscode.StatusBarAlignment.Left, 100);
  const show = () => {
    item.text = `$(shield) ${mode}`;
    item.show();
  };
  show();
  context.subscriptions.push(
    item,
    vscode.commands.registerCommand("phoenixFixture.toggleMode", async () => {
      mode = mode === "Restricted" ? "Unrestricted" : "Restricted";
      await context.globalState.update("mode", mode);
      show();
    }),
    vscode.commands.registerCommand("phoenixFixture.openChat", () =>
      vscode.commands.executeCommand("phoenixFixture.chat.focus"),
    ),
    vscode.commands.registerCommand("phoenixFixture.appendLine", async () => {
      const doc = vscode.window.activeTextEditor && vscode.window.activeTextEditor.document;
      if (!doc) return false;
      const edit = new vscode.WorkspaceEdit();
      edit.insert(doc.uri, new vscode.Position(doc.lineCount, 0), "appended by the fixture\n");
      return vscode.workspace.applyEdit(edit);
    }),
    vscode.window.registerWebviewViewProvider("phoenixFixture.chat", {
      resolveWebviewView(view) {
        view.webview.options = { enableScripts: true };
        const history = context.workspaceState.get("history", []);
        view.webview.html = `<!DOCTYPE html><html><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline';">
</head><body>
<div data-testid="messages"></div>
<textarea data-testid="chat-input"></textarea><button data-testid="send">Send</button>
<script>
const vscode = acquireVsCodeApi();
const messages = document.querySelector('[data-testid=messages]');
function add(role, text) { const d = document.createElement('div'); d.dataset.testid = 'message-' + role; d.textContent = text; messages.appendChild(d); return d; }
for (const m of ${JSON.stringify(history)}) add(m.role, m.text);
document.querySelector('[data-testid=send]').onclick = () => {
  const input = document.querySelector('[data-testid=chat-input]');
  add('user', input.value); vscode.postMessage({ text: input.value }); input.value = '';
};
let current = null;
window.addEventListener('message', (e) => {
  if (e.data.kind === 'start') current = add('assistant', '');
  if (e.data.kind === 'delta') current.textContent += e.data.text;
});
</script></body></html>`;
        view.webview.onDidReceiveMessage(async (msg) => {
          const answer = `echo: ${msg.text}`;
          await view.webview.postMessage({ kind: "start" });
          for (const piece of [answer.slice(0, 3), answer.slice(3, 8), answer.slice(8)]) {
            await new Promise((r) => setTimeout(r, 50));
            await view.webview.postMessage({ kind: "delta", text: piece });
          }
          const h = context.workspaceState.get("history", []);
          h.push({ role: "user", text: msg.text }, { role: "assistant", text: answer });
          await context.workspaceState.update("history", h);
        });
      },
    }),
  );
}

module.exports = { activate, deactivate() {} };
