"""Declarations and statements: scopes, parameters, bodies, parsers, controls, tables.

:class:`DeclChecker` walks the program in source order (P4 requires declaration before
use), declares each name in its scope and checks bodies with :class:`ExprChecker`'s
expression typing. Each statement or declaration that fails records its diagnostic and
the walk goes on, so one compilation reports several independent errors like p4c.
"""

from __future__ import annotations

from collections.abc import Callable

from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.annotations import check_annotations
from softswitch.frontend.callcheck import construct, param_infos
from softswitch.frontend.checkbase import base, declared, describe, fail
from softswitch.frontend.context import Ctx
from softswitch.frontend.scopes import Scope
from softswitch.frontend.tablecheck import TableChecker
from softswitch.frontend.unify import compatible

BlockDecl = (ast.ParserDecl | ast.ParserTypeDecl | ast.ControlDecl | ast.ControlTypeDecl
             | ast.PackageTypeDecl)


class DeclChecker(TableChecker):
    """Checks declarations and statements (see module docstring)."""

    def run(self, program: ast.Program) -> None:
        self.top = Scope(None, "top")
        self.types.block_params = self.block_type
        ctx = Ctx(self.top)
        for d in program.decls:
            self.guard(lambda d=d: self.top_decl(d, ctx))

    def declare(self, scope: Scope, decl: ast.Decl) -> None:
        self.types.decl_scope[decl] = scope
        old = scope.declare(decl.name, decl)
        if old is not None:
            raise fail(f"{decl.name}: Duplicates declaration {decl.name}", decl)

    # ------------------------------------------------------------------ top level
    def top_decl(self, d: ast.Node, ctx: Ctx) -> None:
        if isinstance(d, ast.ErrorDecl):
            self.types.error_declared = True
            for m in d.members:
                if m.name in self.error_members:
                    raise fail(f"{m.name}: Duplicates declaration {m.name}", m)
                self.error_members[m.name] = len(self.error_members)
            return
        if isinstance(d, ast.MatchKindDecl):
            for m in d.members:
                self.guard(lambda m=m: self.declare(ctx.scope, m))
                self.match_kinds.add(m.name)
            return
        self._top_rules(d)
        self.decl(d, ctx)

    def _top_rules(self, d: ast.Node) -> None:
        """Names the architecture relies on: ``main`` and ``NoAction``."""
        name = getattr(d, "name", None)
        if name == "main" and not isinstance(d, ast.InstanceDecl):
            raise fail("main: must be a package declaration", d)
        if name == "NoAction" and isinstance(d, ast.ActionDecl) and d.params:
            raise fail("NoAction: Expected an action with no parameters; did you include "
                       "core.p4?", d)

    def decl(self, d: ast.Node, ctx: Ctx) -> None:
        method = getattr(self, "_d_" + type(d).__name__, None)
        if method is None:
            raise fail(f"{type(d).__name__}: declaration not allowed here", d)
        annos = getattr(d, "annotations", None)
        if annos:
            check_annotations(annos, lambda e: self.expr(e, ctx))
        method(d, ctx)

    def _type_decl(self, d: ast.Decl, ctx: Ctx) -> None:
        self.declare(ctx.scope, d)
        self.types.generic_base(d)
        for f in getattr(d, "fields", []):
            self._match_annotation(f)
        if isinstance(d, ast.HeaderDecl):
            self._length_annotations(d)

    def _length_annotations(self, d: ast.HeaderDecl) -> None:
        """``@length(expr)`` on a varbit field may only use earlier fixed-width fields."""
        earlier: dict[str, T.Type] = {}
        for f in d.fields:
            a = ast.annotation(f, "length")
            for e in (a.exprs or []) if a is not None else []:
                for n in ast.walk(e):
                    if not isinstance(n, ast.PathExpr):
                        continue
                    if n.name not in earlier:
                        raise fail(f"{n.name}: declaration not found", n)
            earlier[f.name] = f.type_ref.resolved or T.DontCareType()

    def _match_annotation(self, f: ast.FieldDecl) -> None:
        """``@match(kind)`` on a (value-set) struct field must name a match kind."""
        a = ast.annotation(f, "match")
        if a is None:
            return
        exprs = a.exprs or []
        if len(exprs) != 1 or not isinstance(exprs[0], ast.PathExpr) \
                or exprs[0].name not in self.match_kinds:
            what = describe(exprs[0]) if len(exprs) == 1 else "@match"
            raise fail(f"{what}: value must be a match_kind", exprs[0] if exprs else a)

    _d_StructDecl = _type_decl
    _d_HeaderDecl = _type_decl
    _d_HeaderUnionDecl = _type_decl
    _d_EnumDecl = _type_decl
    _d_TypedefDecl = _type_decl
    _d_ParserTypeDecl = _type_decl
    _d_ControlTypeDecl = _type_decl
    _d_PackageTypeDecl = _type_decl

    def _d_ConstDecl(self, d: ast.ConstDecl, ctx: Ctx) -> None:
        t = self.resolve_type(d.type_ref, ctx)
        if isinstance(base(t), (T.ExternType, T.BlockType)):
            raise fail(f"{d.name}: Cannot declare constants of extern types", d)
        self.expr(d.value, ctx)
        if not _typed_into_int(d.value, t):
            self.coerce(d.value, t, ctx)
        if d.value.const is ast.NOT_CONST:
            raise fail(f"{d.name}: expression must evaluate to a constant", d.value)
        self.declare(ctx.scope, d)

    def _d_VarDecl(self, d: ast.VarDecl, ctx: Ctx) -> None:
        self._no_param_shadowing(d, ctx)
        self.declare(ctx.scope, d)  # first: a bad type must not make every use 'not found'
        t = self.resolve_type(d.type_ref, ctx)
        b = base(t)
        if isinstance(b, T.IntType):
            raise fail(f"{d.name}: Cannot declare variables with type int", d)
        if isinstance(b, (T.BlockType, T.ExternType)):
            raise fail(f"{d.name}: cannot declare variables of type '{t}' (consider using an "
                       "instantiation)", d)
        if isinstance(b, (T.StringType, T.VoidType, T.MatchKindType, T.DontCareType)):
            raise fail(f"{d.name}: cannot declare variables of type '{t}'", d)
        if d.init is not None:
            self.expr(d.init, ctx)
            if not self.coerce(d.init, t, ctx, quiet=True):
                raise fail(f"'{d.name}': initializer has wrong type {d.init.type}", d.init)

    def _d_ValueSetDecl(self, d: ast.ValueSetDecl, ctx: Ctx) -> None:
        t = self.resolve_type(d.element, ctx)
        if not isinstance(T.strip_newtype(t), (T.BitsType, T.EnumType, T.BoolType, T.StructType,
                                               T.TupleType)):
            raise fail(f"{t}: Illegal type for value_set element type", d.element)
        self.expr(d.size, ctx)
        if d.size.const is ast.NOT_CONST or not isinstance(d.size.const, int) or \
                isinstance(d.size.const, bool):
            raise fail(f"{describe(d.size)}: value_set size must be constant", d.size)
        self.declare(ctx.scope, d)

    def _no_param_shadowing(self, d: ast.Decl, ctx: Ctx) -> None:
        """p4c rejects a local declaration that hides a parameter of its block."""
        if ctx.block not in ("control", "parser"):
            return
        prev = ctx.scope.lookup(d.name, want_type=False)
        if isinstance(prev, ast.Param) and ctx.owner is not None and \
                prev in list(getattr(ctx.owner, "params", [])):
            raise fail(f"declaration of '{d.name}' shadows a parameter '{d.name}'", d)

    # ------------------------------------------------------------------ params
    def params(self, params: list[ast.Param], ctx: Ctx, scope: Scope, kind: str) -> None:
        """Resolve and check a parameter list, declaring the names in ``scope``."""
        for p in params:
            t = self.resolve_type(p.type_ref, ctx.with_(scope=scope))
            self.declare(scope, p)
            self.check_param(p, t, kind, ctx.with_(scope=scope))

    def check_param(self, p: ast.Param, t: T.Type, kind: str, ctx: Ctx) -> None:
        b = base(t)
        if isinstance(b, T.IntType) and p.direction:
            raise fail(f"{p.name}: parameters with type int must be directionless", p)
        if isinstance(b, T.StringType) and p.direction:
            raise fail(f"{p.name}: a parameter with type string cannot have a direction", p)
        self._block_typed_param(p, b, t, kind)
        if isinstance(b, T.ExternType) and p.direction:
            raise fail(f"{p.name}: a parameter with type {t} cannot have a direction", p)
        if kind == "action":
            if isinstance(b, T.IntType):
                raise fail(f"{p.name}: actions cannot have parameters with type int", p)
            if isinstance(b, T.ExternType):
                raise fail(f"{t}: Action parameters cannot have extern types", p)
            if not p.direction and not (isinstance(b, (T.BitsType, T.BoolType)) or (
                    isinstance(b, T.EnumType) and b.underlying is not None)):
                raise fail(f"Action parameter {p.name} has a type which is not bit<>, int<>, "
                           "bool, type or serializable enum", p)
        if kind in ("ctor", "block_ctor", "package") and p.direction:
            raise fail(f"{p.name}: constructor parameters cannot have a direction", p)
        if ast.annotation(p, "optional") is not None and kind not in ("extern", "package", "ctor"):
            raise fail(f"{p.name}: optional parameter not allowed here", p)
        if p.default is not None:
            if p.direction in ("out", "inout"):
                raise fail(f"{p.name}: {p.direction} parameters cannot have default values", p)
            self.expr(p.default, ctx)
            self.coerce(p.default, t, ctx)
            if p.default.const is ast.NOT_CONST:
                raise fail(f"{describe(p.default)}: expression must be a compile-time constant",
                           p.default)

    @staticmethod
    def _block_typed_param(p: ast.Param, b: T.Type, t: T.Type, kind: str) -> None:
        """Parser, control and package types as parameter types (P4_16 spec, "Parser and
        control blocks types", "Package types"), as p4c's type checker has them: a
        declared parser or control is never a parameter's type; a parser or control
        *type* is the type of constructor parameters, and of directionless parameters
        of functions and extern methods, but not of a parser's or control's apply
        parameters or of an action's; a package type only in packages, constructors,
        functions and extern methods."""
        if not isinstance(b, T.BlockType):
            return
        if isinstance(b.decl, (ast.ParserDecl, ast.ControlDecl)):
            raise fail(f"{p.name}: parameter cannot have type {b.kind} {t}", p)
        modules_allowed = kind in ("ctor", "block_ctor", "package") or (
            kind in ("function", "extern") and not p.direction)
        if b.kind == "package":
            if kind in ("parser", "control", "action"):
                raise fail(f"{p.name}: parameter cannot be a package", p)
        elif not modules_allowed:
            raise fail(f"{p.name}: parameter cannot have type {b.kind} {t}", p)

    def block_type(self, d: BlockDecl) -> T.BlockType:
        """BlockType of a parser/control/package (type) declaration; resolves its params."""
        kind = {ast.ParserDecl: "parser", ast.ParserTypeDecl: "parser",
                ast.ControlDecl: "control", ast.ControlTypeDecl: "control",
                ast.PackageTypeDecl: "package"}[type(d)]
        scope = self.types._type_param_scope(d, self.types.decl_scope[d])
        ctx = Ctx(scope)
        tmp = Scope(scope, "params")
        self.params(d.params, ctx, tmp, kind)
        ctor: tuple[T.ParamInfo, ...] = ()
        if isinstance(d, (ast.ParserDecl, ast.ControlDecl)):
            self.params(d.ctor_params, ctx, Scope(scope, "ctor"), "block_ctor")
            ctor = param_infos(d.ctor_params)
        tv = tuple(self.types.typevar(p) for p in d.type_params)
        return T.BlockType(kind, d.name, param_infos(d.params), ctor, d, tv)

    # ------------------------------------------------------------------ externs
    def _d_ExternDecl(self, d: ast.ExternDecl, ctx: Ctx) -> None:
        self.declare(ctx.scope, d)
        ext = self.types.generic_base(d)
        scope = self.types._type_param_scope(d, ctx.scope)
        seen: set[tuple[str, tuple[str, ...]]] = set()
        for md in d.methods:
            sig = (md.name, tuple(p.name for p in md.params))
            if sig in seen:
                self.sink.error(f"{md.name}: Duplicates declaration {md.name}", md.loc)
            seen.add(sig)
            self.guard(lambda md=md: self._method_decl(d, md, ext, Ctx(scope)))

    def _method_decl(self, ext_decl: ast.ExternDecl, md: ast.MethodDecl, ext: T.Type,
                     ctx: Ctx) -> None:
        inner = self.types._type_param_scope(md, ctx.scope)
        if md.name == ext_decl.name and md.return_type is not None:
            raise fail(f"{md.name}: invalid constructor; cannot have a return type.", md)
        if md.return_type is None and md.name != ext_decl.name:
            raise fail(f"{md.name}: invalid type; method has no return type.", md)
        if md.return_type is not None:
            rt = self.resolve_type(md.return_type, ctx.with_(scope=inner))
            if isinstance(rt, (T.IntType, T.StringType)):
                raise fail(f"{rt}: illegal return type for method", md.return_type)
        elif md.type_params:
            raise fail(f"{md.name}: Constructors cannot have type parameters", md)
        self.params(md.params, ctx.with_(scope=inner), Scope(inner, "params"),
                    "extern" if md.return_type is not None else "ctor")

    def _d_ExternFunctionDecl(self, d: ast.ExternFunctionDecl, ctx: Ctx) -> None:
        self.declare(ctx.scope, d)
        inner = self.types._type_param_scope(d, ctx.scope)
        self.resolve_type(d.return_type, ctx.with_(scope=inner))
        self.params(d.params, ctx.with_(scope=inner), Scope(inner, "params"), "extern")

    # ------------------------------------------------------------------ functions/actions
    def _d_FunctionDecl(self, d: ast.FunctionDecl, ctx: Ctx) -> None:
        # A function's own name is not visible in its body (p4c: no recursion).
        try:
            self.function_body(d, ctx)
        finally:
            self.declare(ctx.scope, d)

    def function_body(self, d: ast.FunctionDecl, ctx: Ctx,
                      this_type: T.Type | None = None) -> None:
        inner = self.types._type_param_scope(d, ctx.scope)
        rt = self.resolve_type(d.return_type, ctx.with_(scope=inner))
        fctx = ctx.with_(scope=Scope(inner, "function"), block="function", return_type=rt,
                         func=d, this_type=this_type or ctx.this_type)
        self.params(d.params, fctx, fctx.scope, "function")
        self.block(d.body, fctx, new_scope=False)
        if not isinstance(rt, T.VoidType) and not always_returns(d.body):
            raise fail(f"Function '{d.name}' does not return a value on all paths", d)

    def _d_ActionDecl(self, d: ast.ActionDecl, ctx: Ctx) -> None:
        try:
            self._action_body(d, ctx)
        finally:
            self.declare(ctx.scope, d)

    def _action_body(self, d: ast.ActionDecl, ctx: Ctx) -> None:
        actx = ctx.with_(scope=Scope(ctx.scope, "action"), block="action", func=d,
                         return_type=T.VoidType())
        seen_directionless = False
        for p in d.params:
            if not p.direction:
                seen_directionless = True
            elif seen_directionless:
                raise fail(f"{p.name}: directional action parameters must come before "
                           "directionless ones", p)
        self.params(d.params, actx, actx.scope, "action")
        self.block(d.body, actx, new_scope=False)

    # ------------------------------------------------------------------ instances
    def _d_InstanceDecl(self, d: ast.InstanceDecl, ctx: Ctx) -> None:
        if ctx.block in ("action", "function"):
            raise fail(f"{d.name}: invalid declaration. Instantiations cannot be in a "
                       "function or method.", d)
        ref = d.type_ref
        if not isinstance(ref, ast.NamedTypeRef):
            raise fail(f"{d.name}: cannot instantiate this type", d)
        tdecl = declared(ctx, ref.name, ref.top_level, True, ref)
        if ctx.block == "control" and isinstance(tdecl, ast.ParserDecl):
            raise fail(f"{d.name}: instantiation of parser in control", d)
        if ctx.block == "parser" and isinstance(tdecl, ast.ControlDecl):
            raise fail(f"{d.name}: instantiation of control in parser", d)
        if ctx.block == "top" and isinstance(tdecl, (ast.ParserDecl, ast.ControlDecl)):
            raise fail(f"{d.name}: cannot instantiate at top-level", d)
        self.declare(ctx.scope, d)
        t = construct(self, d, tdecl, list(ref.type_args), d.args, ctx)
        ref.resolved = t
        d.instance_type = t
        if d.name == "main" and ctx.block == "top" and not (
                isinstance(t, T.BlockType) and t.kind == "package"):
            raise fail("main: must be a package declaration", d)
        if isinstance(tdecl, ast.ExternDecl):
            self._abstract_methods(d, tdecl, t, ctx)
        elif d.initializer:
            raise fail("BlockStatement: initializers only allowed for extern instances", d)

    def _abstract_methods(self, d: ast.InstanceDecl, tdecl: ast.ExternDecl, t: T.Type,
                          ctx: Ctx) -> None:
        from softswitch.frontend.callcheck import extern_bindings
        from softswitch.frontend.unify import subst
        abstract = {md.name: md for md in tdecl.methods if md.abstract}
        impls = d.initializer or []
        if impls and not abstract:
            raise fail("BlockStatement: instance initializers for extern without abstract "
                       "methods", d)
        m, _ = extern_bindings(self, t) if isinstance(t, T.ExternType) else ({}, set())
        done: set[str] = set()
        for f in impls:
            md = abstract.get(f.name)
            if md is None or not isinstance(f, ast.FunctionDecl):
                raise fail(f"{f.name}: no matching abstract method in {tdecl.name}", f)
            if f.type_params:
                raise fail(f"{f.name}: abstract method implementations cannot be generic", f)
            self.guard(lambda f=f: self.function_body(f, ctx.with_(block="function"),
                                                      this_type=t))
            want = [(p.direction, subst(p.type, m)) for p in param_infos(md.params)]
            got = [(p.direction, p.type_ref.resolved) for p in f.params]
            rt = subst(md.return_type.resolved, m) if md.return_type else None
            if len(want) != len(got) or (rt is not None and not _same(f.return_type.resolved, rt)) \
                    or any(wd != gd or not _same(gt, wt)
                           for (wd, wt), (gd, gt) in zip(want, got, strict=True)):
                raise fail(f"{d.name}: implementation of {f.name} does not match the abstract "
                           f"method in {tdecl.name}", f)
            done.add(f.name)
        missing = [n for n, md in abstract.items()
                   if n not in done and ast.annotation(md, "optional") is None]
        if missing:
            raise fail(f"{d.name}: {missing[0]} abstract method not implemented", d)

    def _open_block(self, d: ast.ParserDecl | ast.ControlDecl, ctx: Ctx, block: str) -> Ctx:
        """Declare a parser or control, its parameters and locals; the context of its body."""
        self.declare(ctx.scope, d)
        bt = self.types.generic_base(d)
        inner = self.types._type_param_scope(d, ctx.scope)
        bctx = ctx.with_(scope=Scope(inner, block), block=block, owner=d, return_type=None)
        self._declare_block_params(d, bt, bctx)
        for loc in d.locals:
            self.guard(lambda loc=loc: self.decl(loc, bctx))
        return bctx

    # ------------------------------------------------------------------ parsers
    def _d_ParserDecl(self, d: ast.ParserDecl, ctx: Ctx) -> None:
        pctx = self._open_block(d, ctx, "parser")
        states = Scope(pctx.scope, "states")
        for name in ("accept", "reject"):
            builtin = ast.ParserState(name, [], None, loc=d.loc)
            states.declare(name, builtin)
        for s in d.states:
            if s.name in ("accept", "reject"):
                self.sink.error(f"Invalid parser state: {s.name} should not be implemented, "
                                "it is built-in", s.loc)
                continue
            self.guard(lambda s=s: self.declare(states, s))
        if not any(s.name == "start" for s in d.states):
            self.sink.error(f"Parser {d.name} has no 'start' state", d.loc)
        sctx = pctx.with_(scope=states)
        for s in d.states:
            self.guard(lambda s=s: self.parser_state(s, sctx))

    def _declare_block_params(self, d: ast.ParserDecl | ast.ControlDecl, bt: T.Type,
                              ctx: Ctx) -> None:
        for p in list(d.ctor_params) + list(d.params):
            self.guard(lambda p=p: self.declare(ctx.scope, p))

    def parser_state(self, s: ast.ParserState, ctx: Ctx) -> None:
        sctx = ctx.child("state")
        for st in s.stmts:
            self.guard(lambda st=st: self.stmt(st, sctx))
        tr = s.transition
        if tr is None:
            return
        if isinstance(tr, ast.PathExpr):
            self.state_ref(tr, sctx)
        elif isinstance(tr, ast.SelectExpr):
            self.select(tr, sctx)
        else:
            raise fail(f"{describe(tr)}: invalid transition", tr)

    def state_ref(self, e: ast.PathExpr, ctx: Ctx) -> None:
        decl = ctx.scope.lookup(e.name, want_type=False)
        if decl is None:
            raise fail(f"{e.name}: declaration not found", e)
        if not isinstance(decl, ast.ParserState):
            raise fail(f"{e.name}: SelectCase must be state", e)
        e.decl = decl
        e.type = T.StateType()

    def select(self, sel: ast.SelectExpr, ctx: Ctx) -> None:
        key_types = []
        for k in sel.keys:
            kt = self.expr(k, ctx)
            if not isinstance(base(kt), (T.BitsType, T.EnumType, T.BoolType)):
                raise fail(f"Expression '{describe(k)}' with a component of type '{kt}' "
                           "cannot be used in 'select'", k)
            key_types.append(kt)
        sel.type = T.StateType()
        for case in sel.cases:
            self.guard(lambda case=case: self.select_case(case, key_types, ctx))

    def select_case(self, case: ast.SelectCase, key_types: list[T.Type], ctx: Ctx) -> None:
        ks = case.keyset
        items = [ks]
        if isinstance(ks, ast.ListExpr) and (len(key_types) != 1 or len(ks.items) != 1
                                             or not isinstance(base(key_types[0]),
                                                               T.TupleType)):
            items = list(ks.items)
        if items and isinstance(items[-1], ast.DotsExpr) and len(items) <= len(key_types):
            items = items[:-1] + [items[-1]] * (len(key_types) - len(items) + 1)
        if len(items) == 1 and isinstance(items[0], (ast.DefaultExpr, ast.DontCareExpr,
                                                     ast.DotsExpr)):
            self.expr(items[0], ctx)
        elif len(items) == 1 and len(key_types) > 1 and isinstance(
                self.expr(items[0], ctx), T.ValueSetType):
            self._value_set_label(items[0], key_types)
        elif len(items) != len(key_types):
            raise fail(f"{describe(ks)}: Size of keyset does not match the select keys "
                       f"({len(items)} vs {len(key_types)})", ks)
        else:
            for item, kt in zip(items, key_types, strict=True):
                self.keyset_item(item, kt, ctx)
        if isinstance(ks, ast.ListExpr):
            ks.type = T.ListType(tuple(i.type or T.DontCareType() for i in ks.items))
        target = ast.PathExpr(case.state, loc=case.loc)
        self.state_ref(target, ctx)
        case.state_decl = target.decl

    def keyset_item(self, item: ast.Expr, kt: T.Type, ctx: Ctx) -> None:
        """One keyset component: value, ``v &&& m``, ``lo .. hi``, ``_``/default, value set."""
        if isinstance(item, (ast.DefaultExpr, ast.DontCareExpr, ast.DotsExpr)):
            item.type = kt
            return
        if isinstance(item, ast.Binary) and item.op in ("&&&", ".."):
            self.mask_or_range(item, kt, ctx, _need_const)
            return
        t = self.expr(item, ctx)
        if isinstance(t, T.ValueSetType):
            self._value_set_label(item, [kt])
            return
        if not self.coerce(item, kt, ctx, quiet=True, keyset=True):
            raise fail(f"'{describe(item)}' with type '{t}' cannot be compared to key of type "
                       f"'{kt}'", item)
        _need_const(item)

    @staticmethod
    def _value_set_label(item: ast.Expr, key_types: list[T.Type]) -> None:
        """A value set as a select label matches the keys: its element type is the key's
        type, or a struct (or tuple) whose fields, flattened, are the keys' types in order."""
        et = item.type.element if isinstance(item.type, T.ValueSetType) else None
        if et is None or isinstance(et, T.DontCareType):
            return
        leaves = _leaves(et)
        keys = [leaf for k in key_types for leaf in _leaves(k)]
        ok = len(leaves) == len(keys) and all(
            compatible(x, y) for x, y in zip(leaves, keys, strict=True))
        if not ok:
            want = str(key_types[0]) if len(key_types) == 1 else \
                f"tuple<{', '.join(map(str, key_types))}>"
            raise fail(f"'match' case label '{describe(item)}' has type '{et}' which does not "
                       f"match the expected type '{want}'", item)

    # ------------------------------------------------------------------ controls
    def _d_ControlDecl(self, d: ast.ControlDecl, ctx: Ctx) -> None:
        cctx = self._open_block(d, ctx, "control")
        self.block(d.apply, cctx.with_(return_type=T.VoidType()))

    def _d_TableDecl(self, d: ast.TableDecl, ctx: Ctx) -> None:
        self.declare(ctx.scope, d)
        self.table(d, ctx)

    # ------------------------------------------------------------------ statements
    def block(self, b: ast.BlockStmt, ctx: Ctx, new_scope: bool = True) -> None:
        bctx = ctx.child("block") if new_scope else ctx
        for st in b.stmts:
            self.guard(lambda st=st: self.stmt(st, bctx))

    def stmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        if isinstance(s, ast.Decl):
            if isinstance(s, ast.InstanceDecl):
                where = {"parser": "a parser state", "control": "a control 'apply' block"}.get(
                    ctx.block, "a function or action")
                raise fail(f"{s.name}: instances cannot be in {where}", s)
            if isinstance(s, (ast.ConstDecl, ast.VarDecl)):
                self.decl(s, ctx)
                return
            raise fail(f"{s.name}: declaration not allowed in a statement block", s)
        method = getattr(self, "_s_" + type(s).__name__, None)
        if method is None:
            raise fail(f"{type(s).__name__}: statement not allowed here", s)
        method(s, ctx)

    def _s_BlockStmt(self, s: ast.BlockStmt, ctx: Ctx) -> None:
        self.block(s, ctx)

    def _s_EmptyStmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        return

    def _s_AssignStmt(self, s: ast.AssignStmt, ctx: Ctx) -> None:
        t = self.expr(s.target, ctx)
        self.check_lvalue(s.target)
        self.expr(s.value, ctx)
        if isinstance(base(t), T.StackType) and not isinstance(s.value, ast.ListExpr) and \
                not isinstance(base(s.value.type), T.StackType):
            raise fail(f"'{describe(s.target)} = {describe(s.value)}': cannot assign", s)
        if not self.coerce(s.value, t, ctx, quiet=True):
            raise fail(f"'{describe(s.target)} = {describe(s.value)}': cannot assign "
                       f"{s.value.type} to {t}", s)

    def _s_CallStmt(self, s: ast.CallStmt, ctx: Ctx) -> None:
        self.expr(s.call, ctx)

    def _s_IfStmt(self, s: ast.IfStmt, ctx: Ctx) -> None:
        t = self.expr(s.cond, ctx)
        if not isinstance(base(t), T.BoolType):
            raise fail(f"Condition of IfStatement does not evaluate to a bool but {t}", s.cond)
        known = consteval.evaluate(s.cond)
        if isinstance(known, bool):
            self._fold_if(s, known, ctx)
            return
        self.guard(lambda: self.sub_stmt(s.then, ctx))
        if s.otherwise is not None:
            self.guard(lambda: self.sub_stmt(s.otherwise, ctx))

    def _fold_if(self, s: ast.IfStmt, known: bool, ctx: Ctx) -> None:
        """An ``if`` on a compile-time known condition: like p4c, which folds it before
        type checking, only the taken branch is type-checked and kept; the dead one only
        has to name declarations that exist (p4c resolves names first), then goes."""
        live, dead = (s.then, s.otherwise) if known else (s.otherwise, s.then)
        if live is not None:
            self.guard(lambda: self.sub_stmt(live, ctx))
        if dead is not None:
            saved = self.sink.diagnostics
            divisions = len(self.runtime_divisions)
            self.sink.diagnostics = []
            try:
                self.guard(lambda: self.sub_stmt(dead, ctx))
                unresolved = [d for d in self.sink.errors if "not found" in d.message]
            finally:
                self.sink.diagnostics = saved
                del self.runtime_divisions[divisions:]
            self.sink.diagnostics.extend(unresolved)
        empty = ast.BlockStmt([], loc=dead.loc) if dead is not None else None
        if known:
            s.otherwise = None
        elif empty is not None:
            s.then = empty

    def sub_stmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        """A statement nested in if/for: its declarations get their own scope."""
        self.stmt(s, ctx if isinstance(s, ast.BlockStmt) else ctx.child("block"))

    def _s_ExitStmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        if ctx.block == "parser":
            raise fail("exit: exit statements are not allowed in parsers", s)
        if ctx.block == "function":
            raise fail("exit: exit statements are not allowed in functions", s)

    def _s_ReturnStmt(self, s: ast.ReturnStmt, ctx: Ctx) -> None:
        if ctx.block == "parser" or ctx.return_type is None:
            raise fail("return: return statements are not allowed here", s)
        rt = ctx.return_type
        if s.value is None:
            if not isinstance(rt, T.VoidType):
                raise fail(f"return : return with no expression in a function returning {rt}",
                           s)
            return
        self.expr(s.value, ctx)
        if isinstance(rt, T.VoidType):
            raise fail(f"'return {describe(s.value)}': return with a value in a void block", s)
        if not self.coerce(s.value, rt, ctx, quiet=True):
            raise fail(f"'return {describe(s.value)}': returned type {s.value.type} does not "
                       f"match {rt}", s)

    def _s_BreakStmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        if not ctx.in_loop:
            raise fail("break: break statement outside of a loop", s)

    def _s_ContinueStmt(self, s: ast.Stmt, ctx: Ctx) -> None:
        if not ctx.in_loop:
            raise fail("continue: continue statement outside of a loop", s)

    def _s_ForStmt(self, s: ast.ForStmt, ctx: Ctx) -> None:
        fctx = ctx.child("for")
        for st in s.init:
            self.stmt(st, fctx)
        if s.cond is not None:
            t = self.expr(s.cond, fctx)
            if not isinstance(base(t), T.BoolType):
                raise fail(f"Condition of ForStatement does not evaluate to a bool but {t}",
                           s.cond)
        for st in s.update:
            self.stmt(st, fctx)
        self.sub_stmt(s.body, fctx.with_(in_loop=True))

    def _s_ForInStmt(self, s: ast.ForInStmt, ctx: Ctx) -> None:
        fctx = ctx.child("for")
        vt = self.resolve_type(s.var.type_ref, fctx)
        self.declare(fctx.scope, s.var)
        coll = s.collection
        if isinstance(coll, ast.Binary) and coll.op == "..":
            for side in (coll.left, coll.right):
                self.expr(side, ctx)
                self.coerce(side, vt, ctx)
            coll.type = vt
        else:
            ct = base(self.expr(coll, ctx))
            elem = ct.element if isinstance(ct, T.StackType) else (
                ct.elements[0] if isinstance(ct, T.ListType) and ct.elements else None)
            if elem is None or not self.coerce(ast.DontCareExpr(), elem, ctx, quiet=True):
                raise fail("ForInStatement: cannot iterate over a value of type "
                           f"{coll.type}", coll)
        self.sub_stmt(s.body, fctx.with_(in_loop=True))

    def _s_SwitchStmt(self, s: ast.SwitchStmt, ctx: Ctx) -> None:
        if ctx.block == "action":
            raise fail("SwitchStatement: switch statements not supported in actions on this "
                       "target", s)
        t = self.expr(s.expr, ctx.with_(switch_expr=True))
        b = base(t)
        if isinstance(b, T.IntType):
            label = next((c.label for c in s.cases if not isinstance(c.label, ast.DefaultExpr)),
                         None)
            if label is not None:   # an untyped int has no width to match labels against
                raise fail(f"'{describe(s.expr)}' with type 'int' cannot be compared to "
                           f"'{describe(label)}'", s.expr)
        if isinstance(b, T.ActionEnumType):
            self.action_switch(s, b, ctx)
        elif isinstance(b, (T.BitsType, T.EnumType, T.IntType)):
            self.value_switch(s, t, ctx)
        else:
            raise fail(f"{describe(s.expr)}: 'switch' type can't be {t}", s.expr)
        for c in s.cases:
            if c.body is not None:
                self.guard(lambda c=c: self.block(c.body, ctx))
        if "exact" not in self.match_kinds:
            raise fail("Could not find declaration for 'match_kind.exact', which is needed to "
                       "implement switch statements; did you include core.p4?", s)

    def _switch_labels(self, s: ast.SwitchStmt, check: Callable[[ast.Expr], object]) -> None:
        seen: set[object] = set()
        default_seen = False
        for c in s.cases:
            if isinstance(c.label, ast.DefaultExpr):
                c.label.type = s.expr.type
                if default_seen:
                    raise fail("switch has multiple 'default' labels", c.label)
                default_seen = True
                continue
            if default_seen:
                raise fail(f"switch label {describe(c.label)} follows 'default' label, which is "
                           "not allowed.", c.label)
            key = check(c.label)
            if key in seen:
                raise fail(f"{describe(c.label)}: duplicate case label {describe(c.label)}",
                           c.label)
            seen.add(key)

    def action_switch(self, s: ast.SwitchStmt, t: T.ActionEnumType, ctx: Ctx) -> None:
        actions = self.table_actions.get(t.table, [])

        def check(label: ast.Expr) -> object:
            if not isinstance(label, ast.PathExpr):
                raise fail(f"{describe(label)}: 'switch' label must be an action name or "
                           "'default'", label)
            decl = ctx.scope.lookup(label.name, want_type=False)
            if not isinstance(decl, ast.ActionDecl):
                raise fail(f"{label.name}: 'switch' label must be an action name or "
                           "'default'", label)
            if decl not in actions and not self._implicit_default(t.table, decl, ctx):
                raise fail(f"{label.name}: not an action of table {t.table.name}", label)
            label.decl = decl
            label.type = t
            return decl

        self._switch_labels(s, check)

    @staticmethod
    def _implicit_default(table: ast.Node, decl: ast.ActionDecl, ctx: Ctx) -> bool:
        """A table without ``default_action`` runs ``NoAction`` on a miss (p4c adds it to
        the table's actions as its default), so ``NoAction`` is one of its labels."""
        prop = getattr(table, "prop", None)
        return (decl.name == "NoAction" and prop is not None
                and prop("default_action") is None
                and ctx.scope.lookup("NoAction", want_type=False) is decl)

    def value_switch(self, s: ast.SwitchStmt, t: T.Type, ctx: Ctx) -> None:
        def check(label: ast.Expr) -> object:
            self.expr(label, ctx)
            if not self.coerce(label, t, ctx, quiet=True):
                raise fail(f"{describe(label)}: switch label has type {label.type}, expected "
                           f"{t}", label)
            if label.const is ast.NOT_CONST:
                raise fail(f"{describe(label)}: switch label must be a compile-time constant",
                           label)
            return label.const

        self._switch_labels(s, check)


