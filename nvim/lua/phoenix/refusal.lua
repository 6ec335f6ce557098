-- What the server's refusals mean to the user: what happened, why, and what to do next, in the user's words
-- (the wire's own words, such as "Invalid params: 'attachments[0]'", a method name or a status name, are not
-- shown).
local status = require("phoenix.status")

local M = {}

-- The server's message without the wire's words around it: "Invalid params: 'model': ..." names the field
-- ("model: ..."), except an attachment's or an image's place in the message, whose message names the file.
function M.plain(message)
  message = tostring(message or "")
  message = message:gsub("^Invalid params for [^:]*: ", "")
  message = message:gsub("^Invalid params: '[a-z]+%[%d+%]': ", ""):gsub("^Invalid params: '([^']*)': ", "%1: ")
  message = message:gsub("%s*%(phoenix/cancel%)", " (<C-c> in the chat, or :PhoenixCancel)")
  return message
end

-- An error answer (or anything else a request failed with) as a sentence for the user.
function M.text(err)
  if type(err) == "table" then
    return err.message and M.plain(err.message) or vim.inspect(err)
  end
  return M.plain(err)
end

local function sentence(text)
  text = vim.trim(text)
  if text ~= "" and not text:match("[.!?]$") then
    text = text .. "."
  end
  return text
end

-- Why phoenix/sendMessage refused a message, and what to do: `labels` are the chips of the attachments sent
-- with it.
function M.send(err, labels)
  local data = type(err) == "table" and type(err.data) == "table" and err.data or {}
  local why
  if data.kind == "agentBusy" then
    if data.status == "awaiting_approval" then
      why = "Phoenix is waiting for your answer to its approval dialog. Answer it, then send again."
    elseif data.status == "awaiting_upgrade" then
      why = "Phoenix is waiting for your answer to its request to make changes. Answer it, then send again."
    else
      why = string.format("Phoenix is still working (%s). Wait for it to finish, or stop it with <C-c> in the "
        .. "chat (or :PhoenixCancel), then send again.", status.status_words(data.status))
    end
  else
    why = sentence(M.text(err))
    local index = type(data.field) == "string" and tonumber(data.field:match("^attachments%[(%d+)%]"))
    if index and labels and labels[index + 1] then
      why = why .. " The attachments are kept (:PhoenixAttachClear removes them)."
    end
  end
  return "your message was not sent: " .. why
    .. " Your text is kept: i in the chat (or :PhoenixSend) brings it back to send again."
end

return M
