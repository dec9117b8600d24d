/*
 * tailcc: queue state shared between egress and ingress.
 *
 * Egress is the only place that sees queue depths; ingress is the earliest
 * place to react to them (Fast CNP).  Egress publishes the depth of each
 * (port, queue) here on every dequeue and ingress reads it for the queue a
 * packet is about to join.  The array is a top-level instance because two
 * controls use it (p4c's BMv2 back end supports this).  Fast CNP's decision
 * in ingress adds each packet of a Fast CNP class it sends to the queue, and
 * every dequeue overwrites the value with the true depth: so the depth stays
 * current while the queue cannot drain (a PFC pause from downstream), where
 * a value written only at dequeue would stay as old as the pause.
 *
 * Index: port * 8 + queue (9-bit port, 3-bit queue).  Values: packets, as
 * BMv2 reports enq_qdepth/deq_qdepth.  Readable over P4Runtime
 * (RegisterEntry) as queue_depth and queue_depth_watermark.
 */
#ifndef _TAILCC_QUEUE_STATE_
#define _TAILCC_QUEUE_STATE_

#include "defines.p4"

register<QDepth_t>(PORT_QUEUE_SLOTS) queue_depth;
/* Highest enq_qdepth seen since the controller last cleared it. */
register<QDepth_t>(PORT_QUEUE_SLOTS) queue_depth_watermark;

#endif  /* _TAILCC_QUEUE_STATE_ */
