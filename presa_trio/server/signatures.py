"""Tools written as typed functions: a JSON Schema from the signature, typed arguments.

A tool may take typed parameters after ``ctx`` instead of one arguments
object::

    @server.tool()
    async def greet(
        ctx: RequestContext, name: Annotated[str, "Whom to greet"], times: int = 1
    ) -> str:
        \"\"\"Greets someone by name.\"\"\"
        return " ".join([f"Hello, {name}!"] * times)

At registration, once, presa reads the hints and builds the tool's
``inputSchema`` (JSON Schema 2020-12): each parameter is a property, one
without a default is ``required``, a default is the property's ``default``
and must be valid against the property (:func:`checked_default`).
:func:`schema_for` says which hints map to what; any other hint is refused
there with a :class:`SignatureError` naming the tool and the parameter. The
description is the docstring. The declared return type may give an
``outputSchema`` (:func:`return_shape`).

Every kind of handler (tools, prompts, resources, templates, completions)
takes the request context first (:func:`check_context`) and is async, or
a plain ``def`` registered with ``thread=True`` (:func:`runner_for`).

On a call, the arguments are first checked against that schema (the tools
boundary, as for every tool), then structured with cattrs into the declared
types (an attrs class or a dataclass from its object, an ``Enum`` from its
value, a tuple from its array, a ``datetime`` from its string) and passed
by keyword; a missing optional one gets the signature's default. A value
the schema admits but its type refuses is answered like a schema
violation, naming the parameter (:class:`TypedCall`).

The form with one ``arguments`` object and a hand-written schema stays; its
schema's ``default`` values are filled in before the handler sees the
object (:class:`FillDefaults`).

One topic: what registration reads from a handler's signature, for every
kind of handler; typed tools and typed prompts share the context check, the
runner and the reading of hints.

Spec: 2026-07-28 server/tools §Tool (``inputSchema``, ``outputSchema``);
basic/index §JSON Schema Usage (2020-12 by default).
"""

from __future__ import annotations

import copy
import enum
import functools
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, get_args, get_origin

import attrs
import trio

from presa_trio.server import handler_shapes
from presa_trio.server.context import RequestContext
from presa_trio.wire import models
from presa_trio.wire.hints import (
    MAPPINGS,
    SEQUENCES,
    Field,
    SignatureError,
    arguments_converter,
    checked_default,
    describe_hint,
    is_structured,
    is_union,
    refuse_idle_constraints,
    schema_for,
    structuring_problems,
)
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import InputRequired

__all__ = ["SignatureError", "arguments_converter"]


@attrs.frozen
class Parameter:
    """One typed parameter of a tool: its name, its hint, its default's JSON if any.

    The default is kept as the JSON the schema shows, not as the object the
    signature holds: each call without the argument gets it structured
    afresh (:meth:`absent`), as if the client had sent it.
    """

    name: str
    hint: Any
    default: Any = inspect.Parameter.empty

    @property
    def optional(self) -> bool:
        return self.default is not inspect.Parameter.empty

    def absent(self) -> Any:
        """The JSON default, a copy for each call when it is a list or an object.

        A mutable default (``tags: list[str] = []``, a dataclass instance)
        is then never shared between calls, and an ``Enum`` or a ``float``
        default given by its value (``colour: Colour = "red"``, ``x: float
        = 1``) arrives as the declared type, as the same value sent would.
        """
        default = self.default
        return copy.deepcopy(default) if isinstance(default, list | dict) else default


