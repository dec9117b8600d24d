"""Typing of calls: overloads, argument binding, type-argument inference, directions.

Every call ends up as a :class:`CallInfo` in ``Call.resolved``. Argument binding follows
the P4_16 rules: all arguments named or none; omitted parameters need a default value or
``@optional``; ``out``/``inout`` arguments must be l-values of exactly the parameter's
type, ``in`` arguments may be implicitly converted (untyped literals, list/struct
initializers); type variables are bound by unification, concrete arguments first.
"""

from __future__ import annotations

from softswitch.frontend import ast
from softswitch.frontend import types as T
from softswitch.frontend.calls import CallInfo
from softswitch.frontend.checkbase import (
    SIZE_METHODS,
    Cascade,
    Checker,
    base,
    declared,
    describe,
    fail,
)
from softswitch.frontend.consteval import compile_time_known
from softswitch.frontend.context import Ctx
from softswitch.frontend.scopes import is_type_decl
from softswitch.frontend.typeresolve import check_type_args
from softswitch.frontend.unify import Bindings, compatible, contains_var, subst

Function = ast.FunctionDecl | ast.ExternFunctionDecl


def param_infos(params: list[ast.Param]) -> tuple[T.ParamInfo, ...]:
    """ParamInfo of declared parameters (their type refs are already resolved)."""
    return tuple(T.ParamInfo(p.name, p.direction,
                             p.type_ref.resolved if p.type_ref.resolved is not None
                             else T.DontCareType(),
                             has_default=p.default is not None,
                             optional=ast.annotation(p, "optional") is not None, decl=p)
                 for p in params)


def check_call(ck: Checker, e: ast.Call, ctx: Ctx) -> T.Type:
    tgt = e.target
    if isinstance(tgt, ast.Member):
        return _method_call(ck, e, tgt, ctx)
    if isinstance(tgt, ast.TypeNameExpr):
        ref = tgt.type_ref
        if not isinstance(ref, ast.NamedTypeRef):
            raise fail(f"{describe(e)}: not a constructor", e)
        decl = declared(ctx, ref.name, ref.top_level, True, tgt)
        return construct(ck, e, decl, list(ref.type_args) + list(e.type_args), e.args, ctx)
    if isinstance(tgt, ast.PathExpr):
        return _path_call(ck, e, tgt, ctx)
    if isinstance(tgt, ast.Call):
        ck.expr(tgt, ctx)
        raise fail(f"{describe(tgt)}: Cannot invoke result of an action call"
                   if isinstance(tgt.resolved, CallInfo) and tgt.resolved.kind == "action"
                   else f"{describe(e)}: result of a call cannot be invoked", e)
    ck.expr(tgt, ctx)
    raise fail(f"{describe(e)}: is not a method, function, action or constructor", e)


def _path_call(ck: Checker, e: ast.Call, tgt: ast.PathExpr, ctx: Ctx) -> T.Type:
    scope = ctx.scope.top() if tgt.top_level else ctx.scope
    decls = scope.lookup_all(tgt.name)
    if not decls:
        raise fail(f"{describe(tgt)}: declaration not found", tgt)
    values = [d for d in decls if not is_type_decl(d)]
    if not values:
        decl = decls[0]
        tgt.decl = decl
        tgt.type = T.DontCareType()
        return construct(ck, e, decl, list(e.type_args), e.args, ctx)
    first = values[0]
    tgt.decl = first
    if isinstance(first, ast.ActionDecl):
        return _action_call(ck, e, first, ctx)
    if isinstance(first, (ast.FunctionDecl, ast.ExternFunctionDecl)):
        cands = [d for d in values if isinstance(d, (ast.FunctionDecl, ast.ExternFunctionDecl))]
        return _function_call(ck, e, tgt, cands, ctx)
    ck.expr(tgt, ctx)
    raise fail(f"{describe(e)}: {tgt.name} is not a function, action or method", e)


