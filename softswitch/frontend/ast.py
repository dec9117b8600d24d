"""The P4_16 syntax tree: what the parser builds and every later pass reads.

This module is the contract between the front-end passes (parser, name resolution,
type checking, constant evaluation) and the back ends (v1model lowering, P4Info).
Nodes are plain dataclasses. Passes *annotate* nodes rather than rebuilding them:

* ``Expr.type`` — the expression's semantic type (:mod:`softswitch.frontend.types`),
  set by the type checker; the lowering relies on it for widths and signedness.
* ``Expr.const`` — the compile-time value when the expression is constant
  (``int``/``bool``/``str``/…), else :data:`NOT_CONST`.
* ``PathExpr.decl`` — the declaration the name resolves to.
* ``Call.resolved`` — what a call invokes (set by the type checker, see ``types``).

Every node has ``loc``: where it starts in the user's own source file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from softswitch.diagnostics import SourceLoc


class _NotConst:
    """Marker for 'not a compile-time constant' (``None`` is not usable: it is a value)."""

    _instance: _NotConst | None = None

    def __new__(cls) -> _NotConst:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_CONST"

    def __bool__(self) -> bool:
        return False


NOT_CONST = _NotConst()


@dataclass(kw_only=True, eq=False)
class Node:
    """Base of all syntax nodes. Identity equality: two nodes are never 'equal' by value."""

    loc: SourceLoc | None = None


# ---------------------------------------------------------------------------
# Annotations
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Annotation(Node):
    """``@name``, ``@name(expr, …)``, ``@name[k=v, …]`` or an unstructured ``@name(tokens)``.

    ``exprs`` holds the parsed expression list when the body parses as one (``@name("x")``,
    ``@id(3)``, ``@priority(1)``); ``kv`` holds ``[k=v]`` pairs; ``body`` is always the raw
    token text of the body (for pragmas and unknown annotations).
    """

    name: str
    body: str = ""
    exprs: list[Expr] | None = None
    kv: dict[str, Expr] | None = None
    structured: bool = False


# ---------------------------------------------------------------------------
# Types as written in the source
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class TypeRef(Node):
    """A type as written. Resolved to a semantic type by the type checker (``.resolved``)."""

    def __post_init__(self) -> None:
        self.resolved: Any = None


@dataclass(eq=False)
class BitTypeRef(TypeRef):
    """``bit<W>``, ``int<W>``, plain ``bit`` (W=1); ``width`` is an expression."""

    width: Expr | None
    signed: bool = False


@dataclass(eq=False)
class VarbitTypeRef(TypeRef):
    width: Expr


@dataclass(eq=False)
class IntTypeRef(TypeRef):
    """The arbitrary-precision ``int`` type."""


@dataclass(eq=False)
class BoolTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class StringTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class VoidTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class ErrorTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class MatchKindTypeRef(TypeRef):
    pass


@dataclass(eq=False)
class DontCareTypeRef(TypeRef):
    """``_`` used as a type argument (inferred)."""


@dataclass(eq=False)
class NamedTypeRef(TypeRef):
    """A type name, possibly specialized: ``H``, ``.H`` (top-level), ``Register<bit<8>, _>``."""

    name: str
    type_args: list[TypeRef] = field(default_factory=list)
    top_level: bool = False


@dataclass(eq=False)
class StackTypeRef(TypeRef):
    """``T[size]`` — a header stack (or array of header unions)."""

    element: TypeRef
    size: Expr


@dataclass(eq=False)
class TupleTypeRef(TypeRef):
    elements: list[TypeRef]


@dataclass(eq=False)
class ListTypeRef(TypeRef):
    """``list<T>`` (P4_16 1.2.4)."""

    element: TypeRef


# ---------------------------------------------------------------------------
# Expressions
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Expr(Node):
    def __post_init__(self) -> None:
        self.type: Any = None
        self.const: Any = NOT_CONST


@dataclass(eq=False)
class IntLiteral(Expr):
    """``5``, ``0x1F``, ``8w5``, ``4s-3`` … ``width`` is None for an infinite-precision int."""

    value: int
    width: int | None = None
    signed: bool = False
    text: str = ""


@dataclass(eq=False)
class BoolLiteral(Expr):
    value: bool


@dataclass(eq=False)
class StringLiteral(Expr):
    value: str


@dataclass(eq=False)
class PathExpr(Expr):
    """A name: ``x``, or ``.x`` for the top-level declaration. ``decl`` set by resolution."""

    name: str
    top_level: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        self.decl: Any = None


@dataclass(eq=False)
class TypeNameExpr(Expr):
    """A type used where an expression stands: ``bit<8>`` / ``H`` in ``H.minSizeInBits()``,
    or a constructor call's callee ``Register<bit<8>>(…)`` when the parser can tell."""

    type_ref: TypeRef


