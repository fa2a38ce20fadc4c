/*
 * test_dcp.c - torch.distributed.checkpoint folders: the .metadata reader
 * (format/dcp.c) and the source row that assembles tensors from chunks
 * (source/dcp.c).
 *
 * fixtures/dcp/ and fixtures/dcp_v22/ come from fixtures/gen_dcp.py (PyTorch
 * 2.x's FileSystemWriter, byte for byte): weight [6, 4] in three row chunks
 * over two files, proj [3, 8] in two column chunks, bias [5] float16 whole,
 * steps [2, 3] int64 saved as a transposed view, and a bytes item.
 * fixtures/dcp_broken/NAME/ each have one thing wrong in .metadata. Small
 * hostile pickles are written here, byte by byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/dcp.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))

static ti_dcp *dcp;
static ti_source *src;
static ti_error err;

static void teardown(void)
{
	ti_dcp_close(dcp);
	dcp = NULL;
	ti_source_close(src);
	src = NULL;
}

TestSuite(dcp, .fini = teardown, .timeout = 60);

static void expect_dims(const int64_t *got, int ndim, const int64_t *want, int want_ndim, const char *what)
{
	cr_expect(ndim == want_ndim, "%s: rank %d, want %d", what, ndim, want_ndim);
	for (int k = 0; k < ndim && k < want_ndim; k++)
		cr_expect(got[k] == want[k], "%s[%d]: got %" PRId64 ", want %" PRId64, what, k, got[k], want[k]);
}

static const ti_dcp_item *item_named(const char *name)
{
	for (size_t i = 0; i < ti_dcp_item_count(dcp); i++)
		if (!strcmp(ti_dcp_item_at(dcp, i)->name, name))
			return ti_dcp_item_at(dcp, i);
	cr_assert_fail("no item '%s'", name);
	return NULL;
}

static void expect_fixture_items(void)
{
	ASSERT_INT(ti_dcp_item_count(dcp), 5);
	static const char *const names[] = {"weight", "proj", "bias", "steps", "extra"};
	for (size_t i = 0; i < 5; i++)
		EXPECT_STR(ti_dcp_item_at(dcp, i)->name, names[i]);
	const ti_dcp_item *w = item_named("weight");
	cr_expect(w->is_tensor);
	EXPECT_INT(w->dtype, TI_DT_FLOAT32);
	expect_dims(w->shape, w->ndim, (const int64_t[]){6, 4}, 2, "weight shape");
	EXPECT_INT(w->numel, 24);
	ASSERT_INT(w->chunk_count, 3);
	for (int i = 0; i < 3; i++) {
		expect_dims(w->chunks[i].offsets, 2, (const int64_t[]){2 * i, 0}, 2, "weight chunk offsets");
		expect_dims(w->chunks[i].sizes, 2, (const int64_t[]){2, 4}, 2, "weight chunk sizes");
	}
	EXPECT_STR(ti_dcp_file_at(dcp, w->chunks[0].file), "__0_0.distcp");
	EXPECT_STR(ti_dcp_file_at(dcp, w->chunks[1].file), "__1_0.distcp");
	EXPECT_STR(ti_dcp_file_at(dcp, w->chunks[2].file), "__0_0.distcp");
	EXPECT_INT(w->chunks[0].offset, 0);
	cr_expect(w->chunks[0].length > 0 && w->chunks[2].offset == w->chunks[0].length);
	const ti_dcp_item *p = item_named("proj");
	ASSERT_INT(p->chunk_count, 2);
	expect_dims(p->chunks[1].offsets, 2, (const int64_t[]){0, 5}, 2, "proj chunk 1 offsets");
	expect_dims(p->chunks[1].sizes, 2, (const int64_t[]){3, 3}, 2, "proj chunk 1 sizes");
	EXPECT_INT(item_named("bias")->dtype, TI_DT_FLOAT16);
	EXPECT_INT(item_named("steps")->dtype, TI_DT_INT64);
	const ti_dcp_item *x = item_named("extra");
	cr_expect(!x->is_tensor);
	ASSERT_INT(x->chunk_count, 1);
	EXPECT_STR(ti_dcp_file_at(dcp, x->chunks[0].file), "__1_0.distcp");
	EXPECT_INT(x->chunks[0].offset, 0); /* bytes items are written first */
	EXPECT_INT(ti_dcp_file_count(dcp), 2);
}

