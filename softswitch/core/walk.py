"""The half of lowering both back ends share: statements, calls, blocks, match keys.

softswitch lowers a type-checked program twice over the same rules: to Python source
(the interpreter, :mod:`softswitch.core.blocks`, the oracle) and to C
(:mod:`softswitch.fastpath.cblock`, the fast path). What a statement or a call *means*
— the dispatch by statement type and by the resolved kind of a call, compound
assignment, ``switch`` arms, loop limits, built-in methods, match keys, which ``inout``
aggregates may go by reference, whether a callee can ``exit``, which elaborated block
an ``apply`` runs, in which order a block's parts are lowered — is decided here once,
so the two back ends cannot drift apart on it. Each back end supplies the emitters:
``user_call``, the ``s_*`` statements it writes differently, and the hooks at the
bottom of :class:`LoweringWalk` (expressions: :class:`~softswitch.core.exprwalk.ExprWalk`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from softswitch.core import wire
from softswitch.core.exprwalk import flatten_slice
from softswitch.core.lower import FRESH_NODES, scalar_bits
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST

#: iterations after which a ``for`` loop stops the packet with a located error
LOOP_LIMIT = 1 << 20


def value_width(t: Any) -> int:
    """The bits a value of type ``t`` takes as an action parameter or selector field."""
    b = scalar_bits(t)
    if b is not None:
        return b[0]
    return 1 if isinstance(T.strip_newtype(t), T.BoolType) else 0


def bound_arguments(ref: Any) -> list[Any]:
    """The arguments a table's ``actions`` list gives one of its actions, in parameter
    order (its directional parameters are bound there; None where an argument is left
    to the control plane)."""
    info = getattr(ref, "call", None) if ref is not None else None
    bound = list(getattr(info, "args", ()) or ())
    if not bound and ref is not None:
        bound = [a.value for a in ref.args]
    return bound


def _contains_exit(node: Any) -> bool:
    return any(isinstance(n, ast.ExitStmt) for n in ast.walk(node))


def may_exit(decl: Any, cache: dict[int, bool]) -> bool:
    """Whether running ``decl`` (an action, function or control) can end in ``exit``:
    its own body, the actions and controls it calls, and any table it applies (an
    action of the table may exit). Both back ends wrap such calls so ``out`` arguments
    are copied back; ``cache`` (by ``id``) is the caller's, and breaks recursion through
    a callable being computed."""
    key = id(decl)
    if key in cache:
        return cache[key]
    cache[key] = False
    body = getattr(decl, "body", None) or getattr(decl, "apply", None) or decl
    result = _contains_exit(body)
    if not result:
        for n in ast.walk(body):
            if isinstance(n, ast.Call):
                info = n.resolved
                k = getattr(info, "kind", "")
                if k == "table_apply" or (k in ("action", "control_apply")
                                          and may_exit(info.decl, cache)):
                    result = True
                    break
    cache[key] = result
    return result


def const_int(e: ast.Expr | None) -> int | None:
    """The integer value of a compile-time constant expression, or None."""
    if e is None:
        return None
    c = e.const
    if c is ast.NOT_CONST:
        return None
    if isinstance(c, bool):
        return int(c)
    if isinstance(c, int):
        return c
    v = getattr(c, "value", None)
    return v if isinstance(v, int) else None


def static_path(e: ast.Expr) -> tuple[Any, ...] | None:
    """The access path of an l-value (root declaration, then fields / constant
    indices), or None when it is not a plain l-value with a static path."""
    if isinstance(e, ast.PathExpr):
        return (id(e.decl),)
    if isinstance(e, ast.Member):
        base = static_path(e.expr)
        return None if base is None else base + (e.name,)
    if isinstance(e, ast.Index):
        base = static_path(e.expr)
        idx = const_int(e.index)
        return None if base is None or idx is None else base + (idx,)
    return None


def paths_overlap(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Whether one path is a prefix of the other (they name overlapping storage)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def switch_arms(s: ast.SwitchStmt) -> tuple[list[tuple[list[ast.Expr], ast.Stmt]],
                                             ast.Stmt | None]:
    """The arms of a ``switch``: each body with the labels that select it (a label
    without a body falls through to the next body), and the ``default`` body or None.
    Labels that fall through to ``default`` are dropped: ``default`` takes them anyway."""
    arms: list[tuple[list[ast.Expr], ast.Stmt]] = []
    pending: list[ast.Expr] = []
    default: ast.Stmt | None = None
    for case in s.cases:
        if isinstance(case.label, ast.DefaultExpr):
            if case.body is not None:
                default, pending = case.body, []
            continue
        pending.append(case.label)
        if case.body is not None:
            arms.append((pending, case.body))
            pending = []
    return arms, default


def switch_on_action(s: ast.SwitchStmt) -> tuple[bool, Any]:
    """Whether a ``switch`` selects on a table's ``action_run``, and that table's decl."""
    is_action = isinstance(s.expr.type, T.ActionEnumType) or (
        isinstance(s.expr, ast.Member) and s.expr.name == "action_run")
    table = None
    if is_action and isinstance(s.expr, ast.Member) and isinstance(s.expr.expr, ast.Call):
        table = getattr(s.expr.expr.resolved, "decl", None)
    return is_action, table


class LoweringWalk:
    """Mixin of both back ends' lowerers (see the module doc), first among their bases:
    it overrides the expression lowerers' placeholders (``call``, ``global_instance``).
    ``WHERE`` ends the messages of what the back end refuses."""

    WHERE = "here"
    _exit_cache: dict[int, bool]
    callables: dict[int, str]
    _pending: list[tuple[Any, str]]
    table_fns: dict[int, str]
    block: E.BlockInstance
    pb: Any
    fail: Callable[[str, Any], Exception]   # the expression lowerer's, located at a node
    names: dict[Any, str]                   # id(declaration) -> its generated name
    spelling: dict[str, str]                # the expression lowerer's (ExprWalk)

    # ------------------------------------------------------------ statements
    def stmt(self, s: ast.Stmt, fn: Any) -> None:
        meth = getattr(self, "s_" + type(s).__name__, None)
        if meth is None:
            raise self.fail(f"statement {type(s).__name__} is not supported {self.WHERE}", s)
        meth(s, fn)

    def stmts(self, ss: list[ast.Stmt], fn: Any) -> None:
        for s in ss:
            self.stmt(s, fn)

    def s_BlockStmt(self, s: ast.BlockStmt, fn: Any) -> None:
        self.stmts(s.stmts, fn)

    def s_EmptyStmt(self, s: ast.EmptyStmt, fn: Any) -> None:
        pass

    def s_AssignStmt(self, s: ast.AssignStmt, fn: Any) -> None:
        if isinstance(s.target, ast.DontCareExpr):
            fn.buf.emit(self.spelling["discard"].format(value=self.expr(s.value, fn)))
            return
        t = flatten_slice(s.target)
        base = self.lvalue(t.expr if isinstance(t, ast.Slice) else t, fn)
        v = s.value
        if (isinstance(v, ast.Binary) and not isinstance(t, ast.Slice) and t.loc is not None
                and v.loc == t.loc and v.left.loc == t.loc and v.op not in ("&&", "||")):
            # Compound assignment (``a op= b``): the l-value is evaluated only once.
            mark = fn.buf.mark()
            right = self.expr(v.right, fn)
            left = base if fn.buf.mark() == mark else self.spill(fn, v.left.type, base, mark)
            self.store(t, base, self.binop(v.op, left, right, v), fn)
            return
        tt = T.strip_newtype(t.type) if t.type is not None else None
        if isinstance(tt, T.StructLikeType | T.StackType):
            self.store(t, base, self.expr(v, fn), fn)  # the store copies the fields
            return
        self.store(t, base, self.value(v, fn), fn)

    def s_CallStmt(self, s: ast.CallStmt, fn: Any) -> None:
        code = self.call(s.call, fn, want_value=False)
        if code is not None:
            fn.buf.emit(self.spelling["call_stmt"].format(value=code))

    def s_IfStmt(self, s: ast.IfStmt, fn: Any) -> None:
        with fn.buf.if_(self.expr(s.cond, fn)):
            self.stmt(s.then, fn)
        if s.otherwise is not None:
            with fn.buf.else_():
                self.stmt(s.otherwise, fn)

    def s_VarDecl(self, s: ast.VarDecl, fn: Any) -> None:
        t = s.type_ref.resolved
        if s.init is not None and isinstance(T.strip_newtype(t), T.StructLikeType) and \
                not isinstance(s.init, FRESH_NODES):
            # Like p4c/BMv2: a zeroed variable assigned from the initializer, so an
            # invalid source header leaves the new header's fields zero.
            src = self.expr(s.init, fn)
            name = self.declare_local(s, fn)
            self.declare_var(fn, name, t, self.zero_value(t))
            self.assign_aggregate(fn, name, T.strip_newtype(t), src)
            return
        init = self.value(s.init, fn) if s.init is not None else self.zero_value(t)
        self.declare_var(fn, self.declare_local(s, fn), t, init)

    def s_ForStmt(self, s: ast.ForStmt, fn: Any) -> None:
        with self.scope(fn):
            self.stmts(s.init, fn)
            first, count = self.loop_counters(fn)
            with self.loop_forever(fn):
                # A loop whose condition never fails (e.g. a bit<8> counter compared
                # with <= 255) stops with a located error instead of hanging the switch.
                fn.buf.emit(self.spelling["incr"].format(var=count))
                with fn.buf.if_(f"{count} > {LOOP_LIMIT}"):
                    fn.buf.emit(self.loop_limit_stmt(s.loc))
                if s.update:
                    with fn.buf.if_(self.spelling["not"].format(cond=first)):
                        self.stmts(s.update, fn)
                fn.buf.emit(self.set_stmt(first, self.spelling["false"]))
                if s.cond is not None:
                    cond = self.expr(s.cond, fn)
                    with fn.buf.if_(self.spelling["not"].format(cond=f"({cond})")):
                        fn.buf.emit(self.spelling["break"])
                self.stmt(s.body, fn)

    def s_ExitStmt(self, s: ast.ExitStmt, fn: Any) -> None:
        fn.buf.emit(self.spelling["exit"])

    def s_BreakStmt(self, s: ast.BreakStmt, fn: Any) -> None:
        fn.buf.emit(self.spelling["break"])

    def s_ContinueStmt(self, s: ast.ContinueStmt, fn: Any) -> None:
        fn.buf.emit(self.spelling["continue"])

    def declare_local(self, decl: ast.Decl, fn: Any) -> str:
        """A new name for the P4 local ``decl`` (a function's local, or a block's)."""
        name = self.tmp("l") + "_" + self.ident(decl.name)
        self.names[id(decl)] = name
        return name

    def default_arm(self, default: ast.Stmt | None, after_arms: bool, fn: Any) -> None:
        """A ``switch``'s ``default`` body: the ``else`` of its arms, or, with no arm,
        run unconditionally."""
        if default is None:
            return
        if not after_arms:
            self.stmt(default, fn)
            return
        with fn.buf.else_():
            self.stmt(default, fn)

    def s_ConstDecl(self, s: ast.ConstDecl, fn: Any) -> None:
        init = self.value(s.value, fn)
        self.declare_var(fn, self.declare_local(s, fn), s.type_ref.resolved, init)

    # ------------------------------------------------------------ calls
    def call(self, e: ast.Call, fn: Any, want_value: bool) -> str | None:
        """A call, by what the type checker resolved it to."""
        info = e.resolved
        kind = getattr(info, "kind", None)
        if kind == "action":
            return self.action_call(e, info, fn, want_value)
        if kind == "function":
            return self.function_call(e, info, fn, want_value)
        if kind == "table_apply":
            d = info.decl
            if id(d) not in self.table_fns:
                raise self.fail(f"table '{d.name}' is not part of this block", e)
            return self.table_apply_call(self.table_fns[id(d)], fn)
        if kind in ("control_apply", "parser_apply"):
            return self.block_call(e, info, fn)
        if kind == "builtin":
            return self.builtin(e, info, fn)
        if kind in ("extern_function", "extern_method"):
            return self.extern_call(e, info, fn, want_value)
        raise self.fail(f"calls of kind '{kind}' are not supported {self.WHERE}", e)

    def action_call(self, e: ast.Call, info: Any, fn: Any, want_value: bool) -> str | None:
        decl = info.decl
        return self.user_call(self.callable_name(decl), info.params, info.args, fn, False,
                              self.may_exit(decl), want_value)

    def function_call(self, e: ast.Call, info: Any, fn: Any, want_value: bool) -> str | None:
        decl = info.decl
        rt = decl.return_type.resolved if decl.return_type is not None else None
        has_value = rt is not None and not isinstance(rt, T.VoidType)
        # A function sees only its parameters, so aggregates may go by reference.
        return self.user_call(self.callable_name(decl), info.params, info.args, fn,
                              has_value, False, want_value, by_ref=True, ret_type=rt)

    def block_call(self, e: ast.Call, info: Any, fn: Any) -> str | None:
        """``apply`` of a sub-parser or sub-control: its elaborated instance, called with
        its arguments by reference where they overlap nothing (it sees only them)."""
        recv = info.receiver
        decl = getattr(recv, "decl", None)
        if isinstance(decl, ast.ParserDecl | ast.ControlDecl):
            target = self.direct_block(decl)
        elif isinstance(recv, ast.TypeNameExpr):
            target = self.direct_block(getattr(recv.type_ref.resolved, "decl", None))
        else:
            target = self.bound_block(decl)
            if target is None:
                raise self.fail("cannot find the instance being applied", e)
        is_parser = info.kind == "parser_apply"
        can_exit = is_parser or (isinstance(info.decl, ast.ControlDecl)
                                 and self.may_exit(info.decl))
        return self.user_call(target, info.params, info.args, fn, False, can_exit, False,
                              by_ref=True, **self.block_call_options(is_parser))

    def shareable(self, params: tuple[T.ParamInfo, ...], args: tuple[Any, ...]) -> set[int]:
        """Indices of inout aggregate arguments that may be passed by reference:
        l-values with a static path that no other argument's path overlaps (``in``
        arguments keep their copies: the callee may treat them as locals)."""
        paths: list[tuple[int, tuple[Any, ...] | None]] = []
        for i, a in enumerate(args[:len(params)]):
            if a is None or isinstance(a, ast.DontCareExpr):
                continue
            paths.append((i, static_path(a)))
        out: set[int] = set()
        for i, path in paths:
            p = params[i]
            if p.direction != "inout" or path is None:
                continue
            if not isinstance(T.strip_newtype(p.type), T.StructLikeType | T.StackType):
                continue
            if all(j == i or (other is not None and not paths_overlap(path, other))
                   for j, other in paths):
                out.add(i)
        return out

    def may_exit(self, decl: Any) -> bool:
        return may_exit(decl, self._exit_cache)

    def callable_name(self, decl: Any) -> str:
        """The generated name of an action or function, queued for compilation on first
        use."""
        name = self.callables.get(id(decl))
        if name is None:
            name = self.new_callable_name(decl)
            self.callables[id(decl)] = name
            self._pending.append((decl, name))
        return name

    # ------------------------------------------------------------ blocks and instances
    def lower_block_body(self) -> None:
        """A parser's or control's declarations, tables, ``apply`` and every callable
        they reach, in the order both back ends lower them."""
        for d in self.block.decl.locals:
            self.local_decl(d)
        for d in self.block.decl.locals:
            if isinstance(d, ast.TableDecl):
                self.make_table(d)
        if isinstance(self.block.decl, ast.ControlDecl):
            self.control_apply()
        else:
            self.parser_apply()
        self.drain_pending()
        for d in self.block.decl.locals:
            if isinstance(d, ast.TableDecl):
                self.table_apply_fn(d)
        self.drain_pending()

    def builtin(self, e: ast.Call, info: Any, fn: Any) -> str | None:
        """A built-in method: a type's size, a header's validity, a stack's shift."""
        b = info.builtin
        recv = info.receiver
        rt = T.strip_newtype(recv.type)
        if b in ("minSizeInBits", "minSizeInBytes", "maxSizeInBits", "maxSizeInBytes"):
            if e.const is not NOT_CONST and isinstance(e.const, int):
                return self.int_literal(e.const, e.type)
            w = wire.type_bits(rt)
            return self.int_literal(w if b.endswith("Bits") else (w + 7) // 8, e.type)
        if b == "isValid":
            r = self.expr(recv, fn)
            if isinstance(rt, T.HeaderUnionType):
                return self.any_of([f"{self.field(r, f.name)}._v" for f in rt.fields])
            return f"{r}._v"
        # the others change the receiver in place: a stack element picked by a run-time
        # index is referenced, as the interpreter's _stk_at hands out the element itself
        r = self.place(recv, fn)
        if b in ("setValid", "setInvalid"):
            valid = self.spelling["true" if b == "setValid" else "false"]
            fn.buf.emit(self.set_stmt(f"{r}._v", valid))
            if b == "setValid":
                self.after_header_write(recv, fn)
            return None
        if b in ("push_front", "pop_front"):
            return self.stack_shift(b, r, rt, info.args[0], fn)
        raise self.fail(f"method '{b}' is not supported", e)

    def key_value(self, e: ast.Expr, fn: Any) -> str:
        """A select or table key's value as it is matched: a signed key by its bits (two's
        complement within its width), a bool as 0 or 1."""
        code = self.expr(e, fn)
        b = self.bits(e.type)
        if b is not None and b[1]:
            return self.spelling["key_bits"].format(v=code, mask=self.mask_literal(b[0]))
        if isinstance(T.strip_newtype(e.type), T.BoolType):
            return self.spelling["key_bool"].format(v=code)
        return code

    def selector_fields(self, ti: E.TableInstance | None, fn: Any) -> list[tuple[str, int]]:
        """What an action selector hashes: its ``selector`` key fields (a bool as 0 or 1),
        each with the width BMv2 packs it at."""
        out: list[tuple[str, int]] = []
        for k in (ti.keys if ti is not None else []):
            if k.match_kind != "selector":
                continue
            code = self.expr(k.expr, fn)
            if isinstance(T.strip_newtype(k.expr.type), T.BoolType):
                code = self.spelling["bool_int"].format(v=code)
            out.append((code, k.width or value_width(k.expr.type)))
        return out

    def table_actions_run(self, ti: E.TableInstance | None) -> Iterator[tuple[Any, str]]:
        """Each action a table lists, with the callable its hit runs: the action, or a
        wrapper taking only the control-plane arguments when the table's ``actions``
        list binds its directional parameters."""
        for r in (ti.action_refs if ti is not None else []):
            adecl = r.action.decl
            fname = self.callable_name(adecl)
            if any(p.direction for p in adecl.params):
                fname = self.bound_action(adecl, fname, r.ref)
            yield r, fname

    def local_init(self, d: ast.Decl, fn: Any) -> str:
        """The value a block-level variable or constant starts each packet with."""
        if isinstance(d, ast.VarDecl):
            return (self.value(d.init, fn) if d.init is not None
                    else self.zero_value(d.type_ref.resolved))
        return self.value(d.value, fn)

    def drain_pending(self) -> None:
        """Compile the actions and functions queued by :meth:`callable_name`."""
        while self._pending:
            decl, name = self._pending.pop()
            self.compile_callable(decl, name)

    def instance(self, d: ast.InstanceDecl) -> None:
        """Bind a local instance declaration to what the elaborator made of it."""
        for c in self.block.children:
            if isinstance(c, E.BlockInstance) and c.local_name == d.name and \
                    c.owner is self.block:
                self.bind_block(d, c)
                return
            if isinstance(c, E.ExternInstance) and c.decl is d:
                self.bind_extern(d, c)
                return
        raise self.fail(f"instance '{d.name}' could not be elaborated", d)

    def direct_block(self, tdecl: Any) -> str:
        """A parser or control applied by its type name: the instance the elaborator
        made for it inside this block."""
        for c in self.block.children:
            if isinstance(c, E.BlockInstance) and c.decl is tdecl and \
                    c.local_name == tdecl.name:
                return self.direct_block_of(c)
        raise self.fail(f"'{tdecl.name}' is applied but was not elaborated", tdecl)

    def global_instance(self, decl: Any) -> Any:
        """Bind a top-level extern instance (``register<…>(8) r;`` outside any block)."""
        for ext in self.pb.elab.externs:
            if ext.decl is decl:
                self.bind_extern(decl, ext)
                return self.bound_extern(decl)
        return None

    # ------------------------------------------------------------ back-end hooks
    def local_decl(self, d: ast.Node) -> None:  # pragma: no cover
        raise NotImplementedError

    def make_table(self, d: ast.TableDecl) -> None:  # pragma: no cover
        raise NotImplementedError

    def table_apply_fn(self, d: ast.TableDecl) -> None:  # pragma: no cover
        raise NotImplementedError

    def control_apply(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def parser_apply(self) -> None:  # pragma: no cover
        raise NotImplementedError

    def compile_callable(self, decl: Any, name: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def bound_action(self, adecl: ast.ActionDecl, fname: str,
                     ref: Any) -> str:  # pragma: no cover
        """A wrapper of action ``fname`` binding the arguments ``ref`` gives it."""
        raise NotImplementedError

    def bind_block(self, key_decl: Any, inst: E.BlockInstance) -> None:  # pragma: no cover
        """Bind a sub-parser/sub-control instance to ``key_decl``."""
        raise NotImplementedError

    def ident(self, name: str) -> str:  # pragma: no cover
        """A P4 name as a name of the generated language."""
        raise NotImplementedError

    def declare_var(self, fn: Any, name: str, t: Any, init: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def scope(self, fn: Any) -> AbstractContextManager[None]:  # pragma: no cover
        """Lines emitted inside declare names that end with it (where the language
        scopes them)."""
        raise NotImplementedError

    def loop_counters(self, fn: Any) -> tuple[str, str]:  # pragma: no cover
        """Declare a loop's first-iteration flag (true) and iteration count (0)."""
        raise NotImplementedError

    def loop_forever(self, fn: Any) -> AbstractContextManager[None]:  # pragma: no cover
        raise NotImplementedError

    def loop_limit_stmt(self, loc: Any) -> str:  # pragma: no cover
        """Stop the packet: a loop at ``loc`` ran :data:`LOOP_LIMIT` times."""
        raise NotImplementedError

    def zero_value(self, t: Any) -> str:  # pragma: no cover
        """The value a variable of type ``t`` starts with (zeros, headers invalid)."""
        raise NotImplementedError

    def user_call(self, target: str, params: tuple[T.ParamInfo, ...], args: tuple[Any, ...],
                  fn: Any, has_value: bool, can_exit: bool, want_value: bool,
                  **options: Any) -> str | None:  # pragma: no cover - back ends
        raise NotImplementedError

    def stack_shift(self, method: str, stack: str, st: T.StackType, count: ast.Expr,
                    fn: Any) -> str | None:  # pragma: no cover
        """``push_front``/``pop_front`` of ``count`` elements."""
        raise NotImplementedError

    def int_literal(self, v: int, t: Any) -> str:  # pragma: no cover
        raise NotImplementedError

    def any_of(self, conds: list[str]) -> str:  # pragma: no cover
        raise NotImplementedError

    def action_label(self, table: Any, decl: Any, label: ast.Expr) -> str:  # pragma: no cover
        """What a ``switch (t.apply().action_run)`` case compares with for an action."""
        raise NotImplementedError

    def table_apply_call(self, table_fn: str, fn: Any) -> str:  # pragma: no cover
        """The code (an expression) that applies the table whose function is
        ``table_fn``."""
        raise NotImplementedError

    def extern_call(self, e: ast.Call, info: Any, fn: Any,
                    want_value: bool) -> str | None:  # pragma: no cover
        raise NotImplementedError

    def bound_block(self, decl: Any) -> str | None:  # pragma: no cover
        """The callable of a parser/control instance declared in this block."""
        raise NotImplementedError

    def block_call_options(self, is_parser: bool) -> dict[str, Any]:  # pragma: no cover
        """``user_call``'s back-end options for a sub-block's apply."""
        raise NotImplementedError

    def direct_block_of(self, inst: E.BlockInstance) -> str:  # pragma: no cover
        raise NotImplementedError

    def bind_extern(self, key_decl: Any, inst: E.ExternInstance) -> None:  # pragma: no cover
        raise NotImplementedError

    def bound_extern(self, decl: Any) -> Any:  # pragma: no cover
        raise NotImplementedError

    def new_callable_name(self, decl: Any) -> str:  # pragma: no cover
        raise NotImplementedError
