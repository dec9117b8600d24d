/*
 * tailcc: switch-generated Fast CNP for RoCEv2.
 *
 * Decision (ingress, FastCnpDecision): a RoCEv2 data packet (IPv4, not
 * tunnelled, ECN-capable, not itself a CNP or ACK) whose class has Fast CNP
 * enabled (fast_cnp_policy) and whose egress queue's published depth
 * (queue_state.p4; this decision adds each such packet to it, so it keeps
 * growing while the queue cannot drain) is at or above the class threshold
 * triggers a CNP to its
 * *sender*.  A data packet carries only the receiver's QP, so cnp_flow maps
 * (src IP, dst IP, dst QP) to the sender's QP; the controller installs it
 * (from connection setup or the reverse direction's traffic).  No entry:
 * nothing is sent, CNP_STAT_UNRESOLVED counts it and a qp_learn_digest_t
 * digest asks the controller to resolve the flow.  Per flow at most one
 * CNP per min_interval microseconds (default intent 50 us, like a DCQCN
 * notification point), kept in cnp_last_sent.
 *
 * Sending, in two passes, so that the CNP leaves in the CNP queue on BMv2
 * too.  BMv2 gives every clone priority 0 (and refuses a clone session's
 * class_of_service), so a clone sent straight to the sender's port would
 * wait behind that port's best-effort backlog -- exactly the delay Fast CNP
 * exists to avoid.  Instead:
 *  1. ingress clones the data packet (I2E) to mirror session CNP_SESSION,
 *     which the controller points at the "recirculation port": a port
 *     number no link uses, so its queue is always empty.  The clone carries
 *     FL_FAST_CNP: sender QP, DSCP, the data's ingress port and the CNP
 *     priority;
 *  2. egress (FastCnpBuilder) rewrites the clone into a CNP and
 *     recirculates it, keeping FL_CNP_RELEASE (port, priority, release flag);
 *  3. on its second ingress pass FastCnpRelease sends it to the sender's
 *     port with standard_metadata.priority = the CNP queue, skipping every
 *     other stage; egress cuts the old payload (truncate) and nothing else.
 * Both targets run exactly this; softswitch also honours class_of_service
 * on clone sessions, but the program does not rely on it.
 *
 * Building (egress): the clone holds the original data packet's headers;
 * they are rewritten in place into a CNP: Ethernet and IPv4 addresses
 * swapped, DSCP from intent, ECN Not-ECT, UDP dst 4791, BTH opcode 0x81,
 * P_Key 0xffff, BECN 1, DestQP = sender QP, PSN 0, 16 reserved zero bytes,
 * then the ICRC.  BMv2 drops a truncate() at recirculation (the recirculated
 * packet is the whole deparsed packet), so the cut happens on the second
 * pass, where it is applied when the packet leaves.
 *
 * ICRC: CRC-32 (IEEE 802.3, the one BMv2 calls crc32) over the RoCEv2
 * pseudo-packet -- 8 bytes of 0xff standing for the InfiniBand LRH, the
 * IPv4 header with DSCP/ECN, TTL and header checksum replaced by ones, the
 * UDP header with its checksum replaced by ones, the BTH with FECN, BECN
 * and the 6 reserved bits replaced by ones, and the 16 reserved bytes.
 * Every one of those fields is known in egress, so hash() computes it; the
 * result goes on the wire least-significant byte first.
 */
#ifndef _TAILCC_FAST_CNP_
#define _TAILCC_FAST_CNP_

#include "headers.p4"
#include "queue_state.p4"

