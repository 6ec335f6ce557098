-- :checkhealth phoenix — what `phoenix-lsp doctor` reports, and whether the plugin's server runs.
local compat = require("phoenix.compat")

local M = {}

-- The doctor command for the configured server command: `phoenix-lsp [serve ...]` -> `phoenix-lsp doctor`.
local function doctor_cmd(cmd)
  local out = {}
  for _, word in ipairs(cmd) do
    if word == "serve" or word:sub(1, 2) == "--" then
      break
    end
    table.insert(out, word)
  end
  table.insert(out, "doctor")
  return out
end

function M.check()
  local h = compat.health()
  local options = require("phoenix.config").options
  local client_id = require("phoenix.rpc").client_id
  h.start("phoenix: Neovim")
  if compat.has("0.7.2") then
    h.ok("Neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor))
  else
    h.error("Neovim 0.7.2 or later is needed")
  end
  if not options then
    h.warn('require("phoenix").setup({...}) has not been called')
    return
  end
  if client_id and vim.lsp.get_client_by_id(client_id) then
    h.ok("the server is running (client " .. client_id .. ")")
  else
    h.warn("the server is not running; check the `cmd` given to setup: " .. table.concat(options.cmd, " "))
  end
  h.start("phoenix: phoenix-lsp doctor")
  local cmd = doctor_cmd(options.cmd)
  if vim.fn.executable(cmd[1]) ~= 1 then
    h.error(cmd[1] .. " is not executable: install phoenix-lsp (pip install -e .) or give setup() its path")
    return
  end
  local env = options.cmd_env
  local prefix = ""
  if env then
    local parts = {}
    for key, value in pairs(env) do
      table.insert(parts, key .. "=" .. vim.fn.shellescape(value))
    end
    prefix = "env " .. table.concat(parts, " ") .. " "
  end
  local words = vim.tbl_map(vim.fn.shellescape, cmd)
  local output = vim.fn.systemlist(prefix .. table.concat(words, " "))
  if vim.v.shell_error ~= 0 then
    h.error(table.concat(cmd, " ") .. " failed: " .. table.concat(output, " "))
    return
  end
  for _, line in ipairs(output) do
    local lower = line:lower()
    if line == "phoenix-lsp doctor" then
      -- the title
    elseif lower:find("not set") or lower:find("unavailable") or lower:find("not available")
      or lower:find("fail") or (lower:find("missing:") and not lower:find("missing: nothing")) then
      h.warn(line)
    else
      h.ok(line)
    end
  end
end

return M
