"""A parser state's transition, lowered the same way by both back ends.

What a ``transition`` means — reject when there is none, go to a state, or evaluate a
``select``: each key once, the cases in order, a keyset matching as a default, a value
set, a tuple of per-key keysets, a mask (``&&&``), a range (``..``) or a value, and
``error.NoMatch`` when no case matches — is decided here once, for the interpreter
(:mod:`softswitch.core.blocks`) and the C fast path (:mod:`softswitch.fastpath.cblock`)
alike. Each back end writes the pieces: how to jump, how to hold a key, how to write a
constant or an expression as a key value, how to ask a value set, and its spelling of
"true", "and" and a range test.
"""

from __future__ import annotations

from typing import Any

from softswitch.core.lower import scalar_bits
from softswitch.frontend import ast

Key = tuple[str, Any]          # (the variable holding a select key, its type)


class StateRef:
    """A select case's target state known only by name (the elaborated state is not
    attached: accept, reject)."""

    def __init__(self, name: str) -> None:
        self.name = name


class TransitionWalk:
    """Mixin of both back ends' block lowerers; the hooks at the bottom are theirs."""

    TRUE = "True"       # a condition that always holds, as the back end writes it
    fail: Any           # the expression lowerer's, located at a node

    def transition(self, tr: Any, fn: Any) -> None:
        if tr is None:  # no transition statement: p4c implies reject
            self.reject(fn)
            return
        if isinstance(tr, ast.PathExpr):
            self.goto(tr.decl if tr.decl is not None else tr, fn)
            return
        if isinstance(tr, ast.SelectExpr):
            self.select(tr, fn)
            return
        raise self.fail("unsupported transition", tr)

    def select(self, sel: ast.SelectExpr, fn: Any) -> None:
        keys = [(self.select_key(k, fn), k.type) for k in sel.keys]
        for case in sel.cases:
            cond = self.keyset_cond(case.keyset, keys, fn)
            target = getattr(case, "state_decl", None) or StateRef(case.state)
            if cond == self.TRUE:
                self.goto(target, fn)
                return
            self.goto_if(cond, target, fn)
        self.no_match(fn)

    def keyset_cond(self, ks: ast.Expr, keys: list[Key], fn: Any) -> str:
        if isinstance(ks, ast.DefaultExpr | ast.DontCareExpr):
            return self.TRUE
        if isinstance(ks, ast.PathExpr) and isinstance(ks.decl, ast.ValueSetDecl):
            return self.value_set_cond(ks, keys, fn)
        if len(keys) > 1:
            items = ks.items if isinstance(ks, ast.ListExpr) else None
            if items is None or len(items) != len(keys):
                raise self.fail("keyset does not match the select keys", ks)
            conds = [self.keyset_cond(i, [k], fn) for i, k in zip(items, keys, strict=True)]
            conds = [c for c in conds if c != self.TRUE]
            return self.all_of(conds) if conds else self.TRUE
        if isinstance(ks, ast.ListExpr) and len(ks.items) == 1:
            return self.keyset_cond(ks.items[0], keys, fn)
        key, kt = keys[0]
        full = self.key_mask(kt)
        if isinstance(ks, ast.Binary) and ks.op == "&&&":
            v = self.keyval(ks.left, full, fn)
            m = self.keyval(ks.right, full, fn)
            return f"({key} & {m}) == ({v} & {m})"
        if isinstance(ks, ast.Binary) and ks.op == "..":
            return self.in_range(key, self.keyval(ks.left, full, fn),
                                 self.keyval(ks.right, full, fn))
        return f"{key} == {self.keyval(ks, full, fn)}"

    # ------------------------------------------------------------ the back end's
    def reject(self, fn: Any) -> None:  # pragma: no cover - each back end has its own
        raise NotImplementedError

    def goto(self, state: Any, fn: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def goto_if(self, cond: str, state: Any, fn: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def no_match(self, fn: Any) -> None:  # pragma: no cover
        raise NotImplementedError

    def select_key(self, k: ast.Expr, fn: Any) -> str:  # pragma: no cover
        """Evaluate a select key once into a variable; its name."""
        raise NotImplementedError

    def key_mask(self, t: Any) -> int | None:
        """All ones of a key type's width (keyset values match the key's bits, also for
        a signed key); None for a type without one."""
        b = scalar_bits(t)
        return (1 << b[0]) - 1 if b else None

    def keyval(self, e: ast.Expr, full: int | None, fn: Any) -> str:  # pragma: no cover
        """A keyset value (``full``: the key's all-ones mask, None if it has no width)."""
        raise NotImplementedError

    def value_set_cond(self, ks: ast.PathExpr, keys: list[Key],
                       fn: Any) -> str:  # pragma: no cover
        raise NotImplementedError

    def all_of(self, conds: list[str]) -> str:  # pragma: no cover
        raise NotImplementedError

    def in_range(self, key: str, lo: str, hi: str) -> str:  # pragma: no cover
        raise NotImplementedError