def _action_call(ck: Checker, e: ast.Call, decl: ast.ActionDecl, ctx: Ctx) -> T.Type:
    tgt = e.target
    if e.type_args:
        raise fail(f"{describe(tgt)}: Cannot supply type parameters for an action invocation", e)
    if ctx.block == "parser":
        raise fail(f"{describe(e)}: Action calls are not allowed within parsers", e)
    if ctx.block == "function":
        raise fail(f"{describe(e)}: actions cannot be invoked from functions", e)
    params = param_infos(decl.params)
    args = bind_and_check(ck, e, params, {}, set(), ctx)
    tgt.type = T.FunctionType("action", params, T.VoidType(), decl=decl)
    e.resolved = CallInfo("action", decl, params, tuple(args), result=T.VoidType())
    return T.VoidType()


def _function_call(ck: Checker, e: ast.Call, tgt: ast.PathExpr, cands: list[Function],
                   ctx: Ctx) -> T.Type:
    decl = choose_overload(cands, e.args, e)
    tgt.decl = decl
    params = param_infos(decl.params)
    tvars = [ck.types.typevar(p) for p in decl.type_params]
    m = explicit_type_args(ck, e, tvars, list(e.type_args), ctx)
    variables = {v for v in tvars if v not in m}
    args = bind_and_check(ck, e, params, m, variables, ctx, method=True)
    ret = subst(decl.return_type.resolved or T.VoidType(), m)
    kind = "function" if isinstance(decl, ast.FunctionDecl) else "extern_function"
    if kind == "extern_function":
        _no_struct_results(params, args, nested_only=True)
    if decl.name == "verify" and kind == "extern_function" and ctx.block != "parser":
        raise fail(f"{describe(e)}: may only be invoked in parsers", e)
    tgt.type = T.FunctionType(kind, subst_params(params, m), ret, decl=decl)
    e.resolved = CallInfo(kind, decl, subst_params(params, m), tuple(args),
                          {v.name: t for v, t in m.items()}, result=ret)
    if decl.name == "static_assert" and kind == "extern_function":
        _static_assert(e, args)
    return ret


def _no_struct_results(params: tuple[T.ParamInfo, ...], args: list[ast.Expr | None],
                       nested_only: bool) -> None:
    """Like p4c for BMv2: extern methods cannot write results into structs, and extern
    functions not into structs that nest headers or structs."""
    for p, a in zip(params, args, strict=True):
        t = base(a.type) if a is not None else None
        if a is None or p.direction not in ("out", "inout") or not isinstance(t, T.StructType):
            continue
        if nested_only and not any(isinstance(base(f.type), T.StructLikeType)
                                   for f in t.fields):
            continue
        what = "extern functions with 'out' nested struct argument" if nested_only else \
            "writing to a structure"
        raise fail(f"{describe(a)}: {what} is not supported on this target", a)


def _static_assert(e: ast.Call, args: list[ast.Expr | None]) -> None:
    """core.p4's ``static_assert(check, message)``: a compile-time assertion."""
    check = args[0]
    if check is None or not isinstance(check.const, bool):
        raise fail(f"{describe(e)}: static_assert needs a compile-time constant condition", e)
    if not check.const:
        msg = args[1].const if len(args) > 1 and args[1] is not None else "static assertion failed"
        raise fail(f"{describe(e)}: {msg}", e)
    e.const = True


def subst_params(params: tuple[T.ParamInfo, ...], m: Bindings) -> tuple[T.ParamInfo, ...]:
    from softswitch.frontend.unify import subst_params as sp
    return sp(params, m)


def choose_overload(cands: list[Function], args: list[ast.Argument],
                    where: ast.Node) -> Function:
    """Pick the declaration whose parameters can take these arguments (count and names)."""
    for d in cands:
        if _arity_fits(d.params, args):
            return d
    name = getattr(cands[0], "name", "?")
    raise fail(f"{name}: no overload of {name} takes {len(args)} argument(s)", where)


def _arity_fits(params: list[ast.Param], args: list[ast.Argument]) -> bool:
    if any(a.name is not None for a in args):
        names = {p.name for p in params}
        if not all(a.name in names for a in args):
            return False
        given = {a.name for a in args}
        return all(p.name in given or p.default is not None or ast.annotation(p, "optional")
                   for p in params)
    if len(args) > len(params):
        return False
    return all(p.default is not None or ast.annotation(p, "optional") for p in params[len(args):])


