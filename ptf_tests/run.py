#!/usr/bin/env python3
"""Run the tailcc PTF suites against a P4Runtime switch on veth pairs.

    ptf_tests/run.py [--target softswitch|bmv2] [--config artifact|json|json-wrapped]
                     [--bmv2-json FILE] [--p4info FILE] [--ports 1,2,3,4,5,6]
                     [--no-netns] [--keep DIR] [-- PTF ARGS / TESTS]
    ptf_tests/run.py --suite nic [--keep DIR] [-- PTF ARGS / TESTS]

What it does, in order, and undoes in reverse whatever happens (failure, Ctrl-C):

1. prepares the P4Info and the device config the tests push (``--config``): softswitch's
   artifact (``softswitch compile``; softswitch's default), or p4c's BMv2 JSON and P4Info
   (BMv2's default; ``--bmv2-json`` or ``p4c-bm2-ss``'s output for tailcc.p4), bare
   (``json``) or in PI's ``p4.tmp.P4DeviceConfig`` as p4lang/tutorials send it;
2. creates a private network namespace (the classic names ``veth0``/``veth1`` … and
   port 9559 collide with nothing), one veth pair per switch port (``veth{2i}`` the
   switch's, ``veth{2i+1}`` PTF's), IPv6 and offloads off;
3. starts ``softswitch run --no-p4`` (or ``simple_switch_grpc``) with ``--cpu-port 255
   --priority-queues 8``, waits for its gRPC port;
4. runs ``ptf --test-dir ptf_tests`` with the ports and ``--test-params``, writes
   ``results.txt`` (``PASS|FAIL|SKIP name[ why]`` per test), exits with PTF's status.

``--suite nic`` runs ptf_tests/nic/ against p4src/nic/tailcc_nic.p4 (PNA) on softswitch
only (BMv2 has no target for p4c's PNA programs): host port 1, network 2, loopback 9.
The namespace mode re-executes this script inside the namespace (Python 3.11 has no
``os.setns``); the outer process owns only the namespace and the inner process group.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from softswitch.devtools.reference_tools import ReferenceTools

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROGRAM = ROOT / "p4src" / "tailcc.p4"
NIC_PROGRAM = ROOT / "p4src" / "nic" / "tailcc_nic.p4"
CPU_PORT = 255
DEFAULT_PORTS = (1, 2, 3, 4, 5, 6)
NIC_HOST_PORT, NIC_NET_PORT, NIC_LOOPBACK_PORT = 1, 2, 9
GRPC_PORT = 9559
RUNTIME_PORT = 9090     # BMv2 Thrift / softswitch runtime channel (queue rates)
SWITCH_START_TIMEOUT = 60.0
CONFIGS = ("artifact", "json", "json-wrapped")


@dataclass
class Options:
    target: str
    bmv2_json: Path | None
    p4info: Path | None
    ports: tuple[int, ...]
    netns: bool
    keep: Path | None
    grpc_port: int
    ptf_args: list[str]
    inner_workdir: Path | None = None
    switch_cmd: str | None = None
    suite: str = "switch"
    config: str = "artifact"

    @property
    def program(self) -> Path:
        return NIC_PROGRAM if self.suite == "nic" else PROGRAM

    @property
    def test_dir(self) -> Path:
        return HERE / "nic" if self.suite == "nic" else HERE


def parse_args(argv: list[str]) -> Options:
    split = argv.index("--") if "--" in argv else len(argv)
    p = argparse.ArgumentParser(prog="ptf_tests/run.py", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=["softswitch", "bmv2"], default="softswitch",
                   help="switch to test: softswitch run (default) or simple_switch_grpc")
    p.add_argument("--config", choices=CONFIGS,
                   help="the device config the tests push: softswitch's artifact (default "
                        "on softswitch), p4c's BMv2 JSON with p4c's P4Info (default on "
                        "bmv2), or that JSON in PI's p4.tmp.P4DeviceConfig wrapper")
    p.add_argument("--bmv2-json", type=Path,
                   help="BMv2 JSON of tailcc.p4 from p4c (default with --target bmv2 or "
                        "--config json*: compiled with p4c-bm2-ss into the work directory)")
    p.add_argument("--p4info", type=Path,
                   help="P4Info to use (default: compiled by softswitch)")
    p.add_argument("--ports", default=",".join(map(str, DEFAULT_PORTS)),
                   help="switch ports to wire to veth pairs (default 1..6)")
    p.add_argument("--no-netns", action="store_true",
                   help="use the current network namespace (the veth names must be free)")
    p.add_argument("--grpc-port", type=int, default=GRPC_PORT)
    p.add_argument("--switch-cmd", metavar="CMD",
                   help="command that replaces 'softswitch run' (another build or a "
                        "wrapper); it gets the same simple_switch_grpc arguments")
    p.add_argument("--keep", type=Path, metavar="DIR",
                   help="keep the work directory (logs, pcaps, results.txt) in DIR")
    p.add_argument("--suite", choices=["switch", "nic"], default="switch",
                   help="switch: tailcc.p4 and ptf_tests/*_test.py (default); nic: "
                        "tailcc_nic.p4 and ptf_tests/nic/ (softswitch only)")
    p.add_argument("--inner-workdir", type=Path, help=argparse.SUPPRESS)
    ns = p.parse_args(argv[:split])
    config = ns.config or ("json" if ns.target == "bmv2" else "artifact")
    if ns.target == "bmv2" and config == "artifact":
        p.error("--config artifact: BMv2 takes p4c's BMv2 JSON (--config json or "
                "json-wrapped)")
    if ns.suite == "nic":
        if ns.target != "softswitch":
            p.error("--suite nic runs on softswitch only: BMv2's pna_nic cannot run p4c's "
                    "generic PNA programs")
        if config != "artifact":
            p.error("--suite nic: the NIC program is PNA, and p4c's PNA JSON is not loaded")
        if "--ports" not in " ".join(argv[:split]):
            ns.ports = f"{NIC_HOST_PORT},{NIC_NET_PORT}"
    try:
        ports = tuple(sorted({int(x) for x in ns.ports.split(",") if x.strip()}))
    except ValueError:
        p.error(f"--ports {ns.ports!r}: expected a comma-separated list of numbers")
    if not ports or any(not 0 <= x < CPU_PORT for x in ports):
        p.error("--ports: give switch ports 0..254")
    if ns.target == "bmv2" or config != "artifact":
        if reference_tools() is None and (ns.target == "bmv2" or ns.bmv2_json is None):
            from softswitch.devtools import reference_tools as rt

            what = "--target bmv2" if ns.target == "bmv2" else f"--config {config}"
            p.error(f"{what}: {rt.missing_reason()}")
        if ns.bmv2_json is not None and not ns.bmv2_json.is_file():
            p.error(f"--bmv2-json {ns.bmv2_json}: no such file")
    elif ns.bmv2_json is not None:
        p.error("--bmv2-json goes with --target bmv2 or --config json (or json-wrapped)")
    if ns.suite == "nic" and ports != (NIC_HOST_PORT, NIC_NET_PORT):
        p.error(f"--suite nic: the NIC's ports are {NIC_HOST_PORT} (host) and "
                f"{NIC_NET_PORT} (network)")
    return Options(ns.target, ns.bmv2_json, ns.p4info, ports, not ns.no_netns, ns.keep,
                   ns.grpc_port, argv[split + 1:], ns.inner_workdir, ns.switch_cmd,
                   ns.suite, config)


def reference_tools() -> ReferenceTools | None:
    """Real p4c/BMv2 (installed from the bundle beside the checkout when it is there)."""
    from softswitch.devtools import reference_tools as rt

    return rt.ensure()


def bmv2_tools() -> ReferenceTools:
    tools = reference_tools()
    if tools is None:
        raise SystemExit("--target bmv2: the reference p4c/BMv2 tools are gone")
    return tools


def run(cmd: list[str], **kw: object) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def venv_bin(name: str) -> str:
    """A console script of this Python's environment (the project's .venv)."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


