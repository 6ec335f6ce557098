-- phoenix-lsp in Neovim, on plain vim.lsp (Neovim 0.7.2 and later).
--
--   require("phoenix").setup({ cmd = { "phoenix-lsp" } })
--
-- The plugin starts the server for the workspace as a rich client (capabilities.experimental.phoenix),
-- keeps the active conversation in a chat buffer fed by phoenix/event (with seq tracking and catch-up
-- through phoenix/getConversation), asks approvals in a floating dialog, and lets Neovim's own
-- workspace/applyEdit handler apply patches to buffers (with undo).
local compat = require("phoenix.compat")
local status = require("phoenix.status")
local chat = require("phoenix.chat")
local dialog = require("phoenix.dialog")
local attach_list = require("phoenix.attach")
local refusal = require("phoenix.refusal")

local M = {}

local defaults = {
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

M.config = nil
M.client_id = nil
M.draft = nil -- the text of the last message the server refused: the next prompt offers it again
local stopping = false
local stopped = false -- the user stopped the turn (:PhoenixCancel, <C-c>) and it has not ended yet
local catching_up = false
local held = {} -- events that arrived during a catch-up

-- ------------------------------------------------------------------------------------------ client

local function client()
  return M.client_id and vim.lsp.get_client_by_id(M.client_id) or nil
end

local function report(message, level)
  vim.notify("phoenix: " .. message, level or vim.log.levels.INFO)
end

local error_text = refusal.text

-- Call fn in a coroutine; inside it, M.call(method, params) waits for the answer without blocking Neovim.
function M.async(fn)
  local co = coroutine.create(fn)
  local ok, err = coroutine.resume(co)
  if not ok then
    report(error_text(err), vim.log.levels.ERROR)
  end
end

function M.call(method, params)
  local c = client()
  if not c then
    return { message = "the phoenix-lsp server is not running (see :checkhealth phoenix)" }, nil
  end
  local co = coroutine.running()
  assert(co, "phoenix: M.call must run inside M.async")
  compat.request(c, method, params or vim.empty_dict(), function(err, result)
    local ok, problem = coroutine.resume(co, err, result)
    if not ok then
      report(error_text(problem), vim.log.levels.ERROR)
    end
  end)
  return coroutine.yield()
end

-- Inside M.async: ask the server and tell the user when it refuses.
local function ask(method, params)
  local err = M.call(method, params)
  if err then
    report(error_text(err), vim.log.levels.WARN)
  end
end

local function state_path()
  return M.config.state_file or (vim.fn.stdpath("data") .. "/phoenix-nvim.json")
end

local function remembered()
  local ok, data = pcall(function()
    return vim.fn.json_decode(table.concat(vim.fn.readfile(state_path()), "\n"))
  end)
  return (ok and type(data) == "table") and data or {}
end

local function remember(conversation_id)
  local data = remembered()
  data[M.root] = conversation_id
  pcall(vim.fn.mkdir, vim.fn.fnamemodify(state_path(), ":h"), "p")
  pcall(vim.fn.writefile, { vim.fn.json_encode(data) }, state_path())
end

-- ------------------------------------------------------------------------------------------ instructions

local function thousands(n)
  local text, count = tostring(n), 1
  while count > 0 do
    text, count = text:gsub("^(%d+)(%d%d%d)", "%1,%2")
  end
  return text
end

-- The line at the top of the chat naming the project instructions in effect (REQ-NVIM-017), farthest first:
-- "Instructions: ~/.config/phoenix-lsp/AGENTS.md (cut: 30,000 of 40,000 bytes kept) · AGENTS.md".
function M.instructions_line(files)
  if not files or #files == 0 then
    return "Instructions: none (no AGENTS.md or CLAUDE.md found)"
  end
  local parts = {}
  for _, f in ipairs(files) do
    local text = attach_list.shown(M.root, f.path)
    if f.problem and f.problem ~= vim.NIL then
      text = text .. " (" .. f.problem .. ")"
    elseif f.kept < f.size then
      text = string.format("%s (cut: %s of %s bytes kept)", text, thousands(f.kept), thousands(f.size))
    end
    table.insert(parts, text)
  end
  return "Instructions: " .. table.concat(parts, " · ")
end

-- The chat's header: the instructions in effect, then the model that answers and the key that picks another
-- (REQ-NVIM-018: the chat's model picker). Either part is kept when only the other changes.
local header_files = nil

function M.model_line()
  local key = M.config and M.config.keys and M.config.keys.model
  local model = status.state.model
  local line = "Model: " .. ((model and model ~= "") and model or "(none yet)")
  if key then
    line = line .. "  (" .. key .. " or :PhoenixModel to choose)"
  end
  return line
end

-- The route beside the model (REQ-AGENT-001): the machine's choice, read from the server at start.
function M.route_line()
  local route = status.state.route
  return "Route: " .. (route or "(not known yet)") .. "  (:PhoenixRoute ask|agent to choose)"
end

local function show_header()
  chat.set_header({ M.instructions_line(header_files or {}), M.model_line(), M.route_line() })
end

-- Redraw the header when it is shown already (before the conversation names its instructions it is not: a
-- header then would read "Instructions: none" until they arrive).
local function refresh_header()
  if header_files then
    show_header()
  end
end

local function show_instructions(files)
  header_files = files
  show_header()
end

-- ------------------------------------------------------------------------------------------ events

-- The Always Allow choices: one per scope the approval offers (REQ-PERM-020), each naming the rule it adds, the
-- narrowest first (A) and the whole tool last (T), as the VS Code dialog does (REQ-PERM-024).
function M.always_choices(scopes)
  scopes = scopes or {}
  if #scopes == 0 then
    return { { label = "Always Allow", value = { decision = "alwaysAllow" }, key = "a" } }
  end
  local choices = {}
  for i, scope in ipairs(scopes) do
    local last = i == #scopes and i > 1
    local label = scope.kind == "tool" and ("Always Allow every " .. scope.rule .. " call")
      or ("Always Allow " .. scope.label)
    local key = (i == 1 and "a") or (last and "t") or tostring(i)
    table.insert(choices, { label = label, value = { decision = "alwaysAllow", rule = scope.rule }, key = key })
  end
  return choices
end

-- A patch in words, above its diff: "calc.py: 2 changes, 3 lines added, 1 removed".
function M.patch_summary(arguments, diff)
  local added, removed = 0, 0
  for _, line in ipairs(vim.split(diff, "\n", { plain = true })) do
    if line:match("^%+") and not line:match("^%+%+%+ ") then
      added = added + 1
    elseif line:match("^%-") and not line:match("^%-%-%- ") then
      removed = removed + 1
    end
  end
  local changes = type(arguments.patches) == "table" and #arguments.patches or 0
  local path = type(arguments.path) == "string" and arguments.path or "?"
  return string.format("%s: %d %s, %d %s added, %d removed", path, changes, changes == 1 and "change" or "changes",
    added, added == 1 and "line" or "lines", removed)
end

local function ask_approval(ev)
  -- All of the arguments and all of the diff: the user approves only what they saw (REQ-PERM-023); a patch is
  -- shown as its file, a summary and its diff, which hold all of its arguments
  local args = compat.json(ev.arguments or vim.empty_dict())
  local summary = nil
  if ev.diff and ev.diff ~= "" and type(ev.arguments) == "table" then
    summary = M.patch_summary(ev.arguments, ev.diff)
  end
  local choices = {
    { label = "Allow", value = { decision = "allow" }, key = "y" },
    { label = "Deny", value = { decision = "deny" }, key = "n" },
  }
  vim.list_extend(choices, M.always_choices(ev.scopes))
  dialog.open({
    id = ev.toolUseId,
    ui = M.config.ui,
    title = ev.toolName,
    description = vim.split(ev.description or "", "\n\n", { plain = true })[1],
    arguments = args,
    summary = summary,
    diff = ev.diff,
    choices = choices,
    cancel_value = { decision = "deny" },
    cancel_label = "deny",
    on_choice = function(answer)
      M.async(function()
        ask("phoenix/respondToApproval", {
          conversationId = ev.conversationId,
          toolUseId = ev.toolUseId,
          decision = answer.decision,
          rule = answer.rule, -- the scope the user picked (nil: not Always Allow)
        })
      end)
    end,
  })
end

local function ask_upgrade(ev)
  dialog.open({
    id = ev.toolUseId,
    ui = M.config.ui,
    title = "Phoenix asks to make changes (unrestricted mode)",
    description = ev.reason,
    choices = {
      { label = "Approve", value = true, key = "y" },
      { label = "Deny", value = false, key = "n" },
    },
    cancel_value = false,
    cancel_label = "deny",
    on_choice = function(approve)
      M.async(function()
        ask("phoenix/respondToModeUpgrade", {
          conversationId = ev.conversationId,
          approve = approve,
          toolUseId = ev.toolUseId,
        })
      end)
    end,
  })
end

local handle = {}

function handle.status(ev)
  status.update({ status = ev.status, mode = ev.mode or status.state.mode })
  if ev.status == "idle" and stopped then
    -- what arrived of a stopped answer stays, marked (it is never persisted, so the model does not see it)
    stopped = false
    if chat.keep_stream() then
      chat.note("stopped by you: the unfinished answer above stays here only (it is not part of the conversation)")
    else
      chat.note("stopped by you")
    end
  elseif ev.status == "idle" or ev.status == "error" then
    stopped = false
    chat.drop_stream() -- a failed answer is never persisted
  end
end

function handle.message(ev)
  chat.message(ev.message)
end

function handle.textDelta(ev)
  chat.stream(ev.text)
end

function handle.modeChanged(ev)
  status.update({ mode = ev.mode })
  chat.note("mode: " .. ev.mode)
end

function handle.policyChanged(ev)
  status.update({ policy = ev.policy })
  chat.note("policy: " .. status.policy_label(ev.policy))
end

function handle.styleChanged(ev)
  status.update({ style = ev.style })
  chat.note("style: " .. ev.style)
end

function handle.modelChanged(ev)
  status.update({ model = ev.model })
  show_header()
  chat.note(string.format("model: %s (was %s; %s-token context window)", ev.model, ev.previous or "?",
    status.window_text(ev.contextWindow)))
end

function handle.styleSuggestion(ev)
  chat.note(ev.text .. " (" .. ev.command .. ")")
end

function handle.approvalRequested(ev)
  ask_approval(ev)
end

function handle.approvalResolved(ev)
  if dialog.current_id() == ev.toolUseId then
    dialog.close() -- answered elsewhere (another client, a cancel)
  end
  chat.note("approval: " .. ev.decision)
end

-- Which rule was granted (or revoked), in words: the user sees what Always Allow added (REQ-PERM-024).
function handle.alwaysAllowChanged(ev)
  local what = ev.toolName
  if ev.scope == "prefix" and ev.rule and ev.rule ~= "" then
    what = ev.toolName .. ": " .. ev.rule
  end
  if ev.allowed then
    chat.note("always allowed in this conversation: " .. what)
  else
    chat.note("asks again in this conversation: " .. what)
  end
end

function handle.upgradeRequested(ev)
  ask_upgrade(ev)
end

function handle.upgradeResolved(ev)
  if dialog.current_id() == ev.toolUseId then
    dialog.close()
  end
  chat.note(ev.approved and "changes allowed (unrestricted)" or "changes not allowed")
end

function handle.diff(ev)
  chat.diff(ev.path, ev.diff)
end

function handle.error(ev)
  chat.note("error: " .. (ev.message or ""))
end

function handle.toolRefused(ev)
  chat.note(ev.toolName .. " refused in " .. (status.state.mode or "this") .. " mode")
end

local function dispatch(ev)
  local fn = handle[ev.kind]
  if fn then
    fn(ev)
  end
end

local catch_up

-- REQ-PROTO-020 / 007: events come numbered; a gap means some were missed, and getConversation fills it.
local function on_event(_, ev)
  if type(ev) ~= "table" then
    return
  end
  local s = status.state
  if ev.parentConversationId then
    if ev.parentConversationId == s.conversation then
      if ev.kind == "approvalRequested" then
        ask_approval(ev)
      elseif ev.kind == "upgradeRequested" then
        ask_upgrade(ev)
      end
    end
    return
  end
  if ev.conversationId ~= s.conversation then
    return
  end
  if catching_up then
    table.insert(held, ev)
    return
  end
  if ev.seq <= s.last_seq then
    return -- already seen (a catch-up covered it)
  end
  if ev.seq ~= s.last_seq + 1 then
    catch_up(s.last_seq)
    table.insert(held, ev)
    return
  end
  s.last_seq = ev.seq
  dispatch(ev)
end

-- Load the conversation after `after` (0: everything) and show it; replays events held meanwhile.
catch_up = function(after)
  catching_up = true
  M.async(function()
    local cid = status.state.conversation
    local last, conv = after, nil
    if after == 0 then
      chat.clear()
      chat.set_conversation(cid)
    end
    while true do
      local err, result = M.call("phoenix/getConversation", { conversationId = cid, afterSeq = last })
      if err then
        catching_up = false
        report("could not load the conversation: " .. error_text(err), vim.log.levels.WARN)
        return
      end
      conv = result
      chat.drop_stream()
      for _, message in ipairs(result.messages) do
        chat.message(message)
        last = math.max(last, message.seq)
      end
      if not result.hasMore then
        break
      end
    end
    status.update({
      mode = conv.mode,
      policy = conv.approvalPolicy,
      style = conv.style,
      model = conv.model,
      status = conv.status,
      last_seq = conv.lastSeq,
    })
    show_instructions(conv.instructions)
    catching_up = false
    if conv.pendingApproval and dialog.current_id() ~= conv.pendingApproval.toolUseId then
      ask_approval(vim.tbl_extend("force", conv.pendingApproval, { conversationId = cid }))
    elseif conv.pendingUpgrade and dialog.current_id() ~= conv.pendingUpgrade.toolUseId then
      ask_upgrade(vim.tbl_extend("force", conv.pendingUpgrade, { conversationId = cid }))
    end
    local pending = held
    held = {}
    for _, ev in ipairs(pending) do
      on_event(nil, ev)
    end
  end)
end

M._catch_up = catch_up

-- ------------------------------------------------------------------------------------------ server

local function attach(bufnr)
  local c = client()
  if not c or vim.bo[bufnr].buftype ~= "" then
    return
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == "" or name:sub(1, #M.root + 1) ~= M.root .. "/" then
    return
  end
  vim.lsp.buf_attach_client(bufnr, M.client_id)
end

local function start()
  local capabilities = vim.lsp.protocol.make_client_capabilities()
  -- a rich client (REQ-PROTO-001) that answers what Neovim knows (REQ-SIGHT-004)
  capabilities.experimental = { phoenix = { version = 1, editorSight = M.config.sight ~= false } }
  stopping = false
  M.client_id = compat.start_client({
    name = "phoenix",
    cmd = M.config.cmd,
    cmd_env = M.config.cmd_env,
    root_dir = M.root ~= "" and M.root or "/",
    capabilities = capabilities,
    init_options = M.config.init_options,
    handlers = vim.tbl_extend("error", { ["phoenix/event"] = on_event }, require("phoenix.sight").handlers()),
    flags = { debounce_text_changes = 150 },
    on_init = function()
      vim.schedule(function()
        for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
          if vim.api.nvim_buf_is_loaded(bufnr) then
            attach(bufnr)
          end
        end
        if status.state.conversation then
          -- the chat is restored from the server: all of it when it is empty (a new Neovim session), else
          -- what it missed (after a restart; the chat keeps its notes, which the server does not keep)
          catch_up(status.state.last_seq)
        end
        M.async(function()
          M.read_route() -- the route every message is sent with (REQ-AGENT-001)
          M.list_models() -- the ids :PhoenixModel completes
        end)
      end)
    end,
    on_exit = function(code, signal)
      vim.schedule(function()
        dialog.close()
        if stopping or not M.config.restart then
          return
        end
        report(string.format("the server stopped (code %s, signal %s); starting it again", code, signal),
          vim.log.levels.WARN)
        vim.defer_fn(start, 300)
      end)
    end,
  })
  if not M.client_id then
    report("could not start " .. table.concat(M.config.cmd, " ") .. " (see :checkhealth phoenix)",
      vim.log.levels.ERROR)
  end
end

function M.restart()
  local c = client()
  stopping = true
  if c then
    compat.stop(c)
  end
  vim.defer_fn(start, 300)
end

function M.server_pid()
  local c = client()
  return c and compat.server_pid(c, M.config.cmd) or nil
end

-- ------------------------------------------------------------------------------------------ actions

local function use(conv, cid)
  status.update({
    conversation = cid,
    mode = conv.mode,
    policy = conv.approvalPolicy,
    style = conv.style,
    model = conv.model,
    status = "idle",
    last_seq = 0,
    sandbox = conv.sandbox,
  })
  stopped = false
  chat.set_conversation(cid)
  remember(cid)
end

-- inside M.async: make sure there is an active conversation
local function ensure_conversation()
  if status.state.conversation then
    return true
  end
  -- M.root has no trailing slash, so the root directory itself is "": the server refuses an empty path
  local err, result = M.call("phoenix/newConversation", { workingDirectory = M.root ~= "" and M.root or "/" })
  if err then
    report("could not start a conversation: " .. error_text(err), vim.log.levels.ERROR)
    return false
  end
  use(result, result.conversationId)
  chat.clear()
  -- the instructions in effect are named by getConversation only (newConversation does not list them)
  local _, conv = M.call("phoenix/getConversation", { conversationId = result.conversationId, limit = 1 })
  if conv and status.state.conversation == result.conversationId then
    show_instructions(conv.instructions)
  end
  return true
end

-- Start a new conversation and show it (empty) in the chat. The old one stays on the server
-- (:PhoenixConversations switches back). `status.update` cannot clear a field (a nil value is no entry in
-- a Lua table), so the active conversation is forgotten here, with whatever was held for it.
-- In the background: call `method` on the active conversation with the parameters make_params() returns
-- (conversationId added). A conversation is started first when there is none, unless `existing` is set,
-- in which case nothing is done without one.
local function on_conversation(method, make_params, existing)
  M.async(function()
    if existing then
      if not status.state.conversation then
        return
      end
    elseif not ensure_conversation() then
      return
    end
    local params = make_params and make_params() or {}
    params.conversationId = status.state.conversation
    ask(method, params)
  end)
end

function M.new_conversation()
  dialog.close()
  status.state.conversation = nil
  status.state.last_seq = 0
  held = {}
  M.async(function()
    ensure_conversation()
  end)
end

local function show_chips()
  local chips = attach_list.chips()
  chat.set_footer(chips ~= "" and { "", chips } or {})
end

-- Send text (REQ-PERM-014: refused while an approval dialog is open), with the pending attachments
-- (REQ-NVIM-016): they are forgotten once the server took the message, and kept when it refused it.
function M.send(text)
  if dialog.is_open() then
    report("answer the open approval first (Y allow, N deny, A always allow, Esc deny)", vim.log.levels.WARN)
    return false
  end
  text = text or ""
  local items, entries = attach_list.take()
  if vim.trim(text) == "" and #items == 0 then
    return false
  end
  M.async(function()
    if not ensure_conversation() then
      return
    end
    local params = { conversationId = status.state.conversation, text = text }
    if #items > 0 then
      params.attachments = items
    end
    if status.state.route then
      params.route = status.state.route -- the selected route goes with every message (REQ-AGENT-001)
    end
    local err = M.call("phoenix/sendMessage", params)
    if err then
      -- nothing the user typed is lost: the next prompt offers it again
      M.draft = text ~= "" and text or M.draft
      report(refusal.send(err, vim.tbl_map(function(entry)
        return entry.label
      end, entries)), vim.log.levels.WARN)
      return
    end
    if #entries > 0 then
      attach_list.sent(entries)
      show_chips()
    end
  end)
  return true
end

-- ------------------------------------------------------------------------------------------ attachments

local function attached(label, problem)
  if not label then
    report(problem, vim.log.levels.WARN)
    return
  end
  show_chips()
  report(string.format("attached %s (%d with the next message)", label, #attach_list.pending))
end

-- The file of the current buffer, or nil after telling the user why there is none.
local function current_file()
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= "" or name == "" then
    report("the current buffer is not a file, so there is nothing to attach", vim.log.levels.WARN)
    return nil
  end
  return bufnr, vim.fn.fnamemodify(name, ":p")
end

-- Attach the current buffer's file, or its lines line1..line2 (1-based) when given: read by the server from
-- the buffer (unsaved text included) when it is attached to the server, else from disk.
function M.attach_lines(line1, line2)
  local _, path = current_file()
  if path then
    attached(attach_list.file(M.root, path, line1, line2))
  end
end

-- Attach files by name (relative to the current directory; ~, %, $VAR and wildcards expanded).
function M.attach_files(names)
  for _, name in ipairs(names) do
    local paths = vim.tbl_filter(function(path)
      return path ~= ""
    end, vim.split(vim.fn.expand(name), "\n", { plain = true }))
    if #paths == 0 then
      paths = { name } -- a name expand() cannot read: reported below as not found
    end
    for _, path in ipairs(paths) do
      local full = vim.fn.fnamemodify(path, ":p"):gsub("/$", "")
      if vim.fn.isdirectory(full) == 1 then
        report(path .. " is a directory; attach the files in it (" .. path .. "/*)", vim.log.levels.WARN)
      elseif vim.fn.filereadable(full) == 0 then
        report(path .. " is not a file that can be read, so it was not attached", vim.log.levels.WARN)
      else
        attached(attach_list.file(M.root, full, nil, nil))
      end
    end
  end
end

-- Attach the problems Neovim shows for the current buffer (vim.diagnostic), as they are now.
function M.attach_problems()
  local bufnr, path = current_file()
  if path then
    local label, count = attach_list.problems(M.root, bufnr, path)
    if not label then
      attached(nil, count) -- count: why not
      return
    end
    attached(string.format("%s (%d %s)", label, count, count == 1 and "problem" or "problems"))
  end
end

function M.clear_attachments()
  attach_list.clear()
  show_chips()
end

-- The labels of the attachments that go with the next message.
function M.attachments()
  return attach_list.labels()
end

-- Read the project instructions again for the active conversation (REQ-INSTR-002: between turns; they take
-- effect from the next turn) and show the files now in effect.
function M.reload_instructions()
  M.async(function()
    local cid = status.state.conversation
    if not cid then
      report("there is no conversation (:Phoenix starts one)", vim.log.levels.WARN)
      return
    end
    local err, result = M.call("phoenix/reloadInstructions", { conversationId = cid })
    if err then
      report("could not reload the instructions: " .. error_text(err), vim.log.levels.WARN)
      return
    end
    if status.state.conversation == cid then
      show_instructions(result.instructions)
      chat.note(result.changed and "instructions reloaded: the next turn uses them" or "instructions unchanged")
    end
  end)
end

-- The lines line1..line2 of the current buffer as a fenced block naming the file, then the question.
function M.selection_message(question, line1, line2)
  local lines = vim.api.nvim_buf_get_lines(0, line1 - 1, line2, false)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":.")
  local fence = "```"
  for _, line in ipairs(lines) do
    if line:find("```", 1, true) then
      fence = "````"
    end
  end
  return string.format("%s\n\nIn `%s`, lines %d-%d:\n%s%s\n%s\n%s", question, name, line1, line2, fence,
    vim.bo.filetype, table.concat(lines, "\n"), fence)
end

-- Ask for a message; the text of a message the server refused is offered again (and forgotten once used).
local function prompt(on_text)
  if dialog.is_open() then
    report("answer the open approval first", vim.log.levels.WARN)
    return
  end
  local default = M.draft
  vim.ui.input({ prompt = "Ask Phoenix: ", default = default }, function(text)
    if text and vim.trim(text) ~= "" then
      if M.draft == default then
        M.draft = nil
      end
      on_text(text)
    end
  end)
end

function M.cancel()
  local st = status.state.status
  stopped = stopped or (st ~= nil and st ~= "idle" and st ~= "error" and st ~= "exhausted")
  on_conversation("phoenix/cancel", nil, true)
end

function M.set_mode(mode)
  on_conversation("phoenix/setMode", function()
    return { mode = mode }
  end)
end

-- Set the policy; without one, toggle it (REQ-PERM-010), from the policy of the conversation (which may be
-- started just now).
function M.set_policy(policy)
  on_conversation("phoenix/setApprovalPolicy", function()
    return { policy = policy or (status.state.policy == "auto" and "interactive" or "auto") }
  end)
end

M.toggle_policy = function()
  M.set_policy(nil)
end

local STYLES = { "chat", "discussion", "plan", "development", "task" }

function M.set_style(style)
  -- a suggestion (REQ-LAYER-006) arrives as a styleSuggestion event and is shown in the chat
  local function apply(chosen)
    if chosen then
      on_conversation("phoenix/setStyle", function()
        return { style = chosen }
      end)
    end
  end
  if style then
    apply(style)
  else
    vim.ui.select(STYLES, { prompt = "Phoenix style" }, apply)
  end
end

-- ------------------------------------------------------------------------------------------ models

M.models = nil -- the last phoenix/listModels answer (REQ-MODEL-001)

-- Inside M.async: the models to choose from (the server answers within ~1.5 s, with its built-in list and
-- a reason when the API cannot be asked). Returns the answer, or nil after telling the user why not.
function M.list_models()
  local err, result = M.call("phoenix/listModels", vim.empty_dict())
  if err then
    report("could not list the models: " .. error_text(err), vim.log.levels.WARN)
    return nil
  end
  M.models = result
  return result
end

-- The ids :PhoenixModel completes: from the last list the API gave, else asked now (at most 2 s; the built-in
-- list is a stand-in until the API's answer arrives, which the server then keeps).
function M.model_ids()
  if not M.models or M.models.source ~= "api" then
    local c = client()
    local answer = c and compat.request_sync(c, "phoenix/listModels", vim.empty_dict(), 2000)
    if answer and answer.result then
      M.models = answer.result
    end
  end
  local ids = {}
  for _, m in ipairs(M.models and M.models.models or {}) do
    table.insert(ids, m.id)
  end
  return ids
end

-- The provider of a model: the server's field, else the id's prefix, "anthropic" for a bare id (issue 27).
function M.model_provider(m)
  if type(m.provider) == "string" and m.provider ~= "" then
    return m.provider
  end
  return m.id:match("^([^/]+)/") or "anthropic"
end

-- The models grouped by provider (issue 27): the groups in the order their first model comes (the server
-- lists Anthropic's first), each group's models in the server's order. Returns the ordered list and how many
-- providers it has.
function M.group_models(models)
  local order, groups = {}, {}
  for _, m in ipairs(models) do
    local p = M.model_provider(m)
    if not groups[p] then
      groups[p] = {}
      table.insert(order, p)
    end
    table.insert(groups[p], m)
  end
  local out = {}
  for _, p in ipairs(order) do
    vim.list_extend(out, groups[p])
  end
  return out, #order
end

-- A picker entry: "Claude Haiku 4.5  claude-haiku-4-5 · 200K tokens  (in use)"; with several providers each
-- entry starts with its provider ("openai │ gpt-4.1 ..."), the list being grouped by provider.
function M.model_label(m, current, default, with_provider)
  local marks = {}
  if m.id == current then
    table.insert(marks, "in use")
  end
  if m.id == default then
    table.insert(marks, "default")
  end
  local window = m.contextWindow and (" · " .. status.window_text(m.contextWindow) .. " tokens") or ""
  if m.contextWindow and m.contextWindowKnown == false then
    window = window .. " (assumed: set it in the providers file)"
  end
  local label = string.format("%s  %s%s", (m.name and m.name ~= "") and m.name or m.id, m.id, window)
  if #marks > 0 then
    label = label .. "  (" .. table.concat(marks, ", ") .. ")"
  end
  if with_provider then
    label = M.model_provider(m) .. " │ " .. label
  end
  return (m.id == current and "● " or "  ") .. label
end

-- Switch the model of the active conversation (REQ-MODEL-003: between turns; a refusal, e.g. a context too
-- large for the new window, is reported with the server's message, which says how to go on). Without an
-- id: a picker (vim.ui.select, so Telescope or fzf-lua when they replace it) of the listed models, the one
-- in use marked, with the reason when the list is the built-in one.
function M.set_model(model)
  if model and model ~= "" then
    on_conversation("phoenix/setModel", function()
      return { model = model }
    end)
    return
  end
  M.async(function()
    local result = M.list_models()
    if not result then
      return
    end
    local current = status.state.model
    local items = vim.deepcopy(result.models)
    local known = false
    for _, m in ipairs(items) do
      known = known or m.id == current
    end
    if current and current ~= "" and not known then
      table.insert(items, 1, { id = current, name = current, contextWindow = nil })
    end
    local title = "Phoenix model"
    if result.source == "builtin" and result.reason then
      report(result.reason, vim.log.levels.INFO)
      title = "Phoenix model (built-in list)"
    end
    for _, listing in ipairs(result.providers or {}) do
      if not listing.listed and listing.reason then
        report(listing.reason, vim.log.levels.INFO) -- a configured provider whose models are missing
      end
    end
    local grouped, providers = M.group_models(items)
    vim.ui.select(grouped, {
      prompt = title,
      kind = "phoenix_model",
      format_item = function(m)
        return M.model_label(m, current, result.defaultModel, providers > 1)
      end,
    }, function(m)
      if m and m.id ~= current then
        M.set_model(m.id)
      end
    end)
  end)
end

-- ------------------------------------------------------------------------------------------ route

M.ROUTES = { "ask", "agent" }

-- Inside M.async: the route the server keeps for this machine (phoenix/getRoute); nil after telling why not
-- (messages are then sent without one, and the server uses its own).
function M.read_route()
  local err, result = M.call("phoenix/getRoute", vim.empty_dict())
  if err then
    report("could not read the route: " .. error_text(err), vim.log.levels.WARN)
    return nil
  end
  status.update({ route = result.route })
  refresh_header()
  return result.route
end

-- Choose the route of the next messages, for every client of this machine (phoenix/setRoute: the server
-- persists it). Without a route: a picker of the two. A refusal shows the server's message and changes nothing.
function M.set_route(route)
  if not route or route == "" then
    local current = status.state.route
    vim.ui.select(M.ROUTES, {
      prompt = "Phoenix route",
      kind = "phoenix_route",
      format_item = function(r)
        local words = r == "ask" and "the model answers and calls tools itself"
          or "an orchestrator plans and runs scripts"
        return (r == current and "● " or "  ") .. r .. "  (" .. words .. ")"
      end,
    }, function(r)
      if r and r ~= current then
        M.set_route(r)
      end
    end)
    return
  end
  M.async(function()
    local err, result = M.call("phoenix/setRoute", { route = route })
    if err then
      report("the route was not changed: " .. error_text(err), vim.log.levels.WARN)
      return
    end
    status.update({ route = result.route })
    refresh_header()
    chat.note(string.format("route: %s (was %s; every client on this machine)", result.route, result.previous))
  end)
end

-- Switch to a conversation and show it (REQ-PROTO-007: the whole history from the server).
function M.open_conversation(cid)
  M.async(function()
    local err, conv = M.call("phoenix/getConversation", { conversationId = cid, limit = 1 })
    if err then
      report(error_text(err), vim.log.levels.WARN)
      return
    end
    dialog.close()
    use(conv, cid)
    catch_up(0)
  end)
end

function M.conversations()
  M.async(function()
    local err, result = M.call("phoenix/listConversations", vim.empty_dict())
    if err then
      report(error_text(err), vim.log.levels.WARN)
      return
    end
    local items = { { title = "New conversation" } }
    vim.list_extend(items, result.conversations)
    vim.ui.select(items, {
      prompt = "Phoenix conversations",
      format_item = function(item)
        if not item.conversationId then
          return "+ " .. item.title
        end
        local title = item.title ~= "" and item.title or "(empty)"
        return string.format("%s  [%s, %d messages]", title, item.status or "?", item.messageCount or 0)
      end,
    }, function(item)
      if not item then
        return
      elseif not item.conversationId then
        M.new_conversation()
        chat.open(M.config.chat_position)
      else
        M.open_conversation(item.conversationId)
        chat.open(M.config.chat_position)
      end
    end)
  end)
end

function M.open_chat()
  local win = chat.open(M.config.chat_position)
  local buf = vim.api.nvim_win_get_buf(win)
  local keys = M.config.keys
  local function map(lhs, fn)
    if lhs then
      vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true })
    end
  end
  map(keys.send, function()
    prompt(M.send)
  end)
  map(keys.cancel, M.cancel)
  map(keys.toggle_policy, M.toggle_policy)
  map(keys.model, function()
    M.set_model(nil)
  end)
  if not status.state.conversation then
    M.new_conversation()
  end
  return win
end

M.statusline = status.statusline
M.state = status.state

-- ------------------------------------------------------------------------------------------ setup

local function commands()
  local command = vim.api.nvim_create_user_command
  command("Phoenix", function()
    M.open_chat()
  end, { desc = "Open the Phoenix chat" })
  command("PhoenixSend", function(opts)
    local function send(question)
      if opts.range > 0 then
        question = M.selection_message(question, opts.line1, opts.line2)
      end
      if M.send(question) then
        chat.open(M.config.chat_position)
      end
    end
    if opts.args ~= "" then
      send(opts.args)
    else
      prompt(send)
    end
  end, { nargs = "*", range = true, desc = "Send a message (with a range: the selected lines and a question)" })
  command("PhoenixAttach", function(opts)
    if opts.range > 0 then
      M.attach_lines(opts.line1, opts.line2)
    else
      M.attach_lines(nil, nil)
    end
  end, { range = true, desc = "Attach the selected lines (no range: the whole file) to the next message" })
  command("PhoenixAttachFile", function(opts)
    M.attach_files(opts.fargs)
  end, { nargs = "+", complete = "file", desc = "Attach files to the next message" })
  command("PhoenixAttachProblems", M.attach_problems,
    { desc = "Attach the current buffer's diagnostics to the next message" })
  command("PhoenixAttachClear", M.clear_attachments, { desc = "Remove the attachments not sent yet" })
  command("PhoenixReloadInstructions", M.reload_instructions,
    { desc = "Read AGENTS.md / CLAUDE.md again for this conversation" })
  command("PhoenixCancel", M.cancel, { desc = "Cancel the current turn" })
  command("PhoenixMode", function(opts)
    M.set_mode(opts.args)
  end, {
    nargs = 1,
    complete = function()
      return { "restricted", "unrestricted" }
    end,
    desc = "Switch the mode: restricted (read-only) or unrestricted",
  })
  command("PhoenixPolicy", function(opts)
    M.set_policy(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = function()
      return { "auto", "interactive" }
    end,
    desc = "Set or toggle the approval policy",
  })
  command("PhoenixStyle", function(opts)
    M.set_style(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = function()
      return STYLES
    end,
    desc = "Set the style",
  })
  command("PhoenixModel", function(opts)
    M.set_model(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = function(lead)
      return vim.tbl_filter(function(id)
        return id:sub(1, #lead) == lead
      end, M.model_ids())
    end,
    desc = "Choose the model of the conversation (a picker without an argument)",
  })
  command("PhoenixRoute", function(opts)
    M.set_route(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = function(lead)
      return vim.tbl_filter(function(r)
        return r:sub(1, #lead) == lead
      end, M.ROUTES)
    end,
    desc = "Choose the route of the next messages: ask or agent (a picker without an argument)",
  })
  command("PhoenixConversations", M.conversations, { desc = "List conversations and switch" })
  command("PhoenixNew", function()
    M.new_conversation()
    chat.open(M.config.chat_position)
  end, { desc = "Start a new conversation" })
  command("PhoenixRestart", M.restart, { desc = "Restart the server (the chat is restored from it)" })
end

function M.setup(opts)
  M.config = vim.tbl_deep_extend("force", defaults, opts or {})
  M.root = vim.fn.fnamemodify(M.config.root_dir or vim.fn.getcwd(), ":p"):gsub("/$", "")
  commands()
  require("phoenix.sight").setup() -- counts each buffer's diagnostic changes (REQ-SIGHT-004)
  local group = vim.api.nvim_create_augroup("phoenix", { clear = true })
  vim.api.nvim_create_autocmd({ "BufReadPost", "BufNewFile", "BufEnter" }, {
    group = group,
    callback = function(args)
      attach(args.buf)
    end,
  })
  vim.api.nvim_create_autocmd("VimLeavePre", {
    group = group,
    callback = function()
      stopping = true
    end,
  })
  local previous = remembered()[M.root]
  if previous then
    status.update({ conversation = previous, last_seq = 0 })
  end
  start()
end

return M
