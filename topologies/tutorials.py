"""p4lang/tutorials' ``topology.json``, brought up as the tutorials' ``make run`` does.

The keys are read as the tutorials write them: ``hosts`` (name -> ``ip``, ``mac``,
``commands``), ``switches`` (name -> ``runtime_json``, ``cli_input``, ``program``,
``cpu_port``, ``priority_queues``), ``links`` (``[a, b]`` or ``[a, b, latency,
bandwidth]``, a switch end ``sN-pK`` for port K of sN). They become a
:class:`~topologies.schema.Topology`, validated like a YAML one (problems name the
file's own paths and lines), which the YAML runner brings up; hosts' interface is
``eth0``, as the tutorials' ``P4Host`` names it, so their ``commands`` run unchanged.

Paths are relative to the exercise folder (the current directory, as for ``make
run``), else to the topology's folder or its parent. A switch's P4 source is its
``program`` (``build/X.json`` names the ``X.p4`` beside ``build/``), else ``--p4``,
else the one its runtime file's ``bmv2_json``/``p4info`` name, else a folder's only
``.p4`` (make run's default). Each source is compiled once (softswitch or p4c) into
``RUN/logs/build/``; logs go to ``RUN/logs/``, pcaps to ``RUN/pcaps/`` (RUN: the
exercise folder or ``--run-dir``). Switches are numbered as the tutorials do, in file
order: gRPC port 50051+i, Thrift port 9090+i, device id i (the extension keys
``grpc_port``, ``thrift_port``, ``device_id`` move them). A zero latency is no delay;
any other needs the kernel's netem.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from controlplane.intent.problems import Problems
from controlplane.intent.reader import Node
from topologies.p4switch import p4c_compile, softswitch_command
from topologies.runner import RunnerError
from topologies.schema import Topology, TopologyError, read_data, topology_from_data

TOP_KEYS = ("hosts", "switches", "links")
HOST_KEYS = ("ip", "mac", "commands")
SWITCH_KEYS = ("runtime_json", "cli_input", "program", "cpu_port", "priority_queues",
               "grpc_port", "thrift_port", "device_id")
GRPC_BASE, THRIFT_BASE = 50051, 9090          # utils/p4runtime_switch.py's numbering
_SWITCH_END = re.compile(r"^(?P<switch>.+)-p(?P<port>\d+)$")
_SCHEMA_KEY = {"cli_commands": "cli_input"}   # the YAML schema's names for the file's keys
_LINK_FIELD = {"ends": "", "delay": "[2]", "bw": "[3]"}


@dataclass
class Exercise:
    """A tutorials topology ready for the runner, with each switch's P4 source."""

    topology: Topology
    sources: dict[str, Path]

    def compile(self, kind: str, run_dir: Path) -> None:
        """Compile each distinct source once into ``run_dir/build`` (softswitch's artifact
        or p4c's BMv2 JSON, P4Info beside it) and point the switches at the result."""
        build = run_dir / "build"
        build.mkdir(parents=True, exist_ok=True)
        compiled: dict[Path, Path] = {}
        for sw in self.topology.switches:
            source = self.sources[sw.name]
            if source not in compiled:
                out = build / f"{source.stem}.json"
                if out in compiled.values():        # two sources of the same name
                    out = build / f"{source.stem}-{len(compiled)}.json"
                compiled[source] = _compile(source, out, kind, sw.name)
            sw.program = compiled[source]


