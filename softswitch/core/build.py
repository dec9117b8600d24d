"""Builds the runtime objects of a program: compiled blocks, tables, extern instances.

:class:`ProgramBuilder` owns what is shared by all blocks of one switch: type layouts,
the wire codegen, the runtime ``_RT``, and the registries of control-plane objects
keyed by their P4Info names (tables, counters, registers, meters, value sets). The
names come from :mod:`softswitch.frontend.elaborate`, so the switch and P4Runtime agree.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.core import hashes
from softswitch.core.bits import PacketReader, PacketTooShort
from softswitch.core.blocks import BlockLowerer
from softswitch.core.control import KeyMatch, from_bmv2_priority
from softswitch.core.execution import ExitSignal, ParserError, Runtime, shl, shl_signed
from softswitch.core.extern_calls import CORE
from softswitch.core.extern_table import ExternTable
from softswitch.core.externs import Clock, CounterArray, Meter, MeterArray, RegisterArray
from softswitch.core.lower import LowerEnv
from softswitch.core.stmts import const_int
from softswitch.core.tables import TableState
from softswitch.core.values import Layouts, Stack, copy_value
from softswitch.core.wire import WireCodegen
from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST
from softswitch.frontend.cpnames import qualify


def error_codes(program: ast.Program) -> dict[str, int]:
    """error member → code, in program order (core.p4's errors first), like p4c."""
    codes: dict[str, int] = {}
    for d in program.decls:
        if isinstance(d, ast.ErrorDecl):
            for m in d.members:
                codes.setdefault(m.name, len(codes))
    return codes


class ValueSet:
    """``value_set``: up to ``size`` (value, mask) tuples the parser's select matches."""

    def __init__(self, name: str, size: int, widths: list[int]) -> None:
        self.name = name
        self.size = size
        self.widths = widths
        self.members: list[tuple[tuple[int, int], ...]] = []

    def add(self, values: list[int], masks: list[int] | None = None) -> None:
        if len(self.members) >= self.size:
            raise P4Error(f"value set '{self.name}' is full ({self.size} entries)")
        ms = masks or [(1 << w) - 1 for w in self.widths]
        self.members.append(tuple((v & m, m) for v, m in zip(values, ms, strict=True)))

    def match(self, key: tuple[int, ...]) -> bool:
        for mem in self.members:
            if all(k & m == v for k, (v, m) in zip(key, mem, strict=True)):
                return True
        return False


class ProgramBuilder:
    """Compiles a program's blocks and builds its control-plane objects.

    Architecture-neutral: each architecture's builder (softswitch.v1model.build,
    softswitch.pna.build) subclasses it and sets the hooks: its extern table, its
    extern objects, how it recognises a selector, whether direct counters/meters act on
    every table hit (v1model) or only when an action calls them (PNA), and whether
    tables tell the runtime which entry matched. Alone it runs core.p4 only."""

    target_name = "core"
    externs: ExternTable = CORE
    runtime_class: type[Runtime] = Runtime
    direct_resources_on_hit = True
    table_context = False
    #: the architecture's action selector extern type (None: it has none)
    selector_type: str | None = None
    #: the meter ``type`` argument that meters packets, not bytes (None: no meters)
    meter_packets: str | None = None

    def __init__(self, program: ast.Program, elab: E.Elaboration) -> None:
        self.program = program
        self.elab = elab
        self.layouts = Layouts()
        self.env = LowerEnv(self.layouts, error_codes(program), program)
        self.wire = WireCodegen(self.layouts, self.env.error_codes)
        self.runtime = self.runtime_class()
        self.clock = Clock()
        self.tables: dict[str, TableState] = {}
        self.table_infos: dict[str, E.TableInstance | None] = {}
        self.counters: dict[str, CounterArray] = {}
        self.direct_counters: dict[str, TableState] = {}
        self.direct_meters: dict[str, TableState] = {}
        self.registers: dict[str, RegisterArray] = {}
        self.meters: dict[str, MeterArray] = {}
        self.value_sets: dict[str, ValueSet] = {}
        self.pending_table_init: list[tuple[BlockLowerer, Any, Any, TableState]] = []
        self._blocks: dict[int, Any] = {}
        self._externs: dict[int, Any] = {}
        self._tables_by = {(id(t.owner), id(t.decl)): t for t in elab.tables}
        self._base = self._make_base()

    # ------------------------------------------------------------ namespaces
    def _make_base(self) -> dict[str, Any]:
        errs = self.env.error_codes
        oob = errs.get("StackOutOfBounds", 3)
        short = errs.get("PacketTooShort", 1)
        invalid = errs.get("ParserInvalidArgument", 6)

        def stk_next(s: Stack) -> Any:
            if s.nxt >= len(s.items):
                raise ParserError(oob)
            return s.items[s.nxt]

        def stk_nexti(s: Stack) -> int:
            if s.nxt >= len(s.items):
                raise ParserError(oob)
            return s.nxt

        def stk_lasti(s: Stack) -> int:
            if s.nxt == 0 or s.nxt > len(s.items):
                raise ParserError(oob)
            return s.nxt - 1

        def stk_last(s: Stack) -> Any:
            return s.items[stk_lasti(s)]

        def stk_idx(s: Stack, i: int) -> int:
            if not 0 <= i < len(s.items):
                raise ParserError(oob)
            return i

        def stk_at(s: Stack, i: int) -> Any:
            if 0 <= i < len(s.items):
                return s.items[i]
            return type(s.items[0])() if s.items else None

        def push_front(s: Stack, n: int, cls: type) -> None:
            size = len(s.items)
            n = min(n, size)
            s.items = [cls() for _ in range(n)] + s.items[:size - n]
            s.nxt = min(s.nxt + n, size)

        def pop_front(s: Stack, n: int, cls: type) -> None:
            size = len(s.items)
            n = min(n, size)
            s.items = s.items[n:] + [cls() for _ in range(n)]
            s.nxt = max(s.nxt - n, 0)

        def extract_next(r: PacketReader, s: Stack, ext: Callable[..., None],
                         *varbits: int) -> None:
            if s.nxt >= len(s.items):
                raise ParserError(oob)
            ext(r, s.items[s.nxt], *varbits)
            s.nxt += 1

        def peek(r: PacketReader, w: int) -> int:
            try:
                return r.peek(w)
            except PacketTooShort:
                raise ParserError(short) from None

        def advance(r: PacketReader, n: int) -> None:
            # BMv2 (ParserOpAdvance): whole bytes only, then enough packet left
            if n % 8:
                raise ParserError(invalid)
            if r.bit_pos + n > r.total_bits:
                raise ParserError(short)
            r.bit_pos += n

        def build(cls: type, names: tuple[str, ...], values: tuple[Any, ...],
                  valid: bool) -> Any:
            o = cls()
            for n, v in zip(names, values, strict=True):
                setattr(o, n, v)
            if valid:
                o._v = True
            return o

        return {
            "_copy": copy_value, "_build": build, "_pack": hashes.pack_fields,
"_hash_offset": hashes.hash_offset,
            "_div": lambda a, b: a // b if b else 0, "_mod": lambda a, b: a % b if b else 0,
            "_shl": shl, "_shls": shl_signed, "_stk_next": stk_next, "_stk_last": stk_last,
            "_stk_at": stk_at, "_stk_idx": stk_idx, "_stk_nexti": stk_nexti,
            "_stk_lasti": stk_lasti, "_stk_push_front": push_front,
            "_stk_pop_front": pop_front, "_extract_next": extract_next, "_peek": peek,
            "_advance": advance, "_Exit": ExitSignal, "_PErr": ParserError,
            "_RT": self.runtime, "Stack": Stack,
        }

    def base_namespace(self) -> dict[str, Any]:
        return dict(self._base)

    # ------------------------------------------------------------ blocks
    def compile_block(self, inst: E.BlockInstance) -> Any:
        fn = self._blocks.get(id(inst))
        if fn is None:
            fn = BlockLowerer(self, inst).compile()
            self._blocks[id(inst)] = fn
        return fn

    def finish(self) -> None:
        """Install default actions and const entries once every action is compiled."""
        for lw, decl, ti, state in self.pending_table_init:
            TableInit(self, lw, decl, ti, state).run()
        self.pending_table_init.clear()

    # ------------------------------------------------------------ tables
    def table_instance(self, block: E.BlockInstance, decl: ast.TableDecl) -> Any:
        return self._tables_by.get((id(block), id(decl)))

    def register_table(self, state: TableState, ti: Any) -> None:
        self.tables[state.name] = state
        self.table_infos[state.name] = ti

    def register_direct_counter(self, ext: E.ExternInstance, state: TableState) -> None:
        self.direct_counters[ext.name or ext.local_name] = state

    def register_direct_meter(self, ext: E.ExternInstance, state: TableState) -> None:
        self.direct_meters[ext.name or ext.local_name] = state

    def selector_hash(self, ext: E.ExternInstance) -> tuple[Callable[[bytes], int], int]:
        """(hash function, output width) of an action selector instance."""
        raise P4Error(f"action selectors are not supported by the {self.target_name} "
                      "target", ext.loc)

    def is_selector(self, ext: E.ExternInstance) -> bool:
        """Whether ``ext`` is the architecture's action selector."""
        return self.selector_type is not None and ext.type_name == self.selector_type

    def direct_meter_factory(self, ext: E.ExternInstance) -> Callable[[], Meter]:
        """A new meter cell for each entry of a table with this direct meter."""
        if self.meter_packets is None:
            raise P4Error(f"direct meters are not supported by the {self.target_name} "
                          "target", ext.loc)
        by_packets = enum_arg(ext.args.get("type")) == self.meter_packets
        clock = self.clock
        return lambda: Meter(clock, by_packets)

    # ------------------------------------------------------------ externs
    def extern_object(self, inst: E.ExternInstance) -> Any:
        key = id(inst.decl)
        obj = self._externs.get(key)
        if obj is not None:
            return obj
        obj = self._make_extern(inst)
        self._externs[key] = obj
        return obj

    def _make_extern(self, inst: E.ExternInstance) -> Any:
        """The runtime object of one extern instance (the architecture's externs)."""
        return Opaque(inst.name or inst.local_name, inst.type_name)

    def value_set(self, block: E.BlockInstance, decl: ast.ValueSetDecl) -> ValueSet:
        vsi = next((v for v in self.elab.value_sets
                    if v.decl is decl and v.owner is block), None)
        name = (vsi.name if vsi is not None and vsi.name else
                qualify(block.prefix, decl.name))
        size = vsi.size if vsi is not None and vsi.size else 0
        et = T.strip_newtype(decl.element.resolved)
        if isinstance(et, T.StructLikeType):
            widths = [_bits(f.type) for f in et.fields]
        else:
            widths = [_bits(et)]
        vs = ValueSet(name, size or 0, widths)
        self.value_sets[name] = vs
        return vs


class Opaque:
    """An extern instance with no runtime state here (action profiles, selectors)."""

    def __init__(self, name: str, type_name: str) -> None:
        self.name = name
        self.type_name = type_name


def _bits(t: Any) -> int:
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, T.BitsType):
        return t.width
    return 1


