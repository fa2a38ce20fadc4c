/*
 * cuda.c - the CUDA driver reached with dlopen(): contexts, device memory,
 * constant fills, streamed uploads through two staging buffers, read-back
 * checksums. See include/tinspect/cuda.h.
 *
 * No header of the CUDA toolkit is used: the handful of driver types and
 * functions are declared below, from the driver API's documented signatures
 * (cuda.h of CUDA 4.0 and later, where the 64-bit entry points carry the _v2
 * suffix that the toolkit header hides behind #defines).
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tinspect/cuda.h"
#include "util/xxh64.h"

/* ---- the driver's types, as the driver API declares them (64-bit ABI) ---- */

typedef int CUresult;                   /* enum cudaError_enum; CUDA_SUCCESS is 0 */
typedef int CUdevice;                   /* a device ordinal */
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr; /* CUdeviceptr_v2 */

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CU_STREAM_DEFAULT = 0 /* a blocking stream: ordered with the legacy default stream, */
	                      /* so fills issued there and uploads on our streams do not race */
};

struct driver {
	CUresult (*cuGetErrorString)(CUresult error, const char **str);
	CUresult (*cuGetErrorName)(CUresult error, const char **str);
	CUresult (*cuInit)(unsigned int flags);
	CUresult (*cuDriverGetVersion)(int *version);
	CUresult (*cuDeviceGetCount)(int *count);
	CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
	CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
	CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice device);
	CUresult (*cuCtxCreate)(CUcontext *ctx, unsigned int flags, CUdevice device);
	CUresult (*cuCtxDestroy)(CUcontext ctx);
	CUresult (*cuCtxPushCurrent)(CUcontext ctx);
	CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
	CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
	CUresult (*cuMemFree)(CUdeviceptr ptr);
	CUresult (*cuMemHostAlloc)(void **ptr, size_t bytes, unsigned int flags);
	CUresult (*cuMemFreeHost)(void *ptr);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
	CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
	CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
	CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream);
	CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream stream);
	CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);
	CUresult (*cuMemsetD16)(CUdeviceptr dst, unsigned short value, size_t count);
	CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned int value, size_t count);
	CUresult (*cuStreamCreate)(CUstream *stream, unsigned int flags);
	CUresult (*cuStreamSynchronize)(CUstream stream);
	CUresult (*cuStreamDestroy)(CUstream stream);
};

/* dlsym() returns data pointers; POSIX guarantees they convert to function pointers. */
_Static_assert(sizeof(void *) == sizeof(CUresult (*)(void)), "function and data pointers differ in size");

/* One row per driver function: the exported symbol and the slot it fills. */
static const struct {
	const char *symbol;
	size_t offset;
} driver_symbols[] = {
	{"cuGetErrorString", offsetof(struct driver, cuGetErrorString)},
	{"cuGetErrorName", offsetof(struct driver, cuGetErrorName)},
	{"cuInit", offsetof(struct driver, cuInit)},
	{"cuDriverGetVersion", offsetof(struct driver, cuDriverGetVersion)},
	{"cuDeviceGetCount", offsetof(struct driver, cuDeviceGetCount)},
	{"cuDeviceGet", offsetof(struct driver, cuDeviceGet)},
	{"cuDeviceGetName", offsetof(struct driver, cuDeviceGetName)},
	{"cuDeviceTotalMem_v2", offsetof(struct driver, cuDeviceTotalMem)},
	{"cuCtxCreate_v2", offsetof(struct driver, cuCtxCreate)},
	{"cuCtxDestroy_v2", offsetof(struct driver, cuCtxDestroy)},
	{"cuCtxPushCurrent_v2", offsetof(struct driver, cuCtxPushCurrent)},
	{"cuCtxPopCurrent_v2", offsetof(struct driver, cuCtxPopCurrent)},
	{"cuCtxSynchronize", offsetof(struct driver, cuCtxSynchronize)},
	{"cuMemGetInfo_v2", offsetof(struct driver, cuMemGetInfo)},
	{"cuMemAlloc_v2", offsetof(struct driver, cuMemAlloc)},
	{"cuMemFree_v2", offsetof(struct driver, cuMemFree)},
	{"cuMemHostAlloc", offsetof(struct driver, cuMemHostAlloc)},
	{"cuMemFreeHost", offsetof(struct driver, cuMemFreeHost)},
	{"cuMemcpyHtoD_v2", offsetof(struct driver, cuMemcpyHtoD)},
	{"cuMemcpyDtoH_v2", offsetof(struct driver, cuMemcpyDtoH)},
	{"cuMemcpyDtoD_v2", offsetof(struct driver, cuMemcpyDtoD)},
	{"cuMemcpyHtoDAsync_v2", offsetof(struct driver, cuMemcpyHtoDAsync)},
	{"cuMemcpyDtoHAsync_v2", offsetof(struct driver, cuMemcpyDtoHAsync)},
	{"cuMemsetD8_v2", offsetof(struct driver, cuMemsetD8)},
	{"cuMemsetD16_v2", offsetof(struct driver, cuMemsetD16)},
	{"cuMemsetD32_v2", offsetof(struct driver, cuMemsetD32)},
	{"cuStreamCreate", offsetof(struct driver, cuStreamCreate)},
	{"cuStreamSynchronize", offsetof(struct driver, cuStreamSynchronize)},
	{"cuStreamDestroy_v2", offsetof(struct driver, cuStreamDestroy)},
};