# ----------------------------------------------------------------- artifacts
def prepare(opts: Options, work: Path) -> tuple[Path, Path]:
    """P4Info and device config files for the tests' SetForwardingPipelineConfig."""
    if opts.config == "artifact":
        from softswitch.p4runtime.pipeline import make_artifact

        config = work / f"{opts.program.stem}.softswitch.json"
        config.write_bytes(make_artifact(str(opts.program)).to_bytes())
        return (opts.p4info or softswitch_p4info(opts, work)).resolve(), config
    json_path, p4info = p4c_outputs(opts, work)
    if opts.config == "json-wrapped":
        from softswitch.p4runtime.p4config import wrap

        config = work / f"{opts.program.stem}.p4deviceconfig.bin"
        config.write_bytes(wrap(json_path.read_bytes()))
        return p4info.resolve(), config.resolve()
    return p4info.resolve(), json_path.resolve()


def p4c_outputs(opts: Options, work: Path) -> tuple[Path, Path]:
    """(BMv2 JSON, P4Info): ``--bmv2-json`` (with ``--p4info`` or softswitch's P4Info),
    or both from ``p4c-bm2-ss``."""
    if opts.bmv2_json is not None:
        return opts.bmv2_json, opts.p4info or softswitch_p4info(opts, work)
    config = work / "tailcc.json"
    p4c_p4info = work / "tailcc.p4info.txtpb"
    cmd = [bmv2_tools().p4c, "--arch", "v1model", "-o", str(config),
           "--p4runtime-files", str(p4c_p4info), str(PROGRAM)]
    print("ptf: " + shlex.join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"p4c-bm2-ss failed ({proc.returncode}):\n{proc.stderr}")
    return config, opts.p4info or p4c_p4info


