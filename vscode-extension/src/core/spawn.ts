/**
 * Spawning the server process (issue 35), apart from VS Code so it is unit-tested: what to run comes from
 * discovery (core/discovery.ts), the settings' environment and the workspace folder from the caller.
 */

import { spawn, type ChildProcess } from "node:child_process";

export interface Spawned {
  /**
   * Resolves once the process runs; rejects with the spawn error (a missing or non-executable command, an
   * argument spawn refuses), so the language client's start fails with a message that names it. The error
   * is listened for at once: an unheard `error` event would be thrown in the extension host.
   */
  process: Promise<ChildProcess>;
  /** Date.now() at the spawn: the log says how long after it the server answered */
  spawnedAt: number;
}

export function spawnServer(command: string, args: string[], options: { cwd?: string; env: NodeJS.ProcessEnv }): Spawned {
  const spawnedAt = Date.now();
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: "pipe" });
  } catch (error) {
    const refused = Promise.reject(error instanceof Error ? error : new Error(String(error)));
    refused.catch(() => undefined); // handled where it is awaited
    return { process: refused, spawnedAt };
  }
  const running = new Promise<ChildProcess>((resolve, reject) => {
    if (child.pid !== undefined) resolve(child);
    child.once("spawn", () => resolve(child));
    child.on("error", reject); // a later error (after it ran) settles nothing more
  });
  running.catch(() => undefined); // handled where it is awaited
  return { process: running, spawnedAt };
}
