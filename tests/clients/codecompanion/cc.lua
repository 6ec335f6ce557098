-- CodeCompanion.nvim (vendored, tests/clients/vendor/) driven as its user drives it, against `phoenix-lsp acp`.
-- Loaded by the scenario after the Neovim tests' helper (T): CC.open() configures CodeCompanion with an ACP
-- adapter whose command is our agent and opens its chat; CC.say() types a message into the chat buffer and
-- sends it with the chat's own key; what the client received is recorded as it arrives (CC.received), and the
-- chat buffer is read as the user sees it.
local T = require("helper")
local CC = { received = {}, done = 0, asked = 0, sent_at = 0, asked_at = 0 }

-- Every JSON-RPC message CodeCompanion's connection takes from the agent, decoded, in order: wrapped around its
-- own reader, so what is counted is what the client got, before it draws anything.
local Connection = require("codecompanion.acp")
local handle = Connection.handle_rpc_message
Connection.handle_rpc_message = function(self, line)
  local ok, message = pcall(vim.json.decode, line)
  if ok and type(message) == "table" then
    table.insert(CC.received, message)
  end
  return handle(self, line)
end

function CC.agent_cmd()
  return T.phoenix("acp", "--data-dir", T.data_dir)
end

-- CodeCompanion set up with one ACP adapter, "phoenix", and its chat opened (the session is made as it opens).
function CC.open(opts)
  local notes = {}
  CC.notes = notes
  vim.notify = function(message) table.insert(notes, tostring(message)) end
  require("codecompanion").setup(vim.tbl_deep_extend("force", {
    adapters = {
      acp = {
        phoenix = function()
          return require("codecompanion.adapters").extend("goose", {
            name = "phoenix",
            formatted_name = "Phoenix",
            commands = { default = CC.agent_cmd() },
            defaults = { timeout = 120000 },
          })
        end,
      },
    },
    interactions = { chat = { adapter = "phoenix" } },
    display = { chat = { window = { layout = "buffer" } } },
    opts = { log_level = "ERROR" },
  }, opts or {}))
  vim.api.nvim_create_autocmd("User", {
    pattern = "CodeCompanionChatDone",
    callback = function() CC.done = CC.done + 1 end,
  })
  vim.api.nvim_create_autocmd("User", {
    pattern = "CodeCompanionToolApprovalRequested",
    callback = function() CC.asked = CC.asked + 1 end,
  })
  vim.cmd("CodeCompanionChat")
  CC.chat = require("codecompanion").last_chat()
  T.ok(CC.chat, "CodeCompanionChat opened a chat")
  T.wait("the ACP session", function()
    return CC.chat.acp_connection and CC.chat.acp_connection.session_id ~= nil
  end, 120000)
  CC.session_id = CC.chat.acp_connection.session_id
  return CC.chat
end

function CC.lines()
  return vim.api.nvim_buf_get_lines(CC.chat.bufnr, 0, -1, false)
end

function CC.text()
  return table.concat(CC.lines(), "\n")
end

-- Type `text` at the end of the chat buffer and send it with the chat's key (<CR> in normal mode).
function CC.send(text)
  CC.sent_at, CC.asked_at = CC.done, CC.asked
  vim.api.nvim_set_current_buf(CC.chat.bufnr)
  T.keys("Go" .. text .. "<Esc>")
  T.keys("<CR>")
end

-- Wait until the chat has drawn the whole answer to what was sent last (CodeCompanion's ChatDone).
function CC.wait_answer(what)
  T.wait("the answer to " .. (what or "the message"), function() return CC.done > CC.sent_at end, 180000)
end

function CC.say(text)
  CC.send(text)
  CC.wait_answer(text)
end

-- Answer the approval CodeCompanion shows in its chat buffer as its user does: wait for it, read the key its
-- prompt names for `choice` (a line "- `KEY` - Accept") and press it in the chat buffer. Returns the key.
-- Approvals are answered in the order they were shown since the last CC.send.
function CC.approve(choice)
  T.wait("an approval in the chat", function() return CC.asked > CC.asked_at end, 120000)
  CC.asked_at = CC.asked_at + 1
  local key
  for _, line in ipairs(CC.lines()) do
    key = key or line:match("^%- `([^`]+)` %- " .. vim.pesc(choice) .. "$")
  end
  T.ok(key, "the approval names a key for " .. choice .. ":\n" .. CC.text())
  vim.api.nvim_set_current_buf(CC.chat.bufnr)
  T.keys(key)
  return key
end

-- The session/update notifications received, as their `update` objects, optionally of one kind only.
function CC.updates(kind)
  local found = {}
  for _, m in ipairs(CC.received) do
    if m.method == "session/update" and m.params and m.params.update
        and (kind == nil or m.params.update.sessionUpdate == kind) then
      table.insert(found, m.params.update)
    end
  end
  return found
end

-- The errors the agent answered requests with.
function CC.errors()
  local found = {}
  for _, m in ipairs(CC.received) do
    if m.error then table.insert(found, m.error) end
  end
  return found
end

-- The next menus (vim.ui.select, Neovim's own inputlist) are answered as a user answers them: for each label in
-- turn, the entry of that name (else the first containing it) is chosen by typing its number and Enter. The labels of
-- every menu shown are kept in CC.menus.
CC.menus = {}
function CC.pick(...)
  local wanted = { ... }
  local builtin = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    local label = table.remove(wanted, 1)
    if #wanted == 0 then
      vim.ui.select = builtin
    end
    local labels, index = {}, nil
    for i, item in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
    end
    -- an entry named `label` (after CodeCompanion's "* " marking the current value, before " - description"),
    -- else the first entry that contains it
    for i, shown in ipairs(labels) do
      local name = shown:gsub("^[* ] ", "")
      if not index and (name == label or vim.startswith(name, label .. " ")) then
        index = i
      end
    end
    for i, shown in ipairs(labels) do
      if not index and shown:find(label, 1, true) then
        index = i
      end
    end
    table.insert(CC.menus, labels)
    assert(index, "no entry " .. label .. " in the menu " .. vim.inspect(labels))
    -- typed ahead: the menu's prompt reads them as it opens (a timer would fire too late when the menu opens
    -- within keys run to their end, as CC.slash's are: Neovim ends such a prompt as if Esc were typed)
    vim.api.nvim_feedkeys(index .. vim.api.nvim_replace_termcodes("<CR>", true, false, true), "n", false)
    return builtin(items, opts, on_choice)
  end
end

-- Run one of CodeCompanion's own slash commands as its user does with the default completion: type the start of
-- its name at the end of the chat buffer, complete it (<C-x><C-o>, the chat's omnifunc) and leave insert mode;
-- CodeCompanion runs the completed command.
function CC.slash(start)
  vim.api.nvim_set_current_buf(CC.chat.bufnr)
  T.keys("Go" .. start .. "<C-x><C-o><Esc>")
end

-- The notifications CodeCompanion showed, without the prompt library's complaints about a missing YAML parser
-- (its built-in prompts; no test uses them).
function CC.said()
  local found = {}
  for _, note in ipairs(CC.notes) do
    if not note:find("[Prompt Library]", 1, true) then
      table.insert(found, note)
    end
  end
  return found
end

-- The select option of the session's config options with this category ("mode", "model"...), as the client
-- holds it now.
function CC.option(category)
  for _, option in ipairs(CC.chat.acp_connection:get_config_options()) do
    if option.category == category then
      return option
    end
  end
end

return CC
