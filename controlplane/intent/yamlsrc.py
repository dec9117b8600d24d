"""YAML loading that remembers where every value came from.

PyYAML's ``safe_load`` forgets line numbers and silently keeps the last of two
duplicate keys; an operator's typo there would vanish. Walking the composed node
tree instead gives each path (``classes[2].match``) its line and reports duplicates.
"""

from __future__ import annotations

from typing import Any

import yaml

from controlplane.intent.problems import IntentError, Problem, child_path

# libyaml's parser when PyYAML has it (several times faster on large intents).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str, source: str | None = None) -> tuple[Any, dict[str, int]]:
    """Parse YAML ``text``: (plain Python data, path -> 1-based line)."""
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        reason = exc.problem or exc.context or "malformed YAML"
        raise IntentError([Problem("", f"YAML syntax error: {reason}", line)], source) from None
    except yaml.YAMLError as exc:
        raise IntentError([Problem("", f"YAML error: {exc}")], source) from None
    if node is None:
        return None, {}
    lines: dict[str, int] = {}
    problems: list[Problem] = []
    data = _convert(node, "", lines, problems, yaml.SafeLoader(""))
    if problems:
        raise IntentError(problems, source)
    return data, lines


def _convert(node: yaml.Node, path: str, lines: dict[str, int], problems: list[Problem],
             loader: yaml.SafeLoader) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node, path, problems, loader)
            if not isinstance(key, str | int):
                problems.append(Problem(path, f"mapping keys must be strings, not {key!r}",
                                        key_node.start_mark.line + 1))
                continue
            if key in out:
                problems.append(Problem(child_path(path, str(key)), "duplicate key",
                                        key_node.start_mark.line + 1))
                continue
            out[key] = _convert(value_node, child_path(path, str(key)), lines, problems, loader)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(item, child_path(path, i), lines, problems, loader)
                for i, item in enumerate(node.value)]
    return _scalar(node, path, problems, loader)


def _scalar(node: yaml.Node, path: str, problems: list[Problem],
            loader: yaml.SafeLoader) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        problems.append(Problem(path, "a mapping or list cannot be a key",
                                node.start_mark.line + 1))
        return None
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        problems.append(Problem(path, f"bad value: {exc}", node.start_mark.line + 1))
        return None