def explicit_type_args(ck: Checker, e: ast.Node, tvars: list[T.TypeVar],
                       refs: list[ast.TypeRef], ctx: Ctx) -> Bindings:
    if not refs:
        return {}
    if len(refs) != len(tvars):
        raise fail(f"{describe(e) if isinstance(e, ast.Expr) else ''}: expected {len(tvars)} "
                   f"type arguments, got {len(refs)}", e)
    m: Bindings = {}
    for v, r in zip(tvars, refs, strict=True):
        t = ck.resolve_type(r, ctx)
        if isinstance(t, T.VoidType):
            raise fail(f"void: illegal type argument for '{v.name}'", r)
        if not isinstance(t, T.DontCareType):
            m[v] = t
    return m


def bind_arguments(params: tuple[T.ParamInfo, ...], args: list[ast.Argument],
                   where: ast.Node) -> list[ast.Expr | None]:
    """Arguments in parameter order; None for an omitted optional/default parameter."""
    named = [a.name is not None for a in args]
    out: list[ast.Expr | None] = [None] * len(params)
    if any(named) and not all(named):
        raise fail(f"{args[0].name or describe(args[0].value)}: either all or none of the "
                   "arguments of a call must be named", where)
    if any(named):
        index = {p.name: i for i, p in enumerate(params)}
        for a in args:
            i = index.get(a.name or "")
            if i is None:
                raise fail(f"{a.name}: No parameter named {a.name}", a)
            if out[i] is not None:
                raise fail(f"{a.name}: argument specified twice", a)
            out[i] = a.value
    else:
        if len(args) > len(params):
            raise fail(f"{describe(where) if isinstance(where, ast.Expr) else ''}: "
                       f"{len(args)} arguments supplied, but only {len(params)} expected",
                       where)
        for i, a in enumerate(args):
            out[i] = a.value
    for p, v in zip(params, out, strict=True):
        if v is None and not (p.has_default or p.optional):
            raise fail(f"{describe(where) if isinstance(where, ast.Expr) else ''}: "
                       f"No argument supplied for {p.name}", where)
    return out


def bind_and_check(ck: Checker, e: ast.Node, params: tuple[T.ParamInfo, ...],
                   m: Bindings, variables: set[T.TypeVar], ctx: Ctx,
                   args: list[ast.Argument] | None = None,
                   ctor: bool = False, method: bool = False) -> list[ast.Expr | None]:
    """Bind, type and convert the arguments of a call; fills ``m`` by inference.

    ``ctor``: the call constructs an object, so arguments may be parser/control/extern
    instances but must be compile-time known. ``method``: a function or extern call,
    whose directionless parameters take compile-time known arguments only (an action's
    are ``in`` parameters when it is called directly).
    """
    arg_list = args if args is not None else getattr(e, "args", [])
    bound = bind_arguments(params, arg_list, e)
    for a in bound:
        if a is not None:
            ck.expr(a, ctx)
            if not ctor and isinstance(base(a.type), (T.BlockType, T.TableType)):
                raise fail(f"{describe(a)}: argument cannot have type {a.type}", a)
    if variables:
        ck.infer(tuple(T.ParamInfo(p.name, p.direction, subst(p.type, m)) for p in params),
                 bound, variables, m, e)
        _check_inferred(params, bound, variables, m)
    for p, a in zip(params, bound, strict=True):
        if a is not None:
            check_argument(ck, p, subst(p.type, m), a, ctx)
            if ctor:
                _ctor_argument(a)
            elif method and not p.direction and not compile_time_known(a) and \
                    not isinstance(base(p.type), (T.ExternType, T.BlockType)):
                raise fail(f"{describe(a)}: argument used for directionless parameter "
                           f"'{p.name}' must be a compile-time constant", a)
    result: list[ast.Expr | None] = []
    for p, a in zip(params, bound, strict=True):
        if a is None and p.has_default and p.decl is not None:
            result.append(p.decl.default)
        else:
            result.append(a)
    return result


