"""Lowering of typed P4 expressions and statements into Python source.

Each P4 body (action, function, control ``apply``, parser state) becomes one Python
function, compiled once with ``compile()``; packets then run plain CPython bytecode
instead of walking the AST. The rules that make the generated code agree with P4 and
BMv2:

* ``bit<W>`` results are masked to W bits, ``int<W>`` results wrapped to two's
  complement (both inline, no helper call); comparisons work directly on the stored
  Python ints because signed values are stored as negative ints.
* Assignment and argument passing copy aggregates (``copy()``), so P4's value semantics
  hold even though Python passes references.
* Calls use copy-in/copy-out: callees return their ``out``/``inout`` values and the
  caller assigns them back, also when the callee ``exit``s.
* ``&&``, ``||`` and ``?:`` short-circuit, and statements an operand needs are kept
  in left-to-right order (:class:`~softswitch.core.codebuf.CodeBuf`).

What both back ends decide alike (evaluation order, members, writes) is
:class:`~softswitch.core.exprwalk.ExprWalk`'s; this module spells it in Python.
Block-level structure (controls, parsers, tables, instances) is in :mod:`blocks`;
extern calls in :mod:`extern_calls` and the architectures' extern tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softswitch.core.codebuf import CodeBuf
from softswitch.core.exprwalk import (
    ExprWalk,
    fit_with,
    saturation_bounds,
    scalar_bits,
    slice_masks,
)
from softswitch.core.values import Layouts, attr, is_aggregate
from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST

FRESH_NODES = (ast.ListExpr, ast.StructExpr, ast.InvalidHeaderExpr, ast.Call)


def fit(code: str, t: Any) -> str:
    """Wrap the Python int expression ``code`` into the range of type ``t``."""
    return fit_with(code, scalar_bits(t), _wrap, _mask)


def _wrap(code: str, w: int) -> str:
    half = 1 << (w - 1)
    return f"((({code}) + {half}) & {(1 << w) - 1}) - {half}"


def _mask(code: str, w: int) -> str:
    return f"(({code}) & {(1 << w) - 1})"


def wrap_int(v: int, t: Any) -> int:
    b = scalar_bits(t)
    if b is None:
        return v
    w, signed = b
    if w == 0:
        return 0
    v &= (1 << w) - 1
    if signed and v >> (w - 1):
        v -= 1 << w
    return v


class LowerError(P4Error):
    """A construct the v1model target cannot run (reported at load time)."""


@dataclass
class FnCtx:
    """What the statement being lowered sits in: its buffer and how to return."""

    buf: CodeBuf
    kind: str                      # action | function | control | state
    outs: list[str] = field(default_factory=list)   # python names copied out on return
    has_value: bool = False        # function with a non-void return type
    loop_depth: int = 0


@dataclass
class LowerEnv:
    """Program-wide facts every block lowering needs."""

    layouts: Layouts
    error_codes: dict[str, int]
    program: ast.Program

    def error_code(self, name: str) -> int:
        return self.error_codes.get(name, 0)


class ExprLowerer(ExprWalk):
    """Expression and statement lowering for one block namespace.

    ``names`` maps ``id(declaration)`` to the Python expression naming it (a local, a
    namespace global, or an object in ``ns``). Subclasses provide calls
    (:meth:`call`) and declarations.
    """

    def __init__(self, env: LowerEnv, ns: dict[str, Any]) -> None:
        self.env = env
        self.error_codes = env.error_codes
        self.ns = ns
        self.names: dict[int, str] = {}
        self.globals_: list[str] = []
        self._tmp = 0

    # ------------------------------------------------------------ helpers
    def tmp(self, prefix: str = "_t") -> str:
        self._tmp += 1
        return f"{prefix}{self._tmp}"

    def const_obj(self, value: Any, prefix: str = "_k") -> str:
        """Put a Python object in the namespace and return its name."""
        name = self.tmp(prefix)
        self.ns[name] = value
        return name

    def fail(self, msg: str, node: ast.Node | None) -> LowerError:
        return LowerError(msg, node.loc if node is not None else None)

    def cls_name(self, t: T.StructLikeType) -> str:
        c = self.env.layouts.cls(t)
        self.ns[c.__name__] = c
        return c.__name__

    def default_of(self, t: Any) -> str:
        return self.env.layouts.default_expr(t, self.ns)

    # ------------------------------------------------------------ constants
    def const_literal(self, c: Any, t: Any) -> str | None:
        if isinstance(c, bool):
            if isinstance(T.strip_newtype(t), T.BitsType):
                return str(int(c))
            return "True" if c else "False"
        if isinstance(c, int):
            return str(wrap_int(c, t))
        if isinstance(c, str):
            return repr(c)
        value = getattr(c, "value", None)
        if isinstance(value, int) and hasattr(c, "type_name"):
            if c.type_name == "error":
                return str(self.env.error_code(c.name))
            return str(value)
        return None

    # ------------------------------------------------------------ expressions
    def value(self, e: ast.Expr, fn: FnCtx) -> str:
        """An expression whose result is owned by the receiver (aggregates copied)."""
        code = self.expr(e, fn)
        if is_aggregate(e.type or T.VoidType()) and not isinstance(e, FRESH_NODES):
            if isinstance(T.strip_newtype(e.type), T.StructLikeType | T.StackType):
                return f"({code}).copy()"
            return f"_copy({code})"
        return code

    def x_IntLiteral(self, e: ast.IntLiteral, fn: FnCtx) -> str:
        return str(wrap_int(e.value, e.type))

    def x_BoolLiteral(self, e: ast.BoolLiteral, fn: FnCtx) -> str:
        return "True" if e.value else "False"

    def x_StringLiteral(self, e: ast.StringLiteral, fn: FnCtx) -> str:
        return repr(e.value)

    def x_PathExpr(self, e: ast.PathExpr, fn: FnCtx) -> str:
        decl = e.decl
        name = self.names.get(id(decl))
        if name is not None:
            return name
        if isinstance(decl, ast.ConstDecl):
            return self.expr(decl.value, fn)
        if isinstance(decl, ast.InstanceDecl):
            bound = self.global_instance(decl)
            if bound is not None:
                return bound
        raise self.fail(f"'{e.name}' cannot be used as a value here", e)

    def stack_end(self, base: str, st: T.StackType, which: str, fn: FnCtx) -> str:
        return f"_stk_{which}({base})"

    def _indexing(self, e: ast.Index, fn: FnCtx) -> tuple[str, str, bool]:
        """The indexed value's code, the index's, and whether a header stack is indexed."""
        return (self.expr(e.expr, fn), self.expr(e.index, fn),
                isinstance(T.strip_newtype(e.expr.type), T.StackType))

    def x_Index(self, e: ast.Index, fn: FnCtx) -> str:
        base, idx, of_stack = self._indexing(e, fn)
        if of_stack:
            if e.index.const is not NOT_CONST:
                return f"{base}.items[{idx}]"
            return f"_stk_at({base}, {idx})"
        return f"{base}[{idx}]"

    def x_Slice(self, e: ast.Slice, fn: FnCtx) -> str:
        hi, lo = int(e.hi.const), int(e.lo.const)
        v = self.expr(e.expr, fn)
        return f"((({v}) >> {lo}) & {(1 << (hi - lo + 1)) - 1})"

    def binop(self, op: str, a: str, b: str, e: ast.Binary) -> str:
        t = e.type
        bits = scalar_bits(t)
        if op in ("==", "!="):
            return f"({a} {op} {b})"
        if op in ("<", "<=", ">", ">="):
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return fit(f"{a} {op} {b}", t)
        if op == "/":
            return fit(f"_div({a}, {b})", t) if bits else f"_div({a}, {b})"
        if op == "%":
            return fit(f"_mod({a}, {b})", t) if bits else f"_mod({a}, {b})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "<<":
            if bits is None:
                return f"({a} << {b})"
            w, signed = bits
            if e.right.const is not NOT_CONST and isinstance(e.right.const, int):
                k = e.right.const
                return "0" if k >= w else fit(f"{a} << {k}", t)
            return f"_shl{'s' if signed else ''}({a}, {b}, {w})"
        if op == ">>":
            return f"({a} >> {b})"
        if op in ("|+|", "|-|"):
            if bits is None:
                return f"({a} {op[1]} {b})"
            lo, hi = saturation_bounds(*bits)
            return f"min(max({a} {op[1]} {b}, {lo}), {hi})"
        if op == "++":
            lb, rb = self.concat_bits(e)
            rw = rb[0]
            ua = f"({a} & {(1 << lb[0]) - 1})" if lb[1] else a
            ub = f"({b} & {(1 << rw) - 1})" if rb[1] else b
            return fit(f"({ua} << {rw}) | {ub}", t)
        raise self.fail(f"operator '{op}' is not supported here", e)

    def cast(self, kind: str, v: str, e: ast.Cast) -> str:
        if kind == "to_bool":
            return f"({v} != 0)"
        return f"int({v})" if kind == "from_bool" else v

    def x_ListExpr(self, e: ast.ListExpr, fn: FnCtx) -> str:
        t = T.strip_newtype(e.type)
        vals = self.values_in_order(e.items, fn)
        if isinstance(t, T.StructLikeType):
            names = tuple(attr(f.name) for f in t.fields)
            return self.build_struct(t, names, vals)
        return "[" + ", ".join(vals) + "]"

    def x_StructExpr(self, e: ast.StructExpr, fn: FnCtx) -> str:
        t = T.strip_newtype(e.type)
        vals = self.values_in_order([v for _, v in e.fields], fn)
        names = tuple(attr(n) for n, _ in e.fields)
        if isinstance(t, T.StructLikeType):
            return self.build_struct(t, names, vals)
        raise self.fail("struct expression without a struct type", e)

    def build_struct(self, t: T.StructLikeType, names: tuple[str, ...], vals: list[str]) -> str:
        cname = self.cls_name(t)
        valid = isinstance(t, T.HeaderType)
        tail = "," if len(vals) == 1 else ""
        return f"_build({cname}, {names!r}, ({', '.join(vals)}{tail}), {valid})"

    def invalid_value(self, t: T.StructLikeType) -> str:
        return f"{self.cls_name(t)}()"

    def global_instance(self, decl: Any) -> str | None:  # pragma: no cover
        return None

    # ------------------------------------------------------------ ExprWalk's emitters
    spelling = {
        "choose": "(({a}) if ({cond}) else ({b}))", "set": "{target} = {value}",
        "truth_set": "{var} = {code}", "not": "not {cond}",
        "&&": "({left} and {right})", "||": "({left} or {right})",
        "hit": "{result}[0]", "miss": "(not {result}[0])", "action_run": "{result}[1]",
        "false": "False", "true": "True", "discard": "_ = {value}", "call_stmt": "{value}",
        "!": "(not {v})", "incr": "{var} += 1", "break": "break", "exit": "raise _Exit()",
        "continue": "continue", "element": "{base}[{i}]",
        "stack_size": "{size}", "next_index": "{base}.nxt",
        "last_index": "(({base}.nxt - 1) & 0xFFFFFFFF)",
        "key_bits": "(({v}) & {mask})", "key_bool": "int({v})", "bool_int": "int({v})",
    }

    def is_simple(self, code: str) -> bool:
        return code.lstrip("-").isdigit() or code in ("True", "False")

    bits = staticmethod(scalar_bits)
    fit_to = staticmethod(fit)

    def mask_literal(self, w: int) -> str:
        return str((1 << w) - 1)

    def negation(self, v: str, t: Any) -> str:
        return fit(f"-({v})", t)

    def spill(self, fn: FnCtx, t: Any, code: str, at: int) -> str:
        tmp = self.tmp()
        fn.buf.insert(at, f"{tmp} = {code}")
        return tmp

    def result_var(self, fn: FnCtx, t: Any) -> str:
        return self.tmp()

    def truth_var(self, fn: FnCtx, code: str) -> str:
        res = self.tmp()
        fn.buf.emit(f"{res} = {code}")
        return res

    def enum_member(self, t: T.EnumType, name: str) -> str:
        return str(t.members.get(name, 0))

    def field(self, base: str, name: str) -> str:
        return f"{base}.{attr(name)}"

    def place(self, e: ast.Expr, fn: FnCtx) -> str:
        return self.expr(e, fn)

    def assign_aggregate(self, fn: FnCtx, base: str, t: Any, value: str) -> None:
        fn.buf.emit(f"{base}.assign({value})")

    def named(self, fn: FnCtx, t: Any, code: str) -> str:
        if code.isidentifier():
            return code
        tmp = self.tmp()
        fn.buf.emit(f"{tmp} = {code}")
        return tmp

    # ------------------------------------------------------------ l-values
    def stack_end_place(self, base: str, st: T.StackType, e: ast.Member, fn: FnCtx) -> str:
        which = "nexti" if e.name == "next" else "lasti"
        return f"{base}.items[_stk_{which}({base})]"

    def index_place(self, e: ast.Index, fn: FnCtx) -> str:
        base, idx, of_stack = self._indexing(e, fn)
        if of_stack:
            if e.index.const is NOT_CONST:
                # Evaluate the index now: P4 evaluates the l-value before the value.
                ti = self.tmp()
                fn.buf.emit(f"{ti} = _stk_idx({base}, {idx})")
                return f"{base}.items[{ti}]"
            return f"{base}.items[{idx}]"
        return f"{base}[{idx}]"

    def ref(self, e: ast.Expr, fn: FnCtx) -> str:
        """An aggregate reference for an l-value base; stack elements picked by a run-time
        index are fixed now, before the assigned value is evaluated."""
        if isinstance(e, ast.Index) and e.index.const is NOT_CONST and isinstance(
                T.strip_newtype(e.expr.type), T.StackType):
            base = self.ref(e.expr, fn)
            t = self.tmp()
            fn.buf.emit(f"{t} = _stk_at({base}, {self.expr(e.index, fn)})")
            return t
        if isinstance(e, ast.Member) and isinstance(
                T.strip_newtype(e.expr.type), T.StructLikeType):
            return f"{self.ref(e.expr, fn)}.{attr(e.name)}"
        return self.expr(e, fn)

    def slice_update(self, target: ast.Slice, base: str, value: str) -> str:
        lo, mask, keep = slice_masks(target)
        return fit(f"({base} & {keep}) | ((({value}) << {lo}) & {mask})", target.expr.type)
