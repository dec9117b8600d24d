"""``tailcc shell`` (p4runtime-shell on a switch of the intent, driven on stdin against a
live ``softswitch run``) and ``tailcc completion`` (a bash script that parses and
completes the real subcommands)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from controlplane.cli import build_parser, main
from softswitch.local_port import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
TAILCC = [sys.executable, "-m", "controlplane.cli"]


@pytest.mark.parametrize("command", [["shell"], ["completion"]], ids=" ".join)
def test_help(command, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args([*command, "--help"])
    assert info.value.code == 0
    assert "usage: tailcc" in capsys.readouterr().out


# --- completion ---------------------------------------------------------------------------
def _complete(script: str, words: list[str]) -> list[str]:
    """Run the generated bash function as bash's completion would and return COMPREPLY."""
    words_sh = " ".join(f"'{w}'" for w in words)
    cmd = (f"{script}\nCOMP_WORDS=({words_sh}); COMP_CWORD={len(words) - 1}; _tailcc; "
           'printf "%s\\n" "${COMPREPLY[@]}"')
    out = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_bash_completion_is_valid_and_lists_the_subcommands(capsys) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "complete -o default -F _tailcc tailcc" in script
    top = _complete(script, ["tailcc", ""])
    sub = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(top) == set(sub) and {"apply", "shell", "completion", "export"} <= set(top)
    assert _complete(script, ["tailcc", "ta"]) == ["table"]
    assert _complete(script, ["tailcc", "table", ""]) == ["add", "modify", "delete", "list"]
    assert _complete(script, ["tailcc", "apply", "x.yaml", "--ev"]) == ["--every"]
    assert _complete(script, ["tailcc", "table", "-a", "h:1", "add", "--prio"]) == \
        ["--priority"]
    assert _complete(script, ["tailcc", "completion", "z"]) == ["zsh"]


def test_zsh_completion_wraps_the_bash_function(capsys) -> None:
    assert main(["completion", "zsh"]) == 0
    script = capsys.readouterr().out
    assert script.startswith("#compdef tailcc\n") and "bashcompinit" in script
    checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    if shutil.which("zsh"):
        zsh = subprocess.run(["zsh", "-n"], input=script, capture_output=True, text=True)
        assert zsh.returncode == 0, zsh.stderr


def test_completion_rejects_other_shells() -> None:
    out = subprocess.run([*TAILCC, "completion", "fish"], capture_output=True, text=True,
                         cwd=ROOT)
    assert out.returncode == 2 and "invalid choice: 'fish'" in out.stderr
    assert "Traceback" not in out.stderr


# --- shell ------------------------------------------------------------------------------

@pytest.fixture()
def switch() -> Iterator[str]:
    """``softswitch run --no-p4`` as device 3 (not the default, so the id must be passed)."""
    addr = f"127.0.0.1:{_free_port()}"
    proc = subprocess.Popen([sys.executable, "-m", "softswitch", "run", "--no-p4",
                             "--device-id", "3", "--", "--grpc-server-addr", addr],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        channel = grpc.insecure_channel(addr)
        grpc.channel_ready_future(channel).result(timeout=60)
        channel.close()
        yield addr
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def _shell(args: list[str], commands: str) -> subprocess.CompletedProcess:
    return subprocess.run([*TAILCC, "shell", *args], input=commands, capture_output=True,
                          text=True, cwd=ROOT, timeout=180)


def test_shell_on_a_switch_of_the_intent(switch: str, tmp_path: Path) -> None:
    intent = tmp_path / "lab.yaml"
    intent.write_text("base: default\nswitches:\n  - name: other\n    address: 127.0.0.1:1\n"
                      "    device_id: 1\n"
                      f"  - name: leaf\n    address: {switch}\n    device_id: 3\n"
                      "    election_id: 7\n    ports: [1, 2]\n")
    empty = _shell(["leaf", "-i", str(intent)], "print('never')\n")
    assert empty.returncode == 1 and "no pipeline is loaded; pass --pipeline" in empty.stderr
    assert "Traceback" not in empty.stderr

    assert main(["apply", str(intent), "-s", "leaf", "--pipeline",
                 str(ROOT / "p4src/tailcc.p4"), "-q"]) == 0
    # The pipeline is the switch's own now: the shell fetches its P4Info, reads a table
    # tailcc wrote, and (as primary with the intent's election id 7) writes an entry.
    commands = "\n".join([
        'print("ENTRIES", len(list(table_entry["TailccIngress.classify.traffic_class"]'
        '.read())))',
        'te = table_entry["TailccIngress.forwarding.routing_v4"](action="drop")',
        'te.match["vrf"] = "0"',
        'te.match["ipv4_dst"] = "10.99.0.0/16"',
        "te.insert()",
        'print("ROUTES", len(list(table_entry["TailccIngress.forwarding.routing_v4"].read())))',
    ]) + "\n"
    out = _shell(["leaf", "--intent", str(intent)], commands)
    assert out.returncode == 0, out.stderr
    assert f"--grpc-addr {switch} --device-id 3 --election-id 0,7" in out.stderr
    entries = int(out.stdout.split("ENTRIES ")[1].split()[0])
    assert entries > 10, out.stdout
    assert "ROUTES 1" in out.stdout, out.stdout + out.stderr

    from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
    with Client(switch, 3, election_id=1) as c:  # backup is enough to read
        b = EntityBuilder(P4InfoIndex(c.get_p4info()))
        assert len(list(c.read([b.table_wildcard("routing_v4")]))) == 1


def test_shell_errors_are_one_line(tmp_path: Path) -> None:
    out = _shell(["-a", "127.0.0.1:1", "--timeout", "0.5"], "")
    assert out.returncode == 1 and "no P4Runtime server answers" in out.stderr
    assert "Traceback" not in out.stderr
    intent = tmp_path / "i.yaml"
    intent.write_text("switches:\n  - {name: a, address: '127.0.0.1:1', device_id: 1}\n")
    out = _shell(["b", "-i", str(intent)], "")
    assert out.returncode == 2 and "no switch 'b'" in out.stderr
