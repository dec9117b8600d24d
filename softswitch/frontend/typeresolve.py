"""From type syntax to semantic types: ``TypeRef.resolved`` and declared types.

Turns what the program writes (``bit<8>``, ``H``, ``Register<bit<32>, _>``, ``H[4]``)
into :mod:`softswitch.frontend.types` values, checking on the way what p4c checks about
declarations of types: widths, stack sizes, field types allowed in headers/structs/
unions, enum underlying types, ``type`` (newtype) bases, self-reference and the number
of type arguments of generic types.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.scopes import Scope
from softswitch.frontend.unify import subst

MAX_WIDTH = 2048


class TypeResolver:
    """Resolves type references; ``const_int`` evaluates widths and sizes (from the checker)."""

    def __init__(self, const_int: Callable[[ast.Expr, Scope], int]) -> None:
        self.const_int = const_int
        self.typevars: dict[ast.TypeParam, T.TypeVar] = {}
        self.generic_cache: dict[ast.Node, T.Type] = {}
        self.in_progress: set[ast.Node] = set()
        self.decl_scope: dict[ast.Node, Scope] = {}
        self.block_params: Callable[[ast.Node], T.BlockType] | None = None
        self.error_declared = False  # set once an ``error {…}`` declaration was seen

    # ------------------------------------------------------------------ TypeRefs
    def resolve(self, ref: ast.TypeRef, scope: Scope) -> T.Type:
        t = self._resolve(ref, scope)
        ref.resolved = t
        return t

    def _resolve(self, ref: ast.TypeRef, scope: Scope) -> T.Type:
        simple: dict[type, Callable[[], T.Type]] = {
            ast.IntTypeRef: T.IntType, ast.BoolTypeRef: T.BoolType,
            ast.StringTypeRef: T.StringType, ast.VoidTypeRef: T.VoidType,
            ast.ErrorTypeRef: T.ErrorType, ast.MatchKindTypeRef: T.MatchKindType,
            ast.DontCareTypeRef: T.DontCareType,
        }
        if isinstance(ref, ast.ErrorTypeRef) and not self.error_declared:
            raise P4Error("error: declaration not found", ref.loc)
        if type(ref) in simple:
            return simple[type(ref)]()
        if isinstance(ref, ast.BitTypeRef):
            return self._bits(ref, scope)
        if isinstance(ref, ast.VarbitTypeRef):
            w = self.const_int(ref.width, scope)
            if w <= 0 or w > MAX_WIDTH:
                raise P4Error(f"varbit<{w}>: invalid type size", ref.loc)
            return T.VarbitType(w)
        if isinstance(ref, ast.StackTypeRef):
            return self._stack(ref, scope)
        if isinstance(ref, ast.TupleTypeRef):
            elems = tuple(self.resolve(e, scope) for e in ref.elements)
            for e, er in zip(elems, ref.elements, strict=True):
                if isinstance(e, (T.IntType, T.StringType, T.VoidType, T.DontCareType,
                                  T.BlockType, T.ExternType)):
                    raise P4Error(f"{e}: not supported as a tuple field", er.loc)
            return T.TupleType(elems)
        if isinstance(ref, ast.ListTypeRef):
            return T.ListType((self.resolve(ref.element, scope),))
        if isinstance(ref, ast.NamedTypeRef):
            return self._named(ref, scope)
        raise P4Error("unsupported type", ref.loc)

    def _bits(self, ref: ast.BitTypeRef, scope: Scope) -> T.Type:
        if ref.width is None:
            return T.BitsType(1, ref.signed)
        w = self.const_int(ref.width, scope)
        name = "int" if ref.signed else "bit"
        if w < 0:
            raise P4Error(f"{name}<{w}>: invalid type size", ref.loc)
        if w == 0 and ref.signed:
            raise P4Error("Width of signed type cannot be zero", ref.loc)
        if w > MAX_WIDTH:
            raise P4Error(f"{w}: this implementation does not support bitstrings this large",
                          ref.loc)
        return T.BitsType(w, ref.signed)

    def _stack(self, ref: ast.StackTypeRef, scope: Scope) -> T.Type:
        elem = self.resolve(ref.element, scope)
        try:
            size = self.const_int(ref.size, scope)
        except P4Error as e:
            raise P4Error(f"{elem}[?]: Size of header stack type should be a constant",
                          ref.loc) from e
        if size < 0:
            raise P4Error(f"Illegal array size: {size}", ref.loc)
        if isinstance(elem, (T.IntType, T.StringType, T.VoidType, T.BlockType, T.ExternType)):
            raise P4Error(f"{elem}: header stack element must be a header or header_union",
                          ref.loc)
        return T.StackType(elem, size)

    def _named(self, ref: ast.NamedTypeRef, scope: Scope) -> T.Type:
        lookup_scope = scope.top() if ref.top_level else scope
        decl = lookup_scope.lookup(ref.name, want_type=True)
        if decl is None:
            raise P4Error(f"{ref.name}: declaration not found", ref.loc)
        args = [self.resolve(a, scope) for a in ref.type_args]
        check_type_args(decl, args, ref.type_args, allow_blocks=False)
        if not args and isinstance(decl, (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl)) \
                and decl.type_params:
            raise P4Error(f"{ref.name}: generic type needs type arguments", ref.loc)
        return self.decl_type(decl, args, ref)

    # ------------------------------------------------------------------ declarations
    def type_params_of(self, decl: ast.Node) -> list[ast.TypeParam]:
        return list(getattr(decl, "type_params", []) or [])

    def typevar(self, p: ast.TypeParam) -> T.TypeVar:
        tv = self.typevars.get(p)
        if tv is None:
            tv = T.TypeVar(p.name, p)
            self.typevars[p] = tv
        return tv

    def decl_type(self, decl: ast.Node, args: list[T.Type], where: ast.Node) -> T.Type:
        """The type named by ``decl`` specialized with ``args`` (empty: as declared)."""
        if isinstance(decl, ast.TypeParam):
            if args:
                raise P4Error(f"{decl.name}: type variable cannot have type arguments",
                              where.loc)
            return self.typevar(decl)
        params = self.type_params_of(decl)
        if args and not params:
            raise P4Error(f"{_name(decl)}<...>: Type {_name(decl)} is not generic and thus "
                          "it cannot be specialized using type arguments", where.loc)
        if args and len(args) != len(params):
            raise P4Error(f"{_name(decl)}: Type {_name(decl)} has {len(params)} type "
                          f"parameter(s), but it is specialized with {len(args)}", where.loc)
        base = self.generic_base(decl)
        if not args:
            return base
        m = {self.typevar(p): a for p, a in zip(params, args, strict=True)
             if not isinstance(a, T.DontCareType)}
        specialized = subst(base, m)
        if isinstance(specialized, T.StructLikeType):
            kind = {T.StructType: "struct", T.HeaderType: "header",
                    T.HeaderUnionType: "header_union"}[type(specialized)]
            for fd, fi in zip(getattr(decl, "fields", ()), specialized.fields, strict=True):
                check_field_type(kind, specialized.name, fd, fi.type)
        if isinstance(specialized, (T.StructLikeType, T.ExternType, T.BlockType)):
            specialized = _with_type_args(specialized, tuple(args))
        return specialized

    def generic_base(self, decl: ast.Node) -> T.Type:
        """The declared type with its own type variables unsubstituted (cached)."""
        cached = self.generic_cache.get(decl)
        if cached is not None:
            return cached
        if decl in self.in_progress:
            raise P4Error(f"Self-referencing types not supported: '{_name(decl)}' within "
                          f"'{_name(decl)}'", decl.loc)
        self.in_progress.add(decl)
        try:
            t = self._build(decl)
        finally:
            self.in_progress.discard(decl)
        self.generic_cache[decl] = t
        return t

    def _build(self, decl: ast.Node) -> T.Type:
        scope = self.decl_scope.get(decl)
        if scope is None:
            raise P4Error(f"{_name(decl)}: type used before its declaration", decl.loc)
        inner = self._type_param_scope(decl, scope)
        if isinstance(decl, (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl)):
            return self._struct_like(decl, inner)
        if isinstance(decl, ast.EnumDecl):
            return self._enum(decl, inner)
        if isinstance(decl, ast.TypedefDecl):
            return self._typedef(decl, inner)
        if isinstance(decl, ast.ExternDecl):
            tv = tuple(self.typevar(p) for p in decl.type_params)
            return T.ExternType(decl.name, decl, tv)
        if isinstance(decl, (ast.ParserDecl, ast.ControlDecl, ast.ParserTypeDecl,
                             ast.ControlTypeDecl, ast.PackageTypeDecl)):
            assert self.block_params is not None
            return self.block_params(decl)
        raise P4Error(f"{_name(decl)}: not a type", decl.loc)

    def _type_param_scope(self, decl: ast.Node, scope: Scope) -> Scope:
        params = self.type_params_of(decl)
        if not params:
            return scope
        inner = Scope(scope, "typeparams")
        for p in params:
            if inner.declare(p.name, p) is not None:
                raise P4Error(f"{p.name}: Duplicates declaration {p.name}", p.loc)
        value_params = [x.name for x in list(getattr(decl, "params", []))
                        + list(getattr(decl, "ctor_params", []))]
        for p in params:
            if p.name in value_params:
                raise P4Error(f"{p.name} duplicates {p.name}.", p.loc)
        return inner

    def _struct_like(self, decl: Any, scope: Scope) -> T.Type:
        cls = {ast.StructDecl: T.StructType, ast.HeaderDecl: T.HeaderType,
               ast.HeaderUnionDecl: T.HeaderUnionType}[type(decl)]
        kind = {T.StructType: "struct", T.HeaderType: "header",
                T.HeaderUnionType: "header_union"}[cls]
        seen: set[str] = set()
        fields = []
        for f in decl.fields:
            if f.name in seen:
                raise P4Error(f"{f.name}: Duplicates declaration {f.name}", f.loc)
            seen.add(f.name)
            ft = self.resolve(f.type_ref, scope)
            check_field_type(kind, decl.name, f, ft)
            fields.append(T.FieldInfo(f.name, ft, tuple(f.annotations)))
        tv = tuple(self.typevar(p) for p in decl.type_params)
        return cls(decl.name, tuple(fields), decl, tv)

    def _enum(self, decl: ast.EnumDecl, scope: Scope) -> T.Type:
        members: dict[str, int] = {}
        underlying = None
        if decl.underlying is not None:
            u = self.resolve(decl.underlying, scope)
            if not isinstance(u, T.BitsType):
                raise P4Error(f"{u}: Illegal type for enum; only bit<> and int<> are allowed",
                              decl.underlying.loc)
            underlying = u
        for i, m in enumerate(decl.members):
            if m.name in members:
                raise P4Error(f"{m.name}: Duplicates declaration {m.name}", m.loc)
            if underlying is not None:
                if m.value is None:
                    raise P4Error(f"{m.name}: serializable enum member needs a value", m.loc)
                raw = self.const_int(m.value, scope)
                got = m.value.type
                if got is not None and not isinstance(got, T.IntType) and got != underlying:
                    # a typed value is not converted implicitly: only an untyped integer is
                    raise P4Error(f"{m.name}: value of type {got} does not match the enum's "
                                  f"type {underlying}", m.loc)
                members[m.name] = consteval.wrap(raw, underlying)
                if raw != members[m.name]:
                    raise P4Error(f"{m.name}: Serialized enum constant value {raw} is out of "
                                  f"bounds of the underlying type {underlying}", m.loc)
                m.value.type = underlying
                m.value.const = members[m.name]
            else:
                members[m.name] = i
        return T.EnumType(decl.name, members, underlying, decl)

    def _typedef(self, decl: ast.TypedefDecl, scope: Scope) -> T.Type:
        under = self.resolve(decl.type_ref, scope)
        if not decl.newtype:
            return under
        base = T.strip_newtype(under)
        if not isinstance(base, (T.BitsType, T.BoolType)) and not (
                isinstance(base, T.EnumType) and isinstance(under, T.NewType)):
            raise P4Error(f"{decl.name}: `type' can only be applied to base types", decl.loc)
        return T.NewType(decl.name, under, decl)


def _with_type_args(t: T.Type, args: tuple[T.Type, ...]) -> T.Type:
    if isinstance(t, T.StructLikeType):
        return type(t)(t.name, t.fields, t.decl, args)
    if isinstance(t, T.ExternType):
        return T.ExternType(t.name, t.decl, args)
    if isinstance(t, T.BlockType):
        return T.BlockType(t.kind, t.name, t.params, t.ctor_params, t.decl, args)
    return t


_HEADER_OK = (T.BitsType, T.VarbitType, T.BoolType)


def check_field_type(kind: str, owner: str, f: ast.FieldDecl, ft: T.Type) -> None:
    """p4c's rules on what a header / header_union / struct field may be."""
    base = T.strip_newtype(ft)
    bad = False
    if kind == "header":
        ok = isinstance(base, _HEADER_OK) or (
            isinstance(base, T.EnumType) and base.underlying is not None) or isinstance(
            base, (T.TypeVar, T.StructType))
        if isinstance(base, T.StructType):
            ok = _fixed_width_struct(base)
        if isinstance(base, T.StackType):
            el = T.strip_newtype(base.element)
            ok = isinstance(el, (T.BitsType, T.BoolType)) or (
                isinstance(el, T.StructType) and _fixed_width_struct(el))
        bad = not ok
    elif kind == "header_union":
        bad = not isinstance(base, (T.HeaderType, T.TypeVar))
    else:
        bad = isinstance(base, (T.IntType, T.StringType, T.VoidType, T.BlockType,
                                T.ExternType, T.MatchKindType, T.DontCareType, T.ListType))
    if bad:
        raise P4Error(f"Field '{f.name}' of '{kind} {owner}' cannot have type '{ft}'", f.loc)


