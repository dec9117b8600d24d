"""Generated extract/emit/lookahead code per header type (the packet wire format).

For each header type one extractor and one emitter are generated as straight-line
Python (a single big-int read, then shifts and masks per field), cached per type, so
``packet.extract(hdr.ipv4)`` costs one call. Signed fields are sign-converted, ``bool``
fields become bools, and a varbit field takes its width from the extract call.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import groupby
from typing import Any

from softswitch.core.bits import BitWriter, PacketReader, PacketTooShort
from softswitch.core.execution import ParserError
from softswitch.core.values import Layouts, Stack, attr
from softswitch.frontend import types as T


def field_bits(t: Any) -> tuple[int, str]:
    """(width, kind) of a header field: kind is 'u', 's', 'b' (bool) or 'v' (varbit)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.EnumType) and t.underlying is not None:
        t = t.underlying
    if isinstance(t, T.BitsType):
        return t.width, "s" if t.signed else "u"
    if isinstance(t, T.BoolType):
        return 1, "b"
    if isinstance(t, T.VarbitType):
        return t.max_width, "v"
    raise ValueError(f"type {t} cannot be a header field")


def leaves(t: T.StructLikeType, prefix: str = "") -> list[tuple[str, int, str]]:
    """(attribute path, width, kind) of every scalar in a header, nested structs and
    arrays included, in wire order."""
    out: list[tuple[str, int, str]] = []
    for f in t.fields:
        path = f"{prefix}{attr(f.name)}"
        _leaf(f.type, path, out)
    return out


def _leaf(t: Any, path: str, out: list[tuple[str, int, str]]) -> None:
    t = T.strip_newtype(t)
    if isinstance(t, T.StructType | T.HeaderType):
        out.extend(leaves(t, path + "."))
    elif isinstance(t, T.StackType):
        for i in range(t.size):
            _leaf(t.element, f"{path}.items[{i}]", out)
    else:
        out.append((path, *field_bits(t)))


Leaf = tuple[str, int, str]


def varbit_bounds(fields: list[Leaf]) -> tuple[int, int]:
    """(bits of the fixed fields, the varbit field's maximum) of a header with a varbit."""
    fixed = sum(w for _, w, k in fields if k != "v")
    return fixed, max(w for _, w, k in fields if k == "v")


def extract_steps(fields: list[Leaf]) -> list[tuple[bool, list[Leaf]]]:
    """How a header with a varbit field is read, step by step: (True, [the varbit]) or
    (False, a run of fixed fields read as one integer); each step checks what is left
    of the packet first, so a short packet stops where BMv2 stops."""
    out: list[tuple[bool, list[Leaf]]] = []
    for is_varbit, run in groupby(fields, key=lambda f: f[2] == "v"):
        items = list(run)
        out.extend([(True, [f]) for f in items] if is_varbit else [(False, items)])
    return out


def type_bits(t: Any) -> int:
    """Serialized width in bits of a header/struct/stack (varbit counted at 0)."""
    t = T.strip_newtype(t)
    if isinstance(t, T.HeaderType | T.StructType | T.HeaderUnionType):
        if isinstance(t, T.HeaderUnionType):
            return max((type_bits(f.type) for f in t.fields), default=0)
        total = 0
        for f in t.fields:
            ft = T.strip_newtype(f.type)
            if isinstance(ft, T.VarbitType):
                continue
            total += type_bits(ft) if isinstance(ft, T.StructLikeType | T.StackType) else \
                field_bits(ft)[0]
        return total
    if isinstance(t, T.StackType):
        return type_bits(t.element) * t.size
    return field_bits(t)[0]


