"""JSON Schemas of tools: compiled once, at registration; checked on every call.

A tool's ``inputSchema`` and ``outputSchema`` are JSON Schemas, 2020-12
unless their ``$schema`` names another dialect. :meth:`CompiledSchema.compile`
turns one into a validator when the tool is registered, and refuses a
schema that is not valid in its dialect, names a dialect presa does not
support, or holds a ``$ref`` that does not resolve inside the schema:
presa never fetches a ``$ref`` from the network (or a file), so such a
reference would otherwise be silently permissive.
:meth:`CompiledSchema.violations` then checks a value against it and says,
for each failure, where in the value (a JSON Pointer) and which rule of the
schema (the schema path) it broke.

Supported dialects: 2020-12 (the default), 2019-09, draft-07, draft-06 and
draft-04, the ones the validator (``jsonschema-rs``) implements; one per schema,
so an embedded schema naming another dialect than its root's is refused.

Spec: 2026-07-28 basic/index §JSON Schema Usage (Schema Dialect,
Implementation Requirements, Schema Validation, ``$ref`` Resolution);
server/tools §Tool (``inputSchema``, ``outputSchema``), §Output Schema.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import attrs
import jsonschema_rs

from presa_trio.wire.models import JSONObject

#: At most this many failures are reported for one value; the rest are left out.
MAX_VIOLATIONS = 10
#: The failure reported when the value fails, nested too deep for the validator to say where.
TOO_DEEP = "fails the schema, nested too deeply to say where"


class SchemaError(ValueError):
    """A schema presa cannot validate with: a mistake of the server's developer."""


def pointer(path: Sequence[str | int]) -> str:
    """A path of keys and indices as a JSON Pointer (RFC 6901); ``""`` is the root."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


#: The dialect of a schema that names none (basic/index §Schema Dialect).
DEFAULT_DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: Keywords whose value is an object of subschemas, by name (2020-12 Core §10.2.2,
#: §8.2.4; ``definitions`` and ``dependencies`` of the drafts before it).
SUBSCHEMA_MAPS = frozenset(
    {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
)
#: Keywords whose value is a subschema, or an array of them (2020-12 Core §10,
#: §11; Validation §8.2.4; ``items`` and ``additionalItems`` of the drafts before it).
SUBSCHEMA_KEYWORDS = frozenset(
    {
        "additionalProperties",
        "propertyNames",
        "items",
        "additionalItems",
        "prefixItems",
        "contains",
        "unevaluatedItems",
        "unevaluatedProperties",
        "not",
        "if",
        "then",
        "else",
        "allOf",
        "anyOf",
        "oneOf",
        "contentSchema",
    }
)


def dialect_of(declared: Any) -> Any:
    """A ``$schema`` value as compared: with or without its empty fragment, one dialect."""
    return declared.removesuffix("#") if isinstance(declared, str) else declared


def other_dialects(schema: JSONObject) -> Iterator[Any]:
    """Each ``$schema`` below the root of ``schema`` that names another dialect than the
    root's (its own ``$schema``, else :data:`DEFAULT_DIALECT`).

    Only subschemas are searched, through the keywords that hold them: a property
    named ``$schema`` or a ``$schema`` inside a ``const`` is no declaration.
    """
    root = dialect_of(schema.get("$schema", DEFAULT_DIALECT))
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if not isinstance(node, dict):
            continue
        if node is not schema and "$schema" in node and dialect_of(node["$schema"]) != root:
            yield node["$schema"]
        for key, value in node.items():
            if key in SUBSCHEMA_MAPS and isinstance(value, dict):
                pending.extend(value.values())
            elif key in SUBSCHEMA_KEYWORDS:
                pending.extend(value if isinstance(value, list) else [value])


def refuse_retrieval(uri: str) -> Any:
    """The validator's retriever: no ``$ref`` is ever fetched (basic §``$ref`` Resolution)."""
    raise ValueError(f"presa does not fetch referenced schemas ({uri})")


