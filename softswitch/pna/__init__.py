"""The PNA target: a Portable NIC Architecture NIC in Python (p4c's generic ``pna.p4``).

Entry point: :class:`softswitch.pna.nic.Nic` (``from_file``/``from_program``), with
host-side and network-side ports. Modules: ``runtime`` (per-pass forwarding state,
add-on-miss, expire timers, direct resources, checksum state), ``externs`` (PNA's
extern table), ``build`` (PNA extern objects on the shared block lowering),
``nic`` (the pipeline, a :class:`~softswitch.core.target.Target`), ``tm`` (per-class
transmit queues). The block lowering, tables, counters, registers, meters and the
control-plane side come from :mod:`softswitch.core`, shared with the v1model target;
README.md lists the semantics and what is refused.
"""
