"""YAML loading that remembers where every value came from.

PyYAML's ``safe_load`` forgets line numbers and silently keeps the last of two
duplicate keys; an operator's typo there would vanish. Walking the composed node
tree instead gives each path (``classes[2].match``) its line and reports duplicates.

An intent is operator input, so its size is bounded before anything is built: the
text (``MAX_TEXT_BYTES``), nesting (``MAX_DEPTH``), the values it expands to once
aliases are followed (``MAX_VALUES``: a few lines of nested aliases can otherwise
expand to billions, the "billion laughs"), a string (``MAX_STRING``), and an alias
may not refer to itself. Going over a limit is a problem naming the limit and where.
"""

from __future__ import annotations

from typing import Any

import yaml

from controlplane.intent.problems import IntentError, Problem, child_path

# libyaml's parser when PyYAML has it (the C parser, for large intents).
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

MAX_TEXT_BYTES = 16 * 1024 * 1024
MAX_DEPTH = 64
MAX_VALUES = 1_000_000
MAX_STRING = 4096


class _LimitExceeded(Exception):
    """One limit is over: stop walking (the tree may be huge), report it once."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem


class _Budget:
    """What one conversion may still build, and the aliases being expanded."""

    def __init__(self) -> None:
        self.values = 0
        self.active: set[int] = set()


def load_yaml(text: str, source: str | None = None) -> tuple[Any, dict[str, int]]:
    """Parse YAML ``text``: (plain Python data, path -> 1-based line)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise IntentError([Problem("", f"the file is {size} bytes: larger than the "
                                       f"{MAX_TEXT_BYTES}-byte limit for an intent")], source)
    try:
        node = yaml.compose(text, Loader=_LOADER)
    except RecursionError:
        raise IntentError([Problem("", f"nesting too deep to read (the limit is {MAX_DEPTH} "
                                       "levels)")], source) from None
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
    try:
        data = _convert(node, "", lines, problems, yaml.SafeLoader(""), _Budget(), 0)
    except _LimitExceeded as over:
        raise IntentError([over.problem], source) from None
    if problems:
        raise IntentError(problems, source)
    return data, lines


def _convert(node: yaml.Node, path: str, lines: dict[str, int], problems: list[Problem],
             loader: yaml.SafeLoader, budget: _Budget, depth: int) -> Any:
    line = node.start_mark.line + 1
    lines[path] = line
    budget.values += 1
    if budget.values > MAX_VALUES:
        raise _LimitExceeded(Problem(path, f"the intent expands to more than {MAX_VALUES} "
                                           "values (aliases included): too large", line))
    if depth > MAX_DEPTH:
        raise _LimitExceeded(Problem(path, f"nested deeper than {MAX_DEPTH} levels", line))
    if not isinstance(node, yaml.ScalarNode):
        if id(node) in budget.active:
            raise _LimitExceeded(Problem(path, "an alias refers to a value that contains "
                                               "it (a recursive alias)", line))
        budget.active.add(id(node))
        try:
            return _convert_collection(node, path, lines, problems, loader, budget, depth)
        finally:
            budget.active.discard(id(node))
    return _scalar(node, path, problems, loader)


def _convert_collection(node: yaml.Node, path: str, lines: dict[str, int],
                        problems: list[Problem], loader: yaml.SafeLoader, budget: _Budget,
                        depth: int) -> Any:
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
            out[key] = _convert(value_node, child_path(path, str(key)), lines, problems,
                                loader, budget, depth + 1)
        return out
    assert isinstance(node, yaml.SequenceNode)
    return [_convert(item, child_path(path, i), lines, problems, loader, budget, depth + 1)
            for i, item in enumerate(node.value)]


def _scalar(node: yaml.Node, path: str, problems: list[Problem],
            loader: yaml.SafeLoader) -> Any:
    if not isinstance(node, yaml.ScalarNode):
        problems.append(Problem(path, "a mapping or list cannot be a key",
                                node.start_mark.line + 1))
        return None
    if len(node.value) > MAX_STRING:
        problems.append(Problem(path, f"a value of {len(node.value)} characters: longer "
                                      f"than the {MAX_STRING}-character limit",
                                node.start_mark.line + 1))
        return None
    try:
        return loader.construct_object(node, deep=True)
    except yaml.YAMLError as exc:
        problems.append(Problem(path, f"bad value: {exc}", node.start_mark.line + 1))
        return None
