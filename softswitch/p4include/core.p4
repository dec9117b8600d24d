/*
 * core.p4 — the P4_16 core library as softswitch provides it.
 *
 * Written for softswitch; it declares the same names and signatures as the core
 * library that ships with the reference compiler, so programs written for p4c
 * compile unchanged. Error members are declared in the same order, because their
 * numeric codes (in declaration order) are observable on BMv2-style targets.
 */

#ifndef _CORE_P4_
#define _CORE_P4_

/* Errors the parser and the architecture can signal. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet being parsed. */
extern packet_in {
    /* Fixed-size header: extract the next sizeof(T) bits into hdr and make it valid. */
    void extract<T>(out T hdr);
    /* Header with exactly one varbit field, whose length is given in bits. */
    void extract<T>(out T variableSizeHeader, in bit<32> variableFieldSizeInBits);
    /* Read the next bits without consuming them. */
    T lookahead<T>();
    /* Skip bits. */
    void advance(in bit<32> sizeInBits);
    /* Length of the packet in bytes. */
    bit<32> length();
}

/* The packet being built by a deparser. */
extern packet_out {
    /* Append hdr (headers: only when valid; structs/stacks/unions: field by field). */
    void emit<T>(in T hdr);
}

/* Parser assertion: on failure, stop parsing with the given error. */
extern void verify(in bool check, in error toSignal);

/* The action that does nothing; default of tables without a default_action. */
@noWarn("unused")
action NoAction() {}

/* Match kinds every target understands. */
match_kind {
    exact,
    ternary,
    lpm
}

/* Compile-time assertion; usable as a constant initialiser. */
extern bool static_assert(bool check, string message);
extern bool static_assert(bool check);

#endif  /* _CORE_P4_ */
