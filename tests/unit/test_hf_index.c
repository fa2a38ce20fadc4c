/*
 * test_hf_index.c - Hugging Face shard indexes (*.index.json).
 *
 * The fixtures in fixtures/safetensors/hf/ come from gen_safetensors.py: two
 * safetensors shards, the index transformers would write for them
 * (indent=2, sort_keys=True), and broken indexes over the same shards.
 * Malformed JSON is written to a temporary folder by the tests themselves.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tinspect/hf_index.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))
#define HF(name) "fixtures/safetensors/hf/" name
#define SHARD1 "model-00001-of-00002.safetensors"
#define SHARD2 "model-00002-of-00002.safetensors"

static ti_hf_index *idx;
static ti_error err;
static char tmpdir[64];
static char tmpfile_path[128];

static void setup(void)
{
	strcpy(tmpdir, "/tmp/tinspect-hf-XXXXXX");
	cr_assert(mkdtemp(tmpdir) != NULL, "cannot make a temporary folder");
	snprintf(tmpfile_path, sizeof(tmpfile_path), "%s/model.safetensors.index.json", tmpdir);
}

static void teardown(void)
{
	ti_hf_index_close(idx);
	idx = NULL;
	unlink(tmpfile_path);
	rmdir(tmpdir);
}

TestSuite(hf_index, .init = setup, .fini = teardown, .timeout = 60);

static ti_hf_index *open_ok(const char *path, const ti_st_limits *limits)
{
	ti_hf_index_close(idx);
	idx = NULL;
	ti_status s = ti_hf_index_open(path, limits, &idx, &err);
	cr_assert(s == TI_OK, "%s: got %s (\"%s\"), want success", path, ti_status_name(s), err.message);
	cr_assert(idx != NULL);
	return idx;
}

static void expect_open_fails(const char *path, const ti_st_limits *limits, ti_status want, const char *piece)
{
	ti_hf_index *h = (ti_hf_index *)0x1;
	ti_status s = ti_hf_index_open(path, limits, &h, &err);
	cr_expect(s == want, "%s: got %s (\"%s\"), want %s", path, ti_status_name(s), err.message, ti_status_name(want));
	cr_expect(h == NULL, "%s: failed but left a handle", path);
	if (piece)
		EXPECT_CONTAINS(err.message, piece);
	if (s == TI_OK)
		ti_hf_index_close(h);
}

static const char *write_index(const char *text)
{
	FILE *f = fopen(tmpfile_path, "wb");
	size_t n = strlen(text);
	cr_assert(f && fwrite(text, 1, n, f) == n && fclose(f) == 0, "cannot write %s", tmpfile_path);
	return tmpfile_path;
}

Test(hf_index, lists_shards_in_the_order_they_first_appear)
{
	open_ok(HF("model.safetensors.index.json"), NULL);
	ASSERT_INT(ti_hf_index_shard_count(idx), 2);
	const ti_hf_shard *a = ti_hf_index_shard(idx, 0), *b = ti_hf_index_shard(idx, 1);
	EXPECT_STR(a->file, SHARD1);
	EXPECT_STR(a->path, HF(SHARD1));
	EXPECT_INT(a->format, TI_HF_SAFETENSORS);
	EXPECT_INT(a->tensor_count, 2);
	EXPECT_STR(b->file, SHARD2);
	EXPECT_INT(b->tensor_count, 3);
	EXPECT_INT(ti_hf_index_shard(idx, 2) == NULL, 1);
}

Test(hf_index, maps_each_tensor_to_its_shard)
{
	/* sort_keys=True: the weight_map is in name order. */
	static const struct { const char *name; size_t shard; } want[] = {
		{"embed.weight", 0}, {"head.bias", 1}, {"head.weight", 1}, {"layers.0.weight", 0}, {"layers.1.weight", 1},
	};
	open_ok(HF("model.safetensors.index.json"), NULL);
	ASSERT_INT(ti_hf_index_weight_count(idx), 5);
	for (size_t i = 0; i < 5; i++) {
		const ti_hf_weight *w = ti_hf_index_weight(idx, i);
		EXPECT_STR(w->name, want[i].name);
		EXPECT_INT(w->shard, want[i].shard);
		cr_expect(ti_hf_index_find(idx, want[i].name) == w, "find('%s') is not entry %zu", want[i].name, i);
	}
	EXPECT_INT(ti_hf_index_weight(idx, 5) == NULL, 1);
	EXPECT_INT(ti_hf_index_find(idx, "layers.2.weight") == NULL, 1);
}

