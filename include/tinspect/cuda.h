/*
 * cuda.h - placing bytes on a CUDA device through the driver, found at run time.
 *
 * Nothing here needs the CUDA toolkit to build. ti_cuda_open() loads the
 * driver library with dlopen() ("libcuda.so.1", or the path in the
 * environment variable TINSPECT_LIBCUDA when it is set and not empty: tests
 * point it at a missing file or at a fake driver), looks up the few driver
 * functions used below, initialises the driver and creates a context on one
 * device. A machine without a GPU gets a clean error from ti_cuda_open() and
 * nothing else changes.
 *
 * Ownership: a ti_cuda handle owns its context, its staging buffers and every
 * device allocation made through it; ti_cuda_close() releases all of them.
 * Device memory is named by ti_cuda_ptr, a device address (0 is "none"): it
 * is never dereferenced on the host. Every operation checks that the range it
 * touches lies inside one live allocation of this handle, so a caller's
 * mistake is a TI_E_INVALID and not a device fault.
 *
 * Threads: a handle is used by one thread at a time. It does not leave its
 * context current: each call pushes the context and pops it on the way out,
 * so it coexists with other CUDA users in the process.
 *
 * Bounds: staging is two pinned host buffers of TI_CUDA_STAGING_DEFAULT
 * bytes each (plain heap memory when the driver refuses pinned memory, see
 * ti_cuda_stats.pinned); at most TI_CUDA_ALLOCATIONS_MAX live allocations.
 *
 * Errors: failures of the driver carry its own words, for example
 * "cannot allocate 1073741824 bytes on cuda:0: out of memory
 * (CUDA_ERROR_OUT_OF_MEMORY)". CUDA_ERROR_OUT_OF_MEMORY is TI_E_NOMEM, other
 * driver failures are TI_E_IO, misuse of the API is TI_E_INVALID.
 *
 * Checksums: ti_checksum_* is XXH64 with seed 0 (the value `xxhsum -H1`
 * prints), chosen because it streams at memory speed and does not depend on
 * how the bytes are split into pieces. It serves --verify: the checksum of
 * the bytes uploaded (ti_cuda_upload_end) is compared with that of the bytes
 * read back from the device (ti_cuda_checksum), and it is usable on any host
 * bytes.
 */
#ifndef TINSPECT_CUDA_H
#define TINSPECT_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/error.h"

/* The environment variable that overrides the driver library's path. */
#define TI_CUDA_LIBRARY_ENV "TINSPECT_LIBCUDA"
/* The driver library's soname, as the NVIDIA driver installs it. */
#define TI_CUDA_LIBRARY_DEFAULT "libcuda.so.1"

/* Bytes per staging buffer (there are two): 8 MiB keeps the copy engine busy. */
#define TI_CUDA_STAGING_DEFAULT ((size_t)8 << 20)
#define TI_CUDA_STAGING_MIN ((size_t)4096)
#define TI_CUDA_STAGING_MAX ((size_t)1 << 30)
/* Live device allocations one handle tracks. */
#define TI_CUDA_ALLOCATIONS_MAX ((size_t)1 << 20)
/* The widest element a fill pattern may have (complex128). */
#define TI_CUDA_PATTERN_MAX 16

typedef struct ti_cuda ti_cuda;
typedef uint64_t ti_cuda_ptr; /* a device address; 0 is none */

typedef struct ti_cuda_info {
	int index;            /* N of cuda:N */
	char name[256];       /* "NVIDIA H100 80GB HBM3" */
	uint64_t total_bytes; /* the device's memory, as the driver reports it */
	int driver_version;   /* 12040 for CUDA 12.4 */
	char library[256];    /* the path given to dlopen() */
} ti_cuda_info;

typedef struct ti_cuda_stats {
	uint64_t bytes_allocated;  /* live, through this handle */
	uint64_t peak_allocated;
	uint64_t bytes_uploaded;   /* completed uploads */
	uint64_t bytes_filled;
	uint64_t bytes_read_back;  /* ti_cuda_checksum and ti_cuda_read */
	bool pinned;               /* staging is page-locked (false before first use or on fallback) */
} ti_cuda_stats;

/* ---- life cycle ---- */

/*
 * Loads the driver, initialises it and creates a context on device
 * device_index. Every failure except TI_E_INVALID (a negative index) and
 * TI_E_NOMEM means "CUDA is not available here", and the message says why:
 *   cannot load the CUDA driver: libcuda.so.1: cannot open shared object file: ...
 *   the CUDA driver 'PATH' lacks 'cuMemAlloc_v2' (too old, or not a CUDA driver)
 *   cuInit failed: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE)
 *   no device cuda:2 (the driver sees 1 device)
 * Those are TI_E_IO. The library is never unloaded: the driver starts threads
 * that outlive its contexts.
 */
ti_status ti_cuda_open(int device_index, ti_cuda **out, ti_error *err);

/* Ends an unfinished upload, frees every allocation and the staging buffers,
 * destroys the context. NULL is allowed. */
void ti_cuda_close(ti_cuda *cuda);

/*
 * Sets the size of each staging buffer (TI_CUDA_STAGING_MIN..MAX); allowed
 * between uploads. Tests use small buffers to cross many buffer boundaries.
 */
ti_status ti_cuda_set_staging_size(ti_cuda *cuda, size_t bytes, ti_error *err);

/* ---- queries ---- */

