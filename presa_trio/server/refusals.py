"""What registration refuses before anything is registered, each in one line.

Each check names what was being registered and how to put it right, so a
mistake shows when the server is built rather than on its first request
(docs/api.md, what registration refuses). The signature checks of a
handler are :mod:`presa_trio.server.signatures`; these are the checks of
what the decorators are given: the decorator called, names, URIs, tool
annotations, a prompt's arguments, completion reference types; and of
what a :class:`~presa_trio.server.Server` is given: its name, version and
instructions.

Spec: 2026-07-28 server/tools §Tool Names, schema.ts ``ToolAnnotations``
and ``Resource.uri``, server/utilities/completion §Reference Types.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from presa_trio.server.registered import RegisteredTemplate, TemplatePattern
from presa_trio.wire import models
from presa_trio.wire.envelope import json_problem
from presa_trio.wire.hints import SignatureError
from presa_trio.wire.meta import is_extension_id
from presa_trio.wire.well_formed import URI_SCHEME, is_annotations, is_icons, is_optional_text


def refuse_uncalled(kind: str, given: object, usage: str) -> None:
    """Refuse a decorator factory used as the decorator itself (``@server.tool``).

    Without the parentheses the function arrives where a name belongs, and
    what is returned is the inner decorator: nothing is registered, and the
    tool is unknown only when called. presa chooses to refuse this, as the
    SDK's ``MCPServer`` does, rather than accept both spellings: one
    spelling, in every example.
    """
    if callable(given):
        named = getattr(given, "__name__", "?")
        raise SignatureError(
            f"{kind} {named!r}: the decorator was used without calling it "
            f"(did you forget to call it?); write {usage}"
        )


#: What server/tools §Tool Names allows: 1 to 128 ASCII letters, digits, ``_``, ``-`` and ``.``.
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")


def refuse_tool_name(name: str) -> None:
    """Refuse a tool name outside server/tools §Tool Names.

    The page says names SHOULD be 1 to 128 characters, only ASCII letters,
    digits, underscore, hyphen and dot, and SHOULD NOT hold spaces, commas
    or other special characters; clients and models may refuse or mangle
    others. presa holds its tools to it at registration, where the name is
    chosen, rather than serve a tool some clients cannot call.
    """
    if not (isinstance(name, str) and TOOL_NAME.fullmatch(name)):
        raise SignatureError(
            f"tool {name!r}: a tool name is 1 to 128 of the characters A-Z a-z 0-9 _ - . "
            "(server/tools §Tool Names); choose one with name="
        )


def refuse_uri(where: str, uri: str) -> None:
    """Refuse a resource ``uri`` that is no URI: without a scheme (``today``, ``""``), or no string.

    schema.ts ``Resource.uri`` is ``format: uri``, and a client reads it
    back with ``resources/read``; a name or a relative path is not one. Nor
    is ``note://{day}``: RFC 3986 has no braces, and that resource could
    never be read by any URI a client would send; it is a template.
    """
    if not (isinstance(uri, str) and URI_SCHEME.match(uri)):
        raise SignatureError(
            f"{where}: a resource's uri is a URI, starting with its scheme "
            "(note://today, file:///notes/today.txt; RFC 3986 §3)"
        )
    if "{" in uri or "}" in uri:
        raise SignatureError(
            f"{where}: braces make it a URI template, not a URI; "
            "register it with @server.resource_template(uri_template, name=…)"
        )


def refuse_template_scheme(where: str, uri_template: str) -> None:
    """Refuse a URI template that does not start with a URI scheme (``notes/{day}``, ``{day}.txt``).

    Every URI it matched would be read with ``resources/read``, whose
    ``uri`` is ``format: uri`` (schema.ts): without a scheme, what it
    matches is a path or a name, never a URI a client could send.
    """
    if not (isinstance(uri_template, str) and URI_SCHEME.match(uri_template)):
        raise SignatureError(
            f"{where}: a resource template is a URI template, starting with its scheme "
            "(note://{day}, file:///notes/{day}.txt; RFC 3986 §3, RFC 6570)"
        )


#: schema.ts ``ToolAnnotations``: each hint is a boolean, ``title`` a string.
ANNOTATION_TYPES: Mapping[str, type] = {
    "title": str,
    "readOnlyHint": bool,
    "destructiveHint": bool,
    "idempotentHint": bool,
    "openWorldHint": bool,
}


def refuse_annotations(where: str, annotations: object) -> None:
    """Refuse ``annotations=`` that ``tools/list`` could not carry as schema.ts says.

    Keys the schema does not name are left as they are: ``ToolAnnotations``
    does not close its properties. Their values must have a JSON form
    (:func:`refuse_unlisted`).
    """
    if annotations is None:
        return
    if not isinstance(annotations, dict):
        raise SignatureError(f"{where}: annotations= is a dict, such as {{'readOnlyHint': True}}")
    for key, kind in ANNOTATION_TYPES.items():
        if key in annotations and not isinstance(annotations[key], kind):
            raise SignatureError(
                f"{where}: annotations[{key!r}] is {annotations[key]!r}, not a {kind.__name__} "
                "(schema.ts ToolAnnotations)"
            )
    refuse_unlisted(where, annotations)


def refuse_unlisted(where: str, annotations: object) -> None:
    """Refuse ``annotations=`` holding a value JSON cannot carry (NaN, a ``date``, a ``set``).

    Every ``*/list`` carries them, and one such value would make each of
    them -32603, where tools and resources §Capabilities say the server
    **MUST** answer the list with what it offers.
    """
    problem = json_problem(annotations)
    if problem is not None:
        raise SignatureError(f"{where}: annotations= holds a value JSON cannot carry: {problem}")


def refuse_texts(where: str, **fields: object) -> None:
    """Refuse a field that schema.ts has as a string (``name``, ``title``…) holding another type.

    ``None`` is an optional field left out. The listing would carry the
    value to every client as a result the schema refuses.
    """
    for field, value in fields.items():
        if not is_optional_text(value):
            raise SignatureError(f"{where}: {field}= is {value!r}, not a str (schema.ts)")


def refuse_server_texts(name: object, version: object, instructions: object) -> None:
    """Refuse a server's name or version that is no string, or instructions that are no string.

    Every result carries the name and version as its ``serverInfo`` (schema.ts
    ``Implementation``: both strings), and ``server/discover`` the
    instructions: a ``Server("hello", 1.0)`` would make every one a result
    the schema refuses.
    """
    if not (isinstance(name, str) and isinstance(version, str)):
        raise SignatureError(
            f"Server({name!r}, {version!r}): the name and the version are strings, such as "
            "Server('hello', '1.0.0') (schema.ts Implementation)"
        )
    refuse_texts(f"Server({name!r})", instructions=instructions)


def refuse_prompt_arguments(where: str, arguments: object) -> None:
    """Refuse ``arguments=`` that schema.ts ``PromptArgument`` refuses, or no list of them
    (one ``PromptArgument`` alone too)."""
    listed = arguments if isinstance(arguments, list | tuple) else None
    for argument in [arguments] if listed is None else listed:
        if not (
            listed is not None
            and isinstance(argument, models.PromptArgument)
            and isinstance(argument.name, str)
            and is_optional_text(argument.description, argument.title)
            and (argument.required is None or isinstance(argument.required, bool))
        ):
            raise SignatureError(
                f"{where}: arguments= is a list of PromptArgument(name, description=None, "
                "required=None, title=None), a str name, description and title and a bool "
                f"required; not {argument!r} (schema.ts PromptArgument)"
            )
    names = [argument.name for argument in listed or ()]
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        raise SignatureError(
            f"{where}: arguments= names {twice!r} twice; prompts/get carries one value "
            "for each name, so each argument is named once"
        )


def refuse_size(where: str, size: object) -> None:
    """Refuse a ``size=`` that is no count of bytes (schema.ts ``Resource.size``, integer)."""
    if size is None:
        return
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise SignatureError(f"{where}: size= is {size!r}; it is the size in bytes, an int >= 0")


def refuse_resource_annotations(where: str, annotations: object) -> None:
    """Refuse ``annotations=`` of a resource or template that schema.ts ``Annotations`` refuses.

    resources §Annotations: an ``audience`` of ``user`` and ``assistant``, a
    ``priority`` from 0 to 1, a ``lastModified`` string; any other key's value
    with a JSON form (:func:`refuse_unlisted`).
    """
    if annotations is not None and not (
        isinstance(annotations, dict) and is_annotations(annotations)
    ):
        raise SignatureError(
            f"{where}: annotations= is a dict such as {{'audience': ['user'], 'priority': 0.8, "
            "'lastModified': '2025-01-12T15:00:58Z'}} (resources §Annotations)"
        )
    refuse_unlisted(where, annotations)


def read_icons(where: str, icons: Sequence[models.Icon]) -> list[models.Icon] | None:
    """``icons=`` as the listing carries it (``None`` for none), or refused.

    Each is a :class:`~presa_trio.wire.models.Icon` whose ``src`` is a URI
    with its scheme (``https:``, ``data:``); a list the schema refuses would
    go out on every ``*/list``.
    """
    if not is_icons(icons):
        raise SignatureError(
            f"{where}: icons= is a list of Icon, each with a src URI such as "
            "https://example.com/icon.png or a data: URI, sizes a list of strings, "
            "theme 'light' or 'dark' (schema.ts Icon)"
        )
    return list(icons) or None


def name_of(handler: object, where: str) -> str:
    """The name a handler gives what it registers, unless ``name=`` does: its ``__name__``.

    An object with an ``async def __call__`` has none, so it needs ``name=``.
    """
    named = getattr(handler, "__name__", None)
    if not isinstance(named, str) or not named:
        raise SignatureError(f"{where}: needs a name; give name=")
    return named


def chosen_name(name: str | None, handler: object, where: str) -> str:
    """The name ``name=`` gives, else the handler's (:func:`name_of`); ``name=""`` is refused.

    schema.ts ``BaseMetadata.name`` is what a client asks for a prompt by and
    shows a resource as: an empty one names nothing, and the handler's name
    in its place would list another name than the one given.
    """
    if name is None:
        return name_of(handler, where)
    if name == "":
        raise SignatureError(
            f"{where}: name= is ''; give a name, or leave name= out for the handler's"
        )
    return name


def refuse_duplicate(where: str, taken: bool) -> None:
    """Names (and URIs) are unique: a second registration would silently replace the first."""
    if taken:
        raise SignatureError(f"{where}: already registered; each name is registered once")


def refuse_shadowed_template(
    where: str, uri_template: str, pattern: TemplatePattern, earlier: Iterable[RegisteredTemplate]
) -> None:
    """Refuse a template that matches exactly the URIs an earlier one matches.

    The first template that matches a URI reads it, so ``note://{id}`` after
    ``note://{day}`` would be listed and never read; the same template twice
    is refused as any name twice is (:func:`refuse_duplicate`).
    """
    for registered in earlier:
        first = registered.template.uri_template
        refuse_duplicate(where, first == uri_template)
        if registered.pattern.same_as(pattern):
            raise SignatureError(
                f"{where}: matches the same URIs as {first!r}, registered first, which "
                "reads them all; it would never be read"
            )


def refuse_extension(identifier: str, settings: object, added: Sequence[str]) -> None:
    """Refuse an extension identifier against the naming rules, one already added, or
    settings holding a value JSON cannot carry.

    ``server/discover`` advertises each extension's settings under its
    identifier, which MUST follow the ``_meta`` key naming rules with a
    mandatory prefix (versioning §Extension Negotiation); a second extension
    of one identifier would replace the first's settings there, and a NaN,
    an Infinity or a ``set`` in them would make every discovery -32603,
    where server/discover says servers **MUST** implement it. A
    ``ValueError``, as for every setting of an extension that cannot be served.
    """
    if not is_extension_id(identifier):
        raise ValueError(
            f"extension identifier {identifier!r}: a prefix of dot-separated labels, a "
            "slash and a name, e.g. 'com.example/my-extension' (basic/index §_meta)"
        )
    if identifier in added:
        raise ValueError(f"extension identifier {identifier!r}: already added")
    problem = json_problem(settings)
    if problem is not None:
        raise ValueError(
            f"extension {identifier!r}: its settings hold a value JSON cannot carry: {problem}"
        )


#: completion §Reference Types: each type of ``ref``, and its key that names what it refers to.
REFERENCE_KEYS: Mapping[str, str] = {"ref/prompt": "name", "ref/resource": "uri"}


def refuse_reference_type(ref_type: str, ref: str) -> None:
    """Refuse a completion for a reference type no ``completion/complete`` can carry,
    or a reference that is no string (no request names it)."""
    if ref_type not in REFERENCE_KEYS:
        raise SignatureError(
            f"completion of {ref_type!r} {ref!r}: the reference type is 'ref/prompt' "
            "or 'ref/resource' (server/utilities/completion §Reference Types)"
        )
    if not isinstance(ref, str):
        raise SignatureError(
            f"completion of {ref_type} {ref!r}: the reference is a prompt's name, or a "
            "resource's URI or URI template, as a str"
        )
