"""The front end's entry point: parse, then run every semantic pass.

``compile_program(path)`` preprocesses and parses a P4_16 file and calls
``check_program``, which resolves names, types every expression, folds constants and
applies the checks that make p4c reject programs. Errors are collected and raised
together as :class:`P4Errors`; on success the returned :class:`CheckedProgram` holds the
annotated AST.

The passes, by module: ``scopes`` (symbol tables), ``typeresolve`` (types as written →
semantic types, declaration rules), ``typecheck`` (expressions, literal inference,
implicit conversions), ``callcheck`` (calls, overloads, type-argument inference,
constructors), ``tablecheck`` (tables), ``declcheck`` (declarations, statements,
parsers, controls), ``annotations``, ``consteval`` (constant folding), ``checks``
(whole-program checks after typing: recursion, parser reachability, global names),
``runtime_division`` (the ``/`` and ``%`` p4c's folding leaves for run time),
``cpchecks`` (what the control-plane description cannot express, on the tables in use).

The annotations the later passes can rely on are listed on :class:`CheckedProgram`.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softswitch.diagnostics import Diagnostic, DiagnosticSink, P4Error
from softswitch.frontend import ast, cpchecks, runtime_division
from softswitch.frontend.checks import run_checks
from softswitch.frontend.declcheck import DeclChecker

# Deeply nested expressions recurse once per level in the checker (as in the parser).
_RECURSION_LIMIT = 20000


@dataclass
class CheckedProgram:
    """A program that passed every front-end check, with its annotated AST.

    Annotations the later passes can rely on:

    * ``PathExpr.decl`` — the declaration a name refers to (``VarDecl``, ``Param``,
      ``ConstDecl``, ``ActionDecl``, ``TableDecl``, ``InstanceDecl``, ``FunctionDecl``,
      ``ExternFunctionDecl``, ``ParserState`` — ``accept``/``reject`` are synthesized
      ``ParserState`` nodes without statements —, ``ValueSetDecl``, a match-kind
      ``EnumMember``, or a type declaration when the name denotes a type).
    * ``Expr.type`` — a :mod:`softswitch.frontend.types` value; untyped integer literals get
      the concrete type of their context; shift amounts, slice bounds and genuinely
      ``int`` constants stay :class:`IntType`. Keyset ``_``/``default`` get the key's type.
    * ``Expr.const`` — see :mod:`softswitch.frontend.consteval` (enum and ``error`` members
      are ``MemberConst``; list values tuples; struct values ``StructConst``).
    * ``Call.resolved`` — a :class:`softswitch.frontend.calls.CallInfo`: ``kind`` (action,
      function, extern_function, extern_method, abstract_method, table_apply,
      parser_apply, control_apply, constructor, builtin), ``decl`` (the callee
      declaration: ``ActionDecl``/``FunctionDecl``/``ExternFunctionDecl``/``MethodDecl``/
      ``TableDecl``/``ParserDecl``/``ControlDecl``/``ExternDecl``/``PackageTypeDecl``),
      ``params`` (after type substitution), ``args`` (in parameter order, None for omitted
      optional parameters, the default expression for defaulted ones), ``type_args``
      (type variable name → type), ``extern`` (the specialized ``ExternType`` for methods),
      ``receiver`` (the object expression of methods/apply/builtins), ``builtin``
      (isValid, setValid, setInvalid, push_front, pop_front, min/maxSizeInBits/Bytes).
    * ``TypeRef.resolved`` — the semantic type.
    * ``InstanceDecl.instance_type`` — the instance's type (``ExternType`` or
      ``BlockType``); ``InstanceDecl.ctor`` — the constructor ``CallInfo``.
    * ``ActionRef.call`` — ``CallInfo`` of kind ``action`` for table action lists, default
      actions and entries (``args`` None where the control plane supplies a value).
    * ``SelectCase.state_decl`` — the ``ParserState`` a select case goes to.
    """

    program: ast.Program
    warnings: list[Diagnostic] = field(default_factory=list)
    error_members: dict[str, int] = field(default_factory=dict)
    match_kinds: tuple[str, ...] = ()
    elaboration: Any = None   # the instance tree under main (elaborate.elaborate's cache)


def check_program(program: ast.Program) -> CheckedProgram:
    """Run name resolution, typing, constant folding and checks; raise on errors."""
    sink = DiagnosticSink()
    checker = DeclChecker(sink)
    old_limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old_limit, _RECURSION_LIMIT))
    try:
        checker.run(program)
    except RecursionError:
        raise P4Error("program nested too deeply to check", program.loc) from None
    finally:
        sys.setrecursionlimit(old_limit)
    if not sink.errors:
        run_checks(program, sink)
    if not sink.errors:
        runtime_division.check(program, checker.runtime_divisions, sink)
    elaboration = None
    if not sink.errors:
        elaboration = cpchecks.check(program, sink)
    sink.raise_if_errors()
    return CheckedProgram(program,
                          [d for d in sink.diagnostics if d.severity != "error"],
                          dict(checker.error_members), tuple(sorted(checker.match_kinds)),
                          elaboration)


def compile_program(path: str | Path, include_dirs: Sequence[str | Path] = (),
                    defines: Mapping[str, str] | None = None) -> CheckedProgram:
    """Preprocess, parse and check a P4_16 source file."""
    from softswitch.frontend.parser import parse_file

    program = parse_file(path, include_dirs=include_dirs, defines=defines)
    return check_program(program)
