"""The converter both ways: a model written to the wire reads back as itself; bad values refused."""

from __future__ import annotations

from typing import Any

import cattrs
import pytest

from presa_trio.wire.convert import from_wire, to_wire
from presa_trio.wire.models import (
    BlobResourceContents,
    CallToolResult,
    Completion,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    LogMessage,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)
from presa_trio.wire.tasks import StreamedTaskEvent

MODELS: list[Any] = [
    CallToolResult(
        [
            TextContent("hi", meta={"k": 1}),
            ImageContent("AA==", "image/png"),
            EmbeddedResource(BlobResourceContents("a://b", "AA==", "image/png")),
            EmbeddedResource(TextResourceContents("a://c", "text")),
            ResourceLink("a://d", "d", mime_type="text/plain"),
        ],
        structured_content={"x": [1, 2]},
        is_error=True,
    ),
    Tool("t", "A tool.", {"type": "object"}, output_schema={"type": "object"}),
    Prompt("p", "A prompt.", arguments=[PromptArgument("text", required=True)]),
    GetPromptResult([PromptMessage("assistant", TextContent("ok"))], description="d"),
    Completion(["a"], total=1, has_more=False),
    LogMessage("info", {"any": ["json"]}, "presa"),
    StreamedTaskEvent(3, "t-1", "com.example.step", {"n": 3}, {"k": "v"}),
]


@pytest.mark.parametrize("model", MODELS, ids=lambda model: type(model).__name__)
def test_a_model_written_to_the_wire_reads_back_as_itself(model: Any) -> None:
    """presa-defined: ``from_wire`` is ``to_wire``'s inverse, unions told apart by
    ``type`` and by the key only one member has (``text``/``blob``)."""
    assert from_wire(to_wire(model), type(model)) == model


@pytest.mark.parametrize(
    "result",
    [
        {"content": [{"type": "text", "text": 1}]},
        {"content": [{"type": "video", "data": "AA=="}]},
        {"content": [{"type": "text"}]},
        {"content": [], "isError": "no"},
    ],
    ids=["a number for text", "an unknown block type", "text missing", "a string for a bool"],
)
def test_a_value_of_the_wrong_json_type_is_refused_not_coerced(result: dict[str, Any]) -> None:
    """presa-defined (wire/convert.py): cattrs would turn ``1`` into ``"1"``; a client
    checking a server must see the server's mistake."""
    with pytest.raises(cattrs.BaseValidationError):
        from_wire(result, CallToolResult)
