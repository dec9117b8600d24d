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
    return parse_intent_text(text, str(path), base_dir=path.parent, origin=path)


def parse_intent_text(text: str, source: str | None = None,
                      base_dir: Path | None = None, origin: Path | None = None) -> Intent:
    """Validate intent YAML ``text`` (``source`` names it in messages; ``origin``, the
    file it was read from, lets a ``base`` chain that comes back to it be refused)."""
    data, lines = load_yaml(text, source)
    if data is None:
        data = {}
    problems = Problems(lines=lines)
    if isinstance(data, dict) and "base" in data:
        data = _merge_bases(data, problems, base_dir, origin)
    lines.pop("", None)   # a root-level problem has no single line
    intent = parse_intent(Node(data, "", problems))
    if not problems.items:
        check_intent(intent, problems)
    problems.raise_if_any(source)
    return Intent(**{**intent.__dict__, "source": source})


def _merge_bases(data: dict[str, Any], problems: Problems, base_dir: Path | None,
                 origin: Path | None) -> dict:
    """``base: default`` (a shipped profile) or a path, whose own ``base`` is followed in
    turn (relative to that file), to any depth: each file's top-level keys replace its
    base's whole. A chain that comes back to a file it has read is refused, naming the
    files in order; any problem leaves ``data`` as it is (the problem stops the load)."""
    layers = [data]
    seen = [origin.resolve()] if origin is not None else []
    folder = base_dir
    while "base" in layers[-1]:
        within = f"in {seen[-1]}: " if len(layers) > 1 else ""
        found = _find_base(layers[-1]["base"], folder, problems, within)
        if found is None:
            return data
        if found.resolve() in seen:
            chain = " -> ".join(str(p) for p in [*seen, found.resolve()])
            problems.add("base", f"{within}a cycle of bases: {chain}")
            return data
        layer = _read_base(found, problems, within)
        if layer is None:
            return data
        seen.append(found.resolve())
        layers.append(layer)
        folder = found.parent
    merged: dict[str, Any] = {}
    for layer in reversed(layers):
        merged.update({k: v for k, v in layer.items() if k != "base"})
    return merged


def _find_base(base: object, folder: Path | None, problems: Problems,
               within: str) -> Path | None:
    """The file ``base`` names: relative to ``folder``, else a shipped profile."""
    if not isinstance(base, str) or not base:
        problems.add("base", f"{within}expected a profile name or file path, got {base!r}")
        return None
    candidates = [PROFILES_DIR / f"{base}.yaml"]
    if folder is not None:
        candidates.insert(0, folder / base)
    found = next((c for c in candidates if _is_file(c)), None)
    if found is None:
        shipped = sorted(p.stem for p in PROFILES_DIR.glob("*.yaml"))
        problems.add("base", f"{within}no profile or file {base!r} (shipped profiles: "
                     f"{', '.join(shipped)})")
    return found


def _read_base(found: Path, problems: Problems, within: str) -> dict[str, Any] | None:
    try:
        base_data, _ = load_yaml(found.read_text(encoding="utf-8"), str(found))
    except (OSError, UnicodeDecodeError) as exc:
        problems.add("base", f"{within}cannot read {found}: "
                     f"{getattr(exc, 'strerror', None) or exc}")
        return None
    except IntentError as exc:
        for p in exc.problems:
            problems.add("base", f"{within}in {found}: {p.format()}")
        return None
    if not isinstance(base_data, dict):
        problems.add("base", f"{within}{found} is not a mapping")
        return None
    return base_data


def _is_file(path: Path) -> bool:
    """``Path.is_file`` that treats an impossible name (too long, NUL) as absent."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False
