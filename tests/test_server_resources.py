"""Issue 13's resource findings, bounded in make test with bench/server_resources.py at a
small scale: server memory once grew to 900 MB after a few huge batches and stayed there,
and SIGTERM took 8-10 s while a big Write was being applied."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench" / "server_resources.py"


def test_memory_comes_back_after_deletes_and_sigterm_is_prompt(tmp_path):
    out = tmp_path / "figures.json"
    proc = subprocess.run([sys.executable, str(BENCH), "--entries", "90000", "--batch", "30000",
                           "--settle", "2.5", "--huge", "600000", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    figures = json.loads(out.read_text())
    rss = [f["rss"] for f in figures["rss_mib"]]
    base, peak, settled = rss[0], max(rss[1:3]), rss[4]
    assert peak > base, figures
    # deleted entries give their memory back (was: stayed at the peak), to within issue
    # 13's 20% of the baseline (+28% while the fast path's C hash maps kept the slots of
    # deleted entries)
    assert settled <= 1.2 * base, figures
    # a batch over the request limit is refused without growing the server for good
    assert "RESOURCE_EXHAUSTED" in figures["rss_mib"][5]["note"], figures
    assert rss[6] - base <= 0.5 * (peak - base) + 32, figures
    # SIGTERM during a 200k-update Write ends the switch without waiting for the Write
    # (softswitch run ends with os._exit once stopped); waiting for it took 8-10 s, a
    # bound the busiest machine stays under
    assert figures["sigterm_s"] < 6.0 and figures["exit_code"] == 0, figures
    assert figures["port_free"], figures
