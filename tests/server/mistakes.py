"""Servers with one registration mistake each, as module sources, and the line that names it.

Each source follows :data:`HEADER` (a server with the Tasks extension) and
makes one mistake on one decorator. tests/server/test_registration_mistakes.py
runs each in-process; tests/test_cli.py serves each with ``presa-trio serve``.
"""

from __future__ import annotations

HEADER = """\
from __future__ import annotations

from typing import Annotated, Any, Literal

from presa_trio.server import Field, RequestContext, Server
from presa_trio.tasks import Policy, TasksExtension

server = Server("mistakes", "1.0.0")
tasks = server.add_extension(TasksExtension())
"""

#: The registration error's text starts with this when the first parameter is not ``ctx``.
NO_CONTEXT = "the first parameter receives the request context, not"
UNCALLED = "the decorator was used without calling it (did you forget to call it?)"
TWICE = "already registered; each name is registered once"
SYNC = "the handler must be an async function (async def)"


def tool_mistakes(decorator: str, uncalled: str, named: str) -> dict[str, tuple[str, str]]:
    """The mistakes a tool decorator refuses; ``uncalled`` is it without its parentheses,
    ``named`` it naming the tool ``add one``."""
    return {
        "no context": (
            f'{decorator}\nasync def add(x: int) -> int:\n    """Adds one."""\n    return x + 1\n',
            f"tool 'add', parameter 'x': {NO_CONTEXT} int",
        ),
        "uncalled": (
            f'{uncalled}\nasync def add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            f"tool 'add': {UNCALLED}",
        ),
        "twice": (
            '@server.tool(name="add")\nasync def first(ctx: RequestContext) -> int:\n'
            '    """One."""\n    return 1\n\n\n'
            f'{decorator}\nasync def add(ctx: RequestContext) -> int:\n    """Two."""\n'
            "    return 2\n",
            f"tool 'add': {TWICE}",
        ),
        "sync": (
            f'{decorator}\ndef add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            f"tool 'add': {SYNC}",
        ),
        "default outside its type": (
            f'{decorator}\nasync def add(ctx: RequestContext, x: int = "three") -> int:\n'
            '    """Adds one."""\n    return x + 1\n',
            "tool 'add', parameter 'x': the default 'three' does not fit its type",
        ),
        "return type without schema": (
            f"{decorator}\nasync def add(ctx: RequestContext, x: int) -> str | set[int]:\n"
            '    """Adds one."""\n    return str(x + 1)\n',
            "tool 'add', return type: no JSON Schema for set[int]",
        ),
        "name outside the tool name rules": (
            f'{named}\nasync def add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            "tool 'add one': a tool name is 1 to 128 of the characters A-Z a-z 0-9 _ - .",
        ),
        "constraint no number meets": (
            f"{decorator}\nasync def add(ctx: RequestContext, "
            "x: Annotated[int, Field(ge=10, le=1)]) -> int:\n"
            '    """Adds one."""\n    return x + 1\n',
            "tool 'add', parameter 'x': no number meets Field(ge=10, le=1), so every call "
            "would fail; the lower bound (ge, gt) goes below the upper (le, lt)",
        ),
        "constraint no integer meets": (
            f"{decorator}\nasync def add(ctx: RequestContext, x: Annotated[int, Field(gt=1, lt=2)])"
            ' -> int:\n    """Adds one."""\n    return x + 1\n',
            "tool 'add', parameter 'x': no integer meets Field(gt=1, lt=2)",
        ),
        "lengths no string meets": (
            f"{decorator}\nasync def add(ctx: RequestContext, "
            "x: Annotated[str, Field(min_length=5, max_length=2)]) -> str:\n"
            '    """Adds one."""\n    return x\n',
            "tool 'add', parameter 'x': no string meets Field(min_length=5, max_length=2), so "
            "every call would fail; min_length goes at or below max_length",
        ),
        "items no number meets": (
            f"{decorator}\nasync def add(ctx: RequestContext, "
            "xs: list[Annotated[int, Field(ge=5, le=1)]]) -> int:\n"
            '    """Adds one."""\n    return sum(xs) + 1\n',
            "tool 'add', parameter 'xs': no number meets Field(ge=5, le=1)",
        ),
        "tuple resized": (
            f"{decorator}\nasync def add(ctx: RequestContext, "
            "x: Annotated[tuple[int, int], Field(min_items=3)]) -> int:\n"
            '    """Adds one."""\n    return x[0] + 1\n',
            "tool 'add', parameter 'x': a tuple of 2 items holds exactly 2, and "
            "Field(min_items=3) would change that; drop it, or use tuple[T, ...]",
        ),
        "Literal values the constraints exclude": (
            f"{decorator}\nasync def add(ctx: RequestContext, "
            "x: Annotated[Literal[1, 2], Field(ge=5)]) -> int:\n"
            '    """Adds one."""\n    return x + 1\n',
            "tool 'add', parameter 'x': none of the values [1, 2] meets the Field constraints "
            "beside them, so every call would fail",
        ),
        "Field as the default": (
            f"{decorator}\nasync def add(ctx: RequestContext, x: int = Field(ge=0)) -> int:\n"
            '    """Adds one."""\n    return x + 1\n',
            "tool 'add', parameter 'x': a Field is the default here, and presa reads it from "
            "the hint: write Annotated[T, Field(...)], then = the default if there is one",
        ),
        "return type constraint that would not hold": (
            f"{decorator}\nasync def add(ctx: RequestContext, x: int) "
            "-> Annotated[int, Field(ge=0)]:\n"
            '    """Adds one."""\n    return x + 1\n',
            "tool 'add', return type: Field constraints hold through an outputSchema, and this "
            "return type gives none, so they would not hold",
        ),
        "plain def wrapping an async def on a thread": (
            "import functools\n\n\ndef logged(function: Any) -> Any:\n"
            "    @functools.wraps(function)\n    def wrapper(*args: Any, **kwargs: Any) -> Any:\n"
            "        return function(*args, **kwargs)\n\n    return wrapper\n\n\n"
            + with_option(decorator, "thread=True")
            + '\n@logged\nasync def add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            "tool 'add': the handler is a plain def wrapping an async def (a decorator's "
            "wrapper), and would return a coroutine unawaited; make the wrapper async def "
            "and await the call",
        ),
        "output schema the return type never meets": (
            with_option(decorator, "output_schema={'type': 'object'}") + "\n"
            'async def add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            "tool 'add': -> int returns a JSON number, and output_schema= admits only object, "
            "so every call would fail; make the two agree",
        ),
        "output schema of a tool returning text": (
            with_option(decorator, "output_schema={'type': 'object'}") + "\n"
            'async def add(ctx: RequestContext, x: int) -> str:\n    """Adds one."""\n'
            "    return str(x + 1)\n",
            "tool 'add': output_schema= asks every result for structuredContent, and -> str "
            "returns content (text, blocks or nothing), never structuredContent",
        ),
        "input schema bounds no number meets": (
            with_option(
                decorator,
                "input_schema={'type': 'object', 'properties': "
                "{'x': {'type': 'integer', 'minimum': 5, 'maximum': 1}}}",
            )
            + "\nasync def add(ctx: RequestContext, arguments: dict[str, Any]) -> int:\n"
            '    """Adds one."""\n    return int(arguments["x"]) + 1\n',
            "tool 'add', input_schema at /properties/x: no number meets "
            '{"minimum": 5, "maximum": 1}; the lower bound (minimum, exclusiveMinimum) goes '
            "below the upper (maximum, exclusiveMaximum)",
        ),
        "input schema lengths no string meets, nested": (
            with_option(
                decorator,
                "input_schema={'type': 'object', 'properties': {'a/b': {'type': 'array', "
                "'items': {'type': 'string', 'minLength': 5, 'maxLength': 2}}}}",
            )
            + "\nasync def add(ctx: RequestContext, arguments: dict[str, Any]) -> int:\n"
            '    """Adds one."""\n    return 1\n',
            "tool 'add', input_schema at /properties/a~1b/items: no string meets "
            '{"minLength": 5, "maxLength": 2}; minLength goes at or below maxLength',
        ),
        "output schema items no array meets": (
            with_option(decorator, "output_schema={'type': 'array', 'minItems': 3, 'maxItems': 1}")
            + "\nasync def add(ctx: RequestContext, x: int) -> list[int]:\n"
            '    """Adds one."""\n    return [x + 1]\n',
            'tool \'add\', output_schema: no array meets {"minItems": 3, "maxItems": 1}',
        ),
        "annotations the schema refuses": (
            with_option(decorator, "annotations={'readOnlyHint': 'yes'}") + "\n"
            'async def add(ctx: RequestContext, x: int) -> int:\n    """Adds one."""\n'
            "    return x + 1\n",
            "tool 'add': annotations['readOnlyHint'] is 'yes', not a bool (schema.ts "
            "ToolAnnotations)",
        ),
    }


