/*
 * fake_libcuda.c - a CUDA driver made of host memory, for tests on machines
 * without a GPU. Built as a shared object (build/fake_libcuda.so) and loaded
 * by src/materialize/cuda.c through TINSPECT_LIBCUDA, it exports the driver
 * functions tinspect uses with the driver's signatures and error codes.
 *
 * It is strict where the real driver is strict, and adversarial where the
 * driver is allowed to be:
 * - device addresses are malloc'd host memory, filled with 0xAB (uninitialised
 *   memory is not zero); copies and memsets must stay inside one allocation,
 *   D16/D32 memsets must be aligned, device-to-device copies must not overlap
 *   (all CUDA_ERROR_INVALID_VALUE);
 * - every call but the error strings and the version needs cuInit, and every
 *   call that touches memory or streams needs a current context;
 * - an asynchronous copy from page-locked memory (cuMemHostAlloc) does not
 *   happen when queued: it happens when its stream is synchronised (or the
 *   context, or a synchronous call on the legacy stream is made), the latest
 *   moment CUDA allows. A caller that writes over a staging buffer, or reads a
 *   read-back buffer, before waiting gets the wrong bytes, and its test fails.
 *
 * Environment:
 *   FAKE_CUDA_DEVICES=N      devices (default 1; 0 makes cuInit fail with CUDA_ERROR_NO_DEVICE)
 *   FAKE_CUDA_MEMORY=BYTES   each device's memory (default 256 MiB)
 *   FAKE_CUDA_FAIL=SYM[:NTH[:CODE]][,...]  the NTH call (default 1) of SYM returns CODE
 *                            (default 999, CUDA_ERROR_UNKNOWN)
 * Tests read what happened with fake_cuda_counter("NAME"), names below.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef unsigned long long CUdeviceptr;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_UNKNOWN = 999
};

static const struct {
	CUresult code;
	const char *name, *words;
} errors[] = {
	{CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
	{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	{CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

/* ---- what tests can read ---- */

enum counter {
	C_ASYNC_QUEUED,    /* async copies deferred to a synchronisation */
	C_ASYNC_PAGEABLE,  /* async copies from or to memory not from cuMemHostAlloc (done at once) */
	C_MAX_QUEUED,      /* the most copies waiting at once, over all streams */
	C_SYNC_COPIES,     /* cuMemcpyHtoD/DtoH */
	C_DTOD,            /* cuMemcpyDtoD */
	C_MEMSET8, C_MEMSET16, C_MEMSET32,
	C_CTX_SYNC,        /* cuCtxSynchronize */
	C_LIVE_DEVICE,     /* device allocations not freed */
	C_LIVE_HOST,       /* cuMemHostAlloc blocks not freed */
	C_LIVE_STREAMS,
	C_LIVE_CONTEXTS,
	C_CTX_DEPTH,       /* contexts on this thread's stack */
	C_NO_CONTEXT,      /* calls refused for want of a current context */
	C_QUEUED,          /* copies waiting now, over all streams */
	C_COUNT
};
static const char *const counter_names[C_COUNT] = {
	"async_queued", "async_pageable", "max_queued", "sync_copies", "dtod",
	"memset8", "memset16", "memset32", "ctx_sync", "live_device", "live_host",
	"live_streams", "live_contexts", "ctx_depth", "no_context", "queued",
};
static long long counters[C_COUNT];
static long long queued_now(void);

EXPORT long long fake_cuda_counter(const char *name)
{
	counters[C_QUEUED] = queued_now();
	for (int i = 0; i < C_COUNT; i++)
		if (!strcmp(counter_names[i], name))
			return counters[i];
	return -1;
}

/* ---- configuration and failure injection ---- */

static long long env_number(const char *name, long long fallback)
{
	const char *v = getenv(name);
	return v && *v ? strtoll(v, NULL, 10) : fallback;
}

#define MAX_SYMBOLS 64
static struct {
	const char *symbol;
	long long calls;
} call_counts[MAX_SYMBOLS];

