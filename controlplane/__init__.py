"""tailcc's controller: operator intent (YAML) -> P4Runtime writes on every switch.

Operators describe traffic classes, DSCP maps, queues, ECN thresholds, Fast CNP,
micro-segmentation and routes; :mod:`controlplane.intent` validates that description,
:mod:`controlplane.compile` turns it into entities named by the pipeline's P4Info,
:mod:`controlplane.reconcile` writes only the difference to each switch through
:mod:`controlplane.p4rt`, and :mod:`controlplane.cli` is the ``tailcc`` command.
"""
