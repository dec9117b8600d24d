"""Elaboration: the instance tree under ``main`` and every object's control-plane name.

P4 declares *types* of parsers and controls; what runs (and what P4Runtime sees) are
their *instances*. This pass walks from the ``main`` package instance down through every
parser/control instance, binding constructor arguments, and lists the objects a
control plane can address (tables, actions, extern instances, value sets), each with
the name p4c's P4Info gives it. The P4Info generator and the v1model target both take
names from here, so P4Runtime and the switch cannot disagree. The result's API is
:class:`Elaboration`'s; the naming rules themselves are in :mod:`.cpnames`.

Naming follows p4c's front end (UniqueNames + inlining + HierarchicalNames):

* a top-level parser/control instance's prefix is its *declaration* name (``MyIngress``);
* a nested instance ``C() c_inst;`` inside ``MyIngress`` has prefix ``MyIngress.c_inst``;
  a direct call ``C.apply(…)`` behaves like an instance named after the type (placed
  after the declared locals); sub-instances are flattened into their top block in
  place, as p4c's inliner does, which fixes the order of objects in P4Info;
* a local object's name is ``prefix.local``, ``local`` its ``@name`` or declared name;
  ``@name(".x")`` makes the name absolute (``x``); top-level actions and extern
  instances keep their own name (``NoAction``);
* an extern instance built in a table property (``implementation = action_profile(128)``)
  is named by the property's ``@name`` verbatim (without one it has no control-plane name);
* ``@hidden`` objects have no control-plane name (``name`` is ``None``);
* actions and tables the program never uses are not control-plane objects (p4c
  removes them before generating P4Info); extern instances always are.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend import ast
from softswitch.frontend.cpnames import (
    digest_names,
    is_hidden,
    key_field_name,
    local_name,
    qualify,
    string_annotation,
    type_width,
)

# ---------------------------------------------------------------------------
# Result data
# ---------------------------------------------------------------------------


@dataclass(eq=False)
class ActionInstance:
    """An action as the control plane sees it (one per control-plane name)."""

    decl: ast.ActionDecl
    name: str | None             # None when @hidden
    owner: BlockInstance | None  # None for a top-level action
    qualified: str = ""          # the name even when hidden (p4c still reserves it)

    @property
    def params(self) -> list[ast.Param]:
        return self.decl.params


@dataclass(eq=False)
class KeyField:
    """One table key element with its P4Info match-field name and width."""

    name: str
    match_kind: str
    width: int | None
    expr: ast.Expr
    element: ast.KeyElement


@dataclass(eq=False)
class TableActionRef:
    """An entry of a table's ``actions`` list (``implicit`` when p4c adds it)."""

    action: ActionInstance
    annotations: list[ast.Annotation]
    ref: ast.ActionRef | None = None
    implicit: bool = False

    def has(self, name: str) -> bool:
        return ast.annotation(self, name) is not None


@dataclass(eq=False)
class DefaultAction:
    action: ActionInstance
    args: list[ast.Argument]
    is_const: bool
    implicit: bool = False


@dataclass(eq=False)
class ExternInstance:
    """An extern object instance: ``counter(1024, CounterType.packets) c;``."""

    decl: ast.Node                     # InstanceDecl, or the Call built in a table property
    name: str | None
    local_name: str
    type_name: str                     # extern type name, e.g. "counter"
    type_decl: ast.ExternDecl | None
    type_args: list[ast.TypeRef]
    args: dict[str, Any]               # constructor parameter name -> value
    arg_exprs: dict[str, ast.Expr]
    owner: BlockInstance | None
    table: TableInstance | None = None  # set when built in place in a table property
    loc: SourceLoc | None = None
    # built in place in a table property without ``@name``: no control-plane name
    # (p4c's P4Info generator rejects it; a switch can still run it)
    anonymous: bool = False
    qualified: str = ""  # the name even when hidden

    @property
    def annotations(self) -> list[ast.Annotation]:
        return getattr(self.decl, "annotations", [])


@dataclass(eq=False)
class ValueSetInstance:
    decl: ast.ValueSetDecl
    name: str | None
    owner: BlockInstance
    size: int | None
    qualified: str = ""


@dataclass(eq=False)
class TableInstance:
    decl: ast.TableDecl
    name: str | None
    owner: BlockInstance
    keys: list[KeyField] = field(default_factory=list)
    action_refs: list[TableActionRef] = field(default_factory=list)
    default_action: DefaultAction | None = None
    size: int | None = None
    implementation: ExternInstance | None = None
    counters: ExternInstance | None = None
    meters: ExternInstance | None = None
    has_entries: bool = False
    const_entries: bool = False
    support_timeout: bool = False
    add_on_miss: bool = False          # PNA: the default action may call add_entry
    qualified: str = ""

    @property
    def annotations(self) -> list[ast.Annotation]:
        return self.decl.annotations


