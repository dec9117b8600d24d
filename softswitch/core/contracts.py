"""What the interpreter's lowering modules need of each other, stated below all of them.

A block lowering (:mod:`softswitch.core.blocks`) needs a few things of the program it
belongs to: :class:`ProgramHost`, which :class:`~softswitch.core.build.ProgramBuilder`
provides. An extern's emission (:mod:`softswitch.core.extern_calls`, the architectures'
extern tables) needs a few things of the block lowering that calls it:
:class:`PyLowering`, which :class:`~softswitch.core.blocks.BlockLowerer` provides;
:class:`Lowering` is the part the C generator's blocks offer too.
Naming them here keeps the imports one way: build → blocks → extern_calls → contracts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from softswitch.frontend import ast
from softswitch.frontend import elaborate as E

if TYPE_CHECKING:
    from softswitch.core.extern_table import ExternTable
    from softswitch.core.lower import LowerEnv, LowerError
    from softswitch.core.tables import TableState
    from softswitch.core.wire import WireCodegen


class ProgramHost(Protocol):
    """The program a block is lowered into: shared facts, registries, extern objects."""

    env: LowerEnv
    elab: E.Elaboration
    wire: WireCodegen
    target_name: str
    externs: ExternTable
    direct_resources_on_hit: bool
    table_context: bool
    pending_table_init: list[Any]

    def base_namespace(self) -> dict[str, Any]: ...
    def compile_block(self, inst: E.BlockInstance) -> Any: ...
    def extern_object(self, inst: E.ExternInstance) -> Any: ...
    def value_set(self, block: E.BlockInstance, decl: ast.ValueSetDecl) -> Any: ...
    def table_instance(self, block: E.BlockInstance, decl: ast.TableDecl) -> Any: ...
    def register_table(self, state: TableState, ti: Any) -> None: ...
    def register_direct_counter(self, ext: E.ExternInstance, state: TableState) -> None: ...
    def register_direct_meter(self, ext: E.ExternInstance, state: TableState) -> None: ...
    def direct_meter_factory(self, ext: E.ExternInstance) -> Callable[[], Any]: ...
    def is_selector(self, ext: E.ExternInstance) -> bool: ...
    def selector_hash(self, ext: E.ExternInstance) -> tuple[Callable[[bytes], int], int]: ...


class Lowering(Protocol):
    """What either back end's block lowering offers an extern's emission (the shared
    rules of :mod:`softswitch.core.exprwalk`, spelt in its language)."""

    spelling: dict[str, str]

    def expr(self, e: ast.Expr, fn: Any) -> str: ...
    def field(self, base: str, name: str) -> str: ...
    def element(self, base: str, i: int) -> str: ...
    def named(self, fn: Any, t: Any, code: str) -> str: ...
    def fit_to(self, code: str, t: Any) -> str: ...
    def tmp(self, prefix: str = ...) -> str: ...
    def assign(self, target: ast.Expr, value: str, fn: Any) -> None: ...
    def after_header_write(self, target: ast.Expr, fn: Any) -> None: ...
    def direct_meter_color(self, decl: Any) -> str | None: ...


class PyLowering(Lowering, Protocol):
    """A block lowering as an extern's Python emission sees it."""

    pb: ProgramHost
    names: dict[int, str]
    direct_meter_table: dict[int, str]

    def const_obj(self, value: Any, prefix: str = ...) -> str: ...
    def fail(self, msg: str, node: ast.Node | None) -> LowerError: ...
    def default_of(self, t: Any) -> str: ...
