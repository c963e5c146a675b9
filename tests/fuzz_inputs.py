"""Near-valid JSON-RPC input for presa, and the oracle every answer must meet.

Strategies build requests that are almost right: a correct request of a
method presa serves, with one or a few of its values replaced by any JSON
value (at any depth, ``_meta`` included), a key dropped or added, an id of
any JSON type. The oracle, :func:`check_answer`, says what the spec allows
for whatever was sent: a result, or a JSON-RPC error whose code has the
status of basic/index §Error Codes and streamable-http (spec-notes §1, §31
for -32603), echoing the id when one could be read; :func:`unexpected_incidents`, what
the log may hold. Shared by the in-process fuzzer (tests/http/test_fuzz.py),
the one over real sockets (tests/e2e/test_fuzz_sockets.py) and the one of
concurrent task requests (tests/tasks/test_interleavings.py).
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping
from typing import Any

from hypothesis import strategies as st

from presa_trio.testing import DEFAULT_CAPABILITIES, TASKS_CAPABILITIES, McpClient, meta
from presa_trio.wire.errors import (
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)

#: Each code's HTTP status (basic/index §Error Codes, streamable-http §Protocol
#: Version Header; -32603: spec-notes §1, and §31 for the retryable limits).
STATUSES: dict[int, set[int]] = {
    PARSE_ERROR: {400},
    INVALID_REQUEST: {400},
    METHOD_NOT_FOUND: {404},
    INVALID_PARAMS: {400},
    INTERNAL_ERROR: {500, 429, 503},
    HEADER_MISMATCH: {400},
    MISSING_REQUIRED_CLIENT_CAPABILITY: {400},
    UNSUPPORTED_PROTOCOL_VERSION: {400},
}


def deep(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` alternating arrays and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"a": value}
    return value


#: Values nested deeper than most code expects, and no deeper than a body's parser admits.
NESTED_50 = deep(50)
NESTED_400 = deep(400)

#: Numbers at the edges of what JSON, doubles and 64-bit integers hold, and integers
#: past a double's range (which the body's parser admits and no float holds).
EDGE_NUMBERS = st.sampled_from(
    [
        *(0, -0.0, 1, -1, 0.5, 1e308, -1e308, 5e-324),
        *(2**53 + 1, 2**63, 2**64, -(2**63) - 1, 10**30, 10**400, -(10**400)),
    ]
)
#: Strings a parser or a header may trip on.
EDGE_STRINGS = st.sampled_from(
    [
        "",
        " ",
        "\x00",
        "\ud800",
        "\udfff",
        "\ufeff",
        "\u2028",
        "é",
        "😀",
        "a\r\nb",
        "../..",
        "=?base64?",
        "=?base64?!!!?=",
        "2026-07-28",
        "x" * 5000,
        "tools/call",
        "io.modelcontextprotocol/tasks",
    ]
)
SCALARS = st.one_of(
    st.sampled_from([NESTED_50, NESTED_400]),
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    EDGE_NUMBERS,
    st.text(max_size=20),
    EDGE_STRINGS,
)
#: Any JSON value, shallow or a little nested.
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
#: Ids of every JSON type, valid ones (strings, integers) more often.
IDS = st.one_of(st.integers(), st.text(max_size=10), EDGE_STRINGS, EDGE_NUMBERS, JSON_VALUES)

TOOLS = [
    "greet",
    "slow_compute",
    "fan_out",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
    "test_simple_text",
    "test_error_handling",
    "test_tool_with_progress",
    "test_missing_capability",
    "test_logging_tool",
    "test_x_mcp_header",
    "json_schema_2020_12_tool",
    "test_input_required_result_elicitation",
    "test_input_required_result_request_state",
    "test_input_required_result_multi_round",
]
#: Tools whose own failure is a -32603 (a worker's incident in the log is then expected).
FAILING_TOOLS = {"protocol_error_job"}


def tool_arguments(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments close to what ``name``'s schema asks for."""
    if name == "slow_compute":
        return st.fixed_dictionaries(
            {}, optional={"seconds": st.sampled_from([0, 0.01, -1, "1"]), "label": JSON_VALUES}
        )
    if name == "fan_out":
        return st.fixed_dictionaries(
            {}, optional={"parts": st.sampled_from([1, 2, 0, 101, 2.5]), "seconds": st.just(0)}
        )
    if name == "test_x_mcp_header":
        return st.fixed_dictionaries({"region": st.one_of(EDGE_STRINGS, JSON_VALUES)})
    return st.one_of(
        st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=2),
        st.just({"nested": NESTED_400}),
    )


