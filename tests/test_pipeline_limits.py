"""Pipeline configs that cannot hurt the host (issue 13): includes confined to the
config's own files and softswitch's p4include/, bounded input/preprocessed size, time
and memory of a compile, a sandboxed compile worker, a server that stays responsive
meanwhile, and ``softswitch compile`` under the same limits."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from security_support import PROGRAM, Server, SetReq, compile_p4info, upd

from softswitch.diagnostics import P4Error
from softswitch.frontend import preprocess
from softswitch.frontend.limits import DEFAULT, Limits, applied
from softswitch.p4runtime import landlock
from softswitch.p4runtime.pipeline import Artifact

BOMB = "#define A0 xxxxxxxxxxxxxxxx\n" + "".join(
    f"#define A{i} A{i - 1} A{i - 1} A{i - 1} A{i - 1}\n" for i in range(1, 14)) + "A13\n"
BIG_REGISTER = PROGRAM.replace(
    "counter(8, CounterType.packets) hits;",
    "counter(8, CounterType.packets) hits; register<bit<32>>(32w0xfffffff) big;")
SMALL = Limits(max_source_bytes=64 << 10, max_preprocessed_bytes=1 << 20, max_seconds=30,
               max_memory_bytes=384 << 20)


@pytest.fixture(scope="module")
def p4info(tmp_path_factory):
    return compile_p4info(tmp_path_factory.mktemp("limits"))


@pytest.fixture(scope="module")
def server(p4info):
    srv = Server.start(p4info, limits=SMALL)
    yield srv
    srv.close()


def _push(server: Server, device_config: bytes) -> grpc.RpcError | None:
    req = server.set_request(SetReq.VERIFY_AND_COMMIT)
    req.config.p4_device_config = device_config
    try:
        server.stub.SetForwardingPipelineConfig(req, timeout=120)
    except grpc.RpcError as exc:
        return exc
    return None


def _artifact(source: str, files: dict[str, str] | None = None) -> bytes:
    return Artifact(source, "prog.p4", {}, files or {}).to_bytes()


# (name, the lines put before the program, what the refusal says): INVALID_ARGUMENT
HOSTILE_INCLUDES = [
    ("/dev/zero", '#include "/dev/zero"\n', "absolute paths are not allowed"),
    ("/etc/passwd", '#include "/etc/passwd"\n', "absolute paths are not allowed"),
    ("angle absolute", "#include </etc/hostname>\n", "absolute paths are not allowed"),
    ("dot-dot", '#include "../../../../etc/passwd"\n', "'..' is not allowed"),
    ("macro include", '#define F "/etc/passwd"\n#include F\n', "computed (macro) file name"),
    ("continued line", '#inc\\\nlude "/dev/zero"\n', "absolute paths are not allowed"),
]
HOSTILE = [(name, (head + PROGRAM).encode(), grpc.StatusCode.INVALID_ARGUMENT, message)
           for name, head, message in HOSTILE_INCLUDES] + [
    ("artifact file includes /proc", _artifact(
        '#include "inc/a.p4"\n' + PROGRAM, {"inc/a.p4": '#include "/proc/self/environ"\n'}),
     grpc.StatusCode.INVALID_ARGUMENT, "inc/a.p4:1:1: error: #include \"/proc/self/environ\""),
    ("artifact file path escapes", _artifact(PROGRAM, {"../x.p4": "x"}),
     grpc.StatusCode.INVALID_ARGUMENT, "leaves the program's directory"),
    ("artifact absolute file path", _artifact(PROGRAM, {"/tmp/x.p4": "x"}),
     grpc.StatusCode.INVALID_ARGUMENT, "leaves the program's directory"),
    ("too big", b"//" + b"x" * (70 << 10) + b"\n" + PROGRAM.encode(),
     grpc.StatusCode.RESOURCE_EXHAUSTED, "--max-source-bytes"),
    ("macro bomb", BOMB.encode(),
     grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than 1048576 bytes (softswitch run "
                                         "--max-preprocessed-bytes)"),
    ("huge register", BIG_REGISTER.encode(),
     grpc.StatusCode.RESOURCE_EXHAUSTED, "more memory than 384 MiB (softswitch run "
                                         "--max-compile-memory-mb)"),
]


@pytest.mark.parametrize("name, config, code, message", HOSTILE, ids=[c[0] for c in HOSTILE])
def test_hostile_configs_are_refused_and_change_nothing(server, name, config, code, message):
    entry = server.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)).config
    started = time.monotonic()
    exc = _push(server, config)
    assert exc is not None, f"{name}: accepted"
    assert exc.code() == code and message in exc.details(), exc.details()
    assert time.monotonic() - started < 60
    for secret in ("root:", "PATH=", "HOME="):                # nothing of the server's files
        assert secret not in exc.details()
    assert "Traceback" not in exc.details()
    after = server.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1)).config
    assert after == entry                                       # the pipeline stayed


def test_own_files_and_p4include_still_work(server):
    config = _artifact('#include "lib/defs.p4"\n' + PROGRAM.replace(
        "bit<48> dst;", "mac_t dst;"), {"lib/defs.p4": "typedef bit<48> mac_t;\n"})
    assert _push(server, config) is None


def test_server_answers_while_a_pipeline_compiles(server):
    """The compile runs in a worker: other clients are served meanwhile."""
    done = threading.Event()
    result: list[grpc.RpcError | None] = []

    def push() -> None:
        result.append(_push(server, BIG_REGISTER.encode()))
        done.set()
    threading.Thread(target=push, daemon=True).start()
    time.sleep(0.3)
    slowest, answered = 0.0, 0
    read = p4runtime_pb2.ReadRequest(device_id=1)
    read.entities.add().table_entry.SetInParent()
    while not done.is_set():
        t0 = time.monotonic()
        server.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
        list(server.stub.Read(read, timeout=5))
        slowest = max(slowest, time.monotonic() - t0)
        answered += 1
        time.sleep(0.05)
    assert result[0] is not None and result[0].code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert answered >= 3 and slowest < 1.0, (answered, slowest)


def test_write_while_nothing_changed(server):
    """After every refusal above the server still takes writes."""
    from security_support import Update, fwd_entry
    req = server.write_request(upd(Update.INSERT, table_entry=fwd_entry(server.ids, 0x31, 1)))
    server.stub.Write(req)
    server.stub.Write(server.write_request(upd(Update.DELETE, table_entry=fwd_entry(
        server.ids, 0x31, 1))))


# ---------------------------------------------------------------------- the hard guarantees
def test_files_outside_the_roots_never_reach_the_parser(tmp_path, monkeypatch):
    """Whatever slips past the directive check: the line markers are checked after cpp."""
    monkeypatch.setattr(preprocess, "check_includes", lambda *a, **k: None)
    (tmp_path / "p.p4").write_text('#include "/etc/passwd"\nconst bit<8> X = 1;\n')
    with applied(DEFAULT.restricted_to(str(tmp_path))), pytest.raises(P4Error) as exc:
        preprocess.preprocess(tmp_path / "p.p4")
    assert "outside the pipeline config's files" in str(exc.value)
    assert "root:x:" not in str(exc.value) and "/etc/passwd" not in str(exc.value)


@pytest.mark.skipif(landlock.abi_version() < 1, reason="the kernel has no Landlock")
def test_landlock_confines_the_worker(tmp_path):
    (tmp_path / "mine.p4").write_text("x")
    code = f"""
