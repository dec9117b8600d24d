"""Build the P4Info message of a v1model or PNA program exactly as p4c writes it.

The elaboration (:mod:`softswitch.frontend.elaborate`) supplies the objects, their
control-plane names and their order; this module assigns ids and aliases
(:mod:`softswitch.p4info.ids`), converts types (:mod:`softswitch.p4info.typespec`) and
fills the protobuf. Field by field it follows p4c's P4RuntimeSerializer and its
architecture handlers (v1model, PNA), because controllers compare P4Info files and
ids. The two architectures name their externs differently (``counter`` / ``Counter``,
``size`` / ``n_counters``); :class:`ArchExterns` maps each to one set of roles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from p4.config.v1 import p4info_pb2, p4types_pb2

from softswitch import architecture
from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.cpnames import (
    digest_data_type,
    is_hidden,
    string_annotation,
    type_width,
)
from softswitch.frontend.elaborate import (
    ActionInstance,
    Elaboration,
    EnumValue,
    ExternInstance,
    TableInstance,
    elaborate,
)
from softswitch.p4info import ids
from softswitch.p4info.annotations import add_annotations, add_doc, const_of
from softswitch.p4info.typespec import TypeSpecs, cp_name, value_bytes

DEFAULT_TABLE_SIZE = 1024

_PROFILE_ONLY = {"max_group_size", "selector_size_semantics", "max_member_weight"}

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}

_EXTERN_KINDS = {
    "counter": ids.COUNTER,
    "direct_counter": ids.DIRECT_COUNTER,
    "meter": ids.METER,
    "direct_meter": ids.DIRECT_METER,
    "register": ids.REGISTER,
    "action_profile": ids.ACTION_PROFILE,
    "action_selector": ids.ACTION_PROFILE,
}

_COUNTER_UNITS = {  # v1model's CounterType members, and PNA's PNA_CounterType_t
    "packets": p4info_pb2.CounterSpec.PACKETS,
    "bytes": p4info_pb2.CounterSpec.BYTES,
    "packets_and_bytes": p4info_pb2.CounterSpec.BOTH,
    "PACKETS": p4info_pb2.CounterSpec.PACKETS,
    "BYTES": p4info_pb2.CounterSpec.BYTES,
    "PACKETS_AND_BYTES": p4info_pb2.CounterSpec.BOTH,
}
_METER_UNITS = {
    "packets": p4info_pb2.MeterSpec.PACKETS,
    "bytes": p4info_pb2.MeterSpec.BYTES,
    "PACKETS": p4info_pb2.MeterSpec.PACKETS,
    "BYTES": p4info_pb2.MeterSpec.BYTES,
}
# the indexed externs with a unit: their P4Info list, id prefix, units and default unit
_UNIT_EXTERNS: dict[str, tuple[str, int, dict[str, int], int]] = {
    "counter": ("counters", ids.COUNTER, _COUNTER_UNITS, p4info_pb2.CounterSpec.UNSPECIFIED),
    "meter": ("meters", ids.METER, _METER_UNITS, p4info_pb2.MeterSpec.UNSPECIFIED),
}


@dataclass(frozen=True)
class ArchExterns:
    """How one architecture spells the externs P4Info describes.

    ``roles`` maps an extern type name to its role (the v1model spelling, used by the
    builder); ``size_params`` names each role's size constructor parameter;
    ``index_arg`` gives the position of the index type argument of indexed externs.
    """

    name: str
    roles: dict[str, str]
    size_params: dict[str, str] = field(default_factory=dict)
    index_arg: dict[str, int] = field(default_factory=dict)
    digest_extern: str | None = None   # PNA's Digest<T> instances (v1model: digest())


V1MODEL_EXTERNS = ArchExterns(
    architecture.V1MODEL,
    {k: k for k in ("counter", "direct_counter", "meter", "direct_meter", "register",
                    "action_profile", "action_selector")},
    index_arg={"counter": 0, "meter": 0, "register": 1})

PNA_EXTERNS = ArchExterns(
    architecture.PNA,
    {"Counter": "counter", "DirectCounter": "direct_counter", "Meter": "meter",
     "DirectMeter": "direct_meter", "Register": "register",
     "ActionProfile": "action_profile", "ActionSelector": "action_selector"},
    size_params={"counter": "n_counters", "meter": "n_meters"},
    index_arg={"counter": 1, "meter": 0, "register": 1},
    digest_extern="Digest")

ARCH_EXTERNS = {a.name: a for a in (V1MODEL_EXTERNS, PNA_EXTERNS)}


def generate(checked: Any, arch: str | None = None) -> p4info_pb2.P4Info:
    """The P4Info of a type-checked program (empty when it has no ``main``).

    ``arch`` is the requested architecture (None: detected from ``main``'s package)."""
    elab = elaborate(checked)
    return Builder(elab, ARCH_EXTERNS[architecture.detect(elab, arch)]).build()


# ---------------------------------------------------------------------------
# The builder
# ---------------------------------------------------------------------------


def _explicit_id(node: Any) -> int | None:
    a = ast.annotation(node, "id")
    if a is None:
        return None
    e = a.exprs[0] if a.exprs else None
    v = const_of(e) if e is not None else None
    if not isinstance(v, int) or isinstance(v, bool):
        raise P4Error("@id should be an unsigned integer", a.loc)
    return v


def _data_type(ext: ExternInstance) -> Any:
    """The type an extern instance holds (its first type argument, written or inferred)."""
    t = _type_of_ref(ext.type_args[0]) if ext.type_args else None
    if t is None:
        inst_t = getattr(getattr(ext.decl, "type_ref", None), "resolved", None)
        targs = getattr(inst_t, "type_args", ())
        t = targs[0] if targs else None
    return t


def _type_of_ref(ref: Any) -> Any:
    return getattr(ref, "resolved", None)


def _value_set_type_supported(decl: ast.ValueSetDecl, et: Any) -> None:
    """P4Runtime 1.x describes a value set of bit<W>, of a struct of bit<W> fields or of
    a serializable enum, nothing else (p4c refuses to write the P4Info otherwise)."""
    if isinstance(et, T.StructType):
        fields = getattr(et.decl, "fields", [])
        for i, f in enumerate(et.fields):
            if not isinstance(f.type, T.BitsType):
                loc = fields[i].loc if i < len(fields) else decl.loc
                raise P4Error("Unsupported type argument for Value Set; this version of "
                              "P4Runtime requires that when the type parameter of a Value Set "
                              "is a struct, all the fields of the struct must be of type "
                              f"bit<W>, but {f.name} is not", loc)
    elif isinstance(et, (T.TupleType, T.ListType)):
        raise P4Error(f"{decl.name}: Unsupported type argument for Value Set; this version of "
                      "P4Runtime requires the type parameter of a Value Set to be a bit<W>, "
                      "a struct of bit<W> fields, or a serializable enum", decl.loc)
    elif not isinstance(et, T.BitsType) and not (
            isinstance(et, T.EnumType) and et.underlying is not None):
        raise P4Error(f"{decl.name}: invalid type parameter for Value Set; it must be one of "
                      "bit<W>, struct, tuple or serializable enum", decl.loc)


class Builder:
    """Two passes like p4c: collect symbols (ids need all names), then emit."""

    def __init__(self, elab: Elaboration, arch: ArchExterns = V1MODEL_EXTERNS) -> None:
        self.elab = elab
        self.arch = arch
        self.p4info = p4info_pb2.P4Info()
        self.symbols = ids.SymbolTable()
        self.types = TypeSpecs(self.p4info, self._error_members())
        self.digests: list[tuple[str, Any, ast.Call]] = []
        self.profile_tables: dict[int, list[TableInstance]] = {}
        self.table_actions = {r.action.name for t in elab.tables for r in t.action_refs}

    def _role(self, ext: ExternInstance) -> str | None:
        """The extern's role in v1model spelling (``counter`` …), None if P4Info has none."""
        return self.arch.roles.get(ext.type_name)

    def _kind(self, ext: ExternInstance) -> int | None:
        role = self._role(ext)
        return _EXTERN_KINDS.get(role) if role is not None else None

    def _size(self, ext: ExternInstance, role: str) -> int:
        return _int_arg(ext, self.arch.size_params.get(role, "size"))

    def _error_members(self) -> list[str]:
        out: list[str] = []
        for d in self.elab.program.decls:
            if isinstance(d, ast.ErrorDecl):
                out.extend(m.name for m in d.members if m.name not in out)
        return out

    # --- pass 1 ------------------------------------------------------------------
    def build(self) -> p4info_pb2.P4Info:
        if self.elab.main is None:
            return self.p4info
        self._collect()
        self.symbols.assign_ids()
        self._emit()
        return self.p4info

    def _collect(self) -> None:
        e = self.elab
        # @hidden objects get no P4Info entry, but p4c still reserves their names (and
        # ids), which shapes the aliases and ids of the others.
        for act in e.actions:
            self.symbols.add(ids.ACTION, act.qualified, _explicit_id(act.decl), act.decl.loc)
        for t in e.tables:
            self.symbols.add(ids.TABLE, t.qualified, _explicit_id(t.decl), t.decl.loc)
            self._collect_table_externs(t)
        for ext in e.externs:
            kind = self._kind(ext)
            if kind is None and self._is_digest(ext):
                kind = ids.DIGEST
            if kind is not None and ext.qualified:
                self.symbols.add(kind, ext.qualified, _explicit_id(ext.decl), ext.loc)
        for vs in e.value_sets:
            self.symbols.add(ids.VALUE_SET, vs.qualified, _explicit_id(vs.decl), vs.decl.loc)
        for name, call, _blk in e.extern_calls:
            if name == "digest":
                self._collect_digest(call)
        for h in self._controller_headers():
            self.symbols.add(ids.CONTROLLER_HEADER, _header_symbol(h), _explicit_id(h), h.loc)

    def _collect_table_externs(self, t: TableInstance) -> None:
        for prop, ext in (("implementation", t.implementation), ("counters", t.counters),
                          ("meters", t.meters)):
            if ext is None:
                continue
            if ext.anonymous:
                raise P4Error(f"Table '{t.name}' has an anonymous table property '{prop}' "
                              "with no name annotation, which is not supported by "
                              "P4Runtime", ext.loc)
            kind = self._kind(ext)
            if kind == ids.ACTION_PROFILE:
                self.profile_tables.setdefault(id(ext), []).append(t)
            if kind is not None and ext.qualified:
                self.symbols.add(kind, ext.qualified, _explicit_id(ext.decl), ext.loc)

    def _collect_digest(self, call: ast.Call) -> None:
        """A ``digest`` call's digest (one per name; see cpnames.digest_names)."""
        name = self.elab.digest_names.get(id(call))
        t = digest_data_type(call)
        if name is None or t is None:
            raise P4Error("digest: the data argument has no type", call.loc)
        if all(d[0] != name for d in self.digests):
            self.digests.append((name, t, call))
            self.symbols.add(ids.DIGEST, name)

    def _controller_headers(self) -> list[ast.HeaderDecl]:
        return [d for d in self.elab.program.decls
                if isinstance(d, ast.HeaderDecl) and ast.annotation(d, "controller_header")
                and not is_hidden(d)]

    # --- pass 2 ------------------------------------------------------------------
    def _emit(self) -> None:
        e = self.elab
        for t in e.tables:
            self._table(t)
        for act in e.actions:
            self._action(act)
        for ext in e.externs:
            self._extern(ext)
        for t in e.tables:
            self._direct_resources(t)
        for h in self._controller_headers():
            self._controller_header(h)
        for vs in e.value_sets:
            self._value_set(vs)
        for name, t, _call in self.digests:
            dg = self.p4info.digests.add()
            self._preamble(dg.preamble, ids.DIGEST, name, [])
            self.types.convert(t, dg.type_spec)
        if e.extern_calls and self.arch.digest_extern is None:
            self.types.touch()  # v1model's handler inspects each call for digest()
        self._check_duplicates()
        self._pkg_info()

    def _check_duplicates(self) -> None:
        """Two objects of one kind with the same name cannot be told apart by a
        controller; p4c refuses to write such a P4Info."""
        info = self.p4info
        dups: list[str] = []
        for kind, objs in (("table", info.tables), ("action", info.actions),
                           ("action profile", info.action_profiles),
                           ("counter", info.counters), ("direct counter", info.direct_counters),
                           ("meter", info.meters), ("direct meter", info.direct_meters),
                           ("controller packet metadata", info.controller_packet_metadata),
                           ("value set", info.value_sets), ("register", info.registers),
                           ("digest", info.digests)):
            seen: set[str] = set()
            for o in objs:
                if o.preamble.name in seen:
                    dups.append(f"Name '{o.preamble.name}' is used for multiple {kind} objects "
                                "in the P4Info message")
                seen.add(o.preamble.name)
        if dups:
            raise P4Error(f"Found {len(dups)} duplicate name(s) in the P4Info: "
                          + "; ".join(dups), self.elab.main.loc if self.elab.main else None)

    def _preamble(self, pre: p4info_pb2.Preamble, kind: int, name: str,
                  annotations: list[ast.Annotation],
                  skip: set[str] | frozenset[str] = frozenset()) -> None:
        pre.id = self.symbols.id_of(kind, name)
        pre.name = name
        pre.alias = self.symbols.alias(name)
        add_annotations(pre, annotations, skip)
        add_doc(pre, annotations)

    # --- tables ------------------------------------------------------------------
    def _table(self, t: TableInstance) -> None:
        self.types.touch()
        if t.name is None:
            return
        msg = self.p4info.tables.add()
        self._preamble(msg.preamble, ids.TABLE, t.name, t.annotations)
        self._match_fields(t, msg)
        for ref in t.action_refs:  # a @hidden action is still referenced by its id
            ar = msg.action_refs.add()
            ar.id = self.symbols.id_of(ids.ACTION, ref.action.qualified)
            add_annotations(ar, ref.annotations)
            if ref.has("tableonly") and ref.has("defaultonly"):
                raise P4Error(f"Table '{t.name}' has an action reference "
                              f"('{ref.action.name}') which is annotated with both "
                              "'@tableonly' and '@defaultonly'", t.decl.loc)
            if ref.has("tableonly"):
                ar.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif ref.has("defaultonly"):
                ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        self._default_action(t, msg)
        msg.size = t.size if t.size else DEFAULT_TABLE_SIZE
        if t.implementation is not None and t.implementation.qualified:
            kind = self._kind(t.implementation)
            if kind is not None:
                msg.implementation_id = self.symbols.id_of(kind, t.implementation.qualified)
        for ext in (t.counters, t.meters):
            if ext is not None and ext.qualified:
                kind = self._kind(ext)
                if kind in (ids.DIRECT_COUNTER, ids.DIRECT_METER):
                    msg.direct_resource_ids.append(self.symbols.id_of(kind, ext.qualified))
        if t.support_timeout:
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        if t.const_entries:
            msg.is_const_table = True
        if t.has_entries and self._entry_count(t) > 0:
            msg.has_initial_entries = True

    @staticmethod
    def _entry_count(t: TableInstance) -> int:
        prop = t.decl.prop("entries")
        return len(prop.value or []) if prop is not None else 0

    def _match_fields(self, t: TableInstance, msg: p4info_pb2.Table) -> None:
        # selector keys are not match fields, but they do take an id
        for k, ident in zip(t.keys, field_ids([k.element for k in t.keys]), strict=True):
            if k.match_kind == "selector":
                continue
            mf = msg.match_fields.add()
            mf.id = ident
            mf.name = k.name
            add_annotations(mf, k.element.annotations)
            add_doc(mf, k.element.annotations)
            kt = getattr(k.expr, "type", None)
            width = 0 if isinstance(kt, T.ErrorType) else k.width
            if width is None:
                raise P4Error(f"{k.name}: cannot determine the width of this table key",
                              k.expr.loc)
            mf.bitwidth = width
            if k.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            self._type_name(kt, mf)

    def _type_name(self, t: Any, msg: Any) -> None:
        """Describe a key/param/metadata type in ``type_info`` (as p4c's converter does)
        and name it in ``type_name`` when it is a ``type`` declaration."""
        if t is None:
            return
        self.types.convert(t, p4types_pb2.P4DataTypeSpec())
        if isinstance(t, T.NewType):
            msg.type_name.name = cp_name(t)

    def _default_action(self, t: TableInstance, msg: p4info_pb2.Table) -> None:
        da = t.default_action
        if da is None:
            return
        aid = self.symbols.id_of(ids.ACTION, da.action.qualified)
        if da.is_const:
            msg.const_default_action_id = aid
        ida = msg.initial_default_action
        ida.action_id = aid
        params = da.action.params
        args = [a.value for a in da.args]
        if len(args) == len(params):  # all arguments given: keep the control-plane ones
            args = [a for a, p in zip(args, params, strict=True) if not p.direction]
        cp_params = [p for p in params if not p.direction]
        for param, ident, arg in zip(cp_params, field_ids(cp_params), args, strict=False):
            v = const_of(arg)
            width = type_width(_type_of_ref(param.type_ref))
            if isinstance(v, bool):
                v = int(v)
            if hasattr(v, "value") and not isinstance(v, int):
                v = v.value
            if not isinstance(v, int) or width is None:
                continue
            a = ida.arguments.add()
            a.param_id = ident
            a.value = value_bytes(v, width)

    # --- actions -----------------------------------------------------------------
    def _action(self, act: ActionInstance) -> None:
        if act.name is None:
            return
        msg = self.p4info.actions.add()
        self._preamble(msg.preamble, ids.ACTION, act.name, act.decl.annotations)
        if act.name not in self.table_actions:
            return  # every argument comes from a direct call: p4c binds them all
        params = [p for p in act.params if not p.direction]
        for p, ident in zip(params, field_ids(params), strict=True):
            pm = msg.params.add()
            pm.id = ident
            pm.name = string_annotation(p, "name") or p.name
            add_annotations(pm, p.annotations)
            add_doc(pm, p.annotations)
            t = _type_of_ref(p.type_ref)
            if isinstance(t, T.EnumType) and t.underlying is None:
                self.types.convert(t, p4types_pb2.P4DataTypeSpec())
                pm.type_name.name = t.name  # a plain enum: named, no width
                continue
            width = 0 if isinstance(t, T.ErrorType) else type_width(t)
            if width is None:
                raise P4Error(f"Action parameter {p.name} has a type which is not bit<>, "
                              "int<>, bool, type or serializable enum", p.loc)
            pm.bitwidth = width
            self._type_name(t, pm)

    # --- externs -----------------------------------------------------------------
    def _extern(self, ext: ExternInstance) -> None:
        tn = self._role(ext)
        self.types.touch()  # p4c's handler creates type_info for every extern instance
        if not ext.qualified:
            return
        if self._is_digest(ext):
            self._digest_instance(ext)
            return
        # p4c's v1model handler does not look at @hidden on extern instances
        if tn in _UNIT_EXTERNS:
            self._unit_extern(ext, tn)
        elif tn == "register":
            self._register(ext)
        elif tn in ("action_profile", "action_selector"):
            self._action_profile(ext)

    def _unit_extern(self, ext: ExternInstance, tn: str) -> None:
        """An indexed counter or meter: its unit, size and index type."""
        kind, id_prefix, units, unspecified = _UNIT_EXTERNS[tn]
        x = getattr(self.p4info, kind).add()
        self._preamble(x.preamble, id_prefix, ext.qualified, self._anns(ext))
        x.spec.unit = _unit(ext, units, unspecified)
        x.size = self._size(ext, tn)
        self._index_type(ext, self.arch.index_arg[tn], x)

    def _is_digest(self, ext: ExternInstance) -> bool:
        return self.arch.digest_extern is not None and ext.type_name == self.arch.digest_extern

    def _digest_instance(self, ext: ExternInstance) -> None:
        """PNA's ``Digest<T>`` instance: a digest named after the instance."""
        dg = self.p4info.digests.add()
        self._preamble(dg.preamble, ids.DIGEST, ext.qualified, self._anns(ext))
        t = _data_type(ext)
        if t is None:
            raise P4Error(f"Digest '{ext.name}' has no data type", ext.loc)
        self.types.convert(t, dg.type_spec)

    def _index_type(self, ext: ExternInstance, pos: int, msg: Any) -> None:
        """``index_type_name`` when an indexed extern's index type is a ``type``."""
        t = _type_of_ref(ext.type_args[pos]) if len(ext.type_args) > pos else None
        if isinstance(t, T.NewType):
            msg.index_type_name.name = cp_name(t)
            self.types.new_type(t)

    def _anns(self, ext: ExternInstance) -> list[ast.Annotation]:
        """Annotations of the declaration, or of the table property building it."""
        if isinstance(ext.decl, ast.InstanceDecl):
            return ext.annotations
        if ext.table is not None:
            for prop in ext.table.decl.properties:
                if prop.value is ext.decl:
                    return prop.annotations
        return []

    def _register(self, ext: ExternInstance) -> None:
        r = self.p4info.registers.add()
        self._preamble(r.preamble, ids.REGISTER, ext.qualified, self._anns(ext))
        t = _data_type(ext)
        if t is not None:
            self.types.convert(t, r.type_spec)
        r.size = _int_arg(ext, "size")
        if len(ext.type_args) > 1:
            self._index_type(ext, self.arch.index_arg["register"], r)

    def _action_profile(self, ext: ExternInstance) -> None:
        ap = self.p4info.action_profiles.add()
        self._preamble(ap.preamble, ids.ACTION_PROFILE, ext.qualified, self._anns(ext),
                       _PROFILE_ONLY)
        # p4c keeps the referencing tables in a set of names: sorted by name
        for name in sorted({t.qualified for t in self.profile_tables.get(id(ext), [])},
                           key=str.encode):
            ap.table_ids.append(self.symbols.id_of(ids.TABLE, name))
        ap.size = _int_arg(ext, "size")
        if self._role(ext) != "action_selector":
            return
        ap.with_selector = True
        anns = {a.name: a for a in reversed(self._anns(ext))}  # the first one wins
        mgs = _int_annotation(anns.get("max_group_size"))
        if mgs is not None:
            ap.max_group_size = mgs
        sem = anns.get("selector_size_semantics")
        sem_text = const_of(sem.exprs[0]) if sem is not None and sem.exprs else None
        if sem_text == "sum_of_weights":
            ap.sum_of_weights.SetInParent()
        elif sem_text == "sum_of_members":
            ap.sum_of_members.SetInParent()
            mmw = _int_annotation(anns.get("max_member_weight"))
            if mmw is not None:
                ap.sum_of_members.max_member_weight = mmw

    def _direct_resources(self, t: TableInstance) -> None:
        if t.name is None:
            return
        tid = self.symbols.id_of(ids.TABLE, t.name)
        if t.counters is not None and self._role(t.counters) == "direct_counter" \
                and t.counters.qualified:
            dc = self.p4info.direct_counters.add()
            self._preamble(dc.preamble, ids.DIRECT_COUNTER, t.counters.qualified,
                           self._anns(t.counters))
            dc.spec.unit = _unit(t.counters, _COUNTER_UNITS,
                                 p4info_pb2.CounterSpec.UNSPECIFIED)
            dc.direct_table_id = tid
        if t.meters is not None and self._role(t.meters) == "direct_meter" \
                and t.meters.qualified:
            dm = self.p4info.direct_meters.add()
            self._preamble(dm.preamble, ids.DIRECT_METER, t.meters.qualified,
                           self._anns(t.meters))
            dm.spec.unit = _unit(t.meters, _METER_UNITS, p4info_pb2.MeterSpec.UNSPECIFIED)
            dm.direct_table_id = tid

    # --- value sets, controller headers, package ---------------------------------
    def _value_set(self, vs: Any) -> None:
        if vs.name is None:
            return
        msg = self.p4info.value_sets.add()
        self._preamble(msg.preamble, ids.VALUE_SET, vs.name, vs.decl.annotations)
        if vs.size is not None and vs.size < 0:
            # P4Info sizes are unsigned; p4c refuses to write a negative one
            raise P4Error(f"@size should be a positive integer for declaration {vs.name}",
                          vs.decl.size.loc)
        msg.size = vs.size or 0
        et = _type_of_ref(vs.decl.element)
        _value_set_type_supported(vs.decl, et)
        if isinstance(et, T.BitsType):
            m = msg.match.add()
            m.id = 1
            m.bitwidth = et.width
            m.match_type = p4info_pb2.MatchField.EXACT
        elif isinstance(et, T.StructType):
            for f, ident in zip(et.fields, field_ids(list(et.fields)), strict=True):
                anns = [a for a in f.annotations if isinstance(a, ast.Annotation)]
                m = msg.match.add()
                m.id = ident
                m.name = next((const_of(a.exprs[0]) for a in anns
                               if a.name == "name" and a.exprs), None) or f.name
                m.bitwidth = T.bit_width(f.type) or 0
                kind = _match_annotation(f.annotations)
                if kind in _MATCH_TYPES:
                    m.match_type = _MATCH_TYPES[kind]
                else:
                    m.other_match_type = kind
                add_annotations(m, anns, {"match"})
                add_doc(m, anns)
        elif isinstance(et, T.EnumType) and et.underlying is not None:
            for i, name in enumerate(et.members, start=1):
                m = msg.match.add()
                m.id = i
                m.name = name
                m.bitwidth = et.underlying.width
                m.match_type = p4info_pb2.MatchField.EXACT

    def _controller_header(self, h: ast.HeaderDecl) -> None:
        a = string_annotation(h, "controller_header") or ""
        self.types.touch()
        msg = self.p4info.controller_packet_metadata.add()
        msg.preamble.id = self.symbols.id_of(ids.CONTROLLER_HEADER, _header_symbol(h))
        msg.preamble.name = a
        msg.preamble.alias = a
        add_annotations(msg.preamble, h.annotations)
        fields = _flatten_fields(h)
        for (name, f, ft), ident in zip(fields, field_ids([f for _, f, _ in fields]),
                                        strict=True):
            if is_hidden(f):
                continue
            md = msg.metadata.add()
            md.id = ident
            md.name = name
            add_annotations(md, f.annotations)
            w = type_width(ft)
            md.bitwidth = w or 0
            self._type_name(ft, md)

    def _pkg_info(self) -> None:
        main = self.elab.main
        pkg = self.p4info.pkg_info
        pkg.arch = self.arch.name
        assert main is not None
        for a in main.annotations:
            if a.name != "pkginfo":
                continue
            for k, val in _pkginfo_pairs(a):
                if k in ("name", "version", "organization", "contact", "url", "arch"):
                    if not isinstance(val, str):
                        raise P4Error(f"Value for '{k}' key in @pkginfo annotation is not "
                                      "a string", a.loc)
                    setattr(pkg, k, val)
        add_annotations(pkg, main.annotations, {"pkginfo"})
        add_doc(pkg, main.annotations)


_KV_TEXT = re.compile(r'(\w+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^,\s]+))')


def _pkginfo_pairs(a: ast.Annotation) -> list[tuple[str, Any]]:
    """Key/value pairs of ``@pkginfo[k="v"]`` or of the parenthesized ``@pkginfo(k="v")``."""
    if a.kv is not None:
        return [(k, const_of(v)) for k, v in a.kv.items()]
    return [(m.group(1), m.group(2) if m.group(2) is not None else None)
            for m in _KV_TEXT.finditer(a.body)]


def _header_symbol(h: ast.HeaderDecl) -> str:
    """The symbol p4c reserves for a controller header: the type's control-plane name
    (the preamble shows the ``@controller_header`` name instead)."""
    return (string_annotation(h, "name") or h.name).lstrip(".")


def _match_annotation(annotations: tuple[Any, ...]) -> str:
    for a in annotations:
        if getattr(a, "name", None) == "match":
            if a.exprs and isinstance(a.exprs[0], ast.PathExpr):
                return a.exprs[0].name
            return a.body.strip()
    return "exact"


def _flatten_fields(h: ast.HeaderDecl) -> list[tuple[str, ast.FieldDecl, Any]]:
    """Header fields with nested struct fields flattened to ``a.b`` (p4c FlattenHeader)."""
    out: list[tuple[str, ast.FieldDecl, Any]] = []

    def visit(prefix: str, fields: list[ast.FieldDecl]) -> None:
        for f in fields:
            t = _type_of_ref(f.type_ref)
            name = prefix + (string_annotation(f, "name") or f.name)
            if isinstance(t, T.StructType) and t.decl is not None:
                visit(name + ".", t.decl.fields)
            else:
                out.append((name, f, t))

    visit("", h.fields)
    return out


def field_ids(elements: list[Any]) -> list[int]:
    """Ids of match fields / parameters / metadata fields, like p4c's FieldIdAllocator:
    ``@id(N)`` is honoured, the others are numbered from 1 skipping taken ids."""
    explicit = [_explicit_id(e) for e in elements]
    for e, ident in zip(elements, explicit, strict=True):
        if ident == 0:
            raise P4Error("0 is not a valid @id value", getattr(e, "loc", None))
    taken = {i for i in explicit if i is not None}
    if len(taken) != len([i for i in explicit if i is not None]):
        raise P4Error("@id is used multiple times", getattr(elements[0], "loc", None))
    out: list[int] = []
    index = 1
    for ident in explicit:
        if ident is not None:
            out.append(ident)
            index += 1
            continue
        while index in taken:
            index += 1
        taken.add(index)
        out.append(index)
    return out


def _int_annotation(a: ast.Annotation | None) -> int | None:
    v = const_of(a.exprs[0]) if a is not None and a.exprs else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _int_arg(ext: ExternInstance, name: str) -> int:
    v = ext.args.get(name)
    if isinstance(v, EnumValue) and v.value is not None:
        v = v.value  # a serializable enum member
    if isinstance(v, bool) or not isinstance(v, int):
        raise P4Error(f"{ext.type_name} '{ext.name}' has a non-constant {name} parameter",
                      ext.loc)
    return v


def _unit(ext: ExternInstance, table: dict[str, int], default: int) -> int:
    v = ext.args.get("type")
    name = v.name if isinstance(v, EnumValue) else getattr(v, "name", None)
    if name is None:
        raise P4Error(f"{ext.type_name} '{ext.name}' has a unit type which is not an enum "
                      "constant", ext.loc)
    return table.get(name, default)


