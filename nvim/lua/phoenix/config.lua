-- The options `setup` was given (with the defaults filled in) and the workspace they apply to.
local M = {}

M.defaults = {
  cmd = { "phoenix-lsp" },
  cmd_env = nil,
  root_dir = nil, -- default: the current working directory
  init_options = nil,
  ui = "float", -- approvals: "float" (the seed 003 dialog) or "select" (vim.ui.select: Telescope, fzf, ...)
  chat_position = "right", -- "right", "bottom" or "current"
  keys = { toggle_policy = "<S-Tab>", send = "i", cancel = "<C-c>", model = "gm" },
  restart = true, -- start the server again when it exits unexpectedly, and restore the chat from it
  state_file = nil, -- where the active conversation of each workspace is remembered across Neovim sessions
  sight = true, -- tell the server what Neovim knows: diagnostics, definitions, references (REQ-SIGHT-004)
}

M.options = nil -- nil until setup() ran
M.root = nil -- the workspace: an absolute path without a trailing slash ("" is the root directory)

function M.set(opts)
  M.options = vim.tbl_deep_extend("force", M.defaults, opts or {})
  M.root = vim.fn.fnamemodify(M.options.root_dir or vim.fn.getcwd(), ":p"):gsub("/$", "")
  return M.options
end

-- The working directory of new conversations: the server refuses an empty path, so the root directory is "/".
function M.working_directory()
  return M.root ~= "" and M.root or "/"
end

return M
