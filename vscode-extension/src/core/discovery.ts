/**
 * Which command starts the server (issue 10): the `phoenix.server.command` setting, else `phoenix-lsp` on
 * PATH, else the workspace's Python environment (`.venv/bin/phoenix-lsp`, then `.venv/bin/python -m
 * phoenix_lsp`). Pure: the file system and PATH are passed in, so every branch is unit-tested.
 */

export interface DiscoveryInput {
  command: string;
  args: string[];
  /** PATH entries, in order */
  path: string[];
  workspaceFolders: string[];
  platform: string;
  isExecutable: (file: string) => boolean;
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** where the command came from, for the log */
  source: "setting" | "PATH" | "workspace environment";
}

export interface DiscoveryFailure {
  /** what, why and what next, for the notification */
  message: string;
  tried: string[];
}

const ENVIRONMENTS = [".venv", "venv", "env"];

function join(...parts: string[]): string {
  return parts.join("/").replace(/\/+/g, "/");
}

export function discoverServer(input: DiscoveryInput): ServerCommand | DiscoveryFailure {
  const windows = input.platform === "win32";
  const sep = windows ? "\\" : "/";
  const bin = windows ? "Scripts" : "bin";
  const exe = windows ? ".exe" : "";
  const serveArgs = input.args.length > 0 ? input.args : ["serve"];
  const tried: string[] = [];

  const setting = input.command.trim();
  if (setting) {
    return { command: setting, args: serveArgs, source: "setting" };
  }
  for (const dir of input.path) {
    if (!dir) continue;
    const candidate = `${dir.replace(/[\\/]+$/, "")}${sep}phoenix-lsp${exe}`;
    tried.push(candidate);
    if (input.isExecutable(candidate)) return { command: candidate, args: serveArgs, source: "PATH" };
  }
  for (const folder of input.workspaceFolders) {
    for (const env of ENVIRONMENTS) {
      const server = join(folder, env, bin, `phoenix-lsp${exe}`);
      tried.push(server);
      if (input.isExecutable(server)) return { command: server, args: serveArgs, source: "workspace environment" };
      const python = join(folder, env, bin, windows ? "python.exe" : "python");
      tried.push(`${python} -m phoenix_lsp`);
      if (input.isExecutable(python)) {
        return { command: python, args: ["-m", "phoenix_lsp", ...serveArgs], source: "workspace environment" };
      }
    }
  }
  return {
    message:
      "Phoenix could not find its server: no `phoenix.server.command` setting, no `phoenix-lsp` on PATH and no " +
      "Python environment (.venv) in the workspace. Install it (`pip install phoenix-lsp` or `pip install -e .` " +
      "in a checkout) or set `phoenix.server.command` to the `phoenix-lsp` executable.",
    tried,
  };
}

export function isFailure(result: ServerCommand | DiscoveryFailure): result is DiscoveryFailure {
  return "message" in result;
}
