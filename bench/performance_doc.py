"""``make bench``'s write-up: its JSON rendered into docs/performance.md and docs/lab.md.

In each doc it rewrites only the region between the lines ``<!-- make bench: tables -->``
and ``<!-- make bench: end -->``; the prose around them is left as it is.

* docs/performance.md, from ``out/bench/summary.json`` (``bench/run_all.py``): when and
  where the run was made, then one table per benchmark (measure | BMv2 | softswitch |
  ratio, the figures formatted as run_all prints them; a benchmark without BMv2 figures
  has no BMv2 or ratio column), then the benchmarks that failed.
* docs/lab.md, from each ``out/lab/*/summary.json`` (``taillab.lab_report``): per class
  the P99 and P999 slowdown of each scheme with their 95% intervals over the seeds, and
  per scheme the PFC paused time and the elephants' goodput beside the baseline's.

It copies the lab's slowdown CDF and the Mininet mix's CDF into ``docs/img/``, shrunk
(Pillow) until each is under ``IMG_LIMIT`` bytes so a committed picture stays small; a
missing picture is reported and skipped.

Every input and both docs' markers are checked before anything is written: a missing
input or marker is one line on stderr and exit status 1, the docs unchanged. A doc is
replaced whole (a temporary file renamed over it), never left half written.

    python bench/performance_doc.py [--summary out/bench/summary.json] [--lab out/lab]
        [--mix out/mix] [--doc docs/performance.md] [--lab-doc docs/lab.md] [--img docs/img]
        [--only lab]
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
START = "<!-- make bench: tables -->"
END = "<!-- make bench: end -->"
IMG_LIMIT = 150_000          # bytes: the most a picture committed under docs/img/ takes
RATIO_NOTE = ("ratio: how many times better softswitch is (rate: softswitch / BMv2; "
              "time: BMv2 / softswitch)")
MOUSE_NOTE = ("slowdown: a message's completion time over its completion time on an idle "
              "fabric; [95% interval, a bootstrap over the seeds and blocks of time]; "
              "\\* marks a mouse class; *floor*: what the offered traffic forces on any "
              "scheduler (taillab.bounds), each scheme's P99 and P999 also as a multiple "
              "of it; / ideal-srpt: the P99 over that of a central SRPT schedule "
              "(taillab.ideal), with its paired interval; *N of M*: where not every offered "
              "message completed, the percentiles are over those that did")


class DocError(Exception):
    """An input or a doc that cannot be used; its text is the one line the CLI prints."""


# --- figures as run_all prints them -----------------------------------------------------
def fmt_value(value: float | None, unit: str) -> str:
    """A figure in ``unit`` as ``bench/run_all.py``'s table shows it ("-": none)."""
    if value is None:
        return "-"
    if unit == "fraction":
        return f"{value:.2f}"
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "µs":
        return f"{value:,.0f} µs"
    if unit == "x":
        return f"{value:.2f}x"
    return f"{value / 1000:,.1f}k" if value >= 10000 else f"{value:,.0f}"


def fmt_ratio(value: float | None) -> str:
    return f"{value:.2f}x" if value else "-"


