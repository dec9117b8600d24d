"""softswitch's traffic manager: egress queues, scheduling, PFC (see :mod:`.manager`)."""

from softswitch.tm.manager import TrafficManager
from softswitch.tm.pfc import PfcEvent, PfcThresholds
from softswitch.tm.scheduler import DEFAULT_QUEUE_CAPACITY, Dequeued, QueueConfig

__all__ = ["DEFAULT_QUEUE_CAPACITY", "Dequeued", "PfcEvent", "PfcThresholds", "QueueConfig",
           "TrafficManager"]
