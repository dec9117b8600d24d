"""What every translation step shares: the document's names resolved to P4 paths.

A :class:`Context` is built once per document. It maps header types to P4 type names
and their fields (width, signedness), header instances and stacks to where they live in
the generated program (``hdr.X``, ``meta.X``, ``sm``), actions by id, error codes to
``error`` members, calculations and field lists by name or id. :class:`Ty` and
:class:`P4Text` are the typed P4 expressions the translators pass around.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from softswitch.bmv2json.reader import JsonNode

STD = "standard_metadata"
# P4 keywords and the generated program's own names: a JSON name equal to one is prefixed
KEYWORDS = {"action", "apply", "bit", "bool", "const", "control", "default", "else",
            "entries", "enum", "error", "exit", "extern", "false", "header", "header_union",
            "if", "in", "inout", "int", "key", "list", "match_kind", "out", "package",
            "parser", "priority", "return", "select", "state", "string", "struct", "switch",
            "table", "transition", "true", "tuple", "type", "typedef", "value_set", "varbit",
            "verify", "void", "hdr", "meta", "sm", "pkt", "this", "abstract", "actions"}
CORE_ERRORS = ("NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds",
               "HeaderTooShort", "ParserTimeout", "ParserInvalidArgument")


@dataclass(frozen=True)
class Ty:
    """A P4 type: ``bit``/``int`` of ``width``, ``bool``, ``lit`` (an untyped integer),
    ``error``, ``varbit`` (of maximum ``width``), ``header`` or ``stack``."""

    kind: str
    width: int = 0


BOOL = Ty("bool")
LIT = Ty("lit")


@dataclass(frozen=True)
class P4Text:
    """P4 expression text with its type (``value`` set for integer literals)."""

    code: str
    ty: Ty
    value: int | None = None
    htype: JsonHeaderType | None = None   # headers and stacks
    boolean: str | None = None        # a bit<1> made of this boolean (b2d), for d2b


@dataclass
class JsonHeaderType:
    """A header type: its P4 name and fields as (JSON name, P4 name, Ty)."""

    name: str
    p4name: str
    fields: list[tuple[str, str, Ty]]

    def field(self, raw: str) -> tuple[str, Ty] | None:
        for name, p4name, ty in self.fields:
            if name == raw:
                return p4name, ty
        return None


@dataclass
class Instance:
    """A header instance (or stack) and the P4 path of its storage."""

    name: str
    kind: str            # header | meta | std | stack
    access: str
    htype: JsonHeaderType
    size: int = 0        # stacks


_IDENT = re.compile(r"[^A-Za-z0-9_]")


def ident(raw: str, prefix: str = "") -> str:
    """A P4 identifier for ``raw`` (characters outside [A-Za-z0-9_] become ``_``)."""
    out = _IDENT.sub("_", raw)
    if not out or out[0].isdigit() or out.startswith("__"):
        out = "x" + out
    return prefix + out


@dataclass
class Context:
    """The resolved names of one BMv2 JSON document."""

    root: JsonNode
    htypes: dict[str, JsonHeaderType] = field(default_factory=dict)
    instances: dict[str, Instance] = field(default_factory=dict)
    actions: dict[int, JsonNode] = field(default_factory=dict)
    errors: dict[int, str] = field(default_factory=dict)
    calculations: dict[str, JsonNode] = field(default_factory=dict)
    field_lists: dict[int, JsonNode] = field(default_factory=dict)
    learn_lists: dict[int, JsonNode] = field(default_factory=dict)
    externs: dict[str, tuple[str, JsonNode]] = field(default_factory=dict)  # name -> (kind, node)
    unions: dict[str, tuple[str, list[tuple[str, JsonHeaderType]]]] = field(default_factory=dict)
    # union instance name -> (P4 path, union type)
    union_instances: dict[str, tuple[str, str]] = field(default_factory=dict)
    union_stacks: dict[str, tuple[str, int]] = field(default_factory=dict)  # path -> type, size
    alias: dict[int, int] = field(default_factory=dict)  # action id -> the id declared
    toplevel: dict[str, tuple[int, object, list[str]]] = field(default_factory=dict)
    absolute: set[str] = field(default_factory=set)  # action names declared as @name(".X")

    def instance(self, node: JsonNode, name: object) -> Instance:
        inst = self.instances.get(name) if isinstance(name, str) else None
        if inst is None:
            raise node.error(f"unknown header instance {name!r}")
        return inst

    def error_name(self, node: JsonNode, value: int) -> str:
        if value not in self.errors:
            raise node.error(f"unknown error code {value}")
        return self.errors[value]

    def action(self, node: JsonNode, action_id: object) -> JsonNode:
        if not isinstance(action_id, int) or action_id not in self.actions:
            raise node.error(f"unknown action id {action_id!r}")
        return self.actions[action_id]

    def extern(self, node: JsonNode, name: object, kind: str) -> str:
        """The P4 identifier of extern instance ``name`` of ``kind`` (register, …)."""
        got = self.externs.get(name) if isinstance(name, str) else None
        if got is None or got[0] != kind:
            raise node.error(f"unknown {kind} {name!r}")
        return ident(name, "x_")