def _check_inferred(params: tuple[T.ParamInfo, ...], bound: list[ast.Expr | None],
                    variables: set[T.TypeVar], m: Bindings) -> None:
    """A type variable bound only by untyped ints or ``_`` has no usable type."""
    for p, a in zip(params, bound, strict=True):
        if a is None or not isinstance(p.type, T.TypeVar) or p.type not in variables:
            continue
        got = m.get(p.type)
        if isinstance(got, T.StringType) and p.direction:
            raise fail(f"{p.name}: a parameter with type string cannot have a direction",
                       p.decl or a)
        untyped = _untyped_int(a) if _holds_int(got) else None
        if untyped is not None:
            raise fail(f"{describe(untyped)}: could not infer a width", untyped)
        if isinstance(got, T.DontCareType):
            raise fail(f"{describe(a)}: Could not infer a type for parameter {p.name} "
                       "(inferred type is don't care '_')", a)


def _holds_int(t: T.Type | None) -> bool:
    """``int`` itself or inside a tuple/list type: a type variable bound so has no width."""
    if isinstance(t, T.IntType):
        return True
    return isinstance(t, (T.TupleType, T.ListType)) and any(map(_holds_int, t.elements))


def _untyped_int(a: ast.Expr) -> ast.Expr | None:
    """The (first) part of ``a`` whose type is an untyped ``int``, as p4c names it."""
    if isinstance(a, ast.ListExpr):
        return next((x for x in map(_untyped_int, a.items) if x is not None), None)
    return a if isinstance(a.type, T.IntType) else None


def _ctor_argument(a: ast.Expr) -> None:
    """Constructor arguments are compile-time: constants, instances, constructor calls."""
    if a.const is not ast.NOT_CONST:
        return
    if isinstance(a, ast.Call):
        if isinstance(a.resolved, CallInfo) and a.resolved.kind == "constructor":
            return
    elif isinstance(a, ast.PathExpr) and (
            isinstance(a.decl, ast.InstanceDecl)
            or isinstance(a.decl, ast.Param) and not a.decl.direction):
        return
    elif isinstance(base(a.type), (T.ExternType, T.BlockType)) or isinstance(
            a, (ast.ListExpr, ast.StructExpr, ast.DontCareExpr)):
        return
    raise fail(f"{describe(a)}: constructor arguments must be compile-time constants", a)


def check_argument(ck: Checker, p: T.ParamInfo, pt: T.Type, a: ast.Expr, ctx: Ctx) -> None:
    if p.direction in ("out", "inout"):
        if isinstance(a, ast.DontCareExpr):
            if p.direction == "out":
                a.type = pt
                return
        if not ck.is_lvalue(a):
            raise fail(f"{describe(a)}: Read-only value used for {p.direction} parameter "
                       f"{p.name}", a)
        if isinstance(a.type, T.IntType) or not compatible(pt, a.type):
            raise fail(f"'{describe(a)}': argument of type {a.type} does not match "
                       f"{p.direction} parameter {p.name} of type {pt}", a)
        return
    if isinstance(a, ast.DontCareExpr):
        raise fail(f"{describe(a)}: don't care argument only allowed for out parameters", a)
    if not ck.coerce(a, pt, ctx, quiet=True):
        raise fail(f"'{describe(a)}': argument of type {a.type} does not match parameter "
                   f"{p.name} of type {pt}", a)


