/*
 * test_cuda.c - the CUDA driver layer: loading, device memory, fills, streamed
 * uploads and read-back checksums.
 *
 * Most tests run against tests/unit/fake/fake_libcuda.c, a driver made of host
 * memory that defers every asynchronous copy to the latest moment CUDA allows
 * (so reusing a staging buffer too early shows as wrong bytes), checks every
 * range and counts what was called. It is found at $TINSPECT_TEST_FAKE_LIBCUDA
 * or build/fake_libcuda.so. The tests named on_a_real_gpu use libcuda.so.1 and
 * skip where there is none.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "tinspect/cuda.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define EXPECT_U64(got, want)                                                                       \
	do {                                                                                        \
		uint64_t got_ = (got), want_ = (want);                                              \
		cr_expect(got_ == want_, "%s: got 0x%016" PRIx64 ", want 0x%016" PRIx64, #got, got_, \
		          want_);                                                                   \
	} while (0)

static ti_error err;
static ti_cuda *cuda;

static void teardown(void)
{
	ti_cuda_close(cuda);
	cuda = NULL;
}

static const char *fake_path(void)
{
	const char *p = getenv("TINSPECT_TEST_FAKE_LIBCUDA");
	return p && *p ? p : "build/fake_libcuda.so";
}

static void use_fake(void)
{
	cr_assert(access(fake_path(), R_OK) == 0, "the fake driver %s is missing: make build/fake_libcuda.so",
	          fake_path());
	setenv(TI_CUDA_LIBRARY_ENV, fake_path(), 1);
}

static void open_fake(void)
{
	use_fake();
	ASSERT_STATUS(ti_cuda_open(0, &cuda, &err), TI_OK, err);
}

/* What the fake driver counted (the loader hands us the copy cuda.c loaded). */
static long long counter(const char *name)
{
	void *lib = dlopen(fake_path(), RTLD_NOW | RTLD_LOCAL);
	cr_assert(lib != NULL, "cannot load %s: %s", fake_path(), dlerror());
	void *sym = dlsym(lib, "fake_cuda_counter");
	cr_assert(sym != NULL, "%s has no fake_cuda_counter", fake_path());
	long long (*fn)(const char *);
	memcpy(&fn, &sym, sizeof(sym));
	long long value = fn(name);
	dlclose(lib);
	return value;
}

/* Bytes that differ at every offset and with the seed. */
static void generate(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(((uint64_t)(i + seed) * 2654435761u) >> 13);
}

/* The first offset where a and b differ, or -1. */
static long long first_difference(const unsigned char *a, const unsigned char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (long long)i;
	return -1;
}

/* The fake's device addresses are host memory: tests may look and poke. */
static unsigned char *fake_bytes(ti_cuda_ptr p)
{
	return (unsigned char *)(uintptr_t)p;
}

/* ---- checksums ---- */

/* Criterion copies parameters into another process: rows hold their text, not pointers. */
typedef struct checksum_row {
	char text[72];
	uint64_t want;
} checksum_row;

/* Expected values from the reference library (libxxhash 0.8.1, XXH64 seed 0). */
static const checksum_row checksum_rows[] = {
	{"", 0xef46db3751d8e999ULL},
	{"a", 0xd24ec4f1a98c6e5bULL},
	{"abc", 0x44bc2cf5ad770999ULL},
	{"abcd", 0xde0327b0d25d92ccULL},
	{"abcdefghijklm", 0x934adbc0ebc51325ULL},                        /* 8 + 4 + 1 in the tail */
	{"0123456789abcdefghijklmnopqrstuv", 0xbf7c9dbe16b5c6e2ULL},   /* one stripe */
	{"0123456789abcdefghijklmnopqrstuvw", 0xe97423e605e2f3b4ULL},  /* a stripe and a byte */
	{"The quick brown fox jumps over the lazy dog", 0x0b242d361fda71bcULL},
	{"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!?", 0xc02a83e75f3ed6edULL},
};

ParameterizedTestParameters(checksum, is_xxh64_with_seed_zero)
{
	return cr_make_param_array(checksum_row, checksum_rows, sizeof(checksum_rows) / sizeof(checksum_rows[0]));
}

ParameterizedTest(const checksum_row *r, checksum, is_xxh64_with_seed_zero)
{
	EXPECT_U64(ti_checksum_bytes(r->text, strlen(r->text)), r->want);
}