Test(dcp, reads_every_item_of_a_pytorch_2_metadata)
{
	ti_status s = ti_dcp_open("fixtures/dcp/.metadata", NULL, &dcp, &err);
	ASSERT_INT(s, TI_OK);
	expect_fixture_items();
	EXPECT_STR(ti_dcp_version(dcp), "1.0.0");
}

Test(dcp, reads_the_pytorch_2_2_layout_with_tensor_properties_in_shard)
{
	ti_status s = ti_dcp_open("fixtures/dcp_v22/.metadata", NULL, &dcp, &err);
	ASSERT_INT(s, TI_OK);
	expect_fixture_items();
	EXPECT_STR(ti_dcp_version(dcp), NULL);
}

/* Criterion copies parameters into another process, so rows hold their text, not pointers. */
typedef struct broken_case {
	char name[16];
	ti_status code;
	char message[96]; /* a piece of it */
} broken_case;

static broken_case broken_cases[] = {
	{"overlap", TI_E_CORRUPT, "'weight': chunks 0 and 1 overlap"},
	{"outside", TI_E_CORRUPT, "lies outside the tensor in dimension 1"},
	{"gap", TI_E_CORRUPT, "its chunks hold 16 of its 24 elements"},
	{"rank", TI_E_CORRUPT, "chunk 0 has 2 and 1 dimensions"},
	{"nostorage", TI_E_CORRUPT, "'bias': no storage record holds a chunk"},
	{"traversal", TI_E_CORRUPT, "names no file of the folder ('../escape.distcp')"},
	{"dtype", TI_E_CORRUPT, "TensorProperties names no torch dtype"},
	{"evil", TI_E_UNSUPPORTED, "which no DCP metadata holds"},
	{"negative", TI_E_CORRUPT, "negative dimension (-1)"},
};

ParameterizedTestParameters(dcp, refuses_a_broken_metadata) { return ROWS(broken_cases); }

ParameterizedTest(broken_case *c, dcp, refuses_a_broken_metadata)
{
	char path[256];
	snprintf(path, sizeof(path), "fixtures/dcp_broken/%s/.metadata", c->name);
	ti_dcp *d = (ti_dcp *)0x1;
	ti_status s = ti_dcp_open(path, NULL, &d, &err);
	cr_expect(s == c->code, "%s: got %s (\"%s\"), want %s", c->name, ti_status_name(s), err.message,
	          ti_status_name(c->code));
	cr_expect(d == NULL, "%s: failed but left a handle", c->name);
	cr_expect(strstr(err.message, c->message) != NULL, "%s: message \"%s\" lacks \"%s\"", c->name, err.message,
	          c->message);
}

typedef struct pickle_case {
	char what[32];
	char bytes[128];
	size_t size;
	ti_status code;
	int64_t offset; /* -2: any */
	char message[96];
} pickle_case;

#define PK(s) s, sizeof(s) - 1

static pickle_case pickle_cases[] = {
	{"os.system", PK("\x80\x02" "cos\nsystem\n" "."), TI_E_UNSUPPORTED, 2, "'os.system', which no DCP metadata holds"},
	{"getattr of a method", PK("\x80\x02" "cbuiltins\ngetattr\n" "cpathlib\nPosixPath\n" "X\x08\x00\x00\x00__init__"
	                           "\x86R."),
	 TI_E_UNSUPPORTED, -2, "getattr of anything but a DCP enum's member"},
	{"REDUCE of a dataclass", PK("\x80\x02" "ctorch.distributed.checkpoint.metadata\nMetadata\n" ")R."),
	 TI_E_UNSUPPORTED, -2, "not how DCP metadata builds it"},
	{"NEWOBJ of torch.Size", PK("\x80\x02" "ctorch\nSize\n" ")\x81."), TI_E_UNSUPPORTED, -2,
	 "not how DCP metadata builds it"},
	{"BUILD of a class", PK("\x80\x02" "ctorch\nSize\n" "}b."), TI_E_UNSUPPORTED, -2, "BUILD of a global"},
	{"a persistent id", PK("\x80\x02" "K\x01Q."), TI_E_UNSUPPORTED, 4, "no persistent ids"},
	{"an int", PK("\x80\x02" "K\x01."), TI_E_CORRUPT, -2, "holds a int, not a torch.distributed.checkpoint Metadata"},
	{"an empty Metadata", PK("\x80\x02" "ctorch.distributed.checkpoint.metadata\nMetadata\n" ")\x81."), TI_E_CORRUPT,
	 -2, "Metadata.storage_data is a None"},
};

