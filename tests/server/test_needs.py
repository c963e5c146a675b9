"""Client capabilities a tool declares it needs: refused up front, never at the question."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from presa_trio.server import RequestContext, Server
from presa_trio.tasks import TASKS_EXTENSION, Policy, TaskRunner, TasksExtension, ask
from presa_trio.testing import McpClient, connect
from presa_trio.wire.errors import MISSING_REQUIRED_CLIENT_CAPABILITY
from presa_trio.wire.mrtr import Elicitation, Sampling
from tests.expect import error_of

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
steps: list[str] = []


def build() -> Server:
    server = Server("needs", "1.0.0")
    tasks = TasksExtension(TaskRunner(ttl_ms=60_000))
    server.add_extension(tasks)

    @tasks.tool(Policy.OPTIONAL, needs=["elicitation", "sampling"])
    async def careful(ctx: RequestContext) -> str:
        """Works, then asks before finishing."""
        steps.append("step 1")
        answers = await ask(ctx, {"ok": Elicitation("Finish?", CONFIRM)})
        steps.append("step 2")
        fact = await ask(ctx, {"fact": Sampling("A fact?", max_tokens=10)})
        return f"{answers.elicitation('ok').action} {fact.sampling('fact').text}"

    return server


@pytest.fixture
async def client() -> AsyncIterator[McpClient]:
    steps.clear()
    async with connect(build()) as opened:
        yield opened


@pytest.mark.parametrize(
    ("capabilities", "missing"),
    [
        ({}, "elicitation"),
        ({"sampling": {}}, "elicitation"),
        ({"elicitation": {"url": {}}}, "elicitation"),
        ({"elicitation": {}}, "sampling"),
    ],
    ids=["none", "no-elicitation", "url-mode-only", "no-sampling"],
)
@pytest.mark.parametrize("as_task", [False, True], ids=["plain", "task"])
async def test_a_call_lacking_a_needed_capability_is_refused_before_any_step(
    client: McpClient, capabilities: dict[str, Any], missing: str, as_task: bool
) -> None:
    """Spec-mandated (basic/patterns/mrtr §Server Requirements; E-25): -32021 naming
    the missing capability, before the tool runs a step and before any task is
    created."""
    declared = {**capabilities, "extensions": {TASKS_EXTENSION: {}}} if as_task else capabilities
    params = {"name": "careful", "arguments": {}}
    response = await client.call("tools/call", params, capabilities=declared)
    error = error_of(response, 400, MISSING_REQUIRED_CLIENT_CAPABILITY)
    assert error["data"] == {"requiredCapabilities": {missing: {}}}
    assert steps == []


async def test_a_call_with_every_needed_capability_runs(client: McpClient) -> None:
    """Spec-mandated (E-25): the check passes a request that declares them all."""
    first = await client.call_tool("careful", capabilities={"elicitation": {}, "sampling": {}})
    assert first["resultType"] == "input_required"
    assert steps == ["step 1"]


@pytest.mark.parametrize(
    ("needs", "says"),
    [
        ("elicitation", "needs= is a list of client capabilities, such as needs=['elicitation']"),
        (["elicit"], "needs=['elicit'] is not a client capability presa asks for"),
    ],
)
def test_needs_that_name_no_capability_are_refused_in_one_line(needs: Any, says: str) -> None:
    """presa-defined (docs/api.md: ``needs=`` with an unknown capability is a
    ``ValueError``): a bare string is refused as itself, not read as its letters."""
    server = Server("needs", "1.0.0")

    async def careful(ctx: RequestContext) -> str:
        """Asks."""
        return "ok"

    with pytest.raises(ValueError, match=re.escape(f"tool 'careful': {says}")):
        server.tool(needs=needs)(careful)
    assert server.tools == {}