/* Counts a call of symbol; returns the code FAKE_CUDA_FAIL asks for on this call, or 0. */
static CUresult injected(const char *symbol)
{
	long long calls = 0;
	for (int i = 0; i < MAX_SYMBOLS; i++) {
		if (!call_counts[i].symbol)
			call_counts[i].symbol = symbol;
		if (!strcmp(call_counts[i].symbol, symbol)) {
			calls = ++call_counts[i].calls;
			break;
		}
	}
	const char *spec = getenv("FAKE_CUDA_FAIL");
	size_t len = strlen(symbol);
	while (spec && *spec) {
		const char *end = strchr(spec, ',');
		size_t n = end ? (size_t)(end - spec) : strlen(spec);
		if (n >= len && !strncmp(spec, symbol, len) && (n == len || spec[len] == ':')) {
			long long nth = 1, code = CUDA_ERROR_UNKNOWN;
			if (n > len) {
				char *rest;
				nth = strtoll(spec + len + 1, &rest, 10);
				if (*rest == ':')
					code = strtoll(rest + 1, NULL, 10);
			}
			if (calls == nth)
				return (CUresult)code;
		}
		spec = end ? end + 1 : NULL;
	}
	return CUDA_SUCCESS;
}

/* ---- state ---- */

static bool initialized;
static int device_count;
static size_t memory_total, memory_used;

struct CUctx_st {
	CUdevice device;
};
#define MAX_DEPTH 16
static CUcontext context_stack[MAX_DEPTH];
static int depth;

typedef struct block {
	uintptr_t ptr;
	size_t size;
} block;
#define MAX_BLOCKS 4096
static block device_blocks[MAX_BLOCKS], host_blocks[MAX_BLOCKS];
static int ndevice, nhost;

enum { HTOD, DTOH };
typedef struct pending {
	int direction;
	unsigned char *host;
	unsigned char *device;
	size_t n;
} pending;
#define MAX_QUEUE 64
struct CUstream_st {
	pending queue[MAX_QUEUE];
	int queued;
	struct CUstream_st *next;
};
static struct CUstream_st *streams; /* live streams, newest first */

static void run(const pending *p)
{
	if (p->direction == HTOD)
		memcpy(p->device, p->host, p->n);
	else
		memcpy(p->host, p->device, p->n);
}

static void drain(CUstream s)
{
	for (int i = 0; i < s->queued; i++)
		run(&s->queue[i]);
	s->queued = 0;
}

static void drain_all(void)
{
	for (CUstream s = streams; s; s = s->next)
		drain(s);
}

static long long queued_now(void)
{
	long long total = 0;
	for (CUstream s = streams; s; s = s->next)
		total += s->queued;
	return total;
}

static void note_queue_length(void)
{
	long long total = queued_now();
	if (total > counters[C_MAX_QUEUED])
		counters[C_MAX_QUEUED] = total;
}

static bool stream_live(CUstream s)
{
	for (CUstream t = streams; t; t = t->next)
		if (t == s)
			return true;
	return false;
}

/* The device block holding [ptr, ptr + n), or NULL. */
static unsigned char *device_range(CUdeviceptr ptr, size_t n)
{
	for (int i = 0; i < ndevice; i++) {
		block *b = &device_blocks[i];
		if (ptr >= b->ptr && ptr - b->ptr < b->size && n <= b->size - (ptr - b->ptr))
			return (unsigned char *)(uintptr_t)ptr;
	}
	return NULL;
}

static bool pinned(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	for (int i = 0; i < nhost; i++) {
		block *b = &host_blocks[i];
		if (a >= b->ptr && a - b->ptr < b->size && n <= b->size - (a - b->ptr))
			return true;
	}
	return false;
}

/* The checks at the top of most calls. */
static CUresult enter(const char *symbol, bool needs_context)
{
	CUresult rc = injected(symbol);
	if (rc)
		return rc;
	if (!initialized)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (needs_context && depth == 0) {
		counters[C_NO_CONTEXT]++;
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	return CUDA_SUCCESS;
}
#define ENTER(needs_context)                                          \
	do {                                                          \
		CUresult rc_ = enter(__func__, (needs_context));      \
		if (rc_)                                              \
			return rc_;                                   \
	} while (0)

/* ---- errors and version ---- */

EXPORT CUresult cuGetErrorString(CUresult error, const char **str)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error) {
			*str = errors[i].words;
			return CUDA_SUCCESS;
		}
	*str = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult error, const char **str)
{
	for (size_t i = 0; i < sizeof(errors) / sizeof(errors[0]); i++)
		if (errors[i].code == error) {
			*str = errors[i].name;
			return CUDA_SUCCESS;
		}
	*str = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
	CUresult rc = injected(__func__);
	if (rc)
		return rc;
	*version = 12040;
	return CUDA_SUCCESS;
}

/* ---- initialisation and devices ---- */