Test(checksum, does_not_depend_on_how_the_bytes_are_split)
{
	enum { N = 100003 };
	unsigned char *data = malloc(N);
	cr_assert(data);
	for (size_t i = 0; i < N; i++)
		data[i] = (unsigned char)(((uint64_t)i * 2654435761u) >> 13);
	const uint64_t want = 0x3b98e4b47391ed90ULL; /* libxxhash on the same bytes */
	EXPECT_U64(ti_checksum_bytes(data, N), want);
	static const size_t pieces[] = {1, 3, 31, 32, 33, 64, 4095, 7};
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		ti_checksum c;
		ti_checksum_init(&c);
		for (size_t off = 0; off < N; off += pieces[k])
			ti_checksum_update(&c, data + off, N - off < pieces[k] ? N - off : pieces[k]);
		ti_checksum_update(&c, NULL, 0);
		uint64_t got = ti_checksum_final(&c);
		cr_expect(got == want, "in pieces of %zu: got 0x%016" PRIx64 ", want 0x%016" PRIx64, pieces[k],
		          got, want);
	}
	free(data);
}

/* ---- opening: every way CUDA can be missing ---- */

Test(cuda_open, reports_a_missing_driver_library)
{
	setenv(TI_CUDA_LIBRARY_ENV, "/nonexistent/libcuda.so.1", 1);
	ti_cuda *c = (ti_cuda *)(uintptr_t)1; /* must be reset to NULL */
	EXPECT_STATUS(ti_cuda_open(0, &c, &err), TI_E_IO, err);
	cr_expect(c == NULL, "a failed open left a handle");
	EXPECT_CONTAINS(err.message, "cannot load the CUDA driver: /nonexistent/libcuda.so.1");
	EXPECT_CONTAINS(err.message, "No such file");
}

Test(cuda_open, reports_a_library_that_is_not_a_cuda_driver)
{
	setenv(TI_CUDA_LIBRARY_ENV, "libm.so.6", 1);
	EXPECT_STATUS(ti_cuda_open(0, &cuda, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "the CUDA driver 'libm.so.6' lacks 'cuGetErrorString' (too old, or not a CUDA driver)");
}

Test(cuda_open, reports_a_failed_initialisation_in_the_drivers_words)
{
	use_fake();
	setenv("FAKE_CUDA_DEVICES", "0", 1);
	EXPECT_STATUS(ti_cuda_open(0, &cuda, &err), TI_E_IO, err);
	EXPECT_STR(err.message,
	           "cannot initialise the CUDA driver: no CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE)");
}

typedef struct device_row {
	char devices[4];
	int index;
	char message[64];
} device_row;

static const device_row device_rows[] = {
	{"1", 1, "no device cuda:1 (the driver sees 1 device)"},
	{"2", 2, "no device cuda:2 (the driver sees 2 devices)"},
	{"3", 7, "no device cuda:7 (the driver sees 3 devices)"},
};

ParameterizedTestParameters(cuda_open, reports_a_device_past_the_count)
{
	return cr_make_param_array(device_row, device_rows, sizeof(device_rows) / sizeof(device_rows[0]));
}

ParameterizedTest(const device_row *r, cuda_open, reports_a_device_past_the_count)
{
	use_fake();
	setenv("FAKE_CUDA_DEVICES", r->devices, 1);
	EXPECT_STATUS(ti_cuda_open(r->index, &cuda, &err), TI_E_IO, err);
	EXPECT_STR(err.message, r->message);
	EXPECT_INT(counter("live_contexts"), 0);
}

Test(cuda_open, refuses_a_negative_device_index)
{
	use_fake();
	EXPECT_STATUS(ti_cuda_open(-1, &cuda, &err), TI_E_INVALID, err);
}

Test(cuda_open, counts_a_context_that_cannot_be_created_as_not_available)
{
	use_fake();
	setenv("FAKE_CUDA_FAIL", "cuCtxCreate_v2:1:2", 1);
	EXPECT_STATUS(ti_cuda_open(0, &cuda, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "cannot create a context on cuda:0: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
	EXPECT_INT(counter("live_contexts"), 0);
}

Test(cuda_open, names_an_unknown_driver_error_by_number)
{
	use_fake();
	setenv("FAKE_CUDA_FAIL", "cuDeviceGetName:1:12345", 1);
	EXPECT_STATUS(ti_cuda_open(0, &cuda, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "cannot query device cuda:0: CUDA error 12345");
}

Test(cuda_open, describes_the_device_and_leaves_no_context_current, .fini = teardown)
{
	use_fake();
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	ASSERT_STATUS(ti_cuda_open(1, &cuda, &err), TI_OK, err);
	const ti_cuda_info *info = ti_cuda_device_info(cuda);
	EXPECT_INT(info->index, 1);
	EXPECT_STR(info->name, "Fake CUDA Device 1");
	EXPECT_INT(info->total_bytes, 256 << 20);
	EXPECT_INT(info->driver_version, 12040);
	EXPECT_STR(info->library, fake_path());
	EXPECT_INT(counter("live_contexts"), 1);
	EXPECT_INT(counter("ctx_depth"), 0);
	ti_cuda_close(cuda);
	cuda = NULL;
	EXPECT_INT(counter("live_contexts"), 0);
}

/* ---- device memory ---- */

Test(cuda_memory, reports_the_drivers_figures_around_an_allocation, .init = open_fake, .fini = teardown)
{
	uint64_t free_before, total, free_after, total_after;
	ASSERT_STATUS(ti_cuda_mem_info(cuda, &free_before, &total, &err), TI_OK, err);
	EXPECT_INT(total, 256 << 20);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 3 << 20, &p, &err), TI_OK, err);
	cr_expect(p != 0);
	ASSERT_STATUS(ti_cuda_mem_info(cuda, &free_after, &total_after, &err), TI_OK, err);
	EXPECT_INT(free_before - free_after, 3 << 20);
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_allocated, 3 << 20);
	ASSERT_STATUS(ti_cuda_free(cuda, p, &err), TI_OK, err);
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_allocated, 0);
	EXPECT_INT(ti_cuda_get_stats(cuda)->peak_allocated, 3 << 20);
	EXPECT_INT(counter("live_device"), 0);
	EXPECT_INT(counter("ctx_depth"), 0);
	EXPECT_INT(counter("no_context"), 0);
}