@attrs.frozen
class Violation:
    """One failure: where in the value, which rule of the schema, and what is wrong."""

    # JSON Pointer into the checked value ("" for the value itself).
    at: str
    # JSON Pointer into the schema, ending with the keyword that failed;
    # "" when no rule of the schema failed (a lone surrogate).
    rule: str
    message: str

    def describe(self) -> str:
        rule = f" (rule {self.rule})" if self.rule else ""
        return f"{self.at or '(root)'}: {self.message}{rule}"


def encodes(text: str) -> bool:
    """Whether ``text`` is valid Unicode, i.e. has a UTF-8 form."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def has_lone_surrogate(value: Any) -> bool:
    """Whether any string or key in ``value`` holds a lone surrogate (the fast check).

    ``"\\ud800"`` is a string escape JSON parsers accept, but it is no
    Unicode character: such a value is not valid input (RFC 8259 §8.2).
    """
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if not (item.isascii() or encodes(item)):
                return True
        elif isinstance(item, dict):
            pending.extend(item)
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def lone_surrogates(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[Violation]:
    """Where in ``value`` the lone surrogates are: one violation per string or key."""
    if isinstance(value, str):
        if not (value.isascii() or encodes(value)):
            yield Violation(pointer(path), "", "string holds a lone surrogate, not valid Unicode")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from lone_surrogates(key, path)
            yield from lone_surrogates(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from lone_surrogates(item, (*path, index))


@attrs.frozen(eq=False)
class CompiledSchema:
    """A schema and its validator, built once."""

    schema: JSONObject
    _validator: jsonschema_rs.Validator = attrs.field(repr=False)

    @classmethod
    def compile(cls, schema: Any, *, role: str) -> CompiledSchema:
        """Build the validator for ``schema``, else :class:`SchemaError` naming ``role``."""
        if not isinstance(schema, dict):
            raise SchemaError(f"{role} must be a JSON Schema object, not {type(schema).__name__}")
        try:
            validator = jsonschema_rs.validator_for(schema, retriever=refuse_retrieval)
        except (jsonschema_rs.ValidationError, ValueError) as exc:
            reason = str(exc).split("\n", 1)[0]
            raise SchemaError(f"{role} is not a usable JSON Schema: {reason}") from exc
        # The validator checks every subschema by the root's dialect: one that
        # declares another would not be validated by its own (basic/index §JSON
        # Schema Usage, Implementation Requirements).
        for declared in other_dialects(schema):
            raise SchemaError(
                f"{role} is not a usable JSON Schema: a subschema declares the dialect "
                f"{declared!r}; presa validates a schema in one dialect, its root's"
            )
        return cls(schema, validator)

    def violations(self, value: Any) -> list[Violation]:
        """Every way ``value`` fails the schema, at most :data:`MAX_VIOLATIONS`; ``[]`` if none.

        A value holding a lone surrogate fails whatever the schema says: it
        is not valid Unicode, and the validator could not read it. A valid
        value costs one ``is_valid``; only an invalid one is explained, and
        one whose failing part is nested deeper than the validator copies
        into an error is explained by one failure at its root
        (:data:`TOO_DEEP`), so the call still gets its ``isError`` result.
        """
        if has_lone_surrogate(value):
            return list(lone_surrogates(value))[:MAX_VIOLATIONS]
        if self._validator.is_valid(value):
            return []
        found = []
        try:
            for error in self._validator.iter_errors(value):
                at, rule = pointer(error.instance_path), pointer(error.schema_path)
                found.append(Violation(at, rule, error.message))
                if len(found) == MAX_VIOLATIONS:
                    break
        except ValueError:
            # Each error carries a copy of the failing part of the value, and
            # the validator copies no more than its recursion limit deep: the
            # value is still invalid, only where is beyond what it can say.
            found.append(Violation("", "", TOO_DEEP))
        return found