/* Host block copied up and doubled on the device for patterns wider than 4 bytes. */
#define FILL_BLOCK ((size_t)64 << 10)

typedef struct allocation {
	uint64_t ptr, size;
} allocation;

typedef struct staging {
	unsigned char *host;
	CUstream stream;
	bool pinned; /* host came from cuMemHostAlloc (else malloc) */
	bool busy;   /* a copy from or to host is queued on stream and not yet waited for */
} staging;

typedef struct upload {
	ti_cuda_ptr dst;
	uint64_t total, committed, sent; /* bytes: to place, handed over, queued for copy */
	int current;                     /* the staging buffer being filled */
	size_t filled;                   /* bytes in it */
	bool want_checksum;
	ti_checksum checksum;
} upload;

struct ti_cuda {
	struct driver drv;
	CUdevice device;
	CUcontext ctx;
	ti_cuda_info info;
	ti_cuda_stats stats;
	allocation *allocs; /* sorted by ptr; device allocations never overlap */
	size_t nallocs, cap_allocs;
	staging staging[2];
	size_t staging_size;
	bool staging_ready;
	bool uploading;
	upload up;
};

/* ---- errors ---- */

/* Records "WHAT: DRIVER'S WORDS (CUDA_ERROR_NAME)". */
static ti_status driver_fail(const ti_cuda *c, ti_error *err, CUresult rc, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static ti_status driver_fail(const ti_cuda *c, ti_error *err, CUresult rc, int line, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	const char *words = NULL, *name = NULL;
	if (c->drv.cuGetErrorString && c->drv.cuGetErrorString(rc, &words) != CUDA_SUCCESS)
		words = NULL;
	if (c->drv.cuGetErrorName && c->drv.cuGetErrorName(rc, &name) != CUDA_SUCCESS)
		name = NULL;
	ti_status code = rc == CUDA_ERROR_OUT_OF_MEMORY ? TI_E_NOMEM : TI_E_IO;
	if (words && name)
		return ti_error_set(err, code, __FILE__, line, "%s: %s (%s)", what, words, name);
	return ti_error_set(err, code, __FILE__, line, "%s: CUDA error %d", what, rc);
}
#define DRIVER_FAIL(c, err, rc, ...) driver_fail((c), (err), (rc), __LINE__, __VA_ARGS__)

/* Each public call that reaches the device makes the context current for its
 * duration and restores the caller's on the way out. */
static ti_status enter(ti_cuda *c, ti_error *err)
{
	CUresult rc = c->drv.cuCtxPushCurrent(c->ctx);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot make the context of cuda:%d current", c->info.index);
	return TI_OK;
}

static void leave(ti_cuda *c)
{
	CUcontext popped;
	(void)c->drv.cuCtxPopCurrent(&popped);
}

/* Everything but the upload calls and the queries waits for the upload to end,
 * because the upload owns the staging buffers. */
static ti_status require_idle(const ti_cuda *c, const char *what, ti_error *err)
{
	if (c->uploading)
		return TI_FAIL(err, TI_E_INVALID, "cannot %s on cuda:%d while an upload is in progress", what,
		               c->info.index);
	return TI_OK;
}

/* ---- allocations: a sorted array, searched by address ---- */

/* The index of the first allocation that starts after ptr. */
static size_t allocation_after(const ti_cuda *c, uint64_t ptr)
{
	size_t lo = 0, hi = c->nallocs;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->allocs[mid].ptr <= ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static ti_status check_range(const ti_cuda *c, ti_cuda_ptr ptr, uint64_t n, const char *what, ti_error *err)
{
	if (n == 0)
		return TI_OK;
	size_t i = allocation_after(c, ptr);
	if (i > 0) {
		const allocation *a = &c->allocs[i - 1];
		uint64_t into = ptr - a->ptr;
		if (into < a->size && n <= a->size - into)
			return TI_OK;
	}
	return TI_FAIL(err, TI_E_INVALID,
	               "cannot %s %llu bytes at 0x%llx on cuda:%d: not inside one allocation", what,
	               (unsigned long long)n, (unsigned long long)ptr, c->info.index);
}

/* The checks every operation on a range makes before touching the device. */
static ti_status check_request(const ti_cuda *c, const char *what, ti_cuda_ptr ptr, uint64_t n, ti_error *err)
{
	if (require_idle(c, what, err))
		return err->code;
	if (n > SIZE_MAX)
		return TI_FAIL(err, TI_E_INVALID, "cannot %s %llu bytes: too large for this host", what,
		               (unsigned long long)n);
	return check_range(c, ptr, n, what, err);
}

/* ---- staging buffers ---- */

static ti_status staging_wait(ti_cuda *c, int i, ti_error *err)
{
	staging *s = &c->staging[i];
	if (!s->busy)
		return TI_OK;
	CUresult rc = c->drv.cuStreamSynchronize(s->stream);
	s->busy = false; /* the stream has drained, successfully or not */
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "copy between host and cuda:%d failed", c->info.index);
	return TI_OK;
}

/* Waits for both buffers, keeping the first error. Context current. */
static ti_status staging_drain(ti_cuda *c, ti_error *err)
{
	ti_status status = TI_OK;
	for (int i = 0; i < 2; i++) {
		ti_error local;
		ti_status s = staging_wait(c, i, &local);
		if (s != TI_OK && status == TI_OK) {
			status = s;
			if (err)
				*err = local;
		}
	}
	return status;
}

/* Context current. */
static void staging_release(ti_cuda *c)
{
	(void)staging_drain(c, NULL);
	for (int i = 0; i < 2; i++) {
		staging *s = &c->staging[i];
		if (s->stream)
			(void)c->drv.cuStreamDestroy(s->stream);
		if (s->pinned)
			(void)c->drv.cuMemFreeHost(s->host);
		else
			free(s->host);
		memset(s, 0, sizeof(*s));
	}
	c->staging_ready = false;
	c->stats.pinned = false;
}

/* Creates the two streams and buffers on first use. Context current. */
static ti_status staging_prepare(ti_cuda *c, ti_error *err)
{
	if (c->staging_ready)
		return TI_OK;
	for (int i = 0; i < 2; i++) {
		staging *s = &c->staging[i];
		CUresult rc = c->drv.cuStreamCreate(&s->stream, CU_STREAM_DEFAULT);
		if (rc != CUDA_SUCCESS) {
			s->stream = NULL;
			staging_release(c);
			return DRIVER_FAIL(c, err, rc, "cannot create a stream on cuda:%d", c->info.index);
		}
		void *host = NULL;
		/* Flags 0: cacheable page-locked memory; write-combined memory would
		 * make the hashing of the bytes in it slow. */
		if (c->drv.cuMemHostAlloc(&host, c->staging_size, 0) == CUDA_SUCCESS && host) {
			s->host = host;
			s->pinned = true;
		} else {
			/* Page-locked memory is rationed (ulimit -l, containers): plain
			 * memory still works, the copies just stop overlapping. */
			s->host = malloc(c->staging_size);
			if (!s->host) {
				staging_release(c);
				return TI_FAIL(err, TI_E_NOMEM, "cannot allocate a %zu-byte staging buffer",
				               c->staging_size);
			}
		}
	}
	c->staging_ready = true;
	c->stats.pinned = c->staging[0].pinned && c->staging[1].pinned;
	return TI_OK;
}

/* ---- life cycle ---- */

static ti_status open_fail(ti_cuda *c, ti_error *err)
{
	/* Whatever the driver said, failing to open means CUDA is not available. */
	if (err->code != TI_E_INVALID)
		err->code = TI_E_IO;
	if (c->ctx)
		(void)c->drv.cuCtxDestroy(c->ctx);
	ti_status code = err->code;
	free(c);
	return code;
}

ti_status ti_cuda_open(int device_index, ti_cuda **out, ti_error *err)
{
	*out = NULL;
	if (device_index < 0)
		return TI_FAIL(err, TI_E_INVALID, "bad CUDA device index %d", device_index);
	ti_cuda *c = calloc(1, sizeof(*c));
	if (!c)
		return TI_FAIL(err, TI_E_NOMEM, "cannot allocate a CUDA handle");
	c->info.index = device_index;
	c->staging_size = TI_CUDA_STAGING_DEFAULT;
	const char *path = getenv(TI_CUDA_LIBRARY_ENV);
	if (!path || !*path)
		path = TI_CUDA_LIBRARY_DEFAULT;
	snprintf(c->info.library, sizeof(c->info.library), "%s", path);

	/* RTLD_LOCAL: the driver's symbols stay out of the global namespace. */
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *why = dlerror();
		TI_FAIL(err, TI_E_IO, "cannot load the CUDA driver: %s", why ? why : path);
		return open_fail(c, err);
	}
	for (size_t i = 0; i < sizeof(driver_symbols) / sizeof(driver_symbols[0]); i++) {
		void *sym = dlsym(lib, driver_symbols[i].symbol);
		if (!sym) {
			/* Not dlclose()d: see ti_cuda_open in cuda.h; the loader keeps one copy. */
			TI_FAIL(err, TI_E_IO, "the CUDA driver '%s' lacks '%s' (too old, or not a CUDA driver)",
			        path, driver_symbols[i].symbol);
			memset(&c->drv, 0, sizeof(c->drv));
			return open_fail(c, err);
		}
		memcpy((char *)&c->drv + driver_symbols[i].offset, &sym, sizeof(sym));
	}

	CUresult rc = c->drv.cuInit(0); /* flags must be 0 */
	if (rc != CUDA_SUCCESS) {
		DRIVER_FAIL(c, err, rc, "cannot initialise the CUDA driver");
		return open_fail(c, err);
	}
	int count = 0;
	rc = c->drv.cuDeviceGetCount(&count);
	if (rc != CUDA_SUCCESS) {
		DRIVER_FAIL(c, err, rc, "cannot count CUDA devices");
		return open_fail(c, err);
	}
	if (device_index >= count) {
		if (count == 0)
			TI_FAIL(err, TI_E_IO, "no device cuda:%d (the driver sees no devices)", device_index);
		else
			TI_FAIL(err, TI_E_IO, "no device cuda:%d (the driver sees %d device%s)", device_index,
			        count, count == 1 ? "" : "s");
		return open_fail(c, err);
	}
	size_t total = 0;
	if ((rc = c->drv.cuDeviceGet(&c->device, device_index)) != CUDA_SUCCESS ||
	    (rc = c->drv.cuDeviceGetName(c->info.name, (int)sizeof(c->info.name), c->device)) != CUDA_SUCCESS ||
	    (rc = c->drv.cuDeviceTotalMem(&total, c->device)) != CUDA_SUCCESS ||
	    (rc = c->drv.cuDriverGetVersion(&c->info.driver_version)) != CUDA_SUCCESS) {
		DRIVER_FAIL(c, err, rc, "cannot query device cuda:%d", device_index);
		return open_fail(c, err);
	}
	c->info.name[sizeof(c->info.name) - 1] = '\0';
	c->info.total_bytes = total;

	/* Flags 0: CU_CTX_SCHED_AUTO. The new context is pushed on this thread;
	 * it is popped at once and pushed again by each call (enter/leave). */
	rc = c->drv.cuCtxCreate(&c->ctx, 0, c->device);
	if (rc != CUDA_SUCCESS) {
		c->ctx = NULL;
		DRIVER_FAIL(c, err, rc, "cannot create a context on cuda:%d", device_index);
		return open_fail(c, err);
	}
	CUcontext popped;
	rc = c->drv.cuCtxPopCurrent(&popped);
	if (rc != CUDA_SUCCESS) {
		DRIVER_FAIL(c, err, rc, "cannot release the context of cuda:%d", device_index);
		return open_fail(c, err);
	}
	*out = c;
	return TI_OK;
}