def softswitch_p4info(opts: Options, work: Path) -> Path:
    """The P4Info ``softswitch compile`` writes for the program."""
    p4info = work / f"{opts.program.stem}.p4info.txtpb"
    proc = subprocess.run([venv_bin("softswitch"), "compile", str(opts.program),
                           "--p4runtime-files", str(p4info)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"softswitch compile failed:\n{proc.stderr}")
    return p4info


# ----------------------------------------------------------------- veths
def switch_iface(port_index: int) -> str:
    return f"veth{2 * port_index}"


def test_iface(port_index: int) -> str:
    return f"veth{2 * port_index + 1}"


# Segmentation/receive offloads off on every veth: with any of them on, libpcap sizes
# its capture ring for 64 KB frames, so BMv2 (which reads its ports through libpcap)
# holds only about 30 frames while its receive thread waits for a core, and drops the
# rest of a burst on a busy machine; with them off the ring holds hundreds. They also
# keep the kernel from merging or splitting the test's packets.
OFFLOADS_OFF = ("tso", "off", "gso", "off", "gro", "off")


def create_veths(ports: tuple[int, ...]) -> list[str]:
    """One veth pair per port, up, IPv6 and offloads off (no kernel chatter reaches the
    switch or the test side, and frames stay as sent); returns the switch-side names
    of the pairs created."""
    created: list[str] = []
    try:
        for i, _port in enumerate(ports):
            a, b = switch_iface(i), test_iface(i)
            if Path(f"/sys/class/net/{a}").exists() or Path(f"/sys/class/net/{b}").exists():
                raise SystemExit(f"{a} or {b} already exists: run in a namespace (the "
                                 "default) or remove them")
            run(["ip", "link", "add", a, "type", "veth", "peer", "name", b])
            created.append(a)
            for iface in (a, b):
                for knob in ("disable_ipv6",):
                    path = Path(f"/proc/sys/net/ipv6/conf/{iface}/{knob}")
                    if path.exists():
                        path.write_text("1")
                run(["ip", "link", "set", iface, "mtu", "9000", "up"])
                run(["ethtool", "-K", iface, *OFFLOADS_OFF])
        return created
    except BaseException:
        delete_veths(created)
        raise


def delete_veths(created: list[str]) -> None:
    for iface in created:
        subprocess.run(["ip", "link", "del", iface], capture_output=True)


# ----------------------------------------------------------------- the switch
def switch_command(opts: Options, work: Path) -> list[str]:
    ifaces = [x for i, port in enumerate(opts.ports) for x in ("-i", f"{port}@{switch_iface(i)}")]
    tail = ["--", "--grpc-server-addr", f"127.0.0.1:{opts.grpc_port}", "--cpu-port",
            str(CPU_PORT), "--priority-queues", "8"]
    if opts.target == "bmv2":
        # the default notification socket, ipc:///tmp/bmv2-0-notifications.ipc, is one
        # per machine, not per namespace: give each run its own
        return [bmv2_tools().simple_switch_grpc, "--no-p4", *ifaces,
                "--pcap", str(work / "pcap"), "--log-file", str(work / "bmv2"), "--log-flush",
                "--notifications-addr", f"ipc://{work}/bmv2-notifications.ipc",
                "--thrift-port", str(RUNTIME_PORT), *tail]
    prefix = shlex.split(opts.switch_cmd) if opts.switch_cmd else [venv_bin("softswitch"), "run"]
    if opts.suite == "nic":
        ifaces += ["--host-port", str(NIC_HOST_PORT), "--net-port", str(NIC_NET_PORT),
                   "--loopback-port", str(NIC_LOOPBACK_PORT)]
    return [*prefix, "--no-p4", *ifaces, "--pcap", str(work / "pcap"),
            "--log-file", str(work / "switch.log"), "--thrift-port", str(RUNTIME_PORT), *tail]


def runtime_cli(opts: Options) -> str:
    """The command the tests pipe simple_switch_CLI commands into (queue rates)."""
    if opts.target == "bmv2":
        # BMv2's CLI is a python3 script that needs thrift: run it with an interpreter
        # that has it (a bare `simple_switch_CLI` may pick one that does not)
        return shlex.join(bmv2_tools().cli_command(RUNTIME_PORT))
    return f"{venv_bin('softswitch')} cli --port {RUNTIME_PORT}"


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float) -> None:
    from softswitch import local_port
    why = local_port.await_listening(port, timeout, proc, interval=0.2)
    if why == "exited":
        raise SystemExit(f"the switch exited with status {proc.returncode} before "
                         "serving P4Runtime")
    if why == "timeout":
        raise SystemExit(f"the switch did not open 127.0.0.1:{port} within {timeout:g} s")


