"""Operator intent: load a YAML intent file, validate it, return typed objects.

``load_intent(path)`` raises :class:`IntentError` listing *every* problem, each as
``file:line: path: reason``; nothing downstream ever sees an invalid intent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from controlplane.intent.crossref import check_intent
from controlplane.intent.model import Intent
from controlplane.intent.parse import parse_intent
from controlplane.intent.problems import IntentError, Problem, Problems
from controlplane.intent.reader import Node
from controlplane.intent.yamlsrc import load_yaml

PROFILES_DIR = Path(__file__).resolve().parent.parent / "profiles"

__all__ = ["Intent", "IntentError", "Problem", "load_intent", "parse_intent_text",
           "PROFILES_DIR"]


def load_intent(path: str | Path) -> Intent:
    """Read and validate the intent file at ``path``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise IntentError([Problem("", f"cannot read: {exc.strerror or exc}")],
                          str(path)) from None
    except UnicodeDecodeError as exc:
        raise IntentError([Problem("", f"not UTF-8 text: {exc.reason}")], str(path)) from None
    return parse_intent_text(text, str(path), base_dir=path.parent)


def parse_intent_text(text: str, source: str | None = None,
                      base_dir: Path | None = None) -> Intent:
    """Validate intent YAML ``text`` (``source`` names it in messages)."""
    data, lines = load_yaml(text, source)
    if data is None:
        data = {}
    problems = Problems(lines=lines)
    if isinstance(data, dict) and "base" in data:
        data = _merge_base(data, problems, base_dir)
    lines.pop("", None)   # a root-level problem has no single line
    intent = parse_intent(Node(data, "", problems))
    if not problems.items:
        check_intent(intent, problems)
    problems.raise_if_any(source)
    return Intent(**{**intent.__dict__, "source": source})


def _merge_base(data: dict[str, Any], problems: Problems, base_dir: Path | None) -> dict:
    """``base: default`` (a shipped profile) or a path: its top-level keys are defaults."""
    base = data["base"]
    if not isinstance(base, str) or not base:
        problems.add("base", f"expected a profile name or file path, got {base!r}")
        return data
    candidates = [PROFILES_DIR / f"{base}.yaml"]
    if base_dir is not None:
        candidates.insert(0, base_dir / base)
    found = next((c for c in candidates if _is_file(c)), None)
    if found is None:
        shipped = sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))
        problems.add("base", f"no profile or file {base!r} (shipped profiles: "
                     f"{', '.join(shipped)})")
        return data
    try:
        base_data, _ = load_yaml(found.read_text(encoding="utf-8"), str(found))
    except (OSError, UnicodeDecodeError) as exc:
        problems.add("base", f"cannot read {found}: {getattr(exc, 'strerror', None) or exc}")
        return data
    except IntentError as exc:
        for p in exc.problems:
            problems.add("base", f"in {found}: {p.format()}")
        return data
    if not isinstance(base_data, dict):
        problems.add("base", f"{found} is not a mapping")
        return data
    merged = {k: v for k, v in base_data.items() if k != "base"}
    merged.update({k: v for k, v in data.items() if k != "base"})
    return merged


def _is_file(path: Path) -> bool:
    """``Path.is_file`` that treats an impossible name (too long, NUL) as absent."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False
