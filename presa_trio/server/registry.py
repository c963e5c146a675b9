"""The public registration API: a :class:`Server`, its decorators, and extensions.

A server is a set of tools, resources, resource templates, prompts and
completions, registered with decorators, plus any extensions. It is plain
data until an edge (HTTP or stdio) serves it::

    server = Server("demo", "1.0.0")

    @server.tool(description="Echo the text back", input_schema={...})
    async def echo(ctx: RequestContext, arguments: dict) -> str:
        return arguments["text"]

An :class:`Extension` (SEP-2133) plugs into a server without editing the
core. It can:

- advertise itself under ``capabilities.extensions[<id>]`` in ``server/discover``;
- add rows to the method table (``methods``), each a :class:`Method`: its
  handler, its ``Mcp-Name`` rule, whether it may answer ``input_required``;
- wrap an existing method (``wrap``), e.g. to answer ``tools/call`` differently
  when the request declared the extension;
- run for the server's lifetime (``run``), e.g. to own a nursery of workers;
- honour its own keys of a ``subscriptions/listen`` filter (``subscription``),
  e.g. ``taskIds``, and so receive the changes it publishes on the server's bus.

-32021 for a missing declaration is
:meth:`presa_trio.wire.errors.MissingRequiredClientCapability.for_extension`.
The core's own rows are :data:`presa_trio.server.methods.CORE_METHODS`.

The extension hook lives here, beside :class:`Server`, because each needs
the other: a server holds its extensions, an extension is attached to its
server. In one module, that is no import cycle.

One topic: what a server holds and how each thing is registered on it; the
checks each registration makes live in ``refusals.py`` and ``signatures.py``.

Spec: SEP-2133 (extensions); 2026-07-28 basic/index §Extensions.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs
import trio

from presa_trio.server.capabilities import read_needs
from presa_trio.server.context import RequestContext
from presa_trio.server.handler_shapes import COMPLETION, RESOURCE, TEMPLATE
from presa_trio.server.open_streams import DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT, ClientStreams
from presa_trio.server.refusals import (
    chosen_name,
    name_of,
    read_icons,
    refuse_annotations,
    refuse_duplicate,
    refuse_extension,
    refuse_prompt_arguments,
    refuse_reference_type,
    refuse_resource_annotations,
    refuse_server_texts,
    refuse_shadowed_template,
    refuse_size,
    refuse_template_scheme,
    refuse_texts,
    refuse_tool_name,
    refuse_uncalled,
    refuse_uri,
)
from presa_trio.server.registered import (
    AnyCompletionHandler,
    AnyPromptHandler,
    AnyResourceHandler,
    AnyTemplateHandler,
    AnyToolHandler,
    CompletionHandler,
    RegisteredPrompt,
    RegisteredResource,
    RegisteredTemplate,
    RegisteredTool,
    ToolHandler,
    template_pattern,
)
from presa_trio.server.signatures import (
    Defaults,
    FillDefaults,
    Returns,
    SignatureError,
    ToolSignature,
    described,
    read_handler,
    read_prompt_signature,
    read_signature,
)
from presa_trio.server.subscriptions import (
    PROMPTS_LIST_CHANGED,
    RESOURCES_LIST_CHANGED,
    TOOLS_LIST_CHANGED,
    Change,
    ChangeBus,
    Wants,
    resource_updated,
)
from presa_trio.server.tool_schemas import (
    compile_tool_schemas,
    refuse_unmeetable,
    refuse_unmet_output,
)
from presa_trio.wire import models
from presa_trio.wire.headers import header_params
from presa_trio.wire.models import JSONObject
from presa_trio.wire.request_state import StateSealer

AnyExtension = TypeVar("AnyExtension", bound="Extension")

EMPTY_OBJECT_SCHEMA: JSONObject = {"type": "object", "properties": {}}


class ToolError(Exception):
    """Raised by a tool for a failure it anticipated: the result gets ``isError``.

    Any other exception is a server fault and becomes -32603 (tools §Error
    Handling; spec-notes §25).
    """


@attrs.frozen
class CacheHints:
    """``ttlMs`` and ``cacheScope`` for cacheable results (server/utilities/caching).

    presa chooses ``ttlMs: 0`` (stale at once: lists can change, and
    ``listChanged`` announces it) and ``public`` (nothing here depends on who
    asks). Change both per server. Hints the wire cannot carry are refused
    here, with a ``ValueError``: caching §Time-to-Live (TTL) Field, "Servers
    **MUST** provide a ``ttlMs`` value that is ``>= 0``", an integer (schema
    ``$defs.CacheableResult``), and a scope of ``public`` or ``private``.
    """

    ttl_ms: int = attrs.field(default=0)
    scope: Literal["public", "private"] = attrs.field(default="public")

    @ttl_ms.validator
    def _check_ttl(self, _attribute: Any, ttl_ms: int) -> None:
        if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms < 0:
            raise ValueError(f"ttl_ms must be a whole number of milliseconds >= 0, not {ttl_ms!r}")

    @scope.validator
    def _check_scope(self, _attribute: Any, scope: str) -> None:
        if scope not in ("public", "private"):
            raise ValueError(f"scope must be 'public' or 'private', not {scope!r}")

    def to_wire(self) -> JSONObject:
        return {"ttlMs": self.ttl_ms, "cacheScope": self.scope}


def returns_of(signature: ToolSignature, output_schema: JSONObject | None) -> Returns:
    """What the tool's returned values are: structured whenever it has an ``outputSchema``.

    A hand-written ``output_schema=`` may describe any JSON value (an array
    of users, in server/tools §Output Schema), and ``structuredContent``
    may be any JSON value that fits it, so what such a tool returns, apart
    from content, is its ``structuredContent``. A return type that admits
    ``None`` beside content or alone (``-> None``, ``-> str | None``:
    ``Returns.NOTHING``) keeps its own reading; what such a tool returns
    without ``structuredContent`` is -32603 all the same
    (:func:`~presa_trio.server.tools.check_structured`).
    """
    if output_schema is not None and signature.returns is not Returns.NOTHING:
        return Returns.STRUCTURED
    return signature.returns


@attrs.define(eq=False, repr=False)
class Server:
    """A 2026-07-28 server: what it offers, and how it is configured."""

    name: str
    version: str
    instructions: str | None = None
    cache: CacheHints = CacheHints()
    # Seals requestState; the default key is random and per process (presa_trio.wire.request_state).
    sealer: StateSealer = attrs.field(factory=StateSealer.with_random_key)
    # Wall-clock seconds, for requestState expiry; injectable for tests.
    clock: Callable[[], float] = time.time
    tools: dict[str, RegisteredTool] = attrs.field(factory=dict)
    resources: dict[str, RegisteredResource] = attrs.field(factory=dict)
    templates: list[RegisteredTemplate] = attrs.field(factory=list)
    prompts: dict[str, RegisteredPrompt] = attrs.field(factory=dict)
    completions: dict[tuple[str, str], CompletionHandler] = attrs.field(factory=dict)
    extensions: list[Extension] = attrs.field(factory=list)
    changes: ChangeBus = attrs.field(factory=ChangeBus)
    # Most open ``subscriptions/listen`` streams of one client in this process
    # (``--listen-max-streams-per-client``); the streams open, per client.
    max_listen_streams_per_client: int = DEFAULT_MAX_LISTEN_STREAMS_PER_CLIENT
    listen_streams: ClientStreams = attrs.field(
        factory=lambda: ClientStreams("listen streams", "max_listen_streams_per_client"),
        init=False,
    )
    # Set when a dispatcher builds its method table: extensions are fixed from then on.
    _served: bool = attrs.field(default=False, init=False)

    def __attrs_post_init__(self) -> None:
        refuse_server_texts(self.name, self.version, self.instructions)

    # --- registration ----------------------------------------------------------

    def tool(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        input_schema: JSONObject | None = None,
        title: str | None = None,
        output_schema: JSONObject | None = None,
        annotations: JSONObject | None = None,
        icons: Sequence[models.Icon] = (),
        nursery: bool = False,
        needs: Iterable[str] = (),
        thread: bool = False,
    ) -> Callable[[AnyToolHandler], AnyToolHandler]:
        """Register a tool, typed or taking the arguments object; return it unchanged.

        A typed tool (``async def greet(ctx, name: str, times: int = 1)``)
        gets its ``inputSchema`` from its parameters, its description from
        its docstring, an ``outputSchema`` from an attrs, TypedDict or
        ``dict[str, …]`` return type (:mod:`presa_trio.server.signatures`).
        The other form, ``(ctx, arguments: dict[str, Any])``, takes
        ``input_schema`` (default: any object) and gets the arguments with
        the schema's ``default`` values filled in.

        Arguments are checked against the input schema before the handler
        runs; what it returns becomes a valid result or -32603
        (:mod:`presa_trio.server.results`). Refused now, in one line naming
        the tool and the parameter (:class:`SignatureError`): a first
        parameter that is not the request context, a hint with no schema,
        a default its schema refuses, a synchronous handler (unless
        ``thread=True``), a name already registered, an unusable schema,
        ``output_schema=`` that the return type never meets
        (:func:`refuse_unmet_output`),
        ``@server.tool`` without its parentheses, and a name outside
        server/tools §Tool Names (:func:`refuse_tool_name`). ``needs``: the client
        capabilities it may ask for (:mod:`presa_trio.server.capabilities`).

        With ``nursery=True`` the handler may start child tasks in
        ``ctx.nursery`` (:attr:`RequestContext.nursery`), and every call of
        it runs inside a nursery that waits for them; a tool without it pays
        for no nursery on a plain call. In a task, ``ctx.nursery`` is the
        task's own either way.
        """

        refuse_uncalled("tool", name, "@server.tool()")

        def register(handler: AnyToolHandler) -> AnyToolHandler:
            tool_name = name_of(handler, "a tool") if name is None else name
            refuse_tool_name(tool_name)
            refuse_annotations(f"tool {tool_name!r}", annotations)
            listed_icons = read_icons(f"tool {tool_name!r}", icons)
            refuse_duplicate(f"tool {tool_name!r}", tool_name in self.tools)
            signature = read_signature(handler, tool_name, thread=thread)
            if input_schema is not None and signature.input_schema is not None:
                raise SignatureError(
                    f"tool {tool_name!r}: input_schema= is for a handler (ctx, arguments); "
                    "a typed tool's schema comes from its parameters"
                )
            schema = input_schema or signature.input_schema or EMPTY_OBJECT_SCHEMA
            tool = models.Tool(
                name=tool_name,
                description=described(f"tool {tool_name!r}", description or signature.description),
                input_schema=schema,
                title=title,
                output_schema=signature.output_schema if output_schema is None else output_schema,
                annotations=annotations,
                icons=listed_icons,
            )
            refuse_texts(f"tool {tool_name!r}", title=title, description=tool.description)
            arguments, structured = compile_tool_schemas(tool)
            refuse_unmet_output(f"tool {tool_name!r}", handler, output_schema)
            refuse_unmeetable(
                f"tool {tool_name!r}", input_schema=input_schema, output_schema=output_schema
            )
            call: ToolHandler = signature.handler
            defaults = Defaults.of(schema) if signature.input_schema is None else None
            if defaults is not None:
                call = FillDefaults(call, defaults)
            self.tools[tool.name] = RegisteredTool(
                tool,
                call,
                header_params(schema),
                arguments,
                structured,
                nursery,
                returns_of(signature, output_schema),
                read_needs(tool_name, needs),
            )
            self.notify_tools_list_changed()
            return handler

        return register

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        size: int | None = None,
        icons: Sequence[models.Icon] = (),
        annotations: JSONObject | None = None,
        thread: bool = False,
    ) -> Callable[[AnyResourceHandler], AnyResourceHandler]:
        """Register a concrete resource, ``async def (ctx)``; listed in registration order.

        ``uri`` must be a URI, with its scheme (:func:`refuse_uri`).

        ``name`` defaults to the handler's name, ``description`` to its
        docstring; ``thread=True`` runs a plain ``def`` on a worker thread.
        """
        refuse_uncalled("resource", uri, '@server.resource("URI")')

        def register(handler: AnyResourceHandler) -> AnyResourceHandler:
            where = f"resource {uri!r}"
            refuse_uri(where, uri)
            listed_icons = read_icons(where, icons)
            refuse_resource_annotations(where, annotations)
            refuse_size(where, size)
            refuse_duplicate(where, uri in self.resources)
            call = read_handler(handler, where, RESOURCE, thread=thread)
            resource = models.Resource(
                uri=uri,
                name=chosen_name(name, handler, where),
                title=title,
                description=description or inspect.getdoc(handler),
                mime_type=mime_type,
                size=size,
                icons=listed_icons,
                annotations=annotations,
            )
            refuse_texts(
                where,
                name=resource.name,
                title=title,
                description=resource.description,
                mime_type=mime_type,
            )
            self.resources[uri] = RegisteredResource(resource, call)
            self.notify_resources_list_changed()
            return handler

        return register

    def resource_template(
        self,
        uri_template: str,
        *,
        name: str,
        description: str | None = None,
        mime_type: str | None = None,
        title: str | None = None,
        icons: Sequence[models.Icon] = (),
        annotations: JSONObject | None = None,
        thread: bool = False,
    ) -> Callable[[AnyTemplateHandler], AnyTemplateHandler]:
        """Register a resource template, ``async def (ctx, variables)``: the matched variables."""

        def register(handler: AnyTemplateHandler) -> AnyTemplateHandler:
            where = f"resource template {uri_template!r}"
            refuse_template_scheme(where, uri_template)
            named = chosen_name(name, handler, where)  # refuses name=''
            listed_icons = read_icons(where, icons)
            refuse_resource_annotations(where, annotations)
            pattern = template_pattern(uri_template)
            refuse_shadowed_template(where, uri_template, pattern, self.templates)
            call = read_handler(
                handler, where, TEMPLATE, variables=pattern.variables, thread=thread
            )
            template = models.ResourceTemplate(
                uri_template=uri_template,
                name=named,
                title=title,
                description=description,
                mime_type=mime_type,
                icons=listed_icons,
                annotations=annotations,
            )
            refuse_texts(
                where, name=named, title=title, description=description, mime_type=mime_type
            )
            self.templates.append(RegisteredTemplate(template, pattern, call))
            self.notify_resources_list_changed()
            return handler

        return register

    def prompt(
        self,
        name: str | None = None,
        *,
        description: str | None = None,
        arguments: Sequence[models.PromptArgument] = (),
        title: str | None = None,
        icons: Sequence[models.Icon] = (),
        thread: bool = False,
    ) -> Callable[[AnyPromptHandler], AnyPromptHandler]:
        """Register a prompt; return the handler unchanged.

        A typed prompt, ``async def summarise(ctx, text: str, tone: str =
        "plain")``, gets its arguments from its ``str`` parameters (required
        unless defaulted) and its description from its docstring, and may
        return a ``str``: one user message. The other form takes
        ``(ctx, arguments: dict[str, str])`` and ``arguments=``.
        ``thread=True`` runs a plain ``def`` on a worker thread.
        """
        refuse_uncalled("prompt", name, "@server.prompt()")

        def register(handler: AnyPromptHandler) -> AnyPromptHandler:
            prompt_name = chosen_name(name, handler, "a prompt")
            listed_icons = read_icons(f"prompt {prompt_name!r}", icons)
            refuse_duplicate(f"prompt {prompt_name!r}", prompt_name in self.prompts)
            signature = read_prompt_signature(handler, prompt_name, thread=thread)
            if arguments and signature.arguments is not None:
                raise SignatureError(
                    f"prompt {prompt_name!r}: arguments= is for a handler (ctx, arguments); "
                    "a typed prompt's arguments come from its parameters"
                )
            refuse_prompt_arguments(f"prompt {prompt_name!r}", arguments)
            listed = list(signature.arguments or arguments)
            prompt = models.Prompt(
                name=prompt_name,
                description=described(
                    f"prompt {prompt_name!r}", description or signature.description
                ),
                title=title,
                arguments=listed or None,
                icons=listed_icons,
            )
            refuse_texts(
                f"prompt {prompt_name!r}",
                name=prompt_name,
                title=title,
                description=prompt.description,
            )
            self.prompts[prompt.name] = RegisteredPrompt(prompt, signature.handler)
            self.notify_prompts_list_changed()
            return handler

        return register

    def completion(
        self, ref_type: Literal["ref/prompt", "ref/resource"], ref: str, *, thread: bool = False
    ) -> Callable[[AnyCompletionHandler], AnyCompletionHandler]:
        """Register argument completion for a prompt name, or a resource's URI or a template
        (server/utilities/completion §Reference Types).

        The handler is ``async def (ctx, argument, value, context_arguments)``;
        ``thread=True`` runs a plain ``def`` on a worker thread.
        """
        refuse_reference_type(ref_type, ref)

        def register(handler: AnyCompletionHandler) -> AnyCompletionHandler:
            where = f"completion of {ref_type} {ref!r}"
            refuse_duplicate(where, (ref_type, ref) in self.completions)
            call = read_handler(handler, where, COMPLETION, thread=thread)
            self.completions[(ref_type, ref)] = call
            return handler

        return register

    def add_extension(self, extension: AnyExtension) -> AnyExtension:
        """Plug in an extension (SEP-2133) before serving, and return it; see :class:`Extension`.

        Once served, the method table holds the extensions' rows and their
        lifetimes run; a later one would be advertised and never dispatched,
        so it is refused. So is a bad identifier or settings, or one already
        added (:func:`~presa_trio.server.refusals.refuse_extension`).
        """
        if self.served:
            raise RuntimeError("add extensions before the server is served")
        refuse_extension(extension.id, extension.settings, [added.id for added in self.extensions])
        self.extensions.append(extension)
        extension.attach(self)
        return extension

    def mark_served(self) -> None:
        """Called by the dispatcher: the extensions it was built with are final."""
        self._served = True

    @property
    def served(self) -> bool:
        """Whether a dispatcher was built on it (its extensions are final)."""
        return self._served

    # --- lookups ---------------------------------------------------------------

    def find_template(self, uri: str) -> tuple[RegisteredTemplate, dict[str, str]] | None:
        for template in self.templates:
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def listed_tools(self) -> Iterator[models.Tool]:
        """Tools in registration order: the same order on every call.

        Spec: tools/list is deterministic when nothing changed
        (runner tools-list/tools-list-deterministic-order).
        """
        for registered in self.tools.values():
            yield registered.tool

    # --- change notifications (subscriptions) ----------------------------------
    # Registering announces itself: a server may be served already, and it advertises
    # ``listChanged`` (tools, prompts, resources §List Changed Notification). Before
    # then nothing listens, here or in another process (ChangeBus.announce).

    def notify_tools_list_changed(self) -> None:
        self.changes.announce(Change(TOOLS_LIST_CHANGED))

    def notify_prompts_list_changed(self) -> None:
        self.changes.announce(Change(PROMPTS_LIST_CHANGED))

    def notify_resources_list_changed(self) -> None:
        self.changes.announce(Change(RESOURCES_LIST_CHANGED))

    def notify_resource_updated(self, uri: str) -> None:
        self.changes.announce(resource_updated(uri))


# --- the method table's rows, and extensions ---------------------------------

#: A method handler: the server, the request context and the raw params in, a
#: wire result out. The result may omit ``resultType``; the dispatcher stamps
#: ``"complete"``. Method handlers are the server's own (the core's, an
#: extension's), so they get the whole :class:`Server`; the tools, resources
#: and prompts a user registers see only ``ctx.server``, a ``ServerView``.
MethodHandler = Callable[[Server, RequestContext, JSONObject], Awaitable[JSONObject]]

#: The ``Mcp-Param-*`` rules of one request: header name -> path into params.
ParamHeaders = Callable[[Server, JSONObject], Mapping[str, tuple[str, ...]]]


def no_param_headers(server: Server, params: JSONObject) -> Mapping[str, tuple[str, ...]]:
    """Most methods mirror no argument into ``Mcp-Param-*`` headers."""
    return {}


@attrs.frozen
class Method:
    """One row of the method table: everything the server knows about one method.

    Dispatch, ``server/discover``, the HTTP edge's mirrored-header rules and
    the multi round-trip rule all read these rows, so adding a row is the
    whole of adding a method.
    """

    # The JSON-RPC method name, e.g. ``tools/call``.
    name: str
    handler: MethodHandler
    # The server capability the method belongs to: it is dispatched exactly
    # while ``server/discover`` advertises that capability; ``None``: always.
    capability: str | None = None
    # ``Mcp-Name`` mirrors ``params[name_param]`` (basic/transports/streamable-http
    # §Standard Request Headers); ``None``: the method has no ``Mcp-Name``.
    name_param: str | None = None
    # Whether a request without ``Mcp-Name`` is refused (-32020); False: the
    # header is checked only when sent (``tasks/stream``, spec-notes §50).
    name_required: bool = True
    # ``Mcp-Param-<Name>`` headers this request must carry (the same page,
    # §Custom Headers from Tool Parameters).
    param_headers: ParamHeaders = no_param_headers
    # May answer ``input_required`` (basic/patterns/mrtr §Supported Requests:
    # only tools/call, prompts/get and resources/read; any other is a server bug).
    may_ask: bool = False


@attrs.frozen
class SubscriptionPart:
    """An extension's share of one listen stream: what it honours, and which changes."""

    # Merged into the acknowledgement's ``notifications`` (the honoured filter).
    honoured: dict[str, Any]
    # Which published changes this stream receives on the extension's behalf.
    wants: Wants


class Extension:
    """Base class for extensions; every hook defaults to "nothing to add"."""

    #: The extension identifier, e.g. ``io.modelcontextprotocol/tasks``.
    id: str = ""
    #: The settings object advertised in ``server/discover``.
    settings: Mapping[str, Any] = {}

    def attach(self, server: Server) -> None:
        """Called once when the extension is added to ``server``."""

    def methods(self) -> Iterable[Method]:
        """Rows this extension adds to the method table."""
        return ()

    def wrap(self, method: str, handler: MethodHandler) -> MethodHandler:
        """Return ``handler`` or a wrapper around it; called for every method."""
        return handler

    async def subscription(
        self, ctx: RequestContext, wanted: Mapping[str, Any]
    ) -> SubscriptionPart | None:
        """Honour this extension's keys of a listen filter; ``None`` if it has none."""
        return None

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run for the server's lifetime inside its nursery; the default does nothing."""
        task_status.started()

    async def unready(self) -> str | None:
        """Why it cannot serve now, in one line, within a bounded time; ``None`` if it can.

        Asked by ``GET /readyz`` (docs/deployment.md) while the server runs.
        """
        return None
