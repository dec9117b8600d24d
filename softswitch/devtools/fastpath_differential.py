"""The interpreter as the oracle of the C fast path: one STF test through both.

:func:`compare_stf` loads a program twice from one front-end result — the interpreter
(``fastpath="off"``) and the C pipeline (``fastpath="require"``) — with frozen clocks
advanced in lockstep, runs every STF command on both and requires the same: packets out
of every injection (port, bytes, order), command outputs and check results, errors,
and at the end every counter cell, register cell, direct counter, digest, log line and
priority drop. ``python -m softswitch.devtools.fastpath_differential PROG.p4 TEST.stf`` runs one.
"""

from __future__ import annotations

import random
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softswitch.diagnostics import P4Error

CLOCK_STEP_US = 1000


@dataclass
class DiffResult:
    program: str
    status: str                  # identical | different | refused | skipped
    reason: str = ""
    packets: int = 0
    differences: list[str] = field(default_factory=list)


def _load_pair(checked: Any, queues: int) -> tuple[Any, Any]:
    from softswitch.v1model.fast_switch import load_switch
    from softswitch.v1model.switch import Switch
    ref = Switch.from_program(checked)
    fast = load_switch(checked, fastpath="require")
    for sw in (ref, fast):
        sw.priority_queues = queues
        sw.clock.freeze(0)
    return ref, fast


def _run(sw: Any, session: Any, cmd: Any) -> tuple[str, Any]:
    from softswitch.stf.stf import ExpectCmd, IgnoredCmd, PacketCmd, WaitCmd
    try:
        if isinstance(cmd, PacketCmd):
            sw.clock.advance(CLOCK_STEP_US)
            return "ok", [(o.port, bytes(o.data)) for o in sw.inject(cmd.port, cmd.data)]
        if isinstance(cmd, ExpectCmd | WaitCmd | IgnoredCmd):
            return "ok", None
        out = session.execute(cmd)
        return "ok", (out.text, out.failure)
    except P4Error as e:
        return "error", str(e)


def _state(sw: Any) -> dict[str, Any]:
    """Everything packets can change that the control plane can read."""
    st: dict[str, Any] = {}
    for name, c in sw.pb.counters.items():
        st[f"counter {name}"] = [sw.counter_read(name, i) for i in range(c.size)]
    for name, r in sw.pb.registers.items():
        st[f"register {name}"] = [sw.register_read(name, i) for i in range(r.size)]
    for info in sw.tables():
        st[f"table {info.name}"] = [(v.handle, v.action, v.args, v.packets, v.bytes)
                                    for v in sw.table_entries(info.name)]
    st["digests"] = sw.drain_digests()
    st["logs"] = list(sw.logs)
    st["priority_drops"] = sw.priority_drops
    return st


def _inject(sw: Any, port: int, data: bytes) -> tuple[str, Any]:
    sw.clock.advance(CLOCK_STEP_US)
    try:
        return "ok", [(o.port, bytes(o.data)) for o in sw.inject(port, data)]
    except P4Error as e:
        return "error", str(e)