import sys
from softswitch.p4runtime import landlock
assert landlock.restrict(read=[{str(tmp_path)!r}] + [p for p in sys.path if p],
                         execute=["/usr"], write_files=["/dev/null"])
out = []
for path in ("/etc/hostname", "/dev/zero", "/proc/self/environ", {str(tmp_path / 'mine.p4')!r}):
    try:
        open(path, "rb").read(1)
        out.append("read")
    except OSError:
        out.append("denied")
print(",".join(out))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.stdout.strip() == "denied,denied,denied,read", proc.stderr


# ---------------------------------------------------------------------- softswitch compile
def _compile(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "softswitch", "compile", *args],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def test_compile_refuses_device_files_and_hides_foreign_files(tmp_path):
    (tmp_path / "zero.p4").write_text('#include <core.p4>\n#include "/dev/zero"\n')
    proc = _compile(str(tmp_path / "zero.p4"))
    assert proc.returncode == 1
    assert 'zero.p4:2:1: error: #include "/dev/zero": not a regular file' in proc.stderr
    (tmp_path / "pw.p4").write_text('#include "/etc/passwd"\n')
    proc = _compile(str(tmp_path / "pw.p4"))
    assert proc.returncode == 1 and "/etc/passwd:1:" in proc.stderr
    assert "message not shown" in proc.stderr and "root:x:" not in proc.stderr


