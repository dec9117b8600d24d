"""Recursive-descent parser for P4_16 (spec 1.2.x) producing :mod:`softswitch.frontend.ast`.

P4's grammar is not context free without knowing which identifiers name types:
``a < b`` versus ``T<bit<8>>``, ``(T) e`` versus ``(e)``, ``T x;`` versus ``x = …;``.
Like p4c (whose lexer returns TYPE_IDENTIFIER for declared types) we keep scoped type
names — typedefs, headers, structs, enums, externs, parser/control/package types, type
parameters; parameters, variables, constants and instances hide them in inner scopes —
and consult them at those decision points. Elsewhere the parser accepts any identifier
as a type name (``extern T f<T>(…)`` uses ``T`` before declaring it).

Conventions for later passes:

* A declared type name used as an expression becomes :class:`ast.TypeNameExpr`, so
  ``E.A`` is ``Member(TypeNameExpr(NamedTypeRef("E")), "A")``, ``error.X`` is
  ``Member(TypeNameExpr(ErrorTypeRef()), "X")`` and a constructor call
  ``Register<bit<8>>(16)`` is ``Call(TypeNameExpr(NamedTypeRef("Register", [bit<8>])))``.
* ``f<bit<8>>(x)`` on a non-type keeps its type arguments in ``Call.type_args``.
* Compound assignments ``a op= b`` become ``AssignStmt(a, Binary(op, copy(a), b))``.
* Keysets: tuples are :class:`ast.ListExpr`, masks/ranges ``Binary("&&&"/"..")``.
* ``e[lo +: w]`` is ``Slice(e, lo + w - 1, lo)``; a C-style ``T a[N]`` field or variable
  has type ``T[N]``; ``typedef header H {…} T;`` yields the header and the typedef.
* ``...`` is :class:`ast.DotsExpr` (``("...", DotsExpr)`` as a struct expression field).

The first syntax error raises :class:`P4Error` at the offending token.
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend import ast
from softswitch.frontend.lexer import Token, tokenize
from softswitch.frontend.preprocess import Preprocessed, preprocess, preprocess_text

T = TypeVar("T")

# Binary operator precedence, loosest first (p4c's p4parser.ypp %left order). Note that
# P4, unlike C, binds & ^ | tighter than the comparisons.
_BINARY_PREC: dict[str, int] = {
    "||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4,
    "|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8,
    "++": 9, "+": 9, "-": 9, "|+|": 9, "|-|": 9, "*": 10, "/": 10, "%": 10,
}
_COMPOUND_ASSIGN = {
    "+=": "+", "-=": "-", "*=": "*", "/=": "/", "%=": "%", "&=": "&", "|=": "|",
    "^=": "^", "<<=": "<<", "|+|=": "|+|", "|-|=": "|-|",
}
_BUILTIN_TYPE_KINDS = frozenset({"bit", "int", "varbit", "bool", "string", "void", "tuple",
                                 "error", "match_kind"})
_DIRECTIONS = frozenset({"in", "out", "inout"})
# Annotations whose bodies p4c's ParseAnnotations pass parses (standard handlers).
_EMPTY_ANNOTATIONS = frozenset({
    "atomic", "defaultonly", "hidden", "likely", "noSideEffects", "optional", "pure",
    "tableonly", "unlikely", "persistent", "disable_optimization", "unroll", "nounroll",
})
_SINGLE_EXPR_ANNOTATIONS = frozenset({"name", "deprecated", "noWarn", "length", "match"})
_EXPR_LIST_ANNOTATIONS = frozenset({"synchronous", "field_list"})
# Deep expression nesting in real programs must not hit Python's default limit.
_RECURSION_LIMIT = 20000


class _Backtrack(Exception):
    """Internal: a speculative parse did not match; never escapes the parser."""


class Parser:
    """Parses one token list. ``scopes`` maps, per nesting level, each declared name to
    whether it is a type; like p4c, a parameter/variable/constant/instance declared in an
    inner scope hides a type of the same name."""

    def __init__(self, tokens: list[Token], text: str,
                 scopes: list[dict[str, bool]] | None = None) -> None:
        self.toks = tokens
        self.i = 0
        self.text = text
        self.scopes: list[dict[str, bool]] = scopes if scopes is not None else [{}]

    # ------------------------------------------------------------------ tokens

    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    def advance(self) -> Token:
        t = self.toks[self.i]
        if t.kind != "EOF":
            self.i += 1
        return t

    def at(self, kind: str) -> bool:
        return self.toks[self.i].kind == kind

    def at_word(self, word: str) -> bool:
        """A contextual keyword (lexed as an identifier) such as ``state`` or ``apply``."""
        t = self.toks[self.i]
        return t.kind == "ID" and t.text == word

    def accept(self, kind: str) -> Token | None:
        if self.toks[self.i].kind == kind:
            return self.advance()
        return None

    def expect(self, kind: str, what: str | None = None) -> Token:
        if self.toks[self.i].kind == kind:
            return self.advance()
        raise self.error(what or f"`{kind}`")

    def expect_name(self) -> Token:
        return self.expect("ID", "an identifier")

    def error(self, expected: str, tok: Token | None = None) -> P4Error:
        t = tok or self.tok
        return P4Error(f"syntax error, unexpected {t.describe()}, expected {expected}", t.loc)

    # ------------------------------------------------------------- type names

    def is_type_name(self, name: str) -> bool:
        for s in reversed(self.scopes):
            kind = s.get(name)
            if kind is not None:
                return kind
        return False

    def declare_type(self, name: str) -> None:
        self.scopes[-1][name] = True

    def declare_object(self, name: str) -> None:
        """A non-type name (parameter, variable, constant, instance, function)."""
        self.scopes[-1][name] = False

    @contextmanager
    def scope(self) -> Iterator[None]:
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def speculate(self, fn: Callable[[], T]) -> T | None:
        """Run ``fn``; on a syntax error restore the position and return None."""
        saved = self.i
        try:
            return fn()
        except (P4Error, _Backtrack):
            self.i = saved
            return None

    # ------------------------------------------------------------ annotations

    def parse_annotations(self) -> list[ast.Annotation]:
        annos: list[ast.Annotation] = []
        while self.at("@"):
            annos.append(self.parse_annotation())
        return annos

    def parse_annotation(self) -> ast.Annotation:
        """``@name``, ``@name(…)`` (free-form tokens; parsed further when they form
        expressions), ``@name[…]`` (structured) or ``@pragma name …``."""
        at = self.expect("@")
        name_tok = self.advance()
        if not (name_tok.kind == "ID" or name_tok.text.isidentifier()):
            raise self.error("an annotation name", name_tok)
        if name_tok.text == "pragma":
            return self.parse_pragma(at)
        anno = ast.Annotation(name_tok.text, loc=at.loc)
        if self.at("("):
            body = self.balanced("(", ")")
            anno.body = self.slice_text(body)
            anno.exprs = self.parse_known_body(anno, body)
            if anno.exprs is None:
                anno.kv = self.parse_body_kv(body[1:-1])  # @pkginfo(name = "x", …)
        elif self.at("["):
            body = self.balanced("[", "]")
            anno.body = self.slice_text(body)
            anno.structured = True
            inner = body[1:-1]
            if len(inner) >= 2 and inner[0].kind == "ID" and inner[1].kind == "=":
                anno.kv = self.parse_structured(inner, kv=True)
            else:
                anno.exprs = self.parse_structured(inner, kv=False)
        return anno

    def parse_structured(self, toks: list[Token], kv: bool) -> Any:
        """``@name[k = v, …]`` or ``@name[e, …]``: p4c parses these strictly, so an error
        is reported at the offending token (no free-form fallback)."""
        sub = self.sub_parser(toks)
        if kv:
            pairs: dict[str, ast.Expr] = {}
            while not sub.at("EOF"):
                key = sub.expect_name()
                if key.text in pairs:
                    raise duplicate(key.text, key.loc)
                sub.expect("=")
                pairs[key.text] = sub.parse_expr()
                if not sub.accept(","):
                    break
            if not sub.at("EOF"):
                raise sub.error("`,` or `]`")
            return pairs
        items: list[ast.Expr] = []
        while not sub.at("EOF"):
            items.append(sub.parse_expr())
            if not sub.accept(","):
                break
        if not sub.at("EOF"):
            raise sub.error("`,` or `]`")
        return items

    def parse_known_body(self, anno: ast.Annotation, body: list[Token]) -> list[ast.Expr] | None:
        """Parse an unstructured body; the annotations p4c itself parses (its
        ``ParseAnnotations`` pass) must have the body shape p4c requires."""
        inner = body[1:-1]
        name = anno.name
        if name == "p4runtime_translation":
            return self.parse_p4rt_translation(inner)
        if name in _EMPTY_ANNOTATIONS and inner:
            raise P4Error(f"@{name} should not have any arguments", anno.loc)
        exprs = self.parse_body_exprs(inner)
        if name in _SINGLE_EXPR_ANNOTATIONS and (exprs is None or len(exprs) != 1):
            raise P4Error(f"syntax error in the argument of @{name}: expected one expression",
                          inner[0].loc if inner else body[-1].loc)
        if name in _EXPR_LIST_ANNOTATIONS and exprs is None:
            raise P4Error(f"syntax error in the arguments of @{name}: expected expressions",
                          inner[0].loc if inner else body[-1].loc)
        return exprs

    def parse_p4rt_translation(self, toks: list[Token]) -> list[ast.Expr]:
        """``@p4runtime_translation("uri", W | bit<W> | string)``; the controller type is
        encoded as p4c does: the width as an integer, ``string`` as an empty string."""
        sub = self.sub_parser(toks)
        uri = sub.expect("STRING", "a string literal")
        sub.expect(",")
        t = sub.tok
        ctrl: ast.Expr
        if t.kind == "INT":
            ctrl = sub.int_literal(sub.advance())
        elif t.kind == "string":
            sub.advance()
            ctrl = ast.StringLiteral("", loc=t.loc)
        elif t.kind == "bit":
            sub.advance()
            sub.expect("<")
            ctrl = sub.int_literal(sub.expect("INT", "an integer"))
            sub.expect_close_angle()
        else:
            raise sub.error("`bit`, `string` or an integer")
        if not sub.at("EOF"):
            raise sub.error("`)`")
        return [ast.StringLiteral(uri.value, loc=uri.loc), ctrl]

    def parse_pragma(self, at: Token) -> ast.Annotation:
        """``@pragma name tokens…`` runs to the end of its line (p4c's PRAGMA_END)."""
        line = at.line
        if self.tok.line != line or self.tok.kind == "EOF":
            raise self.error("a pragma name")
        name = self.advance()
        body: list[Token] = []
        while self.tok.kind != "EOF" and self.tok.line == line:
            body.append(self.advance())
        text = self.text[body[0].start:body[-1].end] if body else ""
        anno = ast.Annotation(name.text, body=text, loc=at.loc)
        anno.exprs = self.parse_body_exprs(body) if body else []
        return anno

    def balanced(self, open_kind: str, close_kind: str) -> list[Token]:
        """Tokens from ``open_kind`` through its matching ``close_kind`` (inclusive).
        Only that bracket pair nests: p4c's annotation bodies are free token lists where
        ``[``, ``{`` … need not balance, only the parentheses do."""
        start = self.i
        depth = 0
        while True:
            t = self.tok
            if t.kind == "EOF":
                raise self.error(f"`{close_kind}`")
            self.advance()
            if t.kind == open_kind:
                depth += 1
            elif t.kind == close_kind:
                depth -= 1
                if depth == 0:
                    return self.toks[start:self.i]

    def slice_text(self, toks: list[Token]) -> str:
        """Raw source text strictly between the first and last token."""
        if len(toks) < 2:
            return ""
        return self.text[toks[0].end:toks[-1].start].strip()

    def sub_parser(self, toks: list[Token]) -> Parser:
        end = toks[-1] if toks else self.tok
        eof = Token("EOF", "", end.loc, end.end, end.end, end.line)
        return Parser(list(toks) + [eof], self.text, self.scopes)

    def parse_body_exprs(self, toks: list[Token]) -> list[ast.Expr] | None:
        """The annotation body as an expression list, or None if it is not one."""
        if not toks:
            return []
        sub = self.sub_parser(toks)

        def run() -> list[ast.Expr]:
            items = [sub.parse_expr()]
            while sub.accept(","):
                items.append(sub.parse_expr())
            if not sub.at("EOF"):
                raise sub.error("end of annotation")
            return items

        return sub.speculate(run)

    def parse_body_kv(self, toks: list[Token]) -> dict[str, ast.Expr] | None:
        if len(toks) < 2 or toks[0].kind != "ID" or toks[1].kind != "=":
            return None
        sub = self.sub_parser(toks)

        def run() -> dict[str, ast.Expr]:
            kv: dict[str, ast.Expr] = {}
            while True:
                key = sub.expect_name()
                sub.expect("=")
                kv[key.text] = sub.parse_expr()
                if not sub.accept(","):
                    break
            if not sub.at("EOF"):
                raise sub.error("`,` or `]`")
            return kv

        return sub.speculate(run)

    # ------------------------------------------------------------------ types

    def starts_type(self, k: int = 0) -> bool:
        """Whether the token at offset ``k`` certainly begins a type."""
        t = self.peek(k)
        if t.kind in _BUILTIN_TYPE_KINDS:
            return True
        if t.kind == "ID":
            return self.is_type_name(t.text) or (
                t.text == "list" and self.peek(k + 1).kind == "<")
        if t.kind == ".":
            nxt = self.peek(k + 1)
            return nxt.kind == "ID" and self.is_type_name(nxt.text)
        return False

    def parse_type(self) -> ast.TypeRef:
        t = self.parse_base_type()
        while self.at("["):
            lb = self.advance()
            size = self.parse_expr()
            self.expect("]")
            t = ast.StackTypeRef(t, size, loc=t.loc or lb.loc)
        return t

    def parse_priority(self) -> ast.Expr:
        """An entry's ``priority = N``: an integer literal or a parenthesized expression
        (the P4_16 grammar's entryPriority; ``priority = 1 + 1:`` is a syntax error)."""
        t = self.tok
        if t.kind == "INT":
            return self.int_literal(self.advance())
        if t.kind == "(":
            self.advance()
            value = self.parse_expr()
            self.expect(")")
            return value
        raise self.error("an integer or `(`")

    def parse_width(self) -> ast.Expr:
        """``<W>`` of bit/int/varbit: a literal or a parenthesized expression (p4c's rule;
        ``bit<W>`` with a bare name is a syntax error there too)."""
        self.expect("<")
        t = self.tok
        if t.kind == "INT":
            width: ast.Expr = self.int_literal(self.advance())
        elif t.kind == "(":
            self.advance()
            width = self.parse_expr()
            self.expect(")")
        else:
            raise self.error("an integer or `(`")
        self.expect_close_angle()
        return width

    def expect_close_angle(self) -> None:
        if not self.accept(">"):
            raise self.error("`>`")

    def parse_base_type(self) -> ast.TypeRef:
        """A type without ``[N]`` suffixes. Any identifier is accepted here: type
        parameters may be used before they are declared (``extern T f<T>()``)."""
        t = self.tok
        k = t.kind
        loc = t.loc
        if k == "bit" or k == "int":
            self.advance()
            signed = k == "int"
            if self.at("<"):
                return ast.BitTypeRef(self.parse_width(), signed, loc=loc)
            if signed:
                return ast.IntTypeRef(loc=loc)
            return ast.BitTypeRef(None, False, loc=loc)
        if k == "varbit":
            self.advance()
            return ast.VarbitTypeRef(self.parse_width(), loc=loc)
        simple = {"bool": ast.BoolTypeRef, "string": ast.StringTypeRef,
                  "void": ast.VoidTypeRef, "error": ast.ErrorTypeRef,
                  "match_kind": ast.MatchKindTypeRef}
        if k in simple:
            self.advance()
            return simple[k](loc=loc)
        if k == "tuple":
            self.advance()
            return ast.TupleTypeRef(self.parse_type_args(), loc=loc)
        if k == "ID" and t.text == "list" and self.peek().kind == "<" \
                and not self.is_type_name("list"):
            self.advance()
            self.expect("<")
            elem = self.parse_type_arg()
            self.expect_close_angle()
            return ast.ListTypeRef(elem, loc=loc)
        top = False
        if k == ".":
            self.advance()
            top = True
        name = self.expect("ID", "a type")
        ref = ast.NamedTypeRef(name.text, top_level=top, loc=loc)
        if self.at("<"):
            ref.type_args = self.parse_type_args()
        return ref

    def parse_type_args(self) -> list[ast.TypeRef]:
        self.expect("<")
        args: list[ast.TypeRef] = []
        if not self.at(">"):
            args.append(self.parse_type_arg())
            while self.accept(","):
                args.append(self.parse_type_arg())
        self.expect_close_angle()
        return args

    def parse_type_arg(self) -> ast.TypeRef:
        """A type argument: a type or ``_`` (to be inferred) — ``_`` is no type elsewhere."""
        t = self.tok
        if t.kind == "_":
            self.advance()
            return ast.DontCareTypeRef(loc=t.loc)
        return self.parse_type()

    def parse_type_params(self) -> list[ast.TypeParam]:
        """``<T, U>`` — declares the names as types in the current scope."""
        params: list[ast.TypeParam] = []
        if not self.at("<"):
            return params
        self.advance()
        while True:
            name = self.expect_name()
            params.append(ast.TypeParam(name.text, loc=name.loc))
            self.declare_type(name.text)
            if not self.accept(","):
                break
        self.expect_close_angle()
        check_unique(params)
        return params

    # ------------------------------------------------------------ expressions

    def int_literal(self, t: Token) -> ast.IntLiteral:
        value, width, signed = t.value
        return ast.IntLiteral(value, width, signed, t.text, loc=t.loc)

    def parse_expr(self) -> ast.Expr:
        cond = self.parse_binary(1)
        if self.at("?"):
            self.advance()
            then = self.parse_expr()
            self.expect(":")
            otherwise = self.parse_expr()
            return ast.Ternary(cond, then, otherwise, loc=cond.loc)
        return cond

    def binary_op(self) -> tuple[str, int] | None:
        """The binary operator at the cursor and how many tokens it spans."""
        t = self.tok
        if t.kind == ">":
            nxt = self.peek()
            if nxt.glued and nxt.kind == ">":
                return ">>", 2
            if nxt.glued and nxt.kind == ">=":
                return None  # `>>=` compound assignment
            return ">", 1
        if t.kind in _BINARY_PREC:
            return t.kind, 1
        return None

    def parse_binary(self, min_prec: int) -> ast.Expr:
        """Precedence climbing over :data:`_BINARY_PREC` (all left-associative)."""
        left = self.parse_unary()
        while True:
            op = self.binary_op()
            if op is None:
                return left
            name, ntoks = op
            prec = _BINARY_PREC[name]
            if prec < min_prec:
                return left
            self.i += ntoks
            right = self.parse_binary(prec + 1)
            left = ast.Binary(name, left, right, loc=left.loc)

    def parse_unary(self) -> ast.Expr:
        """Prefix operators and casts; a cast ``(T) e`` needs ``T`` to start like a
        type (p4c only treats declared type names so), else ``(`` opens an expression."""
        t = self.tok
        if t.kind in ("!", "~", "-", "+"):
            self.advance()
            return ast.Unary(t.kind, self.parse_unary(), loc=t.loc)
        if t.kind == "(" and self.starts_type(1):
            cast = self.speculate(self.parse_cast)
            if cast is not None:
                return cast
        return self.parse_postfix(self.parse_primary())

    def parse_cast(self) -> ast.Expr:
        """``(T) e``; backtracks when what follows cannot start an operand, so that a
        parenthesized type-name expression is not mistaken for a cast."""
        lp = self.expect("(")
        to = self.parse_type()
        self.expect(")")
        if self.tok.kind in (")", ";", ",", "]", "}", ":", "EOF", "=", "?") \
                or self.binary_op() is not None and self.tok.kind not in ("-", "+"):
            raise _Backtrack()
        return ast.Cast(to, self.parse_unary(), loc=lp.loc)

    def parse_primary(self) -> ast.Expr:
        """Literals, names, parenthesized and brace expressions, ``error.X`` and
        declared type names (which must be followed by ``.``, ``(`` or a ``{`` initializer)."""
        t = self.tok
        k = t.kind
        if k == "INT":
            self.advance()
            return self.int_literal(t)
        if k == "true" or k == "false":
            self.advance()
            return ast.BoolLiteral(k == "true", loc=t.loc)
        if k == "STRING":
            self.advance()
            return ast.StringLiteral(t.value, loc=t.loc)
        if k == "this":
            self.advance()
            return ast.ThisExpr(loc=t.loc)
        if k == "(":
            self.advance()
            e = self.parse_expr()
            self.expect(")")
            return e
        if k == "{":
            return self.parse_brace_expr()
        if k == "{#}":
            self.advance()
            return ast.InvalidHeaderExpr(loc=t.loc)
        if k == "error" and self.peek().kind == ".":
            self.advance()
            return ast.TypeNameExpr(ast.ErrorTypeRef(loc=t.loc), loc=t.loc)
        if k == "...":
            self.advance()
            return ast.DotsExpr(loc=t.loc)
        if k == ".":
            nxt = self.peek()
            if nxt.kind == "ID" and not self.is_type_name(nxt.text):
                self.advance()
                self.advance()
                return ast.PathExpr(nxt.text, top_level=True, loc=t.loc)
            return self.parse_type_expr()
        if k == "ID":
            if self.is_type_name(t.text):
                return self.parse_type_expr()
            self.advance()
            return ast.PathExpr(t.text, loc=t.loc)
        raise self.error("an expression")

    def parse_type_expr(self) -> ast.Expr:
        """A declared type used as an expression: ``E.A``, ``H {f = 1}``, ``Reg<…>(n)``."""
        t = self.tok
        ref = self.parse_base_type()
        if self.at("{") and self.peek().kind == "ID" and self.peek(2).kind == "=":
            e = self.parse_brace_expr()
            if isinstance(e, ast.StructExpr):
                e.type_ref = ref
                e.loc = t.loc
            return e
        if not self.at(".") and not self.at("("):
            raise self.error("`(` or `.` after the type name")
        return ast.TypeNameExpr(ref, loc=t.loc)

    def parse_brace_expr(self) -> ast.Expr:
        """``{}``, ``{a, b}`` (list), ``{f = 1, …}`` (struct expression)."""
        lb = self.expect("{")
        if self.accept("}"):
            return ast.ListExpr([], loc=lb.loc)
        if self.at("ID") and self.peek().kind == "=":
            fields: list[tuple[str, ast.Expr]] = []
            while not self.at("}"):
                if self.at("..."):
                    dots = self.advance()
                    fields.append(("...", ast.DotsExpr(loc=dots.loc)))
                    break
                name = self.expect_name()
                if any(f == name.text for f, _ in fields):
                    raise duplicate(name.text, name.loc)
                self.expect("=")
                fields.append((name.text, self.parse_expr()))
                if not self.accept(","):
                    break
            self.expect("}", "`}` or `,`")
            return ast.StructExpr(fields, loc=lb.loc)
        items: list[ast.Expr] = []
        while not self.at("}"):
            items.append(self.parse_expr())
            if not self.accept(","):
                break
        self.expect("}", "`}` or `,`")
        check_dots_last(items)
        return ast.ListExpr(items, loc=lb.loc)

    def parse_postfix(self, e: ast.Expr) -> ast.Expr:
        """Member access, indexing/slicing, calls and explicit type arguments
        ``f<bit<8>>(x)`` — tried speculatively, since ``a < b`` may be a comparison."""
        while True:
            k = self.tok.kind
            if k == ".":
                self.advance()
                name = self.expect_name()
                e = ast.Member(e, name.text, loc=e.loc)
            elif k == "[":
                self.advance()
                idx = self.parse_expr()
                if self.at("+:"):
                    e = self.plus_slice(e, idx)
                elif self.accept(":"):
                    lo = self.parse_expr()
                    self.expect("]")
                    e = ast.Slice(e, idx, lo, loc=e.loc)
                else:
                    self.expect("]")
                    e = ast.Index(e, idx, loc=e.loc)
            elif k == "(":
                e = ast.Call(e, self.parse_args(), loc=e.loc)
            elif k == "<" and (self.starts_type(1) or self.peek().kind == "_") \
                    and not isinstance(e, ast.TypeNameExpr):
                targs = self.speculate(self.parse_call_type_args)
                if targs is None:
                    return e
                e = ast.Call(e, self.parse_args(), targs, loc=e.loc)
            else:
                return e

    def plus_slice(self, e: ast.Expr, lo: ast.Expr) -> ast.Slice:
        """``e[lo +: w]`` is the slice ``e[lo + w - 1 : lo]`` (p4c's PlusSlice)."""
        self.expect("+:")
        width = self.parse_expr()
        self.expect("]")
        one = ast.IntLiteral(1, text="1", loc=width.loc)
        hi = ast.Binary("-", ast.Binary("+", copy.deepcopy(lo), width, loc=lo.loc), one,
                        loc=lo.loc)
        return ast.Slice(e, hi, lo, loc=e.loc)

    def parse_call_type_args(self) -> list[ast.TypeRef]:
        """Type arguments count only when a call follows (``f<T>(…)``)."""
        targs = self.parse_type_args()
        if not self.at("("):
            raise _Backtrack()
        return targs

    def parse_args(self) -> list[ast.Argument]:
        """Call arguments: positional, named ``n = e``, or ``_``."""
        self.expect("(")
        args: list[ast.Argument] = []
        if self.accept(")"):
            return args
        while True:
            t = self.tok
            if t.kind == "ID" and self.peek().kind == "=":
                self.advance()
                self.advance()
                args.append(ast.Argument(self.parse_arg_value(), t.text, loc=t.loc))
            else:
                args.append(ast.Argument(self.parse_arg_value(), loc=t.loc))
            if not self.accept(","):
                break
        self.expect(")", "`)` or `,`")
        return args

    def parse_arg_value(self) -> ast.Expr:
        """An argument: an expression or ``_`` (don't care)."""
        t = self.tok
        if t.kind == "_":
            self.advance()
            return ast.DontCareExpr(loc=t.loc)
        return self.parse_expr()

    # ---------------------------------------------------------------- keysets

    def parse_simple_keyset(self) -> ast.Expr:
        t = self.tok
        if t.kind == "default":
            self.advance()
            return ast.DefaultExpr(loc=t.loc)
        if t.kind == "_":
            self.advance()
            return ast.DontCareExpr(loc=t.loc)
        e = self.parse_expr()
        for op in ("&&&", ".."):
            if self.at(op):
                self.advance()
                return ast.Binary(op, e, self.parse_expr(), loc=e.loc)
        return e

    def parse_keyset(self) -> ast.Expr:
        """A select case / table entry key: tuple ``(a, b &&& m)``, mask, range, default."""
        if self.at("("):
            tup = self.speculate(self.parse_tuple_keyset)
            if tup is not None:
                return tup
        return self.parse_simple_keyset()

    def parse_tuple_keyset(self) -> ast.Expr:
        """``(k1, k2 &&& m, _)``; speculative because ``(a + b) &&& c`` is a plain
        keyset starting with a parenthesis — it is a tuple only if ``:`` follows."""
        lp = self.expect("(")
        items = [self.parse_simple_keyset()]
        while self.accept(","):
            items.append(self.parse_simple_keyset())
        self.expect(")")
        if not self.at(":"):
            raise _Backtrack()
        if len(items) == 1:
            return items[0]
        return ast.ListExpr(items, loc=lp.loc)

    # ------------------------------------------------------------- statements

    def parse_block(self, annotations: list[ast.Annotation] | None = None,
                    in_parser: bool = False) -> ast.BlockStmt:
        lb = self.expect("{")
        stmts: list[ast.Stmt] = []
        with self.scope():
            while not self.at("}"):
                if self.at("EOF"):
                    raise self.error("`}`")
                stmts.append(self.parse_statement(in_parser))
        self.advance()
        check_unique([d for d in stmts if isinstance(d, ast.Decl)])
        return ast.BlockStmt(stmts, annotations or [], loc=lb.loc)

    def starts_declaration(self) -> bool:
        """Whether a statement position holds a declaration (``T x;``, ``T(…) x;``)."""
        t = self.tok
        if t.kind in ("bit", "int", "varbit", "bool", "string", "tuple", "error",
                      "match_kind"):
            return True
        if t.kind == ".":
            return self.starts_type()
        if t.kind != "ID":
            return False
        nxt = self.peek()
        if t.text == "list" and nxt.kind == "<":
            return True
        if not self.is_type_name(t.text):
            return False
        if nxt.kind == "<":  # `C<bit<8>>.apply(…)` is a direct application
            return self.toks[self.skip_angles(self.i + 1)].kind != "."
        return nxt.kind not in (".", "=") and not nxt.kind.endswith("=")

    def skip_angles(self, j: int) -> int:
        """Index just after the ``>`` matching the ``<`` at index ``j``."""
        depth = 0
        while self.toks[j].kind != "EOF":
            k = self.toks[j].kind
            if k == "<":
                depth += 1
            elif k == ">":
                depth -= 1
                if depth == 0:
                    return j + 1
            elif k in (";", "{", "}"):
                return j
            j += 1
        return j

    def parse_statement(self, in_parser: bool = False) -> ast.Stmt:
        """A statement or local declaration. Parser states allow fewer statements (no
        return/exit/switch/break/continue), as in p4c's ``parserStatement``."""
        annos = self.parse_annotations()
        t = self.tok
        k = t.kind
        if in_parser and k in ("return", "exit", "switch", "break", "continue"):
            raise self.error("a parser statement")
        if k == "{":
            return self.parse_block(annos, in_parser)
        if k == ";":
            self.advance()
            return ast.EmptyStmt(loc=t.loc)
        if k == "if":
            return self.parse_if(in_parser)
        if k == "switch":
            return self.parse_switch()
        if k == "for":
            return self.parse_for()
        if k == "return":
            self.advance()
            value = None if self.at(";") else self.parse_expr()
            self.expect(";")
            return ast.ReturnStmt(value, loc=t.loc)
        simple = {"exit": ast.ExitStmt, "break": ast.BreakStmt, "continue": ast.ContinueStmt}
        if k in simple:
            self.advance()
            self.expect(";")
            return simple[k](loc=t.loc)
        if k == "const":
            return self.parse_const(annos)
        stmt = self.parse_simple_statement(annos)
        self.expect(";")
        return stmt

    def parse_simple_statement(self, annos: list[ast.Annotation]) -> ast.Stmt:
        """Declaration, assignment or call without its ``;`` (also used in ``for``)."""
        if self.starts_declaration():
            return self.parse_var_or_instance(annos, need_semi=False)
        t = self.tok
        if t.kind not in ("ID", ".", "this"):
            raise self.error("a statement")
        # p4c's statements start with an lvalue: a name, member, index or slice — then a
        # call, `=` or a compound assignment.
        target = self.parse_postfix(self.parse_primary())
        op = self.tok
        if op.kind == "=":
            self.advance()
            return ast.AssignStmt(target, self.parse_expr(), loc=target.loc)
        if op.kind in _COMPOUND_ASSIGN:
            self.advance()
            return self.compound(target, _COMPOUND_ASSIGN[op.kind])
        if op.kind == ">" and self.peek().kind == ">=" and self.peek().glued:
            self.i += 2
            return self.compound(target, ">>")
        if isinstance(target, ast.Call) and op.kind in (";", ",", ")"):
            return ast.CallStmt(target, loc=target.loc)
        raise self.error("`=` or `;`")

    def compound(self, target: ast.Expr, op: str) -> ast.AssignStmt:
        value = self.parse_expr()
        left = copy.deepcopy(target)
        return ast.AssignStmt(target, ast.Binary(op, left, value, loc=target.loc),
                              loc=target.loc)

    def parse_if(self, in_parser: bool) -> ast.IfStmt:
        t = self.expect("if")
        self.expect("(")
        cond = self.parse_expr()
        self.expect(")")
        then = self.parse_statement(in_parser)
        otherwise = self.parse_statement(in_parser) if self.accept("else") else None
        return ast.IfStmt(cond, then, otherwise, loc=t.loc)

    def parse_switch(self) -> ast.SwitchStmt:
        """``switch (e) { label: {…} label: default: {…} }`` — a label without a body
        falls through to the next one."""
        t = self.expect("switch")
        self.expect("(")
        expr = self.parse_expr()
        self.expect(")")
        self.expect("{")
        cases: list[ast.SwitchCase] = []
        while not self.accept("}"):
            lt = self.tok
            label: ast.Expr
            if lt.kind == "default":
                self.advance()
                label = ast.DefaultExpr(loc=lt.loc)
            else:
                label = self.parse_expr()
            self.expect(":")
            body = self.parse_block() if self.at("{") else None
            cases.append(ast.SwitchCase(label, body, loc=lt.loc))
        return ast.SwitchStmt(expr, cases, loc=t.loc)

    def is_for_in(self) -> bool:
        """Whether the ``for (`` at the cursor is ``for (T x in …)``."""
        depth = 0
        j = self.i
        while True:
            t = self.toks[j]
            if t.kind in ("EOF", ";", "{") or (t.kind == ")" and depth == 0):
                return False
            if t.kind in ("(", "["):
                depth += 1
            elif t.kind in (")", "]"):
                depth -= 1
            elif t.kind == "in" and depth == 0:
                return True
            j += 1

    def parse_for(self) -> ast.Stmt:
        """``for (init; cond; update) body`` or ``for (T x in collection) body``."""
        t = self.expect("for")
        self.expect("(")
        if self.is_for_in():
            annos = self.parse_annotations()
            vt = self.tok
            type_ref = self.parse_type()
            name = self.expect_name()
            var = ast.VarDecl(name.text, type_ref, annotations=annos, loc=vt.loc)
            self.expect("in")
            coll = self.parse_expr()
            if self.at(".."):
                self.advance()
                coll = ast.Binary("..", coll, self.parse_expr(), loc=coll.loc)
            self.expect(")")
            return ast.ForInStmt(var, coll, self.parse_statement(), loc=t.loc)
        init = self.parse_for_list(";")
        self.expect(";")
        cond = None if self.at(";") else self.parse_expr()
        self.expect(";")
        update = self.parse_for_list(")")
        self.expect(")")
        return ast.ForStmt(init, cond, update, self.parse_statement(), loc=t.loc)

    def parse_for_list(self, end: str) -> list[ast.Stmt]:
        stmts: list[ast.Stmt] = []
        if self.at(end):
            return stmts
        while True:
            stmts.append(self.parse_simple_statement(self.parse_annotations()))
            if not self.accept(","):
                return stmts

    # ----------------------------------------------------------- declarations

    def parse_const(self, annos: list[ast.Annotation]) -> ast.ConstDecl:
        t = self.expect("const")
        type_ref = self.parse_type()
        name = self.expect_name()
        self.expect("=")
        value = self.parse_expr()
        self.expect(";")
        self.declare_object(name.text)
        return ast.ConstDecl(name.text, type_ref, value, annotations=annos, loc=t.loc)

    def parse_var_or_instance(self, annos: list[ast.Annotation],
                              need_semi: bool = True) -> ast.Decl:
        """``T x [= e];`` or ``T(args) x [= { … }];``."""
        start = self.tok
        type_ref = self.parse_type()
        if self.at("("):
            return self.parse_instance_rest(type_ref, annos, start, need_semi)
        name = self.expect_name()
        type_ref = self.array_declarator(type_ref)
        init = None
        if self.accept("="):
            init = self.parse_expr()
        if need_semi:
            self.expect(";")
        self.declare_object(name.text)
        return ast.VarDecl(name.text, type_ref, init, annotations=annos, loc=start.loc)

    def parse_instance_rest(self, type_ref: ast.TypeRef, annos: list[ast.Annotation],
                            start: Token, need_semi: bool = True) -> ast.InstanceDecl:
        """After ``T`` in ``T(args) name [= { … }];``: constructor arguments, the
        instance name, and an optional initializer implementing abstract methods."""
        args = self.parse_args()
        name = self.expect_name()
        self.declare_object(name.text)
        inst = ast.InstanceDecl(name.text, type_ref, args, annotations=annos, loc=start.loc)
        if self.accept("="):
            self.expect("{")
            decls: list[ast.Decl] = []
            while not self.accept("}"):
                for d in self.parse_declaration():
                    if not isinstance(d, ast.Decl):
                        raise P4Error("only declarations may appear in an initializer",
                                      d.loc)
                    decls.append(d)
            check_unique(decls)
            inst.initializer = decls
        if need_semi:
            self.expect(";")
        return inst

    def array_declarator(self, type_ref: ast.TypeRef) -> ast.TypeRef:
        """C-style ``T name[N]`` (accepted by current p4c) means the array type ``T[N]``."""
        while self.at("["):
            self.advance()
            size = self.parse_expr()
            self.expect("]")
            type_ref = ast.StackTypeRef(type_ref, size, loc=type_ref.loc)
        return type_ref

    def parse_params(self, declare: bool = True) -> list[ast.Param]:
        """A parameter list; ``declare`` hides same-named types in the current scope (p4c
        does so for parser/control/package/function parameters, not action/ctor ones)."""
        self.expect("(")
        params: list[ast.Param] = []
        if self.accept(")"):
            return params
        while True:
            annos = self.parse_annotations()
            start = self.tok
            direction = ""
            if start.kind in _DIRECTIONS:
                direction = self.advance().kind
            type_ref = self.parse_type()
            name = self.expect_name()
            default = self.parse_expr() if self.accept("=") else None
            params.append(ast.Param(name.text, type_ref, direction, default,
                                    annotations=annos, loc=start.loc))
            if declare:
                self.declare_object(name.text)
            if not self.accept(","):
                break
        self.expect(")", "`)` or `,`")
        check_unique(params)
        return params

    def parse_fields(self) -> list[ast.FieldDecl]:
        self.expect("{")
        fields: list[ast.FieldDecl] = []
        while not self.accept("}"):
            annos = self.parse_annotations()
            start = self.tok
            type_ref = self.parse_type()
            name = self.expect_name()
            type_ref = self.array_declarator(type_ref)
            self.expect(";")
            fields.append(ast.FieldDecl(name.text, type_ref, annotations=annos, loc=start.loc))
        check_unique(fields)
        return fields

    def parse_aggregate(self, annos: list[ast.Annotation]) -> ast.Decl:
        kw = self.advance()
        name = self.expect_name()
        self.declare_type(name.text)
        with self.scope():
            tparams = self.parse_type_params()
            fields = self.parse_fields()
        cls = {"header": ast.HeaderDecl, "header_union": ast.HeaderUnionDecl,
               "struct": ast.StructDecl}[kw.kind]
        return cls(name.text, fields, tparams, annotations=annos, loc=kw.loc)

    def parse_members(self, with_values: bool) -> list[ast.EnumMember]:
        """Members of an enum, ``error`` or ``match_kind`` list (trailing comma ok)."""
        self.expect("{")
        members: list[ast.EnumMember] = []
        while not self.at("}"):
            annos = self.parse_annotations()
            name = self.expect_name()
            value = self.parse_expr() if with_values and self.accept("=") else None
            members.append(ast.EnumMember(name.text, value, annotations=annos, loc=name.loc))
            if not self.accept(","):
                break
        self.expect("}", "`}` or `,`")
        check_unique(members)
        return members

    def parse_enum(self, annos: list[ast.Annotation]) -> ast.EnumDecl:
        """``enum E {A, B}`` or a serializable ``enum bit<8> E {A = 1}``."""
        kw = self.expect("enum")
        underlying = None
        if not (self.at("ID") and self.peek().kind == "{"):
            underlying = self.parse_type()
        name = self.expect_name()
        self.declare_type(name.text)
        members = self.parse_members(underlying is not None)
        return ast.EnumDecl(name.text, members, underlying, annotations=annos, loc=kw.loc)

    def parse_typedef(self, annos: list[ast.Annotation]) -> list[ast.Node]:
        """``typedef T name;`` / ``type T name;``; a derived type declared in place
        (``typedef header H {…} name;``) becomes its own declaration plus the typedef."""
        kw = self.advance()
        out: list[ast.Node] = []
        if self.tok.kind in ("header", "header_union", "struct", "enum"):
            derived = (self.parse_enum([]) if self.at("enum") else self.parse_aggregate([]))
            out.append(derived)
            type_ref: ast.TypeRef = ast.NamedTypeRef(derived.name, loc=derived.loc)
        else:
            type_ref = self.parse_type()
        name = self.expect_name()
        self.expect(";")
        self.declare_type(name.text)
        out.append(ast.TypedefDecl(name.text, type_ref, kw.kind != "typedef",
                                   annotations=annos, loc=kw.loc))
        return out

    def is_extern_object(self) -> bool:
        """After ``extern``: ``Name [<…>] {`` is an object, anything else a function."""
        if not self.at("ID"):
            return False
        nxt = self.peek()
        if nxt.kind == "{":
            return True
        if nxt.kind != "<":
            return False
        depth = 0
        j = self.i + 1
        while self.toks[j].kind != "EOF":
            k = self.toks[j].kind
            if k == "<":
                depth += 1
            elif k == ">":
                depth -= 1
                if depth == 0:
                    return self.toks[j + 1].kind == "{"
            elif k in (";", "{", "(", ")"):
                return False
            j += 1
        return False

    def parse_extern(self, annos: list[ast.Annotation]) -> ast.Decl | None:
        """An extern object or function; ``extern E;`` only forward-declares the type
        name (p4c builds no node for it), so it returns None."""
        kw = self.expect("extern")
        annos = annos + self.parse_annotations()
        if self.at("ID") and self.peek().kind == ";":
            self.declare_type(self.advance().text)
            self.advance()
            return None
        if self.is_extern_object():
            return self.parse_extern_object(kw, annos)
        ret = self.parse_type()
        name = self.expect_name()
        self.declare_object(name.text)
        with self.scope():
            tparams = self.parse_type_params()
            params = self.parse_params()
        self.expect(";")
        return ast.ExternFunctionDecl(name.text, ret, params, tparams, annotations=annos,
                                      loc=kw.loc)

    def parse_extern_object(self, kw: Token, annos: list[ast.Annotation]) -> ast.ExternDecl:
        name = self.expect_name()
        self.declare_type(name.text)
        methods: list[ast.MethodDecl] = []
        with self.scope():
            tparams = self.parse_type_params()
            self.expect("{")
            while not self.accept("}"):
                methods.append(self.parse_method(name.text))
        return ast.ExternDecl(name.text, methods, tparams, annotations=annos, loc=kw.loc)

    def parse_method(self, extern_name: str) -> ast.MethodDecl:
        """A method prototype inside ``extern E { … }``: the constructor (no return
        type, named like the extern), or ``[abstract] R name<T>(params);``."""
        annos = self.parse_annotations()
        start = self.tok
        abstract = self.accept("abstract") is not None
        if self.at("ID") and self.peek().kind == "(":
            name = self.advance()
            if name.text != extern_name:
                raise P4Error(f"{name.text}: invalid method; only the constructor of "
                              f"{extern_name} may omit the return type", name.loc)
            params = self.parse_params(declare=False)
            self.expect(";")
            return ast.MethodDecl(name.text, None, params, annotations=annos, loc=start.loc)
        ret = self.parse_type()
        name = self.expect_name()
        self.declare_object(name.text)
        with self.scope():
            tparams = self.parse_type_params()
            params = self.parse_params()
        self.expect(";")
        return ast.MethodDecl(name.text, ret, params, tparams, abstract, annotations=annos,
                              loc=start.loc)

    def parse_action(self, annos: list[ast.Annotation]) -> ast.ActionDecl:
        kw = self.expect("action")
        name = self.expect_name()
        params = self.parse_params(declare=False)
        body = self.parse_block()
        return ast.ActionDecl(name.text, params, body, annotations=annos, loc=kw.loc)

    def parse_function_rest(self, ret: ast.TypeRef, annos: list[ast.Annotation],
                            start: Token) -> ast.FunctionDecl:
        name = self.expect_name()
        self.declare_object(name.text)
        with self.scope():
            tparams = self.parse_type_params()
            params = self.parse_params()
            body = self.parse_block()
        return ast.FunctionDecl(name.text, ret, params, body, tparams, annotations=annos,
                                loc=start.loc)

    def parse_package(self, annos: list[ast.Annotation]) -> ast.PackageTypeDecl:
        kw = self.expect("package")
        name = self.expect_name()
        self.declare_type(name.text)
        with self.scope():
            tparams = self.parse_type_params()
            params = self.parse_params()
        self.expect(";")
        return ast.PackageTypeDecl(name.text, params, tparams, annotations=annos, loc=kw.loc)

    def _block_signature(self) -> tuple[list[ast.TypeParam], list[ast.Param],
                                        list[ast.Param] | None]:
        """After ``parser P`` / ``control C`` (inside the block's scope): type parameters,
        apply parameters, then either ``;`` — a type declaration, constructor parameters
        None — or optional constructor parameters and the ``{`` that opens the body."""
        tparams = self.parse_type_params()
        params = self.parse_params()
        if self.accept(";"):
            return tparams, params, None
        ctor = self.parse_params(declare=False) if self.at("(") else []
        self.expect("{")
        return tparams, params, ctor

    def parse_parser(self, annos: list[ast.Annotation]) -> ast.Decl:
        """``parser P<T>(params);`` (a type) or a parser declaration with constructor
        parameters, locals and states."""
        kw = self.expect("parser")
        name = self.expect_name()
        self.declare_type(name.text)
        with self.scope():
            tparams, params, ctor = self._block_signature()
            if ctor is None:
                return ast.ParserTypeDecl(name.text, params, tparams, annotations=annos,
                                          loc=kw.loc)
            locals_: list[ast.Decl] = []
            states: list[ast.ParserState] = []
            while not self.at("}") or not states:
                la = self.parse_annotations()
                if self.at_word("state") and self.peek().kind == "ID":
                    states.append(self.parse_state(la))
                elif states or self.at("}"):
                    # p4c's grammar: locals first, then at least one state.
                    raise self.error("`state`")
                else:
                    locals_.append(self.parse_parser_local(la))
            self.advance()
        check_unique(locals_)
        check_unique(states)
        return ast.ParserDecl(name.text, params, ctor, locals_, states, tparams,
                              annotations=annos, loc=kw.loc)

    def parse_parser_local(self, annos: list[ast.Annotation]) -> ast.Decl:
        t = self.tok
        if t.kind == "const":
            return self.parse_const(annos)
        if t.kind == "value_set":
            return self.parse_value_set(annos)
        if t.kind in ("ID", ".") or t.kind in _BUILTIN_TYPE_KINDS:
            return self.parse_var_or_instance(annos)
        raise self.error("a parser state or local declaration")

    def parse_value_set(self, annos: list[ast.Annotation]) -> ast.ValueSetDecl:
        kw = self.expect("value_set")
        self.expect("<")
        elem = self.parse_type()
        self.expect_close_angle()
        self.expect("(")
        size = self.parse_expr()
        self.expect(")")
        name = self.expect_name()
        self.expect(";")
        return ast.ValueSetDecl(name.text, elem, size, annotations=annos, loc=kw.loc)

    def parse_state(self, annos: list[ast.Annotation]) -> ast.ParserState:
        """``state s { statements transition …; }`` (no transition: p4c implies reject)."""
        kw = self.advance()
        name = self.expect_name()
        self.expect("{")
        stmts: list[ast.Stmt] = []
        transition: ast.Expr | None = None
        with self.scope():
            while not self.at("transition") and not self.at("}"):
                if self.at("EOF"):
                    raise self.error("`}`")
                stmts.append(self.parse_statement(in_parser=True))
            if self.accept("transition"):
                transition = self.parse_transition()
        self.expect("}", "`}` after the transition statement")
        check_unique([d for d in stmts if isinstance(d, ast.Decl)])
        return ast.ParserState(name.text, stmts, transition, annotations=annos, loc=kw.loc)

    def parse_transition(self) -> ast.Expr:
        """``transition name;`` or ``transition select(keys) { keyset: state; … }``."""
        if not self.at("select"):
            name = self.expect("ID", "a state name or `select`")
            self.expect(";")
            return ast.PathExpr(name.text, loc=name.loc)
        kw = self.advance()
        self.expect("(")
        keys: list[ast.Expr] = []
        if not self.at(")"):
            keys.append(self.parse_expr())
            while self.accept(","):
                keys.append(self.parse_expr())
        self.expect(")")
        check_dots_last(keys)
        self.expect("{")
        cases: list[ast.SelectCase] = []
        while not self.accept("}"):
            keyset = self.parse_keyset()
            self.expect(":")
            state = self.expect_name()
            self.expect(";")
            cases.append(ast.SelectCase(keyset, state.text, loc=keyset.loc))
        return ast.SelectExpr(keys, cases, loc=kw.loc)

    def parse_control(self, annos: list[ast.Annotation]) -> ast.Decl:
        """``control C<T>(params);`` (a type) or a control declaration with its
        locals and ``apply`` block."""
        kw = self.expect("control")
        name = self.expect_name()
        self.declare_type(name.text)
        with self.scope():
            tparams, params, ctor = self._block_signature()
            if ctor is None:
                return ast.ControlTypeDecl(name.text, params, tparams, annotations=annos,
                                           loc=kw.loc)
            locals_: list[ast.Decl] = []
            while True:
                la = self.parse_annotations()
                if self.at_word("apply") and self.peek().kind == "{":
                    self.advance()
                    apply = self.parse_block(la)
                    break
                if self.at("}"):
                    raise self.error("an `apply` block")
                locals_.append(self.parse_control_local(la))
            self.expect("}")
        check_unique(locals_)
        return ast.ControlDecl(name.text, params, ctor, locals_, apply, tparams,
                               annotations=annos, loc=kw.loc)

    def parse_control_local(self, annos: list[ast.Annotation]) -> ast.Decl:
        t = self.tok
        if t.kind == "action":
            return self.parse_action(annos)
        if t.kind == "table":
            return self.parse_table(annos)
        if t.kind == "const":
            return self.parse_const(annos)
        if t.kind in ("ID", ".") or t.kind in _BUILTIN_TYPE_KINDS:
            return self.parse_var_or_instance(annos)
        raise self.error("a control local declaration or `apply`")

    # ----------------------------------------------------------------- tables

    def parse_table(self, annos: list[ast.Annotation]) -> ast.TableDecl:
        kw = self.expect("table")
        name = self.expect_name()
        self.expect("{")
        props: list[ast.TableProperty] = []
        while not self.at("}") or not props:  # p4c: at least one property
            if self.at("}"):
                raise self.error("a table property")
            props.append(self.parse_table_property())
            if any(p.name == props[-1].name for p in props[:-1]):
                raise duplicate(props[-1].name, props[-1].loc)
        self.advance()
        return ast.TableDecl(name.text, props, annotations=annos, loc=kw.loc)

    def parse_table_property(self) -> ast.TableProperty:
        """``key``, ``actions``, ``entries`` and ``default_action`` get their own
        forms; any other property (``size``, ``implementation``, custom ones) is an expression."""
        annos = self.parse_annotations()
        start = self.tok
        is_const = self.accept("const") is not None
        name_tok = self.expect_name()
        name = name_tok.text
        self.expect("=")
        value: object
        if name == "key" and self.at("{"):
            value = self.parse_key_elements()
        elif name == "actions" and self.at("{"):
            value = self.parse_action_list()
        elif name == "entries" and self.at("{"):
            value = self.parse_entries(is_const)
        elif name == "default_action":
            value = self.action_ref(self.parse_expr(), [])
            self.expect(";")
        else:
            value = self.parse_expr()
            self.expect(";")
        return ast.TableProperty(name, value, is_const, annos, loc=start.loc)

    def parse_key_elements(self) -> list[ast.KeyElement]:
        """``expr : match_kind [annotations];`` entries of a table key."""
        self.expect("{")
        keys: list[ast.KeyElement] = []
        while not self.accept("}"):
            expr = self.parse_expr()
            self.expect(":")
            kind = self.expect_name()
            annos = self.parse_annotations()
            self.expect(";")
            keys.append(ast.KeyElement(expr, kind.text, annos, loc=expr.loc))
        return keys

    def action_ref(self, e: ast.Expr, annos: list[ast.Annotation]) -> ast.ActionRef:
        """An action reference (``a``, ``.a``, ``a(1)``) from an already parsed
        expression, so default actions and entries reuse the expression parser."""
        if isinstance(e, ast.Call) and not e.type_args:
            return ast.ActionRef(e.target, e.args, annos, loc=e.loc)
        if isinstance(e, (ast.PathExpr, ast.Member)):
            return ast.ActionRef(e, [], annos, loc=e.loc)
        raise P4Error("syntax error, expected an action name or call", e.loc)

    def parse_action_ref(self, annos: list[ast.Annotation]) -> ast.ActionRef:
        """``[.]name [(args)]`` in an actions list or an entry (p4c's ``actionRef``)."""
        start = self.tok
        top = self.accept(".") is not None
        name = self.expect_name()
        path = ast.PathExpr(name.text, top_level=top, loc=start.loc)
        args = self.parse_args() if self.at("(") else []
        return ast.ActionRef(path, args, annos, loc=start.loc)

    def parse_action_list(self) -> list[ast.ActionRef]:
        """``actions = { [annotations] a; b(1); }``; a repeated action is an error."""
        self.expect("{")
        refs: list[ast.ActionRef] = []
        while not self.accept("}"):
            annos = self.parse_annotations()
            ref = self.parse_action_ref(annos)
            name = getattr(ref.name, "name", None)
            if name is not None and any(getattr(r.name, "name", None) == name for r in refs):
                raise duplicate(name, ref.loc)
            refs.append(ref)
            self.expect(";")
        return refs

    def parse_entries(self, is_const: bool) -> list[ast.TableEntry]:
        """``[const] [priority = N :] keyset : action(args) [annotations];`` entries."""
        self.expect("{")
        entries: list[ast.TableEntry] = []
        while not self.accept("}"):
            annos = self.parse_annotations()
            start = self.tok
            entry_const = self.accept("const") is not None or is_const
            priority = None
            if self.at_word("priority") and self.peek().kind == "=":
                self.advance()
                self.advance()
                priority = self.parse_priority()
                self.expect(":")
            keys = self.parse_keyset()
            self.expect(":")
            action = self.parse_action_ref([])
            annos += self.parse_annotations()
            self.expect(";")
            entries.append(ast.TableEntry(keys, action, priority, annos, entry_const,
                                          loc=start.loc))
        return entries

    # -------------------------------------------------------------- top level

    def parse_declaration(self) -> list[ast.Node]:
        """One top-level declaration (also used for instance initializer blocks); a
        list because ``typedef header H {…} T;`` declares two types."""
        annos = self.parse_annotations()
        t = self.tok
        k = t.kind
        if k == ";" and not annos:
            self.advance()
            return []
        if k == "typedef" or (k == "ID" and t.text == "type" and self.starts_newtype()):
            return self.parse_typedef(annos)
        d = self.parse_single_declaration(annos)
        return [] if d is None else [d]

    def starts_newtype(self) -> bool:
        """``type`` is contextual: ``type T name;`` (or ``type header H {…} name;``)."""
        nxt = self.peek()
        return nxt.kind in ("ID", "header", "header_union", "struct", "enum") \
            or self.starts_type(1)

    def parse_single_declaration(self, annos: list[ast.Annotation]) -> ast.Node | None:
        """Any top-level declaration but typedefs; ``T(…) name;`` is an
        instantiation and ``T name(…) {…}`` a function."""
        t = self.tok
        k = t.kind
        if k == "const":
            return self.parse_const(annos)
        if k in ("header", "header_union", "struct"):
            return self.parse_aggregate(annos)
        if k == "enum":
            return self.parse_enum(annos)
        if k in ("error", "match_kind") and self.peek().kind == "{":
            if annos:  # p4c's grammar has no annotations on these
                raise self.error("a declaration that takes annotations")
            self.advance()
            members = self.parse_members(False)
            cls = ast.ErrorDecl if k == "error" else ast.MatchKindDecl
            return cls(members, loc=t.loc)
        if k == "extern":
            return self.parse_extern(annos)
        if k == "parser":
            return self.parse_parser(annos)
        if k == "control":
            return self.parse_control(annos)
        if k == "package":
            return self.parse_package(annos)
        if k == "action":
            return self.parse_action(annos)
        if k in ("ID", ".") or k in _BUILTIN_TYPE_KINDS:
            type_ref = self.parse_type()
            if self.at("("):
                return self.parse_instance_rest(type_ref, annos, t)
            return self.parse_function_rest(type_ref, annos, t)
        raise self.error("a declaration")

    def parse_program(self) -> ast.Program:
        start = self.tok
        decls: list[ast.Node] = []
        while not self.at("EOF"):
            decls.extend(self.parse_declaration())
        return ast.Program(decls, loc=start.loc)


def duplicate(name: str, loc: SourceLoc | None) -> P4Error:
    """p4c reports a repeated name in a parameter/field/member/local list while parsing."""
    return P4Error(f"{name}: Duplicates declaration {name}", loc)


def check_unique(decls: Sequence[ast.Decl]) -> None:
    """No two declarations of one list (p4c's IndexedVector) may share a name."""
    seen: set[str] = set()
    for d in decls:
        if d.name in seen:
            raise duplicate(d.name, d.loc)
        seen.add(d.name)


def check_dots_last(items: list[ast.Expr]) -> None:
    """``...`` stands for "all the remaining elements", so nothing may follow it."""
    for item in items[:-1]:
        if isinstance(item, ast.DotsExpr):
            raise P4Error("... must be the last element", item.loc)


def parse_preprocessed(pre: Preprocessed) -> ast.Program:
    """Parse cpp output; a syntax error (or absurd nesting) raises P4Error."""
    tokens = tokenize(pre)
    parser = Parser(tokens, pre.text)
    # Raised, never lowered again: restoring it would race with parses in other threads.
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        return parser.parse_program()
    except RecursionError:
        raise P4Error("program nested too deeply to parse", parser.tok.loc) from None


def parse_file(path: str | os.PathLike[str],
               include_dirs: Sequence[str | os.PathLike[str]] = (),
               defines: Mapping[str, str | None] | None = None) -> ast.Program:
    """Preprocess and parse the P4 program at ``path``."""
    return parse_preprocessed(preprocess(path, include_dirs, defines))


def parse_text(text: str, filename: str = "<string>",
               include_dirs: Sequence[str | os.PathLike[str]] = (),
               defines: Mapping[str, str | None] | None = None) -> ast.Program:
    """Preprocess and parse program text (``#include <core.p4>`` works as in files)."""
    return parse_preprocessed(preprocess_text(text, filename, include_dirs, defines))


__all__ = ["Parser", "parse_file", "parse_preprocessed", "parse_text"]