@dataclass(eq=False)
class ThisExpr(Expr):
    pass


@dataclass(eq=False)
class DontCareExpr(Expr):
    """``_``: a don't-care argument, keyset entry or out-argument."""


@dataclass(eq=False)
class DefaultExpr(Expr):
    """``default`` as a keyset / switch label / select case."""


@dataclass(eq=False)
class Member(Expr):
    """``expr.name``: field, method, enum member (``E.A``), ``error.X``, ``stack.next``."""

    expr: Expr
    name: str


@dataclass(eq=False)
class Index(Expr):
    """``expr[index]``: header stack / tuple element."""

    expr: Expr
    index: Expr


@dataclass(eq=False)
class Slice(Expr):
    """``expr[hi:lo]`` (bit slice; hi and lo are compile-time constants)."""

    expr: Expr
    hi: Expr
    lo: Expr


@dataclass(eq=False)
class Unary(Expr):
    """``op`` in ``!``, ``~``, ``-``, ``+``."""

    op: str
    expr: Expr


@dataclass(eq=False)
class Binary(Expr):
    """Binary operators, spelled as in P4: ``* / % + - |+| |-| << >> <= >= < > == != & ^ |
    && || ++ &&& ..``. (``&&&`` and ``..`` only appear in keysets / entries.)"""

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Ternary(Expr):
    cond: Expr
    then: Expr
    otherwise: Expr


@dataclass(eq=False)
class Cast(Expr):
    to: TypeRef
    expr: Expr


@dataclass(eq=False)
class Argument(Node):
    """A call argument: positional (``name`` None) or named ``name = value``."""

    value: Expr
    name: str | None = None


@dataclass(eq=False)
class Call(Expr):
    """``target<type_args>(args)``. Method calls have a :class:`Member` target; constructor
    calls (``Register<bit<8>>(16)``, ``MyIngress()``) have a type as target.
    ``resolved`` is set by the type checker."""

    target: Expr
    args: list[Argument] = field(default_factory=list)
    type_args: list[TypeRef] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.resolved: Any = None


@dataclass(eq=False)
class ListExpr(Expr):
    """``{a, b, c}`` — a list/tuple/struct initializer by position (also keyset tuples)."""

    items: list[Expr]


@dataclass(eq=False)
class StructExpr(Expr):
    """``{a = 1, b = 2}`` or ``(T){…}``-less typed form ``T {a = 1}``; ``type_ref`` optional."""

    fields: list[tuple[str, Expr]]
    type_ref: TypeRef | None = None


@dataclass(eq=False)
class InvalidHeaderExpr(Expr):
    """``{#}`` — an invalid header / header union value."""


@dataclass(eq=False)
class DotsExpr(Expr):
    """``...`` (P4_16 1.2.4 default initializers): the remaining fields/elements take
    their default values. It is the last item of a :class:`ListExpr` (``{1, ...}``), the
    last ``("...", DotsExpr)`` pair of a :class:`StructExpr` (``{a = 1, ...}``, p4c's
    NamedDots), or a whole expression (``= ...``, a select key)."""


# ---------------------------------------------------------------------------
# Statements
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Stmt(Node):
    pass


@dataclass(eq=False)
class BlockStmt(Stmt):
    stmts: list[Stmt] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class AssignStmt(Stmt):
    target: Expr
    value: Expr


@dataclass(eq=False)
class CallStmt(Stmt):
    """A method/function/action call or table/sub-block ``apply`` used as a statement."""

    call: Call


@dataclass(eq=False)
class IfStmt(Stmt):
    cond: Expr
    then: Stmt
    otherwise: Stmt | None = None


@dataclass(eq=False)
class SwitchCase(Node):
    """One ``label: body`` or fall-through ``label:`` (body None). ``labels`` hold the
    case expressions (action names as :class:`PathExpr`, values, or :class:`DefaultExpr`)."""

    label: Expr
    body: BlockStmt | None


@dataclass(eq=False)
class SwitchStmt(Stmt):
    expr: Expr
    cases: list[SwitchCase]


