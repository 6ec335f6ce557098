-- The server's process: starting it for the workspace as a rich client, attaching the workspace's buffers,
-- starting it again when it exits unexpectedly (REQ-NVIM-011), and its process id.
local compat = require("phoenix.compat")
local config = require("phoenix.config")
local dialog = require("phoenix.dialog")
local events = require("phoenix.events")
local models = require("phoenix.models")
local route = require("phoenix.route")
local rpc = require("phoenix.rpc")
local status = require("phoenix.status")

local M = {}

local stopping = false -- the server is stopped on purpose (a restart, Neovim exiting)

-- Attach a buffer of a workspace file, so the server sees its unsaved text.
function M.attach(bufnr)
  local c = rpc.client()
  if not c or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:sub(1, #config.root + 1) ~= config.root .. "/" then
    return
  end
  vim.lsp.buf_attach_client(bufnr, rpc.client_id)
end

function M.start()
  local options = config.options
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  -- a rich client (REQ-PROTO-001) that answers what Neovim knows (REQ-SIGHT-004)
  capabilities.experimental = { phoenix = { version = 1, editorSight = options.sight ~= false } }
  stopping = false
  local id
  id = compat.start_client({
    name = "phoenix",
    cmd = options.cmd,
    cmd_env = options.cmd_env,
    root_dir = config.working_directory(),
    capabilities = capabilities,
    init_options = options.init_options,
    handlers = vim.tbl_extend("error", { ["phoenix/event"] = events.on_event }, require("phoenix.sight").handlers()),
    flags = { debounce_text_changes = 150 },
    on_init = function()
      vim.schedule(function()
        for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(bufnr) then
            M.attach(bufnr)
          end
        end
        if status.state.conversation then
          -- the chat is restored from the server: all of it when it is empty (a new Neovim session), else
          -- what it missed (after a restart; the chat keeps its notes, which the server does not keep)
          events.catch_up(status.state.last_seq)
        end
        rpc.async(function()
          route.read_route() -- the route every message is sent with (REQ-AGENT-001)
          models.list_models() -- the ids :PhoenixModel completes
        end)
      end)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        if rpc.client_id ~= id then
          return -- a server already replaced (:PhoenixRestart started the next one before this one was gone)
        end
        dialog.close()
        if stopping or not options.restart then
          return
        end
        rpc.report(string.format("the server stopped (code %s, signal %s); starting it again", code, signal),
          vim.log.levels.WARN)
        vim.defer_fn(M.start, 300)
      end)
    end,
  })
  rpc.client_id = id
  if not rpc.client_id then
    rpc.report("could not start " .. table.concat(options.cmd, " ") .. " (see :checkhealth phoenix)",
      vim.log.levels.ERROR)
  end
end

function M.restart()
  local c = rpc.client()
  stopping = true
  if c then
    compat.stop(c)
  end
  vim.defer_fn(M.start, 300)
end

-- Neovim exits: the server's exit is no reason to start it again.
function M.leaving()
  stopping = true
end

function M.pid()
  local c = rpc.client()
  return c and compat.server_pid(c, config.options.cmd) or nil
end

return M
