"""softswitch.fastpath: modes, refusals, the build cache and the control interface of a
FastSwitch (its packets are compared with the interpreter's in
tests/test_fastpath_differential.py)."""

from __future__ import annotations

import logging

import pytest
from programs import v1model_program

from softswitch.core.control import KeyMatch
from softswitch.diagnostics import P4Error
from softswitch.fastpath import build
from softswitch.frontend.compiler import compile_program
from softswitch.v1model.fast_switch import FastSwitch, load_switch
from softswitch.v1model.switch import Switch

PROG = v1model_program(
    types="""
header h_t { bit<8> a; bit<8> b; }
struct pair_t { bit<8> x; bit<8> y; }
""",
    headers="h_t h;", extract=["h.h"],
    ingress="""
    counter(4, CounterType.packets_and_bytes) c;
    EXTRA
    register<int<16>>(4) r;
    direct_counter(CounterType.packets_and_bytes) dc;
    action fwd(bit<9> p) { sm.egress_spec = p; dc.count(); }
    table t { key = { h.h.a : exact; } actions = { fwd; } counters = dc; }
    apply {
        c.count((bit<32>)h.h.b);
        int<16> x;
        r.read(x, (bit<32>)h.h.b);
        r.write((bit<32>)h.h.b, x - 3);
        t.apply();
    }
""",
    emit=["h.h"])


def _checked(tmp_path, extra: str = ""):
    src = tmp_path / "p.p4"
    src.write_text(PROG.replace("EXTRA", extra))
    return compile_program(str(src))


def test_modes(tmp_path, monkeypatch, caplog):
    ok = _checked(tmp_path)
    assert isinstance(load_switch(ok, fastpath="auto"), FastSwitch)
    assert type(Switch.from_program(ok)) is Switch
    monkeypatch.setenv("SOFTSWITCH_FASTPATH", "off")
    assert type(load_switch(ok)) is Switch
    monkeypatch.setenv("SOFTSWITCH_FASTPATH", "sometimes")
    with pytest.raises(P4Error, match="off, auto, require"):
        load_switch(ok)
    monkeypatch.delenv("SOFTSWITCH_FASTPATH")
    bad = _checked(tmp_path, "register<pair_t>(4) pairs;")
    with caplog.at_level(logging.WARNING, logger="softswitch.fastpath"):
        sw = load_switch(bad)
    assert type(sw) is Switch
    assert "register 'I.pairs'" in sw.fastpath
    assert "only bit<W>/int<W> cells" in caplog.text
    with pytest.raises(P4Error, match="C fast path cannot run") as exc:
        load_switch(bad, fastpath="require")
    assert exc.value.loc is not None and exc.value.loc.line == 14