@dataclass(eq=False)
class BlockInstance:
    """A parser or control instance with its bound constructor arguments."""

    decl: ast.ParserDecl | ast.ControlDecl
    kind: str                           # "parser" | "control"
    local_name: str                     # instance name ("" for nameless in main)
    prefix: str                         # control-plane prefix of its locals
    owner: BlockInstance | None
    args: dict[str, Any] = field(default_factory=dict)
    package_param: str | None = None
    children: list[Any] = field(default_factory=list)   # locals in order (flattened later)
    used: bool = True
    node: ast.Node | None = None        # the InstanceDecl / constructor call creating it


@dataclass(eq=False)
class PackageInstance:
    """A package instance passed to another package (``Pipeline(…) p0;`` in ``main``):
    its bound arguments; its parsers and controls are top blocks too."""

    decl: ast.PackageTypeDecl
    args: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class Elaboration:
    """What :func:`elaborate` finds (API stable)::

        elab = elaborate(checked)            # CheckedProgram or ast.Program
        elab.main                            # the ``main`` InstanceDecl or None
        elab.top_blocks                      # BlockInstance per package argument, in order
        elab.blocks                          # every parser/control instance: each top block
                                             # followed by its nested instances
        elab.tables / elab.actions / elab.externs / elab.value_sets   # in P4Info order
                                             # (``name`` None: @hidden; ``qualified`` is set)
        elab.table(name) / elab.action(name) / elab.extern(name)      # by control-plane name
        elab.instance_of(decl, block)        # the object a declaration became in a block
        table.keys -> [KeyField(name, match_kind, width, expr, …)]
        table.action_refs -> [TableActionRef(action, annotations, …)]
        elab.extern_calls                    # extern *function* calls (digest, …) in controls
    """

    program: ast.Program
    main: ast.InstanceDecl | None = None
    package: ast.PackageTypeDecl | None = None
    top_blocks: list[BlockInstance] = field(default_factory=list)
    package_args: dict[str, Any] = field(default_factory=dict)
    blocks: list[BlockInstance] = field(default_factory=list)
    tables: list[TableInstance] = field(default_factory=list)
    actions: list[ActionInstance] = field(default_factory=list)
    externs: list[ExternInstance] = field(default_factory=list)
    value_sets: list[ValueSetInstance] = field(default_factory=list)
    # extern functions called from control bodies/actions (name, Call, owner block)
    extern_calls: list[tuple[str, ast.Call, BlockInstance]] = field(default_factory=list)
    # the control-plane name of each digest() call's digest, by id(call)
    digest_names: dict[int, str] = field(default_factory=dict)

    def table(self, name: str) -> TableInstance | None:
        return next((t for t in self.tables if t.name == name), None)

    def action(self, name: str) -> ActionInstance | None:
        return next((a for a in self.actions if a.name == name), None)

    def extern(self, name: str) -> ExternInstance | None:
        return next((e for e in self.externs if e.name == name), None)

    def top_block(self, param: str) -> BlockInstance | None:
        return next((b for b in self.top_blocks if b.package_param == param), None)

    def instance_of(self, decl: ast.Node, owner: BlockInstance | None) -> Any:
        """The table/action/extern/value-set instance of ``decl`` inside block ``owner``
        (``owner`` None: a top-level action or extern) — how a back end walking one
        block's AST finds the control-plane object a declaration became."""
        for group in (self.tables, self.actions, self.externs, self.value_sets):
            for obj in group:
                if obj.decl is decl and obj.owner is owner:
                    return obj
        return None


# ---------------------------------------------------------------------------
# Lookups
# ---------------------------------------------------------------------------


def _type_name(ref: Any) -> tuple[str, list[ast.TypeRef]] | None:
    if isinstance(ref, ast.NamedTypeRef):
        return ref.name, ref.type_args
    return None


def walk_live(node: Any) -> Iterator[Any]:
    """Like :func:`ast.walk`, but skips the branch of an ``if`` whose condition is a
    compile-time constant (p4c folds it away before generating P4Info)."""
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        if isinstance(n, ast.IfStmt):
            c = getattr(n.cond, "const", ast.NOT_CONST)
            if c is True:
                stack.append(n.then)
                continue
            if c is False:
                if n.otherwise is not None:
                    stack.append(n.otherwise)
                continue
        stack.extend(reversed(list(ast.children(n))))


class _Scope:
    """Names visible inside one parser/control declaration (locals, then top level)."""

    def __init__(self, top: dict[str, list[ast.Node]], decl: Any | None) -> None:
        self.top = top
        self.local: dict[str, ast.Node] = {}
        if decl is not None:
            for p in list(getattr(decl, "ctor_params", [])) + list(getattr(decl, "params", [])):
                self.local[p.name] = p
            for d in getattr(decl, "locals", []):
                if isinstance(d, ast.Decl):
                    self.local[d.name] = d

    def lookup(self, name: str, top_level: bool = False) -> ast.Node | None:
        if not top_level and name in self.local:
            return self.local[name]
        found = self.top.get(name)
        return found[0] if found else None

    def lookup_type(self, name: str, nargs: int | None = None) -> ast.Node | None:
        found = [d for d in self.top.get(name, []) if not isinstance(
            d, (ast.InstanceDecl, ast.ActionDecl, ast.ConstDecl, ast.FunctionDecl,
                ast.ExternFunctionDecl))]
        if nargs is not None and len(found) > 1:
            for d in found:
                if len(getattr(d, "type_params", [])) == nargs:
                    return d
        return found[0] if found else None