def int_arg(inst: E.ExternInstance, key: str) -> int | None:
    """An integer constructor argument (serializable enum members give their value)."""
    v = inst.args.get(key)
    if isinstance(v, int):
        return v
    e = inst.arg_exprs.get(key)
    c = getattr(e, "const", NOT_CONST)
    if isinstance(c, int):
        return c
    val = getattr(c, "value", None)
    return val if isinstance(val, int) else None


def enum_arg(v: Any) -> str:
    return str(getattr(v, "name", v or ""))


def type_arg(inst: E.ExternInstance, i: int) -> Any:
    if i < len(inst.type_args):
        return T.strip_newtype(inst.type_args[i].resolved)
    return None


class TableInit:
    """Default action and ``entries`` of one table, from the program text."""

    def __init__(self, pb: ProgramBuilder, lw: BlockLowerer, decl: ast.TableDecl, ti: Any,
                 state: TableState) -> None:
        self.pb = pb
        self.lw = lw
        self.decl = decl
        self.ti = ti
        self.state = state

    def run(self) -> None:
        st = self.state
        da = self.ti.default_action if self.ti is not None else None
        if da is not None:
            name = da.action.name or da.action.decl.name
            args = [self.arg_value(a) for a in self.cp_args(da)]
            if name not in st.actions:
                st.actions[name] = self._extra_action(da.action)
            st.set_default(name, args, initial=True)
            st.default_const = da.is_const
        else:
            from softswitch.core.tables import ActionDef
            st.default_action = ActionDef("NoAction", (), lambda *a: None)
        prop = self.decl.prop("entries")
        if prop is not None:
            self.entries(prop)
            st.entries_const = prop.is_const

    def cp_args(self, da: Any) -> list[ast.Expr]:
        """The default action's arguments for its directionless (control-plane) params."""
        params = da.action.decl.params
        prop = self.decl.prop("default_action")
        info = getattr(prop.value, "call", None) if prop is not None else None
        if info is not None and len(info.args) == len(params):
            return [a for p, a in zip(params, info.args, strict=True)
                    if not p.direction and a is not None]
        exprs = [a.value for a in da.args]
        n_cp = sum(1 for p in params if not p.direction)
        return exprs[len(exprs) - n_cp:] if n_cp else []

    def _extra_action(self, ainst: Any) -> Any:
        from softswitch.core.tables import ActionDef
        fname = self.lw.callable_name(ainst.decl)
        self.lw.ns.setdefault(fname, lambda *a: None)
        return ActionDef(ainst.name or ainst.decl.name, (), self.lw.ns[fname])

    def arg_value(self, e: ast.Expr) -> int:
        c = e.const
        if c is NOT_CONST:
            raise P4Error("table default action arguments must be compile-time constants",
                          e.loc)
        if isinstance(c, bool):
            return int(c)
        if isinstance(c, int):
            return c
        return int(getattr(c, "value", 0))

    def entries(self, prop: ast.TableProperty) -> None:
        entries: list[ast.TableEntry] = prop.value or []
        largest_wins = self._prop_const("largest_priority_wins", True)
        prios = entry_priorities(entries, largest_wins is not False)
        for ent, prio in zip(entries, prios, strict=True):
            keys = self.entry_keys(ent)
            ref = ent.action
            decl = getattr(ref.name, "decl", None)
            aname = self._action_name(decl, ref.name)
            args = self.entry_args(decl, ref)
            self.state.add(keys, aname, args, prio, const=True)

    def _prop_const(self, name: str, default: Any) -> Any:
        prop = self.decl.prop(name)
        if prop is None or not isinstance(prop.value, ast.Expr):
            return default
        c = prop.value.const
        return default if c is NOT_CONST or c is None else c

    def entry_args(self, decl: Any, ref: ast.ActionRef) -> list[int]:
        params = getattr(decl, "params", None)
        info = getattr(ref, "call", None)
        if params is not None and info is not None and len(info.args) == len(params):
            return [self.arg_value(a) for p, a in zip(params, info.args, strict=True)
                    if not p.direction and a is not None]
        return [self.arg_value(a.value) for a in ref.args]

    def _action_name(self, decl: Any, ref: ast.Expr) -> str:
        for name, ad in self.state.actions.items():
            if getattr(ad, "decl", None) is decl:
                return name
        return getattr(ref, "name", "")

    def entry_keys(self, ent: ast.TableEntry) -> list[KeyMatch]:
        ks = ent.keys
        specs = self.state.keys
        items = ks.items if isinstance(ks, ast.ListExpr) and len(specs) != 1 else [ks]
        if isinstance(ks, ast.ListExpr) and len(specs) == 1 and len(ks.items) == 1:
            items = ks.items
        if len(items) != len(specs):
            raise P4Error(f"entry has {len(items)} key(s), table '{self.state.name}' has "
                          f"{len(specs)}", ent.loc)
        return [key_match(spec.kind, spec.width, it) for spec, it in zip(specs, items,
                                                                          strict=True)]


