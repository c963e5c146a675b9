#!/usr/bin/env python3
"""The conformance runner's client under test: ``presa-trio`` commands, chosen by scenario.

The runner's ``client`` subcommand starts a scenario's own server, runs this
file with that server's URL as the last argument, the scenario's name in
``MCP_CONFORMANCE_SCENARIO`` and, for some, a JSON object in
``MCP_CONFORMANCE_CONTEXT`` (the tool calls to make, client credentials);
then it scores what the client sent. Each scenario here is what a person
would type: the same ``presa-trio`` commands, run in this process one after
the other, so the runner judges the command-line client itself.

The ``auth/*`` scenarios sign in on the first 401, as a person would, with
the system browser replaced: ``$BROWSER`` names this file with
``--follow``, which requests the authorization URL and follows its
redirects back to the client's loopback listener, the way a browser whose
user has already consented would. A pre-registered client comes from the
context; the client ID metadata document URL is the one the scenarios
expect. The ``auth/client-credentials-*`` scenarios sign in as that client
itself (``--client-credentials``), with its secret or, for
``private_key_jwt``, its private key, which the context gives as PEM and
this file writes to the scenario's configuration directory for
``--client-key``.

Exit status: 0 when every command ended as the scenario expects, else 1.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import trio

if not __package__:
    # Run as a file, so only conformance/ is on the path: add the checkout.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from presa_trio.cli.main import main as presa_trio
from presa_trio.client.connection import Connection
from presa_trio.client.tokens import CONFIG_ENV
from presa_trio.client.tool_headers import usable_tools
from presa_trio.client.transport import HttpTransport
from presa_trio.wire.models import JSONObject

#: One ``presa-trio`` command line, without the program's name.
Command = list[str]
#: The answer the multi round-trip scenario's ``confirm`` elicitation gets.
CONFIRM = json.dumps({"action": "accept", "content": {"confirmed": True}})
#: A value of each type a required argument may need, for calling a tool as listed.
SAMPLE_VALUES: dict[str, Any] = {"string": "conformance", "integer": 1, "boolean": True}
#: The client ID metadata document URL the auth scenarios know.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
FOLLOW = "--follow"
#: The scenarios of the client credentials extension (SEP-1046).
CLIENT_CREDENTIALS = "auth/client-credentials-"


def run(command: Command) -> int:
    """One ``presa-trio`` command, in this process; its exit status."""
    print(f"$ presa-trio {' '.join(command)}", file=sys.stderr, flush=True)
    try:
        presa_trio(command)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 1
    return 0


def tools_call(url: str, context: JSONObject) -> list[Command]:
    return [["call", url, "add_numbers", "a=5", "b=3"]]


def request_metadata(url: str, context: JSONObject) -> list[Command]:
    """The first request is refused as an unsupported version; the client asks again."""
    return [["list", url, "tools"]]


def request_state(url: str, context: JSONObject) -> list[Command]:
    """SEP-2322: ``requestState`` echoed unchanged, and only to the request it came with."""
    answer = ["--answer", f"confirm={CONFIRM}"]
    return [
        ["call", url, "test_mrtr_echo_state", *answer],
        ["call", url, "test_mrtr_no_state", *answer],
        ["call", url, "test_mrtr_unrelated"],
        ["call", url, "test_mrtr_no_result_type"],
    ]


def standard_headers(url: str, context: JSONObject) -> list[Command]:
    """``Mcp-Method`` on every request, ``Mcp-Name`` on calls, reads and prompts."""
    return [
        ["call", url, "test_headers"],
        ["call", url, "my-hyphenated-tool"],
        ["list", url, "resources"],
        ["read", url, "file:///path/to/file%20name.txt"],
        ["read", url, "https://example.com/resource?id=123"],
        ["list", url, "prompts"],
        ["prompt", url, "test_prompt"],
    ]


def custom_headers(url: str, context: JSONObject) -> list[Command]:
    """The calls the scenario names in its context, each argument mirrored as it says.

    A null argument is left out: ``presa-trio call`` checks the arguments
    against the tool's schema before sending, and the schema types the one
    null the scenario gives as a boolean. For the header rule under test,
    null and not provided are the same case (no ``Mcp-Param-*`` header).
    """
    calls = context.get("toolCalls")
    commands = []
    for call in calls if isinstance(calls, list) else []:
        given = call.get("arguments") if isinstance(call, dict) else None
        sent = {k: v for k, v in given.items() if v is not None} if isinstance(given, dict) else {}
        commands.append(["call", url, str(call["name"]), "--args", json.dumps(sent)])
    return commands


def listed_tools(url: str, context: JSONObject) -> list[Command]:
    """Call every tool the client keeps from ``tools/list``: the invalid ones are left out."""
    return [
        ["call", url, str(tool["name"]), "--args", json.dumps(sample_arguments(tool))]
        for tool in trio.run(usable_tools_of, url)
    ]


async def usable_tools_of(url: str) -> list[JSONObject]:
    async with httpx.AsyncClient() as http:
        connection = Connection(HttpTransport(url, http))
        tools = await connection.list_all("tools/list", "tools")
    return usable_tools(tools, lambda line: print(line, file=sys.stderr))


def sample_arguments(tool: JSONObject) -> JSONObject:
    """A value for each required argument of ``tool``, of the type its schema gives."""
    schema = tool.get("inputSchema")
    schema = schema if isinstance(schema, dict) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    return {
        key: SAMPLE_VALUES.get(properties.get(key, {}).get("type"), "conformance")
        for key in (required if isinstance(required, list) else [])
    }


def schema_echo(url: str, context: JSONObject) -> list[Command]:
    """SEP-1613: a tool's schema, as listed, sent back whole through the echo tool."""
    tools = {tool.get("name"): tool for tool in trio.run(usable_tools_of, url)}
    schema = tools.get("json_schema_2020_12_tool", {}).get("inputSchema")
    return [["call", url, "json_schema_echo", "--args", json.dumps({"schema": schema})]]