Test(cuda_memory, gives_no_address_for_zero_bytes, .init = open_fake, .fini = teardown)
{
	ti_cuda_ptr p = 1;
	EXPECT_STATUS(ti_cuda_alloc(cuda, 0, &p, &err), TI_OK, err);
	EXPECT_INT(p, 0);
	EXPECT_STATUS(ti_cuda_free(cuda, 0, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_zero(cuda, 0, 0, &err), TI_OK, err);
	uint64_t sum;
	EXPECT_STATUS(ti_cuda_checksum(cuda, 0, 0, &sum, &err), TI_OK, err);
	EXPECT_U64(sum, 0xef46db3751d8e999ULL);
	EXPECT_INT(counter("live_device"), 0);
}

Test(cuda_memory, reports_running_out_of_device_memory, .fini = teardown)
{
	use_fake();
	setenv("FAKE_CUDA_MEMORY", "1048576", 1);
	ASSERT_STATUS(ti_cuda_open(0, &cuda, &err), TI_OK, err);
	ti_cuda_ptr p;
	EXPECT_STATUS(ti_cuda_alloc(cuda, 2 << 20, &p, &err), TI_E_NOMEM, err);
	EXPECT_STR(err.message, "cannot allocate 2097152 bytes on cuda:0: out of memory (CUDA_ERROR_OUT_OF_MEMORY)");
	EXPECT_INT(p, 0);
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_allocated, 0);
}

