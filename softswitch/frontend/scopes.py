"""Symbol tables with P4_16 scoping.

P4 keeps one namespace per scope, but a type and a value may share a name in p4c's
resolution (``control C(...)`` and ``C() c;`` both use ``C``), so lookups say whether
they want a type or a value. Functions and extern functions may be overloaded (by
parameter count/names), so a scope maps a name to a list of declarations.
"""

from __future__ import annotations

from collections.abc import Iterable

from softswitch.frontend import ast

#: Declarations that introduce a type name.
TYPE_DECLS: tuple[type, ...] = (
    ast.StructDecl, ast.HeaderDecl, ast.HeaderUnionDecl, ast.EnumDecl, ast.TypedefDecl,
    ast.ExternDecl, ast.ParserTypeDecl, ast.ControlTypeDecl, ast.PackageTypeDecl,
    ast.ParserDecl, ast.ControlDecl, ast.TypeParam,
)

#: Declarations that may legally share a name in one scope (overloads).
OVERLOADABLE: tuple[type, ...] = (ast.ExternFunctionDecl, ast.FunctionDecl, ast.MethodDecl)


def is_type_decl(decl: object) -> bool:
    return isinstance(decl, TYPE_DECLS)


class Scope:
    """One lexical scope; ``parent`` is the enclosing scope (None at top level)."""

    def __init__(self, parent: Scope | None = None, kind: str = "block") -> None:
        self.parent = parent
        self.kind = kind
        self.names: dict[str, list[ast.Node]] = {}

    def top(self) -> Scope:
        s = self
        while s.parent is not None:
            s = s.parent
        return s

    def declare(self, name: str, decl: ast.Node) -> ast.Node | None:
        """Add ``decl``; return the conflicting earlier declaration, if any.

        Overloads of functions are allowed when their parameter counts differ; a type
        and a value of the same name may coexist (p4c resolves them by context).
        """
        existing = self.names.setdefault(name, [])
        for old in existing:
            if isinstance(old, OVERLOADABLE) and isinstance(decl, OVERLOADABLE):
                if _param_count(old) != _param_count(decl):
                    continue
            both = (ast.ParserDecl, ast.ControlDecl)
            if is_type_decl(old) != is_type_decl(decl) and not isinstance(old, both) \
                    and not isinstance(decl, both) and self.parent is not None:
                continue
            return old
        existing.append(decl)
        return None

    def local(self, name: str) -> list[ast.Node]:
        return self.names.get(name, [])

    def lookup_all(self, name: str) -> list[ast.Node]:
        """All declarations of ``name`` in the innermost scope that declares it."""
        s: Scope | None = self
        while s is not None:
            found = s.names.get(name)
            if found:
                return found
            s = s.parent
        return []

    def lookup(self, name: str, want_type: bool | None = None) -> ast.Node | None:
        """The innermost declaration of ``name`` (preferring types or values if asked)."""
        s: Scope | None = self
        while s is not None:
            found = s.names.get(name)
            if found:
                chosen = _prefer(found, want_type)
                if chosen is not None:
                    return chosen
            s = s.parent
        return None

    def enclosing(self, kinds: Iterable[str]) -> Scope | None:
        wanted = set(kinds)
        s: Scope | None = self
        while s is not None:
            if s.kind in wanted:
                return s
            s = s.parent
        return None


def _prefer(found: list[ast.Node], want_type: bool | None) -> ast.Node | None:
    if want_type is None:
        return found[0]
    for d in found:
        if is_type_decl(d) == want_type:
            return d
    for d in found:
        if isinstance(d, (ast.ParserDecl, ast.ControlDecl)):
            return d
    return None


def _param_count(decl: ast.Node) -> int:
    params = getattr(decl, "params", None)
    return len(params) if params is not None else -1
