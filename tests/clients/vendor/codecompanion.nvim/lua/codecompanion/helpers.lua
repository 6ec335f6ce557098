local context_utils = require("codecompanion.utils.context")

local M = {}

---Get prompts from the prompt library
---@return table
function M.get_prompts()
  local context = context_utils.get(vim.api.nvim_get_current_buf())
  return require("codecompanion.action_palette").get_cached_items(context)
end

---Get short names of prompts from the prompt library
---@return string[]
function M.get_prompt_aliases()
  local prompts = M.get_prompts()
  local aliases = {}
  vim.iter(prompts):each(function(k, _)
    if k.opts and k.opts.alias then
      table.insert(aliases, k.opts.alias)
    end
  end)
  return aliases
end

---Create and show a diff in a floating window
---@param args { from_lines: string[], to_lines: string[], ft: string, banner?: string, skip_default_keymaps?: boolean, chat_bufnr?: number, inline?: boolean, tool_name?: string, title?: string, diff_id: number, marker_add?: string, marker_delete?: string, bufnr?: number, keymaps?: { on_accept?: fun(diff_ui: CodeCompanion.DiffUI), on_always_accept?: fun(diff_ui: CodeCompanion.DiffUI), on_reject?: fun(diff_ui: CodeCompanion.DiffUI) } }
---@return CodeCompanion.DiffUI
function M.show_diff(args)
  local bufnr = args.bufnr
  if args.inline and not bufnr then
    bufnr = vim.api.nvim_get_current_buf()
  end

  if not bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
    bufnr = vim.api.nvim_create_buf(false, true)
  end

  if args.ft then
    local safe_ft = require("codecompanion.utils").safe_filetype(args.ft)
    vim.api.nvim_set_option_value("filetype", safe_ft, { buf = bufnr })
  end

  local diff = require("codecompanion.diff").create({
    bufnr = bufnr,
    ft = args.ft,
    from_lines = args.from_lines,
    to_lines = args.to_lines,
    marker_add = args.marker_add,
    marker_delete = args.marker_delete,
    inline = args.inline,
  })

  return require("codecompanion.diff.ui").show(diff, {
    banner = args.banner,
    chat_bufnr = args.chat_bufnr,
    diff_id = args.diff_id,
    inline = args.inline or false,
    keymaps = args.keymaps,
    skip_default_keymaps = args.skip_default_keymaps,
    title = args.title,
    tool_name = args.tool_name,
  })
end

return M