# ---------------------------------------------------------------------- methods
def _method_call(ck: Checker, e: ast.Call, tgt: ast.Member, ctx: Ctx) -> T.Type:
    obj = tgt.expr
    ot_raw = ck.expr(obj, ctx.with_(switch_expr=False))
    if e.type_args and not isinstance(base(ot_raw), (T.ExternType, T.DontCareType)):
        # only an extern's methods can be generic; the built-in ones (isValid, apply,
        # push_front, minSizeInBits, ...) take no type arguments
        raise fail(f"{describe(e)}: {tgt.name} takes no type arguments", e)
    if tgt.name in SIZE_METHODS and not e.args:
        return _size_method(e, tgt, ot_raw)
    if ck.names_type(obj) and tgt.name == "apply" and isinstance(
            base(ot_raw), T.BlockType) and base(ot_raw).kind != "package":
        return _block_apply(ck, e, base(ot_raw), ctx)
    if ck.names_type(obj):
        raise fail(f"Cannot extract field {tgt.name} from {describe(obj)} which has type "
                   f"Type({ot_raw})", tgt)
    ot = base(ot_raw)
    if isinstance(ot, T.DontCareType):
        # The receiver's declaration already failed (and was reported): do not cascade.
        raise Cascade(f"{describe(obj)}: object has no usable type", tgt.loc)
    if isinstance(ot, T.TableType) and tgt.name == "apply":
        return _table_apply(ck, e, ot, ctx)
    if isinstance(ot, T.BlockType) and tgt.name == "apply" and ot.kind != "package":
        return _block_apply(ck, e, ot, ctx)
    if isinstance(ot, T.ExternType):
        return _extern_method(ck, e, tgt, ot, ctx)
    if isinstance(ot, (T.HeaderType, T.HeaderUnionType)) and tgt.name in (
            "isValid", "setValid", "setInvalid"):
        if isinstance(ot, T.HeaderUnionType) and tgt.name != "isValid":
            raise fail(f"{describe(tgt)}: not defined on header unions", tgt)
        if tgt.name != "isValid" and not ck.is_lvalue(obj):
            raise fail(f"{describe(tgt)}: must be applied to a left-value", tgt)
        return _builtin(e, tgt, (), T.BoolType() if tgt.name == "isValid" else T.VoidType())
    if isinstance(ot, T.StackType) and tgt.name in ("push_front", "pop_front"):
        if ctx.block == "parser":
            raise fail(f"{describe(tgt)}: 'push_front' and 'pop_front' for stacks cannot be used "
                       "in a parser", tgt)
        if len(e.args) != 1:
            raise fail(f"{describe(e)}: expected 1 argument", e)
        a = e.args[0].value
        ck.expr(a, ctx)
        if not isinstance(a.const, int) or isinstance(a.const, bool) or a.const < 0:
            raise fail(f"{describe(a)}: argument must be a non-negative constant", a)
        if not ck.is_lvalue(obj):
            raise fail(f"{describe(obj)}: stack must be an l-value", obj)
        return _builtin(e, tgt, (T.ParamInfo("count", "in", T.IntType()),), T.VoidType())
    if isinstance(ot, T.StructLikeType):
        kind = {T.HeaderType: "header", T.HeaderUnionType: "header_union"}.get(type(ot),
                                                                               "struct")
        raise fail(f"Field {tgt.name} is not a member of structure {kind} {ot.name}", tgt)
    raise fail(f"Cannot extract field {tgt.name} from {describe(obj)} which has type "
               f"{ot_raw}", tgt)


def _builtin(e: ast.Call, tgt: ast.Member, params: tuple[T.ParamInfo, ...],
             ret: T.Type) -> T.Type:
    if e.args and not params:
        raise fail(f"{describe(e)}: {tgt.name} takes no arguments", e)
    tgt.type = T.FunctionType("method", params, ret)
    e.resolved = CallInfo("builtin", None, params, tuple(a.value for a in e.args),
                          receiver=tgt.expr, builtin=tgt.name, result=ret)
    return ret


def _size_method(e: ast.Call, tgt: ast.Member, t: T.Type) -> T.Type:
    which = tgt.name
    v = type_size(t, maximum=which.startswith("max"))
    if v is None:
        raise fail(f"{describe(e)}: {which} not defined on type {t}", e)
    if which.endswith("Bytes"):
        v = (v + 7) // 8
    _builtin(e, tgt, (), T.IntType())
    e.const = v
    return T.IntType()


def type_size(t: T.Type, maximum: bool) -> int | None:
    """Size in bits of a value of type ``t`` (varbit fields: 0, or their maximum)."""
    t = base(t)
    if isinstance(t, T.BitsType):
        return t.width
    if isinstance(t, T.BoolType):
        return 1
    if isinstance(t, T.VarbitType):
        return t.max_width if maximum else 0
    if isinstance(t, T.EnumType) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, T.ErrorType):
        return None
    if isinstance(t, T.StackType):
        s = type_size(t.element, maximum)
        return None if s is None else s * t.size
    if isinstance(t, T.HeaderUnionType):
        sizes = [type_size(f.type, maximum) for f in t.fields]
        if any(s is None for s in sizes):
            return None
        known = [s for s in sizes if s is not None]
        return (max if maximum else min)(known) if known else 0
    if isinstance(t, T.StructLikeType):
        total = 0
        for f in t.fields:
            s = type_size(f.type, maximum)
            if s is None:
                return None
            total += s
        return total
    if isinstance(t, T.TupleType):
        total = 0
        for x in t.elements:
            s = type_size(x, maximum)
            if s is None:
                return None
            total += s
        return total
    return None