# units fmt_value shows with the figure; the others go in the measure's cell
_SHOWN_UNITS = ("fraction", "s", "µs", "x", "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def _markdown(header: list[str], align: str, rows: list[list[str]]) -> list[str]:
    """A markdown table; ``align`` holds one of "l"/"r" per column."""
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    out += ["| " + " | ".join(_cell(c) for c in r) + " |" for r in rows]
    return out


# --- docs/performance.md ------------------------------------------------------------------
def performance_region(summary: dict[str, Any], mix_img: str | None = None) -> str:
    """The region of docs/performance.md for one run_all summary."""
    rows = summary["rows"]
    titles: dict[str, str] = summary["benches"]
    errors: dict[str, str] = summary.get("errors") or {}
    out = [_run_line(summary), "", RATIO_NOTE + "."]
    for note in summary.get("notes") or []:
        out += ["", f"Note: {note}"]
    for bench, title in titles.items():
        mine = [r for r in rows if r["bench"] == bench]
        if bench in errors or not mine:
            continue
        out += ["", f"### {title}", ""]
        with_bmv2 = any(r.get("bmv2") is not None for r in mine)
        table = []
        for r in mine:
            unit = r.get("unit", "")
            measure = r["measure"] if unit in _SHOWN_UNITS else f"{r['measure']} ({unit})"
            soft = fmt_value(r.get("softswitch"), unit)
            table.append([measure, fmt_value(r.get("bmv2"), unit), soft,
                          fmt_ratio(r.get("ratio"))] if with_bmv2 else [measure, soft])
        out += _markdown(["measure", "BMv2", "softswitch", "ratio"], "lrrr", table) \
            if with_bmv2 else _markdown(["measure", "softswitch"], "lr", table)
    if errors:
        out += ["", "### Failed", ""]
        out += [f"- `{name}`: {error}" for name, error in errors.items()]
    if mix_img:
        out += ["", "### The Mininet mix", "",
                "Per-class latency CDF through the single-switch topology on softswitch, "
                "FIFO vs tailcc (`python -m topologies.mix`):", "",
                f"![Mininet mix: per-class latency CDF, FIFO vs tailcc]({mix_img})"]
    return "\n".join(out)


def _run_line(summary: dict[str, Any]) -> str:
    load = summary.get("loadavg")
    load_text = " / ".join(f"{x:.2f}" for x in load) if load else "not recorded"
    bmv2_ran = "bmv2" in summary["targets"]
    host = f" ({summary['host']})" if summary.get("host") else ""
    kind = ("`--quick`: a smoke test of the whole bench, not figures to quote"
            if summary.get("quick") else "a full run")
    return (f"`make bench` run of {summary.get('time', 'an unrecorded time')} on "
            f"{summary.get('cpus', '?')} CPUs{host}, load average {load_text} at its end; "
            f"{'BMv2 side by side' if bmv2_ran else 'softswitch only (BMv2 left out)'}; "
            f"{kind}.")


# --- docs/lab.md ----------------------------------------------------------------------------
def lab_region(runs: list[tuple[Path, dict[str, Any]]], cdf_img: str | None = None) -> str:
    """The region of docs/lab.md: for each lab run (its summary.json's path and content)
    the per-class and per-scheme tables; ``cdf_img``, the slowdown CDF shown after the
    pd_cascade run's."""
    out = [MOUSE_NOTE + "."]
    for path, data in runs:
        with _named(path):
            out += [""] + _lab_run(path, data)
        if cdf_img and path.parent.name == "pd_cascade":
            out += ["", f"![{path.parent.name}: per-class slowdown CDF, one line per "
                        f"scheme]({cdf_img})"]
    return "\n".join(out)


def _lab_run(path: Path, data: dict[str, Any]) -> list[str]:
    summary: dict[str, Any] = data["summary"]
    name = data.get("scenario") or path.parent.name
    written = datetime.datetime.fromtimestamp(path.stat().st_mtime).astimezone()
    seeds = next(iter(summary.values()))["seeds"] if summary else []
    out = [f"### {name}", "",
           f"`{_shown(path)}`, written {written.strftime('%Y-%m-%dT%H:%M:%S%z')}: "
           f"{len(summary)} schemes, seeds {', '.join(map(str, seeds))}"
           f"{_scenario_extent(path.parent / 'scenario.json')}.", ""]
    floors: dict[str, Any] = data.get("floors") or {}
    rows = []
    for cls in dict.fromkeys(c for s in summary.values() for c in s["classes"]):
        rows += _class_rows(cls, summary, floors.get(cls))
    out += _markdown(["class", "scheme", "messages", "P99 slowdown", "P999 slowdown",
                      "P99 / floor", "P999 / floor", "P99 / ideal-srpt"], "llrrrrrr", rows)
    base = summary.get("baseline") or {}
    table = [[scheme, _num(s["pfc_paused_us"], "{:,.0f}"),
              _vs(s["pfc_paused_us"], base.get("pfc_paused_us")),
              _num(s["elephant_goodput_gbps"], "{:.2f}"),
              _vs(s["elephant_goodput_gbps"], base.get("elephant_goodput_gbps"))]
             for scheme, s in summary.items()]
    out += [""] + _markdown(["scheme", "PFC paused (µs)", "/ baseline's",
                             "elephant goodput (Gb/s)", "/ baseline's"], "lrrrr", table)
    verdict = data.get("verdict") or []
    if verdict:
        missed = [f"{v['target']} ({v['measured']})" for v in verdict if not v["met"]]
        out += ["", f"Targets: {len(verdict) - len(missed)} of {len(verdict)} met"
                + ("; missed: " + "; ".join(missed) if missed else "") + "."]
    return out


def _class_rows(cls: str, summary: dict[str, Any], floor: dict[str, Any] | None
                ) -> list[list[str]]:
    """A class's rows: its floor (when the run has one), then one per scheme."""
    rows = []
    if floor:
        rows.append(["", "floor (any scheduler)", "", _num(floor.get("p99"), "{:.2f}"),
                     _num(floor.get("p999"), "{:.2f}"), "", "", ""])
    for scheme, s in summary.items():
        c = s["classes"].get(cls)
        if c is None:
            continue
        vs_floor = c.get("vs_floor") or {}
        vs_ideal = (c.get("vs_ideal") or {}).get("p99")
        rows.append(["", scheme, _done(c), _stat(c["p99"]), _stat(c["p999"]),
                     _num(vs_floor.get("p99"), "{:.2f}x"), _num(vs_floor.get("p999"),
                                                                "{:.2f}x"),
                     _stat(vs_ideal) + "x" if vs_ideal else "-"])
    if rows:
        mouse = any(s["classes"].get(cls, {}).get("mouse") for s in summary.values())
        rows[0][0] = cls + ("*" if mouse else "")
    return rows


def _done(c: dict[str, Any]) -> str:
    """Messages completed, and of how many offered where some did not complete."""
    offered = c.get("offered")
    if isinstance(offered, int) and offered > c["messages"]:
        return f"{c['messages']:,} of {offered:,}"
    return f"{c['messages']:,}"


def _scenario_extent(path: Path) -> str:
    try:
        scenario = json.loads(path.read_text())
        return f", {scenario['duration_us']:,.0f} µs of traffic each"
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def _bad(x: Any) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _num(x: Any, form: str) -> str:
    return "-" if _bad(x) else form.format(x)


def _stat(d: dict[str, Any]) -> str:
    """A taillab Stat as lab_report prints it: value [ci_low, ci_high]."""
    if _bad(d.get("value")):
        return "-"
    if _bad(d.get("ci_low")) or _bad(d.get("ci_high")):
        return f"{d['value']:.2f}"
    return f"{d['value']:.2f} [{d['ci_low']:.2f}, {d['ci_high']:.2f}]"


def _vs(x: Any, base: Any) -> str:
    if _bad(x) or _bad(base) or not base:
        return "-"
    return f"{x / base:.3f}x"


def _shown(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.resolve().relative_to(ROOT))
    return str(path)


# --- the docs' regions ----------------------------------------------------------------------
def replace_region(text: str, body: str, doc: Path) -> str:
    """``text`` with what lies between its START and END lines replaced by ``body``."""
    for marker in (START, END):
        n = text.count(marker)
        if n == 0:
            raise DocError(f"{doc}: no marker line '{marker}'; file left unchanged")
        if n > 1:
            raise DocError(f"{doc}: marker '{marker}' {n} times (one expected); "
                           f"file left unchanged")
    after = text.index(START) + len(START)
    end = text.index(END)
    if end < after:
        raise DocError(f"{doc}: marker '{END}' comes before '{START}'; file left unchanged")
    return text[:after] + "\n" + body.rstrip("\n") + "\n" + text[end:]


def write_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` whole: a temporary file beside it renamed over it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        if path.exists():
            shutil.copymode(path, tmp)
        else:                       # mkstemp's 0600 is for secrets, not for docs
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# --- inputs ---------------------------------------------------------------------------------
def read_json(path: Path, what: str, hint: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DocError(f"{path}: no {what} ({hint})") from None
    except (OSError, ValueError) as exc:
        raise DocError(f"{path}: cannot read the {what}: {exc}") from None


def read_summary(path: Path) -> dict[str, Any]:
    data = read_json(path, "benchmark summary", "make bench writes it: bench/run_all.py")
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list) \
            or not isinstance(data.get("benches"), dict) or "targets" not in data:
        raise DocError(f"{path}: not a bench/run_all.py summary (rows, benches, targets)")
    return data


def read_lab_runs(lab: Path) -> list[tuple[Path, dict[str, Any]]]:
    paths = sorted(lab.glob("*/summary.json"))
    if not paths:
        raise DocError(f"{lab}: no lab results (*/summary.json; make bench runs "
                       f"`tailcc lab pd_cascade --out {_shown(lab)}/pd_cascade`)")
    runs = []
    for path in paths:
        data = read_json(path, "lab summary", "tailcc lab writes it")
        if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
            raise DocError(f"{path}: not a taillab summary.json (no per-scheme 'summary')")
        runs.append((path, data))
    return runs


def read_doc(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DocError(f"{path}: cannot read the doc: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _named(path: Path) -> Iterator[None]:
    """A figure missing from a JSON file becomes a DocError naming the file."""
    try:
        yield
    except (KeyError, TypeError, ValueError, AttributeError, StopIteration) as exc:
        raise DocError(f"{path}: unexpected content ({type(exc).__name__}: {exc})") from None


# --- pictures -------------------------------------------------------------------------------
def copy_picture(src: Path, dst: Path, limit: int = IMG_LIMIT,
                 log: Callable[[str], None] = print) -> bool:
    """Copy a PNG to ``dst``, shrunk until it is under ``limit`` bytes (as is without
    Pillow); False, with a line to ``log``, when ``src`` is missing."""
    if not src.is_file():
        log(f"picture skipped: no {src}")
        return False
    data = src.read_bytes()
    if len(data) > limit:
        data = _shrink(src, limit, log)
    dst.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(dst, data)
    log(f"picture: {dst} ({len(data) // 1000} kB)")
    return True


def _shrink(src: Path, limit: int, log: Callable[[str], None]) -> bytes:
    """The PNG in 256 colours, then narrower by steps until it is under ``limit``."""
    import io

    try:
        from PIL import Image
    except ImportError:
        log(f"picture {src}: copied as is (no Pillow to shrink it)")
        return src.read_bytes()
    with Image.open(src) as img:
        img.load()
        base = img.convert("RGB")
    width = base.width
    data = b""
    while True:
        height = max(1, round(base.height * width / base.width))
        shrunk = base if width == base.width else base.resize((width, height),
                                                              Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        shrunk.quantize(256).save(buf, "PNG", optimize=True)
        data = buf.getvalue()
        if len(data) <= limit or width <= 320:
            return data
        width = int(width * 0.8)


# --- the command ----------------------------------------------------------------------------
def _relative(target: Path, doc: Path) -> str:
    return Path(os.path.relpath(target, doc.parent)).as_posix()


def run(args: argparse.Namespace, log: Callable[[str], None] = print) -> None:
    """Check every input and both docs' markers, then copy the pictures and write the
    docs."""
    lab_only = args.only == "lab"
    summary = None if lab_only else read_summary(args.summary)
    runs = read_lab_runs(args.lab)
    doc_text, lab_text = read_doc(args.doc), read_doc(args.lab_doc)
    pictures = ((args.mix / "mix-single-softswitch.png", args.img / "mix_cdf.png"),
                (args.lab / "pd_cascade" / "slowdown_cdf.png",
                 args.img / "lab_slowdown_cdf.png"))
    (mix_src, mix_dst), (cdf_src, cdf_dst) = pictures
    perf = doc_text
    if summary is not None:
        with _named(args.summary):
            perf_body = performance_region(
                summary, _relative(mix_dst, args.doc) if mix_src.is_file() else None)
        perf = replace_region(doc_text, perf_body, args.doc)
    lab_body = lab_region(runs, _relative(cdf_dst, args.lab_doc) if cdf_src.is_file() else None)
    lab = replace_region(lab_text, lab_body, args.lab_doc)
    for src, dst in pictures[1:] if lab_only else pictures:
        copy_picture(src, dst, log=log)
    if not lab_only:
        write_atomic(args.doc, perf.encode())
    write_atomic(args.lab_doc, lab.encode())
    log(f"wrote {args.lab_doc}" if lab_only else f"wrote {args.doc} and {args.lab_doc}")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="bench/performance_doc.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--summary", type=Path, default=ROOT / "out/bench/summary.json",
                    help="bench/run_all.py's summary (out/bench/summary.json)")
    ap.add_argument("--lab", type=Path, default=ROOT / "out/lab",
                    help="the lab runs, one directory each (out/lab)")
    ap.add_argument("--mix", type=Path, default=ROOT / "out/mix",
                    help="python -m topologies.mix's output (out/mix)")
    ap.add_argument("--doc", type=Path, default=ROOT / "docs/performance.md")
    ap.add_argument("--lab-doc", type=Path, default=ROOT / "docs/lab.md")
    ap.add_argument("--img", type=Path, default=ROOT / "docs/img",
                    help="where the pictures go (docs/img)")
    ap.add_argument("--only", choices=("lab",),
                    help="lab: rewrite docs/lab.md from out/lab alone (after `tailcc lab` "
                         "runs without the rest of make bench)")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        run(args)
    except DocError as exc:
        print(f"performance_doc: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"performance_doc: error: {exc.filename or ''}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
