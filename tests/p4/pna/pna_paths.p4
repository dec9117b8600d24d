/*
 * PNA sample: packet paths and the remaining externs. Packet tests:
 * tests/test_pna_samples.py.
 *
 * - UDP port 7: recirculate until pass 2, decrementing the TTL each pass, then forward
 *   with the pass number in the IPv4 identification field;
 * - UDP port 9: mirror_packet(slot 0, session 5) as well as forwarding;
 * - `by_selector` (ActionSelector over the UDP source port) and `by_profile`
 *   (ActionProfile) choose the output port;
 * - Checksum<bit<16>> (TARGET_DEFAULT, CRC32 in softswitch) of the addresses goes into
 *   the UDP checksum field; Random<bit<6>>(0, 3) draws the DSCP.
 */
#include <core.p4>
#include <pna.p4>
#include "common_headers.p4"

struct meta_t {
}

parser MainParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                      in pna_main_parser_input_metadata_t istd) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ip);
        pkt.extract(hdr.udp);
        transition accept;
    }
}

control PreControlImpl(in headers_t hdr, inout meta_t meta,
                       in pna_pre_input_metadata_t istd,
                       inout pna_pre_output_metadata_t ostd) {
    apply { }
}

control MainControlImpl(inout headers_t hdr, inout meta_t meta,
                        in pna_main_input_metadata_t istd,
                        inout pna_main_output_metadata_t ostd) {
    ActionProfile(16) profile;
    ActionSelector(PNA_HashAlgorithm_t.TARGET_DEFAULT, 16, 16) port_selector;
    Checksum<bit<16>>(PNA_HashAlgorithm_t.TARGET_DEFAULT) tag;
    Random<bit<6>>(6w0, 6w3) dscp_draw;

    action set_port(PortId_t port) {
        send_to_port(port);
    }
    action set_port_sel(PortId_t port) {
        send_to_port(port);
    }
    table by_profile {
        key = {
            hdr.ip.dst : exact;
        }
        actions = {
            set_port;
            NoAction;
        }
        pna_implementation = profile;
        default_action = NoAction();
    }
    table by_selector {
        key = {
            hdr.ip.src  : exact;
            hdr.udp.sport : selector;
        }
        actions = {
            set_port_sel;
            NoAction;
        }
        pna_implementation = port_selector;
        default_action = NoAction();
    }
    apply {
        bit<8> pass = (bit<8>)(PassNumberUint_t)istd.pass;
        if (hdr.udp.dport == 7 && pass < 2) {
            hdr.ip.ttl = hdr.ip.ttl - 1;
            recirculate();
            return;
        }
        hdr.ip.id = (bit<16>)pass;
        if (!by_selector.apply().hit) {
            by_profile.apply();
        }
        if (hdr.udp.dport == 9) {
            mirror_packet((MirrorSlotId_t)0, (MirrorSessionId_t)5);
        }
        tag.clear();
        tag.update({hdr.ip.src, hdr.ip.dst});
        hdr.udp.checksum = tag.get();
        hdr.ip.dscp = dscp_draw.read();
    }
}

control MainDeparserImpl(packet_out pkt, in headers_t hdr, in meta_t meta,
                         in pna_main_output_metadata_t ostd) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.udp);
    }
}

PNA_NIC(MainParserImpl(), PreControlImpl(), MainControlImpl(), MainDeparserImpl()) main;