def stop(proc: subprocess.Popen, name: str) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        print(f"{name} did not stop on SIGTERM: killing it", file=sys.stderr)
        proc.kill()
        proc.wait(timeout=10)


# ----------------------------------------------------------------- PTF
def ptf_command(opts: Options, p4info: Path, config: Path, work: Path) -> list[str]:
    params = {"grpcaddr": f"127.0.0.1:{opts.grpc_port}", "p4info": str(p4info),
              "device_config": str(config), "cpu_port": str(CPU_PORT), "device_id": "0",
              "target": opts.target, "ports": ",".join(map(str, opts.ports)),
              "runtime_cli": runtime_cli(opts)}
    ifaces = [x for i, port in enumerate(opts.ports) for x in ("-i", f"{port}@{test_iface(i)}")]
    return [venv_bin("ptf"), "--test-dir", str(opts.test_dir), *ifaces,
            "--test-params", ";".join(f"{k}='{v}'" for k, v in params.items()),
            "--log-dir", str(work / "ptf-logs"),
            # a positive check returns as soon as its packet arrives, so a generous limit
            # costs nothing on a healthy switch and spares a busy 2-core machine
            "--default-timeout", "10", "--test-case-timeout", "300",
            *(opts.ptf_args or _default_specs(opts))]


def _default_specs(opts: Options) -> list[str]:
    """What runs when the user names no tests: the standard group, or the NIC suite's
    module (its tests are outside the standard group; see ptf_tests/nic/nic_test.py)."""
    return ["nic_test"] if opts.suite == "nic" else []


VERDICT = re.compile(r"^(?P<name>[\w.]+) \.\.\. "
                     r"(?P<verdict>ok|FAIL|ERROR|skipped)(?: (?P<why>.*))?$")


def skip_reason(text: str | None) -> str:
    """unittest prints the skip message as a repr: ``skipped 'why'``."""
    if not text:
        return ""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text
    return " ".join(str(value).split())


