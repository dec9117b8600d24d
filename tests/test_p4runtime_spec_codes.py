"""P4Runtime 1.4 error codes (issue 13): softswitch answers every case of
``spec_cases.SPEC`` as the specification says; the same cases run against BMv2's
``simple_switch_grpc`` (PI), whose answers — departures included — are pinned here
and tabled in softswitch/p4runtime/README.md."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from security_support import PROGRAM, compile_p4info
from spec_cases import SPEC, Target

from softswitch.daemon.device import Device
from softswitch.daemon.rpc.server import serve
from softswitch.local_port import free_port

# simple_switch_grpc 1.15.5 (PI), measured with spec_cases; "=" marks the spec's answer.
PI_ANSWERS = {
    "GetForwardingPipelineConfig before a pipeline is set": "FAILED_PRECONDITION",
    "Write: value wider than the field (7 bytes for bit<48>)": "INVALID_ARGUMENT",
    "Write: action parameter wider than bit<9> (0x0200)": "INVALID_ARGUMENT",
    "Write: empty byte string": "OK",
    "Write: zero-padded byte string (9 bytes for bit<48>)": "=",
    "Write: unknown role with the primary's election id": "OK",
    "Write: another device id": "PERMISSION_DENIED",
    "Write: no election id while a primary exists": "=",
    "Write: group with an unknown member": "=",
    "Write: counter index -1": "=",
    "Write: counter index past its size": "UNKNOWN",
    "Write: register cell": "UNIMPLEMENTED",
    "Write: clone session with class_of_service": "UNIMPLEMENTED",
    "SetForwardingPipelineConfig: COMMIT with nothing saved": "UNKNOWN",
    "SetForwardingPipelineConfig: COMMIT carrying a config": "UNKNOWN",
    "SetForwardingPipelineConfig: unknown role": "OK",
}


def test_softswitch_answers_as_the_spec_says(tmp_path):
    p4info = compile_p4info(tmp_path)
    server, port = serve(Device(device_id=7), "127.0.0.1:0")
    target = Target(f"127.0.0.1:{port}", 7, p4info, PROGRAM.encode())
    try:
        got = target.run()
    finally:
        target.close()
        server.stop(0).wait()
    wrong = {case: (answer, SPEC[case][0]) for case, answer in got.items()
             if answer != SPEC[case][0]}
    assert not wrong, f"softswitch departs from P4Runtime 1.4 (got, spec): {wrong}"
    assert set(got) == set(SPEC)


@pytest.mark.timeout(300)
def test_simple_switch_grpc_answers(reference_tools, tmp_path):
    """The same cases on BMv2 with a JSON from p4c-bm2-ss: PI's answers as tabled."""
    (tmp_path / "prog.p4").write_text(PROGRAM)
    subprocess.run([reference_tools.p4c, str(tmp_path / "prog.p4"), "-o",
                    str(tmp_path / "prog.json"), "--p4runtime-files",
                    str(tmp_path / "prog.txtpb")], check=True, capture_output=True,
                   timeout=300)
    p4info = text_format.Parse((tmp_path / "prog.txtpb").read_text(), p4info_pb2.P4Info())
    device_id = 200 + os.getpid() % 700
    grpc_port, thrift_port = free_port(), free_port()
    switch = subprocess.Popen(
        [reference_tools.simple_switch_grpc, "--no-p4", "--device-id", str(device_id),
         "--thrift-port", str(thrift_port),
         "--notifications-addr", f"ipc://{tmp_path}/notify-{uuid.uuid4().hex[:8]}.ipc",
         "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--cpu-port", "255"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        target = Target(f"127.0.0.1:{grpc_port}", device_id, p4info,
                        (tmp_path / "prog.json").read_bytes())
        try:
            got = target.run()
        finally:
            target.close()
    finally:
        switch.terminate()
        switch.wait(30)
    expected = {case: SPEC[case][0] if answer == "=" else answer
                for case, answer in PI_ANSWERS.items()}
    changed = {case: (got.get(case), expected[case]) for case in expected
               if got.get(case) != expected[case]}
    assert not changed, ("simple_switch_grpc answers differently from the table in "
                         f"softswitch/p4runtime/README.md (got, tabled): {changed}")
