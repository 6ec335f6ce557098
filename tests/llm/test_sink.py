"""The sink check's pure part (``phoenix_lsp/llm/sink.py``, REQ-SEC-012): what it finds in a request's texts and
what it puts in their place. Fast and table-driven: the mutation check of the module runs this file alone."""

from __future__ import annotations

import json
from typing import Any

import pytest

from phoenix_lsp.llm import sink

KEY = "sk-test-4f1d9a7c2b8e6d0f"
TOKEN = "tok_3b9e1c7a5d2f8e04"
PEM = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
       "-----END OPENSSH PRIVATE KEY-----")
KNOWN = [("the value of OPENAI_API_KEY", KEY), ("MCP server files's credential (FILES_TOKEN)", TOKEN)]

# a realistic fake of each format, and the label the user is told
FORMATS = [
    (PEM, "a private key block"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7c9bq0x1\nQ2hlY2sgdGhpcyBvdXQ=\n", "a private key block"),
    ("AKIAIOSFODNN7EXAMPLE", "an AWS access key id"),
    ("ASIAY34FZKBOKMUTVV7A", "an AWS access key id"),
    ("ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a GitHub token"),
    ("github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVW", "a GitHub token"),
    ("glpat-xR4nD0mT0k3nV4lu3zzz", "a GitLab token"),
    ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "a Slack token"),
    ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "a Slack token"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "a Stripe key"),
    ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "an Anthropic API key"),
    ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "an OpenAI API key"),
    ("sk-abcdefghij1234567890T3BlbkFJabcdefghij1234567890", "an OpenAI API key"),
    ("AIzaSyA-1234567890abcdefghijklmnopqrstu", "a Google API key"),
    ("npm_" + "a" * 36, "an npm token"),
    ("pypi-AgEIcHlwaS5vcmc" + "B" * 60, "a PyPI token"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "a JSON Web Token"),
]

# texts that look close to a format but are not one: nothing may be replaced
CLEAN = [
    "the AKIA prefix names an AWS key id",
    "AKIAIOSFODNN7EXAMPL",  # one character short
    "XAKIAIOSFODNN7EXAMPLE1",  # inside a longer word
    "ghp_short",
    "see the PRIVATE KEY section of the manual",
    "eyJ is how base64 of a JSON object starts",
    "a Slack xoxb- prefix alone",
    "sk_live_ is Stripe's prefix",
    "sk-ant-short",
    "xAKIAIOSFODNN7EXAMPLE",  # a word character before it
    "my_ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",  # an underscore before it
    "9npm_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
]


@pytest.fixture(autouse=True)
def _fresh_matchers() -> None:
    """Each test builds its own matchers (a kept one may come from another test process's code)."""
    sink._matcher.cache_clear()


