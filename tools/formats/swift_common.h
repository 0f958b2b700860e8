/* What the swift and swift-crashlog formats share. */
#ifndef BTPACK_TOOLS_FORMATS_SWIFT_COMMON_H
#define BTPACK_TOOLS_FORMATS_SWIFT_COMMON_H

/* The architecture written for a trace whose input named none: "x86_64"
 * (64-bit), "i386" (32-bit), "msp430" (16-bit). */
const char *swift_default_arch(unsigned word_bits);

/* Word size of an architecture as Swift's crash-log reader maps it (arm64,
 * x86_64: 64; arm, i386: 32), or 0 when Swift does not know it. */
unsigned swift_arch_word_bits(const char *arch);

#endif