class WireCodegen:
    """Caches generated extract/emit functions per header type."""

    def __init__(self, layouts: Layouts, error_codes: dict[str, int]) -> None:
        self.layouts = layouts
        self.too_short = error_codes.get("PacketTooShort", 1)
        self.header_too_short = error_codes.get("HeaderTooShort", 4)
        self.invalid_argument = error_codes.get("ParserInvalidArgument", 6)
        self.overflow = error_codes.get("StackOutOfBounds", 3)
        self._extract: dict[int, Callable[..., None]] = {}
        self._emit: dict[Any, Callable[[BitWriter, Any], None]] = {}

    def _ns(self) -> dict[str, Any]:
        return {"_PErr": ParserError, "_Short": PacketTooShort, "BitWriter": BitWriter,
                "PacketReader": PacketReader}

    # ------------------------------------------------------------ extract
    def extractor(self, t: T.StructLikeType) -> Callable[..., None]:
        key = id(self.layouts.cls(t))
        fn = self._extract.get(key)
        if fn is None:
            fn = self._make_extractor(t)
            self._extract[key] = fn
        return fn

    def _make_extractor(self, t: T.StructLikeType) -> Callable[..., None]:
        fields = leaves(t)
        has_var = any(k == "v" for _, _, k in fields)
        lines = ["def extract(r, h, varbits=0):"]
        if has_var:
            self._varbit_body(fields, lines)
        else:
            total = sum(w for _, w, _ in fields)
            lines += [
                f"    end = r.bit_pos + {total}",
                "    if end > r.total_bits:",
                f"        raise _PErr({self.too_short})",
            ]
            if total:
                lines += [
                    "    s = r.bit_pos >> 3",
                    "    e = (end + 7) >> 3",
                    "    v = int.from_bytes(r.data[s:e], 'big') >> ((e << 3) - end)",
                ]
            for name, w, kind in reversed(fields):
                lines += self._store_field(name, w, kind, "v")
                if w:
                    lines.append(f"    v >>= {w}")
            lines.append("    r.bit_pos = end")
        if isinstance(t, T.HeaderType):
            lines.append("    h._v = True")
        ns = self._ns()
        exec(compile("\n".join(lines), f"<extract {t.name}>", "exec"), ns)
        return ns["extract"]

    @staticmethod
    def _store_field(name: str, w: int, kind: str, src: str) -> list[str]:
        m = (1 << w) - 1
        if kind == "s":
            half = 1 << (w - 1)
            return [f"    h.{name} = ((({src} & {m}) + {half}) & {m}) - {half}"]
        if kind == "b":
            return [f"    h.{name} = bool({src} & 1)"]
        return [f"    h.{name} = {src} & {m}"]

    def _varbit_body(self, fields: list[tuple[str, int, str]], lines: list[str]) -> None:
        """Extraction with a varbit field: runs of fixed fields are read as one integer
        each, the varbit field takes ``varbits`` bits. The checks are BMv2's
        (``extract_VL``), in its order and all before any field is written: a size that
        is not a whole number of bytes is ``ParserInvalidArgument``, a header longer than
        what is left of the packet ``PacketTooShort``, a size past the varbit field's
        maximum ``HeaderTooShort``."""
        fixed, vmax = varbit_bounds(fields)
        lines += [
            "    if varbits % 8:",
            f"        raise _PErr({self.invalid_argument})",
            f"    if r.bit_pos + {fixed} + varbits > r.total_bits:",
            f"        raise _PErr({self.too_short})",
            f"    if varbits > {vmax} or varbits < 0:",
            f"        raise _PErr({self.header_too_short})",
        ]
        for is_varbit, run in extract_steps(fields):
            if is_varbit:
                lines += [
                    "    if r.bit_pos + varbits > r.total_bits:",
                    f"        raise _PErr({self.too_short})",
                    f"    h.{run[0][0]} = (varbits, r.peek(varbits))",
                    "    r.bit_pos += varbits",
                ]
                continue
            total = sum(fw for _, fw, _ in run)
            lines += [
                f"    if r.bit_pos + {total} > r.total_bits:",
                f"        raise _PErr({self.too_short})",
                f"    x = r.peek({total})",
                f"    r.bit_pos += {total}",
            ]
            for fname, fw, fkind in reversed(run):
                lines += self._store_field(fname, fw, fkind, "x")
                lines.append(f"    x >>= {fw}")

    def lookahead_header(self, t: T.StructLikeType) -> Callable[[PacketReader], Any]:
        cls = self.layouts.cls(t)
        ext = self.extractor(t)

        def look(r: PacketReader) -> Any:
            h = cls()
            pos = r.bit_pos
            try:
                ext(r, h)
            finally:
                r.bit_pos = pos
            return h
        return look

    # ------------------------------------------------------------ emit
    def emitter(self, t: Any) -> Callable[[BitWriter, Any], None]:
        t = T.strip_newtype(t)
        key = id(self.layouts.cls(t)) if isinstance(t, T.StructLikeType) else ("stk", str(t))
        fn = self._emit.get(key)
        if fn is None:
            fn = self._make_emitter(t)
            self._emit[key] = fn
        return fn

    def _make_emitter(self, t: Any) -> Callable[[BitWriter, Any], None]:
        if isinstance(t, T.HeaderType):
            return self._header_emitter(t)
        if isinstance(t, T.StackType):
            elem = self.emitter(t.element)

            def emit_stack(w: BitWriter, s: Stack) -> None:
                for h in s.items:
                    elem(w, h)
            return emit_stack
        if isinstance(t, T.StructType | T.HeaderUnionType):
            subs = [(attr(f.name), self.emitter(f.type)) for f in t.fields
                    if isinstance(T.strip_newtype(f.type),
                                  T.StructLikeType | T.StackType)]

            def emit_struct(w: BitWriter, v: Any) -> None:
                for name, sub in subs:
                    sub(w, getattr(v, name))
            return emit_struct
        raise ValueError(f"cannot emit a value of type {t}")

    def _header_emitter(self, t: T.HeaderType) -> Callable[[BitWriter, Any], None]:
        fields = leaves(t)
        lines = ["def emit(w, h):", "    if not h._v:", "        return"]
        # Runs of fixed-width fields are appended as one integer; a varbit field
        # appends its current (width, value).
        run: list[tuple[str, int, str]] = []

        def flush() -> None:
            if not run:
                return
            total = sum(wd for _, wd, _ in run)
            expr = "0"
            for name, wd, kind in run:
                src = f"int(h.{name})" if kind == "b" else f"h.{name}"
                expr = f"(({expr}) << {wd}) | ({src} & {(1 << wd) - 1})"
            lines.extend([f"    w.acc = (w.acc << {total}) | {expr}",
                          f"    w.nbits += {total}"])
            run.clear()

        for name, wd, kind in fields:
            if kind == "v":
                flush()
                lines.extend([f"    w.acc = (w.acc << h.{name}[0]) | h.{name}[1]",
                              f"    w.nbits += h.{name}[0]"])
            else:
                run.append((name, wd, kind))
        flush()
        ns = self._ns()
        exec(compile("\n".join(lines), f"<emit {t.name}>", "exec"), ns)
        return ns["emit"]
