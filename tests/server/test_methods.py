"""The method table: one row per method, and everything derived from the rows.

Dispatch, ``server/discover``, the HTTP edge's mirrored headers and the
multi round-trip rule read the same rows; these tests add a row, or change
what a server registers while it is served, and watch all of them agree.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import Any

import pytest

from presa_trio.http.app import McpApp
from presa_trio.server import Extension, Method, RequestContext, Server
from presa_trio.server.methods import CORE_METHODS
from presa_trio.tasks import TaskEventLog, TasksExtension
from presa_trio.testing import McpClient, headers_for, request, running
from presa_trio.wire.errors import HEADER_MISMATCH, METHOD_NOT_FOUND
from tests.expect import error_of, result_of

ECHO = "example.com/echo"


async def echo(server: Server, ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return {"said": params.get("text"), "by": params.get("speaker")}


def speaker_header(server: Server, params: dict[str, Any]) -> Mapping[str, tuple[str, ...]]:
    return {"Speaker": ("speaker",)}


class Echo(Extension):
    """An extension whose only contribution is one row of the method table."""

    id = ECHO

    def methods(self) -> Iterable[Method]:
        return [Method("echo/say", echo, name_param="text", param_headers=speaker_header)]


def echo_message(text: str = "hello", speaker: str = "ada") -> dict[str, Any]:
    return request("echo/say", {"text": text, "speaker": speaker})


@pytest.fixture
async def echo_client() -> AsyncIterator[McpClient]:
    server = Server("echo", "1.0.0")
    server.add_extension(Echo())
    async with running(McpApp.for_server(server)) as client:
        yield client


async def test_a_row_added_by_an_extension_is_dispatched_advertised_and_header_checked(
    echo_client: McpClient,
) -> None:
    """presa-defined (SEP-2133; streamable-http §Standard Request Headers): one
    ``Method`` row, and nothing else, makes the method callable, the extension
    advertised, and its ``Mcp-Name`` and ``Mcp-Param-Speaker`` rules enforced."""
    message = echo_message()
    # The client reads the same table: its default headers follow the row.
    headers = headers_for(message, echo_client.app.dispatcher.name_params)
    assert headers["mcp-name"] == "hello"
    said = result_of(await echo_client.post(message, {**headers, "mcp-param-speaker": "ada"}))
    assert (said["said"], said["by"]) == ("hello", "ada")

    discovered = result_of(await echo_client.call("server/discover"))
    assert ECHO in discovered["capabilities"]["extensions"]

    wrong_name = {**headers, "mcp-name": "goodbye", "mcp-param-speaker": "ada"}
    error_of(await echo_client.post(message, wrong_name), 400, HEADER_MISMATCH)
    wrong_param = {**headers, "mcp-param-speaker": "bob"}
    error_of(await echo_client.post(message, wrong_param), 400, HEADER_MISMATCH)
    error_of(await echo_client.post(message, headers), 400, HEADER_MISMATCH)


async def test_a_method_without_a_row_is_method_not_found(echo_client: McpClient) -> None:
    """Spec-mandated (JSON-RPC -32601; SEP-2575 §Deprecated and Removed RPCs):
    the removed ``ping`` has no row, whatever extensions add."""
    error_of(await echo_client.call("ping"), 404, METHOD_NOT_FOUND)


async def test_the_first_tool_registered_after_the_app_is_built_is_advertised_and_called() -> None:
    """Runner-scored (sep-2575-discover-capabilities-match-handlers): what a server
    advertises and what it dispatches agree at every moment, also when the first
    tool arrives while the server is served."""
    server = Server("late", "1.0.0")
    async with running(McpApp.for_server(server)) as client:
        before = result_of(await client.call("server/discover"))["capabilities"]
        assert "tools" not in before
        error_of(await client.call("tools/call", {"name": "late"}), 404, METHOD_NOT_FOUND)

        @server.tool(description="Registered while served.")
        async def late(ctx: RequestContext, arguments: dict[str, Any]) -> str:
            return "here"

        after = result_of(await client.call("server/discover"))["capabilities"]
        assert after["tools"] == {"listChanged": True}
        called = result_of(await client.call("tools/call", {"name": "late"}))
        assert called["content"] == [{"type": "text", "text": "here"}]

        del server.tools["late"]
        assert "tools" not in result_of(await client.call("server/discover"))["capabilities"]
        error_of(await client.call("tools/list"), 404, METHOD_NOT_FOUND)


def offering(kinds: set[str]) -> Server:
    """A server with one tool, prompt, resource or template for each of ``kinds``."""
    server = Server("some", "1.0.0")
    if "tool" in kinds:

        @server.tool(description="A tool.")
        async def a_tool(ctx: RequestContext, arguments: dict[str, Any]) -> str:
            return ""

    if "prompt" in kinds:

        @server.prompt(description="A prompt.")
        async def a_prompt(ctx: RequestContext, arguments: dict[str, str]) -> list[Any]:
            return []

    if "resource" in kinds:

        @server.resource("test://a", name="a")
        async def a_resource(ctx: RequestContext) -> str:
            return ""

    if "template" in kinds:

        @server.resource_template("test://t/{x}", name="t")
        async def a_template(ctx: RequestContext, variables: dict[str, str]) -> str:
            return ""

    return server


#: Each core method and the server capability it belongs to (server/tools, server/prompts,
#: server/resources, server/utilities/completion §Capabilities); discover and listen, none.
NEEDS: dict[str, str | None] = {
    "server/discover": None,
    "subscriptions/listen": None,
    "tools/list": "tools",
    "tools/call": "tools",
    "prompts/list": "prompts",
    "prompts/get": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resources",
    "resources/read": "resources",
    "completion/complete": "completions",
}
#: What each kind of registration makes the server offer.
OFFERS = {"tool": "tools", "prompt": "prompts", "resource": "resources", "template": "resources"}


@pytest.mark.parametrize(
    "kinds",
    [set(), {"tool"}, {"prompt"}, {"resource"}, {"template"}, {"tool", "prompt", "template"}],
    ids=lambda kinds: "+".join(sorted(kinds)) or "nothing",
)
async def test_every_core_method_is_served_exactly_while_its_capability_is_advertised(
    kinds: set[str],
) -> None:
    """Runner-scored (sep-2575-discover-capabilities-match-handlers): ``server/discover``
    advertises what the server offers, and each core method is -32601 exactly when
    its capability is left out."""
    async with running(McpApp.for_server(offering(kinds))) as client:
        advertised = result_of(await client.call("server/discover"))["capabilities"]
        offered = {OFFERS[kind] for kind in kinds}
        assert {c for c in ("tools", "prompts", "resources") if c in advertised} == offered
        assert {row.name for row in CORE_METHODS} == set(NEEDS)
        for method, capability in NEEDS.items():
            response = await client.call(method, {"name": "none", "uri": "test://none"})
            served = response.status != 404
            assert served == (capability is None or capability in advertised), method
            if not served:
                error_of(response, 404, METHOD_NOT_FOUND)


def test_a_row_of_an_unknown_capability_is_refused_when_the_app_is_built() -> None:
    """presa-defined: a row must belong to a capability ``server/discover`` can
    advertise, or to none; a typo is caught before anything is served."""

    class Typo(Extension):
        id = "example.com/typo"

        def methods(self) -> Iterable[Method]:
            return [Method("echo/say", echo, capability="tool")]

    server = Server("typo", "1.0.0")
    server.add_extension(Typo())
    with pytest.raises(ValueError, match="tool"):
        McpApp.for_server(server)


def test_an_extension_added_after_the_app_is_built_is_refused() -> None:
    """presa-defined: its rows could never join the built table, so it is refused
    rather than advertised in ``server/discover`` without its methods."""
    server = Server("late-extension", "1.0.0")
    McpApp.for_server(server)
    with pytest.raises(RuntimeError, match="before the server is served"):
        server.add_extension(Echo())
    assert server.extensions == []


def test_task_event_streams_enabled_after_the_app_is_built_are_refused() -> None:
    """presa-defined (docs/api.md, ``TasksExtension.enable_events``, before serving):
    ``tasks/stream`` could never join the built table, so ``server/discover`` must not
    advertise ``eventStreams``."""
    server = Server("late-events", "1.0.0")
    tasks = server.add_extension(TasksExtension())
    McpApp.for_server(server)
    with pytest.raises(RuntimeError, match="before the server is served"):
        tasks.enable_events(TaskEventLog())
    assert (tasks.events, tasks.settings) == (None, {})


@pytest.mark.parametrize(
    "identifier",
    [
        "",
        "tasks",
        "/tasks",
        "com.example.tasks",
        "com..example/tasks",
        "1com.example/tasks",
        "com.example-/tasks",
        "com.exa_mple/tasks",
        "com.example/-tasks",
        "com.example/tasks.",
        "com.example/ta sks",
        "com.example/tasks/v2",
        "com.exämple/tasks",
        "com.example/tasks\n",
    ],
)
def test_an_extension_whose_identifier_breaks_the_naming_rules_is_refused(
    identifier: str,
) -> None:
    """Spec-mandated (versioning §Extension Negotiation: extension identifiers MUST
    follow the ``_meta`` key naming rules, with a mandatory prefix; basic/index §_meta):
    an identifier ``server/discover`` could only advertise against the rules is refused
    when the extension is added, naming it, and nothing is added."""

    class Misnamed(Extension):
        id = identifier

    server = Server("misnamed", "1.0.0")
    with pytest.raises(ValueError, match="extension identifier"):
        server.add_extension(Misnamed())
    assert server.extensions == []


@pytest.mark.parametrize(
    "identifier", ["com.example/tasks", "a/b", "io.modelcontextprotocol/x-1_2.v3", "com.e-x9/"]
)
def test_an_extension_identifier_by_the_naming_rules_is_accepted(identifier: str) -> None:
    """Spec-mandated (basic/index §_meta: labels of letters, digits and hyphens starting
    with a letter; a name that, unless empty, begins and ends alphanumeric)."""

    class Named(Extension):
        id = identifier

    server = Server("named", "1.0.0")
    server.add_extension(Named())
    assert [extension.id for extension in server.extensions] == [identifier]


@pytest.mark.parametrize(
    "settings", [{"limit": float("nan")}, {"since": float("inf")}, {"kinds": {"a", "b"}}]
)
async def test_an_extension_whose_settings_json_cannot_carry_is_refused(
    settings: dict[str, Any],
) -> None:
    """Spec-mandated (server/discover: servers **MUST** implement it; versioning
    §Extension Negotiation: ``extensions`` maps each identifier to its settings): an
    extension whose settings hold NaN, Infinity or a set is refused when it is added,
    naming it, so every ``server/discover`` is still answered."""

    class Unwritable(Extension):
        id = "com.example/unwritable"

    Unwritable.settings = settings
    server = Server("unwritable", "1.0.0")
    with pytest.raises(ValueError, match=r"com\.example/unwritable"):
        server.add_extension(Unwritable())
    assert server.extensions == []
    async with running(McpApp.for_server(server)) as client:
        discovered = result_of(await client.call("server/discover"))
    assert "com.example/unwritable" not in discovered["capabilities"].get("extensions", {})


def test_a_second_extension_with_the_same_identifier_is_refused() -> None:
    """presa-defined (versioning §Extension Negotiation: ``extensions`` is a map of
    identifiers to settings): a second extension of one identifier could not be
    advertised beside the first, so it is refused rather than hidden."""
    server = Server("twice", "1.0.0")
    server.add_extension(Echo())
    with pytest.raises(ValueError, match=ECHO):
        server.add_extension(Echo())
    assert len(server.extensions) == 1
