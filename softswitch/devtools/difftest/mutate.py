"""Seeded mutations of P4_16 source text: small programs near the edges of the language.

A mutation changes one thing in a program's own text (includes stay as they are) and says
what it did; :func:`mutants` yields them deterministically from a seed, so a failing
mutant is reproduced by its ``(seed, index)``. Token-level, most mutants still parse and
the front end's *semantic* rules decide, where a front end written against samples errs:

``binop``      an operator becomes another (``==`` → ``<``, ``&`` → ``&&&``, ``+`` → ``++``)
``literal``    an integer literal becomes a value at or past the edges (0, 255, 256, -1,
               a width-prefixed or too-wide value)
``width``      ``bit<N>`` gets another width, becomes ``int<N>``, ``varbit<N>`` or ``bool``
``type``       a base type keyword becomes another (``bool``/``error``/``string``/``int``)
``match_kind`` a table key's match kind becomes another
``direction``  a parameter direction changes (or goes)
``const``      ``const`` goes, or appears before ``entries``/``default_action``
``drop``/``dup`` a statement or declaration goes / is doubled
``ident``      a name becomes another name of the program, or a table's ``.apply().hit``
``priority``   a table entry gains ``priority = N:``
``swap``       two call arguments change places
``cast``       a value in an expression gets a cast to another type
``slice``      a value in an expression gets a bit slice, in or out of its width
``index``      a constant index changes (past a stack's end, negative) or becomes
               ``.next``/``.last``/a run-time value; a ``.next``/``.last`` becomes an index
``typeargs``   a call gets explicit type arguments (right, wrong or too many)
``label``      a ``switch`` or ``select`` case label becomes another value or ``default``
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_TOKEN = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<comment>//[^\n]*|/\*.*?\*/)"
    r"|(?P<pp>(?<![^\n])[ \t]*\#[^\n]*)"
    r"|(?P<string>\"(?:\\.|[^\"\\\n])*\")"
    r"|(?P<number>\d+[ws](?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|[0-9_]+)"
    r"|0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|\d[\d_]*)"
    r"|(?P<ident>[A-Za-z_]\w*)"
    r"|(?P<op>\|\+\||\|-\||&&&|\.\.\.|\.\.|==|!=|<=|>=|&&|\|\||<<|\+\+|[-+*/%&|^~!<>=?:;,.(){}\[\]@#])"
    r"|(?P<other>.)",
    re.S,
)

KEYWORDS = frozenset({
    "abstract", "action", "apply", "bit", "bool", "break", "const", "continue", "control",
    "default", "else", "entries", "enum", "error", "exit", "extern", "false", "for", "header",
    "header_union", "if", "in", "inout", "int", "key", "list", "match_kind", "out", "package",
    "parser", "priority", "return", "select", "state", "string", "struct", "switch", "table",
    "this", "transition", "true", "tuple", "type", "typedef", "value_set", "varbit", "void",
    "actions", "default_action", "size", "accept", "reject", "start",
})
_OP_CLASSES = (
    ("==", "!=", "<", "<=", ">", ">="),
    ("+", "-", "*", "|+|", "|-|", "/", "%"),
    ("&", "|", "^", "++"),
    ("&&", "||"),
    ("&&&", ".."),
)
_BINOPS = frozenset(op for cls in _OP_CLASSES for op in cls) | {"<<"}
_MATCH_KINDS = ("exact", "ternary", "lpm", "range", "optional")
_DIRECTIONS = ("in", "out", "inout")
_BASE_TYPES = ("bool", "error", "string", "int")
_EDGE_VALUES = ("0", "1", "2", "7", "8", "255", "256", "65535", "65536", "(-1)", "8w255",
                "8w256", "4w15", "1w1", "16w0x1ff", "0x1ff", "32s5", "4s7")


@dataclass(frozen=True)
class Tok:
    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Mutant:
    """A mutated program: its text and what was done to the original."""

    text: str
    what: str


def tokens(text: str) -> list[Tok]:
    """The program's tokens (comments, whitespace and preprocessor lines dropped)."""
    out = []
    for m in _TOKEN.finditer(text):
        kind = m.lastgroup or "other"
        if kind in ("ws", "comment", "pp"):
            continue
        out.append(Tok(kind, m.group(), m.start(), m.end()))
    return out