void ti_cuda_close(ti_cuda *c)
{
	if (!c)
		return;
	ti_cuda_upload_abort(c);
	ti_error ignored;
	if (enter(c, &ignored) == TI_OK) {
		staging_release(c);
		for (size_t i = 0; i < c->nallocs; i++)
			(void)c->drv.cuMemFree((CUdeviceptr)c->allocs[i].ptr);
		leave(c);
	}
	/* Destroying the context frees whatever the calls above could not. */
	(void)c->drv.cuCtxDestroy(c->ctx);
	free(c->allocs);
	free(c);
}

ti_status ti_cuda_set_staging_size(ti_cuda *c, size_t bytes, ti_error *err)
{
	if (require_idle(c, "resize the staging buffers", err))
		return err->code;
	if (bytes < TI_CUDA_STAGING_MIN || bytes > TI_CUDA_STAGING_MAX)
		return TI_FAIL(err, TI_E_INVALID, "staging buffer size %zu is outside %zu..%zu", bytes,
		               TI_CUDA_STAGING_MIN, TI_CUDA_STAGING_MAX);
	if (bytes == c->staging_size)
		return TI_OK;
	if (c->staging_ready) {
		if (enter(c, err))
			return err->code;
		staging_release(c);
		leave(c);
	}
	c->staging_size = bytes;
	return TI_OK;
}

