"""README.md is the user's manual: short, its journeys first, every command in them works.

The first 40 lines hold the two set-up commands and one journey per thing a user comes to
do; each journey's command runs here as the README writes it (from the checkout, with
`.venv/bin` first on PATH, as `source .venv/bin/activate` gives), or, where it needs
Mininet, an interactive terminal or minutes, its program's `--help` must list every option
the README passes it (for `make` targets: the commands `make -n` expands them to). Every
relative link and picture of README.md and docs/*.md must lead to a file (and heading).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
ENV = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def journey_commands() -> list[str]:
    """The commands of README's first 40 lines: lines of ```sh blocks and `code` spans
    that start with a command, comments stripped."""
    head = README.read_text(encoding="utf-8").splitlines()[:40]
    commands, in_block = [], False
    for line in head:
        if line.strip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            cmd = line.split("  #")[0].split(" # ")[0].strip()
            if cmd:
                commands.append(cmd)
            continue
        for span in re.findall(r"`([^`]+)`", line):
            if re.match(r"(make|tailcc|softswitch|python) ", span):
                commands.append(span)
    return commands


def journey(prefix: str) -> list[str]:
    found = [c for c in journey_commands() if c.startswith(prefix)]
    assert found, f"README's first 40 lines have no command starting with {prefix!r}"
    return found


def _run(cmd: str | list[str], timeout: float = 300, check: bool = True,
         env: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    argv = shlex.split(cmd) if isinstance(cmd, str) else cmd
    if argv[0] == "python":
        argv[0] = sys.executable
    proc = subprocess.run(argv, cwd=ROOT, env=env or ENV, capture_output=True, text=True,
                          timeout=timeout, **kw)
    if check:
        assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc


def _program(argv: list[str]) -> list[str]:
    """The part of a command line that names the program (and its subcommand)."""
    if argv[0].endswith(("python", "python3")) or argv[0] == sys.executable:
        return argv[:3] if argv[1] == "-m" else argv[:2]
    if Path(argv[0]).name in ("tailcc", "softswitch") and len(argv) > 1:
        return argv[:2]
    return argv[:1]


def assert_options_in_help(cmd: str) -> None:
    """Every --option of ``cmd`` is one its program's --help lists."""
    argv = shlex.split(cmd)
    if argv[0] == "python":
        argv[0] = sys.executable
    program = _program(argv)
    text = _run([*program, "--help"]).stdout
    for arg in argv[len(program):]:
        if arg == "--":
            break
        if arg.startswith("--"):
            option = arg.split("=")[0]
            assert re.search(rf"(^|[\s\[,]){re.escape(option)}\b", text), \
                f"README's `{cmd}`: {option} is not an option of {' '.join(program)}"


def assert_make_target_runs_known_options(cmd: str) -> None:
    """``make TARGET VAR=...``: the target exists, and every command it expands to has
    the options the README gives it (set-up left out: ``-o .venv/.installed``)."""
    argv = shlex.split(cmd)
    assert argv[0] == "make"
    out = _run(["make", "-n", "-o", ".venv/.installed", *argv[1:]], timeout=60).stdout
    expanded = [line.strip() for line in out.splitlines()
                if line.strip().startswith(".venv/bin/")]
    assert expanded, f"`{cmd}` runs no project command:\n{out}"
    for line in expanded:
        assert_options_in_help(line.replace(".venv/bin/", f"{VENV_BIN}/", 1))


# --- the manual's shape ---------------------------------------------------------------------
def test_readme_is_short_and_starts_with_set_up_and_journeys():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    head = "\n".join(lines[:40])
    for needed in ("make demo", "make test", "p4c-bm2-ss", "--switch bmv2", "make ptf",
                   "tailcc apply", "tailcc counters", "tailcc table", "make mininet-mix",
                   "tailcc lab", "softswitch compile", "softswitch run"):
        assert needed in head, f"README's first 40 lines lack {needed!r}"


def _links(path: Path) -> list[tuple[str, str]]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return re.findall(r"!?\[[^\]]*\]\(([^)\s#]*)(#[^)\s]*)?\)", text)


def _anchors(path: Path) -> set[str]:
    heads = re.findall(r"^#+\s+(.+)$", path.read_text(encoding="utf-8"), flags=re.M)
    return {"#" + re.sub(r"[^\w\- ]", "", h).strip().lower().replace(" ", "-")
            for h in heads}


