"""The order the whole suite's tests start in under xdist: the longest first (issue 35).

``-n auto --dist worksteal`` hands each worker an equal slice of the collected list, in order, and a worker
that runs out takes the second half of the longest queue left, from its end. In the collected (alphabetical)
order a two-minute test can be the last one a worker starts, and the other worker then idles for its whole
length: the run's tail. Started first, the long tests overlap each other and the many short ones, and what is
left at the end, which the workers share out between them, is short tests.

The known durations (``KNOWN``, seconds) are from whole-suite runs with ``--durations`` on a loaded machine:
their ranking is what counts, not their size. A test not listed is ranked by its ``slow`` mark (``SLOW_S``, "more
than about 2 s": it starts a server, an editor or the sandbox) or else last, each group in the collected order.
A module whose tests share an expensive module-scoped fixture (``TOGETHER``) is moved as one block, ranked by its
tests' sum: split between two workers, its fixture would be set up on both (``npm test``, 50 s, twice).

Only the order changes, never which tests run or what they check; a run in one process (``-n 0``) keeps the
collected order, so a test picked alone runs as it always did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import pytest

#: the rank of a test marked slow and not in KNOWN: most of them take 3-10 s alone, more under load
SLOW_S = 5.0

#: modules moved as one block: their tests share a module-scoped fixture that is expensive to set up
TOGETHER = frozenset({
    "tests/clients/test_vscode_extension.py",  # npm_test: tsc, eslint, the unit tests, the bundle, vsce, e2e
    # their MCP servers, started once for the module
    "tests/agent/test_mcp_stdio.py", "tests/agent/test_mcp_tools.py", "tests/agent/test_mcp_http.py",
})

#: whole-suite ``--durations`` (loaded machine, load 15-25): test node id -> seconds of its call (or setup)
KNOWN: dict[str, float] = {
    "tests/clients/vscode_real/test_real_vscode.py::test_the_extension_in_a_real_vscode": 132,
    "tests/clients/codecompanion/test_codecompanion.py::"
    "test_a_conversation_is_resumed_from_codecompanions_session_list": 104,
    "tests/client/test_resume.py::test_resume_without_an_id_offers_a_picker_of_this_folders_conversations": 88,
    "tests/clients/codecompanion/test_codecompanion.py::test_a_message_typed_in_the_chat_is_answered_in_it": 87,
    "tests/clients/codecompanion/test_codecompanion.py::"
    "test_an_upgrade_approved_in_the_chat_keeps_its_line_and_the_mode_option": 82,
    "tests/client/test_terminal.py::test_a_folder_that_would_confine_nothing_is_refused_before_the_server_starts": 80,
    "tests/acp/test_load.py::test_a_session_that_cannot_be_loaded_is_not_said_to_be_missing": 72,
    "tests/client/test_resume.py::test_continue_goes_on_with_this_folders_latest_conversation": 68,
    "tests/security/test_run_secrets.py::test_secrets_and_a_denied_file_reach_neither_the_model_nor_stdout": 67,
    "tests/clients/nvim/test_mcp_tools.py::"
    "test_neovim_shows_a_tools_image_live_and_when_the_conversation_is_opened_again[nvim-system]": 65,
    "tests/clients/nvim/test_plugin.py::"
    "test_patch_lands_in_the_open_modified_buffer_with_one_step_undo[nvim-system]": 65,
    "tests/run/test_run.py::test_resume_restores_a_conversation_left_inside_a_turn": 63,
    "tests/clients/nvim/test_plugin.py::"
    "test_a_restarted_server_restores_the_chat_and_a_gap_is_caught_up[nvim-system]": 63,
    "tests/acp/test_image_replay.py::test_load_replays_the_users_and_the_tools_images": 63,
    "tests/security/test_shared_rules.py::test_a_file_on_the_deny_read_list_is_never_attached_on_any_surface[acp]": 62,
    "tests/clients/codecompanion/test_codecompanion.py::test_a_tool_call_is_drawn_once_from_one_final_update": 61,
    "tests/security/test_shared_rules.py::"
    "test_another_folders_conversation_is_refused_to_an_lsp_client_that_names_its_folder": 60,
    "tests/server/test_hub_stop.py::test_the_acp_agents_end_kills_a_live_background_command": 55,
    "tests/security/test_shared_rules.py::"
    "test_an_unavailable_agent_route_is_refused_saying_why_on_every_surface[acp]": 55,
    "tests/run/test_run.py::test_a_commands_changes_land_only_with_their_own_rule": 55,
    "tests/clients/vscode_real/test_real_vscode_review.py::test_shell_changes_reviewed_and_undone_in_a_real_vscode": 54,
    "tests/security/test_shared_rules.py::test_another_folders_session_is_not_loaded_over_acp": 53,
    "tests/security/test_run_inert.py::test_a_runs_error_message_quoting_the_service_reaches_the_terminal_inert": 52,
    "tests/clients/test_vscode_extension.py::test_npm_test_passes": 52,
    "tests/client/test_resume.py::"
    "test_the_picker_finds_this_folders_conversation_behind_many_newer_ones_of_other_folders": 51,
    "tests/run/test_run.py::test_model_and_route_reach_the_request": 50,
    "tests/security/test_mcp_search_attacks.py::"
    "test_a_description_crafted_to_match_every_search_does_not_come_first": 49,
    "tests/client/test_undo.py::test_undo_takes_back_the_accepted_change_set": 48,
    "tests/client/test_resume.py::test_resume_by_id_restores_mode_and_policy_and_asks_the_pending_approval_again": 47,
    "tests/clients/nvim/test_plugin.py::test_upgrade_request_in_the_same_dialog[nvim-system]": 47,
    "tests/client/test_resume.py::test_continue_shows_a_tools_image_and_the_users_as_they_were_shown_live": 46,
    "tests/security/test_image_replay_attacks.py::test_images_changed_on_the_disk_are_never_sent_as_they_lie": 45,
    "tests/security/test_shared_rules.py::test_a_text_over_the_limit_is_refused_on_every_surface[acp]": 44,
    "tests/clients/nvim/test_background.py::"
    "test_phoenix_background_shows_the_changes_so_far_and_stop_leads_to_their_review[nvim-system]": 44,
    "tests/client/test_resume.py::test_ctrl_d_at_the_picker_leaves_without_a_conversation": 44,
    "tests/client/test_terminal.py::test_usage_command_shows_the_totals_cache_share_and_an_estimated_cost": 44,
    "tests/security/test_acp_attacks.py::test_a_client_servers_environment_stays_secret_everywhere": 44,
    "tests/acp/test_mcp.py::test_a_sessions_mcp_server_is_on_the_agent_route_under_the_manifest": 42,
    "tests/security/test_reading.py::"
    "test_a_nested_claude_md_linked_to_the_servers_environment_never_reaches_the_model[/proc/thread-self/environ]": 42,
    "tests/clients/nvim/test_plain_nvim.py::"
    "test_plain_neovim_asks_through_code_actions_sees_the_answer_and_approves[nvim-system]": 42,
    "tests/acp/test_load.py::test_load_after_a_restart_replays_then_asks_again": 42,
    "tests/client/test_terminal.py::test_upgrade_request_answered_no": 41,
    "tests/client/test_terminal.py::test_messages_wait_while_an_approval_is_open": 41,
    "tests/client/test_resume.py::test_resume_of_another_folders_conversation_says_where_to_go_on_with_it": 41,
    "tests/client/test_chat_tmux.py::"
    "test_continue_resume_with_the_picker_and_route_switch_typed_in_a_real_terminal": 41,
    "tests/clients/codecompanion/test_codecompanion.py::"
    "test_a_mode_command_answers_and_the_next_message_is_not_refused[typed]": 40,
    "tests/acp/test_list_close.py::test_session_list_pages_through_this_folders_sessions_and_load_resumes_one": 40,
    "tests/client/test_terminal.py::"
    "test_chat_on_an_openai_compatible_server_without_an_anthropic_key_and_model_grouped_by_provider": 39,
    "tests/security/test_uri_attacks.py::test_acp_a_session_over_the_whole_disk_or_the_home_folder_is_refused": 39,
    "tests/security/test_image_request_attacks.py::test_an_acp_prompts_image_reaches_the_model_as_its_pixels_alone": 39,
    "tests/client/test_background.py::test_a_background_command_that_ends_at_the_prompt_is_asked_about_there": 39,
    "tests/acp/test_mcp_direct.py::test_reads_are_fetches_and_writes_are_edits_asked_about": 39,
    "tests/security/test_run_secrets.py::test_a_tool_call_carrying_the_key_stops_the_turn_as_failed": 39,
    "tests/test_crossings.py::test_the_script_measures_a_message_through_the_server[lsp]": 38,
    "tests/clients/nvim/test_plugin.py::"
    "test_patch_lands_in_the_open_modified_buffer_with_one_step_undo[nvim-0.11.4]": 37,
    "tests/acp/test_mcp_server_always.py::"
    "test_always_allow_for_the_whole_server_covers_its_other_write_and_no_other_server": 37,
    "tests/security/test_reading.py::"
    "test_a_nested_claude_md_linked_to_the_servers_environment_never_reaches_the_model[/proc/self/environ]": 37,
    "tests/client/test_markdown.py::"
    "test_an_answer_is_drawn_as_markdown_block_by_block_on_a_terminal_and_plain_to_a_pipe": 37,
    "tests/security/test_uri_attacks.py::"
    "test_acp_an_embedded_private_key_never_reaches_the_model_however_its_uri_is_spelt": 36,
    "tests/core/test_properties.py::TestConversationMachine::runTest": 36,
}

Item = TypeVar("Item", bound=pytest.Item)


def rank(item: pytest.Item) -> float:
    """How long ``item`` is expected to take: its known duration, else SLOW_S when it is marked slow, else 0."""
    known = KNOWN.get(item.nodeid)
    if known is not None:
        return known
    return SLOW_S if item.get_closest_marker("slow") is not None else 0.0


def longest_first(items: Sequence[Item]) -> list[Item]:
    """``items`` with the longest first: each test by its rank, each TOGETHER module as one block ranked by its
    tests' sum; a stable sort, so tests of equal rank keep the collected order."""
    blocks: list[list[Item]] = []
    together: dict[str, list[Item]] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module not in TOGETHER:
            blocks.append([item])
        elif module in together:
            together[module].append(item)
        else:
            together[module] = [item]
            blocks.append(together[module])
    blocks.sort(key=lambda block: -sum(rank(item) for item in block))
    return [item for block in blocks for item in block]


class LongestFirst:
    """The plugin (registered by ``tests/conftest.py`` in an xdist worker): the last word on the order, after
    pytest's own grouping of parametrized setups and after ``-m``/``-k`` chose the tests."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        items[:] = longest_first(items)