/* ---- queries ---- */

const ti_cuda_info *ti_cuda_device_info(const ti_cuda *c)
{
	return &c->info;
}

const ti_cuda_stats *ti_cuda_get_stats(const ti_cuda *c)
{
	return &c->stats;
}

ti_status ti_cuda_mem_info(ti_cuda *c, uint64_t *free_bytes, uint64_t *total_bytes, ti_error *err)
{
	size_t f = 0, t = 0;
	if (enter(c, err))
		return err->code;
	CUresult rc = c->drv.cuMemGetInfo(&f, &t);
	leave(c);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot read the memory figures of cuda:%d", c->info.index);
	*free_bytes = f;
	*total_bytes = t;
	return TI_OK;
}

/* ---- device memory ---- */

ti_status ti_cuda_alloc(ti_cuda *c, uint64_t bytes, ti_cuda_ptr *ptr, ti_error *err)
{
	*ptr = 0;
	if (require_idle(c, "allocate", err))
		return err->code;
	if (bytes == 0)
		return TI_OK;
	if (bytes > SIZE_MAX)
		return TI_FAIL(err, TI_E_INVALID, "cannot allocate %llu bytes on cuda:%d: too large for this host",
		               (unsigned long long)bytes, c->info.index);
	if (c->nallocs == TI_CUDA_ALLOCATIONS_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "more than %zu allocations on cuda:%d", TI_CUDA_ALLOCATIONS_MAX,
		               c->info.index);
	if (c->nallocs == c->cap_allocs) {
		size_t cap = c->cap_allocs ? c->cap_allocs * 2 : 64;
		if (cap > TI_CUDA_ALLOCATIONS_MAX)
			cap = TI_CUDA_ALLOCATIONS_MAX;
		allocation *grown = realloc(c->allocs, cap * sizeof(*grown));
		if (!grown)
			return TI_FAIL(err, TI_E_NOMEM, "cannot grow the allocation table to %zu entries", cap);
		c->allocs = grown;
		c->cap_allocs = cap;
	}
	if (enter(c, err))
		return err->code;
	CUdeviceptr p = 0;
	CUresult rc = c->drv.cuMemAlloc(&p, (size_t)bytes);
	leave(c);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot allocate %llu bytes on cuda:%d", (unsigned long long)bytes,
		                   c->info.index);
	size_t i = allocation_after(c, p);
	memmove(&c->allocs[i + 1], &c->allocs[i], (c->nallocs - i) * sizeof(c->allocs[0]));
	c->allocs[i] = (allocation){.ptr = p, .size = bytes};
	c->nallocs++;
	c->stats.bytes_allocated += bytes;
	if (c->stats.bytes_allocated > c->stats.peak_allocated)
		c->stats.peak_allocated = c->stats.bytes_allocated;
	*ptr = p;
	return TI_OK;
}

