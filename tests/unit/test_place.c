/*
 * test_place.c - ti_place: a source's storages into CPU memory or onto a CUDA
 * device, once each, filled from the file or from the fill set on them.
 *
 * CUDA runs against tests/unit/fake/fake_libcuda.c (see test_cuda.c), found
 * at $TINSPECT_TEST_FAKE_LIBCUDA or build/fake_libcuda.so and handed to the
 * code under test through TINSPECT_LIBCUDA, so every path runs without a GPU.
 * The fake's counters tell device fills from uploads. Criterion runs each
 * test in its own process, so the environment and the counters start afresh.
 *
 * Paths are relative to the repository root, where the tests run.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "tinspect/cuda.h"
#include "tinspect/fill.h"
#include "tinspect/model.h"
#include "tinspect/place.h"
#include "tinspect/source.h"
#include "unit.h"

static ti_error err;
static ti_source *src;
static ti_model *model;

static void setup(void)
{
	ti_error_clear(&err);
	src = NULL;
	model = NULL;
}

static void teardown(void)
{
	ti_source_close(src);
	src = NULL;
	ti_model_close(model);
	model = NULL;
}

TestSuite(place, .init = setup, .fini = teardown, .timeout = 60);

/* ---- helpers ---- */

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

/* What the fake driver counted (dlopen hands back the copy cuda.c loaded). */
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

static void open_file(const char *path)
{
	ASSERT_STATUS(ti_source_open(path, &src, &err), TI_OK, err);
}

/*
 * A description: an embedding tied to a linear layer's weight (one storage
 * for two names), a bias, and a BatchNorm1d's parameters and buffers
 * (num_batches_tracked is int64).
 */
static const char description[] =
	"{\"inputs\": {\"x\": {\"shape\": [2, 4], \"dtype\": \"float32\"}},"
	" \"modules\": {\"emb\": {\"type\": \"Embedding\", \"num_embeddings\": 5, \"embedding_dim\": 4},"
	"              \"fc\": {\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 5},"
	"              \"bn\": {\"type\": \"BatchNorm1d\", \"num_features\": 5}},"
	" \"tied\": {\"fc.weight\": \"emb.weight\"},"
	" \"graph\": [{\"out\": \"h\", \"call\": \"fc\", \"args\": [\"x\"]},"
	"            {\"out\": \"y\", \"call\": \"bn\", \"args\": [\"h\"]}],"
	" \"outputs\": [\"y\"]}";

/* Bytes of the description's storages: emb/fc weight 5x4 float32 once, then 4 x 5 float32, one int64. */
enum { MODEL_STORAGES = 7, MODEL_BYTES = 80 + 20 + 20 + 20 + 20 + 20 + 8 };

static void open_model(void)
{
	ASSERT_STATUS(ti_model_open(description, strlen(description), NULL, &model, &err), TI_OK, err);
	ASSERT_STATUS(ti_source_from_model(model, &src, &err), TI_OK, err);
}

static size_t storage_of(const char *name)
{
	for (size_t i = 0; i < ti_source_tensor_count(src); i++)
		if (!strcmp(ti_source_tensor_at(src, i)->name, name))
			return ti_source_tensor_at(src, i)->storage;
	cr_assert(false, "no tensor '%s'", name);
	return 0;
}

static void set_fill(const char *name, ti_fill_policy policy)
{
	ASSERT_STATUS(ti_source_set_fill(src, storage_of(name), &policy, 7, name, &err), TI_OK, err);
}

/* Every storage of the description filled: constants for the norm, random for the rest. */
static void fill_model(void)
{
	set_fill("emb.weight", ti_fill_constant(TI_FILL_RANDN));
	set_fill("fc.bias", ti_fill_uniform(-0.5, 0.5));
	set_fill("bn.weight", ti_fill_constant(TI_FILL_ONES));
	set_fill("bn.bias", ti_fill_constant(TI_FILL_ZEROS));
	set_fill("bn.running_mean", ti_fill_constant(TI_FILL_ZEROS));
	set_fill("bn.running_var", ti_fill_full(0.25));
	set_fill("bn.num_batches_tracked", ti_fill_constant(TI_FILL_ZEROS));
}

/* bytes of the constant fills of fill_model: 4 float32 storages of 5 and one int64 */
enum { MODEL_CONSTANT_BYTES = 4 * 20 + 8 };

typedef struct progress_log {
	uint64_t last, total;
	int calls;
	bool backwards;
} progress_log;

