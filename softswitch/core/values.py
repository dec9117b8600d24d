"""Runtime representation of P4 values, generated per type.

Scalars are plain Python values: ``bit<W>`` an int in ``[0, 2^W)``, ``int<W>`` an int in
``[-2^(W-1), 2^(W-1))``, ``bool`` a bool, enums and errors ints, varbit a
``(width, value)`` pair. Aggregates are instances of classes made once per P4 type with
``__slots__`` (attribute ``f_<field>`` per field, ``_v`` the header valid bit) and
generated ``copy``/``__eq__`` methods, because attribute access and straight-line
generated code are the cheapest operations CPython offers on the per-packet path.

BMv2 zero-initialises everything: fresh structs hold zeros, headers are invalid with
zero fields, and a header keeps its (stale) field values across ``setInvalid``.
"""

from __future__ import annotations

from typing import Any

from softswitch.frontend import types as T


def attr(name: str) -> str:
    """The Python attribute for P4 field ``name`` (prefixed so keywords cannot clash)."""
    return "f_" + name


class Stack:
    """A header stack ``H[N]``: ``items`` (the elements) and ``nxt`` (nextIndex)."""

    __slots__ = ("items", "nxt")

    def __init__(self, items: list[Any]) -> None:
        self.items = items
        self.nxt = 0

    def copy(self) -> Stack:
        s = Stack([copy_value(h) for h in self.items])
        s.nxt = self.nxt
        return s

    def assign(self, o: Stack) -> None:
        """In-place stack assignment (BMv2 assign_header_stack: nextIndex too)."""
        self.nxt = o.nxt
        items = self.items
        for i, h in enumerate(o.items):
            if hasattr(h, "assign"):
                items[i].assign(h)
            else:
                items[i] = h

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stack) and self.items == other.items

    __hash__ = None  # type: ignore[assignment]


class Layouts:
    """Builds and caches the runtime class of each aggregate type."""

    def __init__(self) -> None:
        self._classes: dict[Any, type] = {}

    # ------------------------------------------------------------- defaults
    def default_value(self, t: T.Type) -> Any:
        """A fresh zero value of type ``t`` (BMv2 zero-initialises all storage)."""
        t = T.strip_newtype(t)
        if isinstance(t, T.BitsType | T.IntType | T.EnumType | T.ErrorType):
            return 0
        if isinstance(t, T.BoolType):
            return False
        if isinstance(t, T.VarbitType):
            return (0, 0)
        if isinstance(t, T.StructLikeType):
            return self.cls(t)()
        if isinstance(t, T.StackType):
            return Stack([self.default_value(t.element) for _ in range(t.size)])
        if isinstance(t, T.TupleType | T.ListType):
            return [self.default_value(e) for e in t.elements]
        if isinstance(t, T.StringType):
            return ""
        return None

    def default_expr(self, t: T.Type, ns: dict[str, Any]) -> str:
        """Python source creating a fresh default value of ``t`` (names put into ``ns``)."""
        t = T.strip_newtype(t)
        if isinstance(t, T.BitsType | T.IntType | T.EnumType | T.ErrorType):
            return "0"
        if isinstance(t, T.BoolType):
            return "False"
        if isinstance(t, T.VarbitType):
            return "(0, 0)"
        if isinstance(t, T.StructLikeType):
            c = self.cls(t)
            ns[c.__name__] = c
            return f"{c.__name__}()"
        if isinstance(t, T.StackType):
            elem = T.strip_newtype(t.element)
            if isinstance(elem, T.StructLikeType):
                c = self.cls(elem)
                ns[c.__name__] = c
                return f"Stack([{c.__name__}() for _ in range({t.size})])"
            return f"Stack([{self.default_expr(elem, ns)} for _ in range({t.size})])"
        v = self.default_value(t)
        key = f"_dflt{id(t)}"
        ns[key] = v
        if isinstance(v, Stack | list):
            return f"_copy({key})"
        return key

    # ------------------------------------------------------------- classes
    def cls(self, t: T.StructLikeType) -> type:
        key = (type(t).__name__, t.name, id(t.decl), t.type_args)
        c = self._classes.get(key)
        if c is None:
            c = self._make_class(t, f"{type(t).__name__[:-4]}_{t.name}_{len(self._classes)}")
            self._classes[key] = c
        return c

    def _make_class(self, t: T.StructLikeType, cname: str) -> type:
        is_header = isinstance(t, T.HeaderType)
        fields = [(attr(f.name), f.type) for f in t.fields]
        slots = tuple(a for a, _ in fields) + (("_v",) if is_header else ())
        ns: dict[str, Any] = {"Stack": Stack, "_copy": copy_value}
        init = ["def __init__(self):"]
        if is_header:
            init.append("    self._v = False")
        init += [f"    self.{a} = {self.default_expr(ft, ns)}" for a, ft in fields]
        src = "\n".join(_with_body(init) + _copy_src(fields, is_header)
                        + _assign_src(fields, is_header) + _eq_src(fields, is_header))
        exec(compile(src, f"<layout {t.name}>", "exec"), ns)
        c = type(cname, (), {"__slots__": slots, "__init__": ns["__init__"],
                             "copy": ns["copy"], "assign": ns["assign"],
                             "__eq__": ns["__eq__"], "__hash__": None,
                             "p4type": t, "is_header": is_header,
                             "is_union": isinstance(t, T.HeaderUnionType)})
        ns["_C"] = c
        ns["_new"] = object.__new__
        return c


