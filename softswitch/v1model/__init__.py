"""The v1model target: a BMv2 ``simple_switch``-compatible switch over softswitch.core.

Entry point: :func:`softswitch.v1model.fast_switch.load_switch` (the interpreter
:class:`~softswitch.v1model.switch.Switch`, a :class:`~softswitch.core.target.Target`
with v1model's packet path, on the compiled C where it can: ``fast_switch``,
``native_queues``).

* ``externs`` — v1model's extern table (``mark_to_drop``, ``clone``, ``hash``,
  ``digest``, checksums, ``register``/``counter``/``meter`` …), each extern's
  semantics with its Python and C emissions;
  ``build`` — :class:`V1ModelProgramBuilder`, the core builder with v1model's externs;
  ``runtime`` — the per-packet requests those externs leave for the switch.
* ``switch`` — parser → ingress → traffic manager → egress → deparser in BMv2's order
  (cloning, resubmit, recirculation, multicast, preserved field lists);
  ``queueing`` — a variant with real queues between ingress and egress.
"""
