/**
 * Spawning the server, the first thing activation does (issue 35): the Python server takes a few hundred ms to
 * answer `initialize`, so it starts before the rest of the extension (the language client, the chat view, the
 * commands: `dist/host.js`) is even loaded, and that work runs while the server boots. This module is part of
 * the small entry bundle, so it imports nothing heavy: Node built-ins, the pure discovery and spawn, the settings.
 */

import type { ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { discoverServer, isFailure, type DiscoveryFailure, type ServerCommand } from "../core/discovery";
import { spawnServer } from "../core/spawn";
import { parseCpuTicks, parseSchedstat, type CpuTicks, type Sched } from "../core/startClock";
import { serverSettings } from "./settings";

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findServer(): ServerCommand | DiscoveryFailure {
  const settings = serverSettings();
  return discoverServer({
    command: settings.command,
    args: settings.args,
    path: (process.env.PATH ?? "").split(path.delimiter),
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    platform: process.platform,
    isExecutable,
  });
}

/** A /proc file's text on Linux; undefined elsewhere or when it cannot be read (the start-up figures are extra). */
export function readProc(file: string): string | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
}

/** The machine's CPU ticks and the extension host's main thread, read at the spawn (core/startClock.ts). */
export interface SpawnClock {
  cpu: CpuTicks | undefined;
  host: Sched | undefined;
}

export function readSpawnClock(): SpawnClock {
  return { cpu: parseCpuTicks(readProc("/proc/stat")), host: parseSchedstat(readProc("/proc/self/schedstat")) };
}

/** A server process started (or the reason none could be), with the time it was spawned (the log says it). */
export type Launch =
  | { ok: true; found: ServerCommand; process: Promise<ChildProcess>; spawnedAt: number; clock: SpawnClock }
  | { ok: false; failure: DiscoveryFailure };

/** Find the server and spawn it over stdio, with the `phoenix.server.env` settings on top of the host's env. */
export function launchServer(): Launch {
  const found = findServer();
  if (isFailure(found)) return { ok: false, failure: found };
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const clock = readSpawnClock();
  const spawned = spawnServer(found.command, found.args, { cwd, env: { ...process.env, ...serverSettings().env } });
  return { ok: true, found, ...spawned, clock };
}