@attrs.frozen
class TypedCall:
    """The handler of a typed tool, as the tools boundary calls every tool.

    It structures the checked arguments and returns the coroutine of the
    user's function itself: no frame of its own stays on the stack of a
    task parked on a question. An argument the schema admits but its type
    refuses (a string that is no date, a value an attrs validator rejects)
    never reaches the function: the call answers the ``isError`` result
    naming it, as for a schema violation (:func:`invalid_arguments`).
    """

    tool: str
    function: Callable[..., Any]
    parameters: tuple[Parameter, ...]

    def __call__(self, ctx: Any, arguments: Mapping[str, Any]) -> Any:
        values: dict[str, Any] = {}
        problems: list[str] = []
        for parameter in self.parameters:
            if parameter.name in arguments:
                value = arguments[parameter.name]
            elif parameter.optional:
                value = parameter.absent()
            else:
                continue
            try:
                values[parameter.name] = arguments_converter.structure(value, parameter.hint)
            except Exception as error:
                problems += structuring_problems(error, parameter.name)
        if problems:
            return answered(invalid_arguments(self.tool, problems))
        return self.function(ctx, **values)


def invalid_arguments(tool: str, problems: Iterable[str]) -> models.CallToolResult:
    """The ``isError`` result refusing a tool's arguments, one line per problem.

    Spec: server/tools §Error Handling — input validation errors (a date in
    the wrong format, a value out of range) are tool execution errors,
    reported in the result with ``isError: true`` so the model can correct
    itself and call again.
    """
    lines = [f"Invalid arguments for tool {tool!r}:", *(f"- {problem}" for problem in problems)]
    return models.CallToolResult([models.TextContent("\n".join(lines))], is_error=True)


async def answered(result: models.CallToolResult) -> models.CallToolResult:
    """A handler's coroutine that answers ``result`` at once, without the tool."""
    return result


def is_arguments_form(function: Callable[..., Any], hints: Mapping[str, Any]) -> bool:
    """Whether ``function`` is ``(ctx, arguments)`` taking the arguments object itself.

    That is the form with a hand-written schema: exactly two parameters, the
    second named ``arguments`` and, if annotated, a ``dict``.
    """
    parameters = list(inspect.signature(function).parameters.values())
    if len(parameters) != 2 or parameters[1].name != "arguments":
        return False
    hint = hints.get("arguments", dict)
    return hint is dict or get_origin(hint) in MAPPINGS or hint is Any


def tool_hints(function: Callable[..., Any], where: str) -> dict[str, Any]:
    """A handler's resolved hints; an object with an ``async def __call__`` has its method's.

    A ``functools.partial`` has no hints of its own, and its bound keywords
    would read as parameters a client could set: it is refused, saying what
    to register instead.
    """
    if isinstance(function, functools.partial):
        raise SignatureError(
            f"{where}: a functools.partial has no hints to read a schema from; register "
            "an async def that calls the function, or the bound method of an instance"
        )
    plain = inspect.isroutine(function) or isinstance(function, type)
    target = function if plain else getattr(function, "__call__", function)  # noqa: B004
    try:
        hints: dict[str, Any] = typing.get_type_hints(target, include_extras=True)
    except Exception as error:
        raise SignatureError(f"{where}: its type hints cannot be resolved ({error})") from None
    return hints


def check_context(function: Callable[..., Any], hints: Mapping[str, Any], where: str) -> None:
    """Refuse a handler whose first parameter cannot be the request context.

    Every handler is called with the :class:`RequestContext` first, so a
    first parameter hinted as anything else (``async def t(x: int)``) would
    receive the context as ``x``. An unhinted first parameter is taken to
    be the context, as its position says.
    """
    found = list(inspect.signature(function).parameters.values())
    if not found or found[0].kind not in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    ):
        raise SignatureError(
            f"{where}: the first parameter must take the request context (ctx: RequestContext)"
        )
    first = found[0]
    hint = hints.get(first.name, Any)
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    related = isinstance(hint, type) and (
        issubclass(hint, RequestContext) or issubclass(RequestContext, hint)
    )
    if hint is not Any and not related:
        raise SignatureError(
            f"{where}, parameter {first.name!r}: the first parameter receives the request "
            f"context, not {describe_hint(hint)}; put ctx: RequestContext before it"
        )


