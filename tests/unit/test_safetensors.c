/*
 * test_safetensors.c - the safetensors reader and writer.
 *
 * Paths are relative to the repository root, where the tests run. The
 * fixtures come from fixtures/safetensors/gen_safetensors.py, which writes
 * the format by hand exactly as the official writer does (it checks itself
 * against the byte vectors of safetensors/src/tensor.rs's tests), so a file
 * our writer produces must equal its fixture byte for byte. The expected
 * tensor bytes below are the generator's values, packed little-endian.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/safetensors.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))
#define FIXTURE(name) "fixtures/safetensors/" name

static ti_st_file *file;
static ti_st_writer *writer;
static ti_error err;
static char tmpdir[64];
static int tmpcount;

static void setup(void)
{
	strcpy(tmpdir, "/tmp/tinspect-st-XXXXXX");
	cr_assert(mkdtemp(tmpdir) != NULL, "cannot make a temporary folder");
	tmpcount = 0;
}

static void teardown(void)
{
	ti_st_close(file);
	file = NULL;
	ti_st_writer_free(writer);
	writer = NULL;
	char path[128];
	for (int i = 0; i < tmpcount; i++) {
		snprintf(path, sizeof(path), "%s/%d", tmpdir, i);
		unlink(path);
	}
	rmdir(tmpdir);
}

TestSuite(safetensors, .init = setup, .fini = teardown, .timeout = 60);

/* A fresh path in the temporary folder. */
static const char *tmp_path(void)
{
	static char path[128];
	snprintf(path, sizeof(path), "%s/%d", tmpdir, tmpcount++);
	return path;
}

