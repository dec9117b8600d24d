"""A Write of one table entry goes down the layers, from the server to the C table.

Every Write enters through the servicer's ``Write`` and ``p4runtime.write.Writes``;
the entry then goes through the runtime and ``p4runtime/tables.py`` to the switch,
which puts it into its C table. Traced call by call (``sys.setprofile``) up to that C
call, a Python frame may return to a caller in another softswitch module — a step back
up that the next call goes down again — at most ``MAX_RETURNS`` times for the common
Write (the default role's primary, CONTINUE_ON_ERROR), and the entry must reach the C
table within the Write. The general way (here a ROLLBACK_ON_ERROR Write, parsed after
the header's checks) must reach it too, and write the same entry.
"""

from __future__ import annotations

import os
import sys

import pytest
from p4.v1 import p4runtime_pb2
from test_p4runtime_plain_writes import PROGRAM, Dev, route, upd
from test_p4runtime_small_writes import ELECTION, request

from softswitch.daemon.rpc.server import P4RuntimeServicer
from softswitch.daemon.rpc.unary import LaneContext
from softswitch.p4runtime.arbitration import Connection

WriteRequest = p4runtime_pb2.WriteRequest
INSERT = p4runtime_pb2.Update.INSERT
MAX_RETURNS = 3
ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                    "softswitch")


def _module(frame) -> str | None:
    """The softswitch module of the nearest softswitch frame at or above ``frame``."""
    while frame is not None:
        name = frame.f_code.co_filename
        if name.startswith(ROOT):
            return os.path.relpath(name, ROOT)
        frame = frame.f_back
    return None


def _walk(write, data: bytes) -> tuple[list[tuple[str, str, str]], bool]:
    """The returns to a caller of another softswitch module during ``write(data)``
    before its first call that puts an entry into a C table (returning module, its
    function, the caller's module), and whether that call came."""
    climbs: list[tuple[str, str, str]] = []
    reached = [False]

    def profile(frame, event, arg) -> None:
        if reached[0]:
            return
        if event == "c_call" and getattr(arg, "__name__", "").startswith("tbl_put"):
            reached[0] = True
        elif event == "return" and frame.f_code.co_filename.startswith(ROOT):
            here, caller = _module(frame), _module(frame.f_back)
            if caller is not None and caller != here:
                climbs.append((here, frame.f_code.co_name, caller))

    previous = sys.getprofile()
    sys.setprofile(profile)
    try:
        write(data, LaneContext())
    finally:
        sys.setprofile(previous)
    return climbs, reached[0]


@pytest.fixture
def served(tmp_path):
    path = tmp_path / "path.p4"
    path.write_text(PROGRAM)
    dev = Dev(str(path))
    device = dev.device
    if not hasattr(device.current.switch, "synced_batch"):
        pytest.skip("no C data path here (SOFTSWITCH_FASTPATH=off or no compiler)")
    update = p4runtime_pb2.MasterArbitrationUpdate(device_id=0)
    update.election_id.high, update.election_id.low = ELECTION >> 64, ELECTION & (
        (1 << 64) - 1)
    device.arbiter.arbitrate(Connection(send=lambda message: None), update)
    servicer = P4RuntimeServicer(device)
    # the first Write of a table binds what its writes use once: not part of the walk
    servicer.Write(request(upd(INSERT, route(dev.ids, 0x0A0000000000))), LaneContext())
    return dev, servicer


def test_one_entry_walks_down_to_the_c_table(served):
    dev, servicer = served
    data = request(upd(INSERT, route(dev.ids, 0x0B0000000000)))
    climbs, reached = _walk(servicer.Write, data)
    assert reached, "the entry did not reach the C table within the Write"
    assert len(climbs) <= MAX_RETURNS, climbs
    assert len(dev.read()) == 2


def test_the_general_way_reaches_the_c_table_with_the_same_entry(served):
    dev, servicer = served
    data = request(upd(INSERT, route(dev.ids, 0x0C0000000000)),
                   atomicity=WriteRequest.ROLLBACK_ON_ERROR)
    climbs, reached = _walk(servicer.Write, data)
    assert reached, "the entry did not reach the C table within the Write"
    plain = request(upd(INSERT, route(dev.ids, 0x0D0000000000)))
    servicer.Write(plain, LaneContext())
    views = dev.views()
    assert len(views) == 3
    general, common = (v for v in views if v[1][0].value in (0x0C0000000000, 0x0D0000000000))
    assert general[2:] == common[2:], "both ways give the switch the same action and args"
