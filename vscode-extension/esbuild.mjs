// Bundles the extension (node, CommonJS, `vscode` external) and the webview script (browser, IIFE),
// and copies the codicon font next to them. `--production` minifies; `--watch` rebuilds on change.
import * as esbuild from "esbuild";
import { cpSync, mkdirSync } from "node:fs";

const production = process.argv.includes("--production");
const watch = process.argv.includes("--watch");

const common = { bundle: true, minify: production, sourcemap: !production, logLevel: "warning", legalComments: "none" };
// The extension is two bundles: extension.js, small, spawns the server when VS Code loads it, then requires
// host.js (the language client, the controller, the views), which loads while the server boots, and starts the
// language client before VS Code calls activate (src/extension.ts).
const hostBeside = {
  name: "host-beside",
  setup(build) {
    build.onResolve({ filter: /^\.\/host\.js$/ }, (args) => ({ path: args.path, external: true }));
  },
};
const node = { ...common, platform: "node", format: "cjs", target: "node20", external: ["vscode"] };
const builds = [
  { ...node, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", plugins: [hostBeside] },
  { ...node, entryPoints: ["src/host/main.ts"], outfile: "dist/host.js" },
  { ...common, entryPoints: ["src/webview/main.ts"], outfile: "dist/webview.js", platform: "browser", format: "iife", target: "es2022" },
];

mkdirSync("dist/codicons", { recursive: true });
for (const file of ["codicon.css", "codicon.ttf"]) cpSync(`node_modules/@vscode/codicons/dist/${file}`, `dist/codicons/${file}`);

if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
