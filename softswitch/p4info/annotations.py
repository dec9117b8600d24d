"""P4 annotations as P4Info carries them (p4c's ``addAnnotations``/``addDocumentation``).

Unstructured annotations are copied as text (``@name(body)``), structured ones
(``@name[…]``) as ``structured_annotations`` with constant values; ``@brief`` and
``@description`` become the ``doc`` field; ``@name`` and ``@id`` are represented elsewhere.
"""

from __future__ import annotations

from typing import Any

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast
from softswitch.frontend.lexer import tokenize
from softswitch.frontend.preprocess import Preprocessed

# Annotations P4Info carries elsewhere (or not at all) and so never copies.
_NOT_COPIED = {"name", "id", "brief", "description"}


# Annotations p4c's front end parses into expressions: printed as written. The bodies of
# all others stay token lists, which p4c prints with one space between tokens.
_PARSED = {
    "name", "deprecated", "noWarn", "length", "priority", "match", "controller_header",
    "id", "brief", "description", "max_group_size", "p4runtime_translation", "hidden",
    "tableonly", "defaultonly", "atomic", "optional", "pure", "noSideEffects", "pkginfo",
}


def annotation_text(a: ast.Annotation) -> str:
    """An unstructured annotation as p4c prints it: ``@name`` or ``@name(body)``."""
    body = a.body.strip()
    if not body:
        return f"@{a.name}"
    if a.name not in _PARSED:
        body = _spaced_tokens(body)
    return f"@{a.name}({body})"


def _spaced_tokens(body: str) -> str:
    try:
        toks = tokenize(Preprocessed(body, [("<annotation>", 1)]))
    except P4Error:
        return body
    return " ".join(t.text for t in toks if t.kind != "EOF")


_BINARY = {
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
    "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b, "<": lambda a, b: a < b, ">": lambda a, b: a > b,
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b,
    "&&": lambda a, b: a and b, "||": lambda a, b: a or b,
}


def const_of(e: ast.Expr) -> Any:
    """The constant value of an expression: the checker's annotation, else folded here
    (annotation bodies are not type-checked, yet p4c folds ``@x[2*3]`` to 6)."""
    c = getattr(e, "const", ast.NOT_CONST)
    if c is not ast.NOT_CONST:
        return c
    if isinstance(e, (ast.IntLiteral, ast.BoolLiteral, ast.StringLiteral)):
        return e.value
    if isinstance(e, ast.Unary):
        v = const_of(e.expr)
        if e.op == "!" and isinstance(v, bool):
            return not v
        if e.op == "-" and isinstance(v, int) and not isinstance(v, bool):
            return -v
    if isinstance(e, ast.Binary) and e.op in _BINARY:
        left, right = const_of(e.left), const_of(e.right)
        if left is not None and right is not None and type(left) is type(right):
            return _BINARY[e.op](left, right)
    return None


def _set_expression(msg: Any, e: ast.Expr) -> None:
    v = const_of(e)
    if isinstance(v, bool):
        msg.bool_value = v
    elif isinstance(v, int):
        msg.int64_value = v
    elif isinstance(v, str):
        msg.string_value = v
    else:
        raise P4Error("structured annotation values must be compile-time constants",
                      e.loc)


def add_annotations(msg: Any, annotations: list[ast.Annotation],
                    skip: set[str] | frozenset[str] = frozenset()) -> None:
    """Copy annotations into a message's ``annotations``/``structured_annotations``."""
    for a in annotations:
        if a.name in _NOT_COPIED or a.name in skip:
            continue
        if a.structured:
            sa = msg.structured_annotations.add()
            sa.name = a.name
            if a.kv is not None:
                sa.kv_pair_list.SetInParent()
                for k, v in a.kv.items():
                    kv = sa.kv_pair_list.kv_pairs.add()
                    kv.key = k
                    _set_expression(kv.value, v)
            else:
                sa.expression_list.SetInParent()
                for e in a.exprs or []:
                    _set_expression(sa.expression_list.expressions.add(), e)
        else:
            msg.annotations.append(annotation_text(a))


def add_doc(msg: Any, annotations: list[ast.Annotation]) -> None:
    brief = next((a for a in annotations if a.name == "brief"), None)
    desc = next((a for a in annotations if a.name == "description"), None)
    for a, fld in ((brief, "brief"), (desc, "description")):
        if a is not None:
            text = a.exprs[0].value if a.exprs and isinstance(a.exprs[0],
                                                              ast.StringLiteral) else ""
            setattr(msg.doc, fld, text)
