/*
 * tailcc: CPU port I/O (P4Runtime PacketOut / PacketIn).
 *
 * PacketOut: the controller names the egress port in packet_out; the packet
 * skips every other ingress stage (the controller already decided).
 * PacketIn: whatever reaches CPU_PORT (punts from routing or the parser
 * error policy) gets a packet_in header carrying its ingress port.
 */
#ifndef _TAILCC_PACKETIO_
#define _TAILCC_PACKETIO_

#include "headers.p4"

control PacketIoIngress(inout headers_t hdr,
                        inout local_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            meta.bypass = 1w1;
        }
    }
}

control PacketIoEgress(inout headers_t hdr,
                       inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 7w0;
        }
    }
}

#endif  /* _TAILCC_PACKETIO_ */