ParameterizedTestParameters(dcp, refuses_a_hostile_pickle) { return ROWS(pickle_cases); }

ParameterizedTest(pickle_case *c, dcp, refuses_a_hostile_pickle)
{
	ti_dcp *d = (ti_dcp *)0x1;
	ti_status s = ti_dcp_parse((const uint8_t *)c->bytes, c->size, NULL, &d, &err);
	cr_expect(s == c->code, "%s: got %s (\"%s\"), want %s", c->what, ti_status_name(s), err.message,
	          ti_status_name(c->code));
	cr_expect(d == NULL, "%s: failed but left a handle", c->what);
	cr_expect(strstr(err.message, c->message) != NULL, "%s: message \"%s\" lacks \"%s\"", c->what, err.message,
	          c->message);
	if (c->offset != -2)
		cr_expect(err.offset == c->offset, "%s: offset %" PRId64 ", want %" PRId64, c->what, err.offset, c->offset);
}

static uint8_t *read_all(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	uint8_t *data = malloc(1 << 16);
	*size = fread(data, 1, 1 << 16, f);
	fclose(f);
	return data;
}

Test(dcp, every_cut_of_the_metadata_fails_cleanly)
{
	size_t size;
	uint8_t *data = read_all("fixtures/dcp/.metadata", &size);
	for (size_t n = 0; n < size; n++) {
		ti_dcp *d = (ti_dcp *)0x1;
		ti_status s = ti_dcp_parse(data, n, NULL, &d, &err);
		cr_expect(s != TI_OK && d == NULL, "a cut at %zu of %zu bytes was read", n, size);
		cr_expect(s != TI_E_INVALID && err.message[0], "a cut at %zu: status %s, message \"%s\"", n,
		          ti_status_name(s), err.message);
	}
	free(data);
}

Test(dcp, refuses_more_items_chunks_or_files_than_its_limits)
{
	size_t size;
	uint8_t *data = read_all("fixtures/dcp/.metadata", &size);
	ti_dcp_limits lim;
	ti_dcp_limits_default(&lim);
	ti_dcp_limits few = lim;
	few.items_max = 4;
	EXPECT_INT(ti_dcp_parse(data, size, &few, &dcp, &err), TI_E_LIMIT);
	few = lim;
	few.chunks_max = 4;
	EXPECT_INT(ti_dcp_parse(data, size, &few, &dcp, &err), TI_E_LIMIT);
	few = lim;
	few.files_max = 1;
	EXPECT_INT(ti_dcp_parse(data, size, &few, &dcp, &err), TI_E_LIMIT);
	few = lim;
	few.metadata_max = size - 1;
	EXPECT_INT(ti_dcp_parse(data, size, &few, &dcp, &err), TI_E_LIMIT);
	EXPECT_INT(ti_dcp_parse(data, size, &lim, &dcp, &err), TI_OK);
	free(data);
}

/* ---- the source: tensors assembled from their chunks ---- */

static const ti_source_tensor *tensor_named(const char *name)
{
	for (size_t i = 0; i < ti_source_tensor_count(src); i++)
		if (!strcmp(ti_source_tensor_at(src, i)->name, name))
			return ti_source_tensor_at(src, i);
	cr_assert_fail("no tensor '%s'", name);
	return NULL;
}

static void open_source(const char *path)
{
	ti_status s = ti_source_open(path, &src, &err);
	cr_assert(s == TI_OK, "%s: %s", path, err.message);
}

Test(dcp, a_folder_opens_as_a_dcp_source_that_lists_its_files)
{
	open_source("fixtures/dcp");
	EXPECT_INT(ti_source_get_format(src), TI_SOURCE_DCP);
	EXPECT_STR(ti_source_format_name(TI_SOURCE_DCP), "dcp");
	EXPECT_INT(ti_source_file_count(src), 3);
	EXPECT_STR(ti_source_file_at(src, 0), "fixtures/dcp/.metadata");
	EXPECT_INT(ti_source_tensor_count(src), 4);
	size_t n;
	const ti_entry *e = ti_source_entries(src, &n, &err);
	ASSERT_INT(n, 5);
	EXPECT_INT(e[0].value->kind, TI_TENSOR);
	EXPECT_INT(e[4].value->kind, TI_OBJECT); /* the bytes item: its BytesStorageMetadata */
	const ti_source_tensor *w = tensor_named("weight");
	EXPECT_INT(w->chunk_count, 3);
	cr_expect(ti_source_tensor_contiguous(w));
}