def templates(task_ids: list[str]) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    """A correct (method, params) pair of a method presa serves, or one it does not."""
    task_id = st.sampled_from(task_ids) if task_ids else st.text(max_size=40)
    answers = st.dictionaries(
        st.sampled_from(["confirm-delete", "first-input", "second-input", "user_name", "x"]),
        st.one_of(
            st.just({"action": "accept", "content": {"confirm": True, "name": "A"}}),
            st.just({"action": "decline"}),
            JSON_VALUES,
        ),
        max_size=3,
    )
    tool_call = st.sampled_from(TOOLS).flatmap(
        lambda name: st.fixed_dictionaries(
            {"name": st.just(name), "arguments": tool_arguments(name)},
            optional={"inputResponses": answers, "requestState": st.text(max_size=30)},
        )
    )
    return st.one_of(
        st.tuples(
            st.sampled_from(
                [
                    "server/discover",
                    "tools/list",
                    "prompts/list",
                    "resources/list",
                    "resources/templates/list",
                    "initialize",
                    "ping",
                    "tasks/list",
                    "tasks/result",
                ]
            ),
            st.fixed_dictionaries({}, optional={"cursor": JSON_VALUES}),
        ),
        st.tuples(st.just("tools/call"), tool_call),
        st.tuples(
            st.just("prompts/get"),
            st.fixed_dictionaries(
                {
                    "name": st.sampled_from(
                        ["test_simple_prompt", "test_prompt_with_arguments", "nope"]
                    ),
                    "arguments": st.dictionaries(
                        st.sampled_from(["arg1", "arg2", "x"]), JSON_VALUES, max_size=2
                    ),
                }
            ),
        ),
        st.tuples(
            st.just("resources/read"),
            st.fixed_dictionaries(
                {
                    "uri": st.one_of(
                        st.sampled_from(
                            ["test://static-text", "test://static-binary", "test://template/7/data"]
                        ),
                        st.text(max_size=30).map(lambda s: "test://template/" + s + "/data"),
                        EDGE_STRINGS,
                    )
                }
            ),
        ),
        st.tuples(
            st.just("completion/complete"),
            st.fixed_dictionaries(
                {
                    "ref": st.sampled_from(
                        [
                            {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                            {"type": "ref/resource", "uri": "test://template/{id}/data"},
                            {"type": "ref/other"},
                        ]
                    ),
                    "argument": st.fixed_dictionaries(
                        {"name": st.sampled_from(["arg1", "id", "x"]), "value": st.text(max_size=5)}
                    ),
                },
                optional={"context": st.just({"arguments": {"arg1": "a"}})},
            ),
        ),
        st.tuples(
            st.sampled_from(["tasks/get", "tasks/cancel"]),
            st.fixed_dictionaries({"taskId": task_id}),
        ),
        st.tuples(
            st.just("subscriptions/listen"),
            st.fixed_dictionaries(
                {
                    "notifications": st.fixed_dictionaries(
                        {},
                        optional={
                            "toolsListChanged": st.booleans(),
                            "resourceSubscriptions": st.lists(
                                st.sampled_from(["test://static-text", "x"]), max_size=2
                            ),
                            "taskIds": st.lists(task_id, max_size=3),
                        },
                    )
                }
            ),
        ),
        st.tuples(
            st.just("tasks/update"),
            st.fixed_dictionaries({"taskId": task_id, "inputResponses": answers}),
        ),
    )


Path = tuple[str | int, ...]


def paths(value: Any, prefix: Path = ()) -> list[Path]:
    """Every path into ``value``'s objects and arrays, itself included."""
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, (*prefix, index))
    return found


