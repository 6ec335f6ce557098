import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnServer } from "../src/core/spawn";

test("the server process is handed over once it runs, with its stdio (issue 35)", async () => {
  const spawned = spawnServer(process.execPath, ["-e", "process.stdin.pipe(process.stdout)"], { env: process.env });
  const child = await spawned.process;
  assert.ok(child.pid !== undefined && child.stdin && child.stdout);
  assert.ok(spawned.spawnedAt <= Date.now());
  const echoed = new Promise<string>((resolve) => child.stdout!.once("data", (d: Buffer) => resolve(d.toString())));
  child.stdin!.write("Content-Length: 2\r\n\r\n{}");
  assert.equal(await echoed, "Content-Length: 2\r\n\r\n{}");
  child.kill();
});

test("a command that cannot be run rejects with the error that names it, thrown nowhere else", async () => {
  const spawned = spawnServer("/nonexistent/phoenix-lsp", ["serve"], { env: process.env });
  await assert.rejects(spawned.process, /ENOENT/);
  const refused = spawnServer("phoenix-lsp", ["ser\0ve"], { env: process.env });
  await assert.rejects(refused.process, /null bytes/, "an argument spawn refuses outright is a rejection, not a throw");
});
