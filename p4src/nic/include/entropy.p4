/*
 * tailcc NIC, transmit side: the entropy value (EV) of a RoCEv2 QP, UEC style.
 *
 * The UDP source port carries the EV: ev_base + i, i cycling over the QP's ev_count
 * values (ev_base a multiple of 16, at most 16 values), so the network's ECMP sprays
 * the QP's packets over up to 16 paths. A CNP arriving for the QP (receive side,
 * `cnp_rx`) names the EV that met congestion in its UDP source port (switch Fast CNPs
 * and receiver CNPs keep the data's source port): that EV is marked "seen with CE"
 * for EV_CE_HOLD_NS, and a marked EV is skipped (two tries, then the round robin goes
 * on), moving the QP away from the congested path.
 */
#ifndef _TAILCC_NIC_ENTROPY_
#define _TAILCC_NIC_ENTROPY_

#include "headers.p4"

control EntropyValue(inout headers_t hdr, inout nic_metadata_t meta,
                     in bit<64> now_ns, in bool cnp_rx) {
    Register<bit<8>, QpSlot_t>(NIC_QP_SLOTS) ev_next;
    Register<bit<16>, QpSlot_t>(NIC_QP_SLOTS) ev_ce_mask;
    Register<bit<64>, QpSlot_t>(NIC_QP_SLOTS) ev_ce_time;

    apply {
        if (meta.has_qp != 1 || !hdr.udp.isValid()) {
            return;
        }
        bit<16> mask = ev_ce_mask.read(meta.qp_slot);
        if (now_ns - ev_ce_time.read(meta.qp_slot) > EV_CE_HOLD_NS) {
            mask = 0;
        }
        if (cnp_rx) {
            ev_ce_mask.write(meta.qp_slot, mask | (16w1 << hdr.udp.src_port[3:0]));
            ev_ce_time.write(meta.qp_slot, now_ns);
            return;
        }
        if (meta.ev_count == 0) {
            return;
        }
        bit<8> i = ev_next.read(meta.qp_slot) + 1;
        if (i >= meta.ev_count) {
            i = 0;
        }
        if (((mask >> i[3:0]) & 1) == 1) {
            i = i + 1;
            if (i >= meta.ev_count) {
                i = 0;
            }
            if (((mask >> i[3:0]) & 1) == 1) {
                i = i + 1;
                if (i >= meta.ev_count) {
                    i = 0;
                }
            }
        }
        ev_next.write(meta.qp_slot, i);
        hdr.udp.src_port = meta.ev_base | (bit<16>)i[3:0];
    }
}

#endif