def replaced(value: Any, path: Path, new: Any) -> Any:
    """``value`` with the item at ``path`` replaced by ``new`` (a copy)."""
    if not path:
        return new
    head, *rest = path
    copy: Any = dict(value) if isinstance(value, dict) else list(value)
    copy[head] = replaced(copy[head], tuple(rest), new)
    return copy


def removed(value: Any, path: Path) -> Any:
    """``value`` without the object member at ``path`` (unchanged where it is no member)."""
    *parent, last = path
    holder = value
    for step in parent:
        holder = holder[step]
    if not isinstance(holder, dict):
        return value
    copy = json.loads(json.dumps(value))
    target = copy
    for step in parent:
        target = target[step]
    del target[last]
    return copy


@st.composite
def near_valid_messages(draw: st.DrawFn, task_ids: list[str]) -> dict[str, Any]:
    """A correct request (Tasks declared half the time), then up to three mutations."""
    method, params = draw(templates(task_ids))
    capabilities = draw(st.sampled_from([DEFAULT_CAPABILITIES, TASKS_CAPABILITIES]))
    extra_meta = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "progressToken": st.one_of(st.integers(), st.text(max_size=5), JSON_VALUES),
                "io.modelcontextprotocol/logLevel": st.sampled_from(
                    ["debug", "error", "emergency", "DEBUG", None, 3]
                ),
                "io.modelcontextprotocol/clientInfo": st.one_of(
                    st.just({"name": "fuzz", "version": "1"}), JSON_VALUES
                ),
                "io.modelcontextprotocol/protocolVersion": st.sampled_from(
                    ["2026-07-28", "2025-11-25", "", "2026-07-28 "]
                ),
                "traceparent": st.text(max_size=10),
            },
        )
    )
    message: Any = {
        "jsonrpc": "2.0",
        "id": draw(IDS) if draw(st.booleans()) else draw(st.integers(0, 2**31)),
        "method": method,
        "params": {**params, "_meta": {**meta(capabilities), **extra_meta}},
    }
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(paths(message)))
        action = draw(st.sampled_from(["replace", "remove", "add"]))
        if action == "replace":
            message = replaced(message, path, draw(JSON_VALUES))
        elif action == "remove" and path:
            message = removed(message, path)
        else:
            holder = message
            for step in path:
                holder = holder[step]
            if isinstance(holder, dict):
                message = replaced(
                    message, path, {**holder, draw(st.text(max_size=8)): draw(JSON_VALUES)}
                )
    if not isinstance(message, dict):
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": message}
    return message


def headers_of(client: McpClient, message: dict[str, Any]) -> dict[str, str]:
    """A correct client's headers; without ``Mcp-Name`` where the body has no params
    object or the value has no header form (a lone surrogate cannot be encoded, not
    even as base64 of its UTF-8), and without a header that is not latin-1 (a method
    name outside it)."""
    try:
        sent = client.headers_for(message)
    except (UnicodeEncodeError, AttributeError):
        sent = client.headers_for({**message, "params": {}})
    return {name: value for name, value in sent.items() if is_latin_1(value)}


def is_latin_1(value: str) -> bool:
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def echoed_id(message: Any) -> Any:
    """The id a response must carry: the request's when it is a string or an integer."""
    if isinstance(message, dict):
        candidate = message.get("id")
        if isinstance(candidate, str) or (
            isinstance(candidate, int) and not isinstance(candidate, bool)
        ):
            return candidate
    return None


def check_answer(
    status: int, content_type: str | None, messages: list[dict[str, Any]], sent: Any
) -> dict[str, Any] | None:
    """Assert the answer to ``sent`` is one the spec allows; return its final message.

    ``messages`` are the JSON-RPC messages of the body (an SSE stream's, or
    the one of a JSON body). A plain HTTP answer (no JSON-RPC) is allowed only
    for a notification (202, empty) or a refusal before the body is read.
    """
    if not messages:
        assert status in (202, 400, 403, 404, 405, 406, 408, 413, 415, 421), status
        return None
    final = messages[-1]
    for notification in messages[:-1]:
        assert "id" not in notification, messages
        assert isinstance(notification.get("method"), str), messages
    code = check_final(final, sent)
    if code is None:
        assert status == 200, (status, final)
        return final
    assert status in STATUSES[code], (status, final)
    assert content_type in ("application/json", "text/event-stream"), content_type
    return final