ti_status ti_cuda_free(ti_cuda *c, ti_cuda_ptr ptr, ti_error *err)
{
	if (ptr == 0)
		return TI_OK;
	if (require_idle(c, "free", err))
		return err->code;
	size_t i = allocation_after(c, ptr);
	if (i == 0 || c->allocs[i - 1].ptr != ptr)
		return TI_FAIL(err, TI_E_INVALID, "cannot free 0x%llx on cuda:%d: not an allocation",
		               (unsigned long long)ptr, c->info.index);
	i--;
	c->stats.bytes_allocated -= c->allocs[i].size;
	memmove(&c->allocs[i], &c->allocs[i + 1], (c->nallocs - i - 1) * sizeof(c->allocs[0]));
	c->nallocs--;
	/* Forgotten either way: after a failed cuMemFree the address is not ours to use. */
	if (enter(c, err))
		return err->code;
	CUresult rc = c->drv.cuMemFree((CUdeviceptr)ptr);
	leave(c);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot free 0x%llx on cuda:%d", (unsigned long long)ptr,
		                   c->info.index);
	return TI_OK;
}

/* Context current. Fills with one block of the pattern copied up, then doubled
 * on the device: each copy reads the already filled prefix, so the pattern's
 * phase carries on (every length involved is a multiple of the pattern size). */
static CUresult fill_by_doubling(ti_cuda *c, ti_cuda_ptr dst, uint64_t nbytes, const unsigned char *pattern,
                                 size_t size, bool *nomem)
{
	size_t block = nbytes < FILL_BLOCK ? (size_t)nbytes : FILL_BLOCK; /* both multiples of size */
	unsigned char *host = malloc(block);
	if (!host) {
		*nomem = true;
		return CUDA_SUCCESS;
	}
	for (size_t i = 0; i < block; i += size)
		memcpy(host + i, pattern, size);
	CUresult rc = c->drv.cuMemcpyHtoD((CUdeviceptr)dst, host, block);
	free(host);
	for (uint64_t done = block; rc == CUDA_SUCCESS && done < nbytes;) {
		uint64_t n = nbytes - done < done ? nbytes - done : done;
		rc = c->drv.cuMemcpyDtoD((CUdeviceptr)(dst + done), (CUdeviceptr)dst, (size_t)n);
		done += n;
	}
	return rc;
}

