return {
  INITIALIZE = "initialize",
  AUTHENTICATE = "authenticate",
  SESSION_CANCEL = "session/cancel",
  SESSION_LIST = "session/list",
  SESSION_LOAD = "session/load",
  SESSION_NEW = "session/new",
  SESSION_PROMPT = "session/prompt",
  SESSION_REQUEST_PERMISSION = "session/request_permission",
  SESSION_SET_CONFIG_OPTION = "session/set_config_option",
  SESSION_UPDATE = "session/update",
  FS_READ_TEXT_FILE = "fs/read_text_file",
  FS_WRITE_TEXT_FILE = "fs/write_text_file",
}
