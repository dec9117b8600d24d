"""The lab's results pinned: a short MoE cell (tailcc, seed 1) gives exactly the cell it
gave when this pin was taken, figure for figure, on the C packet path and on the
interpreter.

A change that makes the lab faster must leave every figure of a cell as it was; a change
of the model (traffic, NIC, switch program, traffic manager) changes this digest on
purpose, and whoever makes it takes a new pin and says why in the commit. The cell is
compared whole (every class's slowdowns, completion times, PFC, ECN, CNP figures, queue
samples and event counts), only its wall time left out.
"""

import hashlib
import json
from dataclasses import replace

import pytest

from taillab.programs import compile_tailcc
from taillab.runner import run_cell
from taillab.scenario import load_scenario

# moe.yaml, 400 us of traffic and 400 us of drain, scheme tailcc, seed 1
PINNED_SHA256 = "d0e076918dab3cff"
PINNED_COUNTS = {"completed": 1356, "messages": 1356, "sim_events": 35065,
                 "switch_packets": 13599}


def _cell(fastpath: str) -> dict:
    scenario = replace(load_scenario("moe").scaled(400, (1,)), drain_us=400)
    cell = run_cell(scenario, "tailcc", 1, fastpath, compile_tailcc())
    cell.pop("wall_s")
    return cell


@pytest.mark.parametrize("fastpath", ["auto", "off"])
def test_short_moe_cell_is_the_pinned_one(fastpath: str) -> None:
    cell = _cell(fastpath)
    assert {k: cell[k] for k in PINNED_COUNTS} == PINNED_COUNTS
    digest = hashlib.sha256(json.dumps(cell, sort_keys=True).encode()).hexdigest()
    assert digest[:16] == PINNED_SHA256