def _table_apply(ck: Checker, e: ast.Call, t: T.TableType, ctx: Ctx) -> T.Type:
    if e.args:
        raise fail(f"{describe(e)}: table apply takes no arguments", e)
    _no_apply_here(e, ctx)
    ret = ck.table_result(t.decl)
    e.target.type = T.FunctionType("method", (), ret)
    e.resolved = CallInfo("table_apply", t.decl, (), (), receiver=e.target.expr, result=ret)
    return ret


def _no_apply_here(e: ast.Call, ctx: Ctx) -> None:
    if ctx.block == "action":
        raise fail(f"{describe(e)}: apply cannot be called from actions", e)
    if ctx.block == "function":
        raise fail(f"{describe(e)}: apply cannot be called from functions", e)
    if ctx.table is not None:
        raise fail(f"{describe(e)}: table invocation in action argument", e)


def _block_apply(ck: Checker, e: ast.Call, t: T.BlockType, ctx: Ctx) -> T.Type:
    _no_apply_here(e, ctx)
    other = {"parser": "control", "control": "parser"}.get(ctx.block)
    if t.kind == other:
        recv = e.target.expr if isinstance(e.target, ast.Member) else None
        param = getattr(recv, "decl", None)
        if isinstance(param, ast.Param) and not param.direction:
            # a block handed in by the constructor: p4c's inliner reports the instance
            # where the parameter declares it
            raise fail(f"{param.name}: instantiation of {other} in {ctx.block}", param)
        raise fail(f"{describe(e)}: {other}s cannot be applied in {ctx.block}s", e)
    args = bind_and_check(ck, e, t.params, {}, set(), ctx)
    e.target.type = T.FunctionType("method", t.params, T.VoidType())
    e.resolved = CallInfo(f"{t.kind}_apply", t.decl, t.params, tuple(args),
                          receiver=e.target.expr, result=T.VoidType())
    return T.VoidType()


def extern_bindings(ck: Checker, ot: T.ExternType) -> tuple[Bindings, set[T.TypeVar]]:
    """Bindings of an extern's own type variables from a (specialized) extern type."""
    decl: ast.ExternDecl = ot.decl
    tvars = [ck.types.typevar(p) for p in decl.type_params]
    m: Bindings = {}
    free: set[T.TypeVar] = set()
    for v, a in zip(tvars, ot.type_args, strict=False):
        if a is v or isinstance(a, T.DontCareType):
            free.add(v)
        else:
            m[v] = a
    free.update(tvars[len(ot.type_args):])
    return m, free


def _extern_method(ck: Checker, e: ast.Call, tgt: ast.Member, ot: T.ExternType,
                   ctx: Ctx) -> T.Type:
    decl: ast.ExternDecl = ot.decl
    cands = [md for md in decl.methods if md.name == tgt.name and md.return_type is not None]
    if not cands:
        raise fail(f"{describe(tgt)}: extern {decl.name} does not have method matching this "
                   "call", tgt)
    fits = [md for md in cands if _arity_fits(md.params, e.args)]
    if not fits:
        raise fail(f"{describe(tgt)}: extern {decl.name} does not have method matching this "
                   "call", tgt)
    md = fits[0]
    m, free = extern_bindings(ck, ot)
    mvars = [ck.types.typevar(p) for p in md.type_params]
    m.update(explicit_type_args(ck, e, mvars, list(e.type_args), ctx))
    variables = free | {v for v in mvars if v not in m}
    params = param_infos(md.params)
    args = bind_and_check(ck, e, params, m, variables, ctx, method=True)
    ret = subst((md.return_type.resolved if md.return_type else None) or T.VoidType(), m)
    if isinstance(ret, T.TypeVar) and ret in variables and ret not in m:
        raise fail(f"{describe(e)}: could not infer a type for variable {ret.name}", e)
    _no_struct_results(params, args, nested_only=False)
    if md.name == "lookahead" and isinstance(ret, T.VoidType):
        raise fail("void: illegal type argument for 'lookahead'", e)
    kind = "abstract_method" if md.abstract else "extern_method"
    tgt.type = T.FunctionType("method", subst_params(params, m), ret, decl=md)
    e.resolved = CallInfo(kind, md, subst_params(params, m), tuple(args),
                          {v.name: t for v, t in m.items()}, extern=ot, receiver=tgt.expr,
                          result=ret)
    e.type = ret
    _check_packet_method(e, decl.name, md, args)
    return ret