def _with_body(lines: list[str]) -> list[str]:
    """A generated function's lines, with ``pass`` when it has no statement."""
    return lines if len(lines) > 1 else lines + ["    pass"]


def _copy_src(fields: list[tuple[str, T.Type]], is_header: bool) -> list[str]:
    cp = ["def copy(self):", "    n = _new(_C)"]
    if is_header:
        cp.append("    n._v = self._v")
    for a, ft in fields:
        if _is_aggregate(ft):
            cp.append(f"    n.{a} = self.{a}.copy()" if not _is_list(ft)
                      else f"    n.{a} = _copy(self.{a})")
        else:
            cp.append(f"    n.{a} = self.{a}")
    cp.append("    return n")
    return cp


def _assign_src(fields: list[tuple[str, T.Type]], is_header: bool) -> list[str]:
    """In-place assignment with BMv2's assign_header semantics: an invalid source
    header only clears the destination's valid bit (its fields are kept)."""
    asg = ["def assign(self, o):"]
    if is_header:
        asg += ["    if not o._v:", "        self._v = False", "        return",
                "    self._v = True"]
    for a, ft in fields:
        if _is_aggregate(ft) and not _is_list(ft):
            asg.append(f"    self.{a}.assign(o.{a})")
        elif _is_list(ft):
            asg.append(f"    self.{a} = _copy(o.{a})")
        else:
            asg.append(f"    self.{a} = o.{a}")
    return _with_body(asg)


def _eq_src(fields: list[tuple[str, T.Type]], is_header: bool) -> list[str]:
    eq = ["def __eq__(self, o):", "    if type(o) is not _C: return NotImplemented"]
    if is_header:
        eq.append("    if self._v != o._v: return False")
        eq.append("    if not self._v: return True")
    cond = " and ".join(f"self.{a} == o.{a}" for a, _ in fields) or "True"
    eq.append(f"    return {cond}")
    return eq


def _is_aggregate(t: T.Type) -> bool:
    t = T.strip_newtype(t)
    return isinstance(t, T.StructLikeType | T.StackType | T.TupleType | T.ListType)


def _is_list(t: T.Type) -> bool:
    return isinstance(T.strip_newtype(t), T.TupleType | T.ListType)


def copy_value(v: Any) -> Any:
    """Value copy of any runtime value (aggregates deep, scalars as is)."""
    t = type(v)
    if t is int or t is bool:
        return v
    if t is list:
        return [copy_value(x) for x in v]
    c = getattr(v, "copy", None)
    return c() if c is not None else v


def is_aggregate(t: T.Type) -> bool:
    return _is_aggregate(t)
