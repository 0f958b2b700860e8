/* CRC-32 as used by the trace log (spec/log.md): the common IEEE CRC
 * (reflected, init and final xor 0xFFFFFFFF; "123456789" gives 0xCBF43926). */
#ifndef BTPACK_CRC32_H
#define BTPACK_CRC32_H

#include <stddef.h>
#include <stdint.h>

/* CRC of data[0..len) continuing from `crc` (start with 0). Pure function,
 * thread-safe, async-signal-safe. */
uint32_t btp_crc32_update(uint32_t crc, const void *data, size_t len);

#endif
