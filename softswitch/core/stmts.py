"""Lowering of P4 statements and of calls with copy-in/copy-out.

Extends :class:`~softswitch.core.lower.ExprLowerer`. Calls of actions, functions and
sub-blocks pass ``in``/``inout`` arguments as copies and receive ``out``/``inout``
results back as a tuple the caller assigns, left to right, which is P4's copy-in/
copy-out rule; an ``exit`` inside the callee still performs the copy-out (the values
travel on the :class:`~softswitch.core.execution.ExitSignal`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from softswitch.core.lower import ExprLowerer, FnCtx
from softswitch.core.walk import (
    LOOP_LIMIT,
    LoweringWalk,
    const_int,
    switch_arms,
    switch_on_action,
)
from softswitch.frontend import ast
from softswitch.frontend import types as T

__all__ = ["LOOP_LIMIT", "StmtLowerer", "const_int"]


class StmtLowerer(LoweringWalk, ExprLowerer):
    """Statements and user-level calls; externs and tables are left to subclasses."""

    WHERE = "by softswitch"

    def scope(self, fn: FnCtx) -> AbstractContextManager[None]:
        return nullcontext()

    def loop_counters(self, fn: FnCtx) -> tuple[str, str]:
        first, count = self.tmp("_first"), self.tmp("_n")
        fn.buf.emit(f"{first} = True")
        fn.buf.emit(f"{count} = 0")
        return first, count

    @contextmanager
    def loop_forever(self, fn: FnCtx) -> Iterator[None]:
        fn.buf.emit("while True:")
        with fn.buf.block():
            yield

    def loop_limit_stmt(self, loc: Any) -> str:
        return f"_RT.loop_limit({self.const_obj(loc, '_loc')})"

    def declare_var(self, fn: FnCtx, name: str, t: Any, init: str) -> None:
        fn.buf.emit(f"{name} = {init}")

    zero_value = ExprLowerer.default_of

    def ident(self, name: str) -> str:
        return name

    def s_ReturnStmt(self, s: ast.ReturnStmt, fn: FnCtx) -> None:
        val = self.value(s.value, fn) if s.value is not None else None
        fn.buf.emit(self.return_code(fn, val))

    def return_code(self, fn: FnCtx, val: str | None) -> str:
        if fn.kind == "state":
            return "return _ACCEPT"
        parts = []
        if fn.has_value:
            parts.append(val if val is not None else "None")
        parts.extend(fn.outs)
        if not parts:
            return "return"
        if len(parts) == 1 and not fn.outs:
            return f"return {parts[0]}"
        return "return (" + ", ".join(parts) + ",)"

    def s_ForInStmt(self, s: ast.ForInStmt, fn: FnCtx) -> None:
        coll = s.collection
        var = self.declare_local(s.var, fn)
        if isinstance(coll, ast.Binary) and coll.op == "..":
            lo = self.expr(coll.left, fn)
            hi = self.expr(coll.right, fn)
            it = f"range({lo}, ({hi}) + 1)"
        else:
            ct = T.strip_newtype(coll.type)
            c = self.expr(coll, fn)
            it = f"list({c}.items)" if isinstance(ct, T.StackType) else f"list({c})"
        loopv = self.tmp("_it")
        fn.buf.emit(f"for {loopv} in {it}:")
        with fn.buf.block():
            fn.buf.emit(f"{var} = {loopv}")
            self.stmt(s.body, fn)

    def s_SwitchStmt(self, s: ast.SwitchStmt, fn: FnCtx) -> None:
        sel = self.tmp("_sw")
        fn.buf.emit(f"{sel} = {self.expr(s.expr, fn)}")
        is_action, table = switch_on_action(s)
        arms, default = switch_arms(s)
        for i, (labels, body) in enumerate(arms):
            tests = [self.case_test(sel, lb, is_action, table, fn) for lb in labels]
            fn.buf.emit(f"{'elif' if i else 'if'} {' or '.join(tests)}:")
            with fn.buf.block():
                self.stmt(body, fn)
        self.default_arm(default, bool(arms), fn)

    def case_test(self, sel: str, label: ast.Expr, is_action: bool, table: Any,
                  fn: FnCtx) -> str:
        if is_action:
            decl = getattr(label, "decl", None)
            name = self.action_label(table, decl, label)
            return f"{sel} is {name}"
        return f"{sel} == {self.expr(label, fn)}"

    # ------------------------------------------------------------ user calls
    def user_call(self, pyfunc: str, params: tuple[T.ParamInfo, ...],
                  args: tuple[Any, ...], fn: FnCtx, has_value: bool, can_exit: bool,
                  want_value: bool, extra_args: tuple[str, ...] = (),
                  exc: str = "_Exit", by_ref: bool = False,
                  ret_type: Any = None) -> str | None:
        """Copy-in/copy-out call of a lowered callable returning (value?, outs…).
        (``ret_type``: the C back end declares its result with it; Python needs not.)

        ``by_ref``: the callee sees nothing but its parameters (a sub-parser,
        sub-control or function), so ``inout`` aggregates that overlap no other
        argument can be passed by reference: the result is the same as copying in
        and out, without copying whole header structs on every apply.
        """
        argv: list[str] = list(extra_args)
        outs: list[tuple[ast.Expr, int]] = []    # (argument, index in the callee's outs)
        shared = self.shareable(params, args) if by_ref else set()
        k = 0
        for i, (p, a) in enumerate(zip(params, args, strict=False)):
            d = p.direction
            if d in ("out", "inout"):
                k += 1
            if d == "out":
                argv.append(self.default_of(p.type))
                if a is not None and not isinstance(a, ast.DontCareExpr):
                    outs.append((a, k - 1))
            elif a is None:
                argv.append("None")
            elif i in shared:
                argv.append(self.expr(a, fn))
            elif d == "inout":
                argv.append(self.value(a, fn))
                if not isinstance(a, ast.DontCareExpr):
                    outs.append((a, k - 1))
            elif isinstance(a, ast.DontCareExpr):
                argv.append(self.default_of(p.type))
            else:
                argv.append(self.value(a, fn))
        call = f"{pyfunc}({', '.join(argv)})"
        if not outs:
            # Nothing to copy out: an ExitSignal simply propagates.
            return f"{call}[0]" if has_value and k else call
        res = self.tmp("_r")
        buf = fn.buf
        if can_exit:
            buf.emit("try:")
            with buf.block():
                buf.emit(f"{res} = {call}")
            buf.emit(f"except {exc} as _e:")
            with buf.block():
                self.copy_out("_e.values", outs, False, fn)
                buf.emit("raise")
        else:
            buf.emit(f"{res} = {call}")
        self.copy_out(res, outs, has_value, fn)
        if has_value:
            return f"{res}[0]"
        return None

    def copy_out(self, res: str, outs: list[tuple[ast.Expr, int]], has_value: bool,
                 fn: FnCtx) -> None:
        base = 1 if has_value else 0
        for a, idx in outs:
            self.assign(a, f"{res}[{base + idx}]", fn)
