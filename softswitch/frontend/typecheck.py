"""Expression typing: name resolution, P4 typing rules and constant folding.

:class:`ExprChecker` annotates every expression it visits: ``PathExpr.decl``,
``Expr.type``, ``Expr.const`` (through :mod:`consteval`) and ``Call.resolved`` (a
:class:`softswitch.frontend.calls.CallInfo`). Untyped integer literals are typed from
their context the way p4c does: :meth:`ExprChecker.coerce` retypes an ``int``-typed
(sub)expression to the concrete type it meets (assignment target, other operand,
parameter, key, …). Statements and declarations are in :mod:`declcheck`.
"""

from __future__ import annotations

from collections.abc import Callable

from softswitch.diagnostics import DiagnosticSink, P4Error
from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.callcheck import check_call
from softswitch.frontend.checkbase import Cascade, base, describe, fail
from softswitch.frontend.context import Ctx
from softswitch.frontend.runtime_division import (
    division_computable,
    strength_reduce,
    zero_divisor,
)
from softswitch.frontend.scopes import Scope, is_type_decl
from softswitch.frontend.typeresolve import TypeResolver
from softswitch.frontend.unify import Bindings, compatible, contains_var, subst, unify

ARITH = ("+", "-", "*", "/", "%", "|+|", "|-|")
BITWISE = ("&", "|", "^")
COMPARE = ("<", "<=", ">", ">=")


def is_numeric(t: T.Type) -> bool:
    b = base(t)
    return isinstance(b, (T.BitsType, T.IntType)) or (
        isinstance(b, T.EnumType) and b.underlying is not None)


