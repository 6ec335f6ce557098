---@class CodeCompanion.Chat.MessageTags
local M = {
  BUFFER = "buffer",
  COMPACT_SUMMARY = "compact_summary",
  CODE_REVIEW = "review",
  DIAGNOSTICS = "diagnostics",
  DIFF = "diff",
  DOCUMENT = "document",
  EDITOR_CONTEXT = "editor_context",
  FILE = "file",
  FROM_CUSTOM_PROMPT = "from_custom_prompt",
  IMAGE = "image",
  MESSAGES = "messages",
  QUICKFIX = "quickfix",
  RULES = "rules",
  SELECTION = "selection",
  SYSTEM_PROMPT_FROM_CONFIG = "system_prompt_from_config",
  TERMINAL = "terminal",
  TOOL = "tool",
  TOOL_OUTPUT = "tool_output",
  TOOL_SYSTEM_PROMPT = "tool_system_prompt",
  VIEWPORT = "viewport",
}

return M
