"""Seeded fuzzing of intent files: whatever the YAML, validation ends in a list of
problems (``IntentError``) or an intent — never another exception (``tailcc`` would
exit 2), never a hang. Mutants are made from the shipped intents: values replaced by
values of other types and sizes, keys dropped or renamed, lists emptied or repeated,
aliases and nesting added, the text cut short.
"""

from __future__ import annotations

import copy
import os
import random
import time
from pathlib import Path

import pytest
import yaml

from controlplane.intent import IntentError, parse_intent_text, yamlsrc

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "controlplane" / "profiles" / "default.yaml",
           ROOT / "controlplane" / "examples" / "two_leaf.yaml",
           ROOT / "topologies" / "leaf_spine_intent.yaml",
           ROOT / "topologies" / "single_intent.yaml"]
ODD_VALUES = [None, True, False, 0, -1, 1.5, 2**70, -(2**70), "", "x" * 300, "1",
              "0x1f", "10.0.0.0/33", "::/129", "00:zz:00:00:00:01", [], {}, [[[]]],
              {"a": {"b": None}}, [1, "two", None], "ä€\U0001F600", "\x00", "*", "&x"]
MUTANTS_PER_SOURCE = int(os.environ.get("INTENT_FUZZ_MUTANTS", "400"))   # more: deeper run


def _paths(data: object, prefix: tuple = ()) -> list[tuple]:
    out = [prefix]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _set(data: object, path: tuple, value: object) -> object:
    if not path:
        return value
    parent = data
    for step in path[:-1]:
        parent = parent[step]  # type: ignore[index]
    parent[path[-1]] = value  # type: ignore[index]
    return data


def _mutate(data: object, rng: random.Random) -> object:
    paths = _paths(data)
    for _ in range(rng.randint(1, 4)):
        path = rng.choice(paths)
        if not path:
            continue
        try:
            parent = data
            for step in path[:-1]:
                parent = parent[step]  # type: ignore[index]
            kind = rng.random()
            if kind < 0.5:
                _set(data, path, copy.deepcopy(rng.choice(ODD_VALUES)))
            elif kind < 0.65 and isinstance(parent, dict):
                del parent[path[-1]]
            elif kind < 0.8 and isinstance(parent, dict):
                parent[rng.choice(["unknown", 7, True, "name"])] = parent.pop(path[-1])
            elif isinstance(parent, list):
                parent.append(copy.deepcopy(parent[path[-1]]))  # type: ignore[index]
            else:
                item = parent[path[-1]]  # type: ignore[index]
                _set(data, path, [copy.deepcopy(item) for _ in range(rng.randint(0, 3))])
        except (KeyError, IndexError, TypeError):
            continue
        paths = _paths(data)
    return data


def _validate(text: str) -> None:
    try:
        parse_intent_text(text, "fuzz.yaml", base_dir=ROOT / "controlplane" / "profiles")
    except IntentError:
        pass


@pytest.mark.parametrize("source", SOURCES, ids=[p.stem for p in SOURCES])
def test_mutated_intents_give_problems_not_internal_errors(source: Path):
    rng = random.Random(f"tailcc-intent-fuzz-{source.name}")
    original = source.read_text()
    base = yaml.safe_load(original)
    for n in range(MUTANTS_PER_SOURCE):
        if n % 10 == 9:
            text = original[:rng.randint(0, len(original))]        # cut short
        else:
            text = yaml.safe_dump(_mutate(yaml.safe_load(yaml.safe_dump(base)), rng),
                                  allow_unicode=True)
        start = time.monotonic()
        try:
            _validate(text)
        except Exception as exc:   # noqa: BLE001 - the point of the test
            pytest.fail(f"mutant {n} of {source.name}: {type(exc).__name__}: {exc}\n"
                        f"{text[:2000]}")
        assert time.monotonic() - start < 10, f"mutant {n} of {source.name} took long"


@pytest.mark.parametrize("text,limit", [
    ("a0: &a0 [x, x, x, x, x, x, x, x, x]\n"
     + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 9))
     + "switches: *a8\n", "more than"),
    ("switches: &s [*s]\n", "recursive alias"),
    ("switches: " + "[" * 5000 + "]" * 5000 + "\n", "nest"),
    ("classes:\n  - name: " + "a" * 100_000 + "\n", "character limit"),
    ("classes:\n  - {name: " + "a" * 100 + ", id: 3, queue: 1}\n", "64-character"),
])
def test_limits_are_named(text: str, limit: str):
    """Alias bombs, recursive aliases, deep nesting and huge values are refused fast,
    naming the limit."""
    start = time.monotonic()
    with pytest.raises(IntentError) as info:
        parse_intent_text(text, "limit.yaml")
    assert limit in str(info.value)
    assert time.monotonic() - start < 20


def test_oversized_file_is_refused_before_parsing():
    text = "# " + "x" * (yamlsrc.MAX_TEXT_BYTES + 1) + "\n"
    with pytest.raises(IntentError, match="byte limit"):
        parse_intent_text(text, "big.yaml")


@pytest.mark.parametrize("key,message", [
    ("[1]", "cannot be a key"),
    ("{a: 1}", "cannot be a key"),
    ("true", "is not a queue"),
    ("1.5", "must be strings"),
    ("null", "must be strings"),
    ("8", "is not a queue"),
    ("'x'", "is not a queue"),
])
def test_queue_keys_that_are_not_queue_numbers(key: str, message: str):
    """A scheduler's queue key that is a list, mapping, boolean, float or null once ended
    in a TypeError (exit 2): each is a located problem now."""
    text = f"schedulers:\n  - name: s\n    queues:\n      {key}: {{mode: strict}}\n"
    with pytest.raises(IntentError) as info:
        parse_intent_text(text, "q.yaml")
    assert "q.yaml:4: schedulers[0].queues" in str(info.value)
    assert message in str(info.value)
