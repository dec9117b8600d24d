"""Run-time arithmetic of the lowering against the front end's constant folder.

The same random expressions are compiled twice: once over header fields (evaluated
by the generated Python code per packet) and once over literals (folded at compile
time by ``softswitch.frontend.consteval``). The two are independent implementations
of P4's width/sign rules, so any disagreement is a bug in one of them.
"""

from __future__ import annotations

import random

from programs import v1model_program

from softswitch.v1model.fast_switch import load_switch_file

OPERANDS = {  # name -> (width, signed)
    "a8": (8, False), "b8": (8, False), "c8": (8, True), "d8": (8, True),
    "a16": (16, False), "c16": (16, True),
}
BINARY = ["+", "-", "*", "&", "|", "^", "|+|", "|-|"]
COMPARE = ["==", "!=", "<", ">", "<=", ">="]


def literal(value: int, width: int, signed: bool) -> str:
    return f"{width}{'s' if signed else 'w'}{value}" if value >= 0 else \
        f"-{width}s{-value}"


def gen(rng: random.Random, names: list[str], depth: int = 0) -> tuple[str, int, bool]:
    """A random expression over operands of one (width, signedness)."""
    a = rng.choice(names)
    w, s = OPERANDS[a]
    if depth > 1 or rng.random() < 0.3:
        return a, w, s
    kind = rng.random()
    left, _, _ = gen(rng, names, depth + 1)
    right, _, _ = gen(rng, names, depth + 1)
    if kind < 0.6:
        return f"({left} {rng.choice(BINARY)} {right})", w, s
    if kind < 0.7:
        return f"({left} << {rng.randrange(0, w + 2)})", w, s
    if kind < 0.8:
        return f"({left} >> {rng.randrange(0, w + 2)})", w, s
    if kind < 0.9:
        return f"(-{left})" if rng.random() < 0.5 else f"(~{left})", w, s
    cmp = rng.choice(COMPARE)
    return f"(({left} {cmp} {right}) ? {literal(1, w, s)} : {literal(0, w, s)})", w, s


def program(exprs: list[tuple[str, int, bool]]) -> str:
    outs = "\n".join(f"    bit<32> o{i};" for i in range(len(exprs)))
    assigns = []
    for i, (e, w, s) in enumerate(exprs):
        conv = f"(bit<32>)((bit<{w}>)({e}))" if s else f"(bit<32>)({e})"
        assigns.append(f"        h.o.o{i} = {conv};")
    fields = "\n".join(f"    {'int' if s else 'bit'}<{w}> {n};"
                       for n, (w, s) in OPERANDS.items())
    return v1model_program(
        types=f"header in_t {{\n{fields}\n}}\nheader out_t {{\n{outs}\n}}",
        headers="in_t i; out_t o;", extract=["h.i"],
        ingress=f"""
    apply {{
        h.o.setValid();
{chr(10).join(assigns)}
        sm.egress_spec = 1;
    }}
""",
        emit=["h.o"])


def substitute(expr: str, repl: dict[str, str]) -> str:
    for name in sorted(OPERANDS, key=len, reverse=True):
        expr = expr.replace(name, repl[name])
    return expr


def with_literals(expr: str, values: dict[str, int]) -> str:
    return substitute(expr, {n: f"({literal(values[n], *OPERANDS[n])})" for n in OPERANDS})


def with_fields(expr: str) -> str:
    return substitute(expr, {n: f"h.i.{n}" for n in OPERANDS})


def test_runtime_arithmetic_matches_constant_folding(tmp_path):
    rng = random.Random(20240521)
    groups = [["a8", "b8"], ["c8", "d8"], ["a16"], ["c16"]]
    exprs = [gen(rng, rng.choice(groups)) for _ in range(60)]
    for trial in range(3):
        values = {}
        raw = b""
        for name, (w, s) in OPERANDS.items():
            v = rng.randrange(-(1 << (w - 1)), 1 << (w - 1)) if s else rng.randrange(1 << w)
            values[name] = v
            raw += (v & ((1 << w) - 1)).to_bytes(w // 8, "big")
        runtime = tmp_path / f"rt{trial}.p4"
        runtime.write_text(program([(with_fields(e), w, s) for e, w, s in exprs]))
        folded = tmp_path / f"cf{trial}.p4"
        folded.write_text(program([(with_literals(e, values), w, s) for e, w, s in exprs]))
        (got,) = load_switch_file(runtime).inject(0, raw)
        (want,) = load_switch_file(folded).inject(0, raw)
        for i, (e, _, _) in enumerate(exprs):
            g = got.data[4 * i:4 * i + 4].hex()
            c = want.data[4 * i:4 * i + 4].hex()
            assert g == c, f"{e} with {values}: run time {g}, constant folding {c}"
