"""The half of lowering both back ends share: which statement, which call, which block.

softswitch lowers a type-checked program twice over the same rules: to Python source
(the interpreter, :mod:`softswitch.core.blocks`, the oracle) and to C
(:mod:`softswitch.fastpath.cblock`, the fast path). What a statement or a call *means*
— the dispatch by statement type and by the resolved kind of a call, which ``inout``
aggregates may go by reference, whether a callee can ``exit``, which elaborated block
an ``apply`` runs — is decided here once, so the two back ends cannot drift apart on
it. Each back end supplies the emitters: ``user_call``, the ``s_*`` statements it
writes differently, and the few hooks at the bottom of :class:`LoweringWalk`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T


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
    def user_call(self, target: str, params: tuple[T.ParamInfo, ...], args: tuple[Any, ...],
                  fn: Any, has_value: bool, can_exit: bool, want_value: bool,
                  **options: Any) -> str | None:  # pragma: no cover - back ends
        raise NotImplementedError

    def builtin(self, e: ast.Call, info: Any, fn: Any) -> str | None:  # pragma: no cover
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
