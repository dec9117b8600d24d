"""P4 types as P4Runtime ``P4DataTypeSpec`` messages, filling P4Info's ``type_info``.

Registers, digests, value sets, match fields and action parameters describe their
types to the controller; named types (structs, headers, enums, ``error``, serializable
enums, ``type`` declarations) are referenced by name and described once in
``P4Info.type_info``, as p4c's TypeSpecConverter does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4.config.v1 import p4info_pb2, p4types_pb2

from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.cpnames import type_name
from softswitch.p4info.annotations import add_annotations

cp_name = type_name   # a named type's control-plane name (softswitch.frontend.cpnames)


def field_name(f: T.FieldInfo) -> str:
    a = ast.annotation(f, "name")
    if a is not None and a.exprs and isinstance(a.exprs[0], ast.StringLiteral):
        return a.exprs[0].value
    return f.name


def value_bytes(value: int, width: int) -> bytes:
    """Big-endian bytes of ``value`` on ``ceil(width/8)`` bytes (p4c's padded form)."""
    n = max(1, (width + 7) // 8)
    return (value & ((1 << (8 * n)) - 1)).to_bytes(n, "big")


def translation(t: T.NewType) -> tuple[str, int | None] | None:
    """``(uri, sdn_bitwidth)`` of a ``@p4runtime_translation`` type (width None: string)."""
    a = ast.annotation(t.decl, "p4runtime_translation")
    if a is None:
        return None
    exprs = a.exprs or []
    uri = exprs[0].value if exprs and isinstance(exprs[0], ast.StringLiteral) else ""
    width: int | None = None
    if len(exprs) > 1:
        w = exprs[1]
        c = getattr(w, "const", ast.NOT_CONST)
        if isinstance(w, ast.IntLiteral):
            width = w.value
        elif isinstance(c, int) and not isinstance(c, bool):
            width = c
    return uri, width


class TypeSpecs:
    """Converts semantic types, recording named types in a ``P4TypeInfo``."""

    def __init__(self, info: p4info_pb2.P4Info, error_members: list[str]) -> None:
        self.info = info
        self.error_members = error_members

    @property
    def type_info(self) -> p4types_pb2.P4TypeInfo:
        return self.info.type_info

    def touch(self) -> None:
        """Make ``type_info`` present (p4c creates it as a side effect of many steps)."""
        self.info.type_info.SetInParent()

    def convert(self, t: Any, spec: p4types_pb2.P4DataTypeSpec) -> None:
        self.touch()
        if isinstance(t, T.BitsType):
            bs = spec.bitstring
            (bs.int if t.signed else bs.bit).bitwidth = t.width
        elif isinstance(t, T.VarbitType):
            spec.bitstring.varbit.max_bitwidth = t.max_width
        elif isinstance(t, T.BoolType):
            spec.bool.SetInParent()
        elif isinstance(t, T.ErrorType):
            spec.error.SetInParent()
            self._error()
        elif isinstance(t, T.NewType):
            spec.new_type.name = cp_name(t)
            self.new_type(t)
        elif isinstance(t, T.EnumType):
            self._enum(t, spec)
        elif isinstance(t, T.HeaderType):
            spec.header.name = cp_name(t)
            self._header(t)
        elif isinstance(t, T.HeaderUnionType):
            spec.header_union.name = cp_name(t)
            self._union(t)
        elif isinstance(t, T.StructType):
            spec.struct.name = cp_name(t)
            self._struct(t)
        elif isinstance(t, T.StackType):
            self._stack(t, spec)
        elif isinstance(t, (T.TupleType, T.ListType)):
            for e in t.elements:
                self.convert(e, spec.tuple.members.add())

    def new_type(self, t: T.NewType) -> None:
        self.touch()
        name = cp_name(t)
        if name in self.type_info.new_types:
            return
        nt = self.type_info.new_types[name]
        tr = translation(t)
        if tr is not None:
            nt.translated_type.uri = tr[0]
            if tr[1] is None:
                nt.translated_type.sdn_string.SetInParent()
            else:
                nt.translated_type.sdn_bitwidth = tr[1]
        else:
            # p4c describes the representation: nested ``type``s are looked through.
            self.convert(T.strip_newtype(t), nt.original_type)
        if t.decl is not None:
            add_annotations(nt, t.decl.annotations, {"p4runtime_translation"})

    def _error(self) -> None:
        if not self.type_info.error.members:
            self.type_info.error.members.extend(self.error_members)
        self.type_info.error.SetInParent()

    def _enum(self, t: T.EnumType, spec: p4types_pb2.P4DataTypeSpec) -> None:
        if t.underlying is None:
            spec.enum.name = cp_name(t)
            if cp_name(t) not in self.type_info.enums:
                e = self.type_info.enums[cp_name(t)]
                for name in t.members:
                    e.members.add().name = name
            return
        spec.serializable_enum.name = cp_name(t)
        self.serializable_enum(t)

    def serializable_enum(self, t: T.EnumType) -> None:
        self.touch()
        if cp_name(t) in self.type_info.serializable_enums or t.underlying is None:
            return
        e = self.type_info.serializable_enums[cp_name(t)]
        e.underlying_type.bitwidth = t.underlying.width
        for name, value in t.members.items():
            m = e.members.add()
            m.name = name
            m.value = value_bytes(value, t.underlying.width)

    def _struct(self, t: T.StructType) -> None:
        for f, m in _new_members(self.type_info.structs, t):
            self.convert(f.type, m.type_spec)

    def _header(self, t: T.HeaderType) -> None:
        if cp_name(t) in self.type_info.headers:
            return
        h = self.type_info.headers[cp_name(t)]
        for name, ft in _flat_fields(t.fields, ""):
            m = h.members.add()
            m.name = name
            ft = T.strip_newtype(ft)
            if isinstance(ft, T.BitsType):
                (m.type_spec.int if ft.signed else m.type_spec.bit).bitwidth = ft.width
            elif isinstance(ft, T.VarbitType):
                m.type_spec.varbit.max_bitwidth = ft.max_width
            else:
                w = T.bit_width(ft)
                if w is not None:
                    m.type_spec.bit.bitwidth = w

    def _union(self, t: T.HeaderUnionType) -> None:
        for f, m in _new_members(self.type_info.header_unions, t):
            if isinstance(f.type, T.HeaderType):
                m.header.name = cp_name(f.type)
                self._header(f.type)

    def _stack(self, t: T.StackType, spec: p4types_pb2.P4DataTypeSpec) -> None:
        if isinstance(t.element, T.HeaderUnionType):
            spec.header_union_stack.header_union.name = cp_name(t.element)
            spec.header_union_stack.size = t.size
            self._union(t.element)
        elif isinstance(t.element, T.HeaderType):
            spec.header_stack.header.name = cp_name(t.element)
            spec.header_stack.size = t.size
            self._header(t.element)


def _new_members(table: Any, t: T.StructType | T.HeaderUnionType
                 ) -> Iterator[tuple[T.FieldInfo, Any]]:
    """Each field of ``t`` with the member added for it to ``t``'s new entry in ``table``
    (none when ``table`` already has ``t``): the entry exists before its members' types."""
    if cp_name(t) in table:
        return
    entry = table[cp_name(t)]
    for f in t.fields:
        m = entry.members.add()
        m.name = field_name(f)
        yield f, m


def _flat_fields(fields: tuple[T.FieldInfo, ...], prefix: str) -> list[tuple[str, T.Type]]:
    """Header fields with nested struct fields flattened to ``a.b`` (p4c FlattenHeader)."""
    out: list[tuple[str, T.Type]] = []
    for f in fields:
        name = prefix + field_name(f)
        if isinstance(f.type, T.StructType):
            out.extend(_flat_fields(f.type.fields, name + "."))
        else:
            out.append((name, f.type))
    return out
