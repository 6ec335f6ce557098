import { test } from "node:test";
import assert from "node:assert/strict";
import { discoverServer, isFailure, type DiscoveryInput } from "../src/core/discovery";

const base = (over: Partial<DiscoveryInput> = {}): DiscoveryInput => ({
  command: "",
  args: [],
  path: ["/usr/bin", "/opt/tools/bin"],
  workspaceFolders: ["/home/u/project"],
  platform: "linux",
  isExecutable: () => false,
  ...over,
});

test("the setting wins, with `serve` unless args are given (REQ-VSC-001)", () => {
  assert.deepEqual(discoverServer(base({ command: " /x/phoenix-lsp ", isExecutable: () => true })), { command: "/x/phoenix-lsp", args: ["serve"], source: "setting" });
  assert.deepEqual(discoverServer(base({ command: "/x/p", args: ["serve", "--data-dir", "/d"] })), { command: "/x/p", args: ["serve", "--data-dir", "/d"], source: "setting" });
});

test("then phoenix-lsp on PATH, in PATH order", () => {
  const found = discoverServer(base({ isExecutable: (f) => f === "/opt/tools/bin/phoenix-lsp" }));
  assert.deepEqual(found, { command: "/opt/tools/bin/phoenix-lsp", args: ["serve"], source: "PATH" });
});

test("then the workspace's .venv: its phoenix-lsp, else its python -m phoenix_lsp", () => {
  assert.deepEqual(discoverServer(base({ isExecutable: (f) => f === "/home/u/project/.venv/bin/phoenix-lsp" })), {
    command: "/home/u/project/.venv/bin/phoenix-lsp",
    args: ["serve"],
    source: "workspace environment",
  });
  assert.deepEqual(discoverServer(base({ isExecutable: (f) => f === "/home/u/project/.venv/bin/python" })), {
    command: "/home/u/project/.venv/bin/python",
    args: ["-m", "phoenix_lsp", "serve"],
    source: "workspace environment",
  });
});

test("nothing found: a message that says what, why and what next, and what was tried", () => {
  const found = discoverServer(base());
  assert.ok(isFailure(found));
  assert.match(found.message, /could not find its server/);
  assert.match(found.message, /phoenix\.server\.command/);
  assert.ok(found.tried.includes("/usr/bin/phoenix-lsp"));
  assert.ok(found.tried.includes("/home/u/project/.venv/bin/python -m phoenix_lsp"));
});

test("Windows layout: Scripts\\phoenix-lsp.exe", () => {
  const found = discoverServer(base({ platform: "win32", path: ["C:\\bin"], workspaceFolders: [], isExecutable: (f) => f === "C:\\bin\\phoenix-lsp.exe" }));
  assert.deepEqual(found, { command: "C:\\bin\\phoenix-lsp.exe", args: ["serve"], source: "PATH" });
});
