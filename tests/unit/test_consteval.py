"""Compile-time evaluation follows P4's run-time arithmetic (wrap, saturate, shifts, slices)."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend import ast, consteval
from softswitch.frontend import types as T
from softswitch.frontend.compiler import check_program
from softswitch.frontend.parser import parse_text

B8 = T.BitsType(8)
S8 = T.BitsType(8, signed=True)


@pytest.mark.parametrize("value, typ, expected", [
    (256, B8, 0), (-1, B8, 255), (128, S8, -128), (-129, S8, 127), (5, T.IntType(), 5),
    (1 << 100, T.IntType(), 1 << 100), (3, T.BitsType(0), 0),
])
def test_wrap(value, typ, expected):
    assert consteval.wrap(value, typ) == expected


@pytest.mark.parametrize("op, left, right, typ, expected", [
    ("+", 250, 10, B8, 4), ("-", 0, 1, B8, 255), ("*", 16, 16, B8, 0),
    ("|+|", 250, 10, B8, 255), ("|-|", 3, 10, B8, 0), ("|+|", 100, 100, S8, 127),
    ("|-|", -100, 100, S8, -128), ("<<", 1, 9, B8, 0), (">>", -128, 2, S8, -32),
    (">>", 128, 2, B8, 32), ("/", 7, 2, B8, 3), ("%", 7, 2, T.IntType(), 1),
    ("&", 0xF0, 0x3C, B8, 0x30), ("^", 0xFF, 0x0F, B8, 0xF0), ("==", 3, 3, T.BoolType(), True),
    ("<", 3, 2, T.BoolType(), False), ("+", 1 << 80, 1, T.IntType(), (1 << 80) + 1),
])
def test_fold_binary(op, left, right, typ, expected):
    assert consteval.fold_binary(op, left, right, typ, None) == expected


def test_concatenation_uses_right_width():
    assert consteval.fold_binary("++", 0xA, 0x5, T.BitsType(12), None, T.BitsType(4)) == 0xA5


@pytest.mark.parametrize("left, right", [(4, 0), (-8, 2), (8, -2)])
def test_division_needs_positive_operands(left, right):
    with pytest.raises(P4Error):
        consteval.fold_binary("/", left, right, T.IntType(), None)


def test_slice_and_casts():
    assert consteval.fold_slice(0xABCD, 11, 4) == 0xBC
    assert consteval.fold_cast(300, B8, None) == 44
    assert consteval.fold_cast(True, T.BitsType(1), None) == 1
    assert consteval.fold_cast(1, T.BoolType(), None) is True
    with pytest.raises(P4Error):
        consteval.fold_cast(2, T.BoolType(), None)


def _consts(src: str) -> dict[str, object]:
    prog = check_program(parse_text(src)).program
    return {d.name: consteval.evaluate(d.value) for d in prog.decls
            if isinstance(d, ast.ConstDecl)}


def test_constant_declarations_are_folded_with_their_types():
    c = _consts("""
        const bit<8> a = 255 + 2;
        const int<8> b = -3;
        const bit<4> c = (bit<4>)(a >> 4);
        const int big = 1 << 70;
        const bit<16> cat = 8w1 ++ 8w2;
        const bool t = a == 1 && big > 0;
        const bit<8> sat = 8w250 |+| 8w10;
        const bit<3> sl = 8w0b10110100[4:2];
        enum bit<8> E { X = 7, Y = 9 }
        const bit<8> ev = (bit<8>)E.Y;
    """)
    assert c == {"a": 1, "b": -3, "c": 0, "big": 1 << 70, "cat": 0x0102, "t": True,
                 "sat": 255, "sl": 0b101, "ev": 9}


def test_enum_and_error_members_are_member_consts():
    prog = check_program(parse_text("""
        error { Oops, Again }
        enum Color { Red, Green }
        const Color g = Color.Green;
        const error e = error.Again;
    """)).program
    g, e = [d for d in prog.decls if isinstance(d, ast.ConstDecl)]
    assert g.value.const == consteval.MemberConst("Color", "Green", 1)
    assert e.value.const == consteval.MemberConst("error", "Again", 1)


def test_division_by_zero_in_a_constant_is_reported_at_its_line():
    with pytest.raises(P4Error) as info:
        check_program(parse_text("const bit<8> x = 1;\nconst bit<8> y = x / 0;\n", "z.p4"))
    assert info.value.loc.line == 2 and "Division by zero" in info.value.message