@dataclass(eq=False)
class ExitStmt(Stmt):
    pass


@dataclass(eq=False)
class ReturnStmt(Stmt):
    value: Expr | None = None


@dataclass(eq=False)
class EmptyStmt(Stmt):
    pass


@dataclass(eq=False)
class BreakStmt(Stmt):
    pass


@dataclass(eq=False)
class ContinueStmt(Stmt):
    pass


@dataclass(eq=False)
class ForStmt(Stmt):
    """C-style ``for (init; cond; update) body`` (P4_16 1.2.4)."""

    init: list[Stmt]
    cond: Expr | None
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class ForInStmt(Stmt):
    """``for (T x in collection) body`` where collection may be a ``lo .. hi`` range."""

    var: VarDecl
    collection: Expr
    body: Stmt


# ---------------------------------------------------------------------------
# Declarations
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class Decl(Stmt):
    """A named declaration. Declarations also appear in statement lists (local variables)."""

    name: str
    annotations: list[Annotation] = field(default_factory=list, kw_only=True)


@dataclass(eq=False)
class TypeParam(Decl):
    """A type variable of a generic declaration (``T`` in ``extern E<T>``)."""


@dataclass(eq=False)
class Param(Decl):
    """A parameter; ``direction`` is ``in``/``out``/``inout`` or ``""`` (directionless)."""

    type_ref: TypeRef
    direction: str = ""
    default: Expr | None = None


@dataclass(eq=False)
class VarDecl(Decl):
    type_ref: TypeRef
    init: Expr | None = None


@dataclass(eq=False)
class ConstDecl(Decl):
    type_ref: TypeRef
    value: Expr


@dataclass(eq=False)
class TypedefDecl(Decl):
    """``typedef T name;`` (``newtype`` False) or ``type T name;`` (``newtype`` True)."""

    type_ref: TypeRef
    newtype: bool = False


@dataclass(eq=False)
class FieldDecl(Decl):
    type_ref: TypeRef


@dataclass(eq=False)
class HeaderDecl(Decl):
    fields: list[FieldDecl]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class HeaderUnionDecl(Decl):
    fields: list[FieldDecl]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class StructDecl(Decl):
    fields: list[FieldDecl]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class EnumMember(Decl):
    """A member of an enum; ``value`` is set for serializable enums."""

    value: Expr | None = None


@dataclass(eq=False)
class EnumDecl(Decl):
    """``enum E {A, B}`` or serializable ``enum bit<8> E {A = 1}`` (``underlying`` set)."""

    members: list[EnumMember]
    underlying: TypeRef | None = None


@dataclass(eq=False)
class ErrorDecl(Node):
    """``error { A, B }`` — error declarations from all files merge into one type."""

    members: list[EnumMember]


@dataclass(eq=False)
class MatchKindDecl(Node):
    members: list[EnumMember]


@dataclass(eq=False)
class MethodDecl(Decl):
    """A method prototype inside an extern, or an abstract method; a constructor has
    ``return_type`` None and ``name`` equal to the extern's name."""

    return_type: TypeRef | None
    params: list[Param]
    type_params: list[TypeParam] = field(default_factory=list)
    abstract: bool = False


@dataclass(eq=False)
class ExternDecl(Decl):
    """``extern E<T> { E(…); void m(…); abstract T f(…); }``."""

    methods: list[MethodDecl]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class ExternFunctionDecl(Decl):
    """``extern R f<T>(…);``."""

    return_type: TypeRef
    params: list[Param]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class FunctionDecl(Decl):
    return_type: TypeRef
    params: list[Param]
    body: BlockStmt
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class ActionDecl(Decl):
    params: list[Param]
    body: BlockStmt


@dataclass(eq=False)
class ParserTypeDecl(Decl):
    """``parser P<T>(…);`` — a parser type (prototype)."""

    params: list[Param]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class ControlTypeDecl(Decl):
    params: list[Param]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class PackageTypeDecl(Decl):
    params: list[Param]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class SelectCase(Node):
    """``keyset : state;`` — ``keyset`` is an expression (``ListExpr`` for tuples,
    ``Binary('&&&')``, ``Binary('..')``, ``DefaultExpr``, ``DontCareExpr``, value-set
    names)."""

    keyset: Expr
    state: str

    def __post_init__(self) -> None:
        self.state_decl: Any = None  # the ParserState named, set by the type checker


