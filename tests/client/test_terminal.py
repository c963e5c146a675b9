"""Questions asked of a person at a terminal (stdin on a pseudo-terminal): an
elicitation field by field, with types, defaults and a retry on a bad value,
and a sampling request whose reply is typed in (client/elicitation §Form Mode,
client/sampling)."""

from __future__ import annotations

from tests.client.helpers import on_terminal
from tests.e2e.serve_process import ServeProcess


async def test_an_elicitation_field_by_field(presa: ServeProcess) -> None:
    shown = await on_terminal(
        ["call", presa.url, "test_input_required_result_request_state"], ["accept", "maybe", "y"]
    )
    assert "[confirm] The server asks: Please confirm\n" in shown
    assert "  ok (boolean) *\n  > maybe\n  expected boolean, got 'maybe'\n  > y\n" in shown
    assert shown.endswith("state-ok: round 1 confirmed=True\n")


async def test_a_decline(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_elicitation"], ["d"])
    assert shown.endswith("The user chose to decline.\n")


async def test_a_sampling_reply_typed_in(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_sampling"], ["Paris"])
    assert "  user: What is the capital of France?\n" in shown
    assert shown.endswith("Your reply, as the model: Paris\nThe model answered: Paris\n")


async def test_ctrl_c_at_a_question_of_a_plain_call(presa: ServeProcess) -> None:
    shown = await on_terminal(["call", presa.url, "test_input_required_result_elicitation"], [])
    assert shown.endswith("accept, decline or cancel? [a/d/c] ^C\n")