def _resolve_path(expr: ast.PathExpr, scope: _Scope) -> ast.Node | None:
    decl = getattr(expr, "decl", None)
    if isinstance(decl, ast.Node):
        return decl
    return scope.lookup(expr.name, expr.top_level)


# ---------------------------------------------------------------------------
# Constant values
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class EnumValue:
    """An enum member used as a constructor argument (``CounterType.packets``)."""

    type_name: str
    name: str
    value: int | None = None


def _const_value(expr: ast.Expr, env: dict[str, Any], scope: _Scope) -> Any:
    """A constructor argument's value: the checker's constant, else a small evaluator
    for what constructor arguments contain (literals, enum members, parameters)."""
    c = getattr(expr, "const", ast.NOT_CONST)
    if c is not ast.NOT_CONST:
        if hasattr(c, "type_name") and hasattr(c, "name") and not isinstance(c, int):
            return EnumValue(c.type_name, c.name, getattr(c, "value", None))
        return c
    if isinstance(expr, ast.IntLiteral):
        return expr.value
    if isinstance(expr, ast.BoolLiteral):
        return expr.value
    if isinstance(expr, ast.StringLiteral):
        return expr.value
    if isinstance(expr, ast.Cast):
        return _const_value(expr.expr, env, scope)
    if isinstance(expr, ast.Member):
        base = expr.expr
        if isinstance(base, (ast.PathExpr, ast.TypeNameExpr)):
            tname = base.name if isinstance(base, ast.PathExpr) else getattr(
                base.type_ref, "name", "")
            return EnumValue(tname, expr.name)
    if isinstance(expr, ast.PathExpr):
        if expr.name in env and not expr.top_level:
            return env[expr.name]
        d = _resolve_path(expr, scope)
        if isinstance(d, ast.ConstDecl):
            return _const_value(d.value, {}, scope)
    if isinstance(expr, ast.Binary):
        left = _const_value(expr.left, env, scope)
        right = _const_value(expr.right, env, scope)
        if isinstance(left, int) and isinstance(right, int):
            ops = {"+": lambda a, b: a + b, "-": lambda a, b: a - b,
                   "*": lambda a, b: a * b, "<<": lambda a, b: a << b,
                   ">>": lambda a, b: a >> b, "|": lambda a, b: a | b,
                   "&": lambda a, b: a & b}
            if expr.op in ops:
                return ops[expr.op](left, right)
    return None


# ---------------------------------------------------------------------------
# The elaborator
# ---------------------------------------------------------------------------

#: Table properties naming an extern instance -> the TableInstance field it fills. The
#: v1model names and the PNA/PSA-style ones (``pna_implementation`` …) mean the same.
_PROPERTY_EXTERNS = {
    "implementation": "implementation", "counters": "counters", "meters": "meters",
    "pna_implementation": "implementation", "pna_direct_counter": "counters",
    "pna_direct_meter": "meters",
}


