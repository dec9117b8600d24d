"""softswitch's layers: no import circle among its modules, nor among the rooms of any of
its packages (softswitch.devtools.layers), and the check finds circles where they are."""

from __future__ import annotations

from pathlib import Path

from softswitch.devtools import layers


def _package(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


def test_softswitch_has_no_circle(capsys):
    assert layers.main([]) == 0, capsys.readouterr().out
    out = capsys.readouterr().out
    assert "no circle" in out and "daemon" in out


def test_a_circle_of_modules_is_found(tmp_path):
    top = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from pkg.b import B\n",
        "pkg/b.py": "def f():\n    from pkg import a  # lazy, still an import\n",
    })
    found = layers.problems(layers.read_tree(top))
    assert any("modules import each other in a circle: pkg.a -> pkg.b" in p for p in found)
    assert layers.main([str(top)]) == 1


def test_a_circle_of_rooms_is_found(tmp_path):
    top = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/low/__init__.py": "",
        "pkg/low/x.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                        "    from pkg.high import y\n",
        "pkg/low/z.py": "",
        "pkg/high/__init__.py": "",
        "pkg/high/y.py": "from pkg.low import z\n",
    })
    found = layers.problems(layers.read_tree(top))
    assert found == ["inside pkg: pkg.high, pkg.low import each other "
                     "(pkg.high.y -> pkg.low.z; pkg.low.x -> pkg.high.y)"]


def test_floors_put_each_room_above_what_it_imports(tmp_path):
    top = _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/base.py": "",
        "pkg/mid.py": "import pkg.base\n",
        "pkg/top.py": "from pkg import mid\n",
    })
    graph = layers.read_tree(top)
    assert layers.problems(graph) == []
    assert layers.floors(graph, "pkg") == [["base"], ["mid"], ["top"]]
