"""Lowering of P4 statements and of calls with copy-in/copy-out into C, rule for rule
the interpreter's :mod:`softswitch.core.stmts`.

A callee gets ``in`` values by value and ``out``/``inout`` values through pointers to
the caller's temporaries, which the caller copies back (BMv2's assign semantics for
aggregates) when the callee returns, and also when it ``exit``s (or, for a sub-parser,
fails) — exactly when the interpreter catches the exception that carries the values.
Sub-blocks and functions get non-overlapping ``inout`` aggregates by reference, as in
the interpreter.
"""

from __future__ import annotations

from typing import Any

from softswitch.core.stmts import LOOP_LIMIT, const_int
from softswitch.core.walk import LoweringWalk
from softswitch.fastpath.cexpr import ExprGen, FnCtx, flatten_slice
from softswitch.fastpath.ctypes_ import Unsupported, scalar
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
    def stmt(self, s: ast.Stmt, fn: FnCtx) -> None:
        """As the interpreter's; what the C back end cannot do is located at ``s``."""
        try:
            super().stmt(s, fn)
        except Unsupported as e:
            if e.loc is None:
                e.loc = s.loc
            raise

    def s_AssignStmt(self, s: ast.AssignStmt, fn: FnCtx) -> None:
        if isinstance(s.target, ast.DontCareExpr):
            fn.buf.emit(f"(void)({self.expr(s.value, fn)});")
            return
        t = flatten_slice(s.target)
        base = self.lvalue(t.expr if isinstance(t, ast.Slice) else t, fn)
        v = s.value
        if (isinstance(v, ast.Binary) and not isinstance(t, ast.Slice) and t.loc is not None
                and v.loc == t.loc and v.left.loc == t.loc and v.op not in ("&&", "||")):
            mark = fn.buf.mark()
            right = self.expr(v.right, fn)
            if fn.buf.mark() != mark:
                tmp = self.declare(fn, v.left.type, base, at=mark)
                self.store(t, base, self.binop(v.op, tmp, right, v), fn)
                return
            self.store(t, base, self.binop(v.op, base, right, v), fn)
            return
        self.store(t, base, self.value(v, fn), fn)

    def s_CallStmt(self, s: ast.CallStmt, fn: FnCtx) -> None:
        code = self.call(s.call, fn, want_value=False)
        if code is not None:
            fn.buf.emit(f"(void)({code});")

    def s_IfStmt(self, s: ast.IfStmt, fn: FnCtx) -> None:
        cond = self.expr(s.cond, fn)
        with fn.buf.block(f"if ({cond})"):
            self.stmt(s.then, fn)
        if s.otherwise is not None:
            with fn.buf.block("else"):
                self.stmt(s.otherwise, fn)

    def declare_local(self, decl: ast.Decl, fn: FnCtx) -> str:
        name = self.tmp("l") + "_" + _c_name(decl.name)
        self.names[id(decl)] = name
        return name

    def s_VarDecl(self, s: ast.VarDecl, fn: FnCtx) -> None:
        t = s.type_ref.resolved
        from softswitch.core.lower import FRESH_NODES
        if s.init is not None and isinstance(T.strip_newtype(t), T.StructLikeType) and \
                not isinstance(s.init, FRESH_NODES):
            src = self.expr(s.init, fn)
            name = self.declare_local(s, fn)
            fn.buf.emit(f"{self.ct(t)} {name} = {self.zero(t)};")
            tv = self.tmp("v")
            tt = T.strip_newtype(t)
            fn.buf.emit(f"{{ {self.ct(tt)} {tv} = {src}; {self.types.asg(tt)}(&{name}, &{tv}); }}")
            return
        init = self.value(s.init, fn) if s.init is not None else self.zero(t)
        name = self.declare_local(s, fn)
        fn.buf.emit(f"{self.ct(t)} {name} = {init};")

    def s_ConstDecl(self, s: ast.ConstDecl, fn: FnCtx) -> None:
        init = self.value(s.value, fn)
        name = self.declare_local(s, fn)
        fn.buf.emit(f"{self.ct(s.type_ref.resolved)} {name} = {init};")

    def s_ExitStmt(self, s: ast.ExitStmt, fn: FnCtx) -> None:
        fn.buf.emit("return ST_EXIT;")

    def s_ReturnStmt(self, s: ast.ReturnStmt, fn: FnCtx) -> None:
        if fn.kind == "state":
            raise self.fail("'return' in a parser state is not supported", s)
        if s.value is not None:
            val = self.value(s.value, fn)
            if fn.has_value:
                fn.buf.emit(f"*ret = {val};")
            else:
                fn.buf.emit(f"(void)({val});")
        fn.buf.emit("return ST_OK;")

    def s_BreakStmt(self, s: ast.BreakStmt, fn: FnCtx) -> None:
        fn.buf.emit("break;")

    def s_ContinueStmt(self, s: ast.ContinueStmt, fn: FnCtx) -> None:
        fn.buf.emit("continue;")

    def s_ForStmt(self, s: ast.ForStmt, fn: FnCtx) -> None:
        with fn.buf.block(""):
            self.stmts(s.init, fn)
            first = self.tmp("first")
            count = self.tmp("n")
            fn.buf.emit(f"int {first} = 1;")
            fn.buf.emit(f"uint64_t {count} = 0;")
            with fn.buf.block("for (;;)"):
                fn.buf.emit(f"{count} += 1;")
                with fn.buf.block(f"if ({count} > {LOOP_LIMIT})"):
                    fn.buf.emit(f"return cb_abort(c, -1, {self.prog.obj(s.loc)}, "
                                "\"loop_limit\");")
                if s.update:
                    with fn.buf.block(f"if (!{first})"):
                        self.stmts(s.update, fn)
                fn.buf.emit(f"{first} = 0;")
                if s.cond is not None:
                    with fn.buf.block(f"if (!({self.expr(s.cond, fn)}))"):
                        fn.buf.emit("break;")
                self.stmt(s.body, fn)

    def s_ForInStmt(self, s: ast.ForInStmt, fn: FnCtx) -> None:
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

    def s_SwitchStmt(self, s: ast.SwitchStmt, fn: FnCtx) -> None:
        sel_code = self.expr(s.expr, fn)
        is_action = isinstance(s.expr.type, T.ActionEnumType) or (
            isinstance(s.expr, ast.Member) and s.expr.name == "action_run")
        table = None
        if is_action and isinstance(s.expr, ast.Member) and isinstance(s.expr.expr, ast.Call):
            table = getattr(s.expr.expr.resolved, "decl", None)
        from softswitch.fastpath.ctypes_ import is_wide
        if is_wide(s.expr.type):
            raise self.fail("switch on a value wider than 128 bits is not supported", s)
        sel = self.tmp("sw")
        if is_action:
            fn.buf.emit(f"int32_t {sel} = {sel_code};")
        else:
            fn.buf.emit(f"{self.ct(s.expr.type)} {sel} = {sel_code};")
        pending: list[str] = []
        first = True
        default_body: ast.BlockStmt | None = None
        has_default = False
        depth = 0
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
            head = f"if ({' || '.join(pending)})"
            if not first:
                fn.buf.emit("else {")
                fn.buf.level += 1
                depth += 1
            first = False
            with fn.buf.block(head):
                self.stmt(case.body, fn)
            pending = []
        if has_default and default_body is not None:
            if first:
                self.stmt(default_body, fn)
            else:
                with fn.buf.block("else"):
                    self.stmt(default_body, fn)
        for _ in range(depth):
            fn.buf.level -= 1
            fn.buf.emit("}")

    def case_test(self, sel: str, label: ast.Expr, is_action: bool, table: Any,
                  fn: FnCtx) -> str:
        if is_action:
            decl = getattr(label, "decl", None)
            return f"{sel} == {self.action_label(table, decl, label)}"
        return f"{sel} == {self.expr(label, fn)}"

    # ------------------------------------------------------------ user calls
    def user_call(self, cfunc: str, params: tuple[T.ParamInfo, ...], args: tuple[Any, ...],
                  fn: FnCtx, has_value: bool, can_exit: bool, want_value: bool,
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


def _c_name(name: str) -> str:
    from softswitch.fastpath.ctypes_ import ident
    return ident(name)


def scalar_ctype(t: Any) -> str | None:
    sc = scalar(t)
    return sc.ctype if sc is not None else None
