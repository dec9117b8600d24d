"""The tail-latency lab: inference traffic through tailcc's P4 pipeline on softswitch.

A discrete-event simulation on a virtual microsecond clock: RoCEv2 senders with DCQCN
reaction points, receivers with DCQCN notification points, links with a rate and a
propagation delay, and a switch whose every packet goes through the real P4 program
(``p4src/tailcc.p4``) on softswitch and softswitch's traffic manager. The same workload
runs under a training-era configuration and under tailcc's, and the lab prints each
traffic class's message-completion P50/P99/P999 and draws them, beside the floor no
scheduler can beat on that traffic (``bounds``) and a central SRPT schedule of it
(``ideal``, the ``ideal-srpt`` scheme).
"""