def request(*texts: str) -> list[Any]:
    """A request's parts carrying ``texts`` in a tool result, a message and a tool definition."""
    messages = [{"role": "user", "content": [{"type": "text", "text": t} for t in texts]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": list(texts)}]}]
    return ["You are a coding agent.", messages, [{"name": "read_file", "description": "reads a file"}]]


def everything(parts: list[Any]) -> str:
    return json.dumps(parts)


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize(("secret", "label"), [(KEY, KNOWN[0][0]), (TOKEN, KNOWN[1][0])])
@pytest.mark.parametrize("formats", [True, False])
def test_a_known_secret_is_replaced_everywhere_in_either_mode(secret: str, label: str, formats: bool) -> None:
    parts = request(f"the key is {secret}.", f"again:{secret}")
    fixed, findings = sink.check(parts, KNOWN, formats)
    assert secret not in everything(fixed)
    assert f"the key is [REDACTED: {label}]." in everything(fixed)
    assert findings == [sink.Finding(label, 4)]  # two texts, each in the message and in the tool result


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize(("secret", "label"), FORMATS)
def test_each_credential_format_is_replaced_when_formats_are_on(secret: str, label: str) -> None:
    fixed, findings = sink.check(request(f"config:\n{secret}\nend"), [], True)
    assert secret.strip() not in everything(fixed)
    assert f"[REDACTED: {label}]" in everything(fixed)
    assert findings == [sink.Finding(label, 2)]
    assert "config:\\n[REDACTED" in everything(fixed)


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize(("secret", "label"), FORMATS)
def test_formats_are_left_alone_when_off(secret: str, label: str) -> None:
    parts = request(f"config:\n{secret}\nend")
    fixed, findings = sink.check(parts, [], False)
    assert findings == []
    assert fixed[1] is parts[1]


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize("text", CLEAN)
def test_near_misses_are_not_formats(text: str) -> None:
    parts = request(text)
    fixed, findings = sink.check(parts, KNOWN, True)
    assert findings == []
    assert everything(fixed) == everything(parts)


@pytest.mark.req("REQ-SEC-012")
def test_a_clean_request_comes_back_as_the_same_objects() -> None:
    parts = request("nothing secret here", "AKIA prefix only")
    fixed, findings = sink.check(parts, KNOWN, True)
    assert findings == []
    assert all(a is b for a, b in zip(fixed, parts, strict=True))


@pytest.mark.req("REQ-SEC-012")
def test_only_the_parts_holding_a_secret_are_rebuilt() -> None:
    parts = request("clean")
    parts[1].append({"role": "assistant", "content": [{"type": "text", "text": f"x {KEY}"}]})
    fixed, _ = sink.check(parts, KNOWN, True)
    assert fixed[0] is parts[0] and fixed[2] is parts[2]
    assert fixed[1][0] is parts[1][0]  # the untouched message is the same object
    assert fixed[1][2] is not parts[1][2]
    assert parts[1][2]["content"][0]["text"] == f"x {KEY}"  # the caller's request is not changed


@pytest.mark.req("REQ-SEC-012")
@pytest.mark.parametrize("form", [json.dumps(KEY + '"\\')[1:-1], repr(KEY + "'\n")[1:-1]])
def test_escaped_forms_of_a_known_secret_are_found(form: str) -> None:
    known = [("the value of X_TOKEN", KEY + ('"\\' if '"' in form else "'\n"))]
    fixed, findings = sink.check(request(f"dump: {form}"), known, False)
    assert form not in everything(fixed) and findings == [sink.Finding("the value of X_TOKEN", 2)]


@pytest.mark.req("REQ-SEC-012")
def test_a_secret_in_a_key_a_tool_input_and_a_tool_definition_is_found() -> None:
    parts: list[Any] = [[{"type": "text", "text": f"system {KEY}"}],
                        [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "bash",
                                                            "input": {"command": f"curl -H {KEY}", KEY: 1}}]}],
                        [{"name": "mcp_tool", "description": f"uses {KEY}"}]]
    fixed, findings = sink.check(parts, KNOWN, False)
    assert KEY not in everything(fixed)
    assert findings == [sink.Finding(KNOWN[0][0], 4)]


@pytest.mark.req("REQ-SEC-012")
def test_images_data_is_left_alone() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AKIAIOSFODNN7EXAMPLE"}}
    parts: list[Any] = ["", [{"role": "user", "content": [image, {"type": "text", "text": "hi"}]}], None]
    fixed, findings = sink.check(parts, KNOWN, True)
    assert findings == [] and fixed[1][0]["content"][0] is image


@pytest.mark.req("REQ-SEC-012")
def test_a_secret_containing_another_is_replaced_whole() -> None:
    inner = "abcdefgh12345678"
    known = [("the short one", inner), ("the long one", "00" + inner + "yy")]  # longest first, not "greatest"
    fixed, findings = sink.check(["a 00abcdefgh12345678yy b abcdefgh12345678"], known, False)
    assert fixed == ["a [REDACTED: the long one] b [REDACTED: the short one]"]
    assert sorted(findings, key=lambda f: f.label) == [sink.Finding("the long one", 1),
                                                       sink.Finding("the short one", 1)]


@pytest.mark.req("REQ-SEC-012")
def test_short_known_values_are_not_looked_for() -> None:
    fixed, findings = sink.check(["a 1234567 b"], [("short", "1234567")], False)
    assert fixed == ["a 1234567 b"] and findings == []
    fixed, findings = sink.check(["a 12345678 b"], [("eight", "12345678")], False)
    assert fixed == ["a [REDACTED: eight] b"] and findings == [sink.Finding("eight", 1)]


