/*
 * tailcc: telemetry (egress).
 *
 * QueueTelemetry publishes every dequeue's depth into queue_depth (read by
 * Fast CNP in ingress and by the controller over P4Runtime) and keeps a
 * watermark of enq_qdepth per (port, queue).
 *
 * IntHop appends an INT-MD style hop record to telemetry probes (UDP to
 * UDP_PORT_TAILCC_INT carrying an int_shim): switch id, ingress and egress
 * port, queue, enq_qdepth and deq_timedelta (microseconds).  Records are
 * pushed to the front, so the newest hop comes first; a probe stops
 * collecting at its own max_hops or at MAX_INT_HOPS.  IPv4 only, so the UDP
 * checksum can be zeroed when the packet grows.
 */
#ifndef _TAILCC_TELEMETRY_
#define _TAILCC_TELEMETRY_

#include "headers.p4"
#include "queue_state.p4"

control QueueTelemetry(inout headers_t hdr,
                       inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        bit<32> slot = ((bit<32>)standard_metadata.egress_port << 3)
                       | (bit<32>)standard_metadata.priority;
        queue_depth.write(slot, standard_metadata.deq_qdepth);
        QDepth_t high;
        queue_depth_watermark.read(high, slot);
        if (standard_metadata.enq_qdepth > high) {
            queue_depth_watermark.write(slot, standard_metadata.enq_qdepth);
        }
    }
}

control IntHop(inout headers_t hdr,
               inout local_metadata_t meta,
               inout standard_metadata_t standard_metadata) {

    bit<32> switch_id = 32w0;

    action set_switch_id(bit<32> id) {
        switch_id = id;
    }

    /* Keyless: the controller sets the switch id as the default action. */
    table int_config {
        actions = {
            set_switch_id;
        }
        default_action = set_switch_id(32w0);
    }

    apply {
        if (hdr.int_shim.isValid() && hdr.ipv4.isValid() && hdr.udp.isValid()
                && hdr.int_shim.hop_count < hdr.int_shim.max_hops
                && hdr.int_shim.hop_count < MAX_INT_HOPS) {
            int_config.apply();
            hdr.int_hops.push_front(1);
            hdr.int_hops[0].setValid();
            hdr.int_hops[0].switch_id = switch_id;
            hdr.int_hops[0]._pad0 = 7w0;
            hdr.int_hops[0].ingress_port = standard_metadata.ingress_port;
            hdr.int_hops[0]._pad1 = 7w0;
            hdr.int_hops[0].egress_port = standard_metadata.egress_port;
            hdr.int_hops[0]._pad2 = 5w0;
            hdr.int_hops[0].queue_id = standard_metadata.priority;
            hdr.int_hops[0]._pad3 = 5w0;
            hdr.int_hops[0].enq_qdepth = standard_metadata.enq_qdepth;
            hdr.int_hops[0].deq_timedelta = standard_metadata.deq_timedelta;
            hdr.int_shim.hop_count = hdr.int_shim.hop_count + 8w1;
            hdr.ipv4.total_len = hdr.ipv4.total_len + INT_HOP_BYTES;
            hdr.udp.length = hdr.udp.length + INT_HOP_BYTES;
            hdr.udp.checksum = 16w0;
        }
    }
}

#endif  /* _TAILCC_TELEMETRY_ */