def _check_packet_method(e: ast.Call, extern: str, md: ast.MethodDecl,
                         args: list[ast.Expr | None]) -> None:
    """core.p4's ``extract``/``emit``/``lookahead`` need header-like types (as p4c checks)."""
    if extern == "packet_in" and md.name == "extract" and args and args[0] is not None:
        t = base(args[0].type)
        if not isinstance(t, (T.HeaderType, T.DontCareType, T.TypeVar)):
            raise fail(f"{describe(args[0])}: argument must be a header", args[0])
        varbits = [f.name for f in t.fields if isinstance(base(f.type), T.VarbitType)] \
            if isinstance(t, T.HeaderType) else []
        if len(varbits) > 1:
            second = next((f for f in getattr(t.decl, "fields", []) if f.name == varbits[1]),
                          args[0])
            raise fail(f"{varbits[0]} and {varbits[1]}: multiple varbit fields in a header",
                       second)
        if len(args) == 1 and varbits:
            raise fail(f"{describe(args[0])}: argument cannot contain varbit fields", args[0])
        if len(args) == 2 and isinstance(t, T.HeaderType) and not varbits:
            raise fail(f"{describe(args[0])}: argument should contain a varbit field", args[0])
    if extern == "packet_in" and md.name == "lookahead" and _has_varbit_or_union(e.type):
        raise fail(f"{e.type}: type argument must be a fixed-width type", e)
    if extern == "packet_out" and md.name == "emit" and args and args[0] is not None:
        if not _emittable(args[0].type):
            raise fail(f"{describe(e)}: argument must be a header, stack or union, or a struct "
                       "or tuple of such types", e)


def _has_varbit_or_union(t: T.Type | None) -> bool:
    t = base(t) if t is not None else None
    if isinstance(t, (T.HeaderUnionType, T.VarbitType)):
        return True
    if isinstance(t, T.StructLikeType):
        return any(_has_varbit_or_union(f.type) for f in t.fields)
    if isinstance(t, T.StackType):
        return _has_varbit_or_union(t.element)
    if isinstance(t, T.TupleType):
        return any(_has_varbit_or_union(x) for x in t.elements)
    return False


def _emittable(t: T.Type | None) -> bool:
    t = base(t) if t is not None else None
    if isinstance(t, (T.HeaderType, T.StackType, T.HeaderUnionType, T.DontCareType, T.TypeVar)):
        return True
    if isinstance(t, T.StructType):
        return all(_emittable(f.type) for f in t.fields)
    if isinstance(t, (T.TupleType, T.ListType)):
        return all(_emittable(x) for x in t.elements)
    return False