def refuse_late_context(hint: Any, place: str) -> None:
    """Refuse the request context hinted on a parameter after the first.

    The context arrives first, and only there: a second one has no schema,
    and it is most often a method decorated in its class body, whose first
    parameter, ``self``, would receive the context.
    """
    if get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    if isinstance(hint, type) and issubclass(hint, RequestContext):
        raise SignatureError(
            f"{place}: the request context is the first parameter, and only the first; "
            "a method decorated in its class gets self there: register the bound method "
            "of an instance instead"
        )


def typed_parameters(
    function: Callable[..., Any], hints: Mapping[str, Any], where: str
) -> tuple[tuple[Parameter, ...], JSONObject]:
    """The typed parameters after ``ctx`` and the object schema they make."""
    signature = inspect.signature(function)
    found = list(signature.parameters.values())
    properties: JSONObject = {}
    required: list[str] = []
    parameters: list[Parameter] = []
    for parameter in found[1:]:
        place = f"{where}, parameter {parameter.name!r}"
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise SignatureError(f"{place}: *args and **kwargs have no schema; name each one")
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise SignatureError(f"{place}: arguments are passed by name; not positional-only")
        if parameter.name not in hints:
            raise SignatureError(f"{place}: needs a type hint")
        hint = hints[parameter.name]
        refuse_late_context(hint, place)
        schema = dict(schema_for(hint, place))
        if parameter.default is parameter.empty:
            required.append(parameter.name)
            parameters.append(Parameter(parameter.name, hint))
        else:
            schema["default"] = checked_default(parameter.default, hint, schema, place)
            parameters.append(Parameter(parameter.name, hint, schema["default"]))
        properties[parameter.name] = schema
    whole: JSONObject = {"type": "object", "properties": properties}
    if required:
        whole["required"] = required
    return tuple(parameters), whole


# --- the return type --------------------------------------------------------------


class Returns(enum.Enum):
    """What a tool's declared return type says about the values it returns."""

    #: Content: a string, content blocks, a ``CallToolResult``, ``InputRequired``,
    #: or a JSON object (``structuredContent``). Undeclared returns are this.
    CONTENT = "content"
    #: An object with an ``outputSchema``: ``structuredContent`` and its JSON as text.
    STRUCTURED = "structured"
    #: Another JSON value (a number, a list…): its JSON as text.
    JSON = "json"
    #: As ``JSON``, and ``None`` (``-> int | None``): an empty content list.
    JSON_OR_NOTHING = "json or nothing"
    #: ``None``, alone or beside content (``-> str | None``): an empty content list.
    NOTHING = "nothing"


CONTENT_TYPES: tuple[Any, ...] = (
    str,
    models.TextContent,
    models.ImageContent,
    models.AudioContent,
    models.EmbeddedResource,
    models.ResourceLink,
    models.CallToolResult,
    InputRequired,
)


def is_content(hint: Any) -> bool:
    """Whether values of ``hint`` are content: a string, a block, a result, or a
    sequence of blocks. A sequence of strings is no content (its items are no
    blocks): it is a JSON value, sent as its text."""
    if hint in CONTENT_TYPES or hint is Any or hint is object:
        return True
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return is_content(args[0])
    if is_union(hint):
        return any(is_content(arg) for arg in args) and not any(is_structured(a) for a in args)
    return origin in SEQUENCES and bool(args) and args[0] is not str and is_content(args[0])