def check_type_args(decl: ast.Node, args: list[T.Type], refs: list[ast.TypeRef],
                    allow_blocks: bool) -> None:
    """Type arguments may not contain the type they specialize; parser/control types
    are only allowed where an instance's type is inferred from them."""
    name = getattr(decl, "name", "?")
    for a, ar in zip(args, refs, strict=False):
        if _mentions_decl(a, decl):
            raise P4Error(f"{name}: contains self '{name}' as type argument", ar.loc)
        if not allow_blocks and isinstance(a, (T.BlockType, T.TableType)):
            kind = a.kind if isinstance(a, T.BlockType) else "table"
            raise P4Error(f"{a}: Cannot use {kind} {a} as a type parameter", ar.loc)


def _mentions_decl(t: T.Type, decl: ast.Node, seen: set[int] | None = None) -> bool:
    """Whether a type argument contains the generic type being specialized (also through
    the parameters of a parser/control type, as p4c checks)."""
    seen = set() if seen is None else seen
    if id(t) in seen:
        return False
    seen.add(id(t))
    if getattr(t, "decl", None) is decl:
        return True
    if isinstance(t, T.StackType):
        return _mentions_decl(t.element, decl, seen)
    if isinstance(t, (T.TupleType, T.ListType)):
        return any(_mentions_decl(x, decl, seen) for x in t.elements)
    if isinstance(t, T.BlockType) and any(_mentions_decl(p.type, decl, seen)
                                          for p in t.params + t.ctor_params):
        return True
    if isinstance(t, (T.StructLikeType, T.ExternType, T.BlockType)):
        return any(_mentions_decl(x, decl, seen) for x in t.type_args)
    return False


def _fixed_width_struct(t: T.StructType) -> bool:
    """A struct of fixed-width scalars (allowed inside headers since P4_16 1.2.2)."""
    for f in t.fields:
        b = T.strip_newtype(f.type)
        if isinstance(b, T.StackType):
            b = T.strip_newtype(b.element)
        if isinstance(b, T.StructType):
            if not _fixed_width_struct(b):
                return False
        elif not (isinstance(b, (T.BitsType, T.BoolType)) or (
                isinstance(b, T.EnumType) and b.underlying is not None)):
            return False
    return True


def _name(decl: ast.Node) -> str:
    return getattr(decl, "name", type(decl).__name__)