Test(dcp, reads_row_chunks_from_two_files_as_one_tensor)
{
	open_source("fixtures/dcp");
	const ti_source_tensor *w = tensor_named("weight");
	float got[24];
	ASSERT_INT(ti_source_read(src, w->storage, 0, got, sizeof(got), &err), TI_OK);
	for (int i = 0; i < 24; i++)
		cr_expect(got[i] == (float)i / 4, "weight[%d]: got %g, want %g", i, got[i], (float)i / 4);
}

Test(dcp, reads_column_chunks_row_by_row_and_from_the_middle)
{
	open_source("fixtures/dcp");
	const ti_source_tensor *p = tensor_named("proj");
	float got[24];
	ASSERT_INT(ti_source_read(src, p->storage, 0, got, sizeof(got), &err), TI_OK);
	for (int i = 0; i < 24; i++)
		cr_expect(got[i] == (float)(i - 10), "proj[%d]: got %g, want %d", i, got[i], i - 10);
	/* elements 3 to 13: across a chunk edge (column 5) and a row */
	ASSERT_INT(ti_source_read(src, p->storage, 3 * 4, got, 11 * 4, &err), TI_OK);
	for (int i = 0; i < 11; i++)
		cr_expect(got[i] == (float)(i + 3 - 10), "proj[%d]: got %g", i + 3, got[i]);
}

Test(dcp, reads_a_chunk_saved_as_a_transposed_view_in_logical_order)
{
	open_source("fixtures/dcp");
	int64_t got[6], want[6] = {0, 2, 4, 1, 3, 5};
	ASSERT_INT(ti_source_read(src, tensor_named("steps")->storage, 0, got, sizeof(got), &err), TI_OK);
	for (int i = 0; i < 6; i++)
		cr_expect(got[i] == want[i], "steps[%d]: got %" PRId64 ", want %" PRId64, i, got[i], want[i]);
	uint16_t half[5], half_want[5] = {0x0000, 0x3800, 0x3c00, 0x3e00, 0x4000};
	ASSERT_INT(ti_source_read(src, tensor_named("bias")->storage, 0, half, sizeof(half), &err), TI_OK);
	for (int i = 0; i < 5; i++)
		cr_expect(half[i] == half_want[i], "bias[%d]: got 0x%04x, want 0x%04x", i, half[i], half_want[i]);
}

Test(dcp, a_damaged_chunk_is_an_error_that_names_the_chunk_and_its_file)
{
	char dir[] = "/tmp/tinspect-dcp-XXXXXX", path[128], cmd[256];
	cr_assert(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp fixtures/dcp/.metadata fixtures/dcp/__0_0.distcp fixtures/dcp/__1_0.distcp %s/", dir);
	cr_assert(system(cmd) == 0);
	/* the zip's end record of weight's chunk 0 (bytes 0 to 747 of __0_0.distcp) gone */
	snprintf(path, sizeof(path), "%s/__0_0.distcp", dir);
	FILE *f = fopen(path, "r+b");
	cr_assert(f);
	for (long at = 600; at < 747; at++) {
		fseek(f, at, SEEK_SET);
		fputc(0, f);
	}
	fclose(f);
	open_source(dir);
	float got[24];
	ti_status s = ti_source_read(src, tensor_named("weight")->storage, 0, got, sizeof(got), &err);
	EXPECT_INT(s, TI_E_CORRUPT);
	cr_expect(strstr(err.message, "'weight' chunk 0 (bytes 0 to 747 of '__0_0.distcp')") != NULL, "message: %s",
	          err.message);
	EXPECT_STR(err.member, "__0_0.distcp");
	/* the other tensors still read */
	EXPECT_INT(ti_source_read(src, tensor_named("proj")->storage, 0, got, sizeof(got), &err), TI_OK);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect(system(cmd) == 0);
}
