#!/usr/bin/env bash
# Installs what the Neovim client tests need: Debian's neovim (0.7.2 on bookworm). Idempotent; run as root.
set -euo pipefail
if command -v nvim >/dev/null 2>&1; then
  echo "nvim is installed: $(nvim --version | head -n 1)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "neovim is missing and this script needs root to install it: run it with sudo, or install your" >&2
  echo "distribution's neovim package (0.7.2 or later) yourself." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq neovim >/dev/null
echo "installed $(nvim --version | head -n 1)"
