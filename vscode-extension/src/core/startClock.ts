/**
 * Where the server's start-up time goes inside VS Code (issue 35): the log line "the server is ready" says,
 * beside the ms from the spawn to the answer of `initialize`, when the extension sent `initialize`, how long
 * the server's main thread ran on a CPU and how long it waited for one (Linux's /proc/PID/schedstat), and how
 * busy the machine's cores were meanwhile (/proc/stat). So a slow start reads as "the server waited for a
 * CPU" or "initialize was sent late" rather than as a guess. Pure: the texts are read by the caller
 * (host/launch.ts); anything unreadable or malformed is `undefined`, never a throw.
 */

/** ms a thread ran on a CPU and ms it waited on a run queue, since it started */
export interface Sched {
  runMs: number;
  waitMs: number;
}

/** /proc/PID/schedstat: "<ns on a CPU> <ns waiting on a run queue> <timeslices>" */
export function parseSchedstat(text: string | undefined): Sched | undefined {
  const m = /^(\d+) (\d+) \d+\s*$/.exec(text ?? "");
  if (!m) return undefined;
  return { runMs: Number(m[1]) / 1e6, waitMs: Number(m[2]) / 1e6 };
}

/** The machine's CPU time, all cores together, in clock ticks: busy and total (/proc/stat's "cpu" line). */
export interface CpuTicks {
  busy: number;
  total: number;
}

export function parseCpuTicks(text: string | undefined): CpuTicks | undefined {
  const line = (text ?? "").split("\n", 1)[0];
  const m = /^cpu((?: +\d+){4,10})\s*$/.exec(line);
  if (!m) return undefined;
  const ticks = m[1].trim().split(/ +/).map(Number);
  // user nice system idle iowait irq softirq steal guest guest_nice: guest time is counted in user already
  const total = ticks.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = ticks[3] + (ticks[4] ?? 0);
  return { busy: total - idle, total };
}

/** The share of the cores that were busy between two readings, in % (undefined if either is missing). */
export function busyPercent(before: CpuTicks | undefined, after: CpuTicks | undefined): number | undefined {
  if (!before || !after || after.total <= before.total) return undefined;
  return (100 * (after.busy - before.busy)) / (after.total - before.total);
}

export interface StartReport {
  /** ms from the spawn to `initialize` answered */
  readyMs: number;
  /** ms from the spawn (at the entry bundle's load) to VS Code calling `activate` (the first start only) */
  activatedMs?: number;
  /** ms from the spawn to host.js loaded (the language client's bundle; the first start only) */
  loadedMs?: number;
  /** ms from the spawn to the language client sending `initialize` */
  sentMs?: number;
  /** the server's main thread from its start to the answer (read once the client has it, so it may hold a
   *  little of the server's work after its answer: `initialized` arrives at once) */
  server?: Sched;
  /** the extension host's main thread between the spawn and the answer */
  host?: Sched;
  /** % of all cores busy between the spawn and the answer */
  busy?: number;
}

/** The ready line (bench/vscode.py reads its figures: keep the words). */
export function readyLine(r: StartReport): string {
  const parts = [`initialize answered ${Math.round(r.readyMs)} ms after the spawn`];
  if (r.activatedMs !== undefined) parts.push(`activate called ${Math.round(r.activatedMs)} ms after it`);
  if (r.loadedMs !== undefined) parts.push(`host.js loaded ${Math.round(r.loadedMs)} ms after it`);
  if (r.sentMs !== undefined) parts.push(`sent ${Math.round(r.sentMs)} ms after it`);
  if (r.server) parts.push(`the server ran ${Math.round(r.server.runMs)} ms and waited ${Math.round(r.server.waitMs)} ms for a CPU`);
  if (r.host) parts.push(`the extension host ran ${Math.round(r.host.runMs)} ms and waited ${Math.round(r.host.waitMs)} ms`);
  if (r.busy !== undefined) parts.push(`cores ${Math.round(r.busy)}% busy`);
  return `the server is ready (${parts.join("; ")})`;
}

/** The difference of two readings of one thread (the host's, over an interval). */
export function schedSince(before: Sched | undefined, after: Sched | undefined): Sched | undefined {
  if (!before || !after) return undefined;
  return { runMs: after.runMs - before.runMs, waitMs: after.waitMs - before.waitMs };
}
