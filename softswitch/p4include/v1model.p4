/*
 * v1model.p4 — the v1model architecture (BMv2 simple_switch) as softswitch provides it.
 *
 * Written for softswitch. It declares the same types, fields, externs, enums and
 * method signatures as the v1model.p4 shipped with the reference compiler, including
 * the V1MODEL_VERSION switch (20180101 by default; 20200408 gives typed indices), so
 * programs written for p4c + BMv2 compile unchanged. Semantics are documented where
 * softswitch implements them (softswitch/target/).
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

/* Reject versions this file does not describe (as p4c does). */
const bool __v1model_version_is_nonnegative =
    static_assert(V1MODEL_VERSION >= 0, "expected v1model version to be a non-negative number");
const bool __v1model_version_is_known =
    static_assert(V1MODEL_VERSION >= 20180101 && V1MODEL_VERSION <= 20200408,
                  "unknown v1model version; supported versions are 20180101 to 20200408");

match_kind {
    range,
    /* exact match or wildcard */
    optional,
    /* member selection of an action_selector */
    selector
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#endif

/* Intrinsic metadata of simple_switch. Queueing fields are filled by the traffic
 * manager: depths in packets, times in microseconds. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
#if V1MODEL_VERSION >= 20200408
    PortId_t ingress_port;
    PortId_t egress_spec;
    PortId_t egress_port;
#else
    bit<9>   ingress_port;
    bit<9>   egress_spec;
    bit<9>   egress_port;
#endif
    bit<32>  instance_type;
    bit<32>  packet_length;
    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;
    /* 1 when a verify_checksum() failed */
    bit<1>   checksum_error;
    /* error raised by the parser, error.NoError if none */
    error    parser_error;
    /* queue selection at the egress port (simple_switch --priority-queues) */
    @alias("intrinsic_metadata.priority")
    bit<3>   priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* Indexed packet/byte counters; an out-of-range index counts nothing. */
#if V1MODEL_VERSION >= 20200408
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

/* One counter per entry of the table that names it in its `counters` property. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

/* Indexed two-rate three-colour meters (colour: 0 green, 1 yellow, 2 red). */
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

/* One meter per entry of the table that names it in its `meters` property. */
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Stateful arrays; reads of an out-of-range index leave result unspecified. */
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

/* Table implementation holding members shared between entries. */
extern action_profile {
    action_profile(bit<32> size);
}

/* result := uniformly random value in lo..hi (inclusive). */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data to the control plane (P4Runtime DigestList). */
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* egress_spec := drop port, mcast_grp := 0. */
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result := base + (H(data) % max), or base when max is 0. */
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

/* Table implementation choosing a member of a group by hashing the selector keys. */
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,
    E2E
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

/* Sets standard_metadata.checksum_error when condition holds and the checksum of data
 * differs from checksum. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* checksum := checksum of data, when condition holds. */
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* As verify_checksum, with the unparsed payload appended to data. */
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

/* As update_checksum, with the unparsed payload appended to data. */
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

/* Clone the packet to a mirroring session (no metadata preserved). */
extern void clone(in CloneType type, in bit<32> session);

/* Send the packet back to the ingress parser, keeping the user metadata fields
 * annotated @field_list(index). */
@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
extern void resubmit_preserving_field_list(bit<8> index);

/* Send the deparsed packet back to the ingress parser, keeping @field_list(index). */
@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
extern void recirculate_preserving_field_list(bit<8> index);

/* Clone to a mirroring session, keeping @field_list(index) fields in the clone. */
@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Truncate the outgoing packet to length bytes. */
extern void truncate(in bit<32> length);

/* simple_switch stops with an error message when check is false. */
extern void assert(in bool check);

/* Formal-verification hint; simple_switch treats it like assert. */
extern void assume(in bool check);

/* Log a message; "{}" placeholders are replaced by the fields of data. */
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

/* The architecture's blocks. */
parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

control VerifyChecksum<H, M>(inout H hdr, inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);

control ComputeChecksum<H, M>(inout H hdr, inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