def test_no_compiler_falls_back(tmp_path, monkeypatch, caplog):
    """Without a C compiler the interpreter runs, and says so once per process (a lab
    loads a switch per node)."""
    monkeypatch.setenv("SOFTSWITCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    build.compiler.cache_clear()
    build._loaded.clear()
    try:
        with caplog.at_level(logging.WARNING, logger="softswitch.fastpath"):
            sw = load_switch(_checked(tmp_path))
            load_switch(_checked(tmp_path))
        assert type(sw) is Switch and "cannot run the C compiler" in sw.fastpath
        assert sum("cannot run the C compiler" in r.getMessage()
                   for r in caplog.records) == 1
        with pytest.raises(P4Error, match="cannot run the C compiler"):
            load_switch(_checked(tmp_path), fastpath="require")
    finally:
        build.compiler.cache_clear()


def test_build_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SOFTSWITCH_CACHE", str(tmp_path / "cache"))
    sw = Switch.from_program(_checked(tmp_path))
    from softswitch.fastpath.cprogram import CProgram
    source = CProgram(sw).generate()
    build._loaded.clear()
    _mod, key, built = build.load(source)
    assert built or (tmp_path / "cache").exists()
    build._loaded.clear()
    _mod2, key2, built2 = build.load(source)
    assert key2 == key and not built2


def test_debug_keeps_the_generated_source(tmp_path, monkeypatch):
    """SOFTSWITCH_DEBUG=1 keeps the C a build compiled beside the module it built."""
    monkeypatch.setenv("SOFTSWITCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SOFTSWITCH_DEBUG", raising=False)
    source = "#include <Python.h>\n/* debug keeps me */\n" + HELPER_C
    build._loaded.clear()
    _mod, key, built = build.load(source)
    assert built and not list(build.cache_dir().glob("*.c"))
    monkeypatch.setenv("SOFTSWITCH_DEBUG", "1")
    source += "/* again */\n"
    build._loaded.clear()
    _mod, key, built = build.load(source)
    kept = build.cache_dir() / f"ssfp_{key}.c"
    assert built and kept.exists() and kept.read_text().endswith(source)
    build._loaded.clear()


HELPER_C = r"""
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, P4_MODNAME_STR, NULL, -1, NULL};
PyMODINIT_FUNC P4_PYINIT(void) { return PyModule_Create(&def); }
"""


def _helper(tmp_path, monkeypatch, mode, cc=None):
    """load_helper on a tiny C module, with SOFTSWITCH_FASTPATH=mode (and CC=cc)."""
    monkeypatch.setenv("SOFTSWITCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SOFTSWITCH_FASTPATH", mode)
    if cc is not None:
        monkeypatch.setenv("CC", cc)
    source = tmp_path / "helper.c"
    source.write_text("#include <Python.h>\n" + HELPER_C)
    build.compiler.cache_clear()
    build._loaded.clear()
    try:
        return build.load_helper(source, logging.getLogger("test.helper"), "the helper",
                                 "doing without it")
    finally:
        build.compiler.cache_clear()
        build._loaded.clear()


def test_helpers_follow_the_fastpath_mode(tmp_path, monkeypatch, caplog):
    """The C helpers (batchio, entrywire) are built with auto and require, never with
    off; where they cannot be built, auto warns and goes without, require refuses."""
    assert _helper(tmp_path, monkeypatch, "auto") is not None
    assert _helper(tmp_path, monkeypatch, "require") is not None
    assert _helper(tmp_path, monkeypatch, "off") is None
    missing = str(tmp_path / "no-such-cc")
    assert _helper(tmp_path, monkeypatch, "off", cc=missing) is None
    assert not [r for r in caplog.records if r.name == "test.helper"]
    with caplog.at_level(logging.WARNING, logger="test.helper"):
        assert _helper(tmp_path, monkeypatch, "auto", cc=missing) is None
    assert "the helper unavailable, doing without it: cannot run the C compiler" \
        in caplog.text
    with pytest.raises(P4Error, match="the helper cannot be built "
                                      r"\(SOFTSWITCH_FASTPATH=require\): cannot run"):
        _helper(tmp_path, monkeypatch, "require", cc=missing)
    with pytest.raises(P4Error, match="SOFTSWITCH_FASTPATH must be one of"):
        _helper(tmp_path, monkeypatch, "sometimes")


def test_control_interface_reads_c_state(tmp_path):
    checked = _checked(tmp_path)
    ref = Switch.from_program(checked)
    fast = load_switch(checked, fastpath="require")
    other = load_switch(checked, fastpath="require")   # its own state
    for sw in (ref, fast, other):
        sw.clock.freeze(100)
    for sw in (ref, fast):
        h = sw.table_add("t", [KeyMatch("h.h.a", "exact", 7)], "fwd", [3])
        sw.register_write("r", 2, -5)
        sw.counter_write("c", 1, 10, 1000)
        for b in (1, 2, 2):
            sw.inject(0, bytes([7, b]))
        sw.clock.advance(40)
    for name in ("c",):
        assert [fast.counter_read(name, i) for i in range(4)] == \
            [ref.counter_read(name, i) for i in range(4)] == [(0, 0), (11, 1002), (2, 4), (0, 0)]
    assert [fast.register_read("r", i) for i in range(4)] == \
        [ref.register_read("r", i) for i in range(4)] == [0, -3, -11, 0]
    assert fast.counter_read("dc", h) == ref.counter_read("dc", h) == (3, 6)
    assert [(v.packets, v.bytes) for v in fast.table_entries("t")] == [(3, 6)]
    assert fast.entry_idle_us("t", h) == ref.entry_idle_us("t", h) == 40
    fast.counter_reset("dc")
    fast.register_reset("r")
    assert fast.counter_read("dc", h) == (0, 0) and fast.register_read("r", 2) == 0
    assert other.counter_read("c", 1) == (0, 0) and other.table_entries("t") == []
    with pytest.raises(P4Error, match="out of range"):
        fast.counter_read("c", 4)
    with pytest.raises(P4Error, match="no entry"):
        fast.entry_idle_us("t", 99)
    fast.table_delete("t", h)
    assert [o.port for o in fast.inject(0, bytes([7, 0]))] == [0]   # miss: egress_spec 0