def list_tools(url: str, context: JSONObject) -> list[Command]:
    return [["list", url, "tools"]]


def signed_in(url: str, context: JSONObject) -> list[Command]:
    """Two commands to a server that asks for authorization: the first signs in, the
    second uses the kept token (and signs in again when the server asks for
    more scope, or has moved to another authorization server). Each scenario
    gets a configuration directory of its own, so no token is kept from one
    to the next.
    """
    signin = ["--client-metadata-url", CLIENT_METADATA_URL]
    if isinstance(context.get("client_id"), str):
        signin += ["--client-id", context["client_id"]]
    if isinstance(context.get("client_secret"), str):
        signin += ["--client-secret", context["client_secret"]]
    if isinstance(context.get("private_key_pem"), str):
        key = Path(os.environ[CONFIG_ENV]) / "client-key.pem"
        key.touch(mode=0o600)
        key.write_text(context["private_key_pem"])
        signin += ["--client-key", str(key)]
    if SCENARIO.startswith(CLIENT_CREDENTIALS):
        signin.append("--client-credentials")
    tools = ["list", url, "tools", *signin]
    again = ["call", url, "test-tool", *signin] if "step-up" in SCENARIO else tools
    return [tools, again]


def follow(url: str) -> int:
    """The stand-in browser: request ``url`` and follow its redirects to the end."""
    with httpx.Client(follow_redirects=True, timeout=30) as browser:
        return 0 if browser.get(url).status_code < 400 else 1


SCENARIOS: dict[str, Callable[[str, JSONObject], list[Command]]] = {
    "tools_call": tools_call,
    "request-metadata": request_metadata,
    "sep-2322-client-request-state": request_state,
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": listed_tools,
    "json-schema-ref-no-deref": list_tools,
    "json-schema-2020-12-preservation": schema_echo,
}


SCENARIO = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the commands of ``$MCP_CONFORMANCE_SCENARIO`` against the URL last in ``argv``."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == [FOLLOW] and len(arguments) == 2:
        return follow(arguments[1])
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    commands = SCENARIOS.get(SCENARIO)
    if commands is None and SCENARIO.startswith("auth/"):
        commands = signed_in
    if not arguments or commands is None:
        print(f"conformance client: no commands for scenario {SCENARIO!r}", file=sys.stderr)
        return 1
    os.environ["BROWSER"] = f"{sys.executable} {Path(__file__).resolve()} {FOLLOW} %s"
    with tempfile.TemporaryDirectory(prefix="presa-conformance-client-") as config:
        os.environ[CONFIG_ENV] = config
        statuses = [run(command) for command in commands(arguments[-1], context)]
    return 0 if statuses and all(status == 0 for status in statuses) else 1


if __name__ == "__main__":
    sys.exit(main())
