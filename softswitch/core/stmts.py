"""Lowering of P4 statements and of calls with copy-in/copy-out.

Extends :class:`~softswitch.core.lower.ExprLowerer`. Calls of actions, functions and
sub-blocks pass ``in``/``inout`` arguments as copies and receive ``out``/``inout``
results back as a tuple the caller assigns, left to right, which is P4's copy-in/
copy-out rule; an ``exit`` inside the callee still performs the copy-out (the values
travel on the :class:`~softswitch.core.execution.ExitSignal`).
"""

from __future__ import annotations

from typing import Any

from softswitch.core.lower import FRESH_NODES, ExprLowerer, FnCtx, flatten_slice
from softswitch.core.walk import LoweringWalk, const_int
from softswitch.frontend import ast
from softswitch.frontend import types as T

LOOP_LIMIT = 1 << 20


__all__ = ["LOOP_LIMIT", "StmtLowerer", "const_int"]


class StmtLowerer(LoweringWalk, ExprLowerer):
    """Statements and user-level calls; externs and tables are left to subclasses."""

    WHERE = "by softswitch"

    def s_AssignStmt(self, s: ast.AssignStmt, fn: FnCtx) -> None:
        if isinstance(s.target, ast.DontCareExpr):
            fn.buf.emit(f"_ = {self.expr(s.value, fn)}")
            return
        t = flatten_slice(s.target)
        base = self.lvalue(t.expr if isinstance(t, ast.Slice) else t, fn)
        v = s.value
        if (isinstance(v, ast.Binary) and not isinstance(t, ast.Slice) and t.loc is not None
                and v.loc == t.loc and v.left.loc == t.loc and v.op not in ("&&", "||")):
            # Compound assignment (``a op= b``): the l-value is evaluated only once.
            mark = fn.buf.mark()
            right = self.expr(v.right, fn)
            if fn.buf.mark() != mark:
                tmp = self.tmp()
                fn.buf.insert(mark, f"{tmp} = {base}")
                self.store(t, base, self.binop(v.op, tmp, right, v), fn)
                return
            self.store(t, base, self.binop(v.op, base, right, v), fn)
            return
        tt = T.strip_newtype(t.type) if t.type is not None else None
        if isinstance(tt, T.StructLikeType | T.StackType):
            self.store(t, base, self.expr(v, fn), fn)  # assign() copies the fields
            return
        self.store(t, base, self.value(v, fn), fn)

    def s_CallStmt(self, s: ast.CallStmt, fn: FnCtx) -> None:
        code = self.call(s.call, fn, want_value=False)
        if code is not None:
            fn.buf.emit(code)

    def s_IfStmt(self, s: ast.IfStmt, fn: FnCtx) -> None:
        cond = self.expr(s.cond, fn)
        fn.buf.emit(f"if {cond}:")
        with fn.buf.block():
            self.stmt(s.then, fn)
        if s.otherwise is not None:
            fn.buf.emit("else:")
            with fn.buf.block():
                self.stmt(s.otherwise, fn)

    def declare_local(self, decl: ast.Decl, fn: FnCtx) -> str:
        """A Python name for a new P4 local (function local, or block global)."""
        name = self.tmp("l") + "_" + decl.name
        self.names[id(decl)] = name
        return name

    def s_VarDecl(self, s: ast.VarDecl, fn: FnCtx) -> None:
        t = s.type_ref.resolved
        if s.init is not None and isinstance(T.strip_newtype(t), T.StructLikeType) and \
                not isinstance(s.init, FRESH_NODES):
            # Like p4c/BMv2: a zeroed variable assigned from the initializer, so an
            # invalid source header leaves the new header's fields zero.
            src = self.expr(s.init, fn)
            name = self.declare_local(s, fn)
            fn.buf.emit(f"{name} = {self.default_of(t)}")
            fn.buf.emit(f"{name}.assign({src})")
            return
        init = self.value(s.init, fn) if s.init is not None else self.default_of(t)
        name = self.declare_local(s, fn)
        fn.buf.emit(f"{name} = {init}")

    def s_ConstDecl(self, s: ast.ConstDecl, fn: FnCtx) -> None:
        init = self.value(s.value, fn)
        name = self.declare_local(s, fn)
        fn.buf.emit(f"{name} = {init}")

    def s_ExitStmt(self, s: ast.ExitStmt, fn: FnCtx) -> None:
        fn.buf.emit("raise _Exit()")

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

    def s_BreakStmt(self, s: ast.BreakStmt, fn: FnCtx) -> None:
        fn.buf.emit("break")

    def s_ContinueStmt(self, s: ast.ContinueStmt, fn: FnCtx) -> None:
        fn.buf.emit("continue")

    def s_ForStmt(self, s: ast.ForStmt, fn: FnCtx) -> None:
        self.stmts(s.init, fn)
        first = self.tmp("_first")
        count = self.tmp("_n")
        fn.buf.emit(f"{first} = True")
        fn.buf.emit(f"{count} = 0")
        fn.buf.emit("while True:")
        with fn.buf.block():
            # A loop whose condition never fails (e.g. a bit<8> counter compared with
            # <= 255) stops with a located error instead of hanging the switch.
            fn.buf.emit(f"{count} += 1")
            fn.buf.emit(f"if {count} > {LOOP_LIMIT}:")
            with fn.buf.block():
                fn.buf.emit(f"_RT.loop_limit({self.const_obj(s.loc, '_loc')})")
            if s.update:
                fn.buf.emit(f"if not {first}:")
                with fn.buf.block():
                    self.stmts(s.update, fn)
            fn.buf.emit(f"{first} = False")
            if s.cond is not None:
                fn.buf.emit(f"if not ({self.expr(s.cond, fn)}):")
                with fn.buf.block():
                    fn.buf.emit("break")
            self.stmt(s.body, fn)

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
        is_action = isinstance(s.expr.type, T.ActionEnumType) or (
            isinstance(s.expr, ast.Member) and s.expr.name == "action_run")
        table = None
        if is_action and isinstance(s.expr, ast.Member) and isinstance(s.expr.expr, ast.Call):
            table = getattr(s.expr.expr.resolved, "decl", None)
        pending: list[str] = []
        first = True
        default_body: ast.BlockStmt | None = None
        has_default = False
        for case in s.cases:
            if isinstance(case.label, ast.DefaultExpr):
                has_default = True
                if case.body is None:
                    continue
                default_body = case.body
                pending = []
                continue
            pending.append(self.case_test(sel, case.label, is_action, table, fn))
            if case.body is None:
                continue
            fn.buf.emit(f"{'if' if first else 'elif'} {' or '.join(pending)}:")
            first = False
            with fn.buf.block():
                self.stmt(case.body, fn)
            pending = []
        if has_default and default_body is not None:
            if first:
                self.stmt(default_body, fn)
            else:
                fn.buf.emit("else:")
                with fn.buf.block():
                    self.stmt(default_body, fn)

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
