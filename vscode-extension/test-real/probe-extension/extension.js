// Test-only probe (never shipped): lets the real-VS-Code test read editor state from the extension host.
// GET /state          -> {documents: [{uri, text, isDirty, version}], activeEditor, extensions,
//                         extensionHostPid, time}
// POST /command       {command, args?} -> {result}
// POST /open          {path, preview?} -> {uri}
// GET /commands?prefix=P -> {commands}
// GET /changes        -> {changes: [{path, version, time}]}: every content change of a file's document since
//                        the probe started, with the extension host's clock (Date.now()) when it was seen
// POST /hop           {count, intervalMs} -> {panel: true}: opens a webview panel (its page only records what
//                        comes) and posts it `count` tiny messages {at: Date.now()}, `intervalMs` apart, each
//                        posted as soon as it is due, nothing coalesced: VS Code's own host -> webview hop
//                        for bench/vscode.py, beside the chat's. The page keeps window.__hop = {arrived: [ms],
//                        at: [ms], done}; read it through the driver's "webview" frame with this extension's id.
"use strict";
const http = require("http");
const vscode = require("vscode");

let server;
const changes = [];

function json(res, status, body) {
  const data = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(data) });
  res.end(data);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      try {
        resolve(data ? JSON.parse(data) : {});
      } catch (e) {
        reject(e);
      }
    });
    req.on("error", reject);
  });
}

function safe(value) {
  try {
    return JSON.parse(JSON.stringify(value === undefined ? null : value));
  } catch {
    return String(value);
  }
}

async function handle(req, res) {
  const url = new URL(req.url, "http://probe");
  if (req.method === "GET" && url.pathname === "/state") {
    const ids = (url.searchParams.get("extensions") || "").split(",").filter(Boolean);
    const extensions = {};
    for (const id of ids) {
      const ext = vscode.extensions.getExtension(id);
      extensions[id] = ext ? { installed: true, active: ext.isActive } : { installed: false, active: false };
    }
    const editor = vscode.window.activeTextEditor;
    return json(res, 200, {
      documents: vscode.workspace.textDocuments
        .filter((d) => d.uri.scheme === "file" || d.uri.scheme === "vscode-remote")
        .map((d) => ({ uri: d.uri.toString(), path: d.uri.path, text: d.getText(), isDirty: d.isDirty, version: d.version })),
      activeEditor: editor ? editor.document.uri.toString() : null,
      extensions,
      extensionHostPid: process.pid,
      time: Date.now(),
    });
  }
  if (req.method === "GET" && url.pathname === "/changes") {
    return json(res, 200, { changes });
  }
  if (req.method === "GET" && url.pathname === "/commands") {
    const prefix = url.searchParams.get("prefix") || "";
    const all = await vscode.commands.getCommands(true);
    return json(res, 200, { commands: all.filter((c) => c.startsWith(prefix)).sort() });
  }
  if (req.method === "POST" && url.pathname === "/command") {
    const body = await readBody(req);
    const result = await vscode.commands.executeCommand(body.command, ...(body.args || []));
    return json(res, 200, { result: safe(result) });
  }
  if (req.method === "POST" && url.pathname === "/open") {
    const body = await readBody(req);
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(body.path));
    await vscode.window.showTextDocument(doc, { preview: Boolean(body.preview) });
    return json(res, 200, { uri: doc.uri.toString() });
  }
  if (req.method === "POST" && url.pathname === "/hop") {
    const body = await readBody(req);
    hop(Number(body.count) || 0, Number(body.intervalMs) || 25);
    return json(res, 200, { panel: true });
  }
  return json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
}

const HOP_PAGE = `<!DOCTYPE html><html><head><meta charset="utf-8"></head><body><p id="n">0</p><script>
  const rec = (window.__hop = { arrived: [], at: [], done: false });
  const vscode = acquireVsCodeApi();
  window.addEventListener("message", (e) => {
    const t = performance.timeOrigin + performance.now();
    if (e.data && e.data.end) { rec.done = true; return; }
    if (!e.data || typeof e.data.at !== "number") return;
    rec.arrived.push(t);
    rec.at.push(e.data.at);
  });
  vscode.postMessage({ ready: true });
</script></body></html>`;

function hop(count, intervalMs) {
  const panel = vscode.window.createWebviewPanel("phoenixTestProbe.hop", "Probe hop", vscode.ViewColumn.One, { enableScripts: true });
  panel.webview.onDidReceiveMessage(() => {
    const start = Date.now();
    let sent = 0;
    const next = () => {
      if (sent === count) {
        void panel.webview.postMessage({ end: true });
        return;
      }
      void panel.webview.postMessage({ at: Date.now() });
      sent++;
      setTimeout(next, Math.max(0, start + sent * intervalMs - Date.now()));
    };
    next();
  });
  panel.webview.html = HOP_PAGE;
}

function listen(port, deadline) {
  server = http.createServer((req, res) => {
    handle(req, res).catch((e) => json(res, 500, { error: String((e && e.stack) || e) }));
  });
  server.on("error", (e) => {
    // After a window reload the previous extension host may still hold the port for a moment.
    if (e.code === "EADDRINUSE" && Date.now() < deadline) setTimeout(() => listen(port, deadline), 100);
    else console.error("phoenix-test-probe: cannot listen", e);
  });
  server.listen(port, "127.0.0.1");
}

function activate() {
  const port = Number(process.env.PHOENIX_TEST_PROBE_PORT || 0);
  if (!port) return;
  vscode.workspace.onDidChangeTextDocument((e) => {
    if (e.document.uri.scheme === "file" && e.contentChanges.length > 0) {
      changes.push({ path: e.document.uri.path, version: e.document.version, time: Date.now() });
    }
  });
  listen(port, Date.now() + 20000);
}

function deactivate() {
  if (server) server.close();
}

module.exports = { activate, deactivate };
