"""Tables: keys, action lists, default actions, constant entries and other properties.

Besides typing, this enforces p4c's table rules: a known match kind for every key, an
``actions`` property, default/entry actions taken from the action list with their
directional arguments, control-plane parameters left unbound in the list, entries only
with a key, keysets of the right size and types, priorities where the match kinds need
them. Each ``ActionRef`` gets ``call``: a :class:`CallInfo` of kind ``action`` whose
``args`` are the bound arguments in parameter order (None where the control plane
supplies the value).
"""

from __future__ import annotations

from collections.abc import Callable

from softswitch.diagnostics import DiagnosticSink
from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.callcheck import check_argument, param_infos
from softswitch.frontend.calls import CallInfo
from softswitch.frontend.checkbase import base, declared, describe, fail
from softswitch.frontend.context import Ctx
from softswitch.frontend.typecheck import ExprChecker

KEY_TYPES = (T.BitsType, T.BoolType, T.EnumType, T.ErrorType, T.IntType)


def same_expression(a: ast.Expr, b: ast.Expr) -> bool:
    """Whether two (typed) expressions denote the same value, like p4c's SameExpression:
    equal constants, or the same syntax over the same declarations."""
    if a.const is not ast.NOT_CONST and b.const is not ast.NOT_CONST:
        return a.const == b.const
    if type(a) is not type(b):
        return False
    if isinstance(a, ast.PathExpr) and isinstance(b, ast.PathExpr):
        return a.decl is b.decl
    if isinstance(a, ast.Member) and isinstance(b, ast.Member):
        return a.name == b.name and same_expression(a.expr, b.expr)
    if isinstance(a, ast.StructExpr) and isinstance(b, ast.StructExpr):
        return [n for n, _ in a.fields] == [n for n, _ in b.fields] and all(
            same_expression(x, y) for (_, x), (_, y) in zip(a.fields, b.fields, strict=True))
    return describe(a) == describe(b)


