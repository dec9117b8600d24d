"""The v1model target: a BMv2 ``simple_switch``-compatible switch over softswitch.core.

Entry point: :class:`softswitch.v1model.switch.Switch` (``from_file``/``from_program``),
a :class:`~softswitch.core.target.Target` with v1model's packet path.

* ``lower_externs`` — v1model's extern calls (``mark_to_drop``, ``clone``, ``hash``,
  ``digest``, checksums, ``register``/``counter``/``meter`` …);
  ``build`` — :class:`V1ModelProgramBuilder`, the core builder with v1model's externs;
  ``runtime`` — the per-packet requests those externs leave for the switch.
* ``switch`` — parser → ingress → traffic manager → egress → deparser in BMv2's order
  (cloning, resubmit, recirculation, multicast, preserved field lists);
  ``queueing`` — a variant with real queues between ingress and egress.
"""
