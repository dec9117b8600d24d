"""Action primitives as P4 statements, with ``_jump``/``_jump_if_zero`` structured back
into ``if``/``else`` and loops.

Each supported primitive maps to the v1model statement p4c lowered into it
(``assign`` → ``=``, ``add_header`` → ``setValid()``, ``register_read`` →
``r.read(…)``, ``modify_field_with_hash_based_offset`` → ``hash(…)``, …). A primitive
outside :data:`HANDLERS` is refused naming the action and the primitive; jumps that do
not form an ``if``/``else`` are refused likewise.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from softswitch.bmv2json import externs
from softswitch.bmv2json.context import BOOL, P4Text, Ty
from softswitch.bmv2json.exprs import Translator, convert, hexstr
from softswitch.bmv2json.reader import JsonNode

INDEX = Ty("bit", 32)
_TEMPS = itertools.count()


class Body:
    """Statements being built for one action (or parser/deparser), with its temporaries."""

    def __init__(self, tr: Translator) -> None:
        self.tr = tr
        self.temps: list[str] = []
        self.end = -1   # where a jump returns from the action

    def temp(self, ty: Ty) -> str:
        name = f"tmp_{next(_TEMPS)}"
        self.temps.append(f"{ty.kind}<{ty.width}> {name};")
        return name

    def params(self, prim: dict, count: int | None = None) -> list:
        ps = prim.get("parameters")
        if not isinstance(ps, list) or (count is not None and len(ps) < count):
            raise self.tr.error(f"primitive {prim.get('op')!r}: expected {count} parameters")
        return ps

    def const(self, raw: object) -> int:
        e = self.tr(raw)
        if e.value is None:
            raise self.tr.error(f"expected a constant, got {raw!r}")
        return e.value


def _assign(b: Body, p: list) -> list[str]:
    dest, src = b.tr(p[0]), b.tr(p[1])
    return [f"{dest.code} = {convert(src, dest.ty)};"]


def _header_op(method: str) -> Callable[[Body, list], list[str]]:
    def emit(b: Body, p: list) -> list[str]:
        return [f"{b.tr(p[0]).code}.{method}();"]
    return emit


def _stack_op(method: str) -> Callable[[Body, list], list[str]]:
    def emit(b: Body, p: list) -> list[str]:
        return [f"{b.tr(p[0]).code}.{method}({b.const(p[1])});"]
    return emit


def _mark_to_drop(b: Body, p: list) -> list[str]:
    return ["mark_to_drop(sm);"]


def _drop(b: Body, p: list) -> list[str]:
    return ["sm.egress_spec = 9w511;"]


def _exit(b: Body, p: list) -> list[str]:
    return ["exit;"]


def _no_op(b: Body, p: list) -> list[str]:
    return []


def _field_list_id(b: Body, raw: object) -> int | None:
    if isinstance(raw, dict) and raw.get("type") in ("hexstr", "field_list"):
        value = raw.get("value")
        return hexstr(b.tr.node, value) if isinstance(value, str) else int(value)
    raise b.tr.error(f"expected a field list id, got {raw!r}")


def _clone(kind: str) -> Callable[[Body, list], list[str]]:
    def emit(b: Body, p: list) -> list[str]:
        session = convert(b.tr(p[0]), INDEX)
        fl = _field_list_id(b, p[1]) if len(p) > 1 else 0
        if fl:
            return [f"clone_preserving_field_list(CloneType.{kind}, {session}, 8w{fl});"]
        return [f"clone(CloneType.{kind}, {session});"]
    return emit


def _repeat(name: str) -> Callable[[Body, list], list[str]]:
    def emit(b: Body, p: list) -> list[str]:
        fl = _field_list_id(b, p[0]) if p else 0
        return [f"{name}_preserving_field_list(8w{fl or 0});"]
    return emit


def _truncate(b: Body, p: list) -> list[str]:
    return [f"truncate({convert(b.tr(p[0]), INDEX)});"]


def _count(b: Body, p: list) -> list[str]:
    name = b.tr.ctx.extern(b.tr.node, p[0].get("value"), "counter")
    return [f"{name}.count({convert(b.tr(p[1]), INDEX)});"]


def _execute_meter(b: Body, p: list) -> list[str]:
    name = b.tr.ctx.extern(b.tr.node, p[0].get("value"), "meter")
    dest = b.tr(p[2])
    return [f"{name}.execute_meter({convert(b.tr(p[1]), INDEX)}, {dest.code});"]


def _register_read(b: Body, p: list) -> list[str]:
    name = b.tr.ctx.extern(b.tr.node, p[1].get("value"), "register")
    dest, ty = b.tr(p[0]), externs.register_ty(b.tr.ctx, p[1].get("value"))
    index = convert(b.tr(p[2]), INDEX)
    if dest.ty == ty:
        return [f"{name}.read({dest.code}, {index});"]
    tmp = b.temp(ty)
    return [f"{name}.read({tmp}, {index});", f"{dest.code} = {convert(P4Text(tmp, ty), dest.ty)};"]


def _register_write(b: Body, p: list) -> list[str]:
    name = b.tr.ctx.extern(b.tr.node, p[0].get("value"), "register")
    ty = externs.register_ty(b.tr.ctx, p[0].get("value"))
    return [f"{name}.write({convert(b.tr(p[1]), INDEX)}, {convert(b.tr(p[2]), ty)});"]


def _random(b: Body, p: list) -> list[str]:
    dest = b.tr(p[0])
    lo, hi = convert(b.tr(p[1]), dest.ty), convert(b.tr(p[2]), dest.ty)
    return [f"random({dest.code}, {lo}, {hi});"]


def _hash(b: Body, p: list) -> list[str]:
    dest = b.tr(p[0])
    base = convert(b.tr(p[1]), dest.ty)
    algo, data = externs.calculation(b.tr, p[2].get("value"))
    size = b.tr(p[3])
    max_ty = Ty("bit", max(64, size.ty.width))
    return [f"hash({dest.code}, HashAlgorithm.{algo}, {base}, {data}, {convert(size, max_ty)});"]


def _digest(b: Body, p: list) -> list[str]:
    receiver = convert(b.tr(p[0]), INDEX)
    type_name, data = externs.learn_list(b.tr, _field_list_id(b, p[1]))
    return [f"digest<{type_name}>({receiver}, {data});"]


def _log_msg(b: Body, p: list) -> list[str]:
    text = p[0].get("value") if isinstance(p[0], dict) else None
    if not isinstance(text, str):
        raise b.tr.error("log_msg without a format string")
    args = p[1].get("value", []) if len(p) > 1 and isinstance(p[1], dict) else []
    if not args:
        return [f"log_msg({_string(text)});"]
    values = ", ".join(b.tr(a).code for a in args)
    return [f"log_msg({_string(text)}, {{{values}}});"]


def _string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _check(name: str) -> Callable[[Body, list], list[str]]:
    def emit(b: Body, p: list) -> list[str]:
        return [f"{name}({convert(b.tr(p[0]), BOOL)});"]
    return emit


HANDLERS: dict[str, tuple[int, Callable[[Body, list], list[str]]]] = {
    "assign": (2, _assign), "modify_field": (2, _assign), "assign_VL": (2, _assign),
    "assign_header": (2, _assign), "assign_header_stack": (2, _assign),
    "assign_union": (2, _assign), "assign_union_stack": (2, _assign),
    "add_header": (1, _header_op("setValid")), "remove_header": (1, _header_op("setInvalid")),
    "push": (2, _stack_op("push_front")), "pop": (2, _stack_op("pop_front")),
    "mark_to_drop": (0, _mark_to_drop), "drop": (0, _drop), "exit": (0, _exit),
    "no_op": (0, _no_op),
    "clone_ingress_pkt_to_egress": (1, _clone("I2E")),
    "clone_egress_pkt_to_egress": (1, _clone("E2E")),
    "resubmit": (0, _repeat("resubmit")), "recirculate": (0, _repeat("recirculate")),
    "truncate": (1, _truncate), "count": (2, _count), "execute_meter": (3, _execute_meter),
    "register_read": (3, _register_read), "register_write": (3, _register_write),
    "modify_field_rng_uniform": (3, _random),
    "modify_field_with_hash_based_offset": (4, _hash),
    "generate_digest": (2, _digest), "log_msg": (1, _log_msg),
    "assert": (1, _check("assert")), "assume": (1, _check("assume")),
}


def statements(b: Body, prims: list, where: JsonNode) -> list[str]:
    """The statements of a primitive list (``where`` names the object holding it)."""
    b.end = len(prims)
    return _block(b, prims, 0, len(prims), where)


def _jump_target(b: Body, prim: dict, lo: int, hi: int) -> int:
    ps = b.params(prim, 1)
    target = b.const(ps[-1])
    if not lo < target <= hi:
        raise b.tr.error(f"{prim['op']} to {target} leaves its block")
    return target


def _loops_to(b: Body, prim: object, start: int) -> bool:
    """``prim`` is a ``_jump`` back to ``start`` (the test of a loop)."""
    if not (isinstance(prim, dict) and prim.get("op") == "_jump"):
        return False
    return b.const(b.params(prim, 1)[-1]) == start


def _block(b: Body, prims: list, lo: int, hi: int, where: JsonNode,
           loop: tuple[int, int] | None = None) -> list[str]:
    """Statements of ``prims[lo:hi]``; ``loop`` is (test, exit) of the enclosing loop."""
    out: list[str] = []
    i = lo
    while i < hi:
        prim = prims[i]
        op = prim.get("op") if isinstance(prim, dict) else None
        if op == "_jump_if_zero":
            lines, i = _branch(b, prims, i, hi, where, loop)
            out += lines
            continue
        if op == "_jump":
            out.append(_leave(b, prim, i, where, loop))
            i += 1
            continue
        handler = HANDLERS.get(op) if isinstance(op, str) else None
        if handler is None:
            raise where.error(f"primitive {op!r} is not supported")
        count, emit = handler
        out += emit(b, b.params(prim, count))
        i += 1
    return out


def _leave(b: Body, prim: dict, i: int, where: JsonNode, loop: tuple[int, int] | None) -> str:
    """A ``_jump`` out of its block: ``break``, ``continue`` or ``return``."""
    target = b.const(b.params(prim, 1)[-1])
    if loop is not None and target == loop[1]:
        return "break;"
    if loop is not None and target == loop[0]:
        return "continue;"
    if target == b.end:
        return "return;"
    raise where.error(f"primitives[{i}]: a jump outside an if/else or loop is not supported")


def _exits(b: Body, prim: object, loop: tuple[int, int] | None, hi: int) -> bool:
    """``prim`` jumps out of its loop (or, past the block's end, out of the action)."""
    if not (isinstance(prim, dict) and prim.get("op") == "_jump"):
        return False
    target = b.const(b.params(prim, 1)[-1])
    return (loop is not None and target in loop) or (target > hi and target == b.end)


def _loop(b: Body, prims: list, i: int, exit_: int, cond: str, where: JsonNode) -> list[str]:
    """A loop tested at ``i``: the statements after the last forward jump target inside it
    are its update (what ``continue`` jumps to), the rest its body."""
    jumps = [(pos, b.const(b.params(prims[pos], 1)[-1])) for pos in range(i + 1, exit_ - 1)
             if isinstance(prims[pos], dict) and prims[pos].get("op") == "_jump"]
    inner = [t for pos, t in jumps if pos < t < exit_ - 1]
    update_at = max(inner, default=exit_ - 1)
    body = _block(b, prims, i + 1, update_at, where, (update_at, exit_))
    update = _block(b, prims, update_at, exit_ - 1, where)
    if any(not s.endswith(";") or s.startswith(("if", "for", "}")) for s in update):
        raise where.error(f"primitives[{i}]: a loop whose update is not simple statements "
                          "is not supported")
    clause = ", ".join(s[:-1] for s in update)
    return [f"for (; {cond}; {clause}) {{", *("    " + s for s in body), "}"]


def _branch(b: Body, prims: list, i: int, hi: int, where: JsonNode,
            loop: tuple[int, int] | None) -> tuple[list[str], int]:
    """The loop or ``if``/``else`` a ``_jump_if_zero`` at ``i`` opens, and where it ends."""
    prim = prims[i]
    cond = convert(b.tr(b.params(prim, 2)[0]), BOOL)
    if b.const(b.params(prim, 2)[-1]) == b.end and b.end > hi:
        return [f"if (!({cond})) {{", "    return;", "}"], i + 1
    target = _jump_target(b, prim, i, hi)
    last = prims[target - 1] if target - 1 > i else None
    if _loops_to(b, last, i):
        return _loop(b, prims, i, target, cond, where), target
    end = target
    other: list[str] = []
    if isinstance(last, dict) and last.get("op") == "_jump" and not _exits(b, last, loop, hi):
        end = _jump_target(b, last, target - 1, hi)
        then = _block(b, prims, i + 1, target - 1, where, loop)
        other = _block(b, prims, target, end, where, loop)
    else:
        then = _block(b, prims, i + 1, target, where, loop)
    lines = [f"if ({cond}) {{", *("    " + s for s in then)]
    lines += ["} else {", *("    " + s for s in other), "}"] if other else ["}"]
    return lines, end