# ---------------------------------------------------------------------- constructors
def construct(ck: Checker, e: ast.Node, decl: ast.Node, type_refs: list[ast.TypeRef],
              args: list[ast.Argument], ctx: Ctx) -> T.Type:
    """Type a constructor invocation (``X(args)`` or an instance declaration)."""
    name = getattr(decl, "name", "?")
    if isinstance(decl, ast.TypedefDecl) and not decl.newtype and not type_refs:
        t = ck.types.generic_base(decl)
        if isinstance(t, T.ExternType):
            return _construct_extern(ck, e, t.decl, [], args, ctx, preset=t)
        if isinstance(t, T.BlockType) and t.decl is not None:
            return construct(ck, e, t.decl, [], args, ctx)
    if isinstance(decl, ast.ExternDecl):
        return _construct_extern(ck, e, decl, type_refs, args, ctx)
    if isinstance(decl, (ast.ParserDecl, ast.ControlDecl, ast.PackageTypeDecl)):
        bt = ck.types.generic_base(decl)
        assert isinstance(bt, T.BlockType)
        tvars = [ck.types.typevar(p) for p in decl.type_params]
        m = explicit_type_args(ck, e, tvars, type_refs, ctx)
        variables = {v for v in tvars if v not in m}
        ctor = bt.ctor_params if not isinstance(decl, ast.PackageTypeDecl) else bt.params
        bound = bind_and_check(ck, e, ctor, m, variables, ctx, args, ctor=True)
        optional_vars = {v for p in ctor if p.optional for v in tvars
                         if contains_var(p.type, {v})}
        for v in tvars:
            if v not in m:
                if v not in optional_vars:
                    raise fail(f"{name}: could not infer a type for variable {v.name}", e)
                m[v] = T.DontCareType()
        result = subst(bt, m)
        if tvars:
            assert isinstance(result, T.BlockType)
            result = T.BlockType(bt.kind, bt.name, result.params, result.ctor_params,
                                 decl, tuple(m[v] for v in tvars))
        _record_ctor(e, decl, ctor, bound, m, result)
        return result
    if isinstance(decl, (ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl)):
        raise fail(f"{name}: cannot allocate objects of type {_kind(decl)} {name}", e)
    if isinstance(decl, (ast.ParserTypeDecl, ast.ControlTypeDecl)):
        raise fail(f"{name}: cannot instantiate a {_kind(decl)} type; declare a {_kind(decl)}",
                   e)
    raise fail(f"{name}: is not a type that can be instantiated", e)


def _kind(decl: ast.Node) -> str:
    return {ast.StructDecl: "struct", ast.HeaderDecl: "header",
            ast.HeaderUnionDecl: "header_union", ast.ParserTypeDecl: "parser",
            ast.ControlTypeDecl: "control"}.get(type(decl), "type")


def _record_ctor(e: ast.Node, decl: ast.Node, params: tuple[T.ParamInfo, ...],
                 args: list[ast.Expr | None], m: Bindings, result: T.Type) -> None:
    info = CallInfo("constructor", decl, subst_params(params, m), tuple(args),
                    {v.name: t for v, t in m.items()}, result=result,
                    extern=result if isinstance(result, T.ExternType) else None)
    if isinstance(e, ast.Call):
        e.resolved = info
        e.target.type = result
    elif isinstance(e, ast.InstanceDecl):
        e.ctor = info


def _construct_extern(ck: Checker, e: ast.Node, decl: ast.ExternDecl,
                      type_refs: list[ast.TypeRef], args: list[ast.Argument],
                      ctx: Ctx, preset: T.ExternType | None = None) -> T.Type:
    tvars = [ck.types.typevar(p) for p in decl.type_params]
    if type_refs and len(type_refs) != len(tvars):
        raise fail(f"{decl.name}: Type {decl.name} has {len(tvars)} type parameter(s), but it "
                   f"is specialized with {len(type_refs)}", e)
    m = explicit_type_args(ck, e, tvars, type_refs, ctx)
    check_type_args(decl, [m[v] for v in tvars if v in m], type_refs, allow_blocks=True)
    if preset is not None:
        m, _ = extern_bindings(ck, preset)
    variables = {v for v in tvars if v not in m}
    ctors = [md for md in decl.methods if md.return_type is None]
    if not ctors:
        if args:
            raise fail(f"{decl.name}: extern has no constructor with arguments", e)
        params: tuple[T.ParamInfo, ...] = ()
        bound: list[ast.Expr | None] = []
    else:
        fits = [md for md in ctors if _arity_fits(md.params, args)]
        if not fits:
            raise fail(f"{decl.name}: no constructor of {decl.name} takes {len(args)} "
                       "argument(s)", e)
        params = param_infos(fits[0].params)
        bound = bind_and_check(ck, e, params, m, variables, ctx, args, ctor=True)
    for v in tvars:
        if v not in m:
            raise fail(f"{getattr(e, 'name', decl.name)}: could not infer a type for variable "
                       f"{v.name}", e)
    if isinstance(e, ast.Call) and any(md.abstract for md in decl.methods):
        raise fail(f"{decl.name}: extern type {decl.name} with abstract methods cannot be "
                   "instantiated using a constructor call; consider using a declaration", e)
    targs = tuple(m.get(v, v) for v in tvars)
    result = T.ExternType(decl.name, decl, targs)
    _record_ctor(e, decl, params, bound, m, result)
    return result