def _compile(source: Path, out: Path, kind: str, who: str) -> Path:
    p4info = out.with_suffix(".p4info.txtpb")
    if kind == "bmv2":
        return p4c_compile(source, out, p4info, who)
    argv = [*softswitch_command(), "compile", str(source), "-o", str(out),
            "--p4runtime-files", str(p4info)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    if done.returncode != 0:
        raise RunnerError(f"{who}: softswitch compile failed on {source}:\n"
                          f"{(done.stdout + done.stderr).strip()}")
    return out


def is_tutorials_file(path: str | Path) -> bool:
    """A ``.json`` topology is the tutorials' format; YAML is the project's own."""
    return Path(path).suffix == ".json"


def load_exercise(path: str | Path, p4: Path | None = None,
                  exercise_dir: Path | None = None) -> Exercise:
    """Read and validate a tutorials ``topology.json`` (TopologyError naming every
    problem as ``file:line: path: reason``)."""
    path = Path(path)
    if p4 is not None and not p4.is_file():
        raise TopologyError(f"--p4 {p4}: no such file")
    data, lines = read_data(path)
    problems = Problems(lines)
    folder = (exercise_dir or Path.cwd()).resolve()
    here = path.resolve().parent
    bases = list(dict.fromkeys([folder, here, here.parent]))
    converted = _Converter(bases, p4.resolve() if p4 else None, problems).top(data)
    if problems.items:
        raise TopologyError("\n".join(p.format(str(path)) for p in problems.items))
    assert converted is not None
    data_out, hosts, switches, sources = converted
    topo = topology_from_data(data_out, lines, path, _renamer(hosts, switches))
    topo.host_eth0 = True
    topo.name = here.name if path.stem == "topology" else path.stem
    for sw in topo.switches:
        sw.pcap = True
    return Exercise(topo, sources)


def place_outputs(exercise: Exercise, base: Path) -> Path:
    """Logs in ``base/logs`` (the runner's run directory, returned), pcaps in
    ``base/pcaps``: where the tutorials put them."""
    for sw in exercise.topology.switches:
        sw.pcap_dir = (base / "pcaps").resolve()
    return (base / "logs").resolve()


def _renamer(hosts: list[str], switches: list[str]) -> Callable[[str], str]:
    """The schema's path (``hosts[0].ip``) as the file's own (``hosts.h1.ip``)."""
    def where(path: str) -> str:
        m = re.match(r"^(hosts|switches)\[(\d+)\](?:\.(\w+))?(.*)$", path)
        if m:
            names = hosts if m.group(1) == "hosts" else switches
            key = _SCHEMA_KEY.get(m.group(3) or "", m.group(3))
            return (f"{m.group(1)}.{names[int(m.group(2))]}" + (f".{key}" if key else "")
                    + m.group(4))
        m = re.match(r"^links\[(\d+)\](?:\.(\w+))?(?:\[(\d+)\])?(.*)$", path)
        if m:
            field = _LINK_FIELD.get(m.group(2) or "", "")
            end = f"[{m.group(3)}]" if m.group(3) is not None else ""
            return f"links[{m.group(1)}]{field or end}{m.group(4)}"
        return path
    return where


class _Converter:
    """The tutorials' data as the YAML schema's, checking what only this format has."""

    def __init__(self, bases: list[Path], p4: Path | None, problems: Problems) -> None:
        self.bases = bases
        self.p4 = p4
        self.problems = problems

    def top(self, data: object) -> tuple[dict, list[str], list[str], dict[str, Path]] | None:
        root = Node(data, "", self.problems)
        if not root.mapping(TOP_KEYS):
            return None
        hosts = self._named(root.get("hosts"), "host name to {ip, mac, commands}")
        switches = self._named(root.get("switches"), "switch name to its settings")
        out_hosts = [h for h in (self._host(n, name) for name, n in hosts) if h]
        sources: dict[str, Path] = {}
        out_switches = []
        for i, (name, node) in enumerate(switches):
            sw = self._switch(node, name, i, sources)
            if sw:
                out_switches.append(sw)
        names = {"hosts": {name for name, _ in hosts}, "switches": {n for n, _ in switches}}
        links = root.get("links")
        out_links = [lk for lk in (self._link(n, names) for n in
                                   (links.items() if links else ())) if lk]
        data_out = {"hosts": out_hosts, "switches": out_switches, "links": out_links}
        return data_out, [n for n, _ in hosts], [n for n, _ in switches], sources

    def _named(self, node: Node | None, what: str) -> list[tuple[str, Node]]:
        if node is None:
            return []
        if not isinstance(node.value, dict):
            node.error(f"expected a mapping of {what}")
            return []
        return [(str(k), Node(v, f"{node.path}.{k}", self.problems))
                for k, v in node.value.items()]

    def _host(self, node: Node, name: str) -> dict | None:
        if node.value is None:
            node.value = {}
        if not node.mapping(HOST_KEYS):
            return None
        return {"name": name, **node.value}

    def _switch(self, node: Node, name: str, index: int,
                sources: dict[str, Path]) -> dict | None:
        if node.value is None:
            node.value = {}
        if not node.mapping(SWITCH_KEYS):
            return None
        spec = node.value
        out = {"name": name, "grpc_port": spec.get("grpc_port", GRPC_BASE + index),
               "thrift_port": spec.get("thrift_port", THRIFT_BASE + index),
               "device_id": spec.get("device_id", index)}
        out.update({k: spec[k] for k in ("cpu_port", "priority_queues") if k in spec})
        runtime = self._file(node.get("runtime_json", None))
        cli_input = self._file(node.get("cli_input", None))
        source = self._source(node, runtime)
        if runtime is not None:
            out["runtime_json"] = str(runtime)
        if cli_input is not None:
            out["cli_commands"] = str(cli_input)
        if source is None:
            return None
        sources[name] = source
        out["program"] = str(source)
        return out

    def _file(self, node: Node | None) -> Path | None:
        if node is None or node.value is None:
            return None
        text = node.string()
        if text is None:
            return None
        for base in self.bases:
            if (base / text).is_file():
                return (base / text).resolve()
        node.error(f"no such file {text!r} (relative to "
                   f"{', '.join(str(b) for b in self.bases)})")
        return None

    def _source(self, node: Node, runtime: Path | None) -> Path | None:
        """The switch's P4 source (see the module's docstring for the order)."""
        prog = node.get("program", None)
        if prog is not None and prog.value is not None:
            text = prog.string()
            found = source_of(text, self.bases) if text else None
            if text and found is None:
                prog.error(f"{text!r}: its P4 source {_stem(text)}.p4 is not beside its "
                           f"build/ folder nor in {self.bases[0]}")
            return found
        if self.p4 is not None:
            return self.p4
        named = []
        if runtime is not None:
            conf = _runtime_conf(runtime, node)
            near = [*self.bases, runtime.parent, runtime.parent.parent]
            for key in ("bmv2_json", "p4info"):
                if isinstance(conf.get(key), str):
                    named.append(conf[key])
                    found = source_of(conf[key], near)
                    if found is not None:
                        return found
        for base in self.bases:             # make run's DEFAULT_PROG: the folder's .p4
            only = sorted(base.glob("*.p4"))
            if len(only) == 1:
                return only[0].resolve()
            if only:
                break
        why = f"its runtime file names {' and '.join(named)}, whose source was not found; " \
            if named else ""
        node.error(f"no P4 program: {why}no folder of {', '.join(map(str, self.bases))} "
                   "has a .p4 file of its own; name one with --p4 FILE")
        return None

    def _link(self, node: Node, names: dict[str, set[str]]) -> dict | None:
        items = list(node.items())
        if not 2 <= len(items) <= 4:
            if isinstance(node.value, list):
                node.error(f"a link is [a, b] or [a, b, latency, bandwidth], got "
                           f"{len(items)} items")
            return None
        ends = [self._end(n, names) for n in items[:2]]
        out: dict = {"ends": ends}
        if len(items) > 2:
            out["delay"] = _latency(items[2])
        if len(items) > 3 and items[3].value is not None:
            out["bw"] = items[3].value
        return None if None in ends else out

    def _end(self, node: Node, names: dict[str, set[str]]) -> str | None:
        text = node.string()
        if text is None:
            return None
        if text in names["hosts"]:
            return text
        m = _SWITCH_END.match(text)
        if m and m.group("switch") in names["switches"]:
            return f"{m.group('switch')}:{int(m.group('port'))}"
        node.error(f"{text!r} is neither a host nor a switch port sN-pK (hosts: "
                   f"{', '.join(sorted(names['hosts'])) or 'none'}; switches: "
                   f"{', '.join(sorted(names['switches'])) or 'none'})")
        return None


def _latency(node: Node) -> str | None:
    """A link's latency as netem's delay, None for zero (the tutorials' ``"0ms"``, ``0``
    or ``"0"``, which needs no netem); a number is milliseconds, as the tutorials read
    it, and a string keeps its unit."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        node.error(f"a latency is a number of ms or a string like '5ms', got {value!r}")
        return None
    if isinstance(value, int | float):
        return None if value == 0 else f"{value}ms"
    number = re.match(r"^\s*([\d.]+)\s*(us|ms|s)?\s*$", value)
    if number is None:
        node.error(f"{value!r} is not a latency like '5ms', '500us' or 2")
        return None
    if float(number.group(1)) == 0:
        return None
    if number.group(2) is None:
        node.error(f"{value!r}: give the latency's unit (e.g. '{value}ms')")
        return None
    return f"{number.group(1)}{number.group(2)}"


def _stem(text: str) -> str:
    """``build/basic.json`` and ``build/basic.p4.p4info.txtpb`` -> ``basic``."""
    name = Path(text).name
    if ".p4info" in name:
        name = name[:name.index(".p4info")]
        return name[:-3] if name.endswith(".p4") else name
    return Path(name).stem


def source_of(text: str, bases: list[Path]) -> Path | None:
    """The P4 source a tutorials path names: ``X.p4`` itself, or for a compiled
    ``build/X.json`` (or P4Info) the ``X.p4`` beside that ``build/`` folder or in a
    base folder."""
    for base in bases:
        named = base / text
        if named.suffix == ".p4":
            if named.is_file():
                return named.resolve()
            continue
        folder = named.parent.parent if named.parent.name == "build" else named.parent
        for candidate in (folder / f"{_stem(text)}.p4", base / f"{_stem(text)}.p4"):
            if candidate.is_file():
                return candidate.resolve()
    return None


def _runtime_conf(runtime: Path, node: Node) -> dict:
    try:
        conf = json.loads(runtime.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        node.error(f"runtime_json {runtime}: not readable as JSON: {exc}")
        return {}
    return conf if isinstance(conf, dict) else {}