def run_ptf(cmd: list[str]) -> tuple[int, dict[str, str]]:
    """Run PTF, echoing its output, and collect unittest's per-test verdicts
    (``name ... ok|FAIL|ERROR|skipped 'why'``) from it: ``PASS``, ``FAIL`` or
    ``SKIP why``."""
    verdicts: dict[str, str] = {}
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        sys.stdout.flush()
        m = VERDICT.match(line.rstrip("\n"))
        if m:
            word = m.group("verdict")
            verdicts[m.group("name")] = {"ok": "PASS", "FAIL": "FAIL", "ERROR": "FAIL"}.get(
                word) or f"SKIP {skip_reason(m.group('why'))}".rstrip()
    return proc.wait(), verdicts


def report(status: int, verdicts: dict[str, str], work: Path) -> int:
    """Write ``results.txt`` (one ``VERDICT name[ why]`` line per test, read by
    ptf_tests/expectations.py) and print the closing count line."""
    lines = []
    for name, verdict in sorted(verdicts.items()):
        word, _, why = verdict.partition(" ")
        lines.append(f"{word} {name} {why}".rstrip())
    (work / "results.txt").write_text("".join(x + "\n" for x in lines))
    passed = sum(v == "PASS" for v in verdicts.values())
    failed = sum(v == "FAIL" for v in verdicts.values())
    skipped = sum(v.startswith("SKIP") for v in verdicts.values())
    print(f"ptf: {passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    if status == 0 and not verdicts:
        print("ptf: no test ran", file=sys.stderr)
        return 1
    return status if status else (1 if failed else 0)


def session(opts: Options, work: Path) -> int:
    """Everything in the current namespace: veths, switch, PTF; always torn down."""
    p4info, config = prepare(opts, work)
    created = create_veths(opts.ports)
    switch: subprocess.Popen | None = None
    try:
        (work / "pcap").mkdir(exist_ok=True)
        switch_log = open(work / "switch.out", "w")  # noqa: SIM115 - closed below
        switch = subprocess.Popen(switch_command(opts, work), stdout=switch_log,
                                  stderr=subprocess.STDOUT, cwd=ROOT)
        wait_for_port(opts.grpc_port, switch, SWITCH_START_TIMEOUT)
        status, verdicts = run_ptf(ptf_command(opts, p4info, config, work))
        return report(status, verdicts, work)
    finally:
        if switch is not None:
            stop(switch, opts.target)
            switch_log.close()
        delete_veths(created)


# ----------------------------------------------------------------- namespace
def in_netns(opts: Options, argv: list[str], work: Path) -> int:
    """Create a namespace, re-run this script inside it, remove the namespace."""
    name = f"tailcc-ptf-{os.getpid()}"
    run(["ip", "netns", "add", name])
    print(f"ptf: network namespace {name}", flush=True)
    inner: subprocess.Popen | None = None
    try:
        run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"])
        split = argv.index("--") if "--" in argv else len(argv)
        cmd = ["ip", "netns", "exec", name, sys.executable, str(Path(__file__).resolve()),
               *argv[:split], "--no-netns", "--inner-workdir", str(work), *argv[split:]]
        inner = subprocess.Popen(cmd, start_new_session=True, cwd=ROOT)
        return inner.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if inner is not None and inner.poll() is None:
            os.killpg(inner.pid, signal.SIGTERM)
            try:
                inner.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(inner.pid, signal.SIGKILL)
                inner.wait()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    opts = parse_args(argv)
    if os.geteuid() != 0:
        print("ptf_tests/run.py needs root (veth pairs, raw sockets)", file=sys.stderr)
        return 1
    if shutil.which("ethtool") is None:
        print("ptf_tests/run.py needs ethtool (apt-get install ethtool)", file=sys.stderr)
        return 1
    # SIGTERM ends the run like Ctrl-C, so the finally blocks tear everything down.
    signal.signal(signal.SIGTERM, _interrupt)
    if opts.inner_workdir is not None:
        return session(opts, opts.inner_workdir)
    work = opts.keep or Path(tempfile.mkdtemp(prefix="tailcc-ptf-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        if opts.netns:
            return in_netns(opts, argv, work)
        return session(opts, work)
    except KeyboardInterrupt:
        return 130
    finally:
        if opts.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"ptf: logs, pcaps and results.txt kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
