"""Fast CNP sender-QP learning from the switch's ``qp_learn_digest_t`` digests.

A congested RoCEv2 data packet carries only the *receiver's* QP, but a CNP must be
addressed to the *sender's* QP, so ``fast_cnp.cnp_flow`` maps (src IP, dst IP, dst QP)
to the sender QP. When the switch wants to send a CNP for a flow it has no entry for,
it counts the packet as unresolved and digests (src, dst, dst QP). The digest cannot
say what the sender QP is, so a correct learner may only install what it can prove:

1. **Mirror of a known flow.** RC QPs come in pairs: if the switch already maps
   (B, A, Qa) -> Qb (from the intent's ``qp_map``, or learned earlier) then A's QP
   talking to B's Qb is Qa, so (A, B, Qb) -> Qa is exact. A ``qp_map`` that lists one
   direction of each connection therefore resolves both.
2. **Both directions unresolved, unambiguously.** If (A, B, Qb) and (B, A, Qa) were
   both digested (recently) and they are the *only* unresolved QPs between A and B in
   their directions, the two QPs must be the two ends of one connection: both entries
   are installed. With several unresolved QPs between the same two hosts the pairing
   is ambiguous and nothing is installed (a CNP to the wrong QP would slow an innocent
   flow, the very thing tailcc exists to avoid); add those flows to ``qp_map``.

Everything else stays unresolved and is retried when the flow digests again (the
switch re-sends an un-acked value after the ack timeout; acked values again as soon as
a new packet of the flow is unresolved).
"""

from __future__ import annotations

import ipaddress
import queue
import time
from dataclasses import dataclass, field

import grpc
from p4.v1 import p4runtime_pb2

from controlplane.compile import names as n
from controlplane.p4rt import Client, EntityBuilder, P4InfoIndex
from controlplane.p4rt import values as v
from controlplane.p4rt.client import update
from controlplane.p4rt.errors import P4RuntimeClientError

DIGEST = "qp_learn_digest_t"
PENDING_SECONDS = 30.0     # an unresolved flow waits this long for its reverse direction

FlowKey = tuple[int, int, int]          # (src IPv4, dst IPv4, dst QP)


def flow_text(key: FlowKey) -> str:
    src, dst, qp = key
    return f"{ipaddress.IPv4Address(src)} -> {ipaddress.IPv4Address(dst)} QP {qp:#x}"