class ExprChecker:
    """Types expressions; subclasses add statements and declarations."""

    def __init__(self, sink: DiagnosticSink) -> None:
        self.sink = sink
        self.types = TypeResolver(self.const_int)
        self.error_members: dict[str, int] = {}
        self.match_kinds: set[str] = set()
        self.table_results: dict[ast.Node, T.StructType] = {}
        #: ``/`` and ``%`` left for run time: refused after folding unless it proves
        #: them dead or reducible (:mod:`softswitch.frontend.runtime_division`)
        self.runtime_divisions: list[ast.Binary] = []

    # ------------------------------------------------------------------ helpers
    def guard(self, fn: Callable[[], object]) -> None:
        """Run one check; a user error is recorded and the walk continues."""
        try:
            fn()
        except P4Error as err:
            if isinstance(err, Cascade) and self.sink.errors:
                return
            for diag in err.diagnostics:
                if diag.severity == "error":
                    self.sink.error(diag.message, diag.loc)
                else:
                    self.sink.diagnostics.append(diag)

    def const_int(self, e: ast.Expr, scope: Scope) -> int:
        """Evaluate a compile-time integer (widths, sizes, indexes)."""
        self.expr(e, Ctx(scope))
        v = e.const
        if isinstance(v, bool) or not isinstance(v, int):
            raise fail(f"{describe(e)}: expected an integer value", e)
        return v

    def resolve_type(self, ref: ast.TypeRef, ctx: Ctx) -> T.Type:
        return self.types.resolve(ref, ctx.scope)

    def value_type(self, decl: ast.Node, node: ast.Node) -> T.Type:
        """The type of a value declaration used as an expression."""
        if isinstance(decl, (ast.Param, ast.VarDecl, ast.ConstDecl)):
            t = decl.type_ref.resolved
            return t if t is not None else T.DontCareType()
        if isinstance(decl, ast.InstanceDecl):
            t = getattr(decl, "instance_type", None)
            return t if t is not None else T.DontCareType()
        if isinstance(decl, ast.TableDecl):
            return T.TableType(decl.name, decl)
        if isinstance(decl, ast.ParserState):
            return T.StateType()
        if isinstance(decl, ast.ValueSetDecl):
            t = decl.element.resolved
            return T.ValueSetType(t if t is not None else T.DontCareType(), 0)
        if isinstance(decl, ast.EnumMember):
            return T.MatchKindType()
        if isinstance(decl, (ast.ActionDecl, ast.FunctionDecl, ast.ExternFunctionDecl)):
            return T.FunctionType("action" if isinstance(decl, ast.ActionDecl) else "function",
                                  (), T.VoidType(), decl=decl)
        raise fail(f"{getattr(decl, 'name', '?')}: Type cannot be used here, expecting an "
                   "expression.", node)

    # ------------------------------------------------------------------ expressions
    def expr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        """Type ``e`` (and its sub-expressions); returns and stores ``e.type``."""
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise fail(f"{type(e).__name__}: unexpected expression here", e)
        t = method(e, ctx)
        e.type = t
        if e.const is ast.NOT_CONST and self._foldable(e):
            consteval.evaluate(e)
        return t

    def _foldable(self, e: ast.Expr) -> bool:
        return isinstance(e, (ast.Unary, ast.Binary, ast.Ternary, ast.Cast, ast.Slice,
                              ast.PathExpr, ast.ListExpr, ast.StructExpr))

    def _e_IntLiteral(self, e: ast.IntLiteral, ctx: Ctx) -> T.Type:
        if e.width is None:
            e.const = e.value
            return T.IntType()
        if e.width > 2048:
            raise fail(f"{e.width}: this implementation does not support bitstrings this large",
                       e)
        if e.width == 0 and e.signed:   # int<0> has no sign bit (spec 7.1.6.2)
            raise fail("Width of signed type cannot be zero", e)
        t = T.BitsType(e.width, e.signed)
        e.const = consteval.wrap(e.value, t)
        return t

    def _e_BoolLiteral(self, e: ast.BoolLiteral, ctx: Ctx) -> T.Type:
        e.const = e.value
        return T.BoolType()

    def _e_StringLiteral(self, e: ast.StringLiteral, ctx: Ctx) -> T.Type:
        e.const = e.value
        return T.StringType()

    def _e_DontCareExpr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        return T.DontCareType()

    def _e_DefaultExpr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        return T.DontCareType()

    def _e_InvalidHeaderExpr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        return T.DontCareType()

    def _e_DotsExpr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        return T.DontCareType()

    def _e_ThisExpr(self, e: ast.Expr, ctx: Ctx) -> T.Type:
        if ctx.this_type is None:
            raise fail("'this' can only be used in the definition of an abstract method", e)
        return ctx.this_type

    def _e_TypeNameExpr(self, e: ast.TypeNameExpr, ctx: Ctx) -> T.Type:
        return self.resolve_type(e.type_ref, ctx)

    def _e_PathExpr(self, e: ast.PathExpr, ctx: Ctx) -> T.Type:
        scope = ctx.scope.top() if e.top_level else ctx.scope
        decl = scope.lookup(e.name, want_type=False)
        if decl is None:
            decl = scope.lookup(e.name, want_type=True)
        if decl is None:
            if e.name == "error":
                return T.ErrorType()
            raise fail(f"{describe(e)}: declaration not found", e)
        e.decl = decl
        if is_type_decl(decl):
            return self.types.decl_type(decl, [], e)
        t = self.value_type(decl, e)
        if isinstance(decl, ast.ConstDecl):
            e.const = decl.value.const
        elif isinstance(decl, ast.EnumMember) and decl.name in self.match_kinds:
            e.const = consteval.MemberConst("match_kind", decl.name,
                                            sorted(self.match_kinds).index(decl.name))
        if ctx.table is not None and decl is ctx.table:
            raise fail(f"{e.name}: Cannot refer to the containing table {e.name}", e)
        return t

    def names_type(self, e: ast.Expr) -> bool:
        """Whether ``e`` names a type rather than a value (``E`` in ``E.A``)."""
        if isinstance(e, ast.TypeNameExpr):
            return True
        return isinstance(e, ast.PathExpr) and (is_type_decl(e.decl) or (
            e.decl is None and e.name == "error"))

    # ------------------------------------------------------------------ members
    def _e_Member(self, e: ast.Member, ctx: Ctx) -> T.Type:
        obj_t = self.expr(e.expr, ctx.with_(switch_expr=False))
        if self.names_type(e.expr):
            return self._type_member(e, obj_t)
        t = base(obj_t)
        if isinstance(t, T.StructLikeType):
            return self._struct_member(e, t, ctx)
        if isinstance(t, T.StackType):
            return self._stack_member(e, t, ctx)
        if isinstance(t, T.ExternType) or isinstance(t, (T.TableType, T.BlockType)):
            raise fail(f"{describe(e)}: method must be called", e)
        if isinstance(t, T.DontCareType) and isinstance(e.expr, ast.PathExpr):
            raise Cascade(f"{describe(e)}: value has no usable type", e.loc)
        raise fail(f"Cannot extract field {e.name} from {describe(e.expr)} which has type "
                   f"{obj_t}", e)

    def _type_member(self, e: ast.Member, t: T.Type) -> T.Type:
        if isinstance(t, T.ErrorType):
            if e.name not in self.error_members:
                raise fail(f"error.{e.name}: declaration not found", e)
            e.const = consteval.MemberConst("error", e.name, self.error_members[e.name])
            return t
        if isinstance(t, T.EnumType):
            if e.name not in t.members:
                raise fail(f"{describe(e)}: Invalid enum tag", e)
            e.const = consteval.member_const(t, e.name)
            return t
        raise fail(f"Cannot extract field {e.name} from {describe(e.expr)} which has type "
                   f"Type({t})", e)

    def _struct_member(self, e: ast.Member, t: T.StructLikeType, ctx: Ctx) -> T.Type:
        f = t.field(e.name)
        if f is None:
            kind = {T.HeaderType: "header", T.HeaderUnionType: "header_union"}.get(
                type(t), "struct")
            raise fail(f"Field {e.name} is not a member of structure {kind} {t.name}", e)
        if isinstance(f.type, T.ActionEnumType) and not ctx.switch_expr:
            raise fail(f"{describe(e)}: only allowed in switch statements", e)
        return f.type

    def _stack_member(self, e: ast.Member, t: T.StackType, ctx: Ctx) -> T.Type:
        if e.name in ("next", "last"):
            if ctx.block != "parser":
                raise fail(f"{describe(e)}: 'last', and 'next' for stacks can only be used in a "
                           "parser", e)
            return t.element
        if e.name == "lastIndex":
            if ctx.block != "parser":
                raise fail(f"{describe(e)}: 'lastIndex' for stacks can only be used in a parser",
                           e)
            return T.BitsType(32)
        if e.name == "size":
            e.const = t.size
            return T.BitsType(32)
        raise fail(f"Cannot extract field {e.name} from {describe(e.expr)} which has type {t}",
                   e)

    # ------------------------------------------------------------------ index / slice
    def _e_Index(self, e: ast.Index, ctx: Ctx) -> T.Type:
        obj_t = base(self.expr(e.expr, ctx))
        it = self.expr(e.index, ctx)
        if isinstance(obj_t, T.StackType):
            if not is_numeric(it):
                raise fail(f"Array index {describe(e.index)} must be an integer", e.index)
            if isinstance(base(obj_t.element), T.HeaderUnionType) and ctx.block == "parser" \
                    and e.index.const is ast.NOT_CONST:
                # A union stack element is flattened to one union per index; p4c expands
                # a run-time index into constant ones in controls, but not in parsers.
                raise fail("Target expects constant array indices for accessing header union "
                           f"stack elements, {describe(e.index)} is not a constant", e.index)
            if isinstance(e.index.const, int) and not isinstance(e.index.const, bool):
                if e.index.const < 0:
                    raise fail(f"{describe(e)}: Negative array index", e.index)
                if e.index.const >= obj_t.size:
                    raise fail(f"{describe(e)}: index {e.index.const} out of bounds for "
                               f"stack of size {obj_t.size}", e.index)
            if isinstance(it, T.IntType):
                self.coerce(e.index, T.BitsType(32), ctx)
            return obj_t.element
        if isinstance(obj_t, (T.TupleType, T.ListType)):
            v = e.index.const
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise fail(f"Tuple index {describe(e.index)} must be constant", e.index)
            if v >= len(obj_t.elements):
                raise fail(f"Tuple index {v} out of bounds", e.index)
            return obj_t.elements[v]
        raise fail(f"Indexing {describe(e)} applied to non-array and non-tuple type {obj_t}", e)

    def _e_Slice(self, e: ast.Slice, ctx: Ctx) -> T.Type:
        raw = self.expr(e.expr, ctx)
        if isinstance(raw, T.NewType):
            raise fail(f"{describe(e)}: bit extraction only defined for bit<> types", e)
        t = base(raw)
        for b in (e.hi, e.lo):
            self.expr(b, ctx)
            if not isinstance(b.const, int) or isinstance(b.const, bool):
                raise fail(f"{describe(b)}: slice bit index values must be constants", b)
            if b.const < 0:
                raise fail(f"{describe(b)}: expected slice indexes to be non-negative", b)
        hi, lo = e.hi.const, e.lo.const
        if isinstance(t, T.EnumType) and t.underlying is not None:
            if isinstance(e.expr.const, consteval.MemberConst):
                # p4c folds the slice and finds an enum member, not a number
                raise fail(f"{describe(e.expr)}: expected an integer value", e.expr)
            t = t.underlying
        if isinstance(t, T.IntType):
            # an untyped integer is a compile-time value of unbounded width (two's
            # complement for negatives): any bits of it can be taken, as p4c folds them
            if lo > hi:
                raise fail(f"{describe(e)}: bit slice indexes reversed ({hi} < {lo})", e)
            consteval.evaluate(e)
            return T.BitsType(hi - lo + 1)
        if not isinstance(t, T.BitsType):
            raise fail(f"{describe(e)}: bit extraction only defined for bit<> types", e)
        known = consteval.evaluate(e.expr)
        if (hi >= t.width or lo >= t.width) and (not isinstance(known, int) or lo > hi):
            # (p4c folds a slice of a constant before checking widths: 8w2[15:8] is 8w0)
            raise fail(f"Bit index {max(hi, lo)} greater than width {t.width}", e.hi)
        if lo > hi:
            raise fail(f"{describe(e)}: bit slice indexes reversed ({hi} < {lo})", e)
        for b in (e.hi, e.lo):
            if isinstance(b.type, T.IntType):
                b.type = T.IntType()
        return T.BitsType(hi - lo + 1)

    # ------------------------------------------------------------------ operators
    def _e_Unary(self, e: ast.Unary, ctx: Ctx) -> T.Type:
        t = self.expr(e.expr, ctx)
        if isinstance(t, T.NewType):
            raise fail(f"Cannot apply {e.op} to value {describe(e.expr)} of type {t}", e)
        b = base(t)
        if e.op == "!":
            if not isinstance(b, T.BoolType):
                raise fail(f"Cannot apply operation '!' to expression '{describe(e.expr)}' "
                           f"with type '{t}'", e)
            return t
        if e.op == "~":
            if isinstance(b, T.IntType):
                raise fail(f"{describe(e)}: Operation cannot be applied to values with "
                           "unknown width; please specify width explicitly", e)
            if not isinstance(b, T.BitsType):
                raise fail(f"Cannot apply operation '~' to expression '{describe(e.expr)}' "
                           f"with type '{t}'", e)
            return t
        if not isinstance(b, (T.BitsType, T.IntType)):
            raise fail(f"Cannot apply operation '{e.op}' to expression '{describe(e.expr)}' "
                       f"with type '{t}'", e)
        return t

    def _e_Binary(self, e: ast.Binary, ctx: Ctx) -> T.Type:
        lt = self.expr(e.left, ctx)
        rt = self.expr(e.right, ctx)
        op = e.op
        if op not in ("==", "!=", "&&&", ".."):
            _no_newtype_operand(e, op, ((e.left, lt), (e.right, rt)))
        if op in ("&&", "||"):
            for side, t in ((e.left, lt), (e.right, rt)):
                if not isinstance(base(t), T.BoolType):
                    raise fail(f"{describe(e)}: not defined on {lt} and {rt}", side)
            return T.BoolType()
        if op in ("<<", ">>"):
            return self._shift(e, lt, rt, ctx)
        if op == "++":
            return self._concat(e, lt, rt, ctx)
        if op in ("==", "!="):
            for (side, t), (other, ot) in (((e.left, lt), (e.right, rt)),
                                           ((e.right, rt), (e.left, lt))):
                if isinstance(t, T.NewType) and isinstance(ot, T.IntType):
                    # an untyped int is not implicitly a value of a 'type' newtype
                    raise fail(f"'{describe(side)}' with type '{t}' cannot be compared to "
                               f"'{describe(other)}' with type 'int'", e)
            self._equality(e, ctx)
            return T.BoolType()
        if op in ("&&&", ".."):
            return self._unify_operands(e, ctx, allow_any=False)
        if op in ("/", "%"):
            self._negative_literal_operand(e)
        t = self._unify_operands(e, ctx, allow_any=False)
        b = base(t)
        if isinstance(b, T.EnumType) and b.underlying is not None and op not in COMPARE:
            # p4c casts serializable enum operands to their underlying type
            t = b = b.underlying
        if op in COMPARE:
            if isinstance(b, T.EnumType) and b.underlying is not None:
                b = b.underlying          # serializable enums compare as their bits
            if not isinstance(b, (T.BitsType, T.IntType)):
                raise fail(f"{describe(e)}: not defined on {_method_or(lt, e.left)} and "
                           f"{_method_or(rt, e.right)}", e)
            return T.BoolType()
        if not isinstance(b, (T.BitsType, T.IntType)):
            raise fail(f"{op}: cannot be applied to expression '{describe(e.left)}' with type "
                       f"'{lt}'", e)
        if op in ("/", "%"):
            self._check_division(e, b)
            strength_reduce(e)
        if op in ("|+|", "|-|") and isinstance(b, T.IntType):
            # saturation needs a width: there is no bound to saturate an ``int`` at
            raise fail(f"{describe(e)}: saturating operation on untyped values", e)
        return t

    def _negative_literal_operand(self, e: ast.Binary) -> None:
        """``/`` and ``%`` are undefined on negative numbers (checked before typing)."""
        for side in (e.left, e.right):
            v = side.const
            if isinstance(side.type, T.IntType) and isinstance(v, int) and v < 0:
                raise fail(f"{describe(e)}: not defined on negative numbers", e)

    def _check_division(self, e: ast.Binary, b: T.Type) -> None:
        """p4c's checks of ``/`` and ``%`` before folding; a division that neither folds
        nor reduces to a shift or mask is left for :mod:`runtime_division`, which refuses
        it unless p4c's copy propagation and constant folding make it dead."""
        rv = e.right.const
        if isinstance(rv, int) and not isinstance(rv, bool) and rv == 0:
            raise fail(f"{describe(e)}: {zero_divisor(e.op)}", e)
        if isinstance(b, T.BitsType) and b.signed:
            raise fail(f"{describe(e)}: Cannot operate on signed values", e)
        if isinstance(rv, int) and rv < 0:
            raise fail(f"{describe(e)}: not defined on negative numbers", e)
        if not division_computable(e.left.const, rv):
            self.runtime_divisions.append(e)

    def _unify_operands(self, e: ast.Binary, ctx: Ctx, allow_any: bool) -> T.Type:
        """Give both operands one type: untyped ints take the other side's type.

        As in p4c, a serializable enum meeting anything but its own type takes part in
        arithmetic and comparisons as its underlying ``bit<W>``/``int<W>`` type.
        """
        lt = _ser_enum_as_bits(e.left.type, e.right.type)
        rt = _ser_enum_as_bits(e.right.type, e.left.type)
        if isinstance(lt, T.IntType) and not isinstance(rt, T.IntType):
            if self.coerce(e.left, rt, ctx, quiet=True):
                return rt
        elif isinstance(rt, T.IntType) and not isinstance(lt, T.IntType):
            if self.coerce(e.right, lt, ctx, quiet=True):
                return lt
        elif compatible(lt, rt):
            return lt if not isinstance(lt, T.DontCareType) else rt
        elif allow_any and self.coerce(e.right, lt, ctx, quiet=True):
            return lt
        elif allow_any and self.coerce(e.left, rt, ctx, quiet=True):
            return rt
        if isinstance(lt, T.IntType) and isinstance(rt, T.IntType):
            return lt
        if e.op in ("==", "!="):
            raise fail(f"'{describe(e.left)}' with type '{lt}' cannot be compared to "
                       f"'{describe(e.right)}' with type '{rt}'", e)
        raise fail(f"{describe(e)}: Cannot operate on values with different types {lt} and "
                   f"{rt}", e)

    # ------------------------------------------------------------------ equality
    def _equality(self, e: ast.Binary, ctx: Ctx) -> None:
        """``==``/``!=`` (P4_16 spec, "Expressions" per type): defined on values of one
        type, except void, actions' results, tables, externs (unspecialized, as p4c
        has it), type variables and table application results. An untyped literal takes
        the other side's type; lists and tuples compare element by element (each
        element unifies the same way), a list or untyped structure expression against a
        struct or header takes its type; a stack is no list."""
        self._not_comparable(e)
        lt, rt = e.left.type, e.right.type
        if isinstance(e.left, (ast.StructExpr, ast.ListExpr)) or isinstance(
                e.right, (ast.StructExpr, ast.ListExpr)) or isinstance(
                base(lt), (T.ListType, T.TupleType)) or isinstance(
                base(rt), (T.ListType, T.TupleType)):
            if self._aggregate_equality(e, ctx):
                return
            raise self._incomparable(e)
        self._unify_operands(e, ctx, allow_any=True)

    def _incomparable(self, e: ast.Binary) -> P4Error:
        return fail(f"'{describe(e.left)}' with type '{_as_tuple(e.left.type)}' cannot be "
                    f"compared to '{describe(e.right)}' with type "
                    f"'{_as_tuple(e.right.type)}'", e)

    def _not_comparable(self, e: ast.Binary) -> None:
        pair = f"{describe(e.left)} and {describe(e.right)}"
        for side in (e.left, e.right):
            t = base(side.type)
            if isinstance(side, ast.Call) and getattr(side.resolved, "kind", "") == "action":
                raise fail(f"{pair} cannot be compared", e)
            if isinstance(t, T.VoidType):
                raise fail(f"'{describe(side)}' with type 'void' cannot be compared", e)
            if isinstance(t, T.TableType):
                raise fail(f"{pair}: tables cannot be compared", e)
            if isinstance(t, T.ExternType) and not t.type_args:
                raise fail(f"{pair}: externs cannot be compared", e)
            if isinstance(t, T.TypeVar):
                raise fail(f"{pair}: values of a type variable cannot be compared", e)
            if _has_action_enum(t):
                raise fail(f"{pair}: table application results cannot be compared", e)
            if isinstance(t, (T.BlockType, T.StateType)):
                raise fail(f"{pair}: cannot be compared", e)

    def _aggregate_equality(self, e: ast.Binary, ctx: Ctx) -> bool:
        left, right = e.left, e.right
        lt, rt = base(left.type), base(right.type)
        if isinstance(lt, T.StructExprType) and isinstance(rt, T.StructExprType):
            raise fail(f"{describe(e)}: cannot compare structure-valued expressions with "
                       "unknown types", e)
        lists = (T.ListType, T.TupleType)
        if isinstance(lt, lists) and isinstance(rt, lists):
            return self._unify_elements(left, right)
        for a, b in ((left, right), (right, left)):
            at, bt = base(a.type), base(b.type)
            if isinstance(bt, T.StructLikeType) and not isinstance(bt, T.HeaderUnionType) \
                    and isinstance(a, (ast.ListExpr, ast.StructExpr)) \
                    and isinstance(at, (T.ListType, T.StructExprType)):
                return self.coerce(a, b.type, ctx, quiet=True)
        return compatible(left.type, right.type) and not isinstance(
            lt, (T.ListType, T.StructExprType))

    def _unify_elements(self, left: ast.Expr, right: ast.Expr) -> bool:
        """Element-wise unification of two list/tuple values (untyped literals in a list
        expression take the other side's element type)."""
        lt, rt = base(left.type), base(right.type)
        if len(lt.elements) != len(rt.elements):
            return False
        litems = left.items if isinstance(left, ast.ListExpr) else None
        ritems = right.items if isinstance(right, ast.ListExpr) else None
        for i, (a, b) in enumerate(zip(lt.elements, rt.elements, strict=True)):
            for items in (litems, ritems):
                item = items[i] if items is not None else None
                if isinstance(item, ast.StructExpr) and item.type_ref is None:
                    raise fail(f"{describe(item)}: could not infer a type for expression; "
                               "please specify it explicitly", item)
            ab, bb = base(a), base(b)
            if isinstance(a, T.IntType) and isinstance(b, T.IntType):
                continue
            if isinstance(a, T.IntType) or isinstance(b, T.IntType):
                typed = b if isinstance(a, T.IntType) else a
                items = litems if isinstance(a, T.IntType) else ritems
                if not isinstance(base(typed), T.BitsType) or isinstance(typed, T.NewType):
                    return False
                if items is not None:
                    self._set_int_type(items[i], typed)
                continue
            if isinstance(ab, (T.ListType, T.TupleType)) and isinstance(bb, (T.ListType,
                                                                             T.TupleType)):
                sub_l = litems[i] if litems is not None else ast.DontCareExpr()
                sub_r = ritems[i] if ritems is not None else ast.DontCareExpr()
                sub_l.type, sub_r.type = sub_l.type or a, sub_r.type or b
                if not self._unify_elements(sub_l, sub_r):
                    return False
                continue
            if not compatible(a, b) or isinstance(ab, (T.VoidType, T.TableType)) or (
                    isinstance(ab, T.ExternType) and not ab.type_args):
                return False
        for side, items in ((left, litems), (right, ritems)):
            if items is not None:
                side.type = T.ListType(tuple(i.type for i in items))
        return True

    def _shift(self, e: ast.Binary, lt: T.Type, rt: T.Type, ctx: Ctx) -> T.Type:
        lb, rb = base(lt), base(rt)
        if not isinstance(lb, (T.BitsType, T.IntType)):
            raise fail(f"{describe(e)} left operand of shift must be a numeric type, not {lt}",
                       e)
        if not isinstance(rb, (T.BitsType, T.IntType)):
            raise fail(f"{describe(e)}: shift amount must be a number, not {rt}", e.right)
        if isinstance(rb, T.BitsType) and rb.signed:
            amount = consteval.evaluate(e.right)
            if amount is ast.NOT_CONST:
                raise fail(f"{describe(e)}: shift amount must be an unsigned number", e.right)
            if amount < 0:   # a known signed amount counts by its value, as p4c folds it
                raise fail(f"{describe(e)}: Shifts with negative amounts are not permitted",
                           e.right)
        if isinstance(e.right.const, int) and e.right.const < 0:
            raise fail(f"{describe(e)}: negative shift amount", e.right)
        if isinstance(lb, T.IntType) and e.right.const is ast.NOT_CONST:
            raise fail(f"{describe(e)}: shift result type is arbitrary-precision int, but right "
                       "operand is not constant; width of left operand of shift needs to be "
                       "specified", e)
        if (isinstance(lb, T.IntType) and isinstance(e.right.const, int)
                and e.right.const > 2048):
            raise fail(f"{describe(e)}: Compiler only supports widths up to 2048", e)
        return lt

    def _concat(self, e: ast.Binary, lt: T.Type, rt: T.Type, ctx: Ctx) -> T.Type:
        lb = base(_ser_enum_as_bits(lt, T.VoidType()))
        rb = base(_ser_enum_as_bits(rt, T.VoidType()))
        for side, t in ((e.left, lb), (e.right, rb)):
            if isinstance(t, T.IntType):
                raise fail(f"{describe(side)}: could not infer a width", side)
            if not isinstance(t, T.BitsType):
                raise fail(f"{describe(e)}: concatenation not defined on {lt} and {rt}", e)
        return T.BitsType(lb.width + rb.width, lb.signed)

    def _e_Ternary(self, e: ast.Ternary, ctx: Ctx) -> T.Type:
        ct = self.expr(e.cond, ctx)
        if not isinstance(base(ct), T.BoolType):
            raise fail(f"Selector of ?: must be bool, not {ct}", e.cond)
        a = self.expr(e.then, ctx)
        b = self.expr(e.otherwise, ctx)
        if isinstance(a, T.IntType) and not isinstance(b, T.IntType):
            self.coerce(e.then, b, ctx)
            return b
        if isinstance(b, T.IntType) and not isinstance(a, T.IntType):
            self.coerce(e.otherwise, a, ctx)
            return a
        if isinstance(a, T.IntType) and isinstance(b, T.IntType):
            if isinstance(consteval.evaluate(e.cond), bool):
                return T.IntType()      # a known condition folds to one untyped branch
            raise fail(f"Width must be specified for at least one of {describe(e.then)} or "
                       f"{describe(e.otherwise)}", e)
        if not compatible(a, b):
            if isinstance(e.otherwise, (ast.ListExpr, ast.StructExpr, ast.InvalidHeaderExpr)) \
                    and self.coerce(e.otherwise, a, ctx, quiet=True):
                return a
            raise fail(f"The expressions in a ?: conditional have different types '{a}' and "
                       f"'{b}'", e)
        return a

    # ------------------------------------------------------------------ casts
    def _e_Cast(self, e: ast.Cast, ctx: Ctx) -> T.Type:
        to = self.resolve_type(e.to, ctx)
        src = self.expr(e.expr, ctx)
        if isinstance(e.expr, (ast.ListExpr, ast.StructExpr, ast.InvalidHeaderExpr)):
            if not self.coerce(e.expr, to, ctx, quiet=True):
                raise fail(f"'({to}){describe(e.expr)}': cast not supported", e)
            return to
        tb = base(to)
        if isinstance(tb, T.EnumType) and tb.underlying is None:
            # a plain enum has no representation to convert from, not even itself
            raise fail(f"{describe(e.to) if isinstance(e.to, ast.Expr) else tb.name}: cast not "
                       "supported", e)
        if not castable(src, to) and not self._constant_bits_cast(e.expr, src, to):
            raise fail(f"'({to}){describe(e.expr)}': Illegal cast from {src} to {to}", e)
        if isinstance(base(to), T.BoolType) and isinstance(base(src), (T.IntType, T.BitsType)) \
                and isinstance(e.expr.const, int) and e.expr.const not in (0, 1):
            raise fail(f"{describe(e)}: only 0 and 1 can be cast to bool", e)
        if isinstance(src, T.IntType) and isinstance(base(to), T.BitsType):
            self.coerce(e.expr, to if isinstance(to, T.BitsType) else base(to), ctx)
        return to

    @staticmethod
    def _constant_bits_cast(expr: ast.Expr, src: T.Type, to: T.Type) -> bool:
        """A compile-time known bit<W>/int<W> value casts to any bit<V>/int<V>, changing
        sign and width at once (p4c folds it: ``(bit<16>)32s5`` is ``16w5``); a run-time
        value changes one of them per cast (spec 8.11.1)."""
        if not (isinstance(src, T.BitsType) and isinstance(to, T.BitsType)):
            return False    # (a newtype converts only from its own underlying type)
        value = consteval.evaluate(expr)
        return isinstance(value, int) and not isinstance(value, bool)

    # ------------------------------------------------------------------ aggregates
    def _e_ListExpr(self, e: ast.ListExpr, ctx: Ctx) -> T.Type:
        return T.ListType(tuple(self.expr(i, ctx) for i in e.items))

    def _e_StructExpr(self, e: ast.StructExpr, ctx: Ctx) -> T.Type:
        seen: set[str] = set()
        fields = []
        for name, v in e.fields:
            if name in seen:
                raise fail(f"{name}: Duplicates declaration {name}", v)
            seen.add(name)
            fields.append(T.FieldInfo(name, self.expr(v, ctx)))
        if e.type_ref is not None:
            to = self.resolve_type(e.type_ref, ctx)
            e.type = T.StructExprType(tuple(fields))
            if not self.coerce(e, to, ctx, quiet=True):
                raise fail(f"'{to} {{...}}': initializer does not match {to}", e)
            return to
        return T.StructExprType(tuple(fields))

    # ------------------------------------------------------------------ coercion
    def coerce(self, e: ast.Expr, target: T.Type, ctx: Ctx, quiet: bool = False,
               keyset: bool = False) -> bool:
        """Make ``e`` (already typed) usable as a ``target`` value, retyping literals.

        Returns False (or raises, unless ``quiet``) when the types do not fit. In keysets
        (``keyset``) an untyped int may also stand for a serializable enum value.
        """
        if isinstance(e.type, T.IntType) and isinstance(base(target), T.EnumType) \
                and not keyset:
            ok = False
        else:
            ok = self._coerce(e, target, ctx)
        if not ok and not quiet:
            raise fail(f"'{describe(e)}': cannot convert expression of type {e.type} to "
                       f"type {target}", e)
        return ok

    def _coerce(self, e: ast.Expr, target: T.Type, ctx: Ctx) -> bool:
        src = e.type
        if isinstance(target, T.DontCareType) or isinstance(e, ast.DontCareExpr):
            return True
        if isinstance(e, ast.InvalidHeaderExpr):
            if isinstance(target, (T.HeaderType, T.HeaderUnionType)):
                e.type = target
                return True
            return False
        if isinstance(e, ast.DotsExpr):
            e.type = target
            return True
        if isinstance(src, T.IntType):
            return self._retype_int(e, target)
        sb = base(src)
        if isinstance(sb, T.EnumType) and sb.underlying is not None and \
                not isinstance(target, T.EnumType) and compatible(sb.underlying, target):
            return True
        if isinstance(e, ast.ListExpr):
            return self._coerce_list(e, target, ctx)
        if isinstance(e, ast.StructExpr) and isinstance(src, T.StructExprType):
            return self._coerce_struct(e, target, ctx)
        return compatible(src, target)

    def _retype_int(self, e: ast.Expr, target: T.Type) -> bool:
        tb = base(target)
        if isinstance(tb, T.IntType):
            return True
        if isinstance(tb, T.EnumType) and tb.underlying is not None:
            tb = tb.underlying
        if not isinstance(tb, T.BitsType):
            return False
        self._set_int_type(e, target)
        return True

    def _set_int_type(self, e: ast.Expr, target: T.Type) -> None:
        """Give an ``int``-typed constant subtree the concrete type ``target``."""
        if not isinstance(e.type, T.IntType):
            return
        e.type = target
        if isinstance(e, ast.Binary):
            if e.op in ("<<", ">>"):
                self._set_int_type(e.left, target)
            elif e.op in ARITH or e.op in BITWISE:
                self._set_int_type(e.left, target)
                self._set_int_type(e.right, target)
        elif isinstance(e, ast.Unary):
            self._set_int_type(e.expr, target)
        elif isinstance(e, ast.Ternary):
            self._set_int_type(e.then, target)
            self._set_int_type(e.otherwise, target)
        if isinstance(e.const, int) and not isinstance(e.const, bool):
            e.const = consteval.wrap(e.const, target)

    def _coerce_list(self, e: ast.ListExpr, target: T.Type, ctx: Ctx) -> bool:
        """A ``{…}`` list as a tuple/struct/header/stack value (``...`` fills the rest)."""
        items = list(e.items)
        dots = bool(items) and isinstance(items[-1], ast.DotsExpr)
        if dots:
            items.pop()
        tb = base(target)
        if isinstance(tb, (T.TupleType, T.ListType)):
            elems = tb.elements
            if isinstance(tb, T.ListType) and len(elems) == 1 and len(items) != 1:
                elems = elems * len(items)
        elif isinstance(tb, T.StructLikeType) and not isinstance(tb, T.HeaderUnionType):
            elems = tuple(f.type for f in tb.fields)
        elif isinstance(tb, T.StackType):
            elems = (tb.element,) * tb.size
        else:
            return False
        if len(elems) != len(items) and not (dots and len(items) <= len(elems)):
            return False
        for item, et in zip(items, elems, strict=False):
            if _int_into_enum(item, et) or not self._coerce(item, et, ctx):
                return False
        if dots:
            e.items[-1].type = target
        e.type = target
        consteval.evaluate(e)
        return True

    def _coerce_struct(self, e: ast.StructExpr, target: T.Type, ctx: Ctx) -> bool:
        tb = base(target)
        if not isinstance(tb, T.StructLikeType) or isinstance(tb, T.HeaderUnionType):
            return False
        names = [n for n, v in e.fields if not isinstance(v, ast.DotsExpr)]
        dots = len(names) != len(e.fields)
        wanted = sorted(f.name for f in tb.fields)
        if (not dots and sorted(names) != wanted) or not set(names) <= set(wanted):
            return False
        for name, v in e.fields:
            if isinstance(v, ast.DotsExpr):
                v.type = target
                continue
            f = tb.field(name)
            assert f is not None
            if _int_into_enum(v, f.type) or not self._coerce(v, f.type, ctx):
                return False
        e.type = target
        consteval.evaluate(e)
        return True

    # ------------------------------------------------------------------ l-values
    def check_lvalue(self, e: ast.Expr, what: str = "assignment") -> None:
        if not self.is_lvalue(e):
            raise fail(f"Expression {describe(e)} cannot be the target of an {what}", e)

    def is_lvalue(self, e: ast.Expr) -> bool:
        if isinstance(e, ast.PathExpr):
            d = e.decl
            if isinstance(d, ast.VarDecl):
                return True
            return isinstance(d, ast.Param) and d.direction in ("out", "inout")
        if isinstance(e, ast.Member):
            if isinstance(base(e.expr.type), T.StackType):
                # ``last`` names the element extracted last: readable, never written
                return e.name == "next" and self.is_lvalue(e.expr)
            return not self.names_type(e.expr) and self.is_lvalue(e.expr)
        if isinstance(e, (ast.Index, ast.Slice)):
            return self.is_lvalue(e.expr)
        return False

    # ------------------------------------------------------------------ calls
    def _e_Call(self, e: ast.Call, ctx: Ctx) -> T.Type:
        return check_call(self, e, ctx)

    def table_result(self, table: ast.TableDecl) -> T.StructType:
        """The struct ``t.apply()`` returns: ``hit``, ``miss`` and ``action_run``."""
        r = self.table_results.get(table)
        if r is None:
            fields = (T.FieldInfo("hit", T.BoolType()), T.FieldInfo("miss", T.BoolType()),
                      T.FieldInfo("action_run", T.ActionEnumType(table)))
            r = T.StructType(f"apply_result<{table.name}>", fields, None)
            self.table_results[table] = r
        return r

    # ------------------------------------------------------------------ generic helpers
    def infer(self, params: tuple[T.ParamInfo, ...], args: list[ast.Expr | None],
              variables: set[T.TypeVar], m: Bindings, where: ast.Node) -> Bindings:
        """Bind ``variables`` from the argument types (concrete ones first)."""
        for concrete_pass in (True, False):
            for p, a in zip(params, args, strict=True):
                if a is None or a.type is None:
                    continue
                at = _as_tuple(a.type)
                if isinstance(at, T.IntType) == concrete_pass:
                    continue
                if not concrete_pass and not contains_var(p.type, variables):
                    continue
                if not unify(p.type, at, m, variables):
                    raise fail(f"'{describe(a)}': argument type {a.type} does not match "
                               f"parameter {p.name} of type {subst(p.type, m)}", a)
        return m

    def unresolved(self, t: T.Type, variables: set[T.TypeVar], m: Bindings) -> bool:
        return contains_var(subst(t, m), variables)


