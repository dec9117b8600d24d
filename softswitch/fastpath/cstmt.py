"""Lowering of P4 statements and of calls with copy-in/copy-out into C: the C spelling
of the statements :class:`softswitch.core.walk.LoweringWalk` decides for both back ends
(the interpreter's is :mod:`softswitch.core.stmts`), and C's own calls.

A callee gets ``in`` values by value and ``out``/``inout`` values through pointers to
the caller's temporaries, which the caller copies back (BMv2's assign semantics for
aggregates) when the callee returns, and also when it ``exit``s (or, for a sub-parser,
fails) — exactly when the interpreter catches the exception that carries the values.
Sub-blocks and functions get non-overlapping ``inout`` aggregates by reference, as in
the interpreter.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

from softswitch.core.stmts import const_int
from softswitch.core.walk import LoweringWalk, switch_arms, switch_on_action
from softswitch.fastpath.cexpr import CFnCtx, ExprGen
from softswitch.fastpath.ctypes_ import Unsupported, ident, is_wide, scalar
from softswitch.frontend import ast
from softswitch.frontend import types as T

__all__ = ["StmtGen", "const_int"]


def _is_packet(t: Any) -> str | None:
    t = T.strip_newtype(t)
    if isinstance(t, T.ExternType) and t.name in ("packet_in", "packet_out"):
        return t.name
    return None


class StmtGen(LoweringWalk, ExprGen):
    WHERE = "by the C back end"

    # ------------------------------------------------------------ statements
    def stmt(self, s: ast.Stmt, fn: CFnCtx) -> None:
        """As the interpreter's; what the C back end cannot do is located at ``s``."""
        try:
            super().stmt(s, fn)
        except Unsupported as e:
            if e.loc is None:
                e.loc = s.loc
            raise

    def scope(self, fn: CFnCtx) -> AbstractContextManager[None]:
        return fn.buf.block("")

    def loop_counters(self, fn: CFnCtx) -> tuple[str, str]:
        first, count = self.tmp("first"), self.tmp("n")
        fn.buf.emit(f"int {first} = 1;")
        fn.buf.emit(f"uint64_t {count} = 0;")
        return first, count

    def loop_forever(self, fn: CFnCtx) -> AbstractContextManager[None]:
        return fn.buf.block("for (;;)")

    def loop_limit_stmt(self, loc: Any) -> str:
        return f"return cb_abort(c, -1, {self.prog.obj(loc)}, \"loop_limit\");"

    def declare_var(self, fn: CFnCtx, name: str, t: Any, init: str) -> None:
        fn.buf.emit(f"{self.ct(t)} {name} = {init};")

    zero_value = ExprGen.zero

    ident = staticmethod(ident)

    def s_ReturnStmt(self, s: ast.ReturnStmt, fn: CFnCtx) -> None:
        if fn.kind == "state":
            raise self.fail("'return' in a parser state is not supported", s)
        if s.value is not None:
            val = self.value(s.value, fn)
            if fn.has_value:
                fn.buf.emit(f"*ret = {val};")
            else:
                fn.buf.emit(f"(void)({val});")
        fn.buf.emit("return ST_OK;")

    def s_ForInStmt(self, s: ast.ForInStmt, fn: CFnCtx) -> None:
        coll = s.collection
        if not (isinstance(coll, ast.Binary) and coll.op == ".."):
            raise self.fail("for-in over a collection is not supported by the C back end", s)
        with fn.buf.block(""):
            lo = self.expr(coll.left, fn)
            hi = self.expr(coll.right, fn)
            it = self.tmp("it")
            var = self.declare_local(s.var, fn)
            vt = s.var.type_ref.resolved
            fn.buf.emit(f"{self.ct(vt)} {var} = 0;")
            with fn.buf.block(f"for (i128 {it} = (i128)({lo}); {it} <= (i128)({hi}); {it}++)"):
                fn.buf.emit(f"{var} = ({self.ct(vt)}){it};")
                self.stmt(s.body, fn)

    def s_SwitchStmt(self, s: ast.SwitchStmt, fn: CFnCtx) -> None:
        sel_code = self.expr(s.expr, fn)
        is_action, table = switch_on_action(s)
        if is_wide(s.expr.type):
            raise self.fail("switch on a value wider than 128 bits is not supported", s)
        sel = self.tmp("sw")
        if is_action:
            fn.buf.emit(f"int32_t {sel} = {sel_code};")
        else:
            fn.buf.emit(f"{self.ct(s.expr.type)} {sel} = {sel_code};")
        arms, default = switch_arms(s)
        for i, (labels, body) in enumerate(arms):
            tests = [self.case_test(sel, lb, is_action, table, fn) for lb in labels]
            if i:
                fn.buf.emit("else {")
                fn.buf.level += 1
            with fn.buf.if_(" || ".join(tests)):
                self.stmt(body, fn)
        self.default_arm(default, bool(arms), fn)
        for _ in range(len(arms) - 1):
            fn.buf.level -= 1
            fn.buf.emit("}")

    def case_test(self, sel: str, label: ast.Expr, is_action: bool, table: Any,
                  fn: CFnCtx) -> str:
        if is_action:
            decl = getattr(label, "decl", None)
            return f"{sel} == {self.action_label(table, decl, label)}"
        return f"{sel} == {self.expr(label, fn)}"

    # ------------------------------------------------------------ user calls
    def user_call(self, cfunc: str, params: tuple[T.ParamInfo, ...], args: tuple[Any, ...],
                  fn: CFnCtx, has_value: bool, can_exit: bool, want_value: bool,
                  exc: str = "ST_EXIT", by_ref: bool = False, all_ptr: bool = False,
                  ret_type: Any = None, frame: bool = True) -> str | None:
        """Call a generated function with copy-in/copy-out (see the module doc).
        ``all_ptr``: every parameter is passed by pointer (a block's apply)."""
        argv: list[str] = ["c"] + (["f"] if frame else [])
        pre: list[str] = []
        outs: list[tuple[ast.Expr, str]] = []
        shared = self.shareable(params, args) if by_ref else set()
        for i, (p, a) in enumerate(zip(params, args, strict=False)):
            d = p.direction
            pk = _is_packet(p.type)
            if pk is not None:
                if a is None:
                    raise self.fail("a packet argument is missing", None)
                argv.append(self.expr(a, fn))
                continue
            ct = self.ct(p.type)
            if d == "out":
                t = self.tmp("a")
                pre.append(f"{ct} {t} = {self.zero(p.type)};")
                argv.append(f"&{t}")
                if a is not None and not isinstance(a, ast.DontCareExpr):
                    outs.append((a, t))
            elif a is None:
                if all_ptr or d == "inout":
                    t = self.tmp("a")
                    pre.append(f"{ct} {t} = {self.zero(p.type)};")
                    argv.append(f"&{t}")
                else:
                    argv.append(self.zero(p.type))
            elif i in shared:
                argv.append(f"&({self.expr(a, fn)})")
            elif d == "inout":
                t = self.tmp("a")
                pre.append(f"{ct} {t} = {self.value(a, fn)};")
                argv.append(f"&{t}")
                if not isinstance(a, ast.DontCareExpr):
                    outs.append((a, t))
            else:
                v = self.zero(p.type) if isinstance(a, ast.DontCareExpr) else self.value(a, fn)
                if all_ptr:
                    t = self.tmp("a")
                    pre.append(f"{ct} {t} = {v};")
                    argv.append(f"&{t}")
                else:
                    argv.append(v)
        buf = fn.buf
        res = None
        if has_value:
            res = self.tmp("r")
            buf.emit(f"{self.ct(ret_type)} {res} = {self.zero(ret_type)};")
            argv.append(f"&{res}")
        for line in pre:
            buf.emit(line)
        buf.emit(f"st = {cfunc}({', '.join(argv)});")
        if outs:
            cond = f"st == ST_OK || st == {exc}" if can_exit else "st == ST_OK"
            with buf.block(f"if ({cond})"):
                for a, t in outs:
                    self.assign(a, t, fn)
        self.check(fn)
        return res


def scalar_ctype(t: Any) -> str | None:
    sc = scalar(t)
    return sc.ctype if sc is not None else None
