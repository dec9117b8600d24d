"""cpp runs like p4c's and every output line maps back to the user's file and line."""

from pathlib import Path

import pytest

from softswitch.diagnostics import P4Error
from softswitch.frontend.lexer import tokenize
from softswitch.frontend.parser import parse_file, parse_text
from softswitch.frontend.preprocess import (
    P4INCLUDE_DIR,
    build_line_map,
    preprocess,
    preprocess_text,
)


def _loc_of(pre, word: str):
    """Location of the first identifier token spelled ``word``."""
    for tok in tokenize(pre):
        if tok.text == word:
            return tok.loc
    raise AssertionError(f"{word} not found")


def test_line_markers_are_blanked_and_mapped():
    pre = build_line_map('# 1 "a.p4"\nx\n# 7 "b.p4" 1\ny\nz\n# 2 "a.p4" 2\nw\n')
    assert "#" not in pre.text
    lines = pre.text.split("\n")
    assert pre.lines[lines.index("x")] == ("a.p4", 1)
    assert pre.lines[lines.index("y")] == ("b.p4", 7)
    assert pre.lines[lines.index("z")] == ("b.p4", 8)
    assert pre.lines[lines.index("w")] == ("a.p4", 2)


def _files(root: Path, texts: dict[str, str]) -> None:
    """Write each text at its path below ``root`` (folders made as needed)."""
    for name, text in texts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_include_maps_tokens_to_the_included_file(tmp_path: Path):
    _files(tmp_path, {"sub/inc.p4": "// header\n\nheader h_t { bit<8> f; }\n",
                      "main.p4": '#include "sub/inc.p4"\n\n\nstruct s_t {\n  h_t hh;\n}\n'})
    pre = preprocess(tmp_path / "main.p4")
    loc = _loc_of(pre, "h_t")
    assert Path(loc.file).name == "inc.p4" and (loc.line, loc.col) == (3, 8)
    loc = _loc_of(pre, "hh")
    assert Path(loc.file).name == "main.p4" and (loc.line, loc.col) == (5, 7)


def test_quoted_include_is_found_next_to_the_including_file(tmp_path: Path):
    _files(tmp_path, {"a/one.p4": '#include "two.p4"\n',
                      "a/two.p4": "const bit<8> TWO = 2;\n",
                      "main.p4": '#include "a/one.p4"\n'})
    prog = parse_file(tmp_path / "main.p4")
    assert [d.name for d in prog.decls] == ["TWO"]


def test_user_include_dirs_and_defines(tmp_path: Path):
    _files(tmp_path, {"inc/lib.p4": "const bit<8> LIB = WIDTH;\n",
                      "m.p4": "#include <lib.p4>\n#ifdef EXTRA\nconst bit<8> E = 1;\n#endif\n"})
    prog = parse_file(tmp_path / "m.p4", include_dirs=[tmp_path / "inc"],
                      defines={"WIDTH": "7", "EXTRA": None})
    assert [d.name for d in prog.decls] == ["LIB", "E"]
    assert prog.decls[0].value.value == 7


def test_no_predefined_macros_like_p4c():
    # -undef: `linux`/`unix` must stay identifiers, as with p4c.
    pre = preprocess_text("linux unix __GNUC__\n")
    assert pre.text.split() == ["linux", "unix", "__GNUC__"]


def test_architecture_includes_resolve():
    assert (P4INCLUDE_DIR / "core.p4").exists()
    prog = parse_text("#include <core.p4>\n#include <v1model.p4>\n")
    names = {getattr(d, "name", None) for d in prog.decls}
    assert {"packet_in", "V1Switch", "standard_metadata_t"} <= names


def test_missing_include_is_a_located_error():
    with pytest.raises(P4Error) as exc:
        preprocess_text('\n#include "nope.p4"\n', filename="prog.p4")
    err = exc.value
    assert err.loc is not None and err.loc.file == "prog.p4" and err.loc.line == 2
    assert "nope.p4" in err.message


def test_bad_directive_is_a_located_error(tmp_path: Path):
    main = tmp_path / "bad.p4"
    main.write_text("const bit<8> x = 1;\n#if\n#endif\n")
    with pytest.raises(P4Error) as exc:
        preprocess(main)
    assert exc.value.loc.line == 2 and exc.value.loc.file.endswith("bad.p4")


def test_missing_input_file(tmp_path: Path):
    with pytest.raises(P4Error, match="does not exist"):
        preprocess(tmp_path / "absent.p4")


def test_user_include_dirs_come_before_ours_as_in_p4c(tmp_path: Path):
    (tmp_path / "core.p4").write_text("const bit<8> MINE = 1;\n")
    prog = parse_text("#include <core.p4>\n", include_dirs=[tmp_path])
    assert [d.name for d in prog.decls] == ["MINE"]


def test_hash_lines_cpp_passes_through_are_ignored_like_p4c():
    prog = parse_text("# an assembler-style comment line\n#pragma whatever\n"
                      "const bit<8> K = 1;\n")
    (k,) = prog.decls
    assert k.name == "K" and k.loc.line == 3
