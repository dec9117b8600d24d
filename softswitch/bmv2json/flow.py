"""A pipeline's graph of tables and conditionals as a structured ``apply`` block.

Nodes are tables (``next_tables`` per action, or ``__HIT__``/``__MISS__``) and
conditionals (``true_next``/``false_next``). Each branching node becomes an ``if`` or a
``switch`` on ``action_run``; each branch is written up to the first node every branch
reaches (the earliest common successor in the graph's topological order), and the walk
goes on from there. A table p4c made around one fixed call is written as that call.
"""

from __future__ import annotations

from softswitch.bmv2json import tables
from softswitch.bmv2json.actions import action_name, call
from softswitch.bmv2json.context import BOOL, Context, ident
from softswitch.bmv2json.exprs import Translator, convert
from softswitch.bmv2json.reader import JsonNode

END = ""

class Flow:
    """The apply block of one pipeline, structured from its graph of nodes."""

    def __init__(self, ctx: Context, pipe: JsonNode) -> None:
        self.ctx = ctx
        self.pipe = pipe
        self.tables = {t.get("name", str): t for t in pipe.items("tables")}
        self.conds = {c.get("name", str): c for c in pipe.items("conditionals")}
        self.order: dict[str, int] = {}
        self.reach: dict[str, frozenset[str]] = {}
        init = pipe.get("init_table", str, default=None) or END
        self._number(init)

    def succ(self, name: str) -> list[str]:
        if name == END:
            return []
        if name in self.tables:
            return [n or END for n in self.tables[name].get("next_tables", dict).values()]
        if name in self.conds:
            c = self.conds[name]
            return [c.get("true_next", object, default=None) or END,
                    c.get("false_next", object, default=None) or END]
        raise self.pipe.error(f"next node {name!r} is neither a table nor a conditional")

    def _number(self, init: str) -> None:
        post: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, int]] = [(init, 0)]
        while stack:
            name, i = stack.pop()
            if i == 0:
                if name in seen:
                    continue
                seen.add(name)
            nxt = self.succ(name)
            if i < len(nxt):
                stack.append((name, i + 1))
                stack.append((nxt[i], 0))
            else:
                post.append(name)
                self.reach[name] = frozenset({name}).union(*(self.reach[n] for n in nxt))
        for rank, name in enumerate(reversed(post)):
            self.order[name] = rank

    def join(self, branches: list[str]) -> str:
        common = frozenset.intersection(*(self.reach[b] for b in branches))
        return min(common, key=lambda n: self.order[n])

    def emit(self, name: str, stop: str) -> list[str]:
        out: list[str] = []
        while name != stop and name != END:
            if name in self.tables:
                lines, name = self._table(name)
            else:
                lines, name = self._cond(name)
            out += lines
        return out

    def _block(self, head: str, start: str, stop: str) -> list[str]:
        return [head, *("    " + s for s in self.emit(start, stop)), "}"]

    def _table(self, name: str) -> tuple[list[str], str]:
        t = self.tables[name]
        nexts = {k: v or END for k, v in t.get("next_tables", dict).items()}
        targets = list(dict.fromkeys(nexts.values()))
        if tables.inlined(t):
            entry = t.child("default_entry")
            written = call(self.ctx, entry, entry.get("action_id", int),
                           entry.get("action_data", list))
            return [f"{written};"], targets[0] if targets else END
        apply = f"{ident(name, 't_')}.apply()"
        if len(targets) <= 1:
            return [f"{apply};"], targets[0] if targets else END
        stop = self.join(targets)
        if set(nexts) == {"__HIT__", "__MISS__"}:
            lines = self._block(f"if ({apply}.hit) {{", nexts["__HIT__"], stop)
            lines[-1:] = self._block("} else {", nexts["__MISS__"], stop)
            return lines, stop
        ids = {self.ctx.actions[a].get("name", str): a for a in t.get("action_ids", list)}
        lines = [f"switch ({apply}.action_run) {{"]
        for target in targets:
            labels = [action_name(self.ctx, ids[a]) for a, n in nexts.items() if n == target]
            lines += [f"    {lab}:" for lab in labels[:-1]]
            lines += ["    " + s for s in self._block(f"{labels[-1]}: {{", target, stop)]
        return lines + ["}"], stop

    def _cond(self, name: str) -> tuple[list[str], str]:
        c = self.conds[name]
        cond = convert(Translator(self.ctx, c)(c.get("expression", dict)), BOOL)
        t, f = self.succ(name)
        stop = self.join([t, f])
        lines = self._block(f"if ({cond}) {{", t, stop)
        if f != stop:
            lines[-1:] = self._block("} else {", f, stop)
        return lines, stop