def _typed_into_int(value: ast.Expr, t: T.Type) -> bool:
    """An ``int`` constant may be initialized with a compile-time known bit<W>/int<W>
    value (p4c takes its number, ``const int K = 8s127`` is 127)."""
    return isinstance(base(t), T.IntType) and isinstance(base(value.type), T.BitsType) and \
        consteval.evaluate(value) is not ast.NOT_CONST


def _need_const(e: ast.Expr) -> None:
    if e.const is ast.NOT_CONST:
        what = "no function calls allowed in this context" if isinstance(e, ast.Call) else \
            "expression must evaluate to a constant"
        raise fail(f"{describe(e)}: {what}", e)


def _same(got: T.Type, want: T.Type) -> bool:
    """Type equality for implementations of abstract methods (unbound variables match)."""
    return isinstance(want, T.TypeVar) or compatible(got, want)


def always_returns(s: ast.Stmt | None) -> bool:
    """Whether every path through ``s`` ends in ``return`` or ``exit``."""
    if s is None:
        return False
    if isinstance(s, (ast.ReturnStmt, ast.ExitStmt)):
        return True
    if isinstance(s, ast.BlockStmt):
        return any(always_returns(x) for x in s.stmts)
    if isinstance(s, ast.IfStmt):
        if isinstance(s.cond.const, bool):     # folded: only the live branch counts
            return always_returns(s.then if s.cond.const else s.otherwise)
        return always_returns(s.then) and always_returns(s.otherwise)
    if isinstance(s, ast.SwitchStmt):
        has_default = any(isinstance(c.label, ast.DefaultExpr) for c in s.cases)
        return has_default and all(c.body is None or always_returns(c.body) for c in s.cases)
    return False


def _bits_of(t: T.Type) -> T.Type:
    """A serializable enum stands for its underlying bit<W> where a value set labels a
    select case (p4c accepts value_set<bit<16>> against an enum bit<16> key, both ways)."""
    b = base(t)
    if isinstance(b, T.EnumType) and b.underlying is not None:
        return b.underlying
    return b


def _leaves(t: T.Type) -> list[T.Type]:
    """The scalar types a value set element carries, in order: p4c matches a struct
    (nested structs flattened, a one-field struct too) field by field against the keys."""
    b = base(t)
    if isinstance(b, T.StructType):
        return [leaf for f in b.fields for leaf in _leaves(f.type)]
    if isinstance(b, T.TupleType):
        return [leaf for e in b.elements for leaf in _leaves(e)]
    return [_bits_of(b)]
