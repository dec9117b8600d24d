"""The Grafana dashboard shipped in ``controlplane/grafana/tailcc.json``: valid dashboard
JSON (panels with PromQL targets), and every metric it queries is one that ``tailcc
export`` really serves — checked against the exporter scraping a live ``softswitch run
p4src/tailcc.p4`` programmed by ``tailcc apply``, so a renamed metric breaks the test,
not the operator's dashboard."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
from prometheus_client.parser import text_string_to_metric_families

from controlplane.cli import main
from softswitch.local_port import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "controlplane" / "grafana" / "tailcc.json"
PROMQL_FUNCS = {"sum", "rate", "irate", "increase", "by", "without", "clamp_min",
                "clamp_max", "avg", "max", "min", "topk", "histogram_quantile",
                "label_values", "on", "ignoring", "group_left"}


def _panels(dash: dict) -> list[dict]:
    out = []
    for p in dash["panels"]:
        out.append(p)
        out += p.get("panels", [])          # rows may nest panels
    return out


def _exprs(dash: dict) -> list[str]:
    return [t["expr"] for p in _panels(dash) for t in p.get("targets", [])]


def _metric_names(expr: str) -> set[str]:
    """Identifiers of the expression that are neither functions, keywords, label names
    (followed by an operator in a selector or listed in by (...)) nor strings."""
    expr = re.sub(r'"[^"]*"', '""', expr)                    # drop string literals
    expr = re.sub(r"\b(by|without)\s*\([^)]*\)", "", expr)   # grouping label lists
    expr = re.sub(r"\{[^}]*\}", "", expr)                    # selectors' label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)                   # range durations
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr))
    return {n for n in names if n not in PROMQL_FUNCS and not re.fullmatch(r"e\d*", n)}


def test_dashboard_is_grafana_json_with_promql_targets() -> None:
    dash = json.loads(DASHBOARD.read_text())
    assert dash["title"] and dash["uid"] and isinstance(dash["schemaVersion"], int)
    panels = _panels(dash)
    assert len(panels) >= 10
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for p in panels:
        assert p["type"] in {"timeseries", "stat", "gauge", "table", "bargauge"}, p["title"]
        pos = p["gridPos"]
        assert pos["w"] > 0 and pos["h"] > 0 and pos["x"] + pos["w"] <= 24, p["title"]
        assert p["targets"], f"panel {p['title']!r} has no query"
        for t in p["targets"]:
            assert t["refId"] and t["expr"].count("(") == t["expr"].count(")"), t
    variables = {v["name"] for v in dash["templating"]["list"]}
    assert {"datasource", "switch"} <= variables
    titles = " ".join(p["title"] for p in panels).lower()
    for topic in ("class", "ecn mark rate", "fast cnp", "unresolved", "drops", "queue depth",
                  "pfc"):
        assert topic in titles, topic


def _scrape(url: str, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return resp.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _count_something_everywhere(addr: str) -> None:
    """The exporter serves non-zero cells only (a fabric has thousands of idle ones), so
    give one in-scope cell of every counter and register of tailcc.p4 a value over
    P4Runtime: then every family ``tailcc export`` knows appears in the scrape."""
    from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
    from controlplane.p4rt.client import update
    from controlplane.telemetry.snapshot import COUNTERS, REGISTERS

    with Client(addr, 1, election_id=90) as c:
        b = EntityBuilder(P4InfoIndex(c.get_p4info()))
        writes = []
        for kind, name in COUNTERS.items():
            cell = (1 << 3 | 4 if kind in ("ecn_mark", "ecn_drop", "pfc")
                    else 0 if kind == "cnp_built" else 1)
            entry = b.counter_entry(name, cell)
            entry.data.packet_count, entry.data.byte_count = 5, 500
            writes.append(update("MODIFY", entry))
        for name in REGISTERS.values():
            writes.append(update("MODIFY", b.register_write(name, 1 << 3 | 4, 3)))
        c.write(writes)


def test_every_dashboard_metric_is_exported(tmp_path: Path) -> None:
    addr, http = f"127.0.0.1:{_free_port()}", _free_port()
    switch = subprocess.Popen([sys.executable, "-m", "softswitch", "run",
                               str(ROOT / "p4src/tailcc.p4"), "--device-id", "1", "--",
                               "--grpc-server-addr", addr],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    exporter = None
    try:
        channel = grpc.insecure_channel(addr)
        grpc.channel_ready_future(channel).result(timeout=120)
        channel.close()
        intent = tmp_path / "lab.yaml"
        intent.write_text("base: default\nswitches:\n  - name: s1\n"
                          f"    address: {addr}\n    device_id: 1\n    ports: [1, 2]\n"
                          "tenants:\n  - {name: t, vrf: 1, default: deny}\n"
                          "fast_cnp: {enabled: true}\n")
        assert main(["apply", str(intent), "-q"]) == 0   # the switch's own pipeline
        _count_something_everywhere(addr)
        exporter = subprocess.Popen([sys.executable, "-m", "controlplane.cli", "export",
                                     "-i", str(intent), "--port", str(http),
                                     "--listen", "127.0.0.1"], cwd=ROOT,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
        text = _scrape(f"http://127.0.0.1:{http}/metrics", time.monotonic() + 60)
    finally:
        if exporter is not None:
            exporter.terminate()
            exporter.wait(timeout=20)
        switch.terminate()
        switch.wait(timeout=20)
    exported: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            exported.setdefault(sample.name, set()).update(sample.labels)
    assert 'tailcc_switch_up{switch="s1"} 1.0' in text
    used = set()
    for expr in _exprs(json.loads(DASHBOARD.read_text())):
        names = _metric_names(expr)
        assert names, f"no metric in {expr!r}"
        used |= names
        for name in names:
            assert name in exported, f"{name} (in {expr!r}) is not exported; " \
                f"tailcc export serves {sorted(n for n in exported if n.startswith('tailcc'))}"
            for label in re.findall(r"\b(?:by|without)\s*\(([^)]*)\)", expr):
                for lab in (x.strip() for x in label.split(",")):
                    assert lab in exported[name], f"{name} has no label {lab!r}"
    # the dashboard covers what the exporter serves (nothing exported goes unseen)
    assert {n for n in exported if n.startswith("tailcc_")} - {"tailcc_fast_cnp_created"} \
        <= used | {n.replace("_total", "_created") for n in used}