def return_shape(hints: Mapping[str, Any], where: str) -> tuple[Returns, JSONObject | None]:
    """The kind of values a tool returns, and the ``outputSchema`` its return type gives.

    An attrs class, a dataclass, a TypedDict or a ``dict[str, …]`` (alone, a union
    of them, ``anyOf``, or beside ``InputRequired``) gives an ``outputSchema``; ``None`` gives empty
    content, also when a union admits it (``str | None``, ``int | None``);
    strings, content blocks, results and unions of them (or no annotation)
    are content; any other type with a schema, e.g. ``int`` or
    ``list[str]``, is sent as its JSON text. ``Report | None`` is refused:
    a tool with an output schema must always return structured content.
    """
    if "return" not in hints:
        return Returns.CONTENT, None
    hint = hints["return"]
    if get_origin(hint) is Annotated:  # ``-> Annotated[Report, "…"]``: Report's, described
        returns, schema = return_shape({"return": get_args(hint)[0]}, where)
        notes = schema_for(Annotated[(Any, *hint.__metadata__)], f"{where}, return type")
        refuse_idle_return_fields(hint.__metadata__, schema, f"{where}, return type")
        return returns, None if schema is None else {**schema, **notes}
    if hint in (None, type(None)):
        return Returns.NOTHING, None
    members = [a for a in get_args(hint) if a is not InputRequired] if is_union(hint) else [hint]
    structured = [member for member in members if is_structured(member)]
    if structured:
        if len(structured) != len(members):
            raise SignatureError(
                f"{where}: a tool with an output schema must always return that object, "
                f"not {describe_hint(hint)}; raise ToolError for a failure"
            )
        schemas = [schema_for(member, f"{where}, return type") for member in members]
        return Returns.STRUCTURED, schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
    optional = type(None) in members
    if is_content(hint):
        for member in members:  # ``str | set[int]``: every member needs a JSON form
            if not is_content(member):
                schema_for(member, f"{where}, return type")
        return Returns.NOTHING if optional else Returns.CONTENT, None
    schema_for(hint, f"{where}, return type")  # refuse what has no JSON form
    return Returns.JSON_OR_NOTHING if optional else Returns.JSON, None


def refuse_idle_return_fields(
    metadata: Iterable[Any], schema: JSONObject | None, place: str
) -> None:
    """Refuse a return type's ``Field`` constraints that would not hold.

    They hold through the ``outputSchema`` alone: on a return type that
    gives none (``-> Annotated[int, Field(ge=0)]``) nothing checks them, and
    on an object (``-> Annotated[Report, Field(min_length=1)]``) they are
    idle as on a parameter (:func:`~presa_trio.wire.hints.refuse_idle_constraints`).
    A description or a title is no constraint.
    """
    for extra in metadata:
        if not isinstance(extra, Field):
            continue
        if schema is not None:
            refuse_idle_constraints(extra, schema, place)
        elif set(extra.keywords()) - {"description", "title"}:
            raise SignatureError(
                f"{place}: Field constraints hold through an outputSchema, and this return "
                "type gives none, so they would not hold; keep Field(description=…), or "
                "return an attrs class whose fields carry them"
            )


@attrs.frozen
class ToolSignature:
    """What the handler's signature gives a tool, read once at registration."""

    handler: Callable[..., Any]
    input_schema: JSONObject | None
    output_schema: JSONObject | None
    returns: Returns
    description: str | None


def read_signature(
    function: Callable[..., Any], tool: str, *, thread: bool = False
) -> ToolSignature:
    """Read a tool handler: its form, schemas, return kind and docstring."""
    where = f"tool {tool!r}"
    call = runner_for(function, where, thread=thread)
    hints = tool_hints(function, where)
    check_context(function, hints, where)
    returns, output_schema = return_shape(hints, where)
    description = inspect.getdoc(function)
    if is_arguments_form(function, hints):
        return ToolSignature(call, None, output_schema, returns, description)
    parameters, schema = typed_parameters(function, hints, where)
    typed = TypedCall(tool, call, parameters)
    return ToolSignature(typed, schema, output_schema, returns, description)


