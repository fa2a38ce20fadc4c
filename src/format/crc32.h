/*
 * crc32.h - the CRC-32 of the ZIP format (library-internal).
 *
 * PKWARE APPNOTE.TXT 4.4.7: the reflected polynomial 0xEDB88320, initial
 * value and final XOR 0xFFFFFFFF; the same value as zlib's crc32(). Owns no
 * memory. Thread-safe: its tables are built once, on first use.
 */
#ifndef TINSPECT_FORMAT_CRC32_H
#define TINSPECT_FORMAT_CRC32_H

#include <stddef.h>
#include <stdint.h>

/*
 * Extends the CRC of what came before (0 for nothing) by n bytes of data,
 * so that ti_crc32(ti_crc32(0, a, na), b, nb) is the CRC of a then b.
 */
uint32_t ti_crc32(uint32_t crc, const void *data, size_t n);

#endif
