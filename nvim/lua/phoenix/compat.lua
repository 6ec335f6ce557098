-- Where Neovim releases differ, the choice is made here, at run time. Neovim 0.7.2 (Debian's) is the
-- oldest supported release; nothing here is used on a release that deprecated or removed it.
local M = {}

local function has(version)
  return vim.fn.has("nvim-" .. version) == 1
end

M.has = has

-- Start an LSP client without attaching it to a buffer. `vim.lsp.start_client` is deprecated from 0.11,
-- where `vim.lsp.start(config, { attach = false })` does the same; `vim.lsp.start` exists only from 0.8.
function M.start_client(config)
  if has("0.11") then
    return vim.lsp.start(config, { attach = false })
  end
  return vim.lsp.start_client(config)
end

-- `client.request(...)` became the method `client:request(...)` in 0.11 (the field call is deprecated).
function M.request(client, method, params, handler)
  if has("0.11") then
    return client:request(method, params, handler)
  end
  return client.request(method, params, handler)
end

-- The same, waiting for the answer (at most timeout_ms): { err = ..., result = ... }, or nil on a timeout.
function M.request_sync(client, method, params, timeout_ms)
  if has("0.11") then
    return client:request_sync(method, params, timeout_ms)
  end
  return client.request_sync(method, params, timeout_ms)
end

function M.notify(client, method, params)
  if has("0.11") then
    return client:notify(method, params)
  end
  return client.notify(method, params)
end

function M.stop(client)
  if has("0.11") then
    return client:stop()
  end
  return client.stop()
end

-- The LSP clients attached to a buffer: `vim.lsp.get_clients({ bufnr })` from 0.10, where
-- `vim.lsp.buf_get_clients` (a map by id) is deprecated.
function M.buffer_clients(bufnr)
  if has("0.10") then
    return vim.lsp.get_clients({ bufnr = bufnr })
  end
  return vim.tbl_values(vim.lsp.buf_get_clients(bufnr))
end

-- `vim.loop` is `vim.uv` from 0.10 on (`vim.loop` is deprecated there).
M.uv = vim.uv or vim.loop

-- The process id of a client's server. Before 0.10 the RPC object names it (`client.rpc.pid`); from 0.10
-- on the server runs under vim.system and no public field names it, so it is the child process of Neovim
-- whose command line ends with the configured command's arguments and names its program (Linux /proc).
local function cmdline(pid)
  local file = io.open("/proc/" .. pid .. "/cmdline", "rb")
  if not file then
    return nil
  end
  local raw = file:read("*a")
  file:close()
  return vim.split(raw:gsub("%z$", ""), "\0", { plain = true })
end

function M.server_pid(client, cmd)
  if client.rpc and type(client.rpc.pid) == "number" then
    return client.rpc.pid
  end
  local program = vim.fn.fnamemodify(cmd[1], ":t")
  for _, pid in ipairs(vim.api.nvim_get_proc_children(vim.fn.getpid())) do
    local args = cmdline(pid)
    if args and #args >= #cmd then
      local names_program, tail = false, true
      for i = 1, #args - #cmd + 1 do
        names_program = names_program or vim.fn.fnamemodify(args[i], ":t") == program
      end
      for i = 2, #cmd do
        tail = tail and args[#args - #cmd + i] == cmd[i]
      end
      if names_program and tail then
        return pid
      end
    end
  end
  return nil
end

-- checkhealth reporters: `require("health").report_*` (0.7), `vim.health.report_*` (0.8, 0.9),
-- `vim.health.start/ok/...` (0.10 on, where report_* are deprecated).
function M.health()
  local h = vim.health
  if h and h.start then
    return { start = h.start, ok = h.ok, warn = h.warn, error = h.error, info = h.info }
  end
  h = (h and h.report_start) and h or require("health")
  return { start = h.report_start, ok = h.report_ok, warn = h.report_warn, error = h.report_error, info = h.report_info }
end

-- A highlight over part of a line. Extmarks work on every supported release (nvim_buf_add_highlight is
-- deprecated from 0.11).
function M.highlight(buf, ns, group, line, col_start, col_end)
  local opts = { hl_group = group, end_row = line, end_col = col_end }
  if col_end == -1 then
    opts.end_col = nil
    opts.end_row = line + 1
    opts.hl_eol = true
  end
  pcall(vim.api.nvim_buf_set_extmark, buf, ns, line, col_start, opts)
end

-- Compact JSON (no insignificant whitespace, REQ-PERM-005), keys sorted; vim.fn.json_encode adds spaces.
local function is_array(value)
  if next(value) == nil then
    return getmetatable(value) ~= getmetatable(vim.empty_dict())
  end
  local count = 0
  for key in pairs(value) do
    if type(key) ~= "number" then
      return false
    end
    count = count + 1
  end
  return count == #value
end

function M.json(value)
  local kind = type(value)
  if value == nil or value == vim.NIL then
    return "null"
  elseif kind == "boolean" or kind == "number" then
    return tostring(value)
  elseif kind == "string" then
    return vim.fn.json_encode(value)
  elseif kind == "table" then
    local parts = {}
    if is_array(value) and next(value) ~= nil then
      for _, item in ipairs(value) do
        table.insert(parts, M.json(item))
      end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = vim.tbl_keys(value)
    table.sort(keys, function(a, b)
      return tostring(a) < tostring(b)
    end)
    for _, key in ipairs(keys) do
      table.insert(parts, vim.fn.json_encode(tostring(key)) .. ":" .. M.json(value[key]))
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return vim.fn.json_encode(tostring(value))
end

return M