def with_option(decorator: str, option: str) -> str:
    """``@server.tool()`` with ``option`` passed: ``@server.tool(option)``."""
    opened = decorator[:-1]
    return f"{opened}{'' if opened.endswith('(') else ', '}{option})"


RESOURCE = '@server.resource("note://today")'
TEMPLATE = '@server.resource_template("note://{day}", name="note")'
PROMPT = "@server.prompt()"
COMPLETION = '@server.completion("ref/prompt", "haiku")'

#: Every mistake, by decorator and kind: the module's source after the header,
#: and how the one line naming it starts.
MISTAKES: dict[str, tuple[str, str]] = {
    **{
        f"server.tool {k}": v
        for k, v in tool_mistakes(
            "@server.tool()", "@server.tool", '@server.tool("add one")'
        ).items()
    },
    **{
        f"tasks.tool {k}": v
        for k, v in tool_mistakes(
            "@tasks.tool(Policy.OPTIONAL)", "@tasks.tool", '@tasks.tool(Policy.OPTIONAL, "add one")'
        ).items()
    },
    "tasks.tool policy that is no Policy": (
        '@tasks.tool("optional")\nasync def add(ctx: RequestContext, x: int) -> int:\n'
        '    """Adds one."""\n    return x + 1\n',
        "tool 'add': the policy is 'optional'; give Policy.SYNC, Policy.OPTIONAL",
    ),
    "server.resource no context": (
        f'{RESOURCE}\nasync def today(day: str) -> str:\n    return "rain"\n',
        f"resource 'note://today', parameter 'day': {NO_CONTEXT} str",
    ),
    "server.resource uncalled": (
        '@server.resource\nasync def today(ctx: RequestContext) -> str:\n    return "rain"\n',
        f"resource 'today': {UNCALLED}",
    ),
    "server.resource twice": (
        f'{RESOURCE}\nasync def today(ctx: RequestContext) -> str:\n    return "rain"\n\n\n'
        f'{RESOURCE}\nasync def again(ctx: RequestContext) -> str:\n    return "sun"\n',
        f"resource 'note://today': {TWICE}",
    ),
    "server.resource sync": (
        f'{RESOURCE}\ndef today(ctx: RequestContext) -> str:\n    return "rain"\n',
        f"resource 'note://today': {SYNC}",
    ),
    "server.resource uri without a scheme": (
        '@server.resource("today")\nasync def today(ctx: RequestContext) -> str:\n'
        '    return "rain"\n',
        "resource 'today': a resource's uri is a URI, starting with its scheme",
    ),
    "server.resource template as a resource": (
        '@server.resource("note://{day}")\nasync def today(ctx: RequestContext) -> str:\n'
        '    return "rain"\n',
        "resource 'note://{day}': braces make it a URI template, not a URI; register it with "
        "@server.resource_template(uri_template, name=…)",
    ),
    "server.resource empty name": (
        '@server.resource("note://today", name="")\n'
        'async def today(ctx: RequestContext) -> str:\n    return "rain"\n',
        "resource 'note://today': name= is ''; give a name, or leave name= out",
    ),
    "server.resource_template empty name": (
        '@server.resource_template("note://{day}", name="")\n'
        "async def note(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "rain"\n',
        "resource template 'note://{day}': name= is ''; give a name, or leave name= out",
    ),
    "server.prompt empty name": (
        '@server.prompt(name="")\nasync def haiku(ctx: RequestContext, topic: str) -> str:\n'
        '    """A haiku."""\n    return topic\n',
        "a prompt: name= is ''; give a name, or leave name= out for the handler's",
    ),
    "server.prompt arguments named twice": (
        "from presa_trio.wire.models import PromptArgument\n\n\n"
        '@server.prompt(description="A haiku.", arguments=[PromptArgument("topic"), '
        'PromptArgument("topic")])\n'
        "async def haiku(ctx: RequestContext, arguments: dict[str, str]) -> str:\n"
        '    return arguments["topic"]\n',
        "prompt 'haiku': arguments= names 'topic' twice",
    ),
    "server.resource other parameters": (
        f"{RESOURCE}\nasync def today(ctx: RequestContext, day: str) -> str:\n    return day\n",
        "resource 'note://today': the handler is called as (ctx); take exactly those",
    ),
    "server.resource_template no context": (
        f"{TEMPLATE}\nasync def note(variables: dict[str, str]) -> str:\n"
        '    return variables["day"]\n',
        f"resource template 'note://{{day}}', parameter 'variables': {NO_CONTEXT} dict",
    ),
    "server.resource_template twice": (
        f"{TEMPLATE}\nasync def note(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "rain"\n\n\n'
        f"{TEMPLATE}\nasync def again(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "sun"\n',
        f"resource template 'note://{{day}}': {TWICE}",
    ),
    "server.resource_template sync": (
        f"{TEMPLATE}\ndef note(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "rain"\n',
        f"resource template 'note://{{day}}': {SYNC}",
    ),
    "server.resource_template unmatched expression": (
        '@server.resource_template("note://{+path}", name="note")\n'
        "async def note(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "rain"\n',
        "resource template 'note://{+path}': '{+path}' is not an expression presa matches",
    ),
    "server.resource return type that is no answer": (
        f"{RESOURCE}\nasync def today(ctx: RequestContext) -> dict[str, str]:\n"
        '    return {"weather": "rain"}\n',
        "resource 'note://today', return type: dict[str, str] is never an answer; return str, "
        "bytes, a list of TextResourceContents and BlobResourceContents, or InputRequired",
    ),
    "server.resource_template matching what an earlier one matches": (
        f"{TEMPLATE}\nasync def note(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "rain"\n\n\n'
        '@server.resource_template("note://{id}", name="by id")\n'
        "async def by_id(ctx: RequestContext, variables: dict[str, str]) -> str:\n"
        '    return "sun"\n',
        "resource template 'note://{id}': matches the same URIs as 'note://{day}', registered "
        "first, which reads them all; it would never be read",
    ),
    "server.resource_template one variable for all": (
        f"{TEMPLATE}\nasync def note(ctx: RequestContext, day: str) -> str:\n    return day\n",
        "resource template 'note://{day}', parameter 'day': the handler gets every variable "
        "in one dict; take (ctx, variables: dict[str, str])",
    ),
    "server.resource_template unhinted variable": (
        f"{TEMPLATE}\nasync def note(ctx: RequestContext, day) -> str:\n    return str(day)\n",
        "resource template 'note://{day}', parameter 'day': the handler gets every variable",
    ),
    "server.prompt no context": (
        f'{PROMPT}\nasync def haiku(topic: str) -> str:\n    """A haiku."""\n    return topic\n',
        f"prompt 'haiku', parameter 'topic': {NO_CONTEXT} str",
    ),
    "server.prompt uncalled": (
        "@server.prompt\nasync def haiku(ctx: RequestContext, topic: str) -> str:\n"
        '    """A haiku."""\n    return topic\n',
        f"prompt 'haiku': {UNCALLED}",
    ),
    "server.prompt twice": (
        f'{PROMPT}\nasync def haiku(ctx: RequestContext) -> str:\n    """One."""\n'
        '    return "a"\n\n\n'
        '@server.prompt("haiku")\nasync def again(ctx: RequestContext) -> str:\n'
        '    """Two."""\n    return "b"\n',
        f"prompt 'haiku': {TWICE}",
    ),
    "server.prompt sync": (
        f'{PROMPT}\ndef haiku(ctx: RequestContext, topic: str) -> str:\n    """A haiku."""\n'
        "    return topic\n",
        f"prompt 'haiku': {SYNC}",
    ),
    "server.prompt default outside its type": (
        f"{PROMPT}\nasync def haiku(ctx: RequestContext, lines: str = 3) -> str:\n"
        '    """A haiku."""\n    return lines\n',
        "prompt 'haiku', parameter 'lines': the default 3 is not a string",
    ),
    "server.prompt return type that is no answer": (
        f"{PROMPT}\nasync def haiku(ctx: RequestContext, topic: str) -> dict[str, str]:\n"
        '    """A haiku."""\n    return {"text": topic}\n',
        "prompt 'haiku', return type: dict[str, str] is never an answer; return str, a list "
        "of PromptMessage, a GetPromptResult, or InputRequired",
    ),
    "server.completion no context": (
        f"{COMPLETION}\nasync def topics(argument: str, v: str, k: Any, more: Any) -> Any:\n"
        "    return None\n",
        f"completion of ref/prompt 'haiku', parameter 'argument': {NO_CONTEXT} str",
    ),
    "server.completion twice": (
        f"{COMPLETION}\nasync def topics(ctx: RequestContext, a: str, v: str, k: Any) -> Any:\n"
        "    return None\n\n\n"
        f"{COMPLETION}\nasync def again(ctx: RequestContext, a: str, v: str, k: Any) -> Any:\n"
        "    return None\n",
        f"completion of ref/prompt 'haiku': {TWICE}",
    ),
    "server.completion sync": (
        f"{COMPLETION}\ndef topics(ctx: RequestContext, a: str, v: str, k: Any) -> Any:\n"
        "    return None\n",
        f"completion of ref/prompt 'haiku': {SYNC}",
    ),
    "server.completion return type that is no answer": (
        f"{COMPLETION}\nasync def topics(ctx: RequestContext, a: str, v: str, k: Any)"
        " -> list[str]:\n    return [v]\n",
        "completion of ref/prompt 'haiku', return type: list[str] is never an answer; "
        "return a Completion",
    ),
}