@dataclass
class QpLearner:
    """Learns one switch's ``cnp_flow`` entries over the controller's primary session."""

    switch: str
    client: Client
    index: P4InfoIndex
    flows: dict[FlowKey, int] = field(default_factory=dict)     # what the switch maps
    used_indices: set[int] = field(default_factory=set)
    pending: dict[FlowKey, float] = field(default_factory=dict)  # unresolved, first seen
    learned: int = 0

    def __post_init__(self) -> None:
        self.builder = EntityBuilder(self.index)
        self.digest_id = self.index.digest(DIGEST).preamble.id
        table = self.index.table(n.CNP_FLOW)
        self._key_ids = [self.index.match_field(table, f).id
                         for f in ("ipv4_src", "ipv4_dst", "dst_qp")]
        action = self.index.action(n.SET_SENDER_QP)
        self._sender_id = self.index.param(action, "sender_qp").id
        self._slot_id = self.index.param(action, "flow_index").id
        size = 0
        if self.index.has("registers", "cnp_last_sent"):
            size = self.index.register("cnp_last_sent").size
        self.flow_slots = size or n.CNP_FLOWS

    # --- set-up ------------------------------------------------------------------------
    def start(self) -> None:
        """Ask the switch for the digests (DigestEntry: one value per list, sent at once)
        and learn what ``cnp_flow`` already holds. Run after every (re)connect or
        pipeline load: both forget the digest configuration and the table."""
        entry = p4runtime_pb2.DigestEntry(digest_id=self.digest_id)
        entry.config.max_timeout_ns = 0
        entry.config.max_list_size = 1
        entry.config.ack_timeout_ns = 1_000_000_000
        try:
            self.client.write([update("INSERT", entry)])
        except P4RuntimeClientError as exc:
            if exc.code != grpc.StatusCode.ALREADY_EXISTS and "exist" not in str(exc):
                raise
            self.client.write([update("MODIFY", entry)])
        self.refresh()

    def refresh(self) -> None:
        """Re-read ``cnp_flow`` (reconcile may have added or removed ``qp_map`` flows)."""
        self.flows.clear()
        self.used_indices.clear()
        for e in self.client.read([self.builder.table_wildcard(n.CNP_FLOW)]):
            te = e.table_entry
            fields = {fm.field_id: v.decode(fm.exact.value) for fm in te.match}
            key = (fields.get(self._key_ids[0], 0), fields.get(self._key_ids[1], 0),
                   fields.get(self._key_ids[2], 0))
            params = {p.param_id: v.decode(p.value) for p in te.action.action.params}
            self.flows[key] = params.get(self._sender_id, 0)
            self.used_indices.add(params.get(self._slot_id, 0))

    # --- digests -----------------------------------------------------------------------
    def poll(self, seconds: float) -> list[str]:
        """Handle digests for up to ``seconds``; what was learned or left unresolved."""
        lines: list[str] = []
        deadline = time.monotonic() + seconds
        while True:
            remaining = deadline - time.monotonic()
            try:
                digest = self.client.digests.get(timeout=max(remaining, 0))
            except queue.Empty:
                return lines
            lines += self.handle(digest)

    def handle(self, digest: p4runtime_pb2.DigestList) -> list[str]:
        """Ack the list (so the switch may report the flow again) and learn from it."""
        ack = p4runtime_pb2.StreamMessageRequest()
        ack.digest_ack.digest_id, ack.digest_ack.list_id = digest.digest_id, digest.list_id
        self.client.send_stream(ack)
        if digest.digest_id != self.digest_id:
            return []
        lines = []
        for data in digest.data:
            members = [v.decode(m.bitstring) for m in data.struct.members]
            if len(members) != 3:
                continue
            lines += self.learn((members[0], members[1], members[2]))
        return lines

    def learn(self, key: FlowKey) -> list[str]:
        src, dst, qp = key
        now = time.monotonic()
        for k, seen in list(self.pending.items()):
            if now - seen > PENDING_SECONDS:
                del self.pending[k]
        if key in self.flows:
            return []                      # installed meanwhile (digest raced the write)
        mirror = [rk[2] for rk, sender in self.flows.items()
                  if rk[0] == dst and rk[1] == src and sender == qp]
        if len(mirror) == 1:
            return self._install({key: mirror[0]}, "mirror of a known flow")
        self.pending.setdefault(key, now)
        forward = [k for k in self.pending if k[0] == src and k[1] == dst]
        reverse = [k for k in self.pending if k[0] == dst and k[1] == src]
        if len(forward) == 1 and len(reverse) == 1:
            other = reverse[0]
            del self.pending[key], self.pending[other]
            return self._install({key: other[2], other: qp}, "both directions seen")
        if reverse:
            return [f"{self.switch}: qp-learn: {flow_text(key)}: ambiguous ({len(forward)} "
                    f"and {len(reverse)} unresolved QPs between these hosts); add it to "
                    "fast_cnp.qp_map"]
        return [f"{self.switch}: qp-learn: {flow_text(key)}: unresolved, waiting for the "
                "reverse direction"]

    def _install(self, flows: dict[FlowKey, int], why: str) -> list[str]:
        updates, lines = [], []
        for key, sender in flows.items():
            slot = next((i for i in range(self.flow_slots) if i not in self.used_indices),
                        None)
            if slot is None:
                lines.append(f"{self.switch}: qp-learn: {flow_text(key)}: no free flow slot")
                continue
            src, dst, qp = key
            entry = self.builder.table_entry(
                n.CNP_FLOW, match={"ipv4_src": str(ipaddress.IPv4Address(src)),
                                   "ipv4_dst": str(ipaddress.IPv4Address(dst)),
                                   "dst_qp": qp},
                action=n.SET_SENDER_QP, params={"sender_qp": sender, "flow_index": slot})
            updates.append(update("INSERT", entry))
            self.used_indices.add(slot)
            self.flows[key] = sender
            lines.append(f"{self.switch}: qp-learn: {flow_text(key)} -> sender QP "
                         f"{sender:#x} ({why})")
        try:
            self.client.write(updates)
        except P4RuntimeClientError as exc:
            if exc.code != grpc.StatusCode.ALREADY_EXISTS:
                raise
        self.learned += len(updates)
        return lines
