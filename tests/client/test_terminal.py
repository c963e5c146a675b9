"""Questions asked of a person at a terminal (stdin on a pseudo-terminal): an
elicitation field by field, with types, defaults and a retry on a bad value,
and a sampling request whose reply is typed in (client/elicitation §Form Mode,
client/sampling)."""

from __future__ import annotations

import sys

from tests.client.helpers import MISBEHAVING, on_terminal
from tests.e2e.serve_process import ServeProcess, serving

REVIEW = "send, edit, decline or cancel? [s/e/d/c] "


async def test_an_elicitation_field_by_field(presa: ServeProcess) -> None:
    shown = await on_terminal(
        ["call", presa.url, "test_input_required_result_request_state"],
        ["accept", "maybe", "y", "s"],
    )
    assert "[confirm] The server asks: Please confirm\n" in shown
    assert "  ok (boolean) *\n  > maybe\n  expected boolean, got 'maybe'\n  > y\n" in shown
    assert f'  the answer: {{"ok": true}}\n{REVIEW}s\n' in shown
    assert shown.endswith("state-ok: round 1 confirmed=True\n")


async def test_the_form_is_reviewed_and_may_be_edited_before_it_is_sent(
    presa: ServeProcess,
) -> None:
    """Spec-mandated (client/elicitation §User Interaction Model: for form mode,
    clients MUST allow users to review and modify their responses before sending):
    the filled form is shown; edit asks each field again, showing what it holds."""
    shown = await on_terminal(
        ["call", presa.url, "test_input_required_result_request_state"],
        ["a", "n", "e", "y", "s"],
    )
    assert f'  the answer: {{"ok": false}}\n{REVIEW}e\n  ok (boolean; now false) *\n' in shown
    assert f'  the answer: {{"ok": true}}\n{REVIEW}s\n' in shown
    assert shown.endswith("state-ok: round 1 confirmed=True\n")


async def test_a_decline(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_elicitation"], ["d"])
    assert shown.endswith("The user chose to decline.\n")


async def test_a_decline_once_the_form_is_filled(presa: ServeProcess) -> None:
    """Spec-mandated (client/elicitation §User Interaction Model: clear decline and
    cancel options): the filled form can still be declined instead of sent."""
    shown = await on_terminal(
        ["call", presa.url, "test_input_required_result_elicitation"], ["a", "Al", "d"]
    )
    assert f'  the answer: {{"name": "Al"}}\n{REVIEW}d\n' in shown
    assert shown.endswith("The user chose to decline.\n")


async def test_a_sampling_reply_typed_in(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_sampling"], ["Paris"])
    assert "  user: What is the capital of France?\n" in shown
    assert shown.endswith("Your reply, as the model: Paris\nThe model answered: Paris\n")


async def test_ctrl_c_at_a_question_of_a_plain_call(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_elicitation"], [])
    assert shown.endswith("accept, decline or cancel? [a/d/c] ^C\n")


async def test_choices_are_shown_with_their_titles_and_several_are_typed_with_commas() -> None:
    """Spec-mandated (client/elicitation §Requested Schema: single- and multi-select
    enums, with titles as the options' display labels; clients use the schema to
    generate appropriate input forms): each field shows its choices, titled ones by
    title, and a multiple choice reads ``a, b`` as the list of both."""
    async with serving([sys.executable, MISBEHAVING, "choices"]) as served:
        shown = await on_terminal(
            ["call", served.url, "t", "--no-listen"], ["a", "#00f", "green, grey", "#0f0", "s"]
        )
    assert "  main (string; one of #f00 (Red), #00f (Blue))\n" in shown
    assert "  more (array; any of green, grey)\n" in shown
    assert "  titled (array; any of #0f0 (Green))\n" in shown
    assert '  the answer: {"main": "#00f", "more": ["green", "grey"], "titled": ["#0f0"]}' in shown
