"""C for one parser or control instance: the C spelling of what
:class:`softswitch.core.walk.LoweringWalk` decides for both back ends (the interpreter's
is :mod:`softswitch.core.blocks`).

A block becomes: a frame struct (pointers to its apply parameters, its control-level
variables), one C function per action/function it uses (taking the frame), per table an
apply function (key, lookup, direct counter/meter, selector, action dispatch) and the
block's ``apply``; a parser's states are labels inside its apply function. Tables,
counters, registers are the ones the interpreter built (``ProgramBuilder``), so the
control plane sees one set of names and handles.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from softswitch.core.blocks import PARSER_STATE_LIMIT, REJECT_CODE, match_keys
from softswitch.core.extern_table import call_name
from softswitch.core.tables import EMPTY_GROUP_ACTION
from softswitch.core.transitions import Key, TransitionWalk
from softswitch.core.walk import bound_arguments
from softswitch.fastpath import cexterns
from softswitch.fastpath.cexpr import CBuf, CFnCtx
from softswitch.fastpath.cstmt import StmtGen, _is_packet, const_int
from softswitch.fastpath.ctypes_ import Unsupported, ident, lit, scalar
from softswitch.frontend import ast
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T
from softswitch.frontend.ast import NOT_CONST

if TYPE_CHECKING:
    from softswitch.fastpath.ccontracts import CProgramHost, ExternRef


class CBlock(TransitionWalk, StmtGen):
    def __init__(self, prog: CProgramHost, block: E.BlockInstance, bid: int) -> None:
        super().__init__(prog)
        self.pb = prog.pb
        self.block = block
        self.decl = block.decl
        self.bid = bid
        self.fr = f"FR{bid}"
        self.apply_name = f"B{bid}_apply"
        self.frame_fields: list[str] = []
        self.callables: dict[int, str] = {}
        self._pending: list[tuple[Any, str]] = []
        self.tables: dict[int, tuple[int, Any, Any]] = {}      # id(TableDecl) -> tid, state, ti
        self.table_fns: dict[int, str] = {}
        self.table_actions: dict[tuple[int, int], Any] = {}    # (table, action decl) -> ActionDef
        self.action_fns: dict[int, dict[int, str]] = {}        # tid -> id(ActionDef) -> C fn
        self.direct_meter_table: dict[int, int] = {}
        self.externs: dict[int, ExternRef] = {}
        self.blocks: dict[Any, str] = {}
        self.init_code: list[tuple[ast.Decl, str]] = []
        self._exit_cache: dict[int, bool] = {}

    # ------------------------------------------------------------ entry
    def compile(self) -> None:
        try:
            self._compile()
        except Unsupported as e:
            if e.loc is None:
                e.loc = getattr(self.block.node, "loc", None) or self.decl.loc
            raise

    def _compile(self) -> None:
        self.bind_ctor_args()
        for p in self.decl.params:
            pk = _is_packet(p.type_ref.resolved)
            cn = f"P_{ident(p.name)}"
            if pk == "packet_in":
                self.frame_fields.append(f"rt_reader *{cn};")
                self.names[id(p)] = f"f->{cn}"
            elif pk == "packet_out":
                self.frame_fields.append(f"rt_writer *{cn};")
                self.names[id(p)] = f"f->{cn}"
            else:
                self.frame_fields.append(f"{self.ct(p.type_ref.resolved)} *{cn};")
                self.names[id(p)] = f"(*f->{cn})"
        self.lower_block_body()
        body = "".join(f"    {x}\n" for x in self.frame_fields) or "    int _empty;\n"
        self.prog.frames.append(f"struct {self.fr} {{\n{body}}};\n")

    def param_sig(self) -> list[str]:
        out = []
        for i, p in enumerate(self.decl.params):
            pk = _is_packet(p.type_ref.resolved)
            if pk == "packet_in":
                out.append(f"rt_reader *ap{i}")
            elif pk == "packet_out":
                out.append(f"rt_writer *ap{i}")
            else:
                out.append(f"{self.ct(p.type_ref.resolved)} *ap{i}")
        return out

    def add_function(self, sig: str, body: CBuf) -> None:
        self.prog.protos.append(sig + ";")
        self.prog.functions.append(sig + " {\n    int st = 0;\n    (void)st;\n"
                                   + body.source() + "}\n")

    # ------------------------------------------------------------ declarations
    def bind_ctor_args(self) -> None:
        for p in self.decl.ctor_params:
            v = self.block.args.get(p.name)
            if isinstance(v, E.BlockInstance):
                self.blocks[id(p)] = self.prog.block_fn(v)
                self.names[id(p)] = "@block"
            elif isinstance(v, E.ExternInstance):
                self.bind_extern(p, v)
            elif isinstance(v, bool):
                self.names[id(p)] = "1" if v else "0"
            elif isinstance(v, int):
                self.names[id(p)] = lit(v, scalar(p.type_ref.resolved))
            elif v is not None and hasattr(v, "name") and not isinstance(v, str):
                tt = T.strip_newtype(p.type_ref.resolved)
                if isinstance(tt, T.EnumType):
                    val = tt.members.get(v.name, 0)
                    self.names[id(p)] = lit(val, scalar(tt)) if tt.underlying else f"{val}U"
                else:
                    self.names[id(p)] = "@value"
            else:
                self.names[id(p)] = "@value"

    def local_decl(self, d: ast.Node) -> None:
        if isinstance(d, ast.VarDecl | ast.ConstDecl):
            cn = self.tmp("L") + "_" + ident(d.name)
            try:
                ct = self.ct(d.type_ref.resolved)
            except Unsupported as e:
                raise Unsupported(e.message, e.loc or d.loc) from None
            self.frame_fields.append(f"{ct} {cn};")
            self.names[id(d)] = f"f->{cn}"
            self.init_code.append((d, f"f->{cn}"))
        elif isinstance(d, ast.InstanceDecl):
            self.instance(d)
        elif isinstance(d, ast.ValueSetDecl):
            vsi = next((v for v in self.pb.elab.value_sets
                        if v.decl is d and v.owner is self.block), None)
            name = (vsi.name if vsi is not None and vsi.name else
                    E.qualify(self.block.prefix, d.name))
            vs = self.pb.value_sets.get(name)
            if vs is None:
                raise self.fail(f"value set '{name}' was not built", d)
            self.names[id(d)] = f"@vs{self.prog.obj(vs)}"

    def bind_block(self, key_decl: Any, inst: E.BlockInstance) -> None:
        self.blocks[id(key_decl)] = self.prog.block_fn(inst)
        self.names[id(key_decl)] = "@block"

    def bind_extern(self, key_decl: Any, inst: E.ExternInstance) -> None:
        self.externs[id(key_decl)] = self.prog.extern_ref(inst)
        self.names[id(key_decl)] = "@extern"

    def direct_block_of(self, inst: E.BlockInstance) -> str:
        key = ("direct", id(inst.decl))
        if key not in self.blocks:
            self.blocks[key] = self.prog.block_fn(inst)
        return self.blocks[key]

    def direct_meter_color(self, decl: Any) -> str | None:
        tid = self.direct_meter_table.get(id(decl))
        return f"c->tables[{tid}].color" if tid is not None else None

    def bound_extern(self, decl: Any) -> ExternRef:
        return self.externs[id(decl)]

    def is_lvalue(self, e: ast.Expr) -> bool:
        if isinstance(e, ast.PathExpr):
            n = self.names.get(id(e.decl))
            return n is not None and not n.startswith("@") and not (
                n[0].isdigit() or n.startswith("(") and not n.startswith("(*"))
        if isinstance(e, ast.Member):
            it = T.strip_newtype(e.expr.type)
            if isinstance(it, T.StackType):
                return e.name in ("next", "last") and self.is_lvalue(e.expr)
            return isinstance(it, T.StructLikeType) and self.is_lvalue(e.expr)
        if isinstance(e, ast.Index):
            return e.index.const is not NOT_CONST and self.is_lvalue(e.expr)
        return False

    # ------------------------------------------------------------ callables
    def new_callable_name(self, decl: Any) -> str:
        return f"A{self.bid}_{len(self.callables)}_{ident(decl.name)}"

    def compile_callable(self, decl: Any, cname: str) -> None:
        buf = CBuf()
        cparams = []
        for p in decl.params:
            pn = self.tmp("p") + "_" + ident(p.name)
            pt = p.type_ref.resolved
            if _is_packet(pt):
                raise self.fail("packet parameters of functions are not supported", p)
            if p.direction in ("out", "inout"):
                cparams.append(f"{self.ct(pt)} *{pn}")
                self.names[id(p)] = f"(*{pn})"
            else:
                cparams.append(f"{self.ct(pt)} {pn}")
                self.names[id(p)] = pn
        is_fn = isinstance(decl, ast.FunctionDecl)
        rt = decl.return_type.resolved if is_fn else None
        has_value = is_fn and rt is not None and not isinstance(rt, T.VoidType)
        if has_value:
            cparams.append(f"{self.ct(rt)} *ret")
        fn = CFnCtx(buf, "function" if is_fn else "action", has_value)
        self.stmt(decl.body, fn)
        buf.emit("return ST_OK;")
        sig = f"static int {cname}(rt_ctx *c, struct {self.fr} *f" + \
            "".join(", " + x for x in cparams) + ")"
        self.add_function(sig, buf)

    # ------------------------------------------------------------ controls
    def prologue(self, buf: CBuf) -> CFnCtx:
        buf.emit(f"struct {self.fr} fr_;")
        buf.emit(f"struct {self.fr} *f = &fr_;")
        for i, p in enumerate(self.decl.params):
            buf.emit(f"f->P_{ident(p.name)} = ap{i};")
        fn = CFnCtx(buf, "control")
        for d, cn in self.init_code:
            buf.emit(self.set_stmt(cn, self.local_init(d, fn)))
        return fn

    def control_apply(self) -> None:
        buf = CBuf()
        fn = self.prologue(buf)
        self.stmt(self.decl.apply, fn)
        buf.emit("return ST_OK;")
        sig = f"static int {self.apply_name}(rt_ctx *c, {', '.join(self.param_sig())})"
        self.add_function(sig, buf)

    # ------------------------------------------------------------ parsers
    def state_label(self, st: Any) -> str:
        name = getattr(st, "name", None)
        if st is None or name == "reject":
            return f"S{self.bid}__reject"
        if name == "accept":
            return f"S{self.bid}__accept"
        return f"S{self.bid}_{ident(name)}"

    def parser_apply(self) -> None:
        buf = CBuf()
        self.prologue(buf)
        timeout = self.prog.error_code("ParserTimeout")
        buf.emit("uint32_t steps_ = 0;")
        buf.emit(f"goto S{self.bid}_start;")
        for st in self.decl.states:
            if st.name in ("accept", "reject"):
                continue
            buf.emit(f"{self.state_label(st)}: {{")
            buf.level += 1
            buf.emit(f"if (steps_ >= {PARSER_STATE_LIMIT}) {{ c->perr = {timeout}; "
                     "return ST_PERR; }")
            buf.emit("steps_++;")
            fn = CFnCtx(buf, "state")
            self.stmts(st.stmts, fn)
            self.transition(st.transition, fn)
            buf.level -= 1
            buf.emit("}")
        buf.emit(f"S{self.bid}__accept:")
        buf.emit("return ST_OK;")
        buf.emit(f"S{self.bid}__reject:")
        buf.emit(f"if (steps_ >= {PARSER_STATE_LIMIT}) {{ c->perr = {timeout}; return ST_PERR; }}")
        buf.emit(f"c->perr = {REJECT_CODE};")
        buf.emit("return ST_PERR;")
        if not any(s.name == "start" for s in self.decl.states):
            raise self.fail("parser without a start state", self.decl)
        sig = f"static int {self.apply_name}(rt_ctx *c, {', '.join(self.param_sig())})"
        self.add_function(sig, buf)

    # ------------------------------------------------------------ transitions (hooks)
    TRUE = "1"

    def reject(self, fn: CFnCtx) -> None:
        fn.buf.emit(f"goto S{self.bid}__reject;")

    def goto(self, state: Any, fn: CFnCtx) -> None:
        fn.buf.emit(f"goto {self.state_label(state)};")

    def goto_if(self, cond: str, state: Any, fn: CFnCtx) -> None:
        fn.buf.emit(f"if ({cond}) goto {self.state_label(state)};")

    def no_match(self, fn: CFnCtx) -> None:
        fn.buf.emit(f"c->perr = {self.prog.error_code('NoMatch')};")
        fn.buf.emit("return ST_PERR;")

    def select_key(self, k: ast.Expr, fn: CFnCtx) -> str:
        code = self.key_value(k, fn)
        if scalar(k.type) is None:
            raise self.fail(f"select on a {k.type} value is not supported", k)
        t = self.tmp("k")
        fn.buf.emit(f"u128 {t} = (u128)({code});")
        return t

    def value_set_cond(self, ks: ast.PathExpr, keys: list[Key], fn: CFnCtx) -> str:
        marker = self.names.get(id(ks.decl), "")
        if not marker.startswith("@vs"):
            raise self.fail("value set not found", ks)
        obj = int(marker[3:])
        arr = self.tmp("vk")
        res = self.tmp("vm")
        fn.buf.emit(f"u128 {arr}[{len(keys)}] = {{{', '.join(k for k, _ in keys)}}};")
        fn.buf.emit(f"int {res} = cb_vs_match(c, {obj}, {len(keys)}, {arr});")
        fn.buf.emit(f"if ({res} < 0) return ST_ABORT;")
        return res

    def all_of(self, conds: list[str]) -> str:
        return " && ".join(f"({c})" for c in conds)

    def in_range(self, key: str, lo: str, hi: str) -> str:
        return f"{lo} <= {key} && {key} <= {hi}"

    def keyval(self, e: ast.Expr, full: int | None, fn: CFnCtx) -> str:
        from softswitch.fastpath.ctypes_ import u_lit
        c = const_int(e)
        if c is not None:
            v = c & full if full is not None else c
            if v < 0:
                return f"(u128)({lit(v, None)})"
            return f"(u128){u_lit(v, True)}"
        code = self.expr(e, fn)
        if isinstance(T.strip_newtype(e.type), T.BoolType):
            return f"(u128)(int)({code})"
        if full is not None:
            from softswitch.fastpath.ctypes_ import u_lit as ul
            return f"((u128)({code}) & {ul(full, True)})"
        return f"(u128)({code})"

    # ------------------------------------------------------------ tables
    def make_table(self, d: ast.TableDecl) -> None:
        ti = self.pb.table_instance(self.block, d)
        name = ti.name if ti is not None and ti.name else E.qualify(self.block.prefix, d.name)
        state = self.pb.tables.get(name)
        if state is None or self.pb.table_infos.get(name) is not ti:
            raise self.fail(f"table '{name}': two tables share this name", d)
        tid = self.prog.table_id(name)
        self.tables[id(d)] = (tid, state, ti)
        self.table_fns[id(d)] = f"TA{tid}"
        if ti is not None and ti.meters is not None:
            self.direct_meter_table[id(ti.meters.decl)] = tid
        fns: dict[int, str] = {}
        for r, fname in self.table_actions_run(ti):
            adecl = r.action.decl
            aname = r.action.name or adecl.name
            ad = state.actions.get(aname)
            if ad is None:
                raise self.fail(f"table '{name}': action '{aname}' unknown", d)
            fns[id(ad)] = fname
            self.table_actions[(id(d), id(adecl))] = ad
        self.action_fns[tid] = fns

    def _dispatch_fn(self, tid: int, state: Any) -> str:
        """TR<tid>: run action number a of the table with control-plane args."""
        acts = self.prog.table_actions(tid)
        fns = self.action_fns.get(tid, {})
        buf = CBuf()
        with buf.block("switch (a)"):
            for idx, ad in enumerate(acts):
                cf = fns.get(id(ad))
                if cf is None:
                    continue
                argv = ["c", "f"]
                kinds = ad.kinds or tuple("u" for _ in ad.params)
                for i, ((_pn, w), k) in enumerate(zip(ad.params, kinds, strict=True)):
                    if w > 128:
                        raise self.fail(f"action parameter '{_pn}' is wider than 128 bits",
                                        getattr(ad, "decl", None))
                    argv.append(_arg_conv(f"args[{i}]", w, k))
                buf.emit(f"case {idx}: return {cf}({', '.join(argv)});")
            buf.emit("default: return ST_OK;")
        name = f"TR{tid}"
        sig = (f"static int {name}(rt_ctx *c, struct {self.fr} *f, int32_t a, "
               "const u128 *args)")
        self.add_function(sig, buf)
        return name

    def table_apply_fn(self, d: ast.TableDecl) -> None:
        tid, state, ti = self.tables[id(d)]
        run = self._dispatch_fn(tid, state)
        buf = CBuf()
        fn = CFnCtx(buf, "function")
        mk = match_keys(ti)
        nk = len(mk)
        buf.emit(f"u128 key[{max(nk, 1)}];")
        buf.emit("key[0] = 0;")
        for i, k in enumerate(mk):
            code = self.key_value(k.expr, fn)
            kt = T.strip_newtype(k.expr.type)
            if scalar(kt) is None:
                raise self.fail(f"a table key of type {kt} is not supported", k.expr)
            w = state.keys[i].width if i < len(state.keys) else 0
            if w > 128:
                raise self.fail("table keys wider than 128 bits are not supported", k.expr)
            buf.emit(f"key[{i}] = (u128)({code});")
        buf.emit(f"rt_table *t = &c->tables[{tid}];")
        buf.emit("rt_entry *e = table_lookup(t, key);")
        with buf.block("if (!e)"):
            buf.emit("res->hit = 0;")
            buf.emit("res->action = t->def_action;")
            buf.emit(f"return {run}(c, f, t->def_action, t->def_args);")
        buf.emit("e->last_hit = rt_hit_now(c);")
        if state.has_direct_counter:
            buf.emit("e->packets += 1;")
            buf.emit("e->bytes += c->pkt.length;")
        if state.meter_factory is not None:
            buf.emit("st = cb_entry_meter(c, e, &t->color);")
            buf.emit("if (st) return st;")
        if state.selector is not None:
            self.selector_pick(ti, fn, run)
        buf.emit("res->hit = 1;")
        buf.emit("res->action = e->action;")
        buf.emit(f"return {run}(c, f, e->action, e->args);")
        sig = f"static int TA{tid}(rt_ctx *c, struct {self.fr} *f, rt_ares *res)"
        self.add_function(sig, buf)

    def selector_pick(self, ti: Any, fn: CFnCtx, run: str) -> None:
        buf = fn.buf
        algo = str(getattr(ti.implementation.args.get("algorithm"), "name",
                           ti.implementation.args.get("algorithm") or ""))
        hcode = cexterns.HASHES.get(algo)
        if hcode is None:
            raise self.fail(f"action selector hash '{algo}' is not supported", ti.decl)
        with buf.block("if (e->ngroup)"):
            parts = self.selector_fields(ti, fn)
            if any(w > 128 for _, w in parts):
                raise self.fail("selector keys wider than 128 bits are not supported", ti.decl)
            total = sum(w for _, w in parts)
            buf.emit(f"uint8_t sb[{(total + 7) // 8} + PAD];")
            buf.emit("memset(sb, 0, sizeof sb);")
            buf.emit("uint64_t sn = 0;")
            for code, w in parts:
                if w > 64:
                    buf.emit(f"wr_bits128(sb, sn, (u128)({code}), {w});")
                else:
                    buf.emit(f"wr_bits(sb, sn, (uint64_t)({code}), {w});")
                buf.emit(f"sn += {w};")
            buf.emit(f"uint64_t h = rt_hash({hcode}, sb, (size_t)((sn + 7) >> 3));")
            buf.emit("rt_member *m = &e->group[h % e->ngroup];")
            buf.emit("res->hit = 1;")
            buf.emit("res->action = m->action;")
            buf.emit(f"return {run}(c, f, m->action, m->args);")

    def bound_action(self, adecl: ast.ActionDecl, fname: str, ref: Any) -> str:
        bound = bound_arguments(ref)
        buf = CBuf()
        fn = CFnCtx(buf, "function")
        wname = f"W{self.bid}_{self.tmp('w')}_{ident(adecl.name)}"
        cparams = []
        argv: list[str] = ["c", "f"]
        outs: list[tuple[ast.Expr, str]] = []
        pre: list[str] = []
        for i, p in enumerate(adecl.params):
            a = bound[i] if i < len(bound) else None
            pt = p.type_ref.resolved
            if not p.direction:
                pn = f"c{i}"
                cparams.append(f"{self.ct(pt)} {pn}")
                argv.append(pn)
            elif p.direction in ("out", "inout"):
                t = self.tmp("a")
                if a is None or p.direction == "out":
                    pre.append(f"{self.ct(pt)} {t} = {self.zero(pt)};")
                else:
                    pre.append(f"{self.ct(pt)} {t} = {self.value(a, fn)};")
                argv.append(f"&{t}")
                if a is not None and not isinstance(a, ast.DontCareExpr):
                    outs.append((a, t))
            elif a is None:
                argv.append(self.zero(pt))
            else:
                argv.append(self.value(a, fn))
        for line in pre:
            buf.emit(line)
        buf.emit(f"st = {fname}({', '.join(argv)});")
        if outs:
            cond = "st == ST_OK || st == ST_EXIT" if self.may_exit(adecl) else "st == ST_OK"
            with buf.block(f"if ({cond})"):
                for a, t in outs:
                    self.assign(a, t, fn)
        buf.emit("return st;")
        sig = f"static int {wname}(rt_ctx *c, struct {self.fr} *f" + \
            "".join(", " + x for x in cparams) + ")"
        self.add_function(sig, buf)
        return wname

    def action_label(self, table: Any, decl: Any, label: ast.Expr) -> str:
        ad = self.table_actions.get((id(table), id(decl)))
        if ad is None:
            return "-99"
        tinfo = self.tables.get(id(table))
        if tinfo is None:
            return "-99"
        acts = self.prog.table_actions(tinfo[0])
        for i, a in enumerate(acts):
            if a is ad:
                return str(i)
        return "-99"

    # ------------------------------------------------------------ calls
    def table_apply_call(self, table_fn: str, fn: CFnCtx) -> str:
        r = self.tmp("ta")
        fn.buf.emit(f"rt_ares {r};")
        fn.buf.emit(f"st = {table_fn}(c, f, &{r});")
        self.check(fn)
        return r

    def extern_call(self, e: ast.Call, info: Any, fn: CFnCtx, want_value: bool) -> str | None:
        ext = self.pb.externs.find(info)
        if ext is None or ext.c is None:
            raise self.fail(f"{call_name(info)} is not supported by the C back end", e)
        return ext.c(self, e, info, fn)

    def bound_block(self, decl: Any) -> str | None:
        return self.blocks.get(id(decl))

    def block_call_options(self, is_parser: bool) -> dict[str, Any]:
        return {"exc": "ST_PERR" if is_parser else "ST_EXIT", "all_ptr": True,
                "frame": False}

    def int_literal(self, v: int, t: Any) -> str:
        return lit(v, scalar(t))

    def any_of(self, conds: list[str]) -> str:
        return "(" + " || ".join(conds) + ")" if conds else "0"

    def stack_shift(self, method: str, stack: str, st: T.StackType, count: ast.Expr,
                    fn: CFnCtx) -> str | None:
        nt = self.tmp("n")
        fn.buf.emit(f"i128 {nt} = (i128)({self.expr(count, fn)});")
        size, et = st.size, self.ct(st.element)
        with fn.buf.block(""):
            fn.buf.emit(f"{self.ct(st)} *s_ = &{stack};")
            fn.buf.emit(f"size_t k_ = {nt} < 0 ? 0 : ({nt} > {size} ? {size} : (size_t){nt});")
            if method == "push_front":
                fn.buf.emit(f"memmove(&s_->items[k_], &s_->items[0], ({size} - k_) * "
                            f"sizeof({et}));")
                fn.buf.emit(f"memset(&s_->items[0], 0, k_ * sizeof({et}));")
                fn.buf.emit(f"s_->nxt = (s_->nxt + k_ > {size}) ? {size} : "
                            "(uint32_t)(s_->nxt + k_);")
            else:
                fn.buf.emit(f"memmove(&s_->items[0], &s_->items[k_], ({size} - k_) * "
                            f"sizeof({et}));")
                fn.buf.emit(f"memset(&s_->items[{size} - k_], 0, k_ * sizeof({et}));")
                fn.buf.emit("s_->nxt = (s_->nxt < k_) ? 0 : (uint32_t)(s_->nxt - k_);")
        return None


def _arg_conv(a: str, w: int, k: str) -> str:
    if k == "b":
        return f"({a} != 0)"
    if k == "s":
        return f"sext128({a}, {w})" if w > 64 else f"sext64((uint64_t){a}, {w})"
    if w > 64:
        return a
    return f"(uint64_t){a}"



__all__ = ["CBlock", "EMPTY_GROUP_ACTION", "Unsupported"]
