"""Near-valid input through the real ASGI app: every answer is one the spec allows.

Each example runs the demo server in-process (tasks in memory, or in SQLite),
sends a few generated requests (:mod:`tests.fuzz_inputs`), task follow-ups
on the tasks it got, and then asserts what must hold whatever was sent: each
answer is a result or a spec'd error with its code's status
(:func:`~tests.fuzz_inputs.check_answer`); nothing was logged as an incident
but the failure of a tool that fails on purpose; every task it created is
still there, with one id each, and a task cancelled with an acknowledgement
is terminal; the server still serves.

The examples are derandomized, so a run is repeatable; set
``PRESA_FUZZ_EXAMPLES`` (default 60) for a longer search.
"""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from presa_trio.demo import build_app
from presa_trio.tasks.stores.sqlite.store import open_sqlite_store
from presa_trio.testing import TASKS_CAPABILITIES, McpClient, Response, running
from tests.expect import assert_still_serving, result_of
from tests.fuzz_inputs import (
    NESTED_400,
    check_answer,
    headers_of,
    near_valid_messages,
    raw_bodies,
    read_sent,
    unexpected_incidents,
)

LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
TERMINAL = {"completed", "failed", "cancelled"}
FUZZ = settings(
    max_examples=int(os.environ.get("PRESA_FUZZ_EXAMPLES", "60")),
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@asynccontextmanager
async def served(store: str, directory: Path) -> AsyncIterator[McpClient]:
    """The demo server in-process, its tasks in memory or in a new SQLite file."""
    if store == "memory":
        async with running(build_app()) as client:
            yield client
        return
    url = f"sqlite:///{directory / 'tasks.db'}"
    async with open_sqlite_store(url) as opened, running(build_app(store=opened)) as client:
        yield client


def messages_of(response: Response) -> list[dict[str, Any]]:
    """The JSON-RPC messages of a response; none in a plain HTTP answer."""
    if not response.body or not response.headers.get("content-type", "").startswith(
        ("application/json", "text/event-stream")
    ):
        return []
    return response.messages()


async def send(
    client: McpClient, message: dict[str, Any], body: bytes | None = None
) -> tuple[Response, list[dict[str, Any]]]:
    """Post ``message`` (or ``body``, with ``message``'s headers); an opened listen
    stream is read to its first message, then closed."""
    headers = headers_of(client, message)
    with trio.fail_after(3):
        async with client.stream(message if body is None else body, headers) as opened:
            if opened.response.is_event_stream and message.get("method") == LISTEN:
                acknowledged = await opened.next_message()
                assert acknowledged["method"] == ACKNOWLEDGED, acknowledged
                return opened.response, []
            response = await opened.read_to_end()
    return response, messages_of(response)


@pytest.mark.parametrize("store", ["memory", "sqlite"])
@FUZZ
@given(data=st.data())
async def test_near_valid_requests_get_the_specs_answers(
    store: str,
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    data: st.DataObject,
) -> None:
    """Spec-mandated (basic/index §Error Codes; streamable-http §Sending Messages,
    §Protocol Version Header; SEP-2663 §Task Polling), property: near-valid requests
    and task follow-ups get a result or their error's code and status, no incident
    but a tool's own failure, and tasks stay as answered."""
    caplog.clear()
    created: dict[str, str | None] = {}
    cancelled: set[str] = set()
    async with served(store, tmp_path_factory.mktemp("fuzz")) as client:
        with caplog.at_level(logging.ERROR):
            for _ in range(data.draw(st.integers(1, 6), label="count")):
                message = data.draw(near_valid_messages(list(created)), label="message")
                response, messages = await send(client, message)
                if response.is_event_stream and not messages:
                    continue  # a listen stream, opened and acknowledged
                final = (
                    check_answer(
                        response.status, response.headers.get("content-type"), messages, message
                    )
                    or {}
                )
                result = final.get("result", {})
                if result.get("resultType") == "task":
                    assert result["taskId"] not in created, "a task id was issued twice"
                    created[result["taskId"]] = None
                if message.get("method") == "tasks/cancel" and "result" in final:
                    cancelled.add(message["params"]["taskId"])
            for task_id in created:
                reply = await client.call(
                    "tasks/get", {"taskId": task_id}, capabilities=TASKS_CAPABILITIES
                )
                task = result_of(reply)
                assert task["taskId"] == task_id
                if task_id in cancelled:
                    assert task["status"] in TERMINAL, task
            await assert_still_serving(client)
        assert unexpected_incidents(caplog.records) == []


@FUZZ
@given(data=st.data())
async def test_bodies_parsers_differ_on_get_the_specs_answers(
    caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    """Spec-mandated (basic/transports §Messages; basic/index §Error Codes), property:
    a body cut short, with repeated keys, another encoding, deep nesting or numbers
    past a double is answered -32700, -32600 or as the message it holds, never an
    incident."""
    caplog.clear()
    message = data.draw(near_valid_messages([]), label="message")
    body = data.draw(raw_bodies(message), label="body")
    with caplog.at_level(logging.ERROR):
        async with running(build_app()) as client:
            response, messages = await send(client, message, body)
            if not (response.is_event_stream and not messages):
                check_answer(
                    response.status, response.headers.get("content-type"), messages, read_sent(body)
                )
            await assert_still_serving(client)
    assert unexpected_incidents(caplog.records) == []


HEADER_VALUES = st.one_of(
    st.text(st.characters(max_codepoint=255), max_size=30),
    st.sampled_from(
        ["=?base64?Z3JlZXQ=?=", "=?base64?!!!?=", "=?base64??=", "=?BASE64?Z3JlZXQ=?=", " greet "]
    ),
)


@FUZZ
@given(data=st.data())
async def test_mangled_headers_get_the_specs_answers(
    caplog: pytest.LogCaptureFixture, data: st.DataObject
) -> None:
    """Spec-mandated (streamable-http §Standard Request Headers, §Server Validation,
    §Value Encoding; spec-notes §4, §11), property: a correct request whose headers
    are changed, repeated or dropped is answered as the spec allows, never an incident."""
    caplog.clear()
    message = data.draw(near_valid_messages([]), label="message")
    async with running(build_app()) as client:
        pairs = list(headers_of(client, message).items())
        names = ["mcp-method", "mcp-name", "mcp-protocol-version", "mcp-param-region", "accept"]
        names += ["content-type", "host", "origin", "content-encoding", "content-length"]
        for _ in range(data.draw(st.integers(1, 3), label="changes")):
            name = data.draw(st.sampled_from(names), label="name")
            action = data.draw(st.sampled_from(["set", "add", "drop"]), label="action")
            if action != "add":
                pairs = [(key, value) for key, value in pairs if key != name]
            if action != "drop":
                pairs.append((name, data.draw(HEADER_VALUES, label="value")))
        with caplog.at_level(logging.ERROR):
            with trio.fail_after(20):
                async with client.stream(message, pairs) as opened:
                    if opened.response.is_event_stream and message.get("method") == LISTEN:
                        response, messages = opened.response, None
                    else:
                        response = await opened.read_to_end()
                        messages = messages_of(response)
            if messages is not None:
                check_answer(
                    response.status, response.headers.get("content-type"), messages, message
                )
            await assert_still_serving(client)
    assert unexpected_incidents(caplog.records) == []


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_task_whose_arguments_nest_deeply_is_created(
    store: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (a versioned storage format holding the whole task), found by the
    fuzzer above: arguments nested 400 levels deep, which the body's parser admits,
    make a task on every store, never a -32603 from storing them."""
    arguments = {"nested": NESTED_400}
    async with served(store, tmp_path) as client:
        with caplog.at_level(logging.ERROR):
            reply = await client.call(
                "tools/call",
                {"name": "multi_input", "arguments": arguments},
                capabilities=TASKS_CAPABILITIES,
            )
        assert result_of(reply)["resultType"] == "task"
        assert unexpected_incidents(caplog.records) == []
        await assert_still_serving(client)