@pytest.mark.req("REQ-SEC-012")
def test_a_private_key_without_its_end_line_loses_its_body_too() -> None:
    text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\nBKcwggSjAgEAAoIBAQC7\n\nafter"
    fixed, findings = sink.check([text], [], True)
    assert "MIIEvQ" not in fixed[0] and "BKcwgg" not in fixed[0]
    assert fixed[0].startswith("[REDACTED: a private key block]") and fixed[0].endswith("after")
    assert findings == [sink.Finding("a private key block", 1)]


@pytest.mark.req("REQ-SEC-012")
def test_the_text_between_two_key_blocks_is_kept() -> None:
    text = f"{PEM}\nkeep this line\n{PEM}"
    fixed, findings = sink.check([text], [], True)
    assert fixed == ["[REDACTED: a private key block]\nkeep this line\n[REDACTED: a private key block]"]
    assert findings == [sink.Finding("a private key block", 2)]


@pytest.mark.req("REQ-SEC-012")
def test_a_known_secret_overlapping_a_trigger_is_still_found() -> None:
    """The one-pass search reports the leftmost needle only: a secret that starts inside a trigger is found by
    the second look at the text that holds the trigger."""
    known = [("the value of X_TOKEN", "IAsecret-after-the-trigger")]
    fixed, findings = sink.check(["AKIAsecret-after-the-trigger here"], known, True)
    assert fixed == ["AK[REDACTED: the value of X_TOKEN] here"]
    assert findings == [sink.Finding("the value of X_TOKEN", 1)]


@pytest.mark.req("REQ-SEC-012")
def test_secrets_in_several_messages_and_a_system_string_are_found_each() -> None:
    messages = [{"role": "user", "content": f"m{n} " + (KEY if n % 3 == 0 else "é clean")} for n in range(10)]
    parts: list[Any] = [f"sys {TOKEN}", messages, None]
    fixed, findings = sink.check(parts, KNOWN, False)
    assert KEY not in everything(fixed) and TOKEN not in everything(fixed)
    assert {f.label: f.count for f in findings} == {KNOWN[0][0]: 4, KNOWN[1][0]: 1}
    assert [a is b for a, b in zip(fixed[1], messages, strict=True)] == [n % 3 != 0 for n in range(10)]


@pytest.mark.req("REQ-SEC-012")
def test_a_trigger_without_a_match_changes_nothing_and_reports_nothing() -> None:
    parts = ["eyJ alone, then sk_live_ alone"]
    fixed, findings = sink.check(parts, [], True)
    assert fixed == parts and findings == []


@pytest.mark.req("REQ-SEC-012")
def test_the_matcher_is_kept_while_the_secrets_stay_the_same() -> None:
    first = sink.matcher(KNOWN, True)
    assert sink.matcher(list(KNOWN), True) is first
    assert sink.matcher(KNOWN, False) is not first
    assert sink.matcher([], False).starts(b"anything") == []
    assert sink.matcher([("k", "12345678")], False).starts(b"a 12345678 b 12345678") == [2, 13]


@pytest.mark.req("REQ-SEC-012")
def test_forms_of_a_value() -> None:
    assert sink.forms('a"b\\c\n') == {'a"b\\c\n', 'a"b\\\\c\\n', 'a\\"b\\\\c\\n'}
    assert sink.forms('é"secret') == {'é"secret', '\\xc3\\xa9"secret', '\\u00e9\\"secret', 'é\\"secret'}
    assert "\\xed\\xb3\\xbf-secret" in sink.forms("\udcff-secret")  # a variable's undecodable byte


@pytest.mark.req("REQ-SEC-012")
def test_lone_surrogates_in_a_text_or_a_secret_are_searched_not_an_error() -> None:
    known = [("the value of ODD_TOKEN", "\udcffodd-token-1")]  # os.environ keeps an undecodable byte so
    fixed, findings = sink.check([f"\ud800 a \udcffodd-token-1 and {KEY}"], [*KNOWN, *known], True)
    assert fixed == ["\ud800 a [REDACTED: the value of ODD_TOKEN] and [REDACTED: the value of OPENAI_API_KEY]"]
    assert len(findings) == 2