def mutated(packets: list[tuple[int, bytes]], seed: str,
            limit: int = 24) -> list[tuple[int, bytes]]:
    """Variants of a test's packets that reach the error paths: every truncation class
    (empty, one byte, cut in each header), flipped bytes, trailing bytes, other ports."""
    rng = random.Random(zlib.crc32(seed.encode()))
    seen: set[bytes] = set()
    out: list[tuple[int, bytes]] = []
    for port, data in packets:
        if data in seen:
            continue
        seen.add(data)
        if len(seen) > limit:
            break
        n = len(data)
        variants = [data[:0], data[:1], data[:n // 2], data[:max(0, n - 1)],
                    data[:rng.randrange(n + 1)], data + bytes(rng.randrange(256) for _ in range(9))]
        for _ in range(4):
            b = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                if b:
                    b[rng.randrange(len(b))] = rng.randrange(256)
            variants.append(bytes(b))
        out += [(port, v) for v in variants]
        out.append((rng.randrange(8), data))
    return out


def compare_commands(checked: Any, commands: list[Any], name: str,
                     queues: int = 1, mutations: bool = True) -> DiffResult:
    from softswitch.stf.session import CommandSession
    from softswitch.stf.stf import PacketCmd
    try:
        ref, fast = _load_pair(checked, queues)
    except P4Error as e:
        msg = e.message
        if "C fast path cannot run" in msg:
            where = f"{Path(e.loc.file).name}:{e.loc.line}: " if e.loc is not None else ""
            return DiffResult(name, "refused", where + msg.split(": ", 1)[-1])
        return DiffResult(name, "skipped", f"does not load: {msg}")
    sessions = (CommandSession(ref), CommandSession(fast))
    res = DiffResult(name, "identical")
    for cmd in commands:
        a = _run(ref, sessions[0], cmd)
        b = _run(fast, sessions[1], cmd)
        if isinstance(cmd, PacketCmd):
            res.packets += 1
        if a != b:
            res.differences.append(f"{cmd.loc}: interpreter {a!r} / C {b!r}")
            if len(res.differences) >= 5:
                break
    if not res.differences and mutations:
        pkts = [(c.port, c.data) for c in commands if isinstance(c, PacketCmd)]
        for port, data in mutated(pkts, name):
            a = _inject(ref, port, data)
            b = _inject(fast, port, data)
            res.packets += 1
            if a != b:
                res.differences.append(f"mutated packet port {port} {data.hex()}: "
                                       f"interpreter {a!r} / C {b!r}")
                if len(res.differences) >= 5:
                    break
    if not res.differences:
        sa, sb = _state(ref), _state(fast)
        for k in sa:
            if sa[k] != sb.get(k):
                res.differences.append(f"end state {k}: interpreter {_short(sa[k])} / "
                                       f"C {_short(sb.get(k))}")
    if res.differences:
        res.status = "different"
    return res


def _short(v: Any) -> str:
    s = repr(v)
    return s if len(s) < 400 else s[:400] + "…"


def compare_stf(program: str | Path, stf: str | Path, include_dirs: tuple[str, ...] = (),
                queues: int = 1, mutations: bool = True) -> DiffResult:
    from softswitch.frontend.compiler import compile_program
    from softswitch.stf.stf import parse_stf_file
    name = str(program)
    try:
        commands = parse_stf_file(stf)
        checked = compile_program(str(program), include_dirs or (str(Path(program).parent),),
                                  None)
    except P4Error as e:
        return DiffResult(name, "skipped", f"does not compile: {e.message}")
    return compare_commands(checked, commands, name, queues, mutations)


def random_packets(seed: str, n: int = 40) -> list[tuple[int, bytes]]:
    """Packets for a program without a test: random bytes of every length class, some
    with an IPv4/IPv6/VLAN EtherType so parsers get past Ethernet."""
    rng = random.Random(zlib.crc32(seed.encode()))
    out = []
    for i in range(n):
        size = rng.choice((0, 1, 13, 14, 20, 34, 40, 54, 64, 100, 200))
        data = bytearray(rng.getrandbits(8) for _ in range(size))
        if size >= 14 and i % 2:
            data[12:14] = rng.choice((b"\x08\x00", b"\x86\xdd", b"\x81\x00", b"\x12\x34"))
            if data[12:14] == b"\x08\x00" and size >= 34:
                data[14] = 0x45
        out.append((rng.randrange(4), bytes(data)))
    return out


def compare_random(program: str | Path, include_dirs: tuple[str, ...] = ()) -> DiffResult:
    """A program without an STF test: random packets through both paths (its tables
    empty, so default actions), then the end state."""
    from softswitch.diagnostics import SourceLoc
    from softswitch.frontend.compiler import compile_program
    from softswitch.stf.stf import PacketCmd
    name = str(program)
    try:
        checked = compile_program(str(program), include_dirs or (str(Path(program).parent),),
                                  None)
    except P4Error as e:
        return DiffResult(name, "skipped", f"does not compile: {e.message}")
    loc = SourceLoc(name, 0, 0)
    cmds = [PacketCmd(loc, port, data) for port, data in random_packets(name)]
    return compare_commands(checked, cmds, name, 1, mutations=False)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    queues = 1
    if "--priority-queues" in args:
        i = args.index("--priority-queues")
        queues = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 2:
        print("usage: python -m softswitch.devtools.fastpath_differential PROG.p4 TEST.stf "
              "[--priority-queues N]", file=sys.stderr)
        return 2
    r = compare_stf(args[0], args[1], queues=queues)
    print(f"{r.program}: {r.status} {r.reason} ({r.packets} packets)")
    for d in r.differences:
        print("  " + d)
    return 0 if r.status in ("identical", "refused") else 1


if __name__ == "__main__":
    sys.exit(main())


# ---------------------------------------------------------------- many programs
@dataclass(frozen=True)
class Job:
    name: str
    program: str
    stf: str
    queues: int = 1


def _run_job(job: Job) -> DiffResult:
    """In a worker: one program through both paths."""
    r = (compare_stf(job.program, job.stf, queues=job.queues) if job.stf
         else compare_random(job.program))
    r.program = job.name
    return r


def _job_failed(job: Job, why: str) -> DiffResult:
    return DiffResult(job.name, "different", why)


def run_jobs(jobs: list[Job], workers: int = 2, timeout: float = 300.0) -> list[DiffResult]:
    """Each job in a forked worker (a crash in C is one failed program, not a dead run),
    ``workers`` at a time."""
    from softswitch.forked_jobs import run_forked, worker_context

    ctx = worker_context(["softswitch.devtools.fastpath_differential"])
    results = run_forked(jobs, _run_job, _job_failed, workers=workers, timeout=timeout,
                         context=ctx)
    order = {j.name: i for i, j in enumerate(jobs)}
    results.sort(key=lambda r: order.get(r.program, 0))
    return results
