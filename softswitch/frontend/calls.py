"""What a call invokes: the value the type checker stores in ``Call.resolved``.

The lowering must not redo overload resolution or argument matching, so the type
checker records the outcome once, here: the callee declaration, the parameters after
type-argument substitution, and the arguments already put in parameter order (named
arguments moved into place, omitted optional/default parameters as ``None`` or the
parameter's default expression).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from softswitch.frontend import ast
from softswitch.frontend import types as T

#: ``CallInfo.kind`` values:
#:  ``action``          direct action call; ``decl`` the ActionDecl
#:  ``function``        P4 function; ``decl`` the FunctionDecl
#:  ``extern_function`` ``decl`` the ExternFunctionDecl
#:  ``extern_method``   method of an extern object; ``decl`` the MethodDecl,
#:                      ``extern`` the specialized ExternType, ``receiver`` the object expr
#:  ``abstract_method`` call of an abstract method (``this.m()`` or on an instance)
#:  ``table_apply``     ``t.apply()``; ``decl`` the TableDecl
#:  ``parser_apply`` / ``control_apply``  apply of a parser/control instance or parameter;
#:                      ``decl`` the ParserDecl/ControlDecl (or type decl for parameters)
#:  ``constructor``     ``X(args)`` creating an instance; ``decl`` the extern/parser/
#:                      control/package declaration, ``result`` its type
#:  ``builtin``         ``builtin`` names it: isValid, setValid, setInvalid, push_front,
#:                      pop_front, minSizeInBits, minSizeInBytes, maxSizeInBits,
#:                      maxSizeInBytes; ``receiver`` the operand
CALL_KINDS = ("action", "function", "extern_function", "extern_method", "abstract_method",
              "table_apply", "parser_apply", "control_apply", "constructor", "builtin")


@dataclass
class CallInfo:
    kind: str
    decl: Any = None
    params: tuple[T.ParamInfo, ...] = ()
    args: tuple[ast.Expr | None, ...] = ()
    type_args: dict[str, T.Type] = field(default_factory=dict)
    extern: T.ExternType | None = None
    receiver: ast.Expr | None = None
    builtin: str | None = None
    result: T.Type | None = None
