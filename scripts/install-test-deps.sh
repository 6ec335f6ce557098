#!/usr/bin/env bash
# Everything the whole test suite needs besides the Python packages, installed when missing (idempotent; a
# warm run takes seconds):
#   - Debian packages the sandbox and tool tests use (gcc for the sandbox helper, libseccomp, bubblewrap for
#     the benchmark baseline, git, tmux for the terminal chat driven by keys);
#   - Neovim, for the Neovim plugin tests;
#   - the VS Code extension's npm packages, and code-server + Chromium for the real-VS-Code test.
# Installing Debian packages needs root; without it, this says what is missing and fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

need=()
command -v gcc >/dev/null || need+=(gcc libc6-dev)
ldconfig -p | grep -q libseccomp.so.2 || need+=(libseccomp2)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v git >/dev/null || need+=(git)
command -v tmux >/dev/null || need+=(tmux)  # the terminal chat driven by keys (tests/client/test_chat_tmux.py)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "[install-test-deps] missing Debian packages: ${need[*]} (run this as root, or: sudo apt-get install ${need[*]})" >&2
    exit 1
  fi
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${need[@]}" >/dev/null
fi

bash "$here/install-nvim-test-deps.sh"
bash "$here/install-vscode-extension-deps.sh"
bash "$here/install-vscode-test-deps.sh"