@dataclass(eq=False)
class SelectExpr(Expr):
    """``select(keys) { cases }`` — the transition expression of a parser state."""

    keys: list[Expr]
    cases: list[SelectCase]


@dataclass(eq=False)
class ParserState(Decl):
    """A parser state; ``transition`` is a :class:`PathExpr` (state name), a
    :class:`SelectExpr`, or None (no transition statement: p4c implies reject)."""

    stmts: list[Stmt]
    transition: Expr | None


@dataclass(eq=False)
class ParserDecl(Decl):
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    states: list[ParserState]
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class ValueSetDecl(Decl):
    """``value_set<T>(size) name;``."""

    element: TypeRef
    size: Expr


@dataclass(eq=False)
class ControlDecl(Decl):
    params: list[Param]
    ctor_params: list[Param]
    locals: list[Decl]
    apply: BlockStmt
    type_params: list[TypeParam] = field(default_factory=list)


@dataclass(eq=False)
class KeyElement(Node):
    """``expr : match_kind @annotations;`` in a table key."""

    expr: Expr
    match_kind: str
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class ActionRef(Node):
    """An entry of a table's ``actions`` list (or a default/entry action): name + args."""

    name: Expr
    args: list[Argument] = field(default_factory=list)
    annotations: list[Annotation] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.call: Any = None  # the bound action call (a CallInfo), set by the type checker


@dataclass(eq=False)
class TableEntry(Node):
    """One entry of ``entries = { … }``: keyset, action, optional ``priority = N``."""

    keys: Expr
    action: ActionRef
    priority: Expr | None = None
    annotations: list[Annotation] = field(default_factory=list)
    is_const: bool = False

    def __post_init__(self) -> None:
        # the priority the entry gets (P4_16 "Entry priorities"; None where the table's
        # entries take none), set by the type checker
        self.priority_value: int | None = None
        # one keyset expression per table key (``_``/``default``/``...`` spread out)
        self.key_items: list[Expr] = []


@dataclass(eq=False)
class TableProperty(Node):
    """A table property. Known ones are also exposed on :class:`TableDecl`; ``value`` is
    the parsed form: list[KeyElement] (key), list[ActionRef] (actions), ActionRef
    (default_action), list[TableEntry] (entries), Expr (others)."""

    name: str
    value: Any
    is_const: bool = False
    annotations: list[Annotation] = field(default_factory=list)


@dataclass(eq=False)
class TableDecl(Decl):
    properties: list[TableProperty]

    def prop(self, name: str) -> TableProperty | None:
        for p in self.properties:
            if p.name == name:
                return p
        return None


@dataclass(eq=False)
class InstanceDecl(Decl):
    """``T<args>(ctor args) name [= { abstract method impls }];``."""

    type_ref: TypeRef
    args: list[Argument]
    initializer: list[Decl] | None = None

    def __post_init__(self) -> None:
        self.instance_type: Any = None  # the instantiated type, set by the type checker
        self.ctor: Any = None           # the constructor call (a CallInfo)


@dataclass(eq=False)
class Program(Node):
    """All top-level declarations in source order (``ErrorDecl``/``MatchKindDecl`` included)."""

    decls: list[Node]


# ---------------------------------------------------------------------------
# Reading the tree: the one annotation lookup and the one walker every pass uses
# ---------------------------------------------------------------------------


def annotation(node: Any, name: str) -> Annotation | None:
    """The first ``@name`` annotation of ``node`` (any node with ``annotations``: a
    declaration, key element, table property, action reference …), else None."""
    for a in getattr(node, "annotations", None) or ():
        if a.name == name:
            return a
    return None


def children(node: Any) -> Iterator[Node]:
    """The direct sub-nodes of ``node`` in source order, through its syntax fields
    (lists, tuples and dicts included; not what passes attach, such as ``decl``)."""
    if not isinstance(node, Node):
        return
    for f in fields(node):
        if f.name != "loc":
            yield from _nodes(getattr(node, f.name))


def _nodes(v: Any) -> Iterator[Node]:
    if isinstance(v, Node):
        yield v
    elif isinstance(v, (list, tuple)):
        for x in v:
            yield from _nodes(x)
    elif isinstance(v, dict):
        for x in v.values():
            yield from _nodes(x)


def walk(node: Any) -> Iterator[Node]:
    """Every node under ``node`` (``node`` first), pre-order, in source order."""
    stack = [node] if isinstance(node, Node) else list(_nodes(node))[::-1]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(list(children(n))))
