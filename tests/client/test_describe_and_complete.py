"""``list``, ``describe``, ``prompt`` and ``complete`` against a user's typed presa server.

The server (:mod:`tests.client.typed_server`) is served by ``presa-trio
serve`` in a process of its own; what the client sent is read back from its
``--transcript``, as a proxy would see it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.client.helpers import client
from tests.e2e.serve_process import ServeProcess


def sent_bodies(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line)["request"]["body"] for line in path.read_text().splitlines()]


async def test_list_shows_typed_signatures_with_defaults(typed: ServeProcess) -> None:
    """presa-defined (docs/client.md): each tool by its parameters' JSON types and
    defaults; each prompt by its arguments, the optional ones marked."""
    tools = await client("list", typed.url)
    assert tools.status == 0, tools.stderr
    assert tools.stdout.splitlines() == [
        "greet(name: string, times: integer = 1)  Greets someone by name.",
        "chatty()  Logs at debug, info and error, then answers.",
        "touch(uri: string)  Says a resource was updated, then that the tools changed.",
    ]
    prompts = await client("list", typed.url, "prompts")
    assert prompts.stdout == "review(language, framework?)  Asks for a review of some code.\n"


async def test_describe_shows_the_signature_annotations_and_schemas(typed: ServeProcess) -> None:
    """presa-defined (docs/client.md): ``describe TOOL``; ``--json`` is the tool object."""
    described = await client("describe", typed.url, "greet")
    assert described.status == 0, described.stderr
    signature, description, facts, schema = described.stdout.split("\n\n")
    assert signature == "greet(name: string, times: integer = 1)"
    assert description == "Greets someone by name."
    assert facts == "title: Greeter\nannotations: readOnlyHint: true, openWorldHint: false"
    assert json.loads(schema.removeprefix("input schema:\n"))["required"] == ["name"]
    as_json = json.loads((await client("describe", typed.url, "greet", "--json")).stdout)
    assert as_json["annotations"] == {"readOnlyHint": True, "openWorldHint": False}
    unknown = await client("describe", typed.url, "great")
    assert unknown.status == 2
    assert unknown.error() == f"{typed.url} has no tool 'great' (its tools: greet, chatty, touch)"


async def test_prompt_takes_args_as_json_or_pairs_and_checks_them_first(
    typed: ServeProcess, tmp_path: Path
) -> None:
    """presa-defined: ``--args`` and ``KEY=VALUE`` as ``call`` takes them; an unknown
    prompt or a missing argument is exit 2, like an unknown tool, and nothing but
    ``prompts/list`` is sent for it. Spec-mandated (server/prompts §Getting a Prompt):
    the arguments go as strings."""
    record = tmp_path / "wire.jsonl"
    both = await client(
        "prompt",
        typed.url,
        "review",
        "framework:=7",
        "--args",
        '{"language": "perl"}',
        "--transcript",
        str(record),
    )
    assert both.status == 0, both.stderr
    assert both.stdout == "user: Review this perl code (7).\n"
    assert sent_bodies(record)[-1]["params"]["arguments"] == {"language": "perl", "framework": "7"}
    record.unlink()
    unknown = await client("prompt", typed.url, "reveiw", "--transcript", str(record))
    assert unknown.status == 2
    assert unknown.error() == f"{typed.url} has no prompt 'reveiw' (its prompts: review)"
    missing = await client("prompt", typed.url, "review", "--transcript", str(record))
    assert missing.status == 2
    assert "the arguments of review: not allowed by the schema" in missing.error()
    assert [body["method"] for body in sent_bodies(record)] == ["prompts/list"] * 2


async def test_complete_a_prompt_argument_with_the_arguments_chosen(typed: ServeProcess) -> None:
    """Spec-mandated (server/utilities/completion §Requesting Completions): ``ref/prompt``,
    the argument and its value, the chosen ones in ``context.arguments``; the count
    the server did not send is said on stderr."""
    started = await client("complete", typed.url, "prompt", "review", "language=p")
    assert started.status == 0, started.stderr
    assert started.stdout == "python\npytorch\n"
    assert "2 of 4 suggestions" in started.stderr
    framed = await client(
        "complete", typed.url, "prompt", "review", "framework=f", "language=python", "--json"
    )
    assert json.loads(framed.stdout)["completion"]["values"] == ["flask", "fastapi"]
    none = await client("complete", typed.url, "prompt", "review", "language=z")
    assert (none.status, none.stdout, none.stderr) == (0, "", "no suggestions\n")
    wrong = await client("complete", typed.url, "prompt", "review", "lang=p")
    assert wrong.status == 2
    assert wrong.error() == (
        "prompt 'review' has no argument 'lang' (its arguments: language, framework)"
    )
    no_template = await client("complete", typed.url, "template", "note://{day}", "day=m")
    assert no_template.status == 2
    assert (
        no_template.error() == f"{typed.url} has no template 'note://{{day}}' (its templates: none)"
    )