control FastCnpDecision(inout headers_t hdr,
                        inout local_metadata_t meta,
                        inout standard_metadata_t standard_metadata) {

    counter(CNP_STAT_SLOTS, CounterType.packets) fast_cnp_counter;
    register<bit<48>>(TAILCC_CNP_FLOWS) cnp_last_sent;

    action enable_fast_cnp(QDepth_t qdepth_threshold, bit<48> min_interval,
                           bit<6> cnp_dscp, bit<3> cnp_priority, bit<1> keep_ce) {
        meta.cnp_enabled = 1w1;
        meta.cnp_qdepth_threshold = qdepth_threshold;
        meta.cnp_interval = min_interval;
        meta.cnp_dscp = cnp_dscp;
        meta.cnp_priority = cnp_priority;
        meta.cnp_keep_ce = keep_ce;
    }

    table fast_cnp_policy {
        key = {
            meta.tc        : ternary @name("traffic_class");
            hdr.bth.opcode : ternary @name("bth_opcode");
        }
        actions = {
            enable_fast_cnp;
            NoAction;
        }
        default_action = NoAction();
        size = 64;
    }

    action set_sender_qp(Qpn_t sender_qp, bit<32> flow_index) {
        meta.cnp_flow_hit = 1w1;
        meta.cnp_sender_qp = sender_qp;
        meta.cnp_flow_index = flow_index;
    }

    table cnp_flow {
        key = {
            hdr.ipv4.src_addr : exact @name("ipv4_src");
            hdr.ipv4.dst_addr : exact @name("ipv4_dst");
            hdr.bth.dst_qp    : exact @name("dst_qp");
        }
        actions = {
            set_sender_qp;
            NoAction;
        }
        default_action = NoAction();
        size = TAILCC_CNP_FLOWS;
    }

    apply {
        if (hdr.bth.isValid() && hdr.ipv4.isValid() && meta.decapped == 1w0
                && hdr.ipv4.ecn != ECN_NOT_ECT
                && hdr.bth.opcode != BTH_OPCODE_CNP
                && hdr.bth.opcode != RC_ACKNOWLEDGE
                && hdr.bth.opcode != RC_ATOMIC_ACKNOWLEDGE) {
            fast_cnp_policy.apply();
        }
        if (meta.cnp_enabled == 1w1) {
            QDepth_t depth;
            bit<32> slot = ((bit<32>)standard_metadata.egress_spec << 3)
                           | (bit<32>)standard_metadata.priority;
            queue_depth.read(depth, slot);
            /* Count this packet in: egress publishes the depth only when a
             * packet leaves, so behind a PFC pause (nothing leaves) the value
             * would stay what it was when the pause began and the senders
             * filling the paused queue would get no CNP until XON.  Each
             * dequeue overwrites the estimate with the true depth. */
            if (depth != QDEPTH_MAX) {
                queue_depth.write(slot, depth + 1);
            }
            if (depth >= meta.cnp_qdepth_threshold) {
                cnp_flow.apply();
                if (meta.cnp_flow_hit == 1w0) {
                    fast_cnp_counter.count(CNP_STAT_UNRESOLVED);
                    /* Ask the controller to resolve this flow's sender QP. */
                    meta.qp_learn.src_addr = hdr.ipv4.src_addr;
                    meta.qp_learn.dst_addr = hdr.ipv4.dst_addr;
                    meta.qp_learn.dst_qp = hdr.bth.dst_qp;
                    digest(DIGEST_QP_LEARN, meta.qp_learn);
                } else {
                    bit<48> last;
                    bit<48> now = standard_metadata.ingress_global_timestamp;
                    cnp_last_sent.read(last, meta.cnp_flow_index);
                    if (last == 48w0 || now - last >= meta.cnp_interval) {
                        cnp_last_sent.write(meta.cnp_flow_index, now);
                        meta.cnp_clone = 1w1;
                        meta.cnp_port = standard_metadata.ingress_port;
                        clone_preserving_field_list(CloneType.I2E, CNP_SESSION,
                                                    FL_FAST_CNP);
                        fast_cnp_counter.count(CNP_STAT_SENT);
                        /* The sender has been told; intent decides whether
                         * the receiver should also see CE (and send its own
                         * CNP) for this packet. */
                        if (meta.cnp_keep_ce == 1w0) {
                            meta.suppress_mark = 1w1;
                        }
                    } else {
                        fast_cnp_counter.count(CNP_STAT_RATE_LIMITED);
                    }
                }
            }
        }
    }
}

/* Second pass (ingress): a CNP built in egress and recirculated leaves by
 * the sender's port in the CNP queue; every other stage is skipped. */
control FastCnpRelease(inout headers_t hdr,
                       inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.cnp_release == 1w1) {
            standard_metadata.egress_spec = meta.cnp_port;
            standard_metadata.priority = meta.cnp_priority;
            meta.bypass = 1w1;
        }
    }
}