ti_status ti_cuda_fill(ti_cuda *c, ti_cuda_ptr dst, uint64_t nbytes, const void *pattern, size_t pattern_size,
                       ti_error *err)
{
	if (pattern_size == 0 || pattern_size > TI_CUDA_PATTERN_MAX || (pattern_size & (pattern_size - 1)))
		return TI_FAIL(err, TI_E_INVALID, "bad fill pattern size %zu (want 1, 2, 4, 8 or 16)", pattern_size);
	if (nbytes % pattern_size)
		return TI_FAIL(err, TI_E_INVALID, "cannot fill %llu bytes with a %zu-byte pattern: not a multiple",
		               (unsigned long long)nbytes, pattern_size);
	if (check_request(c, "fill", dst, nbytes, err))
		return err->code;
	if (nbytes == 0)
		return TI_OK;
	const unsigned char *p = pattern;
	/* The shortest period: 1.0 as float64 is not a 4-byte period, 0.0 is a 1-byte one. */
	size_t period = pattern_size;
	while (period > 1 && !memcmp(p, p + period / 2, period / 2))
		period /= 2;

	if (enter(c, err))
		return err->code;
	CUresult rc;
	bool nomem = false;
	if (period == 1) {
		rc = c->drv.cuMemsetD8((CUdeviceptr)dst, p[0], (size_t)nbytes);
	} else if (period == 2 && dst % 2 == 0) {
		unsigned short v; /* host order is the device's: both little endian */
		memcpy(&v, p, 2);
		rc = c->drv.cuMemsetD16((CUdeviceptr)dst, v, (size_t)(nbytes / 2));
	} else if (period == 4 && dst % 4 == 0) {
		unsigned int v;
		memcpy(&v, p, 4);
		rc = c->drv.cuMemsetD32((CUdeviceptr)dst, v, (size_t)(nbytes / 4));
	} else {
		rc = fill_by_doubling(c, dst, nbytes, p, period, &nomem);
	}
	/* The memsets and device copies return before they finish: wait, so that
	 * the fill is done and its errors are reported here. */
	if (rc == CUDA_SUCCESS && !nomem)
		rc = c->drv.cuCtxSynchronize();
	leave(c);
	if (nomem)
		return TI_FAIL(err, TI_E_NOMEM, "cannot allocate a %zu-byte fill block", FILL_BLOCK);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot fill %llu bytes at 0x%llx on cuda:%d",
		                   (unsigned long long)nbytes, (unsigned long long)dst, c->info.index);
	c->stats.bytes_filled += nbytes;
	return TI_OK;
}

ti_status ti_cuda_zero(ti_cuda *c, ti_cuda_ptr dst, uint64_t nbytes, ti_error *err)
{
	static const unsigned char zero = 0;
	return ti_cuda_fill(c, dst, nbytes, &zero, 1, err);
}

ti_status ti_cuda_read(ti_cuda *c, ti_cuda_ptr src, void *host, uint64_t nbytes, ti_error *err)
{
	if (check_request(c, "read", src, nbytes, err))
		return err->code;
	if (nbytes == 0)
		return TI_OK;
	if (enter(c, err))
		return err->code;
	CUresult rc = c->drv.cuMemcpyDtoH(host, (CUdeviceptr)src, (size_t)nbytes);
	leave(c);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot read %llu bytes at 0x%llx on cuda:%d",
		                   (unsigned long long)nbytes, (unsigned long long)src, c->info.index);
	c->stats.bytes_read_back += nbytes;
	return TI_OK;
}

/* ---- streaming upload ---- */

void ti_cuda_upload_abort(ti_cuda *c)
{
	if (!c || !c->uploading)
		return;
	ti_error ignored;
	if (enter(c, &ignored) == TI_OK) {
		(void)staging_drain(c, NULL);
		leave(c);
	}
	c->uploading = false;
}

/* Abandons the upload and passes the status through. */
static ti_status upload_failed(ti_cuda *c, ti_status status)
{
	ti_cuda_upload_abort(c);
	return status;
}

ti_status ti_cuda_upload_begin(ti_cuda *c, ti_cuda_ptr dst, uint64_t nbytes, bool want_checksum, ti_error *err)
{
	if (check_request(c, "upload", dst, nbytes, err))
		return err->code;
	if (enter(c, err))
		return err->code;
	ti_status status = staging_prepare(c, err);
	leave(c);
	if (status)
		return status;
	c->up = (upload){.dst = dst, .total = nbytes, .want_checksum = want_checksum};
	ti_checksum_init(&c->up.checksum);
	c->uploading = true;
	return TI_OK;
}

static ti_status require_upload(const ti_cuda *c, ti_error *err)
{
	if (!c->uploading)
		return TI_FAIL(err, TI_E_INVALID, "no upload in progress on cuda:%d", c->info.index);
	return TI_OK;
}

ti_status ti_cuda_upload_window(ti_cuda *c, void **buf, size_t *cap, ti_error *err)
{
	*buf = NULL;
	*cap = 0;
	if (require_upload(c, err))
		return err->code;
	upload *u = &c->up;
	uint64_t remaining = u->total - u->committed;
	if (remaining == 0)
		return TI_OK;
	staging *s = &c->staging[u->current];
	if (s->busy) {
		/* Its previous copy must finish before the caller writes over it. */
		if (enter(c, err))
			return upload_failed(c, err->code);
		ti_status status = staging_wait(c, u->current, err);
		leave(c);
		if (status)
			return upload_failed(c, status);
	}
	size_t room = c->staging_size - u->filled;
	*buf = s->host + u->filled;
	*cap = remaining < room ? (size_t)remaining : room;
	return TI_OK;
}