Test(hf_index, keeps_the_metadata)
{
	/* total_size: 8 + 4 floats and 4 floats of float32, 6 + 3 halves. */
	open_ok(HF("model.safetensors.index.json"), NULL);
	EXPECT_INT(ti_hf_index_total_size(idx), 82);
	ASSERT_INT(ti_hf_index_metadata_count(idx), 1);
	EXPECT_STR(ti_hf_index_metadata_at(idx, 0)->key, "total_size");
	EXPECT_STR(ti_hf_index_metadata_at(idx, 0)->value, "82");

	open_ok(write_index("{\"weight_map\": {}}"), NULL);
	EXPECT_INT(ti_hf_index_total_size(idx), -1);
	EXPECT_INT(ti_hf_index_metadata_count(idx), 0);
	EXPECT_INT(ti_hf_index_shard_count(idx), 0);

	open_ok(write_index("{\"metadata\": {\"total_size\": 8, \"format\": \"pt\", \"x\": [1, 2.5]},"
	                    " \"weight_map\": {\"a\": \"s.safetensors\"}, \"other\": 1}"),
	        NULL);
	ASSERT_INT(ti_hf_index_metadata_count(idx), 3);
	EXPECT_STR(ti_hf_index_metadata_at(idx, 1)->value, "pt");
	EXPECT_STR(ti_hf_index_metadata_at(idx, 2)->value, "[1,2.5]");
}

Test(hf_index, every_shard_agrees_with_the_weight_map)
{
	open_ok(HF("model.safetensors.index.json"), NULL);
	size_t torch = 99;
	EXPECT_STATUS(ti_hf_index_check_shards(idx, NULL, &torch, &err), TI_OK, err);
	EXPECT_INT(torch, 0);
}

typedef struct check_row {
	char index[40];
	char piece[192];
	char shard[40]; /* the shard checked when it failed */
} check_row;

/* Criterion copies parameters into another process, so rows hold their text, not pointers. */
static check_row check_rows[] = {
	{"missing_tensor.index.json", "tensor 'layers.2.weight' of the weight_map is missing from shard '" SHARD2 "'",
	 SHARD2},
	{"extra_tensor.index.json", "shard '" SHARD2 "' holds tensor 'head.bias', which is not in the weight_map", SHARD2},
	/* Shard 1 is checked first: the tensor is not where the weight_map says. */
	{"wrong_shard.index.json", "tensor 'head.bias' of the weight_map is missing from shard '" SHARD1 "'", SHARD1},
};

ParameterizedTestParameters(hf_index, a_shard_that_disagrees_with_the_weight_map_is_named) { return ROWS(check_rows); }