static const char *write_tmp(const void *bytes, size_t n)
{
	const char *path = tmp_path();
	FILE *f = fopen(path, "wb");
	cr_assert(f != NULL, "cannot create %s", path);
	cr_assert(fwrite(bytes, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
	return path;
}

/* The whole file, malloc'd; the caller frees it. */
static unsigned char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f != NULL, "%s is missing: run the tests from the repository root", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *buf = malloc((size_t)n + 1);
	cr_assert(buf && fread(buf, 1, (size_t)n, f) == (size_t)n, "cannot read %s", path);
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static ti_st_file *open_ok(const char *path, const ti_st_limits *limits)
{
	ti_st_close(file);
	file = NULL;
	ti_status s = ti_st_open(path, limits, &file, &err);
	char where[600];
	ti_error_format(&err, where, sizeof(where));
	cr_assert(s == TI_OK, "%s: got %s (\"%s\"), want success", path, ti_status_name(s), where);
	cr_assert(file != NULL);
	return file;
}

static void expect_open_fails(const char *path, const ti_st_limits *limits, ti_status want, const char *piece)
{
	ti_st_file *f = (ti_st_file *)0x1;
	ti_status s = ti_st_open(path, limits, &f, &err);
	cr_expect(s == want, "%s: got %s (\"%s\"), want %s", path, ti_status_name(s), err.message, ti_status_name(want));
	cr_expect(f == NULL, "%s: failed but left a handle", path);
	if (piece)
		EXPECT_CONTAINS(err.message, piece);
	if (s == TI_OK)
		ti_st_close(f);
}

static size_t unhex(const char *hex, unsigned char *out)
{
	size_t n = strlen(hex) / 2;
	for (size_t i = 0; i < n; i++) {
		unsigned v;
		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
	return n;
}

/* --- dtypes ------------------------------------------------------------- */

/* Criterion copies parameters into another process, so rows hold their text, not pointers. */
typedef struct dtype_row {
	char name[16];
	ti_dtype dtype;
} dtype_row;

static dtype_row dtype_rows[] = {
	{"BOOL", TI_DT_BOOL}, {"U8", TI_DT_UINT8}, {"I8", TI_DT_INT8}, {"I16", TI_DT_INT16},
	{"U16", TI_DT_UINT16}, {"I32", TI_DT_INT32}, {"U32", TI_DT_UINT32}, {"I64", TI_DT_INT64},
	{"U64", TI_DT_UINT64}, {"F16", TI_DT_FLOAT16}, {"BF16", TI_DT_BFLOAT16}, {"F32", TI_DT_FLOAT32},
	{"F64", TI_DT_FLOAT64}, {"C64", TI_DT_COMPLEX64}, {"F8_E5M2", TI_DT_FLOAT8_E5M2},
	{"F8_E4M3", TI_DT_FLOAT8_E4M3FN}, {"F8_E8M0", TI_DT_FLOAT8_E8M0FNU},
	{"F8_E4M3FNUZ", TI_DT_FLOAT8_E4M3FNUZ}, {"F8_E5M2FNUZ", TI_DT_FLOAT8_E5M2FNUZ},
	{"F4", TI_DT_FLOAT4_E2M1FN}, {"F6_E2M3", TI_DT_FLOAT6_E2M3FN}, {"F6_E3M2", TI_DT_FLOAT6_E3M2FN},
};

ParameterizedTestParameters(safetensors, every_dtype_of_the_rust_enum_maps_to_a_dtype_and_back) { return ROWS(dtype_rows); }

ParameterizedTest(dtype_row *r, safetensors, every_dtype_of_the_rust_enum_maps_to_a_dtype_and_back)
{
	EXPECT_INT(ti_st_dtype_from_name(r->name), r->dtype);
	EXPECT_STR(ti_st_dtype_name(r->dtype), r->name);
}

Test(safetensors, dtypes_it_cannot_hold_have_no_name)
{
	static const ti_dtype none[] = {TI_DT_INVALID, TI_DT_COMPLEX32, TI_DT_COMPLEX128, TI_DT_QINT8,
	                                TI_DT_QUINT4X2, TI_DT_FLOAT4_E2M1FN_X2, TI_DT_BITS8, TI_DT_COUNT};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
		cr_expect(ti_st_dtype_name(none[i]) == NULL, "%s: got \"%s\", want NULL", ti_dtype_name(none[i]),
		          ti_st_dtype_name(none[i]));
	static const char *const unknown[] = {"F12", "f32", "", "float32", "f4", "F6", "F4_X2"};
	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		EXPECT_INT(ti_st_dtype_from_name(unknown[i]), TI_DT_INVALID);
	EXPECT_INT(ti_st_dtype_from_name(NULL), TI_DT_INVALID);
}

/* --- reading ------------------------------------------------------------ */

typedef struct tensor_row {
	char name[16], dtype_name[16];
	int ndim;
	int64_t shape[2];
	uint64_t nbytes;
	char hex[72];
} tensor_row;

/* The generator's multi_dtype(), in its order. */
static tensor_row multi_rows[] = {
	{"f32.matrix", "F32", 2, {2, 3}, 24, "000080bf000000bf000000000000003f0000803f0000c03f"},
	{"f64.vector", "F64", 1, {4}, 32, "0000000000000000000000000000d03f000000000000e03f000000000000e83f"},
	{"f16", "F16", 1, {3}, 6, "003c00c00038"},
	{"bf16", "BF16", 2, {2, 2}, 8, "803fc0bf8043003e"},
	{"i64", "I64", 1, {3}, 24, "0000000000ffffff00000000000000000700000000000000"},
	{"i32", "I32", 2, {2, 2}, 16, "ffffffff02000000fdffffff04000000"},
	{"i16", "I16", 1, {5}, 10, "fbfffcfffdfffeffffff"},
	{"i8", "I8", 1, {4}, 4, "80ff007f"},
	{"u8", "U8", 1, {3}, 3, "0080ff"},
	{"bool", "BOOL", 1, {4}, 4, "01000001"},
	{"u16", "U16", 1, {2}, 4, "0100ffff"},
	{"u32", "U32", 1, {2}, 8, "01000000ffffffff"},
	{"u64", "U64", 1, {2}, 16, "0100000000000000ffffffffffffffff"},
	{"c64", "C64", 1, {2}, 16, "0000803f00000040000040c0000080c0"},
	{"f8_e4m3", "F8_E4M3", 1, {2}, 2, "38c0"},
	{"f8_e5m2", "F8_E5M2", 1, {2}, 2, "3cc0"},
	{"f8_e8m0", "F8_E8M0", 1, {2}, 2, "7f80"},
	{"f8_e4m3fnuz", "F8_E4M3FNUZ", 1, {1}, 1, "40"},
	{"f8_e5m2fnuz", "F8_E5M2FNUZ", 1, {1}, 1, "40"},
	{"scalar", "F32", 0, {0}, 4, "00006040"},
	{"empty", "F32", 2, {0, 3}, 0, ""},
	{"empty_i64", "I64", 2, {2, 0}, 0, ""},
};

ParameterizedTestParameters(safetensors, reads_each_tensor_of_the_multi_dtype_file) { return ROWS(multi_rows); }

ParameterizedTest(tensor_row *r, safetensors, reads_each_tensor_of_the_multi_dtype_file)
{
	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	const ti_st_tensor *t = ti_st_find(file, r->name);
	cr_assert(t != NULL, "no tensor '%s'", r->name);
	EXPECT_STR(t->name, r->name);
	EXPECT_STR(t->dtype_name, r->dtype_name);
	EXPECT_INT(t->dtype, ti_st_dtype_from_name(r->dtype_name));
	ASSERT_INT(t->ndim, r->ndim);
	int64_t numel = 1;
	for (int d = 0; d < r->ndim; d++) {
		EXPECT_INT(t->shape[d], r->shape[d]);
		numel *= r->shape[d];
	}
	EXPECT_INT(t->numel, numel);
	EXPECT_INT(t->nbytes, r->nbytes);
	EXPECT_INT(t->end - t->begin, r->nbytes);
	EXPECT_INT(t->offset, ti_st_file_info(file)->data_start + t->begin);
	cr_expect(ti_st_tensor_at(file, t->index) == t, "index %zu does not lead back to '%s'", t->index, r->name);

	unsigned char want[64], got[64];
	size_t n = unhex(r->hex, want);
	ASSERT_STATUS(ti_st_read(file, t->index, 0, got, n, &err), TI_OK, err);
	cr_expect(!memcmp(got, want, n), "bytes of '%s' differ", r->name);
}

/* The generator's subbyte(): the sub-byte dtypes, packed low bits first. */
static tensor_row subbyte_rows[] = {
	{"mx.f4", "F4", 2, {4, 4}, 8, "1032547698badcfe"},
	{"mx.f6_e2m3", "F6_E2M3", 1, {4}, 3, "088402"},
	{"mx.f6_e3m2", "F6_E3M2", 2, {2, 4}, 6, "0cc47e40200c"},
	{"mx.scale", "F8_E8M0", 1, {2}, 2, "7f80"},
	{"bias", "F32", 1, {2}, 8, "0000003f000000bf"},
	{"empty_f4", "F4", 2, {0, 2}, 0, ""},
};

ParameterizedTestParameters(safetensors, reads_sub_byte_tensors_as_packed_bytes) { return ROWS(subbyte_rows); }

ParameterizedTest(tensor_row *r, safetensors, reads_sub_byte_tensors_as_packed_bytes)
{
	open_ok(FIXTURE("subbyte.safetensors"), NULL);
	const ti_st_tensor *t = ti_st_find(file, r->name);
	cr_assert(t != NULL, "no tensor '%s'", r->name);
	EXPECT_STR(t->dtype_name, r->dtype_name);
	EXPECT_INT(t->dtype, ti_st_dtype_from_name(r->dtype_name));
	ASSERT_INT(t->ndim, r->ndim);
	int64_t numel = 1;
	for (int d = 0; d < r->ndim; d++)
		numel *= r->shape[d];
	EXPECT_INT(t->numel, numel);
	/* numel * bits / 8: tensor.rs Dtype::bitsize */
	EXPECT_INT(t->nbytes, r->nbytes);
	EXPECT_INT((uint64_t)numel * ti_dtype_bits(t->dtype), 8 * r->nbytes);
	EXPECT_INT(t->end - t->begin, r->nbytes);
	unsigned char want[64], got[64];
	size_t n = unhex(r->hex, want);
	ASSERT_INT(n, r->nbytes);
	ASSERT_STATUS(ti_st_read(file, t->index, 0, got, n, &err), TI_OK, err);
	cr_expect(!memcmp(got, want, n), "bytes of '%s' differ", r->name);
}

Test(safetensors, sub_byte_tensors_keep_the_official_order)
{
	/* F32, F8_E8M0, F6_E3M2, F6_E2M3, then F4: the Rust enum's rank, largest first, then name */
	static const char *const header_order[] = {"bias", "mx.scale", "mx.f6_e3m2", "mx.f6_e2m3", "empty_f4", "mx.f4"};
	open_ok(FIXTURE("subbyte.safetensors"), NULL);
	ASSERT_INT(ti_st_tensor_count(file), 6);
	for (size_t i = 0; i < 6; i++)
		EXPECT_STR(ti_st_tensor_at(file, i)->name, header_order[i]);
	EXPECT_INT(ti_st_file_info(file)->data_size, 27);
}

Test(safetensors, a_sub_byte_shape_must_end_on_a_byte)
{
	/* tensor.rs test_serialization_fp4_misaligned: F4 [1, 3] is 12 bits; [1, 2] of 1 byte is fine */
	const char *fits = "{\"a\":{\"dtype\":\"F4\",\"shape\":[1,2],\"data_offsets\":[0,1]}}    ";
	unsigned char bytes[128];
	size_t n = strlen(fits);
	for (int i = 0; i < 8; i++)
		bytes[i] = (unsigned char)(i ? 0 : n);
	memcpy(bytes + 8, fits, n);
	bytes[8 + n] = 0x21;
	open_ok(write_tmp(bytes, 8 + n + 1), NULL);
	EXPECT_INT(ti_st_tensor_at(file, 0)->nbytes, 1);
	const char *misaligned = "{\"a\":{\"dtype\":\"F4\",\"shape\":[1,3],\"data_offsets\":[0,2]}}    ";
	ASSERT_INT(strlen(misaligned), n);
	memcpy(bytes + 8, misaligned, n);
	bytes[8 + n + 1] = 0x03;
	expect_open_fails(write_tmp(bytes, 8 + n + 2), NULL, TI_E_CORRUPT, "3 elements of F4 (4 bits each) end inside a byte");
}

Test(safetensors, keeps_the_header_order_and_gives_the_data_order)
{
	/* The official writer's order: dtype rank in the Rust enum, largest first, then name. */
	static const char *const header_order[] = {
		"u64", "empty_i64", "i64", "f64.vector", "c64", "empty", "f32.matrix", "scalar", "u32", "i32", "bf16",
		"f16", "u16", "i16", "f8_e5m2fnuz", "f8_e4m3fnuz", "f8_e8m0", "f8_e4m3", "f8_e5m2", "i8", "u8", "bool",
	};
	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	size_t n = sizeof(header_order) / sizeof(header_order[0]);
	ASSERT_INT(ti_st_tensor_count(file), n);
	for (size_t i = 0; i < n; i++) {
		EXPECT_STR(ti_st_tensor_at(file, i)->name, header_order[i]);
		EXPECT_INT(ti_st_tensor_at(file, i)->index, i);
	}
	EXPECT_INT(ti_st_tensor_at(file, n) == NULL, 1);
	uint64_t at = 0;
	for (size_t i = 0; i < n; i++) {
		const ti_st_tensor *t = ti_st_tensor_by_offset(file, i);
		EXPECT_INT(t->begin, at);
		at = t->end;
	}
	EXPECT_INT(at, ti_st_file_info(file)->data_size);
	EXPECT_INT(ti_st_tensor_by_offset(file, n) == NULL, 1);
	cr_expect(ti_st_find(file, "nope") == NULL && ti_st_find(file, "") == NULL, "found a tensor that is not there");
}

Test(safetensors, data_order_need_not_be_header_order)
{
	/* unsorted.safetensors: "z" (U8) first in the data, then "a" (F64) at offset 2. */
	open_ok(FIXTURE("unsorted.safetensors"), NULL);
	ASSERT_INT(ti_st_tensor_count(file), 2);
	EXPECT_STR(ti_st_tensor_at(file, 0)->name, "z");
	EXPECT_STR(ti_st_tensor_by_offset(file, 1)->name, "a");
	EXPECT_INT(ti_st_find(file, "a")->begin, 2);
	double one;
	ASSERT_STATUS(ti_st_read(file, ti_st_find(file, "a")->index, 0, &one, 8, &err), TI_OK, err);
	EXPECT_DOUBLE(one, 1.0);
}

Test(safetensors, the_header_is_padded_to_keep_the_data_aligned)
{
	static const char *const files[] = {"multi_dtype.safetensors", "with_metadata.safetensors",
	                                    "rust_vector.safetensors", "empty.safetensors"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[128];
		snprintf(path, sizeof(path), FIXTURE("%s"), files[i]);
		open_ok(path, NULL);
		const ti_st_info *info = ti_st_file_info(file);
		cr_expect(info->data_start % 8 == 0, "%s: data starts at %" PRIu64, files[i], info->data_start);
		EXPECT_INT(info->data_start, 8 + info->header_size);
		EXPECT_INT(info->file_size, info->data_start + info->data_size);
	}
}

Test(safetensors, keeps_metadata_pairs_in_order)
{
	open_ok(FIXTURE("with_metadata.safetensors"), NULL);
	EXPECT_INT(ti_st_file_info(file)->has_metadata, 1);
	ASSERT_INT(ti_st_metadata_count(file), 3);
	EXPECT_STR(ti_st_metadata_at(file, 0)->key, "format");
	EXPECT_STR(ti_st_metadata_at(file, 0)->value, "pt");
	EXPECT_STR(ti_st_metadata_at(file, 1)->key, "note");
	EXPECT_STR(ti_st_metadata_at(file, 1)->value,
	           "caf\xc3\xa9 \xe2\x9c\x93 \"quoted\" back\\slash tab\tnewline\nbell\a");
	EXPECT_STR(ti_st_metadata_at(file, 2)->key, "empty");
	EXPECT_STR(ti_st_metadata_at(file, 2)->value, "");
	EXPECT_INT(ti_st_metadata_at(file, 3) == NULL, 1);
	EXPECT_STR(ti_st_metadata_get(file, "format"), "pt");
	EXPECT_STR(ti_st_metadata_get(file, "missing"), NULL);
	cr_expect(ti_st_find(file, "caf\xc3\xa9.\"odd\"\tname") != NULL, "the escaped name was not read back");

	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	EXPECT_INT(ti_st_file_info(file)->has_metadata, 0);
	EXPECT_INT(ti_st_metadata_count(file), 0);
}

Test(safetensors, reads_a_scalar_and_empty_tensors)
{
	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	const ti_st_tensor *s = ti_st_find(file, "scalar");
	cr_assert(s != NULL);
	EXPECT_INT(s->ndim, 0);
	cr_expect(s->shape != NULL, "a scalar's shape is NULL");
	EXPECT_INT(s->numel, 1);
	float v = 0;
	ASSERT_STATUS(ti_st_read(file, s->index, 0, &v, 4, &err), TI_OK, err);
	EXPECT_DOUBLE(v, 3.5);

	const ti_st_tensor *e = ti_st_find(file, "empty");
	cr_assert(e != NULL);
	EXPECT_INT(e->numel, 0);
	EXPECT_INT(e->nbytes, 0);
	EXPECT_INT(e->begin, e->end);
	EXPECT_STATUS(ti_st_read(file, e->index, 0, NULL, 0, &err), TI_OK, err);
	EXPECT_STATUS(ti_st_read(file, e->index, 0, &v, 1, &err), TI_E_INVALID, err);

	open_ok(FIXTURE("empty.safetensors"), NULL);
	EXPECT_INT(ti_st_tensor_count(file), 0);
	EXPECT_INT(ti_st_file_info(file)->data_size, 0);
}

Test(safetensors, reads_a_tensor_in_chunks)
{
	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	const ti_st_tensor *t = ti_st_find(file, "f64.vector");
	unsigned char whole[32], pieces[32];
	ASSERT_STATUS(ti_st_read(file, t->index, 0, whole, 32, &err), TI_OK, err);
	for (uint64_t at = 0; at < 32; at += 5) {
		size_t n = 32 - at < 5 ? (size_t)(32 - at) : 5;
		ASSERT_STATUS(ti_st_read(file, t->index, at, pieces + at, n, &err), TI_OK, err);
	}
	cr_expect(!memcmp(whole, pieces, 32), "chunked reads differ from one read");
	double third;
	ASSERT_STATUS(ti_st_read(file, t->index, 16, &third, 8, &err), TI_OK, err);
	EXPECT_DOUBLE(third, 0.5);
}

Test(safetensors, refuses_reads_past_a_tensor)
{
	open_ok(FIXTURE("multi_dtype.safetensors"), NULL);
	const ti_st_tensor *t = ti_st_find(file, "f16");
	unsigned char buf[16];
	EXPECT_STATUS(ti_st_read(file, t->index, 0, buf, 7, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "'f16'");
	EXPECT_STATUS(ti_st_read(file, t->index, 4, buf, 3, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_st_read(file, t->index, UINT64_MAX, buf, 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_st_read(file, 999, 0, buf, 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_st_read(file, t->index, 4, buf, 2, &err), TI_OK, err);
}

Test(safetensors, takes_whitespace_before_the_header_s_brace)
{
	open_ok(FIXTURE("leading_space.safetensors"), NULL);
	EXPECT_INT(ti_st_tensor_count(file), 1);
}

typedef struct broken_row {
	char file[32];
	ti_status status;
	char piece[96]; /* in the message */
} broken_row;

static broken_row broken_rows[] = {
	{"short", TI_E_CORRUPT, "too short for the 8-byte header size"},
	{"header_past_end", TI_E_CORRUPT, "header size 1000 runs past the end of the file"},
	{"header_empty", TI_E_CORRUPT, "too short to hold a JSON object"},
	{"not_brace", TI_E_CORRUPT, "does not start with '{'"},
	{"bad_json", TI_E_CORRUPT, "not valid JSON"},
	{"nul_padding", TI_E_CORRUPT, "bytes after its JSON object"},
	{"bad_utf8", TI_E_CORRUPT, "not valid UTF-8"},
	{"nul_escape", TI_E_CORRUPT, "\\u0000"},
	{"hole", TI_E_CORRUPT, "bytes [8, 12) of the data belong to no tensor: a hole before tensor 'b'"},
	{"overlap", TI_E_CORRUPT, "tensor 'b' at data_offsets [4, 12] overlaps tensor 'a' at [0, 8]"},
	{"out_of_bounds", TI_E_CORRUPT, "tensor 'a' has data_offsets [0, 8] past the end of the data (4 bytes)"},
	{"bad_size", TI_E_CORRUPT, "holding 8 bytes, but F32 of shape [3] needs 12"},
	{"reversed_offsets", TI_E_CORRUPT, "end before they begin"},
	{"trailing_data", TI_E_CORRUPT, "the last 4 bytes of the data (from 8 on) belong to no tensor"},
	{"bad_dtype", TI_E_UNSUPPORTED, "tensor 'a' has the unknown dtype 'F12'"},
	{"misaligned_f4", TI_E_CORRUPT, "tensor 'a' has the shape [3]: 3 elements of F4 (4 bits each) end inside a byte"},
	{"misaligned_f6", TI_E_CORRUPT, "shape [2, 1]: 2 elements of F6_E3M2 (6 bits each) end inside a byte"},
	{"bad_size_f4", TI_E_CORRUPT, "holding 4 bytes, but F4 of shape [4] needs 2"},
	{"duplicate_key", TI_E_CORRUPT, "duplicate tensor name 'a'"},
	{"duplicate_metadata", TI_E_CORRUPT, "duplicate key '__metadata__'"},
	{"metadata_not_string", TI_E_CORRUPT, "__metadata__ value of 'n' is not a string"},
	{"negative_dim", TI_E_CORRUPT, "header has the number '-2' where only non-negative integers belong, in the entry 'a'"},
	{"float_dim", TI_E_CORRUPT, "the number '2.0' where only non-negative integers belong, in the entry 'a'"},
	{"huge_shape", TI_E_CORRUPT, "too large to count"},
	{"missing_offsets", TI_E_CORRUPT, "tensor 'a' has no 'data_offsets'"},
	{"duplicate_field", TI_E_CORRUPT, "tensor 'a' has two 'dtype' fields"},
};

ParameterizedTestParameters(safetensors, rejects_each_broken_file) { return ROWS(broken_rows); }

ParameterizedTest(broken_row *r, safetensors, rejects_each_broken_file)
{
	char path[128];
	snprintf(path, sizeof(path), FIXTURE("broken/%s.safetensors"), r->file);
	struct stat st;
	cr_assert(stat(path, &st) == 0, "%s is missing: run fixtures/safetensors/gen_safetensors.py", path);
	expect_open_fails(path, NULL, r->status, r->piece);
}

Test(safetensors, every_file_in_broken_is_in_the_table)
{
	/* A new broken fixture must get a row above. */
	static const char *const names[] = {
		"bad_dtype", "bad_json", "bad_size", "bad_size_f4", "bad_utf8", "duplicate_field", "duplicate_key",
		"duplicate_metadata", "float_dim", "header_empty", "header_past_end", "hole", "huge_shape",
		"metadata_not_string", "misaligned_f4", "misaligned_f6", "missing_offsets", "negative_dim", "not_brace",
		"nul_escape", "nul_padding", "out_of_bounds", "overlap", "reversed_offsets", "short", "trailing_data",
	};
	EXPECT_INT(sizeof(names) / sizeof(names[0]), sizeof(broken_rows) / sizeof(broken_rows[0]));
}

static void expect_every_cut_fails_cleanly(const char *fixture)
{
	size_t size;
	unsigned char *bytes = slurp(fixture, &size);
	const char *path = tmp_path();
	for (size_t n = 0; n < size; n++) {
		FILE *f = fopen(path, "wb");
		cr_assert(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0);
		ti_st_file *h = NULL;
		ti_status s = ti_st_open(path, NULL, &h, &err);
		cr_expect(s == TI_E_CORRUPT, "cut at %zu: got %s (\"%s\"), want corrupt input", n, ti_status_name(s),
		          err.message);
		cr_expect(h == NULL && err.message[0], "cut at %zu: a handle or no message", n);
		ti_st_close(h);
	}
	free(bytes);
}

Test(safetensors, every_cut_of_a_valid_file_fails_cleanly)
{
	expect_every_cut_fails_cleanly(FIXTURE("with_metadata.safetensors"));
	expect_every_cut_fails_cleanly(FIXTURE("subbyte.safetensors"));
}

static void expect_every_changed_byte_fails_cleanly_or_tiles(const char *fixture)
{
	size_t size;
	unsigned char *bytes = slurp(fixture, &size);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = n << 8 | bytes[i];
	const char *path = write_tmp(bytes, size);
	int fd = open(path, O_WRONLY);
	cr_assert(fd >= 0);
	static const unsigned char changes[] = {0x00, 0xff, 0xc3, '"', '[', ']', '{', '}', ',', ':', '9', '-', '\\'};
	for (size_t at = 0; at < 8 + n; at++) {
		for (size_t k = 0; k < sizeof(changes); k++) {
			cr_assert(pwrite(fd, &changes[k], 1, (off_t)at) == 1);
			ti_st_file *h = NULL;
			ti_status s = ti_st_open(path, NULL, &h, &err);
			if (s != TI_OK) {
				cr_expect(h == NULL && err.message[0], "byte %zu = 0x%02x: a handle or no message", at, changes[k]);
				continue;
			}
			/* Still a valid file (a changed name or value): it must tile its data. */
			uint64_t sum = 0;
			for (size_t i = 0; i < ti_st_tensor_count(h); i++)
				sum += ti_st_tensor_at(h, i)->nbytes;
			cr_expect(sum == ti_st_file_info(h)->data_size, "byte %zu = 0x%02x: tensors do not tile the data", at,
			          changes[k]);
			ti_st_close(h);
		}
		cr_assert(pwrite(fd, &bytes[at], 1, (off_t)at) == 1); /* put the byte back */
	}
	close(fd);
	free(bytes);
}

Test(safetensors, every_changed_byte_of_the_header_fails_cleanly_or_still_tiles)
{
	expect_every_changed_byte_fails_cleanly_or_tiles(FIXTURE("with_metadata.safetensors"));
	/* a changed size or dtype of a packed tensor: misaligned or mis-sized, never a wrong count */
	expect_every_changed_byte_fails_cleanly_or_tiles(FIXTURE("subbyte.safetensors"));
}

Test(safetensors, limits_bound_the_header)
{
	ti_st_limits lim;
	ti_st_limits_default(&lim);
	EXPECT_INT(lim.header_max, 100000000);
	EXPECT_INT(lim.rank_max, 64);

	lim.header_max = 64;
	expect_open_fails(FIXTURE("multi_dtype.safetensors"), &lim, TI_E_LIMIT, "larger than the limit of 64 bytes");
	ti_st_limits_default(&lim);
	lim.tensors_max = 21;
	expect_open_fails(FIXTURE("multi_dtype.safetensors"), &lim, TI_E_LIMIT, "22 tensors");
	ti_st_limits_default(&lim);
	lim.rank_max = 1;
	expect_open_fails(FIXTURE("multi_dtype.safetensors"), &lim, TI_E_LIMIT, "more than 1 dimensions");
	ti_st_limits_default(&lim);
	lim.values_max = 40;
	expect_open_fails(FIXTURE("multi_dtype.safetensors"), &lim, TI_E_LIMIT, "more than 40 JSON values");
}

Test(safetensors, refuses_a_header_above_100_mb_without_reading_it)
{
	/* A sparse file: 8 size bytes claiming 100,000,001 bytes of header, and room for them. */
	const char *path = tmp_path();
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	unsigned char size[8] = {0x01, 0xe1, 0xf5, 0x05, 0, 0, 0, 0}; /* 100,000,001 */
	cr_assert(write(fd, size, 8) == 8 && ftruncate(fd, 100000200) == 0 && close(fd) == 0);
	expect_open_fails(path, NULL, TI_E_LIMIT, "header of 100000001 bytes is larger than the limit");
}

Test(safetensors, says_why_a_file_cannot_be_opened)
{
	expect_open_fails("fixtures/safetensors/no-such-file.safetensors", NULL, TI_E_IO, "no-such-file");
	expect_open_fails("fixtures/safetensors", NULL, TI_E_IO, "not a regular file");
	const char *fifo = tmp_path();
	cr_assert(mkfifo(fifo, 0600) == 0);
	expect_open_fails(fifo, NULL, TI_E_IO, "not a regular file"); /* and does not wait for a writer */
}

Test(safetensors, sniffs_the_format_from_the_first_bytes)
{
	static const unsigned char st[] = "\x10\0\0\0\0\0\0\0{\"a\":1}";
	static const unsigned char spaced[] = "\x10\0\0\0\0\0\0\0  {";
	static const unsigned char zip[] = "PK\x03\x04\x14\0\0\0\0\0";
	static const unsigned char pickle[] = {0x80, 0x02, 0x8a, 0x0a, 'l', 0xfc, 0x9c, 'F', 0xf9, ' ', 'j', 0xa8};
	EXPECT_INT(ti_st_sniff(st, 12, 100), 1);
	EXPECT_INT(ti_st_sniff(spaced, 11, 100), 1);
	EXPECT_INT(ti_st_sniff(st, 12, 20), 0);  /* 8 + 16 passes the file */
	EXPECT_INT(ti_st_sniff(st, 8, 100), 0);  /* too few bytes to tell */
	EXPECT_INT(ti_st_sniff(zip, 10, 1000), 0);
	EXPECT_INT(ti_st_sniff(pickle, 12, 1000), 0);
}

/* --- writing ------------------------------------------------------------ */

/* Copies an open file into a new one through the writer, in chunks of `chunk` bytes. */
static const char *copy_through_writer(const ti_st_file *src, ti_st_order order, size_t chunk)
{
	size_t n = ti_st_tensor_count(src);
	ti_st_spec *specs = calloc(n + 1, sizeof(*specs));
	for (size_t i = 0; i < n; i++) {
		const ti_st_tensor *t = ti_st_tensor_at(src, i);
		specs[i] = (ti_st_spec){t->name, t->dtype, t->ndim, t->shape};
	}
	size_t m = ti_st_metadata_count(src);
	ti_st_pair *pairs = calloc(m + 1, sizeof(*pairs));
	for (size_t i = 0; i < m; i++)
		pairs[i] = *ti_st_metadata_at(src, i);
	const char *path = tmp_path();
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	ti_st_writer_free(writer);
	ASSERT_STATUS(ti_st_writer_begin(fd, specs, n, pairs, m, order, &writer, &err), TI_OK, err);
	unsigned char *buf = malloc(chunk);
	for (size_t k = 0; k < ti_st_writer_count(writer); k++) {
		const ti_st_tensor *t = ti_st_writer_tensor(writer, k);
		for (uint64_t at = 0; at < t->nbytes; at += chunk) {
			size_t len = t->nbytes - at < chunk ? (size_t)(t->nbytes - at) : chunk;
			ASSERT_STATUS(ti_st_read(src, t->index, at, buf, len, &err), TI_OK, err);
			ASSERT_STATUS(ti_st_writer_put(writer, t->index, buf, len, &err), TI_OK, err);
		}
	}
	ASSERT_STATUS(ti_st_writer_end(writer, &err), TI_OK, err);
	struct stat st;
	cr_assert(fstat(fd, &st) == 0);
	EXPECT_INT(st.st_size, ti_st_writer_file_size(writer));
	close(fd);
	free(buf);
	free(specs);
	free(pairs);
	return path;
}

static void expect_same_file(const char *got_path, const char *want_path)
{
	size_t got_size, want_size;
	unsigned char *got = slurp(got_path, &got_size), *want = slurp(want_path, &want_size);
	EXPECT_INT(got_size, want_size);
	size_t n = got_size < want_size ? got_size : want_size, at = 0;
	while (at < n && got[at] == want[at])
		at++;
	cr_expect(at == n && got_size == want_size, "%s differs from %s at byte %zu", got_path, want_path, at);
	free(got);
	free(want);
}

typedef struct copy_row {
	char file[48];
	ti_st_order order;
	size_t chunk;
} copy_row;

static copy_row copy_rows[] = {
	{"multi_dtype.safetensors", TI_ST_ORDER_OFFICIAL, 4096},
	{"multi_dtype.safetensors", TI_ST_ORDER_AS_GIVEN, 3},
	{"with_metadata.safetensors", TI_ST_ORDER_OFFICIAL, 1},
	{"rust_vector.safetensors", TI_ST_ORDER_OFFICIAL, 7},
	{"unsorted.safetensors", TI_ST_ORDER_AS_GIVEN, 1},
	{"empty.safetensors", TI_ST_ORDER_OFFICIAL, 8},
	{"subbyte.safetensors", TI_ST_ORDER_OFFICIAL, 1},
	{"subbyte.safetensors", TI_ST_ORDER_AS_GIVEN, 3},
	{"hf/model-00001-of-00002.safetensors", TI_ST_ORDER_OFFICIAL, 5},
	{"hf/model-00002-of-00002.safetensors", TI_ST_ORDER_OFFICIAL, 5},
};

ParameterizedTestParameters(safetensors, writing_what_was_read_gives_the_same_bytes) { return ROWS(copy_rows); }

/* Round trip: the header order of a file written in the official order is the
 * official order, so both orders must give back the file itself. */
ParameterizedTest(copy_row *r, safetensors, writing_what_was_read_gives_the_same_bytes)
{
	char path[128];
	snprintf(path, sizeof(path), FIXTURE("%s"), r->file);
	ti_st_file *src = NULL;
	ASSERT_STATUS(ti_st_open(path, NULL, &src, &err), TI_OK, err);
	const char *out = copy_through_writer(src, r->order, r->chunk);
	ti_st_close(src);
	expect_same_file(out, path);
	open_ok(out, NULL); /* and our reader takes it */
}

Test(safetensors, writes_the_bytes_of_tensor_rs_test_serialization)
{
	/* safetensors/src/tensor.rs test_serialization: "attn.0", F32 [1, 2, 3], values 0 ... 5. */
	static const unsigned char want[] = {
		64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
		116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
		58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
		101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
		0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64};
	static const int64_t shape[] = {1, 2, 3};
	static const float values[] = {0, 1, 2, 3, 4, 5};
	ti_st_spec spec = {"attn.0", TI_DT_FLOAT32, 3, shape};
	const char *path = tmp_path();
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ASSERT_STATUS(ti_st_writer_begin(fd, &spec, 1, NULL, 0, TI_ST_ORDER_OFFICIAL, &writer, &err), TI_OK, err);
	EXPECT_INT(ti_st_writer_file_size(writer), sizeof(want));
	ASSERT_STATUS(ti_st_writer_put(writer, 0, values, sizeof(values), &err), TI_OK, err);
	ASSERT_STATUS(ti_st_writer_end(writer, &err), TI_OK, err);
	close(fd);
	size_t size;
	unsigned char *got = slurp(path, &size);
	EXPECT_INT(size, sizeof(want));
	cr_expect(size == sizeof(want) && !memcmp(got, want, size), "the bytes differ from tensor.rs's");
	free(got);
}

Test(safetensors, writes_the_empty_files_of_tensor_rs_test_empty)
{
	static const unsigned char bare[] = {8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32};
	static const unsigned char framework[] = {
		40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
		95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
		116, 34, 125, 125, 32, 32, 32, 32, 32};
	ti_st_pair pair = {"framework", "pt"};
	for (int with = 0; with < 2; with++) {
		const char *path = tmp_path();
		int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
		ti_st_writer_free(writer);
		ASSERT_STATUS(ti_st_writer_begin(fd, NULL, 0, &pair, (size_t)with, TI_ST_ORDER_OFFICIAL, &writer, &err),
		              TI_OK, err);
		ASSERT_STATUS(ti_st_writer_end(writer, &err), TI_OK, err);
		close(fd);
		size_t size;
		unsigned char *got = slurp(path, &size);
		const unsigned char *want = with ? framework : bare;
		size_t want_size = with ? sizeof(framework) : sizeof(bare);
		cr_expect(size == want_size && !memcmp(got, want, size), "with %d metadata pairs: the bytes differ", with);
		free(got);
	}
}

Test(safetensors, streams_a_big_tensor_in_uneven_pieces)
{
	/* 300,000 bytes: pieces smaller and larger than the 64 KiB buffer. */
	enum { N = 75000 };
	int32_t *data = malloc(N * sizeof(int32_t));
	for (int i = 0; i < N; i++)
		data[i] = i * 7 - 1000;
	int64_t shape[] = {N};
	int64_t none[] = {0};
	ti_st_spec specs[] = {{"small", TI_DT_INT8, 0, NULL}, {"big", TI_DT_INT32, 1, shape},
	                      {"nothing", TI_DT_FLOAT32, 1, none}};
	const char *path = tmp_path();
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ASSERT_STATUS(ti_st_writer_begin(fd, specs, 3, NULL, 0, TI_ST_ORDER_AS_GIVEN, &writer, &err), TI_OK, err);
	int8_t seven = 7;
	ASSERT_STATUS(ti_st_writer_put(writer, 0, &seven, 1, &err), TI_OK, err);
	static const size_t pieces[] = {1, 3, 70000, 5, 131072, 20000};
	size_t at = 0;
	const unsigned char *bytes = (const unsigned char *)data;
	for (size_t p = 0; at < sizeof(int32_t) * N; p++) {
		size_t len = pieces[p % 6];
		if (len > sizeof(int32_t) * N - at)
			len = sizeof(int32_t) * N - at;
		ASSERT_STATUS(ti_st_writer_put(writer, 1, bytes + at, len, &err), TI_OK, err);
		at += len;
	}
	ASSERT_STATUS(ti_st_writer_end(writer, &err), TI_OK, err);
	close(fd);

	open_ok(path, NULL);
	const ti_st_tensor *big = ti_st_find(file, "big");
	cr_assert(big != NULL);
	EXPECT_INT(big->begin, 1);
	EXPECT_INT(ti_st_find(file, "nothing")->nbytes, 0);
	int32_t *back = malloc(N * sizeof(int32_t));
	ASSERT_STATUS(ti_st_read(file, big->index, 0, back, N * sizeof(int32_t), &err), TI_OK, err);
	cr_expect(!memcmp(back, data, N * sizeof(int32_t)), "the big tensor came back different");
	free(back);
	free(data);
}

/* A writer over /dev/null for the argument checks: nothing is kept. */
static ti_status begin_specs(const ti_st_spec *specs, size_t n, const ti_st_pair *pairs, size_t m)
{
	int fd = open("/dev/null", O_WRONLY);
	cr_assert(fd >= 0);
	ti_st_writer *w = NULL;
	ti_status s = ti_st_writer_begin(fd, specs, n, pairs, m, TI_ST_ORDER_OFFICIAL, &w, &err);
	cr_expect((s == TI_OK) == (w != NULL), "status and writer disagree");
	ti_st_writer_free(w);
	close(fd);
	return s;
}

Test(safetensors, the_writer_refuses_what_no_reader_would_take)
{
	static const int64_t two[] = {2}, three[] = {3}, negative[] = {-1}, huge[] = {INT64_C(1) << 40, INT64_C(1) << 40};
	static const ti_st_pair dup_keys[] = {{"k", "1"}, {"k", "2"}}, no_value[] = {{"k", NULL}};
	static const struct {
		ti_st_spec specs[2];
		size_t count;
		const ti_st_pair *pairs;
		size_t pair_count;
		ti_status status;
		const char *piece;
	} rows[] = {
		{{{"a", TI_DT_FLOAT32, 1, two}, {"a", TI_DT_FLOAT32, 1, two}}, 2, NULL, 0, TI_E_INVALID,
		 "duplicate tensor name 'a'"},
		{{{"__metadata__", TI_DT_FLOAT32, 1, two}}, 1, NULL, 0, TI_E_INVALID, "'__metadata__' is reserved"},
		{{{"n", TI_DT_FLOAT32, 1, negative}}, 1, NULL, 0, TI_E_INVALID, "negative size -1 in dimension 0"},
		{{{"b", TI_DT_FLOAT64, 2, huge}}, 1, NULL, 0, TI_E_LIMIT, "too large to count"},
		{{{"c", TI_DT_COMPLEX128, 1, two}}, 1, NULL, 0, TI_E_UNSUPPORTED, "complex128"},
		{{{"caf\xe9", TI_DT_FLOAT32, 1, two}}, 1, NULL, 0, TI_E_INVALID, "not valid UTF-8"},
		{{{"r", TI_DT_FLOAT32, 65, two}}, 1, NULL, 0, TI_E_INVALID, "65 dimensions"},
		{{{"s", TI_DT_FLOAT32, 1, NULL}}, 1, NULL, 0, TI_E_INVALID, "no shape"},
		{{{"a", TI_DT_FLOAT32, 1, two}}, 1, dup_keys, 2, TI_E_INVALID, "duplicate metadata key 'k'"},
		{{{"a", TI_DT_FLOAT32, 1, two}}, 1, no_value, 1, TI_E_INVALID, "no key or no value"},
		{{{"f4", TI_DT_FLOAT4_E2M1FN, 1, three}}, 1, NULL, 0, TI_E_INVALID,
		 "tensor 'f4' has the shape [3]: 3 elements of F4 (4 bits each) end inside a byte"},
		{{{"f6", TI_DT_FLOAT6_E2M3FN, 1, two}}, 1, NULL, 0, TI_E_INVALID, "2 elements of F6_E2M3 (6 bits each)"},
		{{{"x2", TI_DT_FLOAT4_E2M1FN_X2, 1, two}}, 1, NULL, 0, TI_E_UNSUPPORTED, "float4_e2m1fn_x2"},
		{{{"f4", TI_DT_FLOAT4_E2M1FN, 1, two}}, 1, NULL, 0, TI_OK, ""},
		{{{"a", TI_DT_FLOAT32, 1, two}}, 1, NULL, 0, TI_OK, ""},
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		ti_status s = begin_specs(rows[i].specs, rows[i].count, rows[i].pairs, rows[i].pair_count);
		cr_expect(s == rows[i].status, "row %zu: got %s (\"%s\"), want %s", i, ti_status_name(s), err.message,
		          ti_status_name(rows[i].status));
		EXPECT_CONTAINS(s ? err.message : "", rows[i].piece);
	}
	ti_st_writer *w = NULL;
	EXPECT_STATUS(ti_st_writer_begin(-1, rows[0].specs, 1, NULL, 0, TI_ST_ORDER_OFFICIAL, &w, &err), TI_E_INVALID,
	              err);
}

Test(safetensors, the_writer_checks_that_each_tensor_gets_exactly_its_bytes)
{
	int64_t two[] = {2};
	/* In the official order "b" (F64, 16 bytes) comes before "a" (F32, 8 bytes). */
	ti_st_spec specs[] = {{"a", TI_DT_FLOAT32, 1, two}, {"b", TI_DT_FLOAT64, 1, two}};
	unsigned char bytes[32] = {0};
	int fd = open("/dev/null", O_WRONLY);
	ASSERT_STATUS(ti_st_writer_begin(fd, specs, 2, NULL, 0, TI_ST_ORDER_OFFICIAL, &writer, &err), TI_OK, err);
	EXPECT_STR(ti_st_writer_tensor(writer, 0)->name, "b");
	EXPECT_INT(ti_st_writer_tensor(writer, 0)->index, 1);
	EXPECT_INT(ti_st_writer_tensor(writer, 2) == NULL, 1);

	EXPECT_STATUS(ti_st_writer_put(writer, 0, bytes, 8, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "bytes for tensor 'a' arrived, but tensor 'b' comes first");
	EXPECT_STATUS(ti_st_writer_put(writer, 1, bytes, 17, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "17 bytes for tensor 'b' run past its end (16 of its 16 bytes are left)");
	EXPECT_STATUS(ti_st_writer_put(writer, 1, bytes, 10, &err), TI_OK, err);
	EXPECT_STATUS(ti_st_writer_put(writer, 0, bytes, 8, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "tensor 'b' got 10 of its 16 bytes before bytes for 'a' arrived");
	EXPECT_STATUS(ti_st_writer_end(writer, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "tensor 'b' got 10 of its 16 bytes");
	EXPECT_STATUS(ti_st_writer_put(writer, 1, bytes, 6, &err), TI_OK, err);
	EXPECT_STATUS(ti_st_writer_put(writer, 1, bytes, 1, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "tensor 'b' is complete");
	EXPECT_STATUS(ti_st_writer_put(writer, 5, bytes, 1, &err), TI_E_INVALID, err);
	EXPECT_STATUS(ti_st_writer_put(writer, 0, bytes, 0, &err), TI_OK, err);
	EXPECT_STATUS(ti_st_writer_end(writer, &err), TI_E_INVALID, err);
	EXPECT_CONTAINS(err.message, "tensor 'a' got 0 of its 8 bytes");
	EXPECT_STATUS(ti_st_writer_put(writer, 0, bytes, 8, &err), TI_OK, err);
	EXPECT_STATUS(ti_st_writer_end(writer, &err), TI_OK, err);
	close(fd);
}

Test(safetensors, a_failing_write_is_an_io_error_and_stays_one)
{
	int64_t n[] = {100000};
	ti_st_spec spec = {"x", TI_DT_UINT8, 1, n};
	const char *path = write_tmp("", 0);
	int ro = open(path, O_RDONLY);
	ti_st_writer *w = NULL;
	EXPECT_STATUS(ti_st_writer_begin(ro, &spec, 1, NULL, 0, TI_ST_ORDER_OFFICIAL, &w, &err), TI_E_IO, err);
	cr_expect(w == NULL, "a failed begin left a writer");
	close(ro);

	/* A pipe: the header fits in it; then its reader goes away, so the data
	 * cannot be written (SIGPIPE is ignored, so write fails with EPIPE). */
	int fds[2];
	cr_assert(pipe(fds) == 0);
	signal(SIGPIPE, SIG_IGN);
	ASSERT_STATUS(ti_st_writer_begin(fds[1], &spec, 1, NULL, 0, TI_ST_ORDER_OFFICIAL, &writer, &err), TI_OK, err);
	close(fds[0]);
	unsigned char *zeros = calloc(100000, 1);
	EXPECT_STATUS(ti_st_writer_put(writer, 0, zeros, 100000, &err), TI_E_IO, err);
	EXPECT_STATUS(ti_st_writer_put(writer, 0, zeros, 1, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "failed earlier");
	EXPECT_STATUS(ti_st_writer_end(writer, &err), TI_E_IO, err);
	free(zeros);
	close(fds[1]);
}
