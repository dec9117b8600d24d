/*
 * tailcc NIC: per-QP rate state (a DCQCN-style reaction point) and per-class meters.
 *
 * Each QP slot keeps a rate in bytes per 1024 ns (0: not cut, line rate) and a token
 * bucket. A CNP for the QP (receive side, `cnp_rx`; from a switch's Fast CNP or the
 * receiver's NIC) halves the rate, starting from the QP's configured max_rate, never
 * below min_rate. Without CNPs the rate recovers by 1/8 every RATE_RECOVERY_NS until
 * it reaches max_rate again (then the QP is uncut). On transmit, a packet beyond the
 * QP's tokens goes to QUEUE_PACED, which the NIC's traffic manager rate-limits,
 * instead of its class's queue. Each class also has a Meter (rates from the intent
 * file): RED is dropped (a policer for classes that must not exceed their share).
 * `qp_rate` (a table keyed by the slot) holds max_rate, min_rate and the burst.
 */
#ifndef _TAILCC_NIC_RATE_CONTROL_
#define _TAILCC_NIC_RATE_CONTROL_

#include "headers.p4"

control RateControl(inout headers_t hdr, inout nic_metadata_t meta,
                     in bit<64> now_ns, in bool cnp_rx, out bool drop) {
    Register<bit<32>, QpSlot_t>(NIC_QP_SLOTS) rate;          /* bytes / 1024 ns */
    Register<bit<64>, QpSlot_t>(NIC_QP_SLOTS) last_change;   /* cut or recovery */
    Register<bit<32>, QpSlot_t>(NIC_QP_SLOTS) tokens;        /* bytes */
    Register<bit<64>, QpSlot_t>(NIC_QP_SLOTS) last_refill;
    Counter<bit<64>, QpSlot_t>(NIC_QP_SLOTS, PNA_CounterType_t.PACKETS) cnp_received;
    Meter<NicClass_t>(NIC_CLASSES, PNA_MeterType_t.BYTES) class_meter;

    bit<32> max_rate = 0;
    bit<32> min_rate = 0;
    bit<32> burst = 0;

    action set_qp_rate(bit<32> max_bytes_per_1024ns, bit<32> min_bytes_per_1024ns,
                       bit<32> burst_bytes) {
        max_rate = max_bytes_per_1024ns;
        min_rate = min_bytes_per_1024ns;
        burst = burst_bytes;
    }
    table qp_rate {
        key = {
            meta.qp_slot : exact @name("qp_slot");
        }
        actions = {
            set_qp_rate;
            NoAction;
        }
        default_action = NoAction();
        size = NIC_QP_SLOTS;
    }

    apply {
        drop = false;
        if (meta.has_qp == 1 && qp_rate.apply().hit) {
            bit<32> r = rate.read(meta.qp_slot);
            bit<64> changed = last_change.read(meta.qp_slot);
            if (cnp_rx) {
                cnp_received.count(meta.qp_slot);
                if (r == 0) {
                    r = max_rate;
                }
                r = r >> 1;
                if (r < min_rate) {
                    r = min_rate;
                }
                rate.write(meta.qp_slot, r);
                last_change.write(meta.qp_slot, now_ns);
                return;
            }
            if (r != 0 && now_ns - changed >= RATE_RECOVERY_NS) {
                r = r + (r >> 3) + 1;
                if (r >= max_rate) {
                    r = 0;
                }
                rate.write(meta.qp_slot, r);
                last_change.write(meta.qp_slot, now_ns);
            }
            if (r != 0) {
                bit<64> elapsed = now_ns - last_refill.read(meta.qp_slot);
                bit<64> refill = (elapsed >> 10) * (bit<64>)r;
                bit<64> t = (bit<64>)tokens.read(meta.qp_slot) + refill;
                if (t > (bit<64>)burst) {
                    t = (bit<64>)burst;
                }
                bit<64> len = (bit<64>)hdr.ipv4.total_len;
                if (t >= len) {
                    t = t - len;
                } else if (!(meta.urgent == 1)) {
                    meta.queue = QUEUE_PACED;
                }
                tokens.write(meta.qp_slot, (bit<32>)t);
                last_refill.write(meta.qp_slot, now_ns);
            }
        }
        if (!cnp_rx && meta.classified == 1 &&
                class_meter.execute(meta.nic_class) == PNA_MeterColor_t.RED) {
            drop = true;
        }
    }
}

#endif
