// `npm test`: every check of the extension, in order, stopping at the first failure:
// generated wire types up to date, tsc --noEmit, eslint, unit tests (node --test), the esbuild bundle,
// `vsce package` (offline) and the end-to-end test against the real Python server.
import { spawnSync } from "node:child_process";
import { statSync } from "node:fs";

const steps = [
  ["generated wire types", "npm", ["run", "-s", "check:protocol"]],
  ["typecheck (tsc --noEmit)", "npm", ["run", "-s", "typecheck"]],
  ["lint (eslint)", "npm", ["run", "-s", "lint"]],
  ["unit tests (node --test)", "npm", ["run", "-s", "test:unit"]],
  ["bundle (esbuild, minified)", "npm", ["run", "-s", "build"]],
  ["package (vsce)", "npm", ["run", "-s", "package"]],
  ["end-to-end (real server, fake Anthropic)", "node", ["--test", "out-test/test/e2e/"]],
];

for (const [name, command, args] of steps) {
  const started = Date.now();
  console.log(`\n=== ${name}`);
  const result = spawnSync(command, args, { stdio: "inherit" });
  if (result.status !== 0) {
    console.error(`\n${name} FAILED (exit ${result.status ?? result.signal})`);
    process.exit(1);
  }
  console.log(`--- ${name}: ok (${Date.now() - started} ms)`);
  if (name.startsWith("bundle")) {
    const size = (f) => statSync(f).size;
    console.log(`bundle size (minified): dist/extension.js ${size("dist/extension.js")} bytes, dist/webview.js ${size("dist/webview.js")} bytes`);
  }
}
console.log("\nall extension checks passed");