Test(cuda_memory, frees_only_the_start_of_a_live_allocation, .init = open_fake, .fini = teardown)
{
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 4096, &p, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_free(cuda, p + 16, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "not an allocation");
	EXPECT_STATUS(ti_cuda_free(cuda, p, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_free(cuda, p, &err), TI_E_INVALID, err);
	EXPECT_INT(counter("live_device"), 0);
}

Test(cuda_memory, refuses_ranges_outside_one_allocation, .init = open_fake, .fini = teardown)
{
	ti_cuda_ptr a, b;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 4096, &a, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_alloc(cuda, 4096, &b, &err), TI_OK, err);
	unsigned char host[8192];
	uint64_t sum;
	EXPECT_STATUS(ti_cuda_zero(cuda, a, 4097, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "cannot fill 4097 bytes at 0x");
	EXPECT_CONTAINS(err.message, "not inside one allocation");
	EXPECT_STATUS(ti_cuda_zero(cuda, a + 4096, 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_zero(cuda, a - 1, 2, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_zero(cuda, UINT64_MAX - 1, 4, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_read(cuda, b + 4000, host, 200, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_checksum(cuda, a + 1, 4096, &sum, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_upload_begin(cuda, b + 1, 4096, false, &err), TI_E_INVALID, err);
	EXPECT_INT(counter("memset8") + counter("sync_copies") + counter("async_queued"), 0);
	/* The edges themselves are fine. */
	EXPECT_STATUS(ti_cuda_zero(cuda, a + 4095, 1, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_read(cuda, b, host, 4096, &err), TI_OK, err);
}

Test(cuda_memory, finds_allocations_made_and_freed_in_any_order, .init = open_fake, .fini = teardown)
{
	enum { N = 60 };
	ti_cuda_ptr p[N + N / 2];
	uint64_t size[N + N / 2];
	for (int i = 0; i < N; i++) {
		size[i] = 64 + 48 * (uint64_t)(i % 7);
		ASSERT_STATUS(ti_cuda_alloc(cuda, size[i], &p[i], &err), TI_OK, err);
	}
	for (int i = 0; i < N; i += 2) /* the allocator reuses these holes below later blocks */
		ASSERT_STATUS(ti_cuda_free(cuda, p[i], &err), TI_OK, err);
	for (int i = N; i < N + N / 2; i++) {
		size[i] = 64;
		ASSERT_STATUS(ti_cuda_alloc(cuda, size[i], &p[i], &err), TI_OK, err);
	}
	uint64_t live = 0;
	for (int i = 0; i < N + N / 2; i++) {
		if (i < N && i % 2 == 0)
			continue; /* freed */
		EXPECT_STATUS(ti_cuda_zero(cuda, p[i], size[i], &err), TI_OK, err);
		EXPECT_STATUS(ti_cuda_zero(cuda, p[i], size[i] + 1, &err), TI_E_INVALID, err);
		live += size[i];
	}
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_allocated, live);
}

/* ---- fills ---- */

typedef struct fill_row {
	char what[40];
	unsigned char pattern[16];
	size_t size;
	char method[12]; /* the fake's counter that the fill must use */
} fill_row;

/* Bit patterns little endian, as torch stores them. */
static const fill_row fill_rows[] = {
	{"zeros float32", {0, 0, 0, 0}, 4, "memset8"},
	{"ones int8", {1}, 1, "memset8"},
	{"full int16 -1", {0xff, 0xff}, 2, "memset8"},
	{"ones float16", {0x00, 0x3c}, 2, "memset16"},
	{"ones bfloat16", {0x80, 0x3f}, 2, "memset16"},
	{"ones float32", {0x00, 0x00, 0x80, 0x3f}, 4, "memset32"},
	{"ones int32", {1, 0, 0, 0}, 4, "memset32"},
	{"full int64 0x0101010101010101", {1, 1, 1, 1, 1, 1, 1, 1}, 8, "memset8"},
	{"full int64 0x0000000100000001", {1, 0, 0, 0, 1, 0, 0, 0}, 8, "memset32"},
	{"ones float64", {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 8, "dtod"},
	{"ones int64", {1, 0, 0, 0, 0, 0, 0, 0}, 8, "dtod"},
	{"ones complex64", {0x00, 0x00, 0x80, 0x3f, 0, 0, 0, 0}, 8, "dtod"},
	{"ones complex128", {0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0, 0, 0, 0, 0, 0, 0, 0}, 16, "dtod"},
};

ParameterizedTestParameters(cuda_fill, writes_the_pattern_on_the_device_and_nothing_else)
{
	return cr_make_param_array(fill_row, fill_rows, sizeof(fill_rows) / sizeof(fill_rows[0]));
}

ParameterizedTest(const fill_row *r, cuda_fill, writes_the_pattern_on_the_device_and_nothing_else,
                  .init = open_fake, .fini = teardown)
{
	/* Longer than the fill block, and not a power of two: several doublings and a tail. */
	const uint64_t n = 300000, guard = 16;
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, n + 2 * guard, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_fill(cuda, p + guard, n, r->pattern, r->size, &err), TI_OK, err);
	unsigned char *back = malloc(n + 2 * guard);
	cr_assert(back);
	ASSERT_STATUS(ti_cuda_read(cuda, p, back, n + 2 * guard, &err), TI_OK, err);
	for (uint64_t i = 0; i < guard; i++) {
		cr_expect(back[i] == 0xAB, "%s: byte %" PRIu64 " before the fill changed", r->what, i);
		cr_expect(back[guard + n + i] == 0xAB, "%s: byte %" PRIu64 " after the fill changed", r->what, i);
	}
	long long wrong = -1;
	for (uint64_t i = 0; i < n && wrong < 0; i++)
		if (back[guard + i] != r->pattern[i % r->size])
			wrong = (long long)i;
	cr_expect(wrong == -1, "%s: byte %lld is 0x%02x, want 0x%02x", r->what, wrong,
	          wrong >= 0 ? back[guard + wrong] : 0, wrong >= 0 ? r->pattern[wrong % r->size] : 0);
	cr_expect(counter(r->method) >= 1, "%s: not filled with %s", r->what, r->method);
	EXPECT_INT(counter("ctx_sync"), 1); /* waited for the device */
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_filled, n);
	EXPECT_INT(counter("ctx_depth"), 0);
	free(back);
}

Test(cuda_fill, falls_back_to_copies_for_a_misaligned_destination, .init = open_fake, .fini = teardown)
{
	static const unsigned char one[4] = {0x00, 0x00, 0x80, 0x3f};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 1002, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_fill(cuda, p + 2, 1000, one, 4, &err), TI_OK, err);
	EXPECT_INT(counter("memset32"), 0);
	unsigned char *d = fake_bytes(p);
	for (int i = 0; i < 1000; i++)
		cr_expect(d[2 + i] == one[i % 4], "byte %d is 0x%02x, want 0x%02x", i, d[2 + i], one[i % 4]);
}

Test(cuda_fill, refuses_bad_patterns, .init = open_fake, .fini = teardown)
{
	static const unsigned char pattern[32] = {1, 2, 3};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 96, &p, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_fill(cuda, p, 96, pattern, 3, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "bad fill pattern size 3 (want 1, 2, 4, 8 or 16)");
	EXPECT_STATUS(ti_cuda_fill(cuda, p, 96, pattern, 0, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_fill(cuda, p, 96, pattern, 32, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_fill(cuda, p, 90, pattern, 4, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "cannot fill 90 bytes with a 4-byte pattern: not a multiple");
}

Test(cuda_fill, reports_a_failed_memset_in_the_drivers_words, .init = open_fake, .fini = teardown)
{
	setenv("FAKE_CUDA_FAIL", "cuMemsetD32_v2", 1);
	static const unsigned char one[4] = {0x00, 0x00, 0x80, 0x3f};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 64, &p, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_fill(cuda, p, 64, one, 4, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "cannot fill 64 bytes at 0x");
	EXPECT_CONTAINS(err.message, "on cuda:0: unknown error (CUDA_ERROR_UNKNOWN)");
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_filled, 0);
	EXPECT_INT(counter("ctx_depth"), 0);
}

/* ---- streamed uploads ---- */

/*
 * Uploads n generated bytes in uneven pieces into the middle of a zeroed
 * allocation, then checks them three ways: the upload's checksum, a plain
 * read, and the read-back checksum.
 */
static void expect_round_trip(ti_cuda *c, uint64_t n, unsigned seed)
{
	const uint64_t guard = 256;
	unsigned char *data = malloc(n + 1), *back = malloc(n + 2 * guard);
	cr_assert(data && back);
	generate(data, n, seed);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(c, n + 2 * guard, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_zero(c, p, n + 2 * guard, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(c, p + guard, n, true, &err), TI_OK, err);
	static const size_t pieces[] = {1, 7, 4095, 4096, 4097, 100000, 3, 1 << 20};
	size_t k = 0;
	for (uint64_t off = 0; off < n; k++) {
		size_t m = pieces[k % 8] < n - off ? pieces[k % 8] : (size_t)(n - off);
		ASSERT_STATUS(ti_cuda_upload_put(c, data + off, m, &err), TI_OK, err);
		off += m;
	}
	uint64_t sum = 0, back_sum = 0;
	ASSERT_STATUS(ti_cuda_upload_end(c, &sum, &err), TI_OK, err);
	EXPECT_U64(sum, ti_checksum_bytes(data, n));
	ASSERT_STATUS(ti_cuda_read(c, p, back, n + 2 * guard, &err), TI_OK, err);
	EXPECT_INT(first_difference(back + guard, data, n), -1);
	for (uint64_t i = 0; i < guard; i++)
		cr_expect(back[i] == 0 && back[guard + n + i] == 0, "a byte beside the upload changed");
	ASSERT_STATUS(ti_cuda_checksum(c, p + guard, n, &back_sum, &err), TI_OK, err);
	EXPECT_U64(back_sum, sum);
	ASSERT_STATUS(ti_cuda_free(c, p, &err), TI_OK, err);
	free(data);
	free(back);
}

Test(cuda_upload, places_every_byte_across_many_staging_buffers, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	const uint64_t n = 4096 * 7 + 123;
	expect_round_trip(cuda, n, 1);
	/* One copy per buffer's worth, and two in flight at once: reading overlapped copying. */
	EXPECT_INT(counter("async_queued"), 8 /* upload */ + 8 /* read-back */);
	EXPECT_INT(counter("max_queued"), 2);
	EXPECT_INT(counter("async_pageable"), 0);
	const ti_cuda_stats *s = ti_cuda_get_stats(cuda);
	cr_expect(s->pinned, "staging is not page-locked");
	EXPECT_INT(s->bytes_uploaded, n);
	EXPECT_INT(s->bytes_read_back, 2 * n + 512);
	EXPECT_INT(counter("ctx_depth"), 0);
	EXPECT_INT(counter("no_context"), 0);
}

typedef struct size_row {
	uint64_t n;
} size_row;

/* Around the 4 KiB buffer size: a byte short, exact, a byte over, two exact. */
static const size_row size_rows[] = {{1}, {4095}, {4096}, {4097}, {8192}, {8193}, {3 * 4096 - 1}};

ParameterizedTestParameters(cuda_upload, handles_sizes_at_the_buffer_edges)
{
	return cr_make_param_array(size_row, size_rows, sizeof(size_rows) / sizeof(size_rows[0]));
}

ParameterizedTest(const size_row *r, cuda_upload, handles_sizes_at_the_buffer_edges, .init = open_fake,
                  .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	expect_round_trip(cuda, r->n, (unsigned)r->n);
	EXPECT_INT(counter("async_queued"), 2 * ((r->n + 4095) / 4096));
}

Test(cuda_upload, lets_the_caller_read_straight_into_the_staging_buffer, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	enum { N = 20000 };
	unsigned char data[N];
	generate(data, N, 42);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, N, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, N, false, &err), TI_OK, err);
	size_t off = 0, short_reads = 0;
	while (off < N) {
		void *buf;
		size_t cap;
		ASSERT_STATUS(ti_cuda_upload_window(cuda, &buf, &cap, &err), TI_OK, err);
		cr_assert(cap > 0 && cap <= 4096 && cap <= N - off, "window of %zu bytes at %zu", cap, off);
		size_t got = cap > 1000 ? cap - 999 : cap; /* a short read, as fread may give */
		short_reads += got < cap;
		memcpy(buf, data + off, got);
		ASSERT_STATUS(ti_cuda_upload_commit(cuda, got, &err), TI_OK, err);
		off += got;
	}
	void *buf;
	size_t cap;
	ASSERT_STATUS(ti_cuda_upload_window(cuda, &buf, &cap, &err), TI_OK, err);
	EXPECT_INT(cap, 0);
	uint64_t sum = 1;
	ASSERT_STATUS(ti_cuda_upload_end(cuda, &sum, &err), TI_OK, err);
	EXPECT_U64(sum, 0); /* no checksum was asked for */
	cr_expect(short_reads > 0);
	EXPECT_INT(first_difference(fake_bytes(p), data, N), -1);
}

Test(cuda_upload, of_zero_bytes_succeeds, .init = open_fake, .fini = teardown)
{
	uint64_t sum;
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, 0, 0, true, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, NULL, 0, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, &sum, &err), TI_OK, err);
	EXPECT_U64(sum, 0xef46db3751d8e999ULL);
	EXPECT_INT(counter("async_queued"), 0);
}

Test(cuda_upload, refuses_more_bytes_than_announced_and_abandons, .init = open_fake, .fini = teardown)
{
	unsigned char data[100] = {0};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 100, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 50, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 40, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_upload_put(cuda, data, 11, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "cannot put 11 bytes: the upload has 10 bytes left");
	EXPECT_STATUS(ti_cuda_upload_put(cuda, data, 1, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "no upload in progress on cuda:0");
	/* The handle is ready for the next upload. */
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 100, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 100, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_OK, err);
}

Test(cuda_upload, that_ends_early_fails_and_abandons, .init = open_fake, .fini = teardown)
{
	unsigned char data[100] = {0};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 100, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 100, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 99, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "upload ended after 99 of 100 bytes");
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_uploaded, 0);
	EXPECT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_E_INVALID, err);
}