@pytest.mark.parametrize("doc", [README, *sorted((ROOT / "docs").glob("*.md"))],
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_leads_somewhere(doc: Path):
    for target, anchor in _links(doc):
        if re.match(r"[a-z]+:", target):
            continue                            # https:, mailto: — not ours to check
        dest = (doc.parent / target).resolve() if target else doc
        assert dest.exists(), f"{doc.relative_to(ROOT)}: link to {target} leads nowhere"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{doc.relative_to(ROOT)}: {target}{anchor}"


# --- the journeys, as the README writes them --------------------------------------------------
def test_set_up_commands_are_make_targets():
    for target in ("make demo", "make test"):
        assert target in journey_commands()
    assert_make_target_runs_known_options("make demo")


def test_compile_with_p4c_and_run_on_bmv2_in_mininet(reference_tools):
    p4c, = journey("p4c-bm2-ss ")
    assert "p4src/tailcc.p4" in p4c
    commands = journey_commands()
    for before in commands[:commands.index(p4c)]:
        if before.startswith("mkdir "):         # the directories p4c writes into
            _run(before)
    path = f"{reference_tools.bin_dir}{os.pathsep}{ENV['PATH']}"   # README: on PATH
    _run(p4c, env=dict(ENV, PATH=path))             # real p4c, as the README writes it
    argv = shlex.split(p4c)
    for out in (argv[argv.index("-o") + 1], argv[argv.index("--p4runtime-files") + 1]):
        assert (ROOT / out).stat().st_size > 0
    topo, = journey("python -m topologies topologies/")
    assert "--switch bmv2" in topo and "--cli" in topo      # Mininet and a terminal: --help
    assert_options_in_help(topo)
    _run(f"{topo.replace(' --cli', '')} --check")          # the topology file is valid


def test_ptf_suites_on_either_target():
    for cmd in journey("make ptf"):
        assert_make_target_runs_known_options(cmd)


def test_mininet_mix():
    for cmd in journey("make mininet-mix"):
        assert_make_target_runs_known_options(cmd)


def test_the_lab():
    cmd, = journey("tailcc lab ")
    assert_options_in_help(cmd)                  # minutes of CPU: its options, and ...
    scenario = shlex.split(cmd)[2]
    assert (ROOT / "taillab" / "scenarios" / f"{scenario}.yaml").is_file()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_drive_tables_and_counters_from_the_controller():
    """The controller journey verbatim: a topology kept up on netns, apply, list, read
    counters, down."""
    up, down = journey("python -m topologies up "), journey("python -m topologies down ")
    name = shlex.split(down[0])[-1]
    topology = next(a for a in shlex.split(up[0]) if a.endswith(".yaml"))
    _run([sys.executable, "-m", "topologies", topology, "--clean"], check=False)
    _run(up[0], timeout=300)
    try:
        apply_cmd, = journey("tailcc apply ")
        applied = _run(apply_cmd, timeout=120)
        assert "in sync" in applied.stdout + applied.stderr      # `up` applied it already
        listed = _run(journey("tailcc table ")[0], timeout=60).stdout
        for host in ("10.0.1.1", "10.0.2.2", "10.0.3.3"):
            assert host in listed
        counters = _run(journey("tailcc counters ")[0], timeout=60).stdout
        assert "ecn_mark_counter" in counters
    finally:
        _run(down[0], timeout=120)
    assert not (ROOT / "out" / "topologies" / name / "up.json").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")
def test_softswitch_as_a_drop_in(tmp_path: Path):
    """`softswitch compile` as p4c-bm2-ss is called, then `softswitch run` with
    simple_switch_grpc's command line on the README's veths (in a namespace of its own)
    answers P4Runtime with the compiled pipeline."""
    compile_cmd, = journey("softswitch compile ")
    _run(compile_cmd, timeout=300)
    run_cmd, = journey("softswitch run ")
    argv = shlex.split(run_cmd)
    ns = f"tcc-readme-{os.getpid()}"
    ip = shutil.which("ip") or "/usr/sbin/ip"
    subprocess.run([ip, "netns", "add", ns], check=True)
    proc = None
    try:
        subprocess.run([ip, "-n", ns, "link", "set", "lo", "up"], check=True)
        for a, b in (("veth0", "veth1"), ("veth2", "veth3")):
            subprocess.run([ip, "-n", ns, "link", "add", a, "type", "veth", "peer", "name", b],
                           check=True)
            for dev in (a, b):
                subprocess.run([ip, "-n", ns, "link", "set", dev, "up"], check=True)
        proc = subprocess.Popen([ip, "netns", "exec", ns, str(VENV_BIN / argv[0]), *argv[1:]],
                                cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        address = argv[argv.index("--grpc-server-addr") + 1]
        listed = None
        for _ in range(120):
            assert proc.poll() is None, f"softswitch run exited:\n{proc.stdout.read()}"
            probe = _run([ip, "netns", "exec", ns, str(VENV_BIN / "tailcc"), "table", "list",
                          "traffic_class", "-a", address, "--device-id", "0"],
                         check=False, timeout=60)
            if probe.returncode == 0:
                listed = probe.stdout
                break
            assert "unknown device" not in probe.stderr, probe.stderr
            time.sleep(0.5)
        assert listed is not None, "softswitch run never answered P4Runtime"
        assert "traffic_class" in listed
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(timeout=30)
        subprocess.run([ip, "netns", "del", ns], check=False)