class _Elaborator:
    def __init__(self, program: ast.Program) -> None:
        self.program = program
        self.top: dict[str, list[ast.Node]] = {}
        for d in program.decls:
            if isinstance(d, ast.Decl):
                self.top.setdefault(d.name, []).append(d)
        self.top_scope = _Scope(self.top, None)
        self.result = Elaboration(program)
        self.global_externs: dict[int, ExternInstance] = {}

    # --- entry -------------------------------------------------------------------
    def run(self) -> Elaboration:
        main = next((d for d in self.program.decls
                     if isinstance(d, ast.InstanceDecl) and d.name == "main"), None)
        if main is None:
            return self.result
        self.result.main = main
        pkg = self._type_decl(main.type_ref, self.top_scope)
        if not isinstance(pkg, ast.PackageTypeDecl):
            raise P4Error("main must be an instance of a package", main.loc)
        self.result.package = pkg
        self._elaborate_top_level_externs()
        bound = self._bind_args(pkg.params, main.args, main.loc, "main")
        for pname, arg in bound.items():
            value = self._instance_arg(arg, {}, self.top_scope, None, pname)
            self.result.package_args[pname] = value
            self._add_top(pname, value)
        self._collect()
        self.result.digest_names = digest_names(
            [call for name, call, _blk in self.result.extern_calls if name == "digest"])
        return self.result

    def _add_top(self, pname: str, value: Any) -> None:
        """A package argument's parsers and controls are top blocks (those of a nested
        package too, named ``outer.inner``)."""
        if isinstance(value, BlockInstance):
            value.package_param = pname
            self.result.top_blocks.append(value)
        elif isinstance(value, PackageInstance):
            for name, inner in value.args.items():
                self._add_top(f"{pname}.{name}", inner)

    def _package(self, tdecl: ast.PackageTypeDecl, args: list[ast.Argument],
                 scope: _Scope, loc: SourceLoc | None) -> PackageInstance:
        pkg = PackageInstance(tdecl)
        for pname, arg in self._bind_args(tdecl.params, args, loc, tdecl.name).items():
            pkg.args[pname] = self._instance_arg(arg, {}, scope, None, pname)
        return pkg

    # --- argument binding --------------------------------------------------------
    def _bind_args(self, params: list[ast.Param], args: list[ast.Argument],
                   loc: SourceLoc | None, what: str) -> dict[str, ast.Expr]:
        bound: dict[str, ast.Expr] = {}
        positional = [a for a in args if a.name is None]
        named = {a.name: a for a in args if a.name is not None}
        for i, p in enumerate(params):
            if i < len(positional):
                bound[p.name] = positional[i].value
            elif p.name in named:
                bound[p.name] = named[p.name].value
            elif p.default is not None:
                bound[p.name] = p.default
        if len(positional) > len(params):
            raise P4Error(f"{what}: too many constructor arguments", loc)
        return bound

    def _type_decl(self, ref: Any, scope: _Scope) -> ast.Node | None:
        resolved = getattr(ref, "resolved", None)
        decl = getattr(resolved, "decl", None)
        if isinstance(decl, (ast.ParserDecl, ast.ControlDecl, ast.ExternDecl,
                             ast.PackageTypeDecl)):
            return decl
        tn = _type_name(ref)
        if tn is None:
            return None
        return scope.lookup_type(tn[0], len(tn[1]))

    def _callee_type(self, call: ast.Call, scope: _Scope) -> tuple[ast.Node | None,
                                                                    list[ast.TypeRef]]:
        target = call.target
        if isinstance(target, ast.TypeNameExpr):
            tn = _type_name(target.type_ref)
            return self._type_decl(target.type_ref, scope), (tn[1] if tn else [])
        if isinstance(target, ast.PathExpr):
            d = getattr(target, "decl", None)
            if isinstance(d, (ast.ParserDecl, ast.ControlDecl, ast.ExternDecl,
                              ast.PackageTypeDecl)):
                return d, list(call.type_args)
            return scope.lookup_type(target.name, len(call.type_args)), list(call.type_args)
        return None, []

    def _instance_arg(self, expr: ast.Expr, env: dict[str, Any], scope: _Scope,
                      owner: BlockInstance | None, name: str) -> Any:
        """Value of a constructor argument: nested instance, named instance or constant."""
        if isinstance(expr, ast.Call):
            tdecl, targs = self._callee_type(expr, scope)
            if isinstance(tdecl, (ast.ParserDecl, ast.ControlDecl)):
                return self._block(tdecl, expr.args, name, owner, env, scope, expr)
            if isinstance(tdecl, ast.ExternDecl):
                return self._extern(expr, tdecl, targs, expr.args, name, name, owner, env,
                                    scope)
            if isinstance(tdecl, ast.PackageTypeDecl) and owner is None:
                return self._package(tdecl, expr.args, scope, expr.loc)
        if isinstance(expr, ast.PathExpr):
            if expr.name in env and not expr.top_level:
                return env[expr.name]
            d = _resolve_path(expr, scope)
            if isinstance(d, ast.InstanceDecl):
                local = next((c for c in (owner.children if owner else [])
                              if isinstance(c, ExternInstance) and c.decl is d), None)
                return local if local is not None else self._named_instance(d, owner)
        return _const_value(expr, env, scope)

    def _named_instance(self, d: ast.InstanceDecl, owner: BlockInstance | None) -> Any:
        """A top-level instance used as an argument."""
        if id(d) in self.global_externs:
            return self.global_externs[id(d)]
        tdecl = self._type_decl(d.type_ref, self.top_scope)
        if isinstance(tdecl, (ast.ParserDecl, ast.ControlDecl)):
            return self._block(tdecl, d.args, d.name, owner, {}, self.top_scope, d)
        if isinstance(tdecl, ast.PackageTypeDecl) and owner is None:
            return self._package(tdecl, d.args, self.top_scope, d.loc)
        return None

    # --- blocks ------------------------------------------------------------------
    def _block(self, tdecl: ast.ParserDecl | ast.ControlDecl, args: list[ast.Argument],
               inst_name: str, owner: BlockInstance | None, env: dict[str, Any],
               scope: _Scope, node: ast.Node | None) -> BlockInstance:
        kind = "parser" if isinstance(tdecl, ast.ParserDecl) else "control"
        if owner is None:
            prefix = tdecl.name
        else:
            prefix = qualify(owner.prefix, local_name(node, inst_name))
        block = BlockInstance(tdecl, kind, inst_name, prefix, owner, node=node)
        bound = self._bind_args(tdecl.ctor_params, args, getattr(node, "loc", None),
                                tdecl.name)
        inner_scope = _Scope(self.top, tdecl)
        for pname, expr in bound.items():
            block.args[pname] = self._instance_arg(expr, env, scope, owner,
                                                   pname)
        self._elaborate_locals(block, inner_scope)
        return block

    def _elaborate_locals(self, block: BlockInstance, scope: _Scope) -> None:
        decl = block.decl
        env = block.args
        for d in decl.locals:
            if isinstance(d, ast.InstanceDecl):
                tdecl = self._type_decl(d.type_ref, scope)
                tn = _type_name(d.type_ref)
                if isinstance(tdecl, (ast.ParserDecl, ast.ControlDecl)):
                    block.children.append(self._block(tdecl, d.args, d.name, block, env,
                                                      scope, d))
                elif isinstance(tdecl, ast.ExternDecl) or tdecl is None:
                    block.children.append(self._extern(
                        d, tdecl, tn[1] if tn else [], d.args, d.name,
                        qualify(block.prefix, local_name(d, d.name)), block, env, scope,
                        hidden=is_hidden(d)))
            elif isinstance(d, (ast.ActionDecl, ast.TableDecl, ast.ValueSetDecl)):
                block.children.append(d)
        # Direct applications (``C.apply()`` on a type) become instances named after
        # the type, appended after the declared locals.
        if isinstance(decl, ast.ControlDecl):
            body: list[Any] = [decl.apply]
        else:
            body = list(decl.states)
        seen: set[str] = set()
        for root in body:
            for n in ast.walk(root):
                if not (isinstance(n, ast.Call) and isinstance(n.target, ast.Member)
                        and n.target.name == "apply"):
                    continue
                d = self._direct_target(n.target.expr, scope)
                if d is not None:
                    if isinstance(d, (ast.ControlDecl, ast.ParserDecl)) and d.name not in seen:
                        seen.add(d.name)
                        # named after the type (p4c: ``@name("C")``), whatever
                        # the type's own annotations say
                        block.children.append(self._block(d, [], d.name, block, env, scope,
                                                          None))
        self.result.blocks.append(block)

    @staticmethod
    def _direct_target(base: ast.Expr, scope: _Scope) -> ast.Node | None:
        """The parser/control *type* of a direct application ``C.apply()``."""
        if isinstance(base, ast.PathExpr):
            d = _resolve_path(base, scope)
        elif isinstance(base, ast.TypeNameExpr) and isinstance(base.type_ref, ast.NamedTypeRef):
            d = scope.lookup_type(base.type_ref.name)
        else:
            return None
        return d if isinstance(d, (ast.ControlDecl, ast.ParserDecl)) else None

    # --- externs -----------------------------------------------------------------
    def _extern(self, node: ast.Node, tdecl: ast.ExternDecl | None,
                targs: list[ast.TypeRef], args: list[ast.Argument], lname: str,
                cp_name: str | None, owner: BlockInstance | None, env: dict[str, Any],
                scope: _Scope, hidden: bool = False) -> ExternInstance:
        ctor = None
        if tdecl is not None:
            ctors = [m for m in tdecl.methods if m.return_type is None and m.name == tdecl.name]
            ctor = next((c for c in ctors if len(c.params) == len(args)), None) or (
                ctors[0] if ctors else None)
        values: dict[str, Any] = {}
        exprs: dict[str, ast.Expr] = {}
        if ctor is not None:
            for pname, expr in self._bind_args(ctor.params, args, node.loc,
                                               tdecl.name if tdecl else lname).items():
                exprs[pname] = expr
                values[pname] = self._instance_arg(expr, env, scope, owner, pname)
        else:
            for i, a in enumerate(args):
                key = a.name or str(i)
                exprs[key] = a.value
                values[key] = _const_value(a.value, env, scope)
        tname = tdecl.name if tdecl is not None else (
            _type_name(getattr(node, "type_ref", None)) or ("", []))[0]
        return ExternInstance(node, None if hidden else cp_name, lname, tname, tdecl,
                              list(targs), values, exprs, owner, loc=node.loc,
                              qualified=cp_name or "")

    def _elaborate_top_level_externs(self) -> None:
        for d in self.program.decls:
            if not isinstance(d, ast.InstanceDecl) or d.name == "main":
                continue
            tdecl = self._type_decl(d.type_ref, self.top_scope)
            if isinstance(tdecl, ast.ExternDecl):
                tn = _type_name(d.type_ref)
                inst = self._extern(d, tdecl, tn[1] if tn else [], d.args, d.name,
                                    local_name(d, d.name).lstrip("."), None, {},
                                    self.top_scope, hidden=is_hidden(d))
                self.global_externs[id(d)] = inst

    # --- collection in p4c's order ----------------------------------------------
    def _collect(self) -> None:
        """Flatten each top block (inlining sub-instances), drop unused objects and
        list the control-plane objects in the order p4c's P4Info lists them."""
        res = self.result
        res.blocks = []
        actions_seen: dict[str, ActionInstance] = {}
        for ext in self.global_externs.values():
            res.externs.append(ext)
        ordered_blocks = [b for b in res.top_blocks]
        for arg in res.package_args.values():
            if isinstance(arg, ExternInstance) and arg not in res.externs:
                res.externs.append(arg)
        flat_items: list[tuple[BlockInstance, list[tuple[BlockInstance, Any]]]] = []
        for top in ordered_blocks:
            items = self._flatten_block(top)
            flat_items.append((top, items))
            res.blocks.extend(self._all_blocks(top))
        # Actions are collected per control block, before any table (BFS: blocks first).
        for top, items in flat_items:
            used = self._used(top, items)
            if top.kind == "control":
                block_actions = self._block_actions(top, items, used)
                for act in block_actions:
                    if act.qualified not in actions_seen:
                        actions_seen[act.qualified] = act
                        res.actions.append(act)
                self._record_extern_calls(top, block_actions, items)
            # Tables and extern instances in declaration order; p4c adds an extern built
            # in place in a table property when it visits the table.
            for blk, item in items:
                if isinstance(item, ast.TableDecl) and id(item) in used:
                    t = self._table(item, blk, actions_seen)
                    res.tables.append(t)
                    for ext in (t.implementation, t.counters, t.meters):
                        if ext is not None and ext.table is t and ext not in res.externs:
                            res.externs.append(ext)
                elif isinstance(item, ast.ValueSetDecl) and id(item) in used:
                    res.value_sets.append(self._value_set(item, blk))
                elif isinstance(item, ExternInstance) and self._block_live(blk):
                    res.externs.append(item)

    def _all_blocks(self, block: BlockInstance) -> list[BlockInstance]:
        out = [block]
        for c in block.children:
            if isinstance(c, BlockInstance):
                out.extend(self._all_blocks(c))
        return out

    def _flatten_block(self, block: BlockInstance) -> list[tuple[BlockInstance, Any]]:
        """Locals of a block with sub-instances replaced by their own locals (p4c
        inlines sub-parsers and sub-controls before generating P4Info)."""
        out: list[tuple[BlockInstance, Any]] = []
        for c in block.children:
            if isinstance(c, BlockInstance):
                out.append((block, c))
                out.extend(self._flatten_block(c))
            else:
                out.append((block, c))
        return out

    # --- usage (p4c removes unused tables/actions/value sets) ---------------------
    def _scope_of(self, block: BlockInstance) -> _Scope:
        return _Scope(self.top, block.decl)

    def _refs(self, node: Any, block: BlockInstance) -> Iterator[ast.Node]:
        """Declarations referenced from live code under ``node``. Calls of actions
        inside an action do not count: p4c inlines them and drops the callee."""
        scope = self._scope_of(block)
        in_action = isinstance(node, ast.ActionDecl)
        for n in walk_live(node):
            if isinstance(n, ast.PathExpr):
                d = _resolve_path(n, scope)
                if d is not None and not (in_action and isinstance(d, ast.ActionDecl)):
                    yield d
            elif isinstance(n, ast.TypeNameExpr):
                d = self._direct_target(n, scope)
                if d is not None:
                    yield d

    def _used(self, top: BlockInstance, items: list[tuple[BlockInstance, Any]]) -> set[int]:
        """ids of locals (tables, actions, value sets, sub-blocks) reachable from the
        apply bodies / parser states of used blocks."""
        used: set[int] = set()
        work: list[tuple[Any, BlockInstance]] = []

        def roots(b: BlockInstance) -> None:
            if isinstance(b.decl, ast.ControlDecl):
                work.append((b.decl.apply, b))
            else:
                for s in b.decl.states:
                    work.append((s, b))
            for c in b.children:
                if isinstance(c, ExternInstance):
                    work.append((c.decl, b))
                elif isinstance(c, BlockInstance) and isinstance(c.node, ast.InstanceDecl):
                    # instances passed to other instances' constructors are used
                    for a in c.node.args:
                        work.append((a.value, b))

        roots(top)
        visited: set[tuple[int, int]] = set()
        while work:
            node, blk = work.pop()
            key = (id(node), id(blk))
            if key in visited:
                continue
            visited.add(key)
            for d in self._refs(node, blk):
                if isinstance(d, (ast.TableDecl, ast.ActionDecl, ast.ValueSetDecl)):
                    used.add(id(d))
                    work.append((d, blk))
                elif isinstance(d, ast.InstanceDecl):
                    for c in blk.children:
                        if (isinstance(c, BlockInstance) and c.local_name == d.name
                                and id(c) not in used):
                            used.add(id(c))
                            roots(c)
                elif isinstance(d, (ast.ControlDecl, ast.ParserDecl)):
                    for c in blk.children:
                        if (isinstance(c, BlockInstance) and c.decl is d
                                and c.local_name == d.name and id(c) not in used):
                            used.add(id(c))
                            roots(c)
            if isinstance(node, ast.TableDecl) and node.prop("default_action") is None:
                no_action = self.top_scope.lookup("NoAction")
                if isinstance(no_action, ast.ActionDecl):
                    used.add(id(no_action))
        for _blk, item in items:
            if isinstance(item, BlockInstance) and id(item) not in used:
                item.used = False
        return used

    def _block_actions(self, top: BlockInstance, items: list[tuple[BlockInstance, Any]],
                       used: set[int]) -> list[ActionInstance]:
        """Actions of a flattened control in p4c's order: the top-level actions it
        uses (in order of first use), then its own actions in declaration order."""
        globals_used: list[ast.ActionDecl] = []
        own: list[ActionInstance] = []
        for blk, item in items:
            if isinstance(item, BlockInstance) and not item.used:
                continue
            if not self._block_live(blk):
                continue
            if isinstance(item, ast.ActionDecl):
                if id(item) in used:
                    own.append(self._action(item, blk))
            if isinstance(item, (ast.ActionDecl, ast.TableDecl)) and id(item) in used:
                self._note_global_uses(item, blk, globals_used)
        for blk in [top] + [b for _, b in items if isinstance(b, BlockInstance)]:
            if isinstance(blk.decl, ast.ControlDecl) and self._block_live(blk):
                self._note_global_uses(blk.decl.apply, blk, globals_used)
        result = [self._action(a, None) for a in globals_used]
        return result + own

    def _block_live(self, blk: BlockInstance) -> bool:
        b: BlockInstance | None = blk
        while b is not None:
            if not b.used:
                return False
            b = b.owner
        return True

    def _note_global_uses(self, node: Any, blk: BlockInstance,
                          out: list[ast.ActionDecl]) -> None:
        for d in self._refs(node, blk):
            if isinstance(d, ast.ActionDecl) and d in self.top.get(d.name, []) and d not in out:
                out.append(d)
        if isinstance(node, ast.TableDecl) and node.prop("default_action") is None:
            no_action = self.top_scope.lookup("NoAction")
            if isinstance(no_action, ast.ActionDecl) and no_action not in out:
                out.append(no_action)

    # --- objects -----------------------------------------------------------------
    def _action(self, decl: ast.ActionDecl, blk: BlockInstance | None) -> ActionInstance:
        cache = self.__dict__.setdefault("_actions", {})
        key = (id(decl), id(blk) if blk is not None else 0)
        if key in cache:
            return cache[key]
        if blk is None:
            qualified = local_name(decl, decl.name).lstrip(".")
        else:
            qualified = qualify(blk.prefix, local_name(decl, decl.name))
        inst = ActionInstance(decl, None if is_hidden(decl) else qualified, blk, qualified)
        cache[key] = inst
        return inst

    def _action_for(self, expr: ast.Expr, blk: BlockInstance) -> ActionInstance:
        target = expr.target if isinstance(expr, ast.Call) else expr
        if not isinstance(target, ast.PathExpr):
            raise P4Error("expected an action name", expr.loc)
        d = _resolve_path(target, self._scope_of(blk))
        if not isinstance(d, ast.ActionDecl):
            raise P4Error(f"{target.name}: not an action", target.loc)
        owner = None if d in self.top.get(d.name, []) else blk
        return self._action(d, owner)

    def _table(self, decl: ast.TableDecl, blk: BlockInstance,
               actions_seen: dict[str, ActionInstance]) -> TableInstance:
        qualified = qualify(blk.prefix, local_name(decl, decl.name))
        t = TableInstance(decl, None if is_hidden(decl) else qualified, blk, qualified=qualified)
        scope = self._scope_of(blk)
        for prop in decl.properties:
            self._table_property(t, prop, blk, scope)
        if t.default_action is None:
            no_action = self.top_scope.lookup("NoAction")
            if isinstance(no_action, ast.ActionDecl):
                act = self._action(no_action, None)
                t.default_action = DefaultAction(act, [], False, implicit=True)
                if not any(r.action is act for r in t.action_refs):
                    anno = ast.Annotation("defaultonly", loc=decl.loc)
                    t.action_refs.append(TableActionRef(act, [anno], None, implicit=True))
        return t

    def _table_property(self, t: TableInstance, prop: ast.TableProperty,
                        blk: BlockInstance, scope: _Scope) -> None:
        v = prop.value
        if prop.name == "key":
            for elem in v or []:
                width = type_width(getattr(elem.expr, "type", None))
                t.keys.append(KeyField(key_field_name(elem), elem.match_kind, width,
                                       elem.expr, elem))
        elif prop.name == "actions":
            for ref in v or []:
                t.action_refs.append(TableActionRef(self._action_for(ref.name, blk),
                                                    list(ref.annotations), ref))
        elif prop.name == "default_action":
            ref = v
            if isinstance(ref, ast.ActionRef):
                t.default_action = DefaultAction(self._action_for(ref.name, blk),
                                                 list(ref.args), prop.is_const)
            elif isinstance(ref, ast.Expr):
                args = ref.args if isinstance(ref, ast.Call) else []
                t.default_action = DefaultAction(self._action_for(ref, blk), list(args),
                                                 prop.is_const)
        elif prop.name == "entries":
            t.has_entries = True
            t.const_entries = prop.is_const
        elif prop.name == "size":
            val = _const_value(v, blk.args, scope) if isinstance(v, ast.Expr) else None
            if isinstance(val, int) and not isinstance(val, bool):
                t.size = val
        elif prop.name == "support_timeout":
            val = _const_value(v, blk.args, scope) if isinstance(v, ast.Expr) else None
            t.support_timeout = val is True
        elif prop.name == "add_on_miss":
            val = _const_value(v, blk.args, scope) if isinstance(v, ast.Expr) else None
            t.add_on_miss = val is True
        elif prop.name in _PROPERTY_EXTERNS and isinstance(v, ast.Expr):
            setattr(t, _PROPERTY_EXTERNS[prop.name],
                    self._property_extern(t, prop, v, blk, scope))

    def _property_extern(self, t: TableInstance, prop: ast.TableProperty, v: ast.Expr,
                         blk: BlockInstance, scope: _Scope) -> ExternInstance | None:
        if isinstance(v, ast.Call):
            tdecl, targs = self._callee_type(v, scope)
            pname = string_annotation(prop, "name")
            ext = self._extern(v, tdecl if isinstance(tdecl, ast.ExternDecl) else None,
                               targs, v.args, prop.name,
                               pname.lstrip(".") if pname is not None else None, blk,
                               blk.args, scope)
            ext.table = t
            ext.anonymous = pname is None
            return ext
        if isinstance(v, ast.PathExpr):
            if v.name in blk.args and not v.top_level:
                val = blk.args[v.name]
                return val if isinstance(val, ExternInstance) else None
            d = _resolve_path(v, scope)
            for c in blk.children:
                if isinstance(c, ExternInstance) and c.decl is d:
                    return c
            if isinstance(d, ast.InstanceDecl) and id(d) in self.global_externs:
                return self.global_externs[id(d)]
        return None

    def _value_set(self, decl: ast.ValueSetDecl, blk: BlockInstance) -> ValueSetInstance:
        qualified = qualify(blk.prefix, local_name(decl, decl.name))
        size = _const_value(decl.size, blk.args, self._scope_of(blk))
        return ValueSetInstance(decl, None if is_hidden(decl) else qualified, blk,
                                size if isinstance(size, int) else None, qualified)

    def _record_extern_calls(self, top: BlockInstance, actions: list[ActionInstance],
                             items: list[tuple[BlockInstance, Any]]) -> None:
        """Extern *function* calls in a control, in p4c's order: its actions' bodies
        (with the actions they call inlined), then its apply body (p4c reports digests
        from these, and their presence creates P4Info's ``type_info``)."""
        if top.kind != "control":
            return
        roots: list[tuple[Any, BlockInstance | None]] = [
            (a.decl.body, a.owner) for a in actions]
        roots.append((top.decl.apply, top))
        for _blk, item in items:
            if isinstance(item, BlockInstance) and item.kind == "control" and \
                    self._block_live(item):
                roots.append((item.decl.apply, item))
        for root, blk in roots:
            self._extern_calls_in(root, blk, set())

    def _extern_calls_in(self, root: Any, blk: BlockInstance | None, seen: set[int]) -> None:
        scope = self._scope_of(blk) if blk is not None else self.top_scope
        for n in walk_live(root):
            if not (isinstance(n, ast.Call) and isinstance(n.target, ast.PathExpr)):
                continue
            d = _resolve_path(n.target, scope)
            if isinstance(d, ast.ExternFunctionDecl):
                if n.const is not ast.NOT_CONST:
                    continue  # evaluated at compile time (static_assert): folded away
                self.result.extern_calls.append((d.name, n, blk or self.result.top_blocks[0]))
            elif isinstance(d, (ast.ActionDecl, ast.FunctionDecl)) and id(d) not in seen:
                # p4c inlines called actions and functions before looking for calls
                seen.add(id(d))
                owner = None if d in self.top.get(d.name, []) else blk
                self._extern_calls_in(d.body, owner, seen)


def elaborate(checked: Any) -> Elaboration:
    """Elaborate a type-checked program (``CheckedProgram`` or an annotated
    ``ast.Program``): see the module docstring."""
    cached = getattr(checked, "elaboration", None)
    if isinstance(cached, Elaboration):
        return cached       # compile_program elaborated it already (cpchecks)
    program = getattr(checked, "program", checked)
    if not isinstance(program, ast.Program):
        raise TypeError("elaborate() needs a CheckedProgram or an ast.Program")
    return _Elaborator(program).run()