/* Queues the current buffer's bytes for the device and moves to the other buffer. */
static ti_status upload_flush(ti_cuda *c, ti_error *err)
{
	upload *u = &c->up;
	staging *s = &c->staging[u->current];
	if (enter(c, err))
		return err->code;
	CUresult rc = c->drv.cuMemcpyHtoDAsync((CUdeviceptr)(u->dst + u->sent), s->host, u->filled, s->stream);
	leave(c);
	if (rc != CUDA_SUCCESS)
		return DRIVER_FAIL(c, err, rc, "cannot copy %zu bytes to 0x%llx on cuda:%d", u->filled,
		                   (unsigned long long)(u->dst + u->sent), c->info.index);
	s->busy = true;
	u->sent += u->filled;
	u->filled = 0;
	u->current ^= 1;
	return TI_OK;
}

ti_status ti_cuda_upload_commit(ti_cuda *c, size_t n, ti_error *err)
{
	if (require_upload(c, err))
		return err->code;
	if (n == 0)
		return TI_OK;
	upload *u = &c->up;
	staging *s = &c->staging[u->current];
	uint64_t remaining = u->total - u->committed;
	size_t room = c->staging_size - u->filled;
	if (s->busy || n > room || n > remaining)
		return upload_failed(c, TI_FAIL(err, TI_E_INVALID,
		                                "cannot commit %zu bytes to an upload: the window holds %zu", n,
		                                s->busy ? (size_t)0 : remaining < room ? (size_t)remaining : room));
	if (u->want_checksum)
		ti_checksum_update(&u->checksum, s->host + u->filled, n);
	u->filled += n;
	u->committed += n;
	if (u->filled == c->staging_size || u->committed == u->total) {
		ti_status status = upload_flush(c, err);
		if (status)
			return upload_failed(c, status);
	}
	return TI_OK;
}

ti_status ti_cuda_upload_put(ti_cuda *c, const void *bytes, size_t n, ti_error *err)
{
	if (require_upload(c, err))
		return err->code;
	if (n > c->up.total - c->up.committed)
		return upload_failed(c, TI_FAIL(err, TI_E_INVALID,
		                                "cannot put %zu bytes: the upload has %llu bytes left", n,
		                                (unsigned long long)(c->up.total - c->up.committed)));
	const unsigned char *from = bytes;
	while (n > 0) {
		void *buf;
		size_t cap;
		if (ti_cuda_upload_window(c, &buf, &cap, err))
			return err->code;
		size_t k = n < cap ? n : cap;
		memcpy(buf, from, k);
		if (ti_cuda_upload_commit(c, k, err))
			return err->code;
		from += k;
		n -= k;
	}
	return TI_OK;
}

ti_status ti_cuda_upload_end(ti_cuda *c, uint64_t *checksum, ti_error *err)
{
	if (checksum)
		*checksum = 0;
	if (require_upload(c, err))
		return err->code;
	upload *u = &c->up;
	if (u->committed != u->total)
		return upload_failed(c, TI_FAIL(err, TI_E_INVALID, "upload ended after %llu of %llu bytes",
		                                (unsigned long long)u->committed, (unsigned long long)u->total));
	if (enter(c, err))
		return upload_failed(c, err->code);
	ti_status status = staging_drain(c, err);
	leave(c);
	c->uploading = false;
	if (status)
		return status;
	c->stats.bytes_uploaded += u->total;
	if (checksum && u->want_checksum)
		*checksum = ti_checksum_final(&u->checksum);
	return TI_OK;
}

/* ---- verification ---- */

ti_status ti_cuda_checksum(ti_cuda *c, ti_cuda_ptr src, uint64_t nbytes, uint64_t *checksum, ti_error *err)
{
	*checksum = 0;
	if (check_request(c, "read back", src, nbytes, err))
		return err->code;
	if (enter(c, err))
		return err->code;
	ti_status status = staging_prepare(c, err);
	ti_checksum sum;
	ti_checksum_init(&sum);
	uint64_t issued = 0, hashed = 0;
	size_t length[2] = {0, 0};
	/* Chunk k goes to buffer k % 2: the copy of one overlaps the hashing of the other. */
	for (int i = 0; status == TI_OK && i < 2 && issued < nbytes; i++) {
		staging *s = &c->staging[i];
		length[i] = nbytes - issued < c->staging_size ? (size_t)(nbytes - issued) : c->staging_size;
		CUresult rc = c->drv.cuMemcpyDtoHAsync(s->host, (CUdeviceptr)(src + issued), length[i], s->stream);
		if (rc != CUDA_SUCCESS)
			status = DRIVER_FAIL(c, err, rc, "cannot read back %zu bytes at 0x%llx on cuda:%d", length[i],
			                     (unsigned long long)(src + issued), c->info.index);
		else
			s->busy = true;
		issued += length[i];
	}
	for (int i = 0; status == TI_OK && hashed < nbytes; i ^= 1) {
		staging *s = &c->staging[i];
		if ((status = staging_wait(c, i, err)) != TI_OK)
			break;
		ti_checksum_update(&sum, s->host, length[i]);
		hashed += length[i];
		if (issued < nbytes) {
			length[i] = nbytes - issued < c->staging_size ? (size_t)(nbytes - issued) : c->staging_size;
			CUresult rc = c->drv.cuMemcpyDtoHAsync(s->host, (CUdeviceptr)(src + issued), length[i],
			                                       s->stream);
			if (rc != CUDA_SUCCESS)
				status = DRIVER_FAIL(c, err, rc, "cannot read back %zu bytes at 0x%llx on cuda:%d",
				                     length[i], (unsigned long long)(src + issued), c->info.index);
			else
				s->busy = true;
			issued += length[i];
		}
	}
	if (status)
		(void)staging_drain(c, NULL);
	leave(c);
	if (status)
		return status;
	c->stats.bytes_read_back += nbytes;
	*checksum = ti_checksum_final(&sum);
	return TI_OK;
}

