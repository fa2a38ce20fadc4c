/*
 * cache.h - the remote-read cache on disk: the blocks http.c fetched, kept
 * under $XDG_CACHE_HOME/tinspect (default ~/.cache/tinspect) so that a
 * second read of a URL comes from disk (docs/inspect.md: "The remote-read
 * cache" gives the format).
 *
 *   v1/KEY/head           the version held for one URL: its URL, validator
 *                         (ETag, else Last-Modified) and size, checksummed
 *   v1/KEY/VERSION-INDEX  one BLOCK-byte block of that version: a 48-byte
 *                         header (magic, index, length, version, checksums)
 *                         then the bytes
 *
 * KEY is the FNV-1a 64 of the URL (the http(s) URL a name stands for: it
 * never holds credentials, they are refused), VERSION that of the URL, the
 * validator and the size, both in 16 hex digits. Every file is written to a
 * temporary name in its folder and renamed, so a reader sees a whole file
 * or none; one that is short, long or fails its checksum is ignored and
 * removed. Several processes may read and write one entry at once: two
 * writers of one block write the same bytes. No header, token or
 * redirect target is ever written.
 *
 * The cache is best effort: a folder that cannot be made or written is no
 * error, the URL is read from the server.
 */
#ifndef TINSPECT_IO_CACHE_H
#define TINSPECT_IO_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "tinspect/error.h"

#include "io/http_parse.h"

enum {
	IO_CACHE_BLOCK = 64 << 10,  /* http.c's block: a block file holds at most this many bytes */
	IO_CACHE_HEADER = 48,       /* a block file's header */
	IO_CACHE_URL_MAX = 8192,
	IO_CACHE_HEAD_MAX = IO_CACHE_URL_MAX + HTTP_VALIDATOR_MAX + 128,
	IO_CACHE_PATH_MAX = 4096,
};
#define IO_CACHE_MAX_DEFAULT ((uint64_t)2 << 30) /* TINSPECT_CACHE_MAX: 2 GiB */

typedef struct io_cache io_cache;

/* ---- one URL's entry, as a process uses it ---- */

/* The entry of url, its head read when there is a valid one; NULL when no cache folder can be named. */
io_cache *io_cache_open(const char *url);
/* The version the head holds: false when none (no head, a torn or corrupt one, another URL's). */
bool io_cache_head(const io_cache *c, const char **validator, uint64_t *size);
/*
 * The version of the file now read: a head of another version is replaced
 * (and its blocks removed), the same one marked as used now. False when the
 * validator cannot key a cache entry (none, or not printable): nothing is
 * kept then.
 */
bool io_cache_set_version(io_cache *c, const char *validator, uint64_t size);
/* Block index of the version set, len bytes (the block's whole length), into buf: false unless whole and checked. */
bool io_cache_get(io_cache *c, uint64_t index, unsigned char *buf, size_t len);
/* Keeps block index (len bytes) of the version set; silently nothing past the size bound or on a write error. */
void io_cache_put(io_cache *c, uint64_t index, const unsigned char *data, size_t len);
/* Closes the entry; when it wrote, evicts the least recently used entries past the bound. NULL is a no-op. */
void io_cache_close(io_cache *c);

/* Removes the entry of url, an http(s) URL (NULL: every entry); how many entries and disk bytes went. */
ti_status io_cache_clear(const char *url, uint64_t *entries, uint64_t *bytes, ti_error *err);
/* Up to max bytes of a small file (a cache file, a .netrc) into buf, a link not followed; -1 when it cannot be read. */
ssize_t io_read_small_file(const char *path, void *buf, size_t max);

/* ---- the format, as pure functions (the unit tests') ---- */

uint64_t io_cache_fnv1a(const void *data, size_t n, uint64_t hash);
uint64_t io_cache_key(const char *url);
uint64_t io_cache_version(const char *url, const char *validator, uint64_t size);
/* A head's text into out (at most IO_CACHE_HEAD_MAX bytes); its length, 0 when it does not fit or cannot be kept. */
size_t io_cache_head_format(char *out, size_t out_size, const char *url, const char *validator, uint64_t size);
/* A head's n bytes: true when whole and checked, its fields copied out (url_size, validator_size bytes at most). */
bool io_cache_head_parse(const char *text, size_t n, char *url, size_t url_size, char *validator,
                         size_t validator_size, uint64_t *size);
/* The header of block index of a version, holding len bytes of data. */
void io_cache_block_header(unsigned char out[IO_CACHE_HEADER], uint64_t version, uint64_t index,
                           const unsigned char *data, size_t len);
/* Whether n bytes read from a block file are that block of that version, whole: len bytes of data after the header. */
bool io_cache_block_check(const unsigned char *file, size_t n, uint64_t version, uint64_t index, size_t len);

/* One entry's use of the disk, for eviction. */
typedef struct io_cache_usage {
	uint64_t bytes;
	time_t last_used;
	bool keep;   /* in use by this process: never evicted */
	bool evict;  /* set by io_cache_plan_eviction */
} io_cache_usage;
/* Marks the least recently used entries to remove until the rest hold at most max bytes; how many it marked. */
size_t io_cache_plan_eviction(io_cache_usage *entries, size_t n, uint64_t max);
/* TINSPECT_CACHE_MAX: bytes, or with a suffix K, M, G, T (powers of 1024); the default when unset or unreadable. */
uint64_t io_cache_max(void);

#endif
