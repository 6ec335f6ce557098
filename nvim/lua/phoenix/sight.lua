-- The editor's sight (REQ-SIGHT-004, specs/sight.md): the plugin answers the server's requests for what
-- Neovim knows. phoenix/editorDiagnostics: vim.diagnostic.get, waiting (at most settleMs) for
-- DiagnosticChanged on the files asked for when the server gives the count of changes it saw before its
-- edit. phoenix/editorLocations: vim.lsp.buf_request_sync to the language servers attached to the file's
-- buffer (the phoenix server itself excepted). Positions go out as LSP's: zero-based, UTF-16 characters.
local compat = require("phoenix.compat")

local M = { changes = {} } -- bufnr -> how often its diagnostics changed

local function utf16(line, byte_col)
  if not line or byte_col <= 0 then
    return byte_col or 0
  end
  byte_col = math.min(byte_col, #line)
  if compat.has("0.11") then
    return vim.str_utfindex(line, "utf-16", byte_col, false)
  end
  local _, units = vim.str_utfindex(line, byte_col)
  return units
end

local function line_of(bufnr, lnum)
  if not vim.api.nvim_buf_is_loaded(bufnr) then
    return nil
  end
  return vim.api.nvim_buf_get_lines(bufnr, lnum, lnum + 1, false)[1]
end

local function position(bufnr, lnum, col)
  return { line = lnum, character = utf16(line_of(bufnr, lnum), col) }
end

local function to_wire(bufnr, d)
  local code = d.code
  if code ~= nil and type(code) ~= "number" then
    code = tostring(code)
  end
  return {
    range = { start = position(bufnr, d.lnum, d.col), ["end"] = position(bufnr, d.end_lnum or d.lnum, d.end_col or d.col) },
    severity = d.severity or 1,
    message = d.message or "",
    source = d.source,
    code = code,
  }
end

local function bufnr_of(uri)
  return vim.fn.bufnr(vim.uri_to_fname(uri))
end

-- Every file's count has moved past what the server saw (a file with no buffer has nothing to wait for).
local function changed_since(since)
  for uri, seen in pairs(since) do
    local bufnr = bufnr_of(uri)
    if bufnr ~= -1 and (M.changes[bufnr] or 0) <= seen then
      return false
    end
  end
  return true
end

function M.diagnostics(params)
  params = params or {}
  local since = type(params.since) == "table" and params.since or nil
  if since and next(since) and (params.settleMs or 0) > 0 then
    vim.wait(params.settleMs, function() return changed_since(since) end, 10)
  end
  local buffers = {}
  if type(params.uris) == "table" then
    for _, uri in ipairs(params.uris) do
      buffers[#buffers + 1] = { uri = uri, bufnr = bufnr_of(uri) }
    end
  else
    local seen = {}
    for _, d in ipairs(vim.diagnostic.get(nil)) do
      if not seen[d.bufnr] and vim.api.nvim_buf_get_name(d.bufnr) ~= "" then
        seen[d.bufnr] = true
        buffers[#buffers + 1] = { uri = vim.uri_from_bufnr(d.bufnr), bufnr = d.bufnr }
      end
    end
  end
  local files = {}
  for _, b in ipairs(buffers) do
    local diagnostics = {}
    if b.bufnr ~= -1 then
      for _, d in ipairs(vim.diagnostic.get(b.bufnr)) do
        diagnostics[#diagnostics + 1] = to_wire(b.bufnr, d)
      end
    end
    files[#files + 1] = { uri = b.uri, changes = b.bufnr ~= -1 and (M.changes[b.bufnr] or 0) or 0,
      diagnostics = diagnostics }
  end
  return { files = files }
end

local function attached_servers(bufnr)
  local phoenix = require("phoenix.rpc").client_id
  local clients = compat.buffer_clients(bufnr)
  local others = {}
  for _, c in ipairs(clients) do
    if c.id ~= phoenix then
      others[#others + 1] = c
    end
  end
  return others
end

local function add_locations(out, result)
  if type(result) ~= "table" then
    return
  end
  if result.uri or result.targetUri then
    result = { result }
  end
  for _, loc in ipairs(result) do
    local uri = loc.targetUri or loc.uri
    local range = loc.targetSelectionRange or loc.range
    if type(uri) == "string" and type(range) == "table" then
      out[#out + 1] = { uri = uri, range = range }
    end
  end
end

function M.locations(params)
  local fname = vim.uri_to_fname(params.uri)
  local bufnr = vim.fn.bufnr(fname)
  if bufnr == -1 or not vim.api.nvim_buf_is_loaded(bufnr) then
    bufnr = vim.fn.bufadd(fname)
    vim.fn.bufload(bufnr)
    vim.api.nvim_buf_call(bufnr, function() vim.cmd("filetype detect") end)
    vim.wait(1000, function() return #attached_servers(bufnr) > 0 end, 20) -- the user's servers attach
  end
  local method = params.kind == "references" and "textDocument/references" or "textDocument/definition"
  local request = { textDocument = { uri = params.uri }, position = params.position,
    context = { includeDeclaration = true } }
  -- a language server still starting (or a busy machine) answers late or empty: ask again while the answer is
  -- empty, within the `waitMs` the server gives (REQ-SIGHT-002)
  local function now()
    return compat.uv.hrtime() / 1e6
  end
  local deadline = now() + math.max(tonumber(params.waitMs) or 0, 0)
  local out = {}
  repeat
    for _, c in ipairs(attached_servers(bufnr)) do
      local answer = compat.request_sync(c, method, request, math.max(1000, deadline - now()))
      if answer and not answer.err then
        add_locations(out, answer.result)
      end
    end
    if #out == 0 and now() < deadline then
      vim.wait(math.min(100, math.max(deadline - now(), 0)), function() return false end, 20)
    end
  until #out > 0 or now() >= deadline
  return { locations = out }
end

-- The handlers the phoenix client is started with.
function M.handlers()
  return {
    ["phoenix/editorDiagnostics"] = function(_, params) return M.diagnostics(params) end,
    ["phoenix/editorLocations"] = function(_, params) return M.locations(params) end,
  }
end

function M.setup()
  local group = vim.api.nvim_create_augroup("phoenix_sight", { clear = true })
  vim.api.nvim_create_autocmd("DiagnosticChanged", {
    group = group,
    callback = function(args)
      M.changes[args.buf] = (M.changes[args.buf] or 0) + 1
    end,
  })
end

return M