def read_handler(
    function: Callable[..., Any],
    where: str,
    shape: handler_shapes.HandlerShape,
    *,
    variables: tuple[str, ...] | None = None,
    thread: bool = False,
) -> Callable[..., Any]:
    """Read a resource, template or completion handler, called as ``shape`` says.

    The first argument is the request context (:func:`check_context`); a
    handler that cannot be called with exactly those, that declares a return
    type outside the shape's, or (for a template's ``variables``) that takes
    one variable where all come in a dict (:mod:`~presa_trio.server.handler_shapes`),
    is refused now rather than failing on each call.
    """
    call = runner_for(function, where, thread=thread)
    hints = tool_hints(function, where)
    check_context(function, hints, where)
    try:
        inspect.signature(function).bind(*shape.called)
    except TypeError:
        raise SignatureError(
            f"{where}: the handler is called as ({', '.join(shape.called)}); take exactly those"
        ) from None
    handler_shapes.refuse_return(hints, shape, where)
    if variables is not None:
        handler_shapes.refuse_misread_variables(function, hints, variables, where)
    return call


def runner_for(function: Callable[..., Any], where: str, *, thread: bool) -> Callable[..., Any]:
    """What to call for ``function``: itself if async, on a worker thread with ``thread``.

    A synchronous function is refused, since every call would fail with
    a non-awaitable result, unless ``thread`` asks for it to run on a
    worker thread (:class:`OnThread`); an async one with ``thread`` is
    refused too, and so is a generator, whose call returns no result, and a
    plain ``def`` wrapping an ``async def`` (a decorator's wrapper), whose
    call returns a coroutine that no thread would await. The same rule
    holds for every kind of handler.
    """
    if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
        raise SignatureError(
            f"{where}: the handler is a generator (it yields); return the result instead"
        )
    if thread and is_async(function):
        raise SignatureError(f"{where}: thread=True is for a plain def; this one is async")
    if not is_async(function) and is_async(inspect.unwrap(function)):
        raise SignatureError(
            f"{where}: the handler is a plain def wrapping an async def (a decorator's "
            "wrapper), and would return a coroutine unawaited; make the wrapper async def "
            "and await the call"
        )
    if not thread and not is_async(function):
        raise SignatureError(
            f"{where}: the handler must be an async function (async def); "
            "for blocking work use trio.to_thread.run_sync inside it, or register with thread=True"
        )
    return OnThread(function) if thread else function


def described(what: str, description: str | None) -> str:
    """A tool's or prompt's description: presa's rule, schema.ts leaves it optional."""
    if not description:
        raise SignatureError(f"{what}: needs a description (a docstring or description=)")
    return description


@attrs.frozen
class OnThread:
    """A synchronous tool, run on a worker thread so the event loop never blocks.

    The thread cannot await the context's methods; ``trio.from_thread.run``
    can, if it must. Cancelling the call abandons nothing: Trio waits for
    the thread (``trio.to_thread.run_sync`` is not abandonable by default).
    """

    function: Callable[..., Any]

    def __call__(self, ctx: Any, *args: Any, **kwargs: Any) -> Any:
        return trio.to_thread.run_sync(functools.partial(self.function, ctx, *args, **kwargs))


def is_async(function: Callable[..., Any]) -> bool:
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004 - an object with async __call__
    return call is not None and inspect.iscoroutinefunction(call)


# --- JSON Schema defaults for the arguments form ------------------------------------


