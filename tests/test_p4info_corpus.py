"""softswitch's P4Info against p4c's for every corpus program that has one.

Each program is compiled and its P4Info generated; the result must equal p4c's
``.p4info.txtpb`` as a protobuf message (order of repeated fields included, ``doc``
fields ignored). The equality rate is printed; the test fails only on internal errors
(Python exceptions escaping the front end or the generator), and when the rate drops
below the floor this project has reached — a regression guard, not a hard-coded result.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import traceback
from collections import Counter
from pathlib import Path

import pytest
from google.protobuf import text_format
from google.protobuf.message import Message
from p4.config.v1 import p4info_pb2

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("P4_CONFORMANCE_DIR", REPO.parent / "shared" / "conformance"))
SAMPLES = CORPUS / "p4_16_samples"
RATE_FLOOR = 0.95

pytestmark = pytest.mark.skipif(
    not (CORPUS / "manifest.json").exists(),
    reason=f"conformance corpus not found at {CORPUS} (set P4_CONFORMANCE_DIR)")


def strip_doc(msg: Message) -> None:
    """Clear every ``doc`` field (p4c's documentation strings are not compared)."""
    for fd, value in msg.ListFields():
        if fd.name == "doc":
            msg.ClearField("doc")
            continue
        if fd.message_type is None:
            continue
        if not fd.is_repeated:
            strip_doc(value)
        elif fd.message_type.GetOptions().map_entry:
            if fd.message_type.fields_by_name["value"].message_type is not None:
                for key in value:
                    strip_doc(value[key])
        else:
            for item in value:
                strip_doc(item)


def load_expected(name: str) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    text_format.Parse((SAMPLES / f"{name}.p4info.txtpb").read_text(), msg)
    strip_doc(msg)
    return msg


def check_one(name: str) -> tuple[str, str, str]:
    """(program, outcome, detail); outcome: equal, differ, rejected, internal-error."""
    from softswitch.diagnostics import P4Error
    from softswitch.frontend.compiler import compile_program
    from softswitch.p4info import generate

    expected = load_expected(name)
    try:
        checked = compile_program(SAMPLES / name)
        got = generate(checked)
    except P4Error as exc:
        # p4c writes an empty P4Info when its generator reports an error.
        if expected == p4info_pb2.P4Info():
            return name, "equal", ""
        return name, "rejected", str(exc).splitlines()[0]
    except Exception:  # noqa: BLE001 - an internal error is what this test reports
        return name, "internal-error", traceback.format_exc(limit=3)
    strip_doc(got)
    if got == expected:
        return name, "equal", ""
    return name, "differ", ""


@pytest.fixture(scope="module")
def results() -> list[tuple[str, str, str]]:
    manifest = json.loads((CORPUS / "manifest.json").read_text())
    names = [p["program"] for p in manifest["programs"] if p.get("p4info")]
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(2) as pool:
        out = pool.map(check_one, names, chunksize=4)
    counts = Counter(outcome for _, outcome, _ in out)
    rate = counts["equal"] / len(out)
    print(f"\nP4Info equal to p4c's: {counts['equal']}/{len(out)} ({rate:.1%}); "
          f"{dict(counts)}")
    for name, outcome, detail in out:
        if outcome != "equal":
            print(f"  {outcome}: {name} {detail[:200]}")
    return out


def test_no_internal_errors(results: list[tuple[str, str, str]]) -> None:
    crashes = [f"{n}:\n{d}" for n, o, d in results if o == "internal-error"]
    assert not crashes, "internal errors:\n" + "\n".join(crashes)


def test_equality_rate_does_not_regress(results: list[tuple[str, str, str]]) -> None:
    equal = sum(1 for _, o, _ in results if o == "equal")
    assert equal / len(results) >= RATE_FLOOR
