/* CIF's fixed prefix table (codes 0..11), shared by encoder and decoder. */
#include "cif_internal.h"

/* The order is the format's: a prefix's code is its index. Code 11 has no
 * trailing backslash (an old version of Swift's document showed one; its
 * code never had it). */
const char *const cif_fixed_prefixes[CIF_FIXED_PREFIXES] = {
    "/lib",
    "/usr/lib",
    "/usr/local/lib",
    "/opt/lib",
    "/System/Library/Frameworks",
    "/System/Library/PrivateFrameworks",
    "/System/iOSSupport",
    "/Library/Frameworks",
    "/System/Applications",
    "/Applications",
    "C:\\Windows\\System32",
    "C:\\Program Files",
};

const unsigned char cif_fixed_prefix_len[CIF_FIXED_PREFIXES] = {4, 8, 14, 8, 26, 33,
                                                                 18, 19, 20, 13, 19, 16};

const char *btp_cif_fixed_prefix(unsigned code)
{
    return code < CIF_FIXED_PREFIXES ? cif_fixed_prefixes[code] : NULL;
}