def test_compile_limits_and_flags(tmp_path):
    (tmp_path / "prog.p4").write_text(PROGRAM)
    proc = _compile(str(tmp_path / "prog.p4"), "--max-source-bytes", "100")
    assert proc.returncode == 1 and "more than 100 bytes (limit --max-source-bytes" in \
        proc.stderr
    proc = _compile(str(tmp_path / "prog.p4"), "--no-limits")
    assert proc.returncode == 0, proc.stderr
    (tmp_path / "bomb.p4").write_text(BOMB)
    started = time.monotonic()
    proc = _compile(str(tmp_path / "bomb.p4"), "--max-preprocessed-bytes", "100000")
    assert proc.returncode == 1 and "larger than 100000 bytes" in proc.stderr
    assert time.monotonic() - started < 60
    (tmp_path / "macro.p4").write_text('#define F "/dev/zero"\n#include F\n')
    proc = _compile(str(tmp_path / "macro.p4"), "--max-compile-memory-mb", "256")
    assert proc.returncode == 1 and "ran out of memory" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_worker_answer_is_one_json_line(tmp_path):
    (tmp_path / "prog.p4").write_text(PROGRAM)
    job = {"main": str(tmp_path / "prog.p4"), "defines": {},
           "limits": {"max_source_bytes": None, "max_preprocessed_bytes": None,
                      "max_seconds": 60, "max_memory_bytes": None,
                      "include_roots": [str(tmp_path)]}}
    proc = subprocess.run([sys.executable, "-P", "-m", "softswitch.p4runtime.isolate"],
                          input=json.dumps(job), capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    answer = json.loads(proc.stdout)
    assert answer["ok"] is True
    assert answer["sandboxed"] is (landlock.abi_version() >= 1)


# ---------------------------------------------------------------------- requests and memory
def test_requests_over_the_size_limit_and_malformed_ones(p4info):
    from softswitch.daemon.device import Device
    from softswitch.daemon.rpc.server import serve

    srv, port = serve(Device(device_id=1), "127.0.0.1:0", max_message_bytes=64 << 10)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    raw = channel.unary_unary("/p4.v1.P4Runtime/Write", request_serializer=lambda b: b,
                              response_deserializer=p4runtime_pb2.WriteResponse.FromString)
    try:
        with pytest.raises(grpc.RpcError) as exc:
            raw(b"\x08\x01" + b"\x22\x00" * (48 << 10), timeout=30)     # 96 KiB > 64 KiB
        assert exc.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(grpc.RpcError) as exc:
            raw(b"\x08\x01\x22\x7f\x00", timeout=30)                   # truncated update
        assert exc.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "malformed WriteRequest" in exc.value.details()
    finally:
        channel.close()
        srv.stop(0).wait()


def test_a_stopping_switch_cuts_a_batch_short(p4info):
    from security_support import Update, fwd_entry
    srv = Server.start(p4info)
    try:
        loaded = srv.device.current
        request = srv.write_request(*[upd(Update.INSERT, table_entry=fwd_entry(srv.ids, i, 1))
                                      for i in range(1, 4)])
        calls = iter([False, True, True])
        with srv.device.lock:
            results = loaded.runtime.write(request, cancelled=lambda: next(calls))
        assert results[0] is None
        assert [r.code for r in results[1:]] == [grpc.StatusCode.UNAVAILABLE] * 2
    finally:
        srv.close()


def test_compact_rebuilds_emptied_containers_in_place():
    from softswitch.memory import reclaim

    class Holder:
        pass
    Holder.__module__ = "softswitch.test"
    holder, inner = Holder(), Holder()
    holder.big = {i: i for i in range(50000)}
    holder.inner = inner
    inner.names = set(range(50000))
    big, names = holder.big, inner.names
    for i in range(49990):
        del big[i]
        names.discard(i)
    before = sys.getsizeof(big) + sys.getsizeof(names)
    assert reclaim.compact(holder) == 2
    assert holder.big is big and inner.names is names            # same objects
    assert big == {i: i for i in range(49990, 50000)} and len(names) == 10
    assert sys.getsizeof(big) + sys.getsizeof(names) < before / 100