def check_final(final: dict[str, Any], sent: Any) -> int | None:
    """Assert ``final`` is an answer to ``sent`` the spec allows, on any transport;
    return its error's code (None for a result)."""
    assert final.get("jsonrpc") == "2.0", final
    if "result" in final:
        assert "error" not in final
        assert final["id"] == echoed_id(sent), (sent, final)
        assert final["id"] is not None, (sent, final)
        assert isinstance(final["result"], dict)
        return None
    error = final["error"]
    code = error["code"]
    assert code in STATUSES, final
    assert isinstance(error["message"], str)
    assert "Traceback" not in json.dumps(final), final
    expected_id = echoed_id(sent)
    if isinstance(sent, Mapping) and ("result" in sent or "error" in sent):
        expected_id = final.get("id")  # a response's id names no request of the client's
    if expected_id is None:  # an id that could not be read: no id at all (spec-notes §52)
        assert "id" not in final, (sent, final)
    elif final.get("id") != expected_id or type(final["id"]) is not type(expected_id):
        raise AssertionError((sent, final))
    if code == INTERNAL_ERROR:  # a fault with its incident, or a limit (spec-notes §31)
        data = error.get("data", {})
        assert set(data) == {"incident"} or "retryable" in data, final
    assert isinstance(code, int)
    return code


def read_sent(body: bytes) -> Any:
    """What ``body`` holds as a reference parser reads it; None where it is no JSON:
    ``NaN`` and ``Infinity`` (RFC 8259 §6), and a number past a double's range,
    which the server refuses too (RFC 8259 §9: a parser may limit the range it
    accepts)."""
    try:
        return json.loads(body.decode("utf-8-sig"), parse_constant=refuse, parse_float=finite)
    except (ValueError, RecursionError):
        return None


def refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON (RFC 8259 §6)")


def finite(number: str) -> float:
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number} is past a double's range")
    return value


def raw_bodies(message: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """``message`` written as bytes JSON parsers differ on: cut short, repeated keys,
    another encoding, a byte order mark, nested deeply, numbers past a double's range."""
    text = json.dumps(message)
    data = text.encode("utf-8", "surrogatepass")
    return st.one_of(
        st.integers(0, max(0, len(data) - 1)).map(lambda cut: data[:cut]),
        st.just(text.replace('"jsonrpc"', '"id": [], "jsonrpc"', 1).encode("utf-8", "replace")),
        st.just(text.replace("{", '{"id": 7, ', 1).encode("utf-8", "replace")),
        st.just(text.encode("utf-16", "surrogatepass")),
        st.just(b"\xef\xbb\xbf" + data),
        st.just(data + b"\x00"),
        st.just(data + b" " + data),
        st.just(b"[" + data + b"]"),
        st.sampled_from([b"1e400", b"-1e400", b"123456789" * 600, b"-0", b"1.0e-400"]).map(
            lambda number: data.replace(b'"jsonrpc"', b'"x": ' + number + b', "jsonrpc"', 1)
        ),
        st.integers(100, 3000).map(
            lambda depth: data.replace(
                b'"jsonrpc"',
                b'"x": ' + b'[{"a":' * depth + b"1" + b"}]" * depth + b', "jsonrpc"',
                1,
            )
        ),
        st.binary(max_size=40),
    )


def unexpected_incidents(records: list[logging.LogRecord]) -> list[str]:
    """Error records that no tool's own failure explains."""
    formatter = logging.Formatter()
    found = []
    for record in records:
        text = record.getMessage()
        if record.exc_info:
            text += formatter.formatException(record.exc_info)
        if record.levelno >= logging.ERROR and not any(tool in text for tool in FAILING_TOOLS):
            found.append(text)
    return found