static void on_progress(void *user, uint64_t done, uint64_t total)
{
	progress_log *p = user;
	p->backwards |= done < p->last;
	p->last = done;
	p->total = total;
	p->calls++;
}

/* ---- the CPU ---- */

Test(place, a_checkpoint_on_the_cpu_places_each_storage_once_and_verifies)
{
	open_file("fixtures/tied.pt");
	progress_log log = {0};
	ti_place_options o = {false, 0, true, on_progress, &log};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 2);        /* embed.weight and decoder.weight are one */
	EXPECT_INT(stats.bytes, 40 * 4 + 10 * 4);
	EXPECT_INT(stats.filled_on_device, 0);
	cr_expect(stats.verified, "verify was asked and the bytes are the file's");
	EXPECT_STR(stats.device, "cpu");
	EXPECT_INT(stats.total, 0);
	cr_expect(!log.backwards);
	EXPECT_INT(log.last, stats.bytes);
	EXPECT_INT(log.total, stats.bytes);
}

Test(place, without_verify_nothing_is_said_verified)
{
	open_file("fixtures/views.pt");
	ti_place_options o = {0};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	cr_expect(!stats.verified);
	EXPECT_INT(stats.storages, 4); /* base's storage with its views, expanded's, scalar's, empty's */
	EXPECT_INT(stats.bytes, (24 + 3 + 1) * 4);
}

Test(place, a_sharded_checkpoint_on_the_cpu)
{
	open_file("fixtures/safetensors/hf/model.safetensors.index.json");
	ti_place_options o = {false, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 5);
	EXPECT_INT(stats.bytes, 82);
	cr_expect(stats.verified);
}

Test(place, a_description_without_a_fill_cannot_be_copied_out_of_meta)
{
	open_model();
	EXPECT_INT(ti_source_storage_count(src), MODEL_STORAGES);
	ti_place_options o = {0};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "Cannot copy out of meta tensor; no data! ('emb.weight')");
	/* the same on CUDA, before the driver is even loaded */
	setenv(TI_CUDA_LIBRARY_ENV, "/nonexistent/libcuda.so.1", 1);
	o.cuda = true;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "Cannot copy out of meta tensor; no data! ('emb.weight')");
}

Test(place, one_storage_left_without_a_fill_is_named)
{
	open_model();
	fill_model();
	/* a fresh source: every storage but bn.running_var */
	ti_source_close(src);
	ASSERT_STATUS(ti_source_from_model(model, &src, &err), TI_OK, err);
	set_fill("emb.weight", ti_fill_constant(TI_FILL_RANDN));
	set_fill("fc.bias", ti_fill_constant(TI_FILL_ZEROS));
	set_fill("bn.weight", ti_fill_constant(TI_FILL_ONES));
	set_fill("bn.bias", ti_fill_constant(TI_FILL_ZEROS));
	set_fill("bn.running_mean", ti_fill_constant(TI_FILL_ZEROS));
	set_fill("bn.num_batches_tracked", ti_fill_constant(TI_FILL_ZEROS));
	ti_place_options o = {0};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_INVALID, err);
	EXPECT_STR(err.message, "Cannot copy out of meta tensor; no data! ('bn.running_var')");
}

Test(place, a_filled_description_on_the_cpu_allocates_a_tie_once)
{
	open_model();
	fill_model();
	ti_place_options o = {false, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, MODEL_STORAGES);
	EXPECT_INT(stats.bytes, MODEL_BYTES);
	EXPECT_INT(stats.filled_on_device, 0);
	cr_expect(stats.verified);
}

/*
 * A tensor saved from the meta device has a storage of its own with no data:
 * placed as it is, it fails as torch.load('meta_saved.pt').to('cpu') does;
 * with a fill set, it is placed like a description's parameter.
 */
Test(place, a_tensor_saved_from_the_meta_device_cannot_be_placed)
{
	open_file("fixtures/meta_saved.pt");
	ti_place_options o = {0};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "Cannot copy out of meta tensor; no data! ('(root)')");
}

Test(place, a_tensor_saved_from_the_meta_device_is_placed_with_a_fill)
{
	open_file("fixtures/meta_saved.pt");
	ASSERT_INT(ti_source_storage_count(src), 1);
	ti_fill_policy zeros = ti_fill_constant(TI_FILL_ZEROS);
	ASSERT_STATUS(ti_source_set_fill(src, 0, &zeros, 0, "(root)", &err), TI_OK, err);
	ti_place_options o = {.verify = true};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 1);
	EXPECT_INT(stats.bytes, 3 * 4 * 4); /* float32 [3, 4] */
}