def _replace(text: str, tok: Tok, new: str) -> str:
    return text[:tok.start] + new + text[tok.end:]


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


class _Mutator:
    def __init__(self, text: str, rng: random.Random) -> None:
        self.text = text
        self.rng = rng
        self.toks = tokens(text)

    def pick(self, pred: Callable[[int, Tok], bool]) -> int | None:
        cands = [i for i, t in enumerate(self.toks) if pred(i, t)]
        return self.rng.choice(cands) if cands else None

    def at(self, i: int, offset: int) -> Tok | None:
        j = i + offset
        return self.toks[j] if 0 <= j < len(self.toks) else None

    def done(self, tok: Tok, new: str, what: str) -> Mutant:
        line = _line_of(self.text, tok.start)
        return Mutant(_replace(self.text, tok, new), f"{what} (line {line})")

    # -- the mutations
    def binop(self) -> Mutant | None:
        def is_binop(i: int, t: Tok) -> bool:
            if t.text not in _BINOPS:
                return False
            if t.text in ("<", ">"):    # also type brackets: only between values
                prev, nxt = self.at(i, -1), self.at(i, 1)
                return bool(prev and nxt and prev.kind in ("ident", "number") and nxt.kind in (
                    "ident", "number") and prev.text not in KEYWORDS)
            return True
        i = self.pick(is_binop)
        if i is None:
            return None
        tok = self.toks[i]
        same = next((c for c in _OP_CLASSES if tok.text in c), ())
        pool = [o for o in same if o != tok.text] if same and self.rng.random() < 0.6 else [
            o for o in _BINOPS if o != tok.text]
        new = self.rng.choice(sorted(pool))
        return self.done(tok, new, f"binop {tok.text} -> {new}")

    def literal(self) -> Mutant | None:
        i = self.pick(lambda i, t: t.kind == "number")
        if i is None:
            return None
        tok = self.toks[i]
        new = self.rng.choice(_EDGE_VALUES)
        return self.done(tok, new, f"literal {tok.text} -> {new}")

    def width(self) -> Mutant | None:
        def is_sized(i: int, t: Tok) -> bool:
            nxt, num, close = self.at(i, 1), self.at(i, 2), self.at(i, 3)
            return (t.text in ("bit", "int", "varbit") and nxt is not None and nxt.text == "<"
                    and num is not None and num.kind == "number" and close is not None
                    and close.text == ">")
        i = self.pick(is_sized)
        if i is None:
            return None
        kw, num, close = self.toks[i], self.toks[i + 2], self.toks[i + 3]
        try:
            n = int(num.text, 0)
        except ValueError:
            n = 8
        choice = self.rng.random()
        if choice < 0.5:
            widths = [1, 2, max(1, n - 1), n + 1, 2 * n, 7, 9, 16, 32, 64]
            new = f"{kw.text}<{self.rng.choice(widths)}>"
        elif choice < 0.8:
            other = self.rng.choice([k for k in ("bit", "int", "varbit") if k != kw.text])
            new = f"{other}<{n}>"
        else:
            new = self.rng.choice(["bool", "int", "error"])
        span = Tok("type", self.text[kw.start:close.end], kw.start, close.end)
        return self.done(span, new, f"width {span.text} -> {new}")

    def type_keyword(self) -> Mutant | None:
        def is_base(i: int, t: Tok) -> bool:
            nxt = self.at(i, 1)
            return t.text in _BASE_TYPES and not (nxt is not None and nxt.text in ("<", "."))
        i = self.pick(is_base)
        if i is None:
            return None
        tok = self.toks[i]
        new = self.rng.choice([t for t in _BASE_TYPES + ("bit<8>", "bit<1>") if t != tok.text])
        return self.done(tok, new, f"type {tok.text} -> {new}")

    def match_kind(self) -> Mutant | None:
        def is_kind(i: int, t: Tok) -> bool:
            prev, nxt = self.at(i, -1), self.at(i, 1)
            return (t.text in _MATCH_KINDS and prev is not None and prev.text == ":"
                    and nxt is not None and nxt.text in (";", "@"))
        i = self.pick(is_kind)
        if i is None:
            return None
        tok = self.toks[i]
        new = self.rng.choice([k for k in _MATCH_KINDS if k != tok.text])
        return self.done(tok, new, f"match_kind {tok.text} -> {new}")

    def direction(self) -> Mutant | None:
        i = self.pick(lambda i, t: t.text in _DIRECTIONS)
        if i is None:
            return None
        tok = self.toks[i]
        new = self.rng.choice([d for d in _DIRECTIONS + ("",) if d != tok.text])
        return self.done(tok, new, f"direction {tok.text} -> {new or 'none'}")

    def const(self) -> Mutant | None:
        if self.rng.random() < 0.5:
            i = self.pick(lambda i, t: t.text == "const")
            if i is not None:
                return self.done(self.toks[i], "", "const removed")
        i = self.pick(lambda i, t: t.text in ("entries", "default_action") and not (
            (p := self.at(i, -1)) is not None and p.text == "const"))
        if i is None:
            return None
        tok = self.toks[i]
        return self.done(tok, "const " + tok.text, f"const added before {tok.text}")

    def _statement(self) -> tuple[int, int] | None:
        """The span of a random ``;``-terminated statement or declaration."""
        i = self.pick(lambda i, t: t.text == ";")
        if i is None:
            return None
        j, depth = i - 1, 0
        while j >= 0:
            t = self.toks[j].text
            if t in (")", "]"):
                depth += 1
            elif t in ("(", "["):
                depth -= 1
            elif depth == 0 and t in (";", "{", "}"):
                break
            j -= 1
        return self.toks[j + 1].start, self.toks[i].end

    def drop(self) -> Mutant | None:
        span = self._statement()
        if span is None:
            return None
        a, b = span
        return Mutant(self.text[:a] + self.text[b:],
                      f"drop '{_short(self.text[a:b])}' (line {_line_of(self.text, a)})")

    def dup(self) -> Mutant | None:
        span = self._statement()
        if span is None:
            return None
        a, b = span
        chunk = self.text[a:b]
        return Mutant(self.text[:b] + " " + chunk + self.text[b:],
                      f"dup '{_short(chunk)}' (line {_line_of(self.text, a)})")

    def ident(self) -> Mutant | None:
        names = sorted({t.text for t in self.toks if t.kind == "ident" and t.text not in KEYWORDS})
        tables = sorted({self.toks[k + 1].text for k, t in enumerate(self.toks[:-1])
                         if t.text == "table" and self.toks[k + 1].kind == "ident"})

        def in_expression(i: int, t: Tok) -> bool:
            prev, nxt = self.at(i, -1), self.at(i, 1)
            return (t.kind == "ident" and t.text not in KEYWORDS and prev is not None
                    and prev.text in ("(", ",", "=", "==", "!=", "&&", "||", "!")
                    and nxt is not None and nxt.text in (")", ",", ";", "==", "!=", "&&", "||"))
        if tables and self.rng.random() < 0.3:
            i = self.pick(in_expression)
            if i is not None:
                tok = self.toks[i]
                new = f"{self.rng.choice(tables)}.apply().{self.rng.choice(['hit', 'miss'])}"
                return self.done(tok, new, f"ident {tok.text} -> {new}")
        i = self.pick(lambda i, t: t.kind == "ident" and t.text not in KEYWORDS)
        if i is None or len(names) < 2:
            return None
        tok = self.toks[i]
        new = self.rng.choice([n for n in names if n != tok.text])
        return self.done(tok, new, f"ident {tok.text} -> {new}")

    def priority(self) -> Mutant | None:
        starts = []
        for k, t in enumerate(self.toks):
            if t.text != "entries":
                continue
            depth = 0
            for j in range(k + 1, len(self.toks)):
                x = self.toks[j].text
                if x == "{":
                    depth += 1
                    if depth == 1:
                        starts.append(j + 1)
                elif x == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif x == ";" and depth == 1 and j + 1 < len(self.toks) and \
                        self.toks[j + 1].text != "}":
                    starts.append(j + 1)
        if not starts:
            return None
        j = self.rng.choice(starts)
        tok = self.toks[j]
        n = self.rng.choice([0, 1, 2, 5, 10, 100])
        new = f"priority={n}: {tok.text}"
        return self.done(tok, new, f"priority={n} on an entry")

    def swap(self) -> Mutant | None:
        def simple_pair(i: int, t: Tok) -> bool:
            a, b = self.at(i, -1), self.at(i, 1)
            before, after = self.at(i, -2), self.at(i, 2)
            return (t.text == "," and a is not None and b is not None and before is not None
                    and after is not None and a.kind in ("ident", "number")
                    and b.kind in ("ident", "number") and before.text in ("(", ",")
                    and after.text in (")", ","))
        i = self.pick(simple_pair)
        if i is None:
            return None
        a, b = self.toks[i - 1], self.toks[i + 1]
        text = self.text[:a.start] + b.text + self.text[a.end:b.start] + a.text + \
            self.text[b.end:]
        return Mutant(text, f"swap {a.text}, {b.text} (line {_line_of(self.text, a.start)})")

    def _value_at(self, i: int, t: Tok) -> bool:
        """An identifier or number standing alone as an operand in an expression."""
        prev, nxt = self.at(i, -1), self.at(i, 1)
        return (t.kind in ("ident", "number") and t.text not in KEYWORDS and prev is not None
                and prev.text in ("=", "(", ",", "+", "-", "&", "|", "^", "==", "!=", "<=",
                                  ">=", "return")
                and nxt is not None and nxt.text in (";", ")", ",", "+", "-", "&", "|", "^",
                                                     "==", "!=", "<=", ">="))

    def cast(self) -> Mutant | None:
        i = self.pick(self._value_at)
        if i is None:
            return None
        tok = self.toks[i]
        to = self.rng.choice(_CAST_TYPES)
        return self.done(tok, f"({to}){tok.text}", f"cast {tok.text} to {to}")

    def slice(self) -> Mutant | None:
        i = self.pick(self._value_at)
        if i is None:
            return None
        tok = self.toks[i]
        hi, lo = self.rng.choice(_SLICES)
        return self.done(tok, f"{tok.text}[{hi}:{lo}]", f"slice {tok.text}[{hi}:{lo}]")

    def index(self) -> Mutant | None:
        def at_index(i: int, t: Tok) -> bool:
            prev, nxt = self.at(i, -1), self.at(i, 1)
            if t.text in ("next", "last", "lastIndex") and prev is not None and \
                    prev.text == ".":
                return True
            return (t.kind == "number" and prev is not None and prev.text == "["
                    and nxt is not None and nxt.text == "]")
        i = self.pick(at_index)
        if i is None:
            return None
        tok = self.toks[i]
        if tok.kind == "number":
            new = self.rng.choice(("0", "1", "2", "3", "5", "(-1)", "32w1", "meta_index"))
            if new == "meta_index":
                return self._runtime_index(i)
            return self.done(tok, new, f"index [{tok.text}] -> [{new}]")
        dot = self.toks[i - 1]
        new = self.rng.choice(("[0]", "[1]", ".next", ".last", ".lastIndex", "[7]"))
        span = Tok("member", self.text[dot.start:tok.end], dot.start, tok.end)
        return self.done(span, new, f"index .{tok.text} -> {new}")

    def _runtime_index(self, i: int) -> Mutant | None:
        """``[N]`` becomes ``[x]`` for a name of the program that may hold a number."""
        names = sorted({t.text for k, t in enumerate(self.toks[:-2]) if t.kind == "ident"
                        and self.toks[k + 1].text == "." and self.toks[k + 2].kind == "ident"
                        and t.text not in KEYWORDS})
        if not names:
            return None
        tok = self.toks[i]
        k = next(k for k, t in enumerate(self.toks[:-2]) if t.text in names
                 and self.toks[k + 1].text == "." and self.toks[k + 2].kind == "ident")
        new = f"{self.toks[k].text}.{self.toks[k + 2].text}"
        return self.done(tok, new, f"index [{tok.text}] -> [{new}]")

    def typeargs(self) -> Mutant | None:
        def call_name(i: int, t: Tok) -> bool:
            nxt, prev = self.at(i, 1), self.at(i, -1)
            return (t.kind == "ident" and t.text not in KEYWORDS and nxt is not None
                    and nxt.text == "(" and prev is not None and prev.text in (
                        ";", "{", "}", "=", "(", ",", ".", "return"))
        i = self.pick(call_name)
        if i is None:
            return None
        tok = self.toks[i]
        args = self.rng.choice(_TYPE_ARGS)
        return self.done(tok, f"{tok.text}{args}", f"typeargs {tok.text}{args}")

    def label(self) -> Mutant | None:
        def case_label(i: int, t: Tok) -> bool:
            nxt, prev = self.at(i, 1), self.at(i, -1)
            return (nxt is not None and nxt.text == ":" and prev is not None
                    and prev.text in ("{", "}", ";", ":") and t.kind in ("ident", "number")
                    and t.text not in ("key", "actions", "size", "default_action", "entries",
                                       "implementation", "counters", "meters", "support_timeout"))
        i = self.pick(case_label)
        if i is None:
            return None
        tok = self.toks[i]
        names = sorted({t.text for t in self.toks if t.kind == "ident" and t.text not in KEYWORDS})
        new = self.rng.choice(["default", "_", "0", "1", "256", "8w1", "true"]
                              + self.rng.sample(names, min(3, len(names))))
        return self.done(tok, new, f"label {tok.text} -> {new}")