class TableChecker(ExprChecker):
    def __init__(self, sink: DiagnosticSink) -> None:
        super().__init__(sink)
        self.table_actions: dict[ast.Node, list[ast.ActionDecl]] = {}

    def table(self, d: ast.TableDecl, ctx: Ctx) -> None:
        tctx = ctx.with_(table=d, block="table")
        seen: set[str] = set()
        for p in d.properties:
            if p.name in seen:
                raise fail(f"{p.name}: Duplicates declaration {p.name}", p)
            seen.add(p.name)
        self.table_actions[d] = []
        keys: list[ast.KeyElement] = []
        key_prop = d.prop("key")
        if key_prop is not None:
            keys = list(key_prop.value)
            for k in keys:
                self.guard(lambda k=k: self.key_element(k, tctx))
        acts = d.prop("actions")
        if acts is None:
            raise fail(f"{d.name}: expected 'actions' property", d)
        order = [p.name for p in d.properties]
        for early in ("default_action", "entries"):
            if early in order and order.index(early) < order.index("actions"):
                prop = d.properties[order.index(early)]
                raise fail(f"{d.name} has no action list, so it cannot invoke "
                           f"'{early}' actions (declare 'actions' first)", prop)
        refs: dict[ast.ActionDecl, ast.ActionRef] = {}
        for ref in acts.value:
            self.guard(lambda ref=ref: self.action_in_list(ref, refs, tctx))
        self.table_actions[d] = list(refs)
        if d.prop("default_action") is None and ctx.scope.lookup("NoAction") is None:
            raise fail("Declaration of the action NoAction not found; did you include core.p4?",
                       d)
        for p in d.properties:
            if p.name in ("key", "actions"):
                continue
            self.guard(lambda p=p: self.table_property(d, p, keys, refs, tctx))

    def key_element(self, k: ast.KeyElement, ctx: Ctx) -> None:
        t = self.expr(k.expr, ctx)
        if k.match_kind not in self.match_kinds:
            raise fail(f"{k.match_kind}: declaration not found", k)
        mk = ctx.scope.lookup(k.match_kind, want_type=False)
        if not isinstance(mk, ast.EnumMember):
            raise fail(f"{k.match_kind}: value must be a match_kind", k)
        if not isinstance(base(t), KEY_TYPES):
            raise fail(f"Key {describe(k.expr)} field type must be a scalar type; it cannot be "
                       f"{t}", k.expr)
        if isinstance(base(t), T.IntType):
            raise fail(f"{describe(k.expr)}: could not infer a width", k.expr)

    def resolve_action(self, ref: ast.ActionRef, ctx: Ctx) -> ast.ActionDecl:
        name = ref.name
        if isinstance(name, ast.Call):
            raise fail(f"{describe(name)}: invalid action reference", name)
        if not isinstance(name, ast.PathExpr):
            raise fail(f"{describe(name)}: expected an action name", name)
        decl = declared(ctx, name.name, name.top_level, False, name, describe(name))
        if not isinstance(decl, ast.ActionDecl):
            raise fail(f"{describe(name)} is not invoking an action", name)
        name.decl = decl
        name.type = T.FunctionType("action", param_infos(decl.params), T.VoidType(),
                                   decl=decl)
        return decl

    def action_in_list(self, ref: ast.ActionRef, refs: dict, ctx: Ctx) -> None:
        decl = self.resolve_action(ref, ctx)
        if decl in refs:
            raise fail(f"{describe(ref.name)}: Duplicate action in actions list", ref)
        for other in refs:
            if other.name == decl.name:
                raise fail(f"{describe(ref.name)} and {other.name} refer to different "
                           "actions", ref)
        params = param_infos(decl.params)
        directional = [p for p in params if p.direction]
        if len(ref.args) > len(directional):
            extra = ref.args[len(directional)]
            raise fail(f"{describe(extra.value)}: parameter "
                       f"{params[len(directional)].name if len(params) > len(directional) else '?'}"
                       " cannot be bound: it is set by the control plane", extra)
        self._bind_ref(ref, decl, params, len(directional), ctx)
        refs[decl] = ref

    def _bind_ref(self, ref: ast.ActionRef, decl: ast.ActionDecl,
                  params: tuple[T.ParamInfo, ...], required: int, ctx: Ctx) -> None:
        if any(a.name is not None for a in ref.args):
            index = {p.name: i for i, p in enumerate(params)}
            bound: list[ast.Expr | None] = [None] * len(params)
            for a in ref.args:
                if a.name not in index:
                    raise fail(f"{a.name}: No parameter named {a.name}", a)
                bound[index[a.name]] = a.value
        else:
            bound = [a.value for a in ref.args] + [None] * (len(params) - len(ref.args))
        for i, (p, a) in enumerate(zip(params, bound, strict=True)):
            if a is None:
                if i < required:
                    raise fail(f"{describe(ref.name)}: Parameter {p.name} must be bound", ref)
                continue
            self.expr(a, ctx)
            check_argument(self, p, p.type, a, ctx)
        ref.call = CallInfo("action", decl, params, tuple(bound))

    def _listed_action(self, ref: ast.ActionRef, refs: dict, d: ast.TableDecl,
                       ctx: Ctx) -> ast.ActionDecl:
        """An action used as default/entry action: must be in the list, fully bound."""
        decl = self.resolve_action(ref, ctx)
        if not refs and d.prop("actions") is None:
            raise fail(f"{d.name} has no action list, so it cannot invoke "
                       f"'{describe(ref.name)}()'", ref)
        if decl not in refs:
            raise fail(f"{describe(ref.name)}() not present in action list", ref)
        params = param_infos(decl.params)
        self._bind_ref(ref, decl, params, len(params), ctx)
        for p, a in zip(params, ref.call.args, strict=True):
            if a is not None and not p.direction and not consteval.compile_time_known(a):
                raise fail(f"{describe(a)}: action argument must be a compile-time constant",
                           a)
        listed = refs[decl]
        for got, want in zip(ref.args, listed.args, strict=False):
            if not same_expression(got.value, want.value):
                raise fail(f"{describe(got.value)}: argument does not match declaration in "
                           f"actions list: {describe(want.value)}", got)
        return decl

    def table_property(self, d: ast.TableDecl, p: ast.TableProperty,
                       keys: list[ast.KeyElement], refs: dict, ctx: Ctx) -> None:
        if p.name == "default_action":
            self._listed_action(p.value, refs, d, ctx)
            if self._list_annotation(p.value, refs, "tableonly"):
                raise fail(f"{describe(p.value.name)}: Action marked with @tableonly used as "
                           "default action", p)
            return
        if p.name == "entries":
            self.entries(d, p, keys, refs, ctx)
            return
        if isinstance(p.value, ast.Expr):
            t = self.expr(p.value, ctx)
            if p.name == "size":
                if not isinstance(base(t), (T.IntType, T.BitsType)) or \
                        p.value.const is ast.NOT_CONST:
                    raise fail(f"{describe(p.value)}: table size must be a constant integer",
                               p.value)
            return

    def entries(self, d: ast.TableDecl, p: ast.TableProperty, keys: list[ast.KeyElement],
                refs: dict, ctx: Ctx) -> None:
        if not keys:
            raise fail(f"Entries cannot be specified for a table with no key {d.name}", d)
        needs_priority = any(k.match_kind not in ("exact", "lpm") for k in keys)
        for entry in p.value:
            self.guard(lambda entry=entry: self.entry(d, entry, keys, refs, ctx))
        self.guard(lambda: self.entry_priorities(d, p, needs_priority))
        if all(k.match_kind == "exact" for k in keys):
            self._no_duplicate_keys(p.value)

    def entry_priorities(self, d: ast.TableDecl, p: ast.TableProperty,
                         needs_priority: bool) -> None:
        """Every entry's priority (``TableEntry.priority_value``) by the P4_16 spec's
        "Entry priorities" rules, as p4c's EntryPriorities pass computes them: ``const
        entries`` take none (their order ranks them); in ``entries`` a table whose keys
        are all ``exact``/``lpm`` takes none; without any ``priority =`` the first entry
        ranks highest; with some, the first entry must have one and each entry without
        one continues from the previous one by ``priority_delta``, downwards when
        ``largest_priority_wins`` (the default), upwards otherwise."""
        entries: list[ast.TableEntry] = p.value
        explicit = next((e for e in entries if e.priority is not None), None)
        if p.is_const:
            if explicit is not None:
                raise fail("Entry: Table with 'const' entries cannot have priorities",
                           explicit)
            return
        largest_wins = self._bool_property(d, "largest_priority_wins", True)
        delta = self._delta_property(d)
        if not needs_priority:
            if explicit is not None:
                key = d.prop("key")
                raise fail(f"Key {d.name} match type does not require priorities, but some "
                           "are specified", key if key is not None else d)
            return
        n = len(entries)
        if explicit is None:
            for i, e in enumerate(entries):
                e.priority_value = 1 + delta * (n - 1 - i if largest_wins else i)
            return
        current = 0
        previous = 0
        seen: dict[int, ast.TableEntry] = {}
        out_of_order = False
        for i, e in enumerate(entries):
            if e.priority is not None:
                v = e.priority.const
                if isinstance(v, bool) or not isinstance(v, int):
                    raise fail(f"{describe(e.priority)} must be a constant", e.priority)
                current = v
            elif i == 0:
                raise fail("Entry entry must have a priority", e)
            e.priority_value = current
            if current in seen:
                self.sink.warning(f"Entry and Entry have the same priority {current}", e.loc)
            seen.setdefault(current, e)
            if i > 0 and not out_of_order and (
                    current > previous if largest_wins else current < previous):
                self.sink.warning(f"Entry (priority {previous}) and Entry (priority "
                                  f"{current}) have priorities out of order", e.loc)
                out_of_order = True
            previous = current
            current = current - delta if largest_wins else current + delta
            if current < 0:
                raise fail(f"{d.name} Overflow in priority computation", d)

    def _bool_property(self, d: ast.TableDecl, name: str, default: bool) -> bool:
        p = d.prop(name)
        if p is None:
            return default
        v = p.value.const if isinstance(p.value, ast.Expr) else ast.NOT_CONST
        if not isinstance(v, bool):
            raise fail(f"{name} must be a boolean expression", p)
        return v

    def _delta_property(self, d: ast.TableDecl) -> int:
        p = d.prop("priority_delta")
        if p is None:
            return 1
        v = p.value.const if isinstance(p.value, ast.Expr) else ast.NOT_CONST
        if isinstance(v, bool) or not isinstance(v, int):
            raise fail("priority_delta must be a constant numeric expression", p)
        if v < 0:
            raise fail(f"{describe(p.value)} must be a positive value", p.value)
        return v

    def _no_duplicate_keys(self, entries: list[ast.TableEntry]) -> None:
        """Two exact-match entries with the same key could never both be hit."""
        seen: set[object] = set()
        for entry in entries:
            ks = entry.keys
            items = ks.items if isinstance(ks, ast.ListExpr) else [ks]
            values = tuple(i.const for i in items)
            if any(v is ast.NOT_CONST for v in values):
                continue
            if values in seen:
                raise fail(f"{describe(ks)}: Duplicate entry keys", entry)
            seen.add(values)

    def entry(self, d: ast.TableDecl, entry: ast.TableEntry, keys: list[ast.KeyElement],
              refs: dict, ctx: Ctx) -> None:
        ks = entry.keys
        if isinstance(ks, ast.ListExpr) and not (len(keys) == 1 and len(ks.items) != 1
                                                 and isinstance(base(keys[0].expr.type),
                                                                T.TupleType)):
            items = list(ks.items)
        else:
            items = [ks]
        if items and isinstance(items[-1], ast.DotsExpr) and len(items) <= len(keys):
            items = items[:-1] + [items[-1]] * (len(keys) - len(items) + 1)
        if len(items) != len(keys):
            raise fail(f"{describe(ks)}: Size of entry keyset must match the table key set "
                       f"size ({len(items)} vs {len(keys)})", ks)
        entry.key_items = items
        for item, k in zip(items, keys, strict=True):
            self.entry_key(item, k, ctx)
        if isinstance(ks, ast.ListExpr):
            ks.type = T.ListType(tuple(i.type or T.DontCareType() for i in ks.items))
        if entry.priority is not None:
            self.expr(entry.priority, ctx)
            if not isinstance(base(entry.priority.type), T.BitsType):   # bit<W> counts too
                self.coerce(entry.priority, T.IntType(), ctx)
        self._listed_action(entry.action, refs, d, ctx)
        if self._list_annotation(entry.action, refs, "defaultonly"):
            raise fail(f"{describe(entry.action.name)}: Action marked with @defaultonly used in "
                       "table", entry)

    @staticmethod
    def _list_annotation(ref: ast.ActionRef, refs: dict, name: str) -> bool:
        """Whether the action's entry in the actions list carries ``@name``."""
        decl = getattr(ref.name, "decl", None)
        listed = refs.get(decl)
        return listed is not None and ast.annotation(listed, name) is not None

    def mask_or_range(self, item: ast.Binary, kt: T.Type, ctx: Ctx,
                      require_const: Callable[[ast.Expr], None]) -> None:
        """``v &&& m`` / ``lo .. hi`` in a select keyset or a table entry: both sides take
        the key's type and must be constants (``require_const`` words that error the way
        p4c does in each context)."""
        for side in (item.left, item.right):
            t = self.expr(side, ctx)
            b = base(t)
            if isinstance(b, T.EnumType) and b.underlying is not None:
                b = b.underlying
            if not isinstance(b, (T.BitsType, T.IntType)):
                raise fail(f"{item.op}: cannot be applied to expression '{describe(side)}' "
                           f"with type '{t}'", item)
            if not self.coerce(side, kt, ctx, quiet=True, keyset=True):
                raise fail(f"{describe(item)}: Cannot operate on values with different "
                           f"types {kt} and {side.type}", item)
            require_const(side)
        item.type = kt

    def entry_key(self, item: ast.Expr, k: ast.KeyElement, ctx: Ctx) -> None:
        kt = k.expr.type or T.DontCareType()
        if isinstance(item, (ast.DefaultExpr, ast.DontCareExpr, ast.DotsExpr)):
            item.type = kt
            return
        if isinstance(item, ast.Binary) and item.op in ("&&&", ".."):
            self.mask_or_range(item, kt, ctx, _constant_bound)
            if item.op == "&&&" and k.match_kind == "lpm":
                mask = item.right.const
                w = T.bit_width(kt) or 0
                inv = ~mask & ((1 << w) - 1)
                if inv & (inv + 1):
                    raise fail(f"{describe(item)} invalid mask for LPM key", item)
            return
        self.expr(item, ctx)
        if not self.coerce(item, kt, ctx, quiet=True, keyset=True):
            raise fail(f"{describe(item)}: entry key of type {item.type} does not match key "
                       f"{describe(k.expr)} of type {kt}", item)
        if item.const is ast.NOT_CONST:
            raise fail(f"{describe(item)}: table entry keys must be compile-time constants",
                       item)


def _constant_bound(side: ast.Expr) -> None:
    if side.const is ast.NOT_CONST:
        raise fail(f"{describe(side)}: Range boundaries must be a compile-time constants.",
                   side)