/* ---- CUDA, through the fake driver ---- */

Test(place, a_checkpoint_on_cuda_is_uploaded_and_verified)
{
	use_fake();
	open_file("fixtures/tied.pt");
	progress_log log = {0};
	ti_place_options o = {true, 0, true, on_progress, &log};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 2);
	EXPECT_INT(stats.bytes, 200);
	EXPECT_INT(stats.filled_on_device, 0);
	cr_expect(stats.verified);
	EXPECT_STR(stats.device, "cuda:0 (Fake CUDA Device 0)");
	EXPECT_INT(stats.total, 256 << 20);
	cr_expect(stats.free_before >= stats.free_after, "free memory grew: %" PRIu64 " before, %" PRIu64 " after",
	          stats.free_before, stats.free_after);
	cr_expect(counter("async_queued") + counter("sync_copies") > 0, "nothing was copied to the device");
	EXPECT_INT(counter("memset8") + counter("memset16") + counter("memset32"), 0);
	/* everything is given back */
	EXPECT_INT(counter("live_device"), 0);
	EXPECT_INT(counter("live_host"), 0);
	EXPECT_INT(counter("live_contexts"), 0);
	EXPECT_INT(log.last, 200);
	EXPECT_INT(log.total, 200);
}

Test(place, constant_fills_happen_on_the_device_and_the_rest_is_uploaded)
{
	use_fake();
	open_model();
	fill_model();
	ti_place_options o = {true, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, MODEL_STORAGES);
	EXPECT_INT(stats.bytes, MODEL_BYTES);
	EXPECT_INT(stats.filled_on_device, MODEL_CONSTANT_BYTES);
	cr_expect(stats.verified, "the device's fills read back as the host computes them");
	cr_expect(counter("memset8") + counter("memset16") + counter("memset32") > 0, "no device fill was made");
	cr_expect(counter("async_queued") + counter("sync_copies") > 0, "the random fills were not uploaded");
	EXPECT_INT(counter("live_device"), 0);
}

Test(place, only_constant_fills_upload_nothing)
{
	use_fake();
	open_model();
	for (size_t i = 0; i < ti_source_storage_count(src); i++) {
		ti_fill_policy ones = ti_fill_constant(TI_FILL_ONES);
		ASSERT_STATUS(ti_source_set_fill(src, i, &ones, 0, "x", &err), TI_OK, err);
	}
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.filled_on_device, MODEL_BYTES);
	EXPECT_INT(stats.bytes, MODEL_BYTES);
	EXPECT_INT(counter("async_queued"), 0);
	cr_expect(!stats.verified);
}

Test(place, a_fill_with_a_zeroed_row_is_uploaded_not_filled_on_the_device)
{
	use_fake();
	open_model();
	fill_model();
	ti_fill_policy padded = ti_fill_constant(TI_FILL_ONES);
	padded.zero_begin = 4; /* Embedding's padding_idx 1: elements 4..7 */
	padded.zero_end = 8;
	set_fill("emb.weight", padded);
	ti_place_options o = {true, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.filled_on_device, MODEL_CONSTANT_BYTES);
	EXPECT_INT(stats.bytes, MODEL_BYTES);
	cr_expect(stats.verified);
}

Test(place, an_empty_fill_is_allocated_and_not_written)
{
	use_fake();
	open_model();
	fill_model();
	set_fill("emb.weight", ti_fill_constant(TI_FILL_EMPTY));
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, MODEL_STORAGES);
	EXPECT_INT(stats.bytes, MODEL_BYTES - 80);
}

/*
 * BUG (src/materialize/place.c place_cuda): a constant fill on a storage
 * of 0 bytes (an empty tensor, shape (0, 5)) reads one element of pattern
 * with ti_source_read(src, i, 0, pattern, esize), which refuses a read past
 * the storage's 0 bytes: "read of 4 bytes at 0 passes the storage's 0
 * bytes". `tinspect materialize fixtures/views.pt --fill zeros --device
 * cuda` fails so (with TINSPECT_LIBCUDA=build/fake_libcuda.so); on the CPU
 * it works. Enable once fixed.
 */
Test(place, a_constant_fill_of_an_empty_storage_on_cuda)
{
	use_fake();
	open_file("fixtures/views.pt");
	for (size_t i = 0; i < ti_source_storage_count(src); i++) {
		ti_fill_policy zeros = ti_fill_constant(TI_FILL_ZEROS);
		ASSERT_STATUS(ti_source_set_fill(src, i, &zeros, 0, "x", &err), TI_OK, err);
	}
	ti_place_options o = {true, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 4);
}

