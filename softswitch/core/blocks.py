"""Lowering of one parser or control instance into a namespace of Python functions.

A :class:`BlockLowerer` turns an elaborated instance (``elaborate.BlockInstance``) into
generated source: one function per action/function it uses, one ``_apply_T`` per
table (key evaluation, lookup, direct counter/meter, action call), one function per
parser state, and the block's ``apply``. Block-level parameters and locals are globals
of the namespace (actions reach them without closures); everything is compiled in one
``exec`` and ``apply`` is returned. Sub-instances get their own lowerer and namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core import extern_calls
from softswitch.core.codebuf import CodeBuf
from softswitch.core.lower import FnCtx, scalar_bits
from softswitch.core.stmts import StmtLowerer, const_int
from softswitch.core.tables import ActionDef, KeySpec, TableState
from softswitch.core.transitions import Key, TransitionWalk
from softswitch.core.walk import bound_arguments, value_width
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.frontend.cpnames import qualify

if TYPE_CHECKING:
    from softswitch.core.contracts import ProgramHost


PARSER_STATE_LIMIT = 100_000
REJECT_CODE = -1   # ParserError code of an explicit reject: parsing stops, no error set


class BlockLowerer(TransitionWalk, StmtLowerer):
    def __init__(self, pb: ProgramHost, block: E.BlockInstance) -> None:
        super().__init__(pb.env, pb.base_namespace())
        self.pb = pb
        self.block = block
        self.decl = block.decl
        self.funcs: list[CodeBuf] = []
        self.callables: dict[int, str] = {}
        self._pending: list[tuple[Any, str]] = []
        self.table_objs: dict[int, str] = {}          # id(TableDecl) -> ns name of TableState
        self.table_fns: dict[int, str] = {}           # id(TableDecl) -> apply function name
        self.table_actions: dict[tuple[int, int], str] = {}  # (table, action decl) -> ns name
        self.direct_meter_table: dict[int, str] = {}  # id(extern decl) -> table ns name
        self.objects: dict[int, Any] = {}             # id(decl) -> runtime object
        self.extern_inst: dict[int, E.ExternInstance] = {}
        self.init_code: list[tuple[ast.Decl, Any]] = []
        self._exit_cache: dict[int, bool] = {}

    # ------------------------------------------------------------ entry
    def compile(self) -> Any:
        self.bind_ctor_args()
        for p in self.decl.params:
            py = f"g_{p.name}"
            self.names[id(p)] = py
            self.globals_.append(py)
        self.lower_block_body()
        src = self.assemble()
        code = compile(src, f"<softswitch {self.block.prefix}>", "exec")
        exec(code, self.ns)
        self.bind_table_actions()
        return self.ns["apply"]

    def assemble(self) -> str:
        glob = ("    global " + ", ".join(self.globals_) + "\n") if self.globals_ else ""
        parts = []
        for buf in self.funcs:
            src = buf.source()
            parts.append(src.replace("    #GLOBALS#\n", glob))
        return "\n".join(parts)

    # ------------------------------------------------------------ declarations
    def bind_ctor_args(self) -> None:
        for p in self.decl.ctor_params:
            v = self.block.args.get(p.name)
            if isinstance(v, E.BlockInstance):
                self.names[id(p)] = self.sub_block(v)
            elif isinstance(v, E.ExternInstance):
                self.bind_extern(p, v)
            elif isinstance(v, bool | int | str):
                self.names[id(p)] = repr(v) if not isinstance(v, bool) else str(v)
            elif v is not None and hasattr(v, "name"):
                t = p.type_ref.resolved
                tt = T.strip_newtype(t)
                if isinstance(tt, T.EnumType):
                    self.names[id(p)] = str(tt.members.get(v.name, 0))
                else:
                    self.names[id(p)] = self.const_obj(v)
            else:
                self.names[id(p)] = self.const_obj(v)

    def local_decl(self, d: ast.Node) -> None:
        if isinstance(d, ast.VarDecl | ast.ConstDecl):
            py = self.tmp("g") + "_" + d.name
            self.names[id(d)] = py
            self.globals_.append(py)
            self.init_code.append((d, py))
        elif isinstance(d, ast.InstanceDecl):
            self.instance(d)
        elif isinstance(d, ast.ValueSetDecl):
            vs = self.pb.value_set(self.block, d)
            self.names[id(d)] = self.const_obj(vs, "_vs")
            self.objects[id(d)] = vs
        elif isinstance(d, ast.ActionDecl | ast.FunctionDecl | ast.TableDecl):
            pass

    def bind_extern(self, key_decl: Any, inst: E.ExternInstance) -> None:
        obj = self.pb.extern_object(inst)
        self.objects[id(key_decl)] = obj
        self.extern_inst[id(key_decl)] = inst
        self.names[id(key_decl)] = self.const_obj(obj, "_x")

    def bind_block(self, key_decl: Any, inst: E.BlockInstance) -> None:
        self.names[id(key_decl)] = self.sub_block(inst)

    def sub_block(self, inst: E.BlockInstance) -> str:
        fn = self.pb.compile_block(inst)
        return self.const_obj(fn, "_blk")

    def direct_block_of(self, inst: E.BlockInstance) -> str:
        key = ("direct", id(inst.decl))
        if key not in self.names:  # type: ignore[comparison-overlap]
            self.names[key] = self.sub_block(inst)  # type: ignore[index]
        return self.names[key]  # type: ignore[index]

    def direct_meter_color(self, decl: Any) -> str | None:
        """The color the last hit of the table with direct meter ``decl`` left."""
        table = self.direct_meter_table.get(id(decl))
        return f"{table}.color" if table is not None else None

    def bound_extern(self, decl: Any) -> str:
        return self.names[id(decl)]

    # ------------------------------------------------------------ callables
    def new_callable_name(self, decl: Any) -> str:
        return self.tmp("_f") + "_" + decl.name

    def compile_callable(self, decl: Any, pyname: str) -> None:
        buf = CodeBuf()
        pnames = []
        for p in decl.params:
            py = self.tmp("p") + "_" + p.name
            self.names[id(p)] = py
            pnames.append(py)
        is_fn = isinstance(decl, ast.FunctionDecl)
        rt = decl.return_type.resolved if is_fn else None
        has_value = is_fn and rt is not None and not isinstance(rt, T.VoidType)
        outs = [py for p, py in zip(decl.params, pnames, strict=True)
                if p.direction in ("out", "inout")]
        fn = FnCtx(buf, "function" if is_fn else "action", outs, has_value)
        buf.emit(f"def {pyname}({', '.join(pnames)}):")
        with buf.block():
            buf.emit("#GLOBALS#")
            self.body_with_outs(decl.body, fn, not is_fn and self.may_exit(decl))
        self.funcs.append(buf)

    def body_with_outs(self, body: ast.Stmt, fn: FnCtx, can_exit: bool) -> None:
        """A callable's body and its return of the ``out`` values; when the body can
        ``exit``, the values travel on the exit signal too (copy-out still happens)."""
        buf = fn.buf
        wrap = bool(fn.outs) and can_exit
        if wrap:
            buf.emit("try:")
            buf.level += 1
        self.stmt(body, fn)
        if wrap:
            buf.level -= 1
            buf.emit("except _Exit as _e:")
            with buf.block():
                buf.emit(f"_e.values = ({', '.join(fn.outs)},)")
                buf.emit("raise")
        buf.emit(self.return_code(fn, None))

    # ------------------------------------------------------------ controls
    def prologue(self, buf: CodeBuf, args: list[str]) -> None:
        buf.emit("#GLOBALS#")
        for p, a in zip(self.decl.params, args, strict=True):
            buf.emit(f"g_{p.name} = {a}")
        fn = FnCtx(buf, "control")
        for d, py in self.init_code:
            buf.emit(self.set_stmt(py, self.local_init(d, fn)))

    def block_outs(self) -> list[str]:
        return [f"g_{p.name}" for p in self.decl.params if p.direction in ("out", "inout")]

    def control_apply(self) -> None:
        buf = CodeBuf()
        args = [f"a{i}" for i in range(len(self.decl.params))]
        buf.emit(f"def apply({', '.join(args)}):")
        outs = self.block_outs()
        fn = FnCtx(buf, "control", outs)
        with buf.block():
            self.prologue(buf, args)
            self.body_with_outs(self.decl.apply, fn, self.may_exit(self.decl))
        self.funcs.append(buf)

    # ------------------------------------------------------------ parsers
    def state_name(self, st: Any) -> str:
        name = getattr(st, "name", None)
        if st is None or name == "reject":
            return "s__reject"
        if name == "accept":
            return "None"
        return f"s_{name}"

    def parser_apply(self) -> None:
        buf = CodeBuf()
        args = [f"a{i}" for i in range(len(self.decl.params))]
        outs = self.block_outs()
        buf.emit(f"def apply({', '.join(args)}):")
        with buf.block():
            self.prologue(buf, args)
            buf.emit("_st = s_start")
            buf.emit("try:")
            with buf.block():
                # A parser that loops without end fails with ParserTimeout instead of
                # hanging the switch.
                buf.emit(f"for _ in range({PARSER_STATE_LIMIT}):")
                with buf.block():
                    buf.emit("_st = _st()")
                    buf.emit("if _st is None:")
                    with buf.block():
                        buf.emit("break")
                buf.emit("else:")
                with buf.block():
                    buf.emit(f"raise _PErr({self.env.error_code('ParserTimeout')})")
            buf.emit("except _PErr as _e:")
            with buf.block():
                if outs:
                    buf.emit(f"_e.values = ({', '.join(outs)},)")
                buf.emit("raise")
            if outs:
                buf.emit(f"return ({', '.join(outs)},)")
        self.funcs.append(buf)
        # reject ends parsing everywhere, also from inside a sub-parser (p4c inlines
        # them); it sets no error code (BMv2 has no explicit reject: p4c warns).
        rej = CodeBuf()
        rej.emit("def s__reject():")
        with rej.block():
            rej.emit(f"raise _PErr({REJECT_CODE})")
        self.funcs.append(rej)
        for st in self.decl.states:
            if st.name not in ("accept", "reject"):
                self.state_fn(st)

    def state_fn(self, st: ast.ParserState) -> None:
        buf = CodeBuf()
        buf.emit(f"def s_{st.name}():")
        fn = FnCtx(buf, "state")
        with buf.block():
            buf.emit("#GLOBALS#")
            self.stmts(st.stmts, fn)
            self.transition(st.transition, fn)
        self.funcs.append(buf)

    # ------------------------------------------------------------ transitions (hooks)
    def reject(self, fn: FnCtx) -> None:
        fn.buf.emit("return s__reject")

    def goto(self, state: Any, fn: FnCtx) -> None:
        fn.buf.emit(f"return {self.state_name(state)}")

    def goto_if(self, cond: str, state: Any, fn: FnCtx) -> None:
        fn.buf.emit(f"if {cond}:")
        with fn.buf.block():
            fn.buf.emit(f"return {self.state_name(state)}")

    def no_match(self, fn: FnCtx) -> None:
        fn.buf.emit(f"raise _PErr({self.env.error_code('NoMatch')})")

    def select_key(self, k: ast.Expr, fn: FnCtx) -> str:
        code = self.key_value(k, fn)
        t = self.tmp("_k")
        fn.buf.emit(f"{t} = {code}")
        return t

    def value_set_cond(self, ks: ast.PathExpr, keys: list[Key], fn: FnCtx) -> str:
        return f"{self.names[id(ks.decl)]}.match(({', '.join(k for k, _ in keys)},))"

    def all_of(self, conds: list[str]) -> str:
        return " and ".join(conds)

    def in_range(self, key: str, lo: str, hi: str) -> str:
        return f"{lo} <= {key} <= {hi}"

    def keyval(self, e: ast.Expr, full: int | None, fn: FnCtx) -> str:
        c = const_int(e)
        if c is not None:
            return str(c & full if full is not None else c)
        code = self.expr(e, fn)
        if isinstance(T.strip_newtype(e.type), T.BoolType):
            return f"int({code})"
        return f"(({code}) & {full})" if full is not None else code

    # ------------------------------------------------------------ tables
    def table_instance(self, d: ast.TableDecl) -> E.TableInstance | None:
        return self.pb.table_instance(self.block, d)

    def make_table(self, d: ast.TableDecl) -> None:
        ti = self.table_instance(d)
        name = ti.name if ti is not None and ti.name else qualify(self.block.prefix, d.name)
        keys = []
        if ti is not None:
            for k in match_keys(ti):
                keys.append(KeySpec(k.name, k.match_kind, k.width or 0))
        size = ti.size if ti is not None and ti.size is not None else 1024
        state = TableState(name, keys, {}, size=size)
        tname = self.const_obj(state, "_T")
        self.table_objs[id(d)] = tname
        self.table_fns[id(d)] = self.tmp("_apply") + "_" + d.name
        self.pb.register_table(state, ti)
        if ti is not None and ti.meters is not None:
            self.direct_meter_table[id(ti.meters.decl)] = tname
            state.meter_factory = self.pb.direct_meter_factory(ti.meters)
            self.pb.register_direct_meter(ti.meters, state)
        if ti is not None and ti.implementation is not None and \
                self.pb.is_selector(ti.implementation):
            state.selector = self.pb.selector_hash(ti.implementation)
        if ti is not None and ti.counters is not None:
            # v1model counts every hit; PNA counts when the action calls count()
            state.has_direct_counter = self.pb.direct_resources_on_hit
            self.pb.register_direct_counter(ti.counters, state)
        self._table_defs(d, ti, state)

    def table_apply_fn(self, d: ast.TableDecl) -> None:
        ti = self.table_instance(d)
        tname = self.table_objs[id(d)]
        state: TableState = self.ns[tname]
        buf = CodeBuf()
        fn = FnCtx(buf, "function")
        buf.emit(f"def {self.table_fns[id(d)]}():")
        with buf.block():
            buf.emit("#GLOBALS#")
            keys = []
            for k in match_keys(ti):
                keys.append(self.key_value(k.expr, fn))
            buf.emit(f"_e = {tname}.lookup(({', '.join(keys)}{',' if len(keys) == 1 else ''}))")
            buf.emit("if _e is None:")
            with buf.block():
                if self.pb.table_context:
                    buf.emit(f"_RT.table_miss({tname}, "
                             f"({', '.join(keys)}{',' if len(keys) == 1 else ''}))")
                buf.emit(f"_a = {tname}.default_action")
                buf.emit(f"_a.fn(*{tname}.default_args)")
                buf.emit("return (False, _a)")
            if state.has_direct_counter:
                buf.emit("_e.packets += 1")
                buf.emit("_e.bytes += _RT.pkt.length")
            if state.meter_factory is not None and self.pb.direct_resources_on_hit:
                buf.emit(f"{tname}.color = _e.meter.execute(_RT.pkt.length)")
            if self.pb.table_context:
                buf.emit(f"_RT.table_hit({tname}, _e)")
            if state.selector is not None:
                self.selector_pick(ti, state, fn)
            buf.emit("_a = _e.action")
            buf.emit("_a.fn(*_e.run_args)")
            buf.emit("return (True, _a)")
        self.funcs.append(buf)

    def selector_pick(self, ti: E.TableInstance | None, state: TableState, fn: FnCtx) -> None:
        """For a group entry, pick the member with the selector hash of the ``selector``
        key fields (BMv2: member ``hash % group size``, hash cut to the output width)."""
        assert state.selector is not None
        algo, out_width = state.selector
        buf = fn.buf
        buf.emit("if _e.group is not None:")
        with buf.block():
            acc, total = "", 0
            for code, w in self.selector_fields(ti, fn):
                part = f"(({code}) & {(1 << w) - 1})"
                acc = part if not acc else f"(({acc}) << {w}) | {part}"
                total += w
            pad = (-total) % 8
            data = f"(({acc or '0'}) << {pad}).to_bytes({(total + pad) // 8}, 'big')"
            h = self.const_obj(algo, "_sel")
            buf.emit("_g = _e.group")
            buf.emit(f"_m = _g[({h}({data}) & {(1 << out_width) - 1}) % len(_g)]")
            buf.emit("_a = _m[0]")
            buf.emit("_a.fn(*_m[2])")
            buf.emit("return (True, _a)")

    def _table_defs(self, d: ast.TableDecl, ti: E.TableInstance | None,
                    state: TableState) -> None:
        for r, fname in self.table_actions_run(ti):
            adecl = r.action.decl
            cp = [p for p in adecl.params if p.direction == ""]
            params = tuple((p.name, value_width(p.type_ref.resolved)) for p in cp)
            kinds = tuple(_kind(p.type_ref.resolved) for p in cp)
            aname = r.action.name or adecl.name
            ad = ActionDef(aname, params, _unbound, default_only=r.has("defaultonly"),
                           table_only=r.has("tableonly"), kinds=kinds)
            ad.fn_name = fname  # type: ignore[attr-defined]
            ad.decl = adecl  # type: ignore[attr-defined]
            state.actions[aname] = ad
            self.table_actions[(id(d), id(adecl))] = self.const_obj(ad, "_A")
        state.color = 0  # type: ignore[attr-defined]
        self.pb.pending_table_init.append((self, d, ti, state))

    def bound_action(self, adecl: ast.ActionDecl, fname: str, ref: Any) -> str:
        """A wrapper taking only the control-plane arguments of an action whose
        directional parameters are bound in the table's ``actions`` list."""
        bound = bound_arguments(ref)
        buf = CodeBuf()
        fn = FnCtx(buf, "function")
        wname = self.tmp("_bound") + "_" + adecl.name
        cp = [f"c{i}" for i, p in enumerate(adecl.params) if not p.direction]
        buf.emit(f"def {wname}({', '.join(cp)}):")
        with buf.block():
            buf.emit("#GLOBALS#")
            argv: list[str] = []
            outs: list[tuple[ast.Expr, int]] = []
            cpi = iter(cp)
            k = 0   # index among the action's out/inout parameters (its return tuple)
            for i, p in enumerate(adecl.params):
                a = bound[i] if i < len(bound) else None
                if p.direction in ("out", "inout"):
                    k += 1
                if not p.direction:
                    argv.append(next(cpi))
                elif a is None:
                    argv.append(self.default_of(p.type_ref.resolved))
                elif p.direction == "out":
                    argv.append(self.default_of(p.type_ref.resolved))
                    outs.append((a, k - 1))
                else:
                    argv.append(self.value(a, fn))
                    if p.direction == "inout":
                        outs.append((a, k - 1))
            call = f"{fname}({', '.join(argv)})"
            if not outs:
                buf.emit(call)
            else:
                if self.may_exit(adecl):
                    buf.emit("try:")
                    with buf.block():
                        buf.emit(f"_r = {call}")
                    buf.emit("except _Exit as _e:")
                    with buf.block():
                        self.copy_out("_e.values", outs, False, fn)
                        buf.emit("raise")
                else:
                    buf.emit(f"_r = {call}")
                self.copy_out("_r", outs, False, fn)
        self.funcs.append(buf)
        return wname

    def bind_table_actions(self) -> None:
        for state_name in self.table_objs.values():
            state: TableState = self.ns[state_name]
            for ad in state.actions.values():
                ad.fn = self.ns[ad.fn_name]  # type: ignore[attr-defined]

    def action_label(self, table: Any, decl: Any, label: ast.Expr) -> str:
        key = (id(table), id(decl))
        name = self.table_actions.get(key)
        if name is None:
            return "None"
        return name

    # ------------------------------------------------------------ calls
    def table_apply_call(self, table_fn: str, fn: FnCtx) -> str:
        return f"{table_fn}()"

    def extern_call(self, e: ast.Call, info: Any, fn: FnCtx, want_value: bool) -> str | None:
        return extern_calls.lower_extern_call(self, e, info, fn, want_value)

    def bound_block(self, decl: Any) -> str | None:
        return self.names.get(id(decl))

    def block_call_options(self, is_parser: bool) -> dict[str, Any]:
        return {"exc": "_PErr" if is_parser else "_Exit"}

    def stack_shift(self, method: str, stack: str, st: T.StackType, count: ast.Expr,
                    fn: FnCtx) -> str | None:
        n = self.expr(count, fn)
        return f"_stk_{method}({stack}, {n}, {self.cls_name(st.element)})"

    def int_literal(self, v: int, t: Any) -> str:
        return str(v)

    def any_of(self, conds: list[str]) -> str:
        return "(" + " or ".join(conds) + ")"

def match_keys(ti: E.TableInstance | None) -> list[E.KeyField]:
    """Key fields that take part in matching: ``selector`` fields only feed an action
    selector's hash, they are not matched."""
    if ti is None:
        return []
    return [k for k in ti.keys if k.match_kind != "selector"]


def _unbound(*args: Any) -> None:  # replaced once the namespace is compiled
    raise RuntimeError("action called before its block was compiled")


def _kind(t: Any) -> str:
    t = T.strip_newtype(t)
    if isinstance(t, T.BoolType):
        return "b"
    b = scalar_bits(t)
    return "s" if b is not None and b[1] else "u"

