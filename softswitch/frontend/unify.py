"""Type substitution and unification for generic P4 declarations.

Generic externs, extern functions, parsers, controls and packages (``hash<O,T,D,M>``,
``Register<T,I>``, ``V1Switch<H,M>``) get their type arguments either written out or
inferred by matching parameter types against argument types; these helpers do both.
A binding map goes from :class:`TypeVar` (one object per type parameter declaration) to
its type.
"""

from __future__ import annotations

from dataclasses import replace

from softswitch.frontend import types as T

Bindings = dict[T.TypeVar, T.Type]


def subst(t: T.Type, m: Bindings) -> T.Type:
    """``t`` with every bound type variable replaced (recursively)."""
    if not m:
        return t
    if isinstance(t, T.TypeVar):
        bound = m.get(t)
        return subst(bound, {k: v for k, v in m.items() if k is not t}) if bound else t
    if isinstance(t, T.StackType):
        return T.StackType(subst(t.element, m), t.size)
    if isinstance(t, T.TupleType):
        return T.TupleType(tuple(subst(e, m) for e in t.elements))
    if isinstance(t, T.ListType):
        return T.ListType(tuple(subst(e, m) for e in t.elements))
    if isinstance(t, T.StructLikeType):
        if not t.type_args and not _mentions_vars(t, m):
            return t
        fields = tuple(T.FieldInfo(f.name, subst(f.type, m), f.annotations) for f in t.fields)
        return type(t)(t.name, fields, t.decl, tuple(subst(a, m) for a in t.type_args))
    if isinstance(t, T.ExternType):
        return T.ExternType(t.name, t.decl, tuple(subst(a, m) for a in t.type_args))
    if isinstance(t, T.FunctionType):
        return replace(t, params=subst_params(t.params, m), return_type=subst(t.return_type, m))
    if isinstance(t, T.BlockType):
        return T.BlockType(t.kind, t.name, subst_params(t.params, m),
                           subst_params(t.ctor_params, m), t.decl,
                           tuple(subst(a, m) for a in t.type_args))
    if isinstance(t, T.ValueSetType):
        return T.ValueSetType(subst(t.element, m), t.size)
    return t


def _mentions_vars(t: T.StructLikeType, m: Bindings) -> bool:
    return any(isinstance(f.type, T.TypeVar) and f.type in m for f in t.fields)


def subst_params(params: tuple[T.ParamInfo, ...], m: Bindings) -> tuple[T.ParamInfo, ...]:
    return tuple(replace(p, type=subst(p.type, m)) for p in params)


def contains_var(t: T.Type, variables: set[T.TypeVar]) -> bool:
    """Whether ``t`` mentions one of ``variables`` (still needing inference)."""
    if isinstance(t, T.TypeVar):
        return t in variables
    if isinstance(t, T.StackType):
        return contains_var(t.element, variables)
    if isinstance(t, (T.TupleType, T.ListType)):
        return any(contains_var(e, variables) for e in t.elements)
    if isinstance(t, (T.StructLikeType, T.ExternType, T.BlockType)):
        return any(contains_var(a, variables) for a in t.type_args)
    return False


def unify(param: T.Type, arg: T.Type, m: Bindings, variables: set[T.TypeVar]) -> bool:
    """Match ``param`` (may mention ``variables``) against ``arg``, extending ``m``.

    Returns False on a definite mismatch. Untyped ``int`` arguments bind a variable only
    when nothing better is known (a later concrete binding replaces it), which is how
    p4c lets ``random(x, 0, 255)`` take its width from ``x``.
    """
    if isinstance(param, T.TypeVar) and param in variables:
        bound = m.get(param)
        if bound is None or isinstance(bound, (T.IntType, T.DontCareType)):
            if not isinstance(arg, T.DontCareType) or bound is None:
                m[param] = arg
            return True
        if isinstance(arg, (T.IntType, T.DontCareType)):
            return True
        if isinstance(bound, (T.ListType, T.StructExprType)):
            m[param] = arg
            return True
        return unify(bound, arg, m, set()) or compatible(bound, arg)
    if isinstance(arg, T.DontCareType):
        return True
    if isinstance(param, T.StackType) and isinstance(arg, T.StackType):
        return param.size == arg.size and unify(param.element, arg.element, m, variables)
    if isinstance(param, T.TupleType) and isinstance(arg, (T.TupleType, T.ListType)):
        return len(param.elements) == len(arg.elements) and all(
            unify(p, a, m, variables) for p, a in zip(param.elements, arg.elements, strict=True))
    if isinstance(param, T.StructLikeType) and isinstance(arg, T.StructLikeType):
        if param.decl is not arg.decl or param.name != arg.name:
            return False
        return all(unify(p, a, m, variables)
                   for p, a in zip(param.type_args, arg.type_args, strict=False))
    if isinstance(param, T.ExternType) and isinstance(arg, T.ExternType):
        if param.decl is not arg.decl:
            return False
        return all(unify(p, a, m, variables)
                   for p, a in zip(param.type_args, arg.type_args, strict=False))
    if isinstance(param, T.BlockType) and isinstance(arg, T.BlockType):
        return _unify_blocks(param, arg, m, variables)
    if contains_var(param, variables):
        return False
    return compatible(param, arg)


def _unify_blocks(param: T.BlockType, arg: T.BlockType, m: Bindings,
                  variables: set[T.TypeVar]) -> bool:
    """A parser/control instance matches a parser/control type by its apply parameters."""
    if param.kind != arg.kind or len(param.params) != len(arg.params):
        return False
    if param.decl is arg.decl:
        return all(unify(p, a, m, variables)
                   for p, a in zip(param.type_args, arg.type_args, strict=False))
    for p, a in zip(param.params, arg.params, strict=True):
        if p.direction != a.direction:
            return False
        if not unify(p.type, a.type, m, variables):
            return False
    return True


def compatible(a: T.Type, b: T.Type) -> bool:
    """Structural type equality used after inference (typedefs are already resolved)."""
    if isinstance(a, T.DontCareType) or isinstance(b, T.DontCareType):
        return True
    if isinstance(a, T.StackType) and isinstance(b, T.StackType):
        return a.size == b.size and compatible(a.element, b.element)
    if isinstance(a, T.TupleType) and isinstance(b, T.TupleType):
        return len(a.elements) == len(b.elements) and all(
            compatible(x, y) for x, y in zip(a.elements, b.elements, strict=True))
    if isinstance(a, T.StructLikeType) and isinstance(b, T.StructLikeType):
        return (type(a) is type(b) and a.decl is b.decl and a.name == b.name
                and len(a.type_args) == len(b.type_args)
                and all(compatible(x, y) for x, y in zip(a.type_args, b.type_args, strict=True)))
    if isinstance(a, T.ExternType) and isinstance(b, T.ExternType):
        return a.decl is b.decl and all(
            compatible(x, y) for x, y in zip(a.type_args, b.type_args, strict=False))
    if isinstance(a, T.BlockType) and isinstance(b, T.BlockType):
        return _unify_blocks(a, b, {}, set())
    return a == b