def entry_priorities(entries: list[ast.TableEntry], largest_wins: bool) -> list[int]:
    """The switch priorities that give a table's initial entries BMv2's order. p4c's front
    end numbers the entries (``TableEntry.priority_value``) and, when they are out of
    order, sorts them (stably, for the short lists programs have); the BMv2 back end then
    ranks each entry by its ``@priority`` annotation, else by its position (1, 2, …;
    lower wins), on the one BMv2 scale every other entry source uses too."""
    n = len(entries)
    values = [e.priority_value for e in entries]
    order = list(range(n))
    if all(v is not None for v in values):
        known = [int(v) for v in values if v is not None]
        if any(b > a if largest_wins else b < a
               for a, b in zip(known, known[1:], strict=False)):
            order.sort(key=lambda i: -known[i] if largest_wins else known[i])
    rank = [0] * n
    for pos, i in enumerate(order):
        a = _priority_annotation(entries[i])
        rank[i] = a if a is not None else pos + 1
    return [from_bmv2_priority(r) for r in rank]


def _priority_annotation(entry: ast.TableEntry) -> int | None:
    a = ast.annotation(entry, "priority")
    if a is None or not a.exprs:
        return None
    e = a.exprs[0]
    return e.value if isinstance(e, ast.IntLiteral) else const_int(e)