Test(cuda_upload, refuses_a_commit_larger_than_the_window, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 10000, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 10000, false, &err), TI_OK, err);
	void *buf;
	size_t cap;
	ASSERT_STATUS(ti_cuda_upload_window(cuda, &buf, &cap, &err), TI_OK, err);
	EXPECT_INT(cap, 4096);
	EXPECT_STATUS(ti_cuda_upload_commit(cuda, 4097, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "cannot commit 4097 bytes to an upload: the window holds 4096");
}

Test(cuda_upload, refuses_a_commit_without_a_window, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 10000, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 10000, false, &err), TI_OK, err);
	for (int i = 0; i < 2; i++) {
		void *buf;
		size_t cap;
		ASSERT_STATUS(ti_cuda_upload_window(cuda, &buf, &cap, &err), TI_OK, err);
		ASSERT_STATUS(ti_cuda_upload_commit(cuda, cap, &err), TI_OK, err);
	}
	/* The first buffer's copy may still be running: bytes need a window first. */
	EXPECT_STATUS(ti_cuda_upload_commit(cuda, 10, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "cannot commit 10 bytes to an upload: the window holds 0");
}

Test(cuda_upload, keeps_other_operations_waiting_until_it_ends, .init = open_fake, .fini = teardown)
{
	unsigned char data[64] = {0};
	ti_cuda_ptr p, q;
	uint64_t sum;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 64, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 64, false, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_alloc(cuda, 64, &q, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "cannot allocate on cuda:0 while an upload is in progress");
	EXPECT_STATUS(ti_cuda_free(cuda, p, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_zero(cuda, p, 64, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_read(cuda, p, data, 64, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_checksum(cuda, p, 64, &sum, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_set_staging_size(cuda, 8192, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_upload_begin(cuda, p, 64, false, &err), TI_E_INVALID, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 64, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_free(cuda, p, &err), TI_OK, err);
}

Test(cuda_upload, reports_a_failed_copy_in_the_drivers_words, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoDAsync_v2:3", 1);
	enum { N = 5 * 4096 };
	static unsigned char data[N];
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, N, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, N, true, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_upload_put(cuda, data, N, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "cannot copy 4096 bytes to 0x");
	EXPECT_CONTAINS(err.message, "on cuda:0: unknown error (CUDA_ERROR_UNKNOWN)");
	EXPECT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_E_INVALID, err);
	EXPECT_INT(counter("ctx_depth"), 0);
	EXPECT_INT(counter("queued"), 0); /* the abandoned copies were waited for */
	/* The next upload works. */
	generate(data, N, 9);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, N, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, N, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_OK, err);
	EXPECT_INT(first_difference(fake_bytes(p), data, N), -1);
}

Test(cuda_upload, reports_a_failed_wait, .init = open_fake, .fini = teardown)
{
	setenv("FAKE_CUDA_FAIL", "cuStreamSynchronize:1:999", 1);
	unsigned char data[64] = {0};
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 64, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 64, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 64, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "copy between host and cuda:0 failed: unknown error (CUDA_ERROR_UNKNOWN)");
	EXPECT_INT(ti_cuda_get_stats(cuda)->bytes_uploaded, 0);
}

Test(cuda_upload, still_places_every_byte_without_pinned_memory, .init = open_fake, .fini = teardown)
{
	setenv("FAKE_CUDA_FAIL", "cuMemHostAlloc:1:2", 1);
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	expect_round_trip(cuda, 3 * 4096 + 5, 3);
	cr_expect(!ti_cuda_get_stats(cuda)->pinned, "one staging buffer is plain memory, yet pinned is set");
	cr_expect(counter("async_pageable") > 0);
	EXPECT_INT(counter("live_host"), 1);
}

Test(cuda_upload, closing_in_the_middle_releases_everything, .init = open_fake)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	static unsigned char data[3 * 4096];
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, sizeof(data), &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, sizeof(data), false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 2 * 4096 + 1, &err), TI_OK, err);
	EXPECT_INT(counter("live_host"), 2);
	EXPECT_INT(counter("live_streams"), 2);
	ti_cuda_close(cuda);
	cuda = NULL;
	EXPECT_INT(counter("live_device"), 0);
	EXPECT_INT(counter("live_host"), 0);
	EXPECT_INT(counter("live_streams"), 0);
	EXPECT_INT(counter("live_contexts"), 0);
	EXPECT_INT(counter("ctx_depth"), 0);
}

