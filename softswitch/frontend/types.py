"""Semantic types of P4_16, as computed by the type checker.

The type checker sets ``Expr.type`` (and ``TypeRef.resolved``) to instances of these
classes; the v1model lowering reads them for widths, signedness and layouts, and the
P4Info generator for bit widths. Types are immutable values (compare by structure),
except named aggregate types which compare by their declaration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class Type:
    """Base class of semantic types."""

    def __str__(self) -> str:  # pragma: no cover - overridden
        return type(self).__name__


@dataclass(frozen=True)
class BitsType(Type):
    """``bit<W>`` (signed False) or ``int<W>`` (signed True)."""

    width: int
    signed: bool = False

    def __str__(self) -> str:
        return f"{'int' if self.signed else 'bit'}<{self.width}>"


@dataclass(frozen=True)
class VarbitType(Type):
    max_width: int

    def __str__(self) -> str:
        return f"varbit<{self.max_width}>"


@dataclass(frozen=True)
class IntType(Type):
    """Arbitrary-precision compile-time ``int``."""

    def __str__(self) -> str:
        return "int"


@dataclass(frozen=True)
class BoolType(Type):
    def __str__(self) -> str:
        return "bool"


@dataclass(frozen=True)
class StringType(Type):
    def __str__(self) -> str:
        return "string"


@dataclass(frozen=True)
class VoidType(Type):
    def __str__(self) -> str:
        return "void"


@dataclass(frozen=True)
class ErrorType(Type):
    """The single ``error`` type; members are the union of all ``error {}`` declarations."""

    def __str__(self) -> str:
        return "error"


@dataclass(frozen=True)
class MatchKindType(Type):
    def __str__(self) -> str:
        return "match_kind"


@dataclass(frozen=True)
class DontCareType(Type):
    """Type of ``_`` before inference, and of unconstrained type arguments."""

    def __str__(self) -> str:
        return "_"


@dataclass(frozen=True)
class StateType(Type):
    """A parser state name used as a value (transition target)."""

    def __str__(self) -> str:
        return "state"


@dataclass(frozen=True, eq=False)
class TypeVar(Type):
    """A type parameter of a generic declaration; ``decl`` is the ``TypeParam`` node."""

    name: str
    decl: Any = None

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class FieldInfo:
    """A field of a struct/header/union: name, type and (for headers) bit offset."""

    name: str
    type: Type
    annotations: tuple[Any, ...] = ()


@dataclass(frozen=True, eq=False)
class StructLikeType(Type):
    """Common base of struct, header and header_union types.

    ``decl`` is the declaration node (None for anonymous/specialized copies); identity of
    the declaration (plus type arguments for generic ones) defines type equality.
    """

    name: str
    fields: tuple[FieldInfo, ...]
    decl: Any = None
    type_args: tuple[Type, ...] = ()

    def field(self, name: str) -> FieldInfo | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, StructLikeType) and type(other) is type(self)
                and other.decl is self.decl and other.name == self.name
                and other.type_args == self.type_args)

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.name, id(self.decl)))

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


@dataclass(frozen=True, eq=False)
class StructType(StructLikeType):
    pass


@dataclass(frozen=True, eq=False)
class HeaderType(StructLikeType):
    """A header: fields are bit<W>, int<W>, varbit, serializable enums, bool (some targets)."""

    def width_bits(self) -> int:
        """Total fixed width in bits (varbit fields count as 0)."""
        total = 0
        for f in self.fields:
            t = f.type
            while isinstance(t, NewType):
                t = t.underlying
            if isinstance(t, BitsType):
                total += t.width
            elif isinstance(t, EnumType) and t.underlying is not None:
                total += t.underlying.width
            elif isinstance(t, BoolType):
                total += 1
        return total


@dataclass(frozen=True, eq=False)
class HeaderUnionType(StructLikeType):
    pass


@dataclass(frozen=True)
class StackType(Type):
    """``H[N]`` — a header stack (or array of unions)."""

    element: Type
    size: int

    def __str__(self) -> str:
        return f"{self.element}[{self.size}]"


@dataclass(frozen=True)
class TupleType(Type):
    elements: tuple[Type, ...]

    def __str__(self) -> str:
        return f"tuple<{', '.join(map(str, self.elements))}>"


@dataclass(frozen=True)
class ListType(Type):
    """The type of a ``{…}`` list expression before it is given a target type."""

    elements: tuple[Type, ...]

    def __str__(self) -> str:
        return f"list<{', '.join(map(str, self.elements))}>"


@dataclass(frozen=True)
class StructExprType(Type):
    """The type of an untyped ``{a = …}`` struct expression before inference."""

    fields: tuple[FieldInfo, ...]


@dataclass(frozen=True, eq=False)
class EnumType(Type):
    """``enum E {…}``; serializable when ``underlying`` is a :class:`BitsType`.
    ``members`` maps member name to its integer value (serializable) or its ordinal."""

    name: str
    members: dict[str, int] = field(default_factory=dict)
    underlying: BitsType | None = None
    decl: Any = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnumType) and other.decl is self.decl and other.name == self.name

    def __hash__(self) -> int:
        return hash(("enum", self.name))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class NewType(Type):
    """``type bit<32> IPv4Address_t;`` — a distinct type with an underlying representation."""

    name: str
    underlying: Type
    decl: Any = None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NewType) and other.decl is self.decl and other.name == self.name

    def __hash__(self) -> int:
        return hash(("newtype", self.name))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ParamInfo:
    name: str
    direction: str  # "in" | "out" | "inout" | ""
    type: Type
    has_default: bool = False
    optional: bool = False
    decl: Any = None


@dataclass(frozen=True, eq=False)
class FunctionType(Type):
    """Type of actions, functions, extern functions and methods (``kind`` tells which)."""

    kind: str  # "action" | "function" | "extern_function" | "method" | "abstract_method"
    params: tuple[ParamInfo, ...]
    return_type: Type
    type_params: tuple[TypeVar, ...] = ()
    decl: Any = None


@dataclass(frozen=True, eq=False)
class ExternType(Type):
    """An extern object type (possibly specialized): methods by name (overloads in a list)."""

    name: str
    decl: Any = None
    type_args: tuple[Type, ...] = ()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ExternType) and other.decl is self.decl
                and other.type_args == self.type_args)

    def __hash__(self) -> int:
        return hash(("extern", self.name))

    def __str__(self) -> str:
        if self.type_args:
            return f"{self.name}<{', '.join(map(str, self.type_args))}>"
        return self.name


@dataclass(frozen=True, eq=False)
class BlockType(Type):
    """Parser, control or package type (``kind`` = "parser"/"control"/"package").

    ``decl`` is the type declaration or the parser/control declaration itself;
    ``params`` are the apply parameters, ``ctor_params`` the constructor parameters.
    """

    kind: str
    name: str
    params: tuple[ParamInfo, ...]
    ctor_params: tuple[ParamInfo, ...] = ()
    decl: Any = None
    type_args: tuple[Type, ...] = ()

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, BlockType) and other.decl is self.decl
                and other.type_args == self.type_args)

    def __hash__(self) -> int:
        return hash((self.kind, self.name))

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, eq=False)
class TableType(Type):
    """A table instance; its ``apply()`` returns the table's apply-result struct."""

    name: str
    decl: Any = None

    def __str__(self) -> str:
        return f"table {self.name}"


@dataclass(frozen=True, eq=False)
class ActionEnumType(Type):
    """The type of ``t.apply().action_run`` — switch labels are the table's action names."""

    table: Any = None

    def __str__(self) -> str:
        return "action_list"


@dataclass(frozen=True)
class ValueSetType(Type):
    element: Type
    size: int


def strip_newtype(t: Type) -> Type:
    """The representation type under any chain of ``type`` declarations."""
    while isinstance(t, NewType):
        t = t.underlying
    return t


def bit_width(t: Type) -> int | None:
    """Width in bits of a fixed-width scalar type (bits, bool, serializable enum, newtype)."""
    t = strip_newtype(t)
    if isinstance(t, BitsType):
        return t.width
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.underlying is not None:
        return t.underlying.width
    return None