def _ser_enum_as_bits(t: T.Type, other: T.Type) -> T.Type:
    b = base(t)
    if isinstance(b, T.EnumType) and b.underlying is not None and not compatible(t, other):
        return b.underlying
    return t


def _has_action_enum(t: T.Type) -> bool:
    if isinstance(t, T.ActionEnumType):
        return True
    if isinstance(t, T.StructLikeType):
        return any(_has_action_enum(base(f.type)) for f in t.fields)
    if isinstance(t, (T.ListType, T.TupleType)):
        return any(_has_action_enum(base(x)) for x in t.elements)
    return False


def _method_or(t: T.Type, e: ast.Expr) -> str:
    """How p4c names an operand's type in 'not defined on' (an action call: <Method>)."""
    if isinstance(e, ast.Call) and getattr(e.resolved, "kind", "") == "action":
        return "<Method>"
    return str(t)


def _as_tuple(t: T.Type) -> T.Type:
    if isinstance(t, T.ListType):
        return T.TupleType(tuple(_as_tuple(x) for x in t.elements))
    return t


def _no_newtype_operand(e: ast.Binary, op: str,
                        sides: tuple[tuple[ast.Expr, T.Type], ...]) -> None:
    """A type made with ``type`` keeps its values but none of the underlying type's
    operators: only assignment, ``==``/``!=`` and casts (spec 7.6)."""
    for side, t in sides:
        if isinstance(t, T.NewType):
            raise fail(f"{op}: cannot be applied to expression '{describe(side)}' with type "
                       f"'{t}'", side)


