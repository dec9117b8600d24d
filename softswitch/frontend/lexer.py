"""Tokens of P4_16 (spec 1.2.x), each located in the user's own source.

The lexer works on cpp's output (see :mod:`softswitch.frontend.preprocess`) and maps
every position back through the line map. Design choices that the parser relies on:

* Every ``>`` is its own token, marked ``glued`` when no space precedes it, so the
  parser can close nested generics (``bit<8>>``) and still read ``a >> b`` and
  ``a >>= b`` as shifts — the trick p4c's grammar uses too.
* Words the spec reserves are tokens of their own kind (``kind == text``); contextual
  words (``apply``, ``key``, ``actions``, ``state``, ``entries``, ``type``, ``priority``,
  ``list``) are identifiers, because p4c accepts them as names of fields, variables …
* A character that starts no token becomes an ``UNEXPECTED`` token rather than an
  error: p4c accepts any token inside annotation bodies (free-form annotations), and
  the parser reports it as a syntax error anywhere else.
* ``{#}`` (the invalid header) is one token, as in p4c: ``{ # }`` is an error.
* Comments survive cpp (p4c runs it with ``-C``), so they are skipped here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from softswitch.diagnostics import P4Error, SourceLoc
from softswitch.frontend.preprocess import Preprocessed

KEYWORDS = frozenset({
    "abstract", "action", "bit", "bool", "break", "const", "continue", "control",
    "default", "else", "enum", "error", "exit", "extern", "false", "for", "header",
    "header_union", "if", "in", "inout", "int", "match_kind", "out", "package", "parser",
    "return", "select", "string", "struct", "switch", "table", "this", "transition",
    "true", "tuple", "typedef", "value_set", "varbit", "void", "_",
})

# Longest first: the regex alternation picks the first alternative that matches.
OPERATORS = (
    "{#}", "&&&", "|+|=", "|-|=", "<<=", "...", "|+|", "|-|", "..", "+:", "<<", "&&", "||", "==",
    "!=", ">=", "<=", "++", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
    "+", "-", "*", "/", "%", "|", "&", "^", "~", "(", ")", "[", "]", "{", "}", "<",
    ">", "!", ":", ",", "?", ".", "=", ";", "@",
)

_NUMBER = (
    r"\d+[ws](?:0[xX][0-9a-fA-F_]+|0[dD][0-9_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9_]+)"
    r"|0[xX][0-9a-fA-F_]+|0[dD][0-9_]+|0[oO][0-7_]+|0[bB][01_]+|\d[\d_]*"
)
_TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\f\v]+)"
    r"|(?P<nl>\n)"
    r"|(?P<lcomment>//[^\n]*)"
    r"|(?P<bcomment>/\*.*?\*/)"
    r"|(?P<ucomment>/\*)"
    r'|(?P<string>"(?:[^"\\]|\\.)*")'
    r'|(?P<ustring>")'
    rf"|(?P<number>{_NUMBER})"
    r"|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>" + "|".join(re.escape(o) for o in OPERATORS) + ")"
    r"|(?P<unexpected>.)",
    re.DOTALL,
)
_WIDTH_PREFIX = re.compile(r"(\d+)([ws])")
_BASES = {"x": 16, "X": 16, "d": 10, "D": 10, "o": 8, "O": 8, "b": 2, "B": 2}
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}


@dataclass(slots=True)
class Token:
    """One token. ``kind`` is ``ID``, ``INT``, ``STRING``, ``EOF`` or the keyword /
    operator text itself. ``start``/``end`` index the preprocessed text (annotation
    bodies are sliced from it); ``line`` is the 0-based preprocessed line."""

    kind: str
    text: str
    loc: SourceLoc
    start: int
    end: int
    line: int
    glued: bool = False
    value: Any = None

    def describe(self) -> str:
        """How a syntax error names this token (p4c style)."""
        return _TOKEN_WORDS.get(self.kind, "`{}`").format(self.text)


# How a syntax error names a token of each kind ({} is its text); others: `text`.
_TOKEN_WORDS = {
    "EOF": "end of file",
    "ID": "identifier `{}`",
    "INT": "integer `{}`",
    "STRING": "string literal {}",
    "UNEXPECTED": "character `{}`",
}


def parse_int_literal(text: str) -> tuple[int, int | None, bool]:
    """Value, width and signedness of an integer literal such as ``16w0xFFFF``."""
    width: int | None = None
    signed = False
    m = _WIDTH_PREFIX.match(text)
    body = text
    if m and len(text) > m.end():
        width = int(m.group(1))
        signed = m.group(2) == "s"
        body = text[m.end():]
    base = 10
    if len(body) > 1 and body[0] == "0" and body[1] in _BASES:
        base = _BASES[body[1]]
        body = body[2:]
    digits = body.replace("_", "")
    value = int(digits, base) if digits else 0
    return value, width, signed


def unescape_string(raw: str) -> str:
    """Decode the escapes of a string literal body (unknown ones are kept verbatim)."""
    out: list[str] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


class _Cursor:
    """Tracks line/column while scanning so each token gets its location cheaply (this
    runs once per token of every program, core.p4 and v1model.p4 included)."""

    def __init__(self, pre: Preprocessed) -> None:
        self.pre = pre
        self.origins = pre.lines
        self.line = 0
        self.line_start = 0

    def loc(self, pos: int) -> SourceLoc:
        if self.line < len(self.origins):
            file, line = self.origins[self.line]
            return SourceLoc(file, line, pos - self.line_start + 1)
        return self.pre.loc(self.line, pos - self.line_start + 1)

    def advance_over(self, text: str, start: int, end: int) -> None:
        """Account for newlines inside ``text[start:end]`` (comments, strings)."""
        n = text.count("\n", start, end)
        if n:
            self.line += n
            self.line_start = text.rfind("\n", start, end) + 1


def tokenize(pre: Preprocessed) -> list[Token]:
    """All tokens of the preprocessed program, ending with an ``EOF`` token."""
    text = pre.text
    cur = _Cursor(pre)
    tokens: list[Token] = []
    pos = 0
    last_end = -1
    n = len(text)
    match = _TOKEN_RE.match
    while pos < n:
        m = match(text, pos)
        assert m is not None  # the `unexpected` alternative matches any character
        group = m.lastgroup
        end = m.end()
        if group == "ws":
            pos = end
            continue
        if group == "nl":
            cur.line += 1
            cur.line_start = end
            pos = end
            continue
        if group in ("lcomment", "bcomment"):
            cur.advance_over(text, pos, end)
            pos = end
            continue
        if group == "ucomment":
            raise P4Error("unterminated comment", cur.loc(pos))
        if group == "ustring":
            raise P4Error("unterminated string literal", cur.loc(pos))
        tok_text = m.group()
        tok = Token("", tok_text, cur.loc(pos), pos, end, cur.line, glued=(pos == last_end))
        if group == "string":
            tok.kind = "STRING"
            tok.value = unescape_string(tok_text[1:-1])
            cur.advance_over(text, pos, end)
        elif group == "number":
            tok.kind = "INT"
            tok.value = parse_int_literal(tok_text)
        elif group == "ident":
            tok.kind = tok_text if tok_text in KEYWORDS else "ID"
        elif group == "unexpected":
            tok.kind = "UNEXPECTED"
        else:
            tok.kind = tok_text
        tokens.append(tok)
        last_end = end
        pos = end
    tokens.append(_eof_token(tokens, cur.loc(pos), n, cur.line))
    return tokens


def _eof_token(tokens: list[Token], fallback: SourceLoc, end: int, line: int) -> Token:
    """The end marker sits right after the last real token (where p4c reports an
    unexpected end of file), not on the trailing empty line cpp leaves."""
    if not tokens:
        return Token("EOF", "", fallback, end, end, line)
    last = tokens[-1]
    loc = SourceLoc(last.loc.file, last.loc.line, last.loc.col + len(last.text))
    return Token("EOF", "", loc, end, end, last.line)