Test(place, an_empty_storage_from_the_file_on_cuda)
{
	use_fake();
	open_file("fixtures/views.pt");
	ti_place_options o = {true, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 4);
	EXPECT_INT(stats.bytes, (24 + 3 + 1) * 4);
	cr_expect(stats.verified);
}

Test(place, a_second_device_is_used_when_asked)
{
	use_fake();
	setenv("FAKE_CUDA_DEVICES", "2", 1);
	open_file("fixtures/tied.pt");
	ti_place_options o = {true, 1, false, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_STR(stats.device, "cuda:1 (Fake CUDA Device 1)");
}

/* ---- CUDA missing or failing ---- */

Test(place, a_missing_driver_is_cuda_not_available)
{
	setenv(TI_CUDA_LIBRARY_ENV, "/nonexistent/libcuda.so.1", 1);
	open_file("fixtures/tied.pt");
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_IO, err);
	cr_expect(!strncmp(err.message, "CUDA not available: cannot load the CUDA driver: /nonexistent/libcuda.so.1",
	                   strlen("CUDA not available: cannot load the CUDA driver: /nonexistent/libcuda.so.1")),
	          "err.message: got \"%s\"", err.message);
	EXPECT_INT(stats.storages, 0);
}

Test(place, no_device_is_cuda_not_available_in_the_drivers_words)
{
	use_fake();
	setenv("FAKE_CUDA_DEVICES", "0", 1);
	open_file("fixtures/tied.pt");
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "CUDA not available: cannot initialise the CUDA driver: no CUDA-capable device is "
	                        "detected (CUDA_ERROR_NO_DEVICE)");
}

Test(place, a_device_past_the_count_is_cuda_not_available)
{
	use_fake();
	open_file("fixtures/tied.pt");
	ti_place_options o = {true, 3, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_IO, err);
	EXPECT_STR(err.message, "CUDA not available: no device cuda:3 (the driver sees 1 device)");
}

Test(place, too_little_device_memory_is_out_of_memory_and_frees_what_was_taken)
{
	use_fake();
	setenv("FAKE_CUDA_MEMORY", "100", 1); /* embed.weight's 160 bytes do not fit */
	open_file("fixtures/tied.pt");
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_NOMEM, err);
	EXPECT_CONTAINS(err.message, "out of memory");
	EXPECT_INT(counter("live_device"), 0);
	EXPECT_INT(counter("live_contexts"), 0);
}

Test(place, a_failed_upload_is_an_io_error_and_frees_everything)
{
	use_fake();
	setenv("FAKE_CUDA_FAIL", "cuMemcpyHtoDAsync_v2:2", 1);
	open_file("fixtures/views.pt");
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "unknown error");
	EXPECT_INT(counter("live_device"), 0);
	EXPECT_INT(counter("live_host"), 0);
	EXPECT_INT(counter("live_contexts"), 0);
}

Test(place, a_failed_device_fill_is_an_io_error)
{
	use_fake();
	setenv("FAKE_CUDA_FAIL", "cuMemsetD32_v2:1,cuMemsetD8_v2:1,cuMemsetD16_v2:1", 1);
	open_model();
	fill_model();
	ti_place_options o = {true, 0, false, NULL, NULL};
	ti_place_stats stats;
	EXPECT_STATUS(ti_place(src, &o, &stats, &err), TI_E_IO, err);
	EXPECT_INT(counter("live_device"), 0);
}

/* ---- PyTorch 2.x's conjugate and negative bits ---- */

Test(place, a_conjugate_view_is_placed_resolved_apart_from_its_base)
{
	open_file("fixtures/torch2_conj_neg.pt");
	ti_place_options o = {false, 0, true, NULL, NULL};
	ti_place_stats stats;
	ASSERT_STATUS(ti_place(src, &o, &stats, &err), TI_OK, err);
	EXPECT_INT(stats.storages, 3); /* z's values, z_plain's, n's */
	EXPECT_INT(stats.bytes, 24 + 24 + 16);
	cr_expect(stats.verified);
	float z[6];
	ASSERT_STATUS(ti_source_read(src, storage_of("z"), 0, z, sizeof(z), &err), TI_OK, err);
	float want[] = {1, -2, -3, -0.5f, 0, 1};
	cr_expect(!memcmp(z, want, sizeof(z)), "z is placed unconjugated");
}