/* Egress: the clone (first pass) becomes a CNP and is recirculated; the
 * released CNP (second pass) loses the data packet's old payload. */
control FastCnpBuilder(inout headers_t hdr,
                       inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {

    counter(1, CounterType.packets) fast_cnp_built_counter;

    action build() {
        fast_cnp_built_counter.count(32w0);

        /* Back to where the data came from. */
        MacAddr_t mac = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = mac;

        Ipv4Addr_t addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = hdr.ipv4.src_addr;
        hdr.ipv4.src_addr = addr;
        hdr.ipv4.dscp = meta.cnp_dscp;
        hdr.ipv4.ecn = ECN_NOT_ECT;
        hdr.ipv4.total_len = CNP_IPV4_TOTAL_LEN;
        hdr.ipv4.identification = 16w0;
        hdr.ipv4.flags = 3w0b010;
        hdr.ipv4.frag_offset = 13w0;
        hdr.ipv4.ttl = 8w64;
        hdr.ipv4.protocol = IP_PROTO_UDP;

        /* The source port stays the flow's, so the CNP hashes like the
         * flow's reverse direction would. */
        hdr.udp.dst_port = UDP_PORT_ROCEV2;
        hdr.udp.length = CNP_UDP_LEN;
        hdr.udp.checksum = 16w0;

        hdr.bth.opcode = BTH_OPCODE_CNP;
        hdr.bth.se = 1w0;
        hdr.bth.migreq = 1w0;
        hdr.bth.pad_count = 2w0;
        hdr.bth.tver = 4w0;
        hdr.bth.pkey = BTH_PKEY_DEFAULT;
        hdr.bth.fecn = 1w0;
        hdr.bth.becn = 1w1;
        hdr.bth.rsvd0 = 6w0;
        hdr.bth.dst_qp = meta.cnp_sender_qp;
        hdr.bth.ack_req = 1w0;
        hdr.bth.rsvd1 = 7w0;
        hdr.bth.psn = 24w0;

        hdr.aeth.setInvalid();
        hdr.reth.setInvalid();
        hdr.cnp_body.setValid();
        hdr.cnp_body.rsvd0 = 64w0;
        hdr.cnp_body.rsvd1 = 64w0;

        bit<32> crc;
        hash(crc, HashAlgorithm.crc32, 32w0,
             { 64w0xffffffffffffffff,                      /* pseudo LRH */
               hdr.ipv4.version, hdr.ipv4.ihl,
               8w0xff,                                     /* DSCP+ECN masked */
               hdr.ipv4.total_len, hdr.ipv4.identification,
               hdr.ipv4.flags, hdr.ipv4.frag_offset,
               8w0xff,                                     /* TTL masked */
               hdr.ipv4.protocol,
               16w0xffff,                                  /* checksum masked */
               hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
               hdr.udp.src_port, hdr.udp.dst_port, hdr.udp.length,
               16w0xffff,                                  /* UDP checksum masked */
               hdr.bth.opcode, hdr.bth.se, hdr.bth.migreq, hdr.bth.pad_count,
               hdr.bth.tver, hdr.bth.pkey,
               8w0xff,                                     /* FECN, BECN, rsvd masked */
               hdr.bth.dst_qp, hdr.bth.ack_req, hdr.bth.rsvd1, hdr.bth.psn,
               hdr.cnp_body.rsvd0, hdr.cnp_body.rsvd1 },
             64w4294967296);
        hdr.cnp_body.icrc = crc[7:0] ++ crc[15:8] ++ crc[23:16] ++ crc[31:24];

        meta.cnp_release = 1w1;
        recirculate_preserving_field_list(FL_CNP_RELEASE);
    }

    apply {
        if (meta.cnp_release == 1w1) {
            /* Cut the data packet's payload (and its old ICRC). */
            if (hdr.vlan.isValid()) {
                truncate(CNP_FRAME_LEN + VLAN_TAG_LEN);
            } else {
                truncate(CNP_FRAME_LEN);
            }
        } else {
            build();
        }
    }
}

#endif  /* _TAILCC_FAST_CNP_ */
