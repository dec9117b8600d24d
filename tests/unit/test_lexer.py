"""P4_16 tokens: literals, keywords, operators and the `>` splitting the parser relies on."""

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend.lexer import parse_int_literal, tokenize
from softswitch.frontend.preprocess import build_line_map


def lex(text: str):
    return tokenize(build_line_map(text))[:-1]


def kinds(text: str) -> list[str]:
    return [t.kind for t in lex(text)]


@pytest.mark.parametrize("text, value, width, signed", [
    ("5", 5, None, False),
    ("0x1F", 31, None, False),
    ("0b1010", 10, None, False),
    ("0o17", 15, None, False),
    ("0d9", 9, None, False),
    ("8w5", 5, 8, False),
    ("4s3", 3, 4, True),
    ("16w0xFFFF", 0xFFFF, 16, False),
    ("32w0b1111_0000", 0xF0, 32, False),
    ("1_000", 1000, None, False),
    ("8s0o17", 15, 8, True),
])
def test_integer_literals(text, value, width, signed):
    toks = lex(text)
    assert len(toks) == 1 and toks[0].kind == "INT"
    assert toks[0].value == (value, width, signed) == parse_int_literal(text)


def test_keywords_and_contextual_words():
    assert kinds("abstract for in break continue this value_set match_kind error "
                 "header_union varbit string int bit bool true false default _") == [
        "abstract", "for", "in", "break", "continue", "this", "value_set", "match_kind",
        "error", "header_union", "varbit", "string", "int", "bit", "bool", "true", "false",
        "default", "_"]
    # Contextual: identifiers so they may name fields and variables, as in p4c.
    assert kinds("apply key actions state entries type priority list _x") == ["ID"] * 9


def test_operators_longest_match():
    assert kinds("&&& && & .. . ++ + |+| |-| | << <= < >= == != = |+|= += <<=") == [
        "&&&", "&&", "&", "..", ".", "++", "+", "|+|", "|-|", "|", "<<", "<=", "<", ">=",
        "==", "!=", "=", "|+|=", "+=", "<<="]
    assert kinds("{#} @ ? : +:") == ["{#}", "@", "?", ":", "+:"]


def test_right_angles_are_single_and_marked_glued():
    toks = lex("bit<8>> a > > b")
    angles = [t for t in toks if t.kind == ">"]
    assert len(angles) == 4
    assert [t.glued for t in angles] == [True, True, False, False]


def test_string_literal_escapes():
    (tok,) = lex(r'"a\"b\\c\n"')
    assert tok.kind == "STRING" and tok.value == 'a"b\\c\n'


def test_comments_are_skipped_and_lines_counted():
    toks = lex("a /* x\ny */ b // c\nd")
    assert [(t.text, t.loc.line, t.loc.col) for t in toks] == [
        ("a", 1, 1), ("b", 2, 6), ("d", 3, 1)]


def test_locations_follow_line_markers():
    toks = lex('# 10 "user.p4"\n  foo\n')
    assert (toks[0].loc.file, toks[0].loc.line, toks[0].loc.col) == ("user.p4", 10, 3)


def test_unknown_character_is_a_token_the_parser_rejects():
    toks = lex("a $ b")
    assert [t.kind for t in toks] == ["ID", "UNEXPECTED", "ID"]
    assert toks[1].loc.col == 3


@pytest.mark.parametrize("text, msg", [
    ('x = "abc', "unterminated string"),
    ("x = /* never closed", "unterminated comment"),
])
def test_unterminated_tokens_raise(text, msg):
    with pytest.raises(P4Error, match=msg) as exc:
        lex(text)
    assert exc.value.loc.col == 5