@attrs.frozen
class Defaults:
    """The ``default`` of each property of an object schema, nested objects included."""

    values: tuple[tuple[str, Any], ...]
    nested: tuple[tuple[str, Defaults], ...]

    @classmethod
    def of(cls, schema: Any) -> Defaults | None:
        properties = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(properties, dict):
            return None
        values = [
            (k, s["default"])
            for k, s in properties.items()
            if isinstance(s, dict) and "default" in s
        ]
        nested = [(k, d) for k, s in properties.items() if (d := cls.of(s)) is not None]
        return cls(tuple(values), tuple(nested)) if values or nested else None

    def fill(self, value: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of ``value`` with every absent defaulted key set to a copy of its default."""
        filled = dict(value)
        for key, default in self.values:
            if key not in filled:
                filled[key] = copy.deepcopy(default)
        for key, inner in self.nested:
            if isinstance(filled.get(key), dict):
                filled[key] = inner.fill(filled[key])
        return filled


@attrs.frozen
class FillDefaults:
    """An arguments-form handler that receives its schema's ``default`` values filled in.

    Returns the handler's own coroutine, like :class:`TypedCall`.
    """

    function: Callable[..., Any]
    defaults: Defaults

    def __call__(self, ctx: Any, arguments: Mapping[str, Any]) -> Any:
        return self.function(ctx, self.defaults.fill(arguments))


# --- typed prompts -------------------------------------------------------------------


@attrs.frozen
class PromptSignature:
    """What a prompt handler's signature gives the prompt, read once at registration."""

    handler: Callable[..., Any]
    # The prompt's arguments; ``None`` for a handler taking the arguments dict.
    arguments: tuple[models.PromptArgument, ...] | None
    description: str | None


@attrs.frozen
class TypedPrompt:
    """A typed prompt's handler as ``prompts/get`` calls every prompt; its own coroutine."""

    function: Callable[..., Any]
    names: tuple[str, ...]

    def __call__(self, ctx: Any, arguments: Mapping[str, str]) -> Any:
        return self.function(
            ctx, **{name: arguments[name] for name in self.names if name in arguments}
        )


def prompt_argument(parameter: inspect.Parameter, hint: Any, place: str) -> models.PromptArgument:
    """One ``str`` parameter as a prompt argument: required unless it has a default.

    ``Annotated[str, "text"]`` or ``Annotated[str, Field(description="text")]``
    describes it; other ``Field`` keywords are refused, since a prompt
    argument is a name and a description, with no schema to check
    (server/prompts §Listing Prompts).
    """
    description = None
    if get_origin(hint) is Annotated:
        for extra in hint.__metadata__:
            if isinstance(extra, Field) and set(extra.keywords()) - {"description"}:
                raise SignatureError(
                    f"{place}: a prompt argument has no schema to hold constraints; "
                    "Field(description=…) only"
                )
            if isinstance(extra, Field) and extra.description is not None:
                description = extra.description
            elif isinstance(extra, str):
                description = extra
        hint = get_args(hint)[0]
    optional = parameter.default is not inspect.Parameter.empty
    if hint is not str and not (optional and hint == str | None):
        raise SignatureError(
            f"{place}: prompt arguments are strings; use str (or str | None = None)"
        )
    if optional and not isinstance(parameter.default, str) and parameter.default is not None:
        raise SignatureError(f"{place}: the default {parameter.default!r} is not a string")
    if parameter.default is None and hint is str:
        raise SignatureError(f"{place}: the default None is not a string; hint it str | None")
    return models.PromptArgument(parameter.name, description, None if optional else True)


def read_prompt_signature(
    function: Callable[..., Any], prompt: str, *, thread: bool = False
) -> PromptSignature:
    """Read a prompt handler: ``(ctx, arguments: dict[str, str])``, or typed ``str`` parameters.

    Spec: server/prompts §Listing Prompts (``arguments``: name, description,
    required); prompt arguments are strings on the wire.
    """
    where = f"prompt {prompt!r}"
    call = runner_for(function, where, thread=thread)
    hints = tool_hints(function, where)
    check_context(function, hints, where)
    handler_shapes.refuse_return(hints, handler_shapes.PROMPT, where)
    description = inspect.getdoc(function)
    if is_arguments_form(function, hints):
        return PromptSignature(call, None, description)
    parameters = list(inspect.signature(function).parameters.values())[1:]
    arguments = []
    for parameter in parameters:
        place = f"{where}, parameter {parameter.name!r}"
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise SignatureError(f"{place}: arguments are passed by name, one parameter each")
        if parameter.name not in hints:
            raise SignatureError(f"{place}: needs a type hint")
        refuse_late_context(hints[parameter.name], place)
        arguments.append(prompt_argument(parameter, hints[parameter.name], place))
    names = tuple(parameter.name for parameter in parameters)
    return PromptSignature(TypedPrompt(call, names), tuple(arguments), description)