Test(cuda_upload, abort_makes_way_for_the_next_upload, .init = open_fake, .fini = teardown)
{
	unsigned char data[64];
	generate(data, sizeof(data), 5);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 64, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 64, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 10, &err), TI_OK, err);
	ti_cuda_upload_abort(cuda);
	ti_cuda_upload_abort(cuda); /* twice is harmless */
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, 64, false, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, 64, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, NULL, &err), TI_OK, err);
	EXPECT_INT(first_difference(fake_bytes(p), data, 64), -1);
}

/* ---- read-back checksums ---- */

Test(cuda_checksum, notices_a_changed_byte, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	enum { N = 5 * 4096 + 7 };
	static unsigned char data[N];
	generate(data, N, 11);
	ti_cuda_ptr p;
	uint64_t uploaded, before, after;
	ASSERT_STATUS(ti_cuda_alloc(cuda, N, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_begin(cuda, p, N, true, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_put(cuda, data, N, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_upload_end(cuda, &uploaded, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_checksum(cuda, p, N, &before, &err), TI_OK, err);
	EXPECT_U64(before, uploaded);
	fake_bytes(p)[3 * 4096 + 100] ^= 0x10;
	ASSERT_STATUS(ti_cuda_checksum(cuda, p, N, &after, &err), TI_OK, err);
	cr_expect(after != uploaded, "a flipped bit on the device went unnoticed");
}

Test(cuda_checksum, of_a_fill_is_the_checksum_of_the_pattern, .init = open_fake, .fini = teardown)
{
	static const unsigned char one[8] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
	enum { N = 200000 };
	static unsigned char host[N];
	for (size_t i = 0; i < N; i++)
		host[i] = one[i % 8];
	ti_cuda_ptr p;
	uint64_t sum;
	ASSERT_STATUS(ti_cuda_alloc(cuda, N, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_fill(cuda, p, N, one, 8, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_checksum(cuda, p, N, &sum, &err), TI_OK, err);
	EXPECT_U64(sum, ti_checksum_bytes(host, N));
}

Test(cuda_checksum, reports_a_failed_read_back, .init = open_fake, .fini = teardown)
{
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	setenv("FAKE_CUDA_FAIL", "cuMemcpyDtoHAsync_v2:3", 1);
	ti_cuda_ptr p;
	uint64_t sum = 1;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 5 * 4096, &p, &err), TI_OK, err);
	EXPECT_STATUS(ti_cuda_checksum(cuda, p, 5 * 4096, &sum, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "cannot read back 4096 bytes at 0x");
	EXPECT_U64(sum, 0);
	EXPECT_INT(counter("ctx_depth"), 0);
	EXPECT_INT(counter("queued"), 0);
	/* Nothing is left queued on a buffer the next call will use. */
	setenv("FAKE_CUDA_FAIL", "", 1);
	EXPECT_STATUS(ti_cuda_checksum(cuda, p, 5 * 4096, &sum, &err), TI_OK, err);
}

/* ---- staging ---- */

Test(cuda_staging, refuses_sizes_outside_its_bounds, .init = open_fake, .fini = teardown)
{
	EXPECT_STATUS(ti_cuda_set_staging_size(cuda, TI_CUDA_STAGING_MIN - 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_set_staging_size(cuda, TI_CUDA_STAGING_MAX + 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_cuda_set_staging_size(cuda, TI_CUDA_STAGING_MIN, &err), TI_OK, err);
}

Test(cuda_staging, is_made_on_first_use_and_remade_after_a_resize, .init = open_fake, .fini = teardown)
{
	EXPECT_INT(counter("live_host"), 0);
	ti_cuda_ptr p;
	uint64_t sum;
	ASSERT_STATUS(ti_cuda_alloc(cuda, 64, &p, &err), TI_OK, err);
	ASSERT_STATUS(ti_cuda_checksum(cuda, p, 64, &sum, &err), TI_OK, err);
	EXPECT_INT(counter("live_host"), 2);
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	EXPECT_INT(counter("live_host"), 0);
	EXPECT_INT(counter("live_streams"), 0);
	ASSERT_STATUS(ti_cuda_checksum(cuda, p, 64, &sum, &err), TI_OK, err);
	EXPECT_INT(counter("live_host"), 2);
}

/* ---- a real GPU, where there is one ---- */

static void open_real_or_skip(void)
{
	unsetenv(TI_CUDA_LIBRARY_ENV);
	if (ti_cuda_open(0, &cuda, &err) != TI_OK)
		cr_skip_test("CUDA not available: %s", err.message);
}

Test(cuda_gpu, round_trips_bytes_on_a_real_gpu, .init = open_real_or_skip, .fini = teardown)
{
	const ti_cuda_info *info = ti_cuda_device_info(cuda);
	cr_expect(info->total_bytes > 0 && info->name[0] && info->driver_version > 0);
	uint64_t free_before, total, free_after, total_after;
	ASSERT_STATUS(ti_cuda_mem_info(cuda, &free_before, &total, &err), TI_OK, err);
	cr_expect(free_before <= total && total > 0);
	/* Past two default staging buffers, and an odd length. */
	expect_round_trip(cuda, 2 * TI_CUDA_STAGING_DEFAULT + 4096 + 13, 7);
	ASSERT_STATUS(ti_cuda_set_staging_size(cuda, 4096, &err), TI_OK, err);
	expect_round_trip(cuda, 3 * 4096 + 1, 8);
	ASSERT_STATUS(ti_cuda_mem_info(cuda, &free_after, &total_after, &err), TI_OK, err);
	EXPECT_INT(total_after, total);
}

Test(cuda_gpu, fills_every_pattern_on_a_real_gpu, .init = open_real_or_skip, .fini = teardown)
{
	const uint64_t n = 1000000 - 1000000 % 16 + 16, guard = 16;
	unsigned char *back = malloc(n + 2 * guard);
	cr_assert(back);
	ti_cuda_ptr p;
	ASSERT_STATUS(ti_cuda_alloc(cuda, n + 2 * guard, &p, &err), TI_OK, err);
	for (size_t k = 0; k < sizeof(fill_rows) / sizeof(fill_rows[0]); k++) {
		const fill_row *r = &fill_rows[k];
		static const unsigned char marker = 0x5a;
		ASSERT_STATUS(ti_cuda_fill(cuda, p, n + 2 * guard, &marker, 1, &err), TI_OK, err);
		ASSERT_STATUS(ti_cuda_fill(cuda, p + guard, n, r->pattern, r->size, &err), TI_OK, err);
		ASSERT_STATUS(ti_cuda_read(cuda, p, back, n + 2 * guard, &err), TI_OK, err);
		long long wrong = -1;
		for (uint64_t i = 0; i < n + 2 * guard && wrong < 0; i++) {
			bool inside = i >= guard && i < guard + n;
			if (back[i] != (inside ? r->pattern[(i - guard) % r->size] : marker))
				wrong = (long long)i;
		}
		cr_expect(wrong == -1, "%s: byte %lld is wrong", r->what, wrong);
	}
	free(back);
}