/* ---- XXH64 (seed 0), after Yann Collet's specification (util/xxh64.h) ---- */

static uint32_t read32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t xxh_merge(uint64_t acc, uint64_t lane)
{
	acc ^= ti_xxh64_round(0, lane);
	return acc * XXH_PRIME1 + XXH_PRIME4;
}

static void xxh_stripe(uint64_t lane[4], const unsigned char *p)
{
	for (int i = 0; i < 4; i++)
		lane[i] = ti_xxh64_round(lane[i], ti_xxh64_read64(p + 8 * i));
}

void ti_checksum_init(ti_checksum *c)
{
	memset(c, 0, sizeof(*c));
	c->lane[0] = XXH_PRIME1 + XXH_PRIME2; /* the seed, 0, plus the specification's offsets */
	c->lane[1] = XXH_PRIME2;
	c->lane[2] = 0;
	c->lane[3] = (uint64_t)0 - XXH_PRIME1;
}

void ti_checksum_update(ti_checksum *c, const void *bytes, size_t n)
{
	const unsigned char *p = bytes;
	if (n == 0)
		return; /* bytes may be NULL */
	c->total += n;
	if (c->buffered) {
		size_t take = 32 - c->buffered < n ? 32 - c->buffered : n;
		memcpy(c->stripe + c->buffered, p, take);
		c->buffered += take;
		p += take;
		n -= take;
		if (c->buffered < 32)
			return;
		xxh_stripe(c->lane, c->stripe);
		c->buffered = 0;
	}
	/* the lanes in registers, not through c: every stripe would store and load them again */
	uint64_t v0 = c->lane[0], v1 = c->lane[1], v2 = c->lane[2], v3 = c->lane[3];
	for (; n >= 32; p += 32, n -= 32) {
		v0 = ti_xxh64_round(v0, ti_xxh64_read64(p));
		v1 = ti_xxh64_round(v1, ti_xxh64_read64(p + 8));
		v2 = ti_xxh64_round(v2, ti_xxh64_read64(p + 16));
		v3 = ti_xxh64_round(v3, ti_xxh64_read64(p + 24));
	}
	c->lane[0] = v0, c->lane[1] = v1, c->lane[2] = v2, c->lane[3] = v3;
	memcpy(c->stripe, p, n);
	c->buffered = n;
}

uint64_t ti_checksum_final(const ti_checksum *c)
{
	uint64_t h;
	if (c->total >= 32) {
		h = ti_xxh64_rotl(c->lane[0], 1) + ti_xxh64_rotl(c->lane[1], 7) + ti_xxh64_rotl(c->lane[2], 12) + ti_xxh64_rotl(c->lane[3], 18);
		for (int i = 0; i < 4; i++)
			h = xxh_merge(h, c->lane[i]);
	} else {
		h = XXH_PRIME5; /* the seed, 0, plus PRIME5 */
	}
	h += c->total;
	const unsigned char *p = c->stripe;
	size_t n = c->buffered;
	for (; n >= 8; p += 8, n -= 8) {
		h ^= ti_xxh64_round(0, ti_xxh64_read64(p));
		h = ti_xxh64_rotl(h, 27) * XXH_PRIME1 + XXH_PRIME4;
	}
	if (n >= 4) {
		h ^= (uint64_t)read32(p) * XXH_PRIME1;
		h = ti_xxh64_rotl(h, 23) * XXH_PRIME2 + XXH_PRIME3;
		p += 4;
		n -= 4;
	}
	for (; n > 0; p++, n--) {
		h ^= *p * XXH_PRIME5;
		h = ti_xxh64_rotl(h, 11) * XXH_PRIME1;
	}
	h ^= h >> 33;
	h *= XXH_PRIME2;
	h ^= h >> 29;
	h *= XXH_PRIME3;
	h ^= h >> 32;
	return h;
}

uint64_t ti_checksum_bytes(const void *bytes, size_t n)
{
	ti_checksum c;
	ti_checksum_init(&c);
	ti_checksum_update(&c, bytes, n);
	return ti_checksum_final(&c);
}
