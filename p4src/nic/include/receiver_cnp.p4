/*
 * tailcc NIC, receive side: the receiver's CNP (DCQCN notification point), so the
 * lab's "receiver CNP" baseline runs on the NIC.
 *
 * A CE-marked RoCEv2 data packet (not a CNP, not an ACK) for a known local QP goes to
 * the host as usual; at most once per QP per CNP_MIN_INTERVAL_NS (50 us) a copy is
 * also mirrored (CNP_MIRROR_SLOT, CNP_MIRROR_SESSION) to the NIC's loopback port. The
 * copy re-enters with istd.loopedback set; the parser skipped its payload, and
 * CnpBuilder rewrites its headers into a CNP for the sender: addresses swapped,
 * UDP source port kept (it names the EV that met congestion), BTH opcode 0x81,
 * BECN set, destination QP the peer's, 16 reserved bytes and the ICRC (CRC-32 over
 * the RoCEv2 pseudo-packet, as the switch's Fast CNP computes it), in the urgent
 * queue.
 */
#ifndef _TAILCC_NIC_RECEIVER_CNP_
#define _TAILCC_NIC_RECEIVER_CNP_

#include "headers.p4"

control ReceiverCnp(in headers_t hdr, in nic_metadata_t meta, in bit<64> now_ns) {
    Register<bit<64>, QpSlot_t>(NIC_QP_SLOTS) last_cnp;
    Register<bit<1>, QpSlot_t>(NIC_QP_SLOTS) sent_any;
    Counter<bit<64>, bit<1>>(2, PNA_CounterType_t.PACKETS) cnp_decisions;   /* 0 sent, 1 held */

    apply {
        if (meta.has_qp != 1 || !hdr.ipv4.isValid() || hdr.ipv4.ecn != ECN_CE) {
            return;
        }
        if (hdr.bth.opcode == BTH_OPCODE_CNP || hdr.bth.opcode == RC_ACKNOWLEDGE) {
            return;
        }
        if (sent_any.read(meta.qp_slot) == 1 &&
                now_ns - last_cnp.read(meta.qp_slot) < CNP_MIN_INTERVAL_NS) {
            cnp_decisions.count(1);
            return;
        }
        last_cnp.write(meta.qp_slot, now_ns);
        sent_any.write(meta.qp_slot, 1);
        cnp_decisions.count(0);
        mirror_packet((MirrorSlotId_t)CNP_MIRROR_SLOT, (MirrorSessionId_t)CNP_MIRROR_SESSION);
    }
}

control CnpBuilder(inout headers_t hdr, in nic_metadata_t meta) {
    Hash<bit<32>>(PNA_HashAlgorithm_t.TARGET_DEFAULT) icrc_hash;

    apply {
        MacAddr_t mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;

        Ipv4Addr_t addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = addr;
        hdr.ipv4.ecn = ECN_NOT_ECT;
        hdr.ipv4.total_len = CNP_IPV4_TOTAL_LEN;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0b010;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;

        hdr.udp.dst_port = UDP_PORT_ROCEV2;
        hdr.udp.length = CNP_UDP_LEN;
        hdr.udp.checksum = 0;

        hdr.bth.opcode = BTH_OPCODE_CNP;
        hdr.bth.se = 0;
        hdr.bth.migreq = 0;
        hdr.bth.pad_count = 0;
        hdr.bth.tver = 0;
        hdr.bth.pkey = BTH_PKEY_DEFAULT;
        hdr.bth.fecn = 0;
        hdr.bth.becn = 1;
        hdr.bth.rsvd0 = 0;
        hdr.bth.dst_qp = meta.peer_qp;
        hdr.bth.ack_req = 0;
        hdr.bth.rsvd1 = 0;
        hdr.bth.psn = 0;

        hdr.cnp_body.setValid();
        hdr.cnp_body.rsvd0 = 0;
        hdr.cnp_body.rsvd1 = 0;
        bit<32> crc = icrc_hash.get_hash(
            { 64w0xffffffffffffffff,
              hdr.ipv4.version, hdr.ipv4.ihl, 8w0xff,
              hdr.ipv4.total_len, hdr.ipv4.identification,
              hdr.ipv4.flags, hdr.ipv4.frag_offset, 8w0xff, hdr.ipv4.protocol, 16w0xffff,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
              hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length, 16w0xffff,
              hdr.bth.opcode, hdr.bth.se, hdr.bth.migreq, hdr.bth.pad_count,
              hdr.bth.tver, hdr.bth.pkey, 8w0xff,
              hdr.bth.dst_qp, hdr.bth.ack_req, hdr.bth.rsvd1, hdr.bth.psn,
              hdr.cnp_body.rsvd0, hdr.cnp_body.rsvd1 });
        hdr.cnp_body.icrc = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];
    }
}

#endif