_CAST_TYPES = ("bit<8>", "bit<1>", "bit<16>", "bit<32>", "int<8>", "int<16>", "bool", "int",
               "bit<9>", "bit<48>")
_SLICES = (("0", "0"), ("7", "0"), ("3", "0"), ("15", "8"), ("8", "0"), ("31", "0"),
           ("0", "1"), ("63", "0"), ("47", "40"))
_TYPE_ARGS = ("<bit<8>>", "<bit<16>>", "<bit<8>, bit<8>>", "<bool>", "<int>", "<bit<32>>",
              "<_>")

MUTATIONS: tuple[str, ...] = ("binop", "literal", "width", "type_keyword", "match_kind",
                              "direction", "const", "drop", "dup", "ident", "priority", "swap",
                              "cast", "slice", "index", "typeargs", "label")
# How often each is tried: the semantic ones (types, tables) more than the others.
_WEIGHTS = (3, 3, 3, 1, 2, 1, 2, 2, 1, 3, 1, 1, 2, 2, 2, 1, 1)


def mutate(text: str, rng: random.Random, steps: int = 1) -> Mutant | None:
    """``steps`` mutations of ``text`` (None when no mutation applies)."""
    what = []
    for _ in range(steps):
        m = _Mutator(text, rng)
        result = None
        for _attempt in range(8):
            name = rng.choices(MUTATIONS, _WEIGHTS)[0]
            result = getattr(m, name)()
            if result is not None and result.text != text:
                break
            result = None
        if result is None:
            return None
        text = result.text
        what.append(result.what)
    return Mutant(text, "; ".join(what))


def mutants(sources: list[tuple[str, str]], seed: int, count: int) -> Iterator[
        tuple[int, str, Mutant]]:
    """``count`` mutants of ``sources`` (name, text), deterministic in ``seed``: yields
    ``(index, source name, mutant)``."""
    rng = random.Random(seed)
    index = 0
    attempts = 0
    while index < count and attempts < count * 10:
        attempts += 1
        name, text = rng.choice(sources)
        m = mutate(text, rng, steps=1 if rng.random() < 0.8 else 2)
        if m is None:
            continue
        yield index, name, m
        index += 1


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n - 1] + "…"
