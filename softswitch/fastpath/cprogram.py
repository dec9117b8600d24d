"""The whole v1model pipeline of a loaded program as one C translation unit.

:class:`CProgram` takes a switch the interpreter has built (its ``ProgramBuilder`` owns
the tables, counters, registers, value sets and their control-plane names) and
generates, from the same typed AST: C types, per header type an extract and an emit
function, every reachable parser/control instance (:mod:`cblock`), the six V1Switch
roles, the ``@field_list`` copies, and ``p4_ctx_init`` (table layouts, counter and
register arrays). ``rt_head.c`` comes first, ``rt_tail.c`` (driver, Python methods),
``rt_queues.c`` (native egress queues) and ``rt_loop.c`` (the native forwarding loop of
``softswitch run``) last. Anything
the C back end does not implement raises :class:`Unsupported` with the construct and
its source location.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from softswitch.core import wire
from softswitch.core.blocks import REJECT_CODE
from softswitch.core.externs import CounterArray, MeterArray, RegisterArray
from softswitch.core.tables import EMPTY_GROUP_ACTION
from softswitch.fastpath.cblock import CBlock
from softswitch.fastpath.ccontracts import ExternRef
from softswitch.fastpath.ctypes_ import CTypes, Unsupported
from softswitch.frontend import elaborate as E
from softswitch.frontend import types as T

HERE = Path(__file__).resolve().parent
ROLES = ("p", "vr", "ig", "eg", "ck", "dep")
#: runtime version: part of every cache key
RUNTIME_VERSION = "1"


@dataclass
class TableLayout:
    name: str
    tid: int
    state: Any
    acts: list[Any]                 # ActionDef per C action number
    index: dict[int, int]           # id(ActionDef) -> C action number


class CProgram:
    def __init__(self, switch: Any) -> None:
        self.sw = switch
        self.pb = switch.pb
        self.types = CTypes()
        self.objs: list[Any] = [self.pb.runtime]
        self._obj_ids: dict[Any, int] = {}
        self.frames: list[str] = []
        self.protos: list[str] = []
        self.functions: list[str] = []
        self.wire_funcs: list[str] = []
        self._blocks: dict[int, str] = {}
        self._nblocks = 0
        self.table_names = list(self.pb.tables)
        self._tids = {n: i for i, n in enumerate(self.table_names)}
        self.layouts: dict[int, TableLayout] = {}
        self.counter_names = list(self.pb.counters)
        self.register_names = list(self.pb.registers)
        self._counter_ids = {id(o): i for i, o in enumerate(self.pb.counters.values())}
        self._register_ids = {id(o): i for i, o in enumerate(self.pb.registers.values())}
        self._extract: dict[Any, str] = {}
        self._emit: dict[Any, str] = {}

    # ------------------------------------------------------------ registries
    def error_code(self, name: str, default: int = 0) -> int:
        return self.pb.env.error_codes.get(name, default)

    def obj(self, x: Any) -> int:
        key = ("s", x) if isinstance(x, str) else ("o", id(x))
        i = self._obj_ids.get(key)
        if i is None:
            i = len(self.objs)
            self.objs.append(x)
            self._obj_ids[key] = i
        return i

    def table_id(self, name: str) -> int:
        return self._tids[name]

    def table_layout(self, tid: int) -> TableLayout:
        lay = self.layouts.get(tid)
        if lay is None:
            name = self.table_names[tid]
            state = self.pb.tables[name]
            acts = list(state.actions.values())
            if state.default_action is not None and not any(
                    a is state.default_action for a in acts):
                acts.append(state.default_action)
            index = {id(a): i for i, a in enumerate(acts)}
            index[id(EMPTY_GROUP_ACTION)] = -2
            lay = TableLayout(name, tid, state, acts, index)
            self.layouts[tid] = lay
        return lay

    def table_actions(self, tid: int) -> list[Any]:
        return self.table_layout(tid).acts

    def block_fn(self, inst: E.BlockInstance) -> str:
        name = self._blocks.get(id(inst))
        if name is None:
            bid = self._nblocks
            self._nblocks += 1
            blk = CBlock(self, inst, bid)
            self._blocks[id(inst)] = blk.apply_name
            blk.compile()
            name = blk.apply_name
        return name

    def extern_ref(self, inst: E.ExternInstance) -> ExternRef:
        obj = self.pb.extern_object(inst)
        if isinstance(obj, CounterArray):
            idx = self._counter_ids.get(id(obj))
            if idx is None:
                raise Unsupported(f"counter '{obj.name}' is not registered", inst.loc)
            return ExternRef("counter", idx, obj)
        if isinstance(obj, RegisterArray):
            idx = self._register_ids.get(id(obj))
            if idx is None:
                raise Unsupported(f"register '{obj.name}' is not registered", inst.loc)
            if not 0 < obj.width <= 128:
                raise Unsupported(f"register '{obj.name}': only bit<W>/int<W> cells up to "
                                  "128 bits are supported by the C back end", inst.loc)
            return ExternRef("register", idx, obj)
        if isinstance(obj, MeterArray):
            return ExternRef("meter", self.obj(obj), obj)
        return ExternRef(inst.type_name, None, obj)

    # ------------------------------------------------------------ wire format
    def extractor(self, t: Any) -> str:
        """EX<n>(c, r, h, varbits): the interpreter's generated extractor, in C: one
        length check then every field for a fixed header; for one with a varbit field,
        run by run (fixed fields, the varbit, fixed fields), each checked and consumed in
        turn, so a short packet leaves the cursor and fields where the interpreter does."""
        name, new = _named(self._extract, "EX", self.types.key(t))
        if not new:
            return name
        ct = self.types.c(t)
        fields = wire.leaves(t)
        short = self.error_code("PacketTooShort", 1)
        lines = [f"static int {name}(rt_ctx *c, rt_reader *r, {ct} *h, i128 vb) {{",
                 "    const uint8_t *p = r->data;",
                 "    (void)vb;"]
        if any(k == "v" for _, _, k in fields):
            # BMv2's checks (extract_VL) in its order, before any field is written:
            # whole bytes, then enough packet, then the varbit field's maximum
            fixed, vmax = wire.varbit_bounds(fields)
            hts = self.error_code("HeaderTooShort", 4)
            bad = self.error_code("ParserInvalidArgument", 6)
            lines += [f"    if (vb % 8) {{ c->perr = {bad}; return ST_PERR; }}",
                      f"    if ((i128)r->pos + {fixed} + vb > (i128)r->nbits) "
                      f"{{ c->perr = {short}; return ST_PERR; }}",
                      f"    if (vb > {vmax} || vb < 0) {{ c->perr = {hts}; return ST_PERR; }}"]
            for is_varbit, run in wire.extract_steps(fields):
                if is_varbit:
                    path = run[0][0]
                    lines += [f"    if (r->pos + (uint64_t)vb > r->nbits) {{ c->perr = {short}; "
                              "return ST_PERR; }",
                              f"    rd_varbit(p, r->pos, (uint32_t)vb, h->{path}.b, "
                              f"sizeof h->{path}.b);",
                              f"    h->{path}.w = (uint32_t)vb;",
                              "    r->pos += (uint64_t)vb;"]
                    continue
                total = sum(fw for _, fw, _ in run)
                lines.append(f"    if (r->pos + {total} > r->nbits) {{ c->perr = {short}; "
                             "return ST_PERR; }")
                lines += self._read_fields(run, "r->pos")
                lines.append(f"    r->pos += {total};")
        else:
            total = sum(w for _, w, _ in fields)
            lines += [f"    if (r->pos + {total} > r->nbits) {{ c->perr = {short}; "
                      "return ST_PERR; }"]
            lines += self._read_fields(fields, "r->pos")
            lines.append(f"    r->pos += {total};")
        if isinstance(T.strip_newtype(t), T.HeaderType):
            lines.append("    h->_v = 1;")
        lines.append("    return ST_OK;")
        lines.append("}")
        self.protos.append(lines[0][:-2] + ";")
        self.wire_funcs.append("\n".join(lines) + "\n")
        return name

    @staticmethod
    def _read_fields(fields: list[tuple[str, int, str]], base: str) -> list[str]:
        out = [f"    uint64_t o = {base};"]
        o = "o"
        off = 0
        for path, w, kind in fields:
            if w > 128:
                out.append(f"    rd_varbit(p, {o} + {off}, {w}, h->{path}.b, sizeof h->{path}.b);")
                off += w
                continue
            rd = (f"rd_bits128(p, {o} + {off}, {w})" if w > 64 else f"rd_bits(p, {o} + {off}, {w})")
            if kind == "s":
                rd = f"sext128({rd}, {w})" if w > 64 else f"sext64({rd}, {w})"
            elif kind == "b":
                rd = f"(uint8_t)({rd} & 1)"
            out.append(f"    h->{path} = {rd};")
            off += w
        return ["    {"] + ["    " + x for x in out] + ["    }"]

    def emitter(self, t: Any) -> str:
        t = T.strip_newtype(t)
        name, new = _named(self._emit, "EM", self.types.key(t))
        if not new:
            return name
        ct = self.types.c(t)
        lines = [f"static int {name}(rt_ctx *c, rt_writer *w, const {ct} *h) {{"]
        if isinstance(t, T.HeaderType):
            fields = wire.leaves(t)
            total = sum(wd for _, wd, k in fields if k != "v")
            var = " + ".join(f"h->{p}.w" for p, _, k in fields if k == "v") or "0"
            lines += ["    if (!h->_v) return ST_OK;",
                      f"    if (wr_ensure(w, {total} + (uint64_t)({var}))) "
                      "{ PyErr_NoMemory(); return ST_ABORT; }",
                      "    uint64_t o = w->nbits;"]
            off = 0
            for path, wd, kind in fields:
                at = f"o + {off}" if off else "o"
                if kind == "v":
                    lines.append(f"    wr_varbit(w->buf, {at}, h->{path}.b, h->{path}.w);")
                    if off:
                        lines.append(f"    o += {off};")
                    lines.append(f"    o += h->{path}.w;")
                    off = 0
                    continue
                if wd > 128:
                    lines.append(f"    wr_varbit(w->buf, {at}, h->{path}.b, {wd});")
                elif wd > 64:
                    lines.append(f"    wr_bits128(w->buf, {at}, (u128)h->{path}, {wd});")
                elif wd:
                    lines.append(f"    wr_bits(w->buf, {at}, (uint64_t)h->{path}, {wd});")
                off += wd
            lines.append(f"    w->nbits = o + {off};")
            lines.append("    return ST_OK;")
        elif isinstance(t, T.StackType):
            sub = self.emitter(t.element)
            lines += ["    int st;",
                      f"    for (int i = 0; i < {t.size}; i++) {{",
                      f"        st = {sub}(c, w, &h->items[i]);",
                      "        if (st) return st;",
                      "    }",
                      "    return ST_OK;"]
        elif isinstance(t, T.StructType | T.HeaderUnionType):
            lines.append("    int st = 0;")
            for f in t.fields:
                ft = T.strip_newtype(f.type)
                if isinstance(ft, T.StructLikeType | T.StackType):
                    sub = self.emitter(ft)
                    lines.append(f"    st = {sub}(c, w, &h->f_{f.name});")
                    lines.append("    if (st) return st;")
            lines.append("    return st;")
        else:
            raise Unsupported(f"cannot emit a value of type {t}")
        lines.append("}")
        self.protos.append(lines[0][:-2] + ";")
        self.wire_funcs.append("\n".join(lines) + "\n")
        return name

    # ------------------------------------------------------------ the program
    def generate(self) -> str:
        elab = self.pb.elab
        roles: dict[str, tuple[str, Any]] = {}
        for role in ROLES:
            blk = elab.top_block(role)
            if blk is None:
                raise Unsupported(f"V1Switch argument '{role}' is missing")
            roles[role] = (self.block_fn(blk), blk)
        ht, mt, smt = (T.strip_newtype(p.type_ref.resolved)
                       for p in roles["p"][1].decl.params[1:])
        h, m, sm = self.types.c(ht), self.types.c(mt), self.types.c(smt)
        for n in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                  "packet_length", "enq_timestamp", "enq_qdepth", "deq_timedelta",
                  "deq_qdepth", "ingress_global_timestamp", "egress_global_timestamp",
                  "mcast_grp", "egress_rid", "checksum_error", "parser_error", "priority"):
            if smt.field(n) is None:
                raise Unsupported(f"standard_metadata_t has no field '{n}'")
        want = {"p": ["rt_reader *", f"{h} *", f"{m} *", f"{sm} *"],
                "vr": [f"{h} *", f"{m} *"], "ig": [f"{h} *", f"{m} *", f"{sm} *"],
                "eg": [f"{h} *", f"{m} *", f"{sm} *"], "ck": [f"{h} *", f"{m} *"],
                "dep": ["rt_writer *", f"{h} *"]}
        wrappers = []
        cnames = {"p": "p4_parser", "vr": "p4_verify", "ig": "p4_ingress", "eg": "p4_egress",
                  "ck": "p4_compute", "dep": "p4_deparser"}
        cargs = {"p": ["rt_reader *r", "P4_H *h", "P4_M *m", "P4_SM *sm"],
                 "vr": ["P4_H *h", "P4_M *m"], "ig": ["P4_H *h", "P4_M *m", "P4_SM *sm"],
                 "eg": ["P4_H *h", "P4_M *m", "P4_SM *sm"], "ck": ["P4_H *h", "P4_M *m"],
                 "dep": ["rt_writer *w", "P4_H *h"]}
        for role, (fname, blk) in roles.items():
            got = []
            for p in blk.decl.params:
                pt = T.strip_newtype(p.type_ref.resolved)
                if isinstance(pt, T.ExternType):
                    got.append("rt_reader *" if pt.name == "packet_in" else "rt_writer *")
                else:
                    got.append(f"{self.types.c(pt)} *")
            if got != want[role]:
                raise Unsupported(f"V1Switch argument '{role}' ({blk.decl.name}) has "
                                  "parameters the C back end does not expect")
            names = [a.split("*")[-1] for a in cargs[role]]
            wrappers.append(f"static int {cnames[role]}(rt_ctx *c, {', '.join(cargs[role])}) "
                            f"{{ return {fname}(c, {', '.join(names)}); }}\n")
        fl = ["static void p4_fl_apply(int64_t idx, P4_M *d, const P4_M *s) {",
              "    switch (idx) {"]
        for idx, paths in sorted(self.sw.field_lists.items()):
            fl.append(f"    case {idx}:")
            for path in paths:
                fl.append(f"        d->{path} = s->{path};")
            fl.append("        break;")
        fl += ["    default: break;", "    }", "    (void)d; (void)s;", "}"]
        init = self._ctx_init()
        head = (HERE / "rt_head.c").read_text()
        tail = "".join((HERE / name).read_text()
                       for name in ("rt_tail.c", "rt_queues.c", "rt_loop.c"))
        parts = [
            f"/* generated by softswitch.fastpath (runtime {RUNTIME_VERSION}) */\n",
            f"#define P4_REJECT ({REJECT_CODE})\n",
            head,
            "\n/* ---------------------------------------------------------- program types */\n",
            *self.types.defs,
            f"typedef {h} P4_H;\ntypedef {m} P4_M;\ntypedef {sm} P4_SM;\n",
            "typedef struct { int hit; int32_t action; } rt_ares;\n",
            *self.types.funcs,
            *self.frames,
            "\n".join(self.protos) + "\n",
            *self.wire_funcs,
            *self.functions,
            *wrappers,
            "\n".join(fl) + "\n",
            init,
            tail,
        ]
        return "".join(parts)

    def _ctx_init(self) -> str:
        lines = ["static int p4_ctx_init(rt_ctx *c) {"]
        n = len(self.table_names)
        lines.append(f"    c->ntables = {n};")
        lines.append(f"    c->tables = (rt_table *)calloc({max(n, 1)}, sizeof(rt_table));")
        lines.append("    if (!c->tables) return -1;")
        for tid, name in enumerate(self.table_names):
            st = self.pb.tables[name]
            self.table_layout(tid)
            for k in st.keys:
                if k.width > 128:
                    raise Unsupported(f"table '{name}': key '{k.name}' is wider than 128 bits")
            if st.mode == "exact":
                mode, li, lw = 0, 0, 0
            elif st.mode == "lpm":
                mode, li = 1, st.lpm_index
                lw = st.keys[li].width
            else:
                mode, li, lw = (2 if st.masked else 3), 0, 0
            rng = ", ".join("1" if k.kind == "range" else "0" for k in st.keys) or "0"
            lines.append(f"    {{ static const uint8_t r[] = {{{rng}}}; "
                         f"table_init(&c->tables[{tid}], {mode}, {len(st.keys)}, r, {li}, "
                         f"{lw}); }}")
        nc = len(self.counter_names)
        lines.append(f"    c->ncounters = {nc};")
        lines.append(f"    c->counters = (rt_counter *)calloc({max(nc, 1)}, sizeof(rt_counter));")
        lines.append("    if (!c->counters) return -1;")
        for i, name in enumerate(self.counter_names):
            size = self.pb.counters[name].size
            lines.append(f"    c->counters[{i}].size = {size}ULL;")
            lines.append(f"    c->counters[{i}].pk = (uint64_t *)calloc({max(size, 1)}, 8);")
            lines.append(f"    c->counters[{i}].by = (uint64_t *)calloc({max(size, 1)}, 8);")
            lines.append(f"    if (!c->counters[{i}].pk || !c->counters[{i}].by) return -1;")
        nr = len(self.register_names)
        lines.append(f"    c->nregisters = {nr};")
        lines.append(f"    c->registers = (rt_register *)calloc({max(nr, 1)}, "
                     "sizeof(rt_register));")
        lines.append("    if (!c->registers) return -1;")
        for i, name in enumerate(self.register_names):
            r = self.pb.registers[name]
            if not 0 < r.width <= 128:
                raise Unsupported(f"register '{name}': only bit<W>/int<W> cells up to 128 "
                                  "bits are supported by the C back end")
            lines.append(f"    c->registers[{i}].size = {r.size}ULL;")
            lines.append(f"    c->registers[{i}].width = {r.width};")
            lines.append(f"    c->registers[{i}].sign = {1 if r.signed else 0};")
            lines.append(f"    c->registers[{i}].cells = (u128 *)calloc({max(r.size, 1)}, "
                         "sizeof(u128));")
            lines.append(f"    if (!c->registers[{i}].cells) return -1;")
        lines.append("    return 0;")
        lines.append("}")
        return "\n".join(lines) + "\n"


def _named(names: dict[Any, str], prefix: str, key: Any) -> tuple[str, bool]:
    """The C function name of ``key`` (a new one is ``prefix<n>``) and whether it is new."""
    name = names.get(key)
    if name is not None:
        return name, False
    name = f"{prefix}{len(names)}"
    names[key] = name
    return name, True