def _int_into_enum(item: ast.Expr, target: T.Type) -> bool:
    """An untyped integer as an element or field of serializable enum type: p4c does not
    convert it implicitly there (it does in comparisons and select keysets)."""
    return isinstance(item.type, T.IntType) and isinstance(base(target), T.EnumType)


def castable(src: T.Type, to: T.Type) -> bool:
    """P4_16's explicit casts (section 8.11)."""
    if compatible(src, to):
        return True
    s, d = base(src), base(to)
    if isinstance(src, T.NewType) or isinstance(to, T.NewType):
        return compatible(s, d) or isinstance(s, T.IntType) or (
            isinstance(s, T.BitsType) and isinstance(d, T.BitsType)
            and (isinstance(to, T.NewType) and compatible(src, to.underlying)
                 or isinstance(src, T.NewType) and compatible(src.underlying, to)))
    if isinstance(s, T.IntType):
        return isinstance(d, (T.BitsType, T.IntType, T.BoolType)) or (
            isinstance(d, T.EnumType) and d.underlying is not None)
    if isinstance(s, T.BitsType):
        if isinstance(d, T.BitsType):
            return s.signed == d.signed or s.width == d.width
        if isinstance(d, T.BoolType):
            return s.width == 1 and not s.signed
        if isinstance(d, T.IntType):
            return True
        # a serializable enum converts from exactly its underlying type (spec 8.3)
        return isinstance(d, T.EnumType) and d.underlying is not None and compatible(
            s, d.underlying)
    if isinstance(s, T.BoolType):
        return (isinstance(d, T.BitsType) and d.width == 1 and not d.signed) or isinstance(
            d, T.IntType)
    if isinstance(s, T.EnumType) and s.underlying is not None:
        # ... and to exactly that type, or another enum over it (spec 8.3)
        return (isinstance(d, T.BitsType) and compatible(s.underlying, d)) or (
            isinstance(d, T.EnumType) and d.underlying is not None
            and d.underlying == s.underlying)
    return False
