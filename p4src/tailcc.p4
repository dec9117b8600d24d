/*
 * tailcc: deterministic tail latency for AI-inference fabrics.
 *
 * v1model program for p4c (`p4c --target bmv2 --arch v1model`) on BMv2
 * `simple_switch_grpc --priority-queues 8`, and unchanged on softswitch.
 * docs/pipeline.md describes every stage, table, register and counter.
 *
 * Ingress:  packet-out -> parser-error policy -> PFC accounting -> tenant
 *           (VRF) -> VXLAN termination + RFC 6040 -> lookup view ->
 *           semantic classification -> micro-segmentation -> forwarding ->
 *           Fast CNP decision
 *           (a recirculated Fast CNP skips all of it: out to the sender)
 * Egress:   Fast CNP builder (clones, recirculated) | queue telemetry ->
 *           VXLAN encap -> per-class ECN marking -> INT hop record -> packet-in
 */
#include <core.p4>
#include <v1model.p4>

#include "include/defines.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/checksum.p4"
#include "include/queue_state.p4"
#include "include/packetio.p4"
#include "include/parser_error.p4"
#include "include/mac_control.p4"
#include "include/tenant.p4"
#include "include/vxlan.p4"
#include "include/lookup.p4"
#include "include/classify.p4"
#include "include/segmentation.p4"
#include "include/forwarding.p4"
#include "include/fast_cnp.p4"
#include "include/ecn_marking.p4"
#include "include/telemetry.p4"
#include "include/deparser.p4"

control TailccIngress(inout headers_t hdr,
                      inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {

    /* Why packets die in ingress, by DROP_* reason. */
    counter(DROP_REASON_SLOTS, CounterType.packets_and_bytes) ingress_drop_counter;

    PacketIoIngress()   packet_io;
    ParserErrorPolicy() parser_errors;
    MacControl()        mac_control;
    TenantMap()         tenant;
    VxlanDecap()        vxlan_decap;
    LookupInit()        lookup;
    Classify()          classify;
    Segmentation()      segmentation;
    Forwarding()        forwarding;
    FastCnpDecision()   fast_cnp;
    FastCnpRelease()    fast_cnp_release;

    apply {
        /* Nothing leaves unless a stage below picks a port. */
        mark_to_drop(standard_metadata);

        packet_io.apply(hdr, meta, standard_metadata);
        if (meta.bypass == 1w0) {
            fast_cnp_release.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0) {
            parser_errors.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0 && meta.drop == 1w0) {
            mac_control.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0 && meta.drop == 1w0) {
            tenant.apply(hdr, meta, standard_metadata);
            vxlan_decap.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0 && meta.drop == 1w0) {
            lookup.apply(hdr, meta, standard_metadata);
            classify.apply(hdr, meta, standard_metadata);
            segmentation.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0 && meta.drop == 1w0) {
            forwarding.apply(hdr, meta, standard_metadata);
        }
        if (meta.bypass == 1w0 && meta.drop == 1w0) {
            fast_cnp.apply(hdr, meta, standard_metadata);
        }

        if (meta.drop == 1w1) {
            mark_to_drop(standard_metadata);
            ingress_drop_counter.count((bit<32>)meta.drop_reason);
        }
    }
}

control TailccEgress(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    FastCnpBuilder() cnp_builder;
    QueueTelemetry() queue_telemetry;
    VxlanEncap()     vxlan_encap;
    EcnMarking()     ecn_marking;
    IntHop()         int_hop;
    PacketIoEgress() packet_io;

    apply {
        queue_telemetry.apply(hdr, meta, standard_metadata);
        if (standard_metadata.instance_type == INSTANCE_TYPE_INGRESS_CLONE) {
            /* The only clones this program makes are Fast CNPs. */
            if (meta.cnp_clone == 1w1) {
                cnp_builder.apply(hdr, meta, standard_metadata);
            } else {
                mark_to_drop(standard_metadata);
            }
        } else if (meta.cnp_release == 1w1) {
            /* A built CNP on its way to the sender (second pass). */
            cnp_builder.apply(hdr, meta, standard_metadata);
        } else {
            vxlan_encap.apply(hdr, meta, standard_metadata);
            ecn_marking.apply(hdr, meta, standard_metadata);
            int_hop.apply(hdr, meta, standard_metadata);
            packet_io.apply(hdr, meta, standard_metadata);
        }
    }
}

V1Switch(TailccParser(),
         TailccVerifyChecksum(),
         TailccIngress(),
         TailccEgress(),
         TailccComputeChecksum(),
         TailccDeparser()) main;
