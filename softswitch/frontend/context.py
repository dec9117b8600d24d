"""Where the type checker is: the lexical scope plus what kind of code surrounds it.

Many P4 rules depend on the enclosing construct (actions may not apply tables, parsers
may not call actions, ``return`` needs an action/function/control, ``exit`` not in a
parser or function), so expression and statement checks carry a :class:`Ctx`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from softswitch.frontend import types as T
from softswitch.frontend.scopes import Scope


@dataclass
class Ctx:
    scope: Scope
    block: str = "top"          # top | parser | control | action | function | table
    return_type: T.Type | None = None
    in_loop: bool = False
    switch_expr: bool = False    # typing the expression of a switch statement
    owner: Any = None            # the enclosing ParserDecl/ControlDecl
    func: Any = None             # enclosing action/function declaration
    table: Any = None            # enclosing TableDecl while checking its properties
    this_type: T.Type | None = None  # extern type inside an instance initializer

    def child(self, kind: str = "block", **changes: Any) -> Ctx:
        """A nested context with a fresh scope (and any field changed)."""
        return replace(self, scope=Scope(self.scope, kind), **changes)

    def with_(self, **changes: Any) -> Ctx:
        return replace(self, **changes)
