-- phoenix-lsp in Neovim, on plain vim.lsp (Neovim 0.7.2 and later).
--
--   require("phoenix").setup({ cmd = { "phoenix-lsp" } })
--
-- The plugin starts the server for the workspace as a rich client (capabilities.experimental.phoenix),
-- keeps the active conversation in a chat buffer fed by phoenix/event (with seq tracking and catch-up
-- through phoenix/getConversation), asks approvals in a floating dialog, and lets Neovim's own
-- workspace/applyEdit handler apply patches to buffers (with undo).
--
-- One job per module:
--   config        the options of setup and the workspace
--   server        the server's process: start, restart, attached buffers
--   rpc           requests to the server, inside coroutines; reports to the user
--   events        phoenix/event shown in the chat, in order; catch-up after a gap
--   sequence      the catch-up rule (which event is seen, next, or after a gap)
--   conversation  the active conversation: start, switch, list, and the requests that act on it
--   compose       the next message: its text, a selection, its attachments, sending it
--   approval      approvals and upgrade requests in the dialog
--   review        a multi-file review (a bash command's captured changes) read and laid out for the dialog
--   models, route the model and the route pickers
--   names         tool names as people read them (an MCP tool as "create_issue on tracker")
--   header        the chat's header lines
--   commands      the :Phoenix* commands and the chat's keys
--   chat, dialog, status, attach, refusal, sight, health, compat: the chat buffer, the dialog window, the
--   statusline and the status words, the attachments, refusals in the user's words, the editor's sight,
--   :checkhealth, and the choices between Neovim releases
--   protocol      GENERATED from specs/protocol.schema.json (nvim/scripts/gen-protocol.py)
local commands = require("phoenix.commands")
local compose = require("phoenix.compose")
local config = require("phoenix.config")
local conversation = require("phoenix.conversation")
local events = require("phoenix.events")
local models = require("phoenix.models")
local route = require("phoenix.route")
local rpc = require("phoenix.rpc")
local server = require("phoenix.server")
local status = require("phoenix.status")

local M = {}

M.config = nil -- the options setup() was given, with the defaults filled in (nil until it ran)
M.state = status.state -- the active conversation as the last events left it
M.statusline = status.statusline

-- Requests from scripts: M.async(fn) runs fn in a coroutine, in which M.call(method, params) waits for the answer.
M.async = rpc.async
M.call = rpc.call

M.open_chat = commands.open_chat
M.send = compose.send
M.selection_message = compose.selection_message
M.attach_lines = compose.attach_lines
M.attach_files = compose.attach_files
M.attach_problems = compose.attach_problems
M.clear_attachments = compose.clear_attachments
M.attachments = compose.attachments
M.cancel = conversation.cancel
M.set_mode = conversation.set_mode
M.set_policy = conversation.set_policy
M.toggle_policy = conversation.toggle_policy
M.set_style = conversation.set_style
M.reload_instructions = conversation.reload_instructions
M.new_conversation = conversation.new
M.open_conversation = conversation.open
M.conversations = conversation.choose
M.list_models = models.list_models
M.model_ids = models.model_ids
M.set_model = models.set_model
M.ROUTES = route.ROUTES
M.read_route = route.read_route
M.set_route = route.set_route
M.restart = server.restart
M.server_pid = server.pid
M._catch_up = events.catch_up

-- The server's client id, and the text of the last refused message, as they are now.
setmetatable(M, {
  __index = function(_, key)
    if key == "client_id" then
      return rpc.client_id
    elseif key == "draft" then
      return compose.draft
    end
  end,
})

function M.setup(opts)
  M.config = config.set(opts)
  M.root = config.root
  commands.define()
  require("phoenix.sight").setup() -- counts each buffer's diagnostic changes (REQ-SIGHT-004)
  local group = vim.api.nvim_create_augroup("phoenix", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufEnter" }, {
    group = group,
    callback = function(args)
      server.attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = server.leaving,
  })
  local previous = conversation.remembered()[config.root]
  if previous then
    status.update({ conversation = previous, last_seq = 0 })
  end
  server.start()
end

return M