ParameterizedTest(check_row *r, hf_index, a_shard_that_disagrees_with_the_weight_map_is_named)
{
	char path[128];
	snprintf(path, sizeof(path), HF("%s"), r->index);
	open_ok(path, NULL);
	EXPECT_STATUS(ti_hf_index_check_shards(idx, NULL, NULL, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, r->piece);
	char member[128];
	snprintf(member, sizeof(member), HF("%s"), r->shard);
	EXPECT_STR(err.member, member);
}

Test(hf_index, a_tensor_in_the_wrong_shard_is_named_with_both_shards)
{
	open_ok(HF("model.safetensors.index.json"), NULL);
	const char *names[] = {"embed.weight", "layers.0.weight", "head.bias"};
	EXPECT_STATUS(ti_hf_index_check_names(idx, 0, names, 3, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message,
	                "shard '" SHARD1 "' holds tensor 'head.bias', which the weight_map puts in shard '" SHARD2 "'");
	EXPECT_STATUS(ti_hf_index_check_names(idx, 0, names, 2, &err), TI_OK, err);

	ti_st_file *shard = NULL;
	ASSERT_STATUS(ti_st_open(HF(SHARD2), NULL, &shard, &err), TI_OK, err);
	EXPECT_STATUS(ti_hf_index_check_safetensors(idx, 1, shard, &err), TI_OK, err);
	EXPECT_STATUS(ti_hf_index_check_safetensors(idx, 0, shard, &err), TI_E_CORRUPT, err);
	ti_st_close(shard);
}

Test(hf_index, a_missing_shard_is_an_io_error_naming_it)
{
	open_ok(HF("missing_shard.index.json"), NULL);
	EXPECT_STATUS(ti_hf_index_check_shards(idx, NULL, NULL, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "model-00003-of-00003.safetensors");
	EXPECT_STR(err.member, HF("model-00003-of-00003.safetensors"));
}

Test(hf_index, refuses_shards_outside_the_index_s_folder)
{
	expect_open_fails(HF("traversal.index.json"), NULL, TI_E_CORRUPT,
	                  "shard '../" SHARD2 "', which is not a plain file name next to the index");
	expect_open_fails(HF("absolute.index.json"), NULL, TI_E_CORRUPT,
	                  "weight_map puts tensor 'head.bias' in the shard '/etc/passwd'");
}

Test(hf_index, names_torch_shards_for_the_caller_to_check)
{
	open_ok(HF("pytorch_model.bin.index.json"), NULL);
	ASSERT_INT(ti_hf_index_shard_count(idx), 1);
	const ti_hf_shard *s = ti_hf_index_shard(idx, 0);
	EXPECT_STR(s->file, "pytorch_model-00001-of-00001.bin");
	EXPECT_STR(s->path, HF("pytorch_model-00001-of-00001.bin"));
	EXPECT_INT(s->format, TI_HF_TORCH);
	size_t torch = 0;
	EXPECT_STATUS(ti_hf_index_check_shards(idx, NULL, &torch, &err), TI_OK, err);
	EXPECT_INT(torch, 1);

	/* What the checkpoint reader would list for that shard. */
	const char *all[] = {"layers.1.weight", "embed.weight", "head.bias", "head.weight", "layers.0.weight"};
	EXPECT_STATUS(ti_hf_index_check_names(idx, 0, all, 5, &err), TI_OK, err);
	EXPECT_STATUS(ti_hf_index_check_names(idx, 0, all, 4, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "tensor 'layers.0.weight' of the weight_map is missing from shard "
	                             "'pytorch_model-00001-of-00001.bin'");
	const char *twice[] = {"head.bias", "head.bias"};
	EXPECT_STATUS(ti_hf_index_check_names(idx, 0, twice, 2, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "holds tensor 'head.bias' twice");
	EXPECT_STATUS(ti_hf_index_check_names(idx, 1, all, 5, &err), TI_E_INVALID, err);
}

Test(hf_index, classifies_shards_by_extension)
{
	open_ok(write_index("{\"weight_map\": {\"a\": \"x.safetensors\", \"b\": \"y.bin\", \"c\": \"z.pt\","
	                    " \"d\": \"w.pth\", \"e\": \"v.gguf\", \"f\": \".safetensors\"}}"),
	        NULL);
	static const ti_hf_format want[] = {TI_HF_SAFETENSORS, TI_HF_TORCH, TI_HF_TORCH, TI_HF_TORCH, TI_HF_UNKNOWN,
	                                    TI_HF_UNKNOWN};
	ASSERT_INT(ti_hf_index_shard_count(idx), 6);
	for (size_t i = 0; i < 6; i++)
		EXPECT_INT(ti_hf_index_shard(idx, i)->format, want[i]);
	/* A path without a folder stays a bare name. */
	char want_path[160];
	snprintf(want_path, sizeof(want_path), "%s/x.safetensors", tmpdir);
	EXPECT_STR(ti_hf_index_shard(idx, 0)->path, want_path);
}

Test(hf_index, a_shard_of_unknown_format_is_unsupported)
{
	open_ok(write_index("{\"weight_map\": {\"a\": \"v.gguf\"}}"), NULL);
	EXPECT_STATUS(ti_hf_index_check_shards(idx, NULL, NULL, &err), TI_E_UNSUPPORTED, err);
	EXPECT_CONTAINS(err.message, "'v.gguf'");
}

typedef struct bad_row {
	char json[160];
	ti_status status;
	char piece[96];
} bad_row;

static bad_row bad_rows[] = {
	{"", TI_E_CORRUPT, "index does not start with '{'"},
	{"[]", TI_E_CORRUPT, "index does not start with '{'"},
	{"{\"weight_map\": {\"a\": \"s.safetensors\"}", TI_E_CORRUPT, "index is not valid JSON"},
	{"{\"weight_map\": {}} x", TI_E_CORRUPT, "bytes after its JSON object"},
	{"{\"metadata\": {}}", TI_E_UNSUPPORTED, "a JSON file with no \"weight_map\": not a checkpoint index"},
	{"{\"weight_map\": []}", TI_E_CORRUPT, "weight_map that is not an object"},
	{"{\"weight_map\": {\"a\": 1}}", TI_E_CORRUPT, "gives tensor 'a' a shard that is not a string"},
	{"{\"weight_map\": {\"a\": \"s.bin\", \"a\": \"t.bin\"}}", TI_E_CORRUPT, "names tensor 'a' twice"},
	{"{\"weight_map\": {}, \"weight_map\": {}}", TI_E_CORRUPT, "the key 'weight_map' twice"},
	{"{\"weight_map\": {\"a\": \"\"}}", TI_E_CORRUPT, "a shard with an empty name"},
	{"{\"weight_map\": {\"a\": \"..\"}}", TI_E_CORRUPT, "which is a folder"},
	{"{\"weight_map\": {\"a\": \"sub/s.bin\"}}", TI_E_CORRUPT, "not a plain file name"},
	{"{\"weight_map\": {\"a\": \"..\\\\s.bin\"}}", TI_E_CORRUPT, "not a plain file name"},
	{"{\"weight_map\": {\"a\": \"s\\u0000.bin\"}}", TI_E_CORRUPT, "\\u0000"},
	{"{\"weight_map\": {\"a\\u0000\": \"s.bin\", \"a\": \"s.bin\"}}", TI_E_CORRUPT, "\\u0000"},
	{"{\"weight_map\": {\"caf\xe9\": \"s.bin\"}}", TI_E_CORRUPT, "not valid UTF-8"},
	{"{\"metadata\": [], \"weight_map\": {}}", TI_E_CORRUPT, "metadata that is not an object"},
	{"{\"metadata\": {\"total_size\": -1}, \"weight_map\": {}}", TI_E_CORRUPT, "total_size that is not a byte count"},
	{"{\"metadata\": {\"total_size\": \"82\"}, \"weight_map\": {}}", TI_E_CORRUPT, "total_size"},
	{"{\"metadata\": {\"total_size\": 1.5}, \"weight_map\": {}}", TI_E_CORRUPT, "total_size"},
	{"{\"metadata\": {\"k\": 1, \"k\": 2}, \"weight_map\": {}}", TI_E_CORRUPT, "the key 'k' twice"},
};

ParameterizedTestParameters(hf_index, rejects_a_malformed_index) { return ROWS(bad_rows); }

ParameterizedTest(bad_row *r, hf_index, rejects_a_malformed_index)
{
	expect_open_fails(write_index(r->json), NULL, r->status, r->piece);
}

Test(hf_index, limits_bound_the_index)
{
	ti_st_limits lim;
	ti_st_limits_default(&lim);
	lim.header_max = 100;
	expect_open_fails(HF("model.safetensors.index.json"), &lim, TI_E_LIMIT, "larger than the limit of 100 bytes");
	ti_st_limits_default(&lim);
	lim.tensors_max = 4;
	expect_open_fails(HF("model.safetensors.index.json"), &lim, TI_E_LIMIT, "maps 5 tensors");
	ti_st_limits_default(&lim);
	lim.values_max = 8;
	expect_open_fails(HF("model.safetensors.index.json"), &lim, TI_E_LIMIT, "more than 8 JSON values");
}

Test(hf_index, says_why_an_index_cannot_be_opened)
{
	expect_open_fails(HF("no-such.index.json"), NULL, TI_E_IO, "no-such.index.json");
	expect_open_fails("fixtures/safetensors/hf", NULL, TI_E_IO, "not a regular file");
}

Test(hf_index, many_distinct_shards_stay_in_first_appearance_order)
{
	/* 2,000 tensors over 1,000 shards named in an order that sorting would change. */
	size_t cap = 200000, n = 0;
	char *text = malloc(cap);
	n += (size_t)snprintf(text + n, cap - n, "{\"weight_map\": {");
	for (int i = 0; i < 2000; i++)
		n += (size_t)snprintf(text + n, cap - n, "%s\"t%d\": \"shard-%d.safetensors\"", i ? ", " : "", i,
		                      (999 - i % 1000) * 7 % 1000);
	snprintf(text + n, cap - n, "}}");
	open_ok(write_index(text), NULL);
	free(text);
	ASSERT_INT(ti_hf_index_shard_count(idx), 1000);
	for (size_t s = 0; s < 1000; s++) {
		char want[48];
		snprintf(want, sizeof(want), "shard-%zu.safetensors", (999 - s) * 7 % 1000);
		EXPECT_STR(ti_hf_index_shard(idx, s)->file, want);
		EXPECT_INT(ti_hf_index_shard(idx, s)->tensor_count, 2);
	}
	EXPECT_INT(ti_hf_index_find(idx, "t1999")->shard, 999);
}