const ti_cuda_info *ti_cuda_device_info(const ti_cuda *cuda);
const ti_cuda_stats *ti_cuda_get_stats(const ti_cuda *cuda);

/* Free and total device memory, the driver's figures (cuMemGetInfo). */
ti_status ti_cuda_mem_info(ti_cuda *cuda, uint64_t *free_bytes, uint64_t *total_bytes, ti_error *err);

/* ---- device memory ---- */

/*
 * Allocates bytes of device memory (256-byte aligned, uninitialised, as
 * torch.empty on CUDA). A zero-byte allocation gives *ptr = 0 and succeeds.
 */
ti_status ti_cuda_alloc(ti_cuda *cuda, uint64_t bytes, ti_cuda_ptr *ptr, ti_error *err);

/* Frees an allocation made by ti_cuda_alloc; 0 is allowed. TI_E_INVALID for
 * an address that is not the start of a live allocation. */
ti_status ti_cuda_free(ti_cuda *cuda, ti_cuda_ptr ptr, ti_error *err);

/*
 * Fills nbytes at dst with a repeated element: pattern_size bytes (1, 2, 4, 8
 * or 16) of pattern in host byte order, which is the device's (both are little
 * endian), for example the bits of 1.0f for torch.ones(dtype=float32).
 * nbytes must be a multiple of pattern_size. The fill runs on the device:
 * cuMemsetD8/D16/D32 when the pattern repeats with a period of 1, 2 or 4
 * bytes and dst is aligned to it, otherwise one block copied up and doubled
 * with device-to-device copies. Returns when the fill is complete.
 */
ti_status ti_cuda_fill(ti_cuda *cuda, ti_cuda_ptr dst, uint64_t nbytes, const void *pattern,
                       size_t pattern_size, ti_error *err);

/* Zeros, as torch.zeros: ti_cuda_fill with one zero byte. */
ti_status ti_cuda_zero(ti_cuda *cuda, ti_cuda_ptr dst, uint64_t nbytes, ti_error *err);

/* Copies nbytes from the device to host memory (synchronous; for tests and
 * small reads). */
ti_status ti_cuda_read(ti_cuda *cuda, ti_cuda_ptr src, void *host, uint64_t nbytes, ti_error *err);

/* ---- streaming upload ----
 *
 * Bytes from a file reach the device through the two staging buffers: while
 * one buffer's copy runs on its stream, the caller fills the other. One
 * upload at a time per handle:
 *
 *   ti_cuda_upload_begin(cuda, dst, nbytes, want_checksum, err);
 *   while (more) {
 *       ti_cuda_upload_window(cuda, &buf, &cap, err);   // read up to cap bytes into buf
 *       n = fread(buf, 1, cap, f);
 *       ti_cuda_upload_commit(cuda, n, err);
 *   }                                                    // or ti_cuda_upload_put(cuda, bytes, n, err)
 *   ti_cuda_upload_end(cuda, &checksum, err);            // waits for the last copy
 *
 * Exactly nbytes must be committed before end. Any failure abandons the
 * upload (the handle is ready for the next begin); so does
 * ti_cuda_upload_abort(), for a caller whose reading failed. While an upload
 * is in progress it owns the staging buffers: the other calls that take a
 * device range, allocate or free fail with TI_E_INVALID until it ends.
 */
ti_status ti_cuda_upload_begin(ti_cuda *cuda, ti_cuda_ptr dst, uint64_t nbytes, bool want_checksum,
                               ti_error *err);
/* Where the next bytes go: *buf has room for *cap bytes (> 0 while bytes
 * remain, never more than remain). Valid until the next upload call. */
ti_status ti_cuda_upload_window(ti_cuda *cuda, void **buf, size_t *cap, ti_error *err);
/* Hands over n bytes written at the window (n <= its cap). */
ti_status ti_cuda_upload_commit(ti_cuda *cuda, size_t n, ti_error *err);
/* Copies n bytes into the window(s) and commits them. */
ti_status ti_cuda_upload_put(ti_cuda *cuda, const void *bytes, size_t n, ti_error *err);
/* Waits for every copy; *checksum (may be NULL) is the XXH64 of the bytes
 * uploaded when the upload began with want_checksum, else 0. */
ti_status ti_cuda_upload_end(ti_cuda *cuda, uint64_t *checksum, ti_error *err);
void ti_cuda_upload_abort(ti_cuda *cuda);

/* ---- verification ---- */

/* Reads nbytes at src back through the staging buffers and returns their
 * XXH64 in *checksum; the copy of one chunk overlaps the hashing of the other. */
ti_status ti_cuda_checksum(ti_cuda *cuda, ti_cuda_ptr src, uint64_t nbytes, uint64_t *checksum,
                           ti_error *err);

/* ---- checksums of host bytes (XXH64, seed 0) ---- */

typedef struct ti_checksum {
	uint64_t lane[4];
	uint64_t total;          /* bytes seen */
	unsigned char stripe[32];/* bytes not yet folded into the lanes */
	size_t buffered;
} ti_checksum;

void ti_checksum_init(ti_checksum *c);
void ti_checksum_update(ti_checksum *c, const void *bytes, size_t n);
uint64_t ti_checksum_final(const ti_checksum *c);
/* The checksum of one piece of memory. */
uint64_t ti_checksum_bytes(const void *bytes, size_t n);

#endif