EXPORT CUresult cuInit(unsigned int flags)
{
	CUresult rc = injected(__func__);
	if (rc)
		return rc;
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	device_count = (int)env_number("FAKE_CUDA_DEVICES", 1);
	memory_total = (size_t)env_number("FAKE_CUDA_MEMORY", 256LL << 20);
	if (device_count <= 0)
		return CUDA_ERROR_NO_DEVICE;
	initialized = true;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
	ENTER(false);
	*count = device_count;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	ENTER(false);
	if (ordinal < 0 || ordinal >= device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice device)
{
	ENTER(false);
	if (device < 0 || device >= device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "Fake CUDA Device %d", device);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device)
{
	ENTER(false);
	if (device < 0 || device >= device_count)
		return CUDA_ERROR_INVALID_DEVICE;
	*bytes = memory_total;
	return CUDA_SUCCESS;
}

/* ---- contexts ---- */

EXPORT CUresult cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice device)
{
	ENTER(false);
	if (flags != 0 || device < 0 || device >= device_count)
		return CUDA_ERROR_INVALID_VALUE;
	if (depth == MAX_DEPTH)
		return CUDA_ERROR_UNKNOWN;
	CUcontext c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->device = device;
	context_stack[depth++] = c; /* a new context is made current */
	counters[C_LIVE_CONTEXTS]++;
	counters[C_CTX_DEPTH] = depth;
	*ctx = c;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	ENTER(false);
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	for (int i = 0; i < depth; i++)
		if (context_stack[i] == ctx) {
			memmove(&context_stack[i], &context_stack[i + 1], (size_t)(depth - i - 1) * sizeof(ctx));
			depth--;
			i--;
		}
	free(ctx);
	counters[C_LIVE_CONTEXTS]--;
	counters[C_CTX_DEPTH] = depth;
	if (counters[C_LIVE_CONTEXTS] == 0) {
		/* Destroying the last context releases what was left in it. */
		for (int i = 0; i < ndevice; i++)
			free((void *)device_blocks[i].ptr);
		ndevice = 0;
		memory_used = 0;
		counters[C_LIVE_DEVICE] = 0;
	}
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	ENTER(false);
	if (!ctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (depth == MAX_DEPTH)
		return CUDA_ERROR_UNKNOWN;
	context_stack[depth++] = ctx;
	counters[C_CTX_DEPTH] = depth;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *ctx)
{
	ENTER(false);
	if (depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	CUcontext top = context_stack[--depth];
	counters[C_CTX_DEPTH] = depth;
	if (ctx)
		*ctx = top;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
	ENTER(true);
	drain_all();
	counters[C_CTX_SYNC]++;
	return CUDA_SUCCESS;
}

/* ---- memory ---- */

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
	ENTER(true);
	*free_bytes = memory_total - memory_used;
	*total_bytes = memory_total;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
	ENTER(true);
	if (bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes > memory_total - memory_used || ndevice == MAX_BLOCKS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *p = malloc(bytes);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(p, 0xAB, bytes);
	device_blocks[ndevice++] = (block){(uintptr_t)p, bytes};
	memory_used += bytes;
	counters[C_LIVE_DEVICE]++;
	*ptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr)
{
	ENTER(true);
	drain_all();
	for (int i = 0; i < ndevice; i++)
		if (device_blocks[i].ptr == ptr) {
			free((void *)device_blocks[i].ptr);
			memory_used -= device_blocks[i].size;
			device_blocks[i] = device_blocks[--ndevice];
			counters[C_LIVE_DEVICE]--;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemHostAlloc(void **ptr, size_t bytes, unsigned int flags)
{
	ENTER(true);
	if (bytes == 0 || flags > 7)
		return CUDA_ERROR_INVALID_VALUE;
	if (nhost == MAX_BLOCKS)
		return CUDA_ERROR_OUT_OF_MEMORY;
	void *p = malloc(bytes);
	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(p, 0xCD, bytes);
	host_blocks[nhost++] = (block){(uintptr_t)p, bytes};
	counters[C_LIVE_HOST]++;
	*ptr = p;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFreeHost(void *ptr)
{
	ENTER(true);
	drain_all();
	for (int i = 0; i < nhost; i++)
		if (host_blocks[i].ptr == (uintptr_t)ptr) {
			free(ptr);
			host_blocks[i] = host_blocks[--nhost];
			counters[C_LIVE_HOST]--;
			return CUDA_SUCCESS;
		}
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- copies ---- */

/* Synchronous calls run on the legacy default stream, which waits for every
 * blocking stream: the queues drain first. */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes)
{
	ENTER(true);
	unsigned char *d = device_range(dst, bytes);
	if (!d || !src)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	memcpy(d, src, bytes);
	counters[C_SYNC_COPIES]++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes)
{
	ENTER(true);
	unsigned char *s = device_range(src, bytes);
	if (!s || !dst)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	memcpy(dst, s, bytes);
	counters[C_SYNC_COPIES]++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes)
{
	ENTER(true);
	unsigned char *d = device_range(dst, bytes), *s = device_range(src, bytes);
	if (!d || !s)
		return CUDA_ERROR_INVALID_VALUE;
	if (bytes && d < s + bytes && s < d + bytes)
		return CUDA_ERROR_INVALID_VALUE; /* overlapping copies are undefined on the device */
	drain_all();
	memcpy(d, s, bytes);
	counters[C_DTOD]++;
	return CUDA_SUCCESS;
}

static CUresult copy_async(int direction, unsigned char *host, CUdeviceptr dev, size_t bytes, CUstream stream)
{
	unsigned char *d = device_range(dev, bytes);
	if (!d || !host)
		return CUDA_ERROR_INVALID_VALUE;
	if (stream && !stream_live(stream))
		return CUDA_ERROR_INVALID_HANDLE;
	pending p = {direction, host, d, bytes};
	if (!stream || !pinned(host, bytes)) {
		/* Pageable memory, or the legacy stream: the copy is done on return. */
		if (stream)
			drain(stream);
		else
			drain_all();
		run(&p);
		counters[C_ASYNC_PAGEABLE] += !pinned(host, bytes);
		return CUDA_SUCCESS;
	}
	if (stream->queued == MAX_QUEUE) {
		/* A full queue runs its oldest copy: still in order. */
		run(&stream->queue[0]);
		memmove(&stream->queue[0], &stream->queue[1], (MAX_QUEUE - 1) * sizeof(pending));
		stream->queued--;
	}
	stream->queue[stream->queued++] = p;
	counters[C_ASYNC_QUEUED]++;
	note_queue_length();
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t bytes, CUstream stream)
{
	ENTER(true);
	return copy_async(HTOD, (unsigned char *)(uintptr_t)src, dst, bytes, stream);
}

EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t bytes, CUstream stream)
{
	ENTER(true);
	return copy_async(DTOH, dst, src, bytes, stream);
}

/* ---- memsets ---- */

EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count)
{
	ENTER(true);
	unsigned char *d = device_range(dst, count);
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	memset(d, value, count);
	counters[C_MEMSET8]++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short value, size_t count)
{
	ENTER(true);
	if (dst % 2 || count > SIZE_MAX / 2)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned char *d = device_range(dst, count * 2);
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	for (size_t i = 0; i < count; i++)
		memcpy(d + 2 * i, &value, 2);
	counters[C_MEMSET16]++;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count)
{
	ENTER(true);
	if (dst % 4 || count > SIZE_MAX / 4)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned char *d = device_range(dst, count * 4);
	if (!d)
		return CUDA_ERROR_INVALID_VALUE;
	drain_all();
	for (size_t i = 0; i < count; i++)
		memcpy(d + 4 * i, &value, 4);
	counters[C_MEMSET32]++;
	return CUDA_SUCCESS;
}

/* ---- streams ---- */

EXPORT CUresult cuStreamCreate(CUstream *stream, unsigned int flags)
{
	ENTER(true);
	if (flags > 1)
		return CUDA_ERROR_INVALID_VALUE;
	CUstream s = calloc(1, sizeof(*s));
	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->next = streams;
	streams = s;
	counters[C_LIVE_STREAMS]++;
	*stream = s;
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream stream)
{
	ENTER(true);
	if (!stream) {
		drain_all();
		return CUDA_SUCCESS;
	}
	if (!stream_live(stream))
		return CUDA_ERROR_INVALID_HANDLE;
	drain(stream);
	return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream stream)
{
	ENTER(true);
	if (!stream || !stream_live(stream))
		return CUDA_ERROR_INVALID_HANDLE;
	drain(stream); /* queued work still completes */
	for (CUstream *link = &streams; *link; link = &(*link)->next)
		if (*link == stream) {
			*link = stream->next;
			break;
		}
	free(stream);
	counters[C_LIVE_STREAMS]--;
	return CUDA_SUCCESS;
}
