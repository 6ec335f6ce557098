#!/usr/bin/env bash
# Install the VS Code extension's npm dependencies (vscode-extension/node_modules) from the checked-in
# lockfile, for `npm test` there and the pytest wrapper tests/clients/test_vscode_extension.py.
# Idempotent: does nothing when node_modules already matches package-lock.json.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ext="$here/vscode-extension"

command -v npm >/dev/null || {
  echo "[install-vscode-extension-deps] FAILED: npm is not installed; install Node.js 20 or newer (with npm) first." >&2
  exit 1
}
stamp="$ext/node_modules/.package-lock.json"
if [[ -f "$stamp" && "$stamp" -nt "$ext/package-lock.json" && "$stamp" -nt "$ext/package.json" ]]; then
  echo "[install-vscode-extension-deps] node_modules is up to date"
  exit 0
fi
echo "[install-vscode-extension-deps] npm ci in vscode-extension/"
cd "$ext"
npm ci --no-audit --no-fund
echo "[install-vscode-extension-deps] done"