@pytest.mark.req("REQ-SEC-012")
def test_a_secret_at_the_very_start_of_a_message_after_a_clean_one_is_found() -> None:
    """The hit's offset is placed in its message exactly (the first byte after the previous message's end)."""
    for first in ("", "c", "clean", "é"):
        messages = [{"content": first}, {"content": KEY + " tail"}, {"content": "clean too"}]
        fixed, findings = sink.check(["", messages, ""], KNOWN, False)
        assert fixed[1][1] == {"content": f"[REDACTED: {KNOWN[0][0]}] tail"}, first
        assert fixed[1][0] is messages[0] and fixed[1][2] is messages[2]
        assert findings == [sink.Finding(KNOWN[0][0], 1)]
    fixed, _ = sink.check([f"system {KEY}", [{"content": "x"}], KEY], KNOWN, False)
    assert fixed == [f"system [REDACTED: {KNOWN[0][0]}]", [{"content": "x"}], f"[REDACTED: {KNOWN[0][0]}]"]


@pytest.mark.req("REQ-SEC-012")
def test_a_message_with_a_trigger_and_no_secret_does_not_stop_the_next_ones() -> None:
    messages = [{"content": "eyJ alone"}, {"content": f"key {KEY}"}, {"content": "AKIA alone"}, {"content": KEY}]
    fixed, findings = sink.check([messages], KNOWN, True)
    assert KEY not in everything(fixed) and findings == [sink.Finding(KNOWN[0][0], 2)]
    assert fixed[0][0] is messages[0] and fixed[0][2] is messages[2]


@pytest.mark.req("REQ-SEC-012")
def test_a_secret_only_in_an_object_key_is_found() -> None:
    messages = [{"role": "assistant", "content": [{"type": "tool_use", "input": {KEY: "value"}}]}]
    fixed, findings = sink.check([messages], KNOWN, False)
    assert fixed[0][0]["content"][0]["input"] == {f"[REDACTED: {KNOWN[0][0]}]": "value"}
    assert findings == [sink.Finding(KNOWN[0][0], 1)]


@pytest.mark.req("REQ-SEC-012")
def test_a_mapping_that_is_not_a_dict_is_searched_too() -> None:
    from types import MappingProxyType

    block = MappingProxyType({"type": "text", "text": f"k {KEY}"})
    fixed, findings = sink.check([[{"content": [block]}]], KNOWN, False)
    assert fixed[0][0]["content"][0] == {"type": "text", "text": f"k [REDACTED: {KNOWN[0][0]}]"}
    assert findings == [sink.Finding(KNOWN[0][0], 1)]


@pytest.mark.req("REQ-SEC-012")
def test_within_a_message_only_what_changed_is_rebuilt_and_images_stay_as_they_are() -> None:
    image = {"type": "image", "source": {"type": "base64", "data": "AKIAIOSFODNN7EXAMPLE"}}
    clean = {"type": "text", "text": "clean"}
    listed = ["a", "b"]
    message = {"role": "user", "content": [image, clean, {"type": "text", "text": f"AKIAIOSFODNN7EXAMPLE {KEY}"},
                                           {"type": "tool_result", "content": listed}]}
    fixed, findings = sink.check([[message]], KNOWN, True)
    content = fixed[0][0]["content"]
    assert content[0] is image and image["source"]["data"] == "AKIAIOSFODNN7EXAMPLE"
    assert content[1] is clean and content[3] is message["content"][3] and content[3]["content"] is listed
    assert content[2]["text"] == f"[REDACTED: an AWS access key id] [REDACTED: {KNOWN[0][0]}]"
    assert [f.label for f in findings] == [KNOWN[0][0], "an AWS access key id"]  # the known secrets first


@pytest.mark.req("REQ-SEC-012")
def test_a_tuple_comes_back_as_a_list_when_changed_and_as_itself_when_not() -> None:
    clean = ("a", "b")
    assert sink.rebuild(clean, lambda t: t) is clean
    assert sink.rebuild(("a", KEY), lambda t: t.replace(KEY, "x")) == ["a", "x"]
    assert sink.rebuild(7, lambda t: t) == 7


@pytest.mark.req("REQ-SEC-012")
def test_a_secret_after_many_short_messages_is_placed_in_its_own() -> None:
    """An error of a byte or two per message in placing a hit adds up over many short ones."""
    messages: list[Any] = [{"c": ""} for _ in range(12)] + [{"c": KEY}] + [{"c": ""} for _ in range(12)]
    fixed, findings = sink.check([messages], KNOWN, False)
    assert fixed[0][12] == {"c": f"[REDACTED: {KNOWN[0][0]}]"} and findings == [sink.Finding(KNOWN[0][0], 1)]