def key_match(kind: str, width: int, e: ast.Expr) -> KeyMatch:
    """A :class:`KeyMatch` for one keyset expression of a program-text entry."""
    full = (1 << width) - 1
    if isinstance(e, ast.DefaultExpr | ast.DontCareExpr):
        if kind == "lpm":
            return KeyMatch("", "lpm", 0, prefix_len=0)
        if kind == "range":
            return KeyMatch("", "range", 0, high=full)
        if kind == "exact":
            raise P4Error("an exact key cannot be a wildcard", e.loc)
        return KeyMatch("", kind, 0, mask=0, wildcard=True)
    if isinstance(e, ast.Binary) and e.op == "&&&":
        v = _cv(e.left, full)
        m = _cv(e.right, full)
        if kind == "lpm":
            plen = bin(m).count("1")
            return KeyMatch("", "lpm", v & m, prefix_len=plen)
        return KeyMatch("", "ternary", v & m, mask=m)
    if isinstance(e, ast.Binary) and e.op == "..":
        return KeyMatch("", "range", _cv(e.left, full), high=_cv(e.right, full))
    v = _cv(e, full)
    if kind == "lpm":
        return KeyMatch("", "lpm", v, prefix_len=width)
    if kind == "range":
        return KeyMatch("", "range", v, high=v)
    if kind in ("ternary", "optional"):
        return KeyMatch("", kind, v, mask=full)
    return KeyMatch("", "exact", v)


def _cv(e: ast.Expr, full: int) -> int:
    c = const_int(e)
    if c is None:
        raise P4Error("table entry keys must be compile-time constants", e.loc)
    return c & full
