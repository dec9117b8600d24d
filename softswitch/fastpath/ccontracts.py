"""What the C generator's modules need of each other, stated below all of them.

A block's C (:mod:`softswitch.fastpath.cblock`, with the expression and statement
generators it is built on) needs a few things of the translation unit it goes into:
:class:`CProgramHost`, which :class:`~softswitch.fastpath.cprogram.CProgram` provides.
An extern's C emission (:mod:`softswitch.fastpath.cexterns`, the architectures' extern
tables) needs a few things of the block that calls it: :class:`CLowering`, which
:class:`~softswitch.fastpath.cblock.CBlock` provides. Naming them here keeps the
imports one way: cprogram → cblock → cstmt → cexpr → ccontracts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from softswitch.core.contracts import Lowering
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E

if TYPE_CHECKING:
    from softswitch.fastpath.ctypes_ import CTypes, Unsupported


@dataclass
class ExternRef:
    """An extern instance as the C code reaches it."""

    kind: str          # counter | register | meter | the extern type name
    index: int | None  # counter/register number, or objs index (meter)
    obj: Any


class CProgramHost(Protocol):
    """The translation unit a block's C goes into: types, objects, registries."""

    pb: Any
    types: CTypes
    frames: list[str]
    protos: list[str]
    functions: list[str]

    def error_code(self, name: str, default: int = ...) -> int: ...
    def obj(self, x: Any) -> int: ...
    def table_id(self, name: str) -> int: ...
    def table_actions(self, tid: int) -> list[Any]: ...
    def block_fn(self, inst: E.BlockInstance) -> str: ...
    def extern_ref(self, inst: E.ExternInstance) -> ExternRef: ...
    def extractor(self, t: Any) -> str: ...
    def emitter(self, t: Any) -> str: ...


class CLowering(Lowering, Protocol):
    """A block's C generator as an extern's C emission sees it."""

    prog: CProgramHost
    pb: Any
    externs: dict[int, ExternRef]
    direct_meter_table: dict[int, int]

    def ref(self, e: ast.Expr, fn: Any) -> str: ...
    def fail(self, msg: str, node: Any) -> Unsupported: ...
    def ct(self, t: Any) -> str: ...
    def declare(self, fn: Any, t: Any, init: str | None = ..., prefix: str = ...,
                at: int | None = ...) -> str: ...
    def check(self, fn: Any) -> None: ...
    def perr(self, fn: Any, cond: str, code: int | str) -> None: ...
    def is_lvalue(self, e: ast.Expr) -> bool: ...
    def index_in(self, idx: str, t: Any, size: int) -> str: ...
    def global_instance(self, decl: Any) -> Any: ...
