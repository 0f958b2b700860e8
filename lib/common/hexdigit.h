/*
 * The value of one hexadecimal digit (private): every parser of hex text in
 * the library (lws `~b#` lines, image lines, /proc/PID/maps) uses this one.
 * Freestanding and async-signal-safe.
 */
#ifndef BTPACK_HEXDIGIT_H
#define BTPACK_HEXDIGIT_H

/* 0-15 for '0'-'9', 'a'-'f' and 'A'-'F'; -1 for any other byte. */
static inline int btp_hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

#endif
