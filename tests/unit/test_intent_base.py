"""An intent's ``base:`` chain is followed to any depth; a cycle is refused naming its files.

Each file's ``base`` is relative to that file (or a shipped profile); a file's top-level
keys replace its base's whole, so the nearest file that sets a key wins. A chain that
comes back to a file it has read (the intent itself included) is refused, with the
files in the order the chain reached them, by ``load_intent`` and by ``tailcc
validate``/``apply`` (exit 1, no traceback).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from controlplane.cli import main
from controlplane.intent import IntentError, load_intent

DEPTH = 120          # more than any sane chain; nothing recursive may run out


def _chain(tmp_path: Path, depth: int) -> Path:
    """top.yaml -> d/f1.yaml -> ... -> d/f{depth}.yaml -> default. f7 and f60 both set
    fast_cnp (f7 is nearer the top: it wins); f90 sets schedulers (nothing nearer does:
    they replace the profile's); the classes come from the profile at the end."""
    (tmp_path / "d").mkdir()
    (tmp_path / "top.yaml").write_text("base: d/f1.yaml\n")
    cnp = "fast_cnp: {{enabled: true, dscp: 48, queue: 6, min_interval_us: {}}}\n"
    extra = {7: cnp.format(70), 60: cnp.format(60),
             90: "schedulers:\n  - name: deep\n    queues: {7: {mode: strict}}\n"}
    for i in range(1, depth + 1):
        nxt = f"f{i + 1}.yaml" if i < depth else "default"
        (tmp_path / "d" / f"f{i}.yaml").write_text(f"base: {nxt}\n{extra.get(i, '')}")
    return tmp_path / "top.yaml"


def test_a_chain_is_followed_to_any_depth(tmp_path: Path):
    intent = load_intent(_chain(tmp_path, DEPTH))
    assert intent.fast_cnp.min_interval_us == 70
    assert [s.name for s in intent.schedulers] == ["deep"]
    assert "hot_kv" in [c.name for c in intent.classes]          # from the shipped profile


def test_an_intent_that_is_its_own_base_is_refused(tmp_path: Path, capsys):
    path = tmp_path / "self.yaml"
    path.write_text("# itself\nbase: self.yaml\n")
    with pytest.raises(IntentError) as err:
        load_intent(path)
    assert str(err.value) == f"{path}:2: base: a cycle of bases: {path} -> {path}"
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr()
    assert f"{path}:2: base: a cycle of bases: {path} -> {path}" in out.err + out.out
    assert "Traceback" not in out.err


def test_a_longer_cycle_names_every_file_in_order(tmp_path: Path):
    (tmp_path / "sub").mkdir()
    a, b, c = tmp_path / "a.yaml", tmp_path / "sub" / "b.yaml", tmp_path / "sub" / "c.yaml"
    a.write_text("base: sub/b.yaml\n")
    b.write_text("base: c.yaml\n")
    c.write_text("base: b.yaml\n")           # back to b: a itself is not in the cycle
    with pytest.raises(IntentError) as err:
        load_intent(a)
    assert str(err.value) == (f"{a}:1: base: in {c}: a cycle of bases: {a} -> {b} -> {c} "
                              f"-> {b}")


def test_a_missing_base_deep_in_the_chain_names_the_file_that_asks_for_it(tmp_path: Path):
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("version: 1\nbase: gold.yaml\n")
    with pytest.raises(IntentError) as err:
        load_intent(tmp_path / "a.yaml")
    assert str(err.value) == (f"{tmp_path / 'a.yaml'}:1: base: in {tmp_path / 'b.yaml'}: "
                              "no profile or file 'gold.yaml' (shipped profiles: default)")
