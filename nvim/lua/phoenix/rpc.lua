-- The connection to the server: which client it is, requests that wait for their answer inside a coroutine
-- without blocking Neovim, and telling the user when something failed.
local compat = require("phoenix.compat")
local refusal = require("phoenix.refusal")

local M = {}

M.client_id = nil

function M.client()
  return M.client_id and vim.lsp.get_client_by_id(M.client_id) or nil
end

function M.report(message, level)
  vim.notify("phoenix: " .. message, level or vim.log.levels.INFO)
end

M.error_text = refusal.text

-- Call fn in a coroutine; inside it, M.call(method, params) waits for the answer without blocking Neovim.
function M.async(fn)
  local co = coroutine.create(fn)
  local ok, err = coroutine.resume(co)
  if not ok then
    M.report(M.error_text(err), vim.log.levels.ERROR)
  end
end

function M.call(method, params)
  local c = M.client()
  if not c then
    return { message = "the phoenix-lsp server is not running (see :checkhealth phoenix)" }, nil
  end
  local co = coroutine.running()
  assert(co, "phoenix: call must run inside async")
  compat.request(c, method, params or vim.empty_dict(), function(err, result)
    local ok, problem = coroutine.resume(co, err, result)
    if not ok then
      M.report(M.error_text(problem), vim.log.levels.ERROR)
    end
  end)
  return coroutine.yield()
end

-- Inside M.async: ask the server and tell the user when it refuses.
function M.ask(method, params)
  local err = M.call(method, params)
  if err then
    M.report(M.error_text(err), vim.log.levels.WARN)
  end
end

return M
