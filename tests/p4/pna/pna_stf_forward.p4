/*
 * PNA sample for `softswitch stf`: frames from port 1 leave by port 2 unchanged, from
 * port 2 by port 1 with the EtherType rewritten to 0x88b5; EtherType 0x0000 is dropped.
 * (STF gives no port roles, so every port faces the network: direction NET_TO_HOST.)
 */
#include <core.p4>
#include <pna.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t eth;
}

struct meta_t {
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta,
         in pna_main_parser_input_metadata_t istd) {
    state start {
        pkt.extract(hdr.eth);
        transition accept;
    }
}

control Pre(in headers_t hdr, inout meta_t meta, in pna_pre_input_metadata_t istd,
            inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control Main(inout headers_t hdr, inout meta_t meta, in pna_main_input_metadata_t istd,
             inout pna_main_output_metadata_t ostd) {
    apply {
        if (hdr.eth.ether_type == 0) {
            drop_packet();
        } else if ((PortIdUint_t)istd.input_port == 1) {
            send_to_port((PortId_t)2);
        } else {
            hdr.eth.ether_type = 0x88b5;
            send_to_port((PortId_t)1);
        }
    }
}

control D(packet_out pkt, in headers_t hdr, in meta_t meta, in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.eth);
    }
}

PNA_NIC(P(), Pre(), Main(), D()) main;
