/*
 * test_npy.c - the .npy header reader, the header and .npz writers, and the
 * npy/npz source rows.
 *
 * Headers are built here as np.save lays them out (magic, version, length,
 * the dict padded to 64 bytes); the fixtures come from numpy itself
 * (fixtures/gen_npy.py), so a header we format must equal theirs byte for
 * byte.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tinspect/npy.h"
#include "tinspect/sniff.h"
#include "tinspect/source.h"
#include "unit.h"
#include <criterion/parameterized.h>

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))

static ti_error err;

/* A version major.0 file: magic, version, length, the dict padded as np.save pads it, then data bytes of zeros. */
static size_t build(uint8_t *out, int major, const char *dict, size_t data)
{
	size_t prefix = major == 1 ? 10 : 12, n = strlen(dict);
	size_t pad = 64 - (prefix + n + 1) % 64, hlen = n + pad + 1;
	memcpy(out, "\x93NUMPY", 6);
	out[6] = (uint8_t)major;
	out[7] = 0;
	for (size_t i = 0; i < prefix - 8; i++)
		out[8 + i] = (uint8_t)(hlen >> (8 * i));
	memcpy(out + prefix, dict, n);
	memset(out + prefix + n, ' ', pad);
	out[prefix + hlen - 1] = '\n';
	memset(out + prefix + hlen, 0, data);
	return prefix + hlen + data;
}

static ti_status parse_dict(const char *dict, size_t data, ti_npy_header *h)
{
	static uint8_t buf[TI_NPY_HEAD_MAX + 4096];
	size_t n = build(buf, 1, dict, data);
	ti_error_clear(&err);
	return ti_npy_parse(buf, n, n, h, &err);
}

/* ---- descr ---- */

typedef struct descr_row {
	char descr[8];
	ti_dtype dtype;
	bool big;
} descr_row;

static descr_row descr_rows[] = {
	{"|b1", TI_DT_BOOL, false},     {"|i1", TI_DT_INT8, false},       {"|u1", TI_DT_UINT8, false},
	{"<i2", TI_DT_INT16, false},    {"<u2", TI_DT_UINT16, false},     {"<f2", TI_DT_FLOAT16, false},
	{"<i4", TI_DT_INT32, false},    {"<u4", TI_DT_UINT32, false},     {"<f4", TI_DT_FLOAT32, false},
	{"<i8", TI_DT_INT64, false},    {"<u8", TI_DT_UINT64, false},     {"<f8", TI_DT_FLOAT64, false},
	{"<c8", TI_DT_COMPLEX64, false}, {"<c16", TI_DT_COMPLEX128, false}, {">f4", TI_DT_FLOAT32, true},
	{">i8", TI_DT_INT64, true},     {">c16", TI_DT_COMPLEX128, true},  {">u1", TI_DT_UINT8, false},
	{"=f8", TI_DT_FLOAT64, false},  {"<b1", TI_DT_BOOL, false},
};

ParameterizedTestParameters(npy, reads_every_numeric_descr) { return ROWS(descr_rows); }

ParameterizedTest(descr_row *r, npy, reads_every_numeric_descr)
{
	char dict[128];
	snprintf(dict, sizeof(dict), "{'descr': '%s', 'fortran_order': False, 'shape': (2, 3), }", r->descr);
	ti_npy_header h;
	ASSERT_STATUS(parse_dict(dict, 6 * ti_dtype_size(r->dtype), &h), TI_OK, err);
	EXPECT_INT(h.dtype, r->dtype);
	EXPECT_INT(h.big_endian, r->big);
	EXPECT_STR(h.descr, r->descr);
	EXPECT_INT(h.nbytes, 6 * ti_dtype_size(r->dtype));
	EXPECT_INT(h.data_offset, 128);
}

typedef struct refused_row {
	char descr[48];
	ti_status status;
	char words[40]; /* in the message */
} refused_row;

static refused_row refused_rows[] = {
	{"'|V2'", TI_E_UNSUPPORTED, "bfloat16"},
	{"'<U3'", TI_E_UNSUPPORTED, "strings"},
	{"'|S5'", TI_E_UNSUPPORTED, "strings"},
	{"'<M8[ns]'", TI_E_UNSUPPORTED, "datetimes"},
	{"'<f16'", TI_E_UNSUPPORTED, "long double"},
	{"'<c32'", TI_E_UNSUPPORTED, "long double"},
	{"[('x', '<f4'), ('y', '<i4')]", TI_E_UNSUPPORTED, "structured"},
	{"('<f4', (2,))", TI_E_UNSUPPORTED, "structured"},
	{"'<f3'", TI_E_CORRUPT, "unknown dtype"},
	{"'f4'", TI_E_CORRUPT, "byte order"},
	{"'<'", TI_E_CORRUPT, "unknown dtype"},
	{"'<i4x'", TI_E_CORRUPT, "unknown dtype"},
	{"4", TI_E_CORRUPT, "string was expected"},
	{"'<f\\x34'", TI_E_CORRUPT, "escape"},
	{"'<f4", TI_E_CORRUPT, "unknown dtype"}, /* the string runs to the next quote */
	{"'<f4\n'", TI_E_CORRUPT, "unterminated"},
	{"'<f4f4f4f4f4f4f4f4f4'", TI_E_CORRUPT, "too long"},
};

ParameterizedTestParameters(npy, refuses_descrs_it_cannot_read_saying_why) { return ROWS(refused_rows); }

ParameterizedTest(refused_row *r, npy, refuses_descrs_it_cannot_read_saying_why)
{
	char dict[128];
	snprintf(dict, sizeof(dict), "{'descr': %s, 'fortran_order': False, 'shape': (2,), }", r->descr);
	ti_npy_header h;
	EXPECT_STATUS(parse_dict(dict, 64, &h), r->status, err);
	cr_expect(strstr(err.message, r->words) != NULL, "message \"%s\" does not say \"%s\"", err.message, r->words);
}

Test(npy, knows_an_object_array_by_its_descr)
{
	ti_npy_header h;
	ASSERT_STATUS(parse_dict("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 20, &h), TI_OK, err);
	EXPECT_INT(h.object, true);
	EXPECT_INT(h.dtype, TI_DT_INVALID);
	EXPECT_INT(h.numel, 3);
	EXPECT_INT(h.nbytes, 0);
	/* no pickle at all after the header */
	EXPECT_STATUS(parse_dict("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 0, &h), TI_E_CORRUPT, err);
}

Test(npy, marks_a_structured_dtype_so_scan_can_say_it_may_hold_objects)
{
	ti_npy_header h;
	EXPECT_STATUS(parse_dict("{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (1,), }", 8, &h),
	              TI_E_UNSUPPORTED, err);
	EXPECT_INT(h.structured, true);
}

/* ---- shapes ---- */

typedef struct shape_row {
	char shape[64];
	int ndim;
	int64_t dims[3];
	int64_t numel;
} shape_row;

static shape_row shape_rows[] = {
	{"()", 0, {0}, 1},
	{"(0,)", 1, {0}, 0},
	{"(3,)", 1, {3}, 3},
	{"(3, 4)", 2, {3, 4}, 12},
	{"(3, 4,)", 2, {3, 4}, 12},
	{"(3,4)", 2, {3, 4}, 12},
	{"( 2 , 3 , )", 2, {2, 3}, 6},
	{"(2, 0, 5)", 3, {2, 0, 5}, 0},
	{"(5L, 6L)", 2, {5, 6}, 30},
	{"(1, 1, 1)", 3, {1, 1, 1}, 1},
};

ParameterizedTestParameters(npy, reads_shapes_in_every_form_python_writes) { return ROWS(shape_rows); }

ParameterizedTest(shape_row *r, npy, reads_shapes_in_every_form_python_writes)
{
	char dict[128];
	snprintf(dict, sizeof(dict), "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", r->shape);
	ti_npy_header h;
	ASSERT_STATUS(parse_dict(dict, (size_t)r->numel * 4, &h), TI_OK, err);
	ASSERT_INT(h.ndim, r->ndim);
	for (int i = 0; i < r->ndim; i++)
		EXPECT_INT(h.shape[i], r->dims[i]);
	EXPECT_INT(h.numel, r->numel);
	EXPECT_INT(h.nbytes, r->numel * 4);
}

typedef struct bad_row {
	char dict[120];
	ti_status status;
	char words[48];
} bad_row;

static bad_row bad_rows[] = {
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", TI_E_CORRUPT, "1-tuple needs its comma"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", TI_E_CORRUPT, "negative"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, }", TI_E_CORRUPT, "dimension was expected"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1 2), }", TI_E_CORRUPT, "',' or ')'"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (07,), }", TI_E_CORRUPT, "leading zero"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': [3], }", TI_E_CORRUPT, "not a tuple"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (9223372036854775808,), }", TI_E_LIMIT, "2^63"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", TI_E_LIMIT, "passes 2^63"},
	{"{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }", TI_E_LIMIT, "2^63 bytes"},
	{"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,), }", TI_E_CORRUPT, "True or False"},
	{"{'descr': '<f4', 'shape': (1,), }", TI_E_CORRUPT, "no 'fortran_order'"},
	{"{'fortran_order': False, 'shape': (1,), }", TI_E_CORRUPT, "no 'descr'"},
	{"{'descr': '<f4', 'fortran_order': False, }", TI_E_CORRUPT, "no 'shape'"},
	{"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", TI_E_CORRUPT, "twice"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", TI_E_CORRUPT, "other than"},
	{"{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", TI_E_CORRUPT, "',' or '}'"},
	{"{'descr' '<f4', 'fortran_order': False, 'shape': (1,), }", TI_E_CORRUPT, "':'"},
	{"['descr', '<f4']", TI_E_CORRUPT, "not a dict"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", TI_E_CORRUPT, "after the dict"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': __import__('os'), }", TI_E_CORRUPT, "not a tuple"},
	{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", TI_E_CORRUPT, "string was expected"},
};

ParameterizedTestParameters(npy, refuses_malformed_headers_with_a_byte_offset) { return ROWS(bad_rows); }

ParameterizedTest(bad_row *r, npy, refuses_malformed_headers_with_a_byte_offset)
{
	ti_npy_header h;
	EXPECT_STATUS(parse_dict(r->dict, 64, &h), r->status, err);
	cr_expect(strstr(err.message, r->words) != NULL, "message \"%s\" does not say \"%s\"", err.message, r->words);
}

Test(npy, points_at_the_byte_that_is_wrong)
{
	ti_npy_header h;
	parse_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }", 64, &h);
	/* the ')' of "(3)": 10 bytes of prefix, then the dict */
	cr_expect(strstr(err.message, "at offset 62") != NULL, "message \"%s\"", err.message);
}

Test(npy, takes_fortran_order_and_any_key_order)
{
	ti_npy_header h;
	ASSERT_STATUS(parse_dict("{\"shape\": (2, 3), \"fortran_order\": True, \"descr\": \"<i2\"}", 12, &h), TI_OK, err);
	EXPECT_INT(h.fortran_order, true);
	EXPECT_INT(h.dtype, TI_DT_INT16);
}

Test(npy, refuses_a_shape_of_more_than_64_dimensions)
{
	char dict[512] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
	for (int i = 0; i < 65; i++)
		strcat(dict, "1, ");
	strcat(dict, "), }");
	ti_npy_header h;
	EXPECT_STATUS(parse_dict(dict, 4, &h), TI_E_LIMIT, err);
}

/* ---- versions and lengths ---- */

Test(npy, reads_versions_2_and_3_with_a_u32_length)
{
	uint8_t buf[256];
	ti_npy_header h;
	for (int major = 2; major <= 3; major++) {
		size_t n = build(buf, major, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", 16);
		ti_error_clear(&err);
		ASSERT_STATUS(ti_npy_parse(buf, n, n, &h, &err), TI_OK, err);
		EXPECT_INT(h.major, major);
		EXPECT_INT(h.data_offset, 128);
	}
}

Test(npy, refuses_other_versions_and_bad_magic)
{
	uint8_t buf[256];
	ti_npy_header h;
	size_t n = build(buf, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (4,), }", 16);
	buf[6] = 4;
	EXPECT_STATUS(ti_npy_parse(buf, n, n, &h, &err), TI_E_UNSUPPORTED, err);
	buf[6] = 1;
	buf[7] = 1;
	EXPECT_STATUS(ti_npy_parse(buf, n, n, &h, &err), TI_E_UNSUPPORTED, err);
	buf[7] = 0;
	buf[0] = 'x';
	EXPECT_STATUS(ti_npy_parse(buf, n, n, &h, &err), TI_E_CORRUPT, err);
}

Test(npy, refuses_a_header_longer_than_numpy_reads_without_allocating)
{
	uint8_t buf[16] = "\x93NUMPY\x02\x00";
	buf[8] = 0xff, buf[9] = 0xff, buf[10] = 0xff, buf[11] = 0x7f; /* 2 GiB */
	ti_npy_header h;
	EXPECT_STATUS(ti_npy_parse(buf, 12, 1u << 31, &h, &err), TI_E_LIMIT, err);
	buf[6] = 1; /* 65535 bytes: past 10000 too */
	EXPECT_STATUS(ti_npy_parse(buf, 10, 1u << 20, &h, &err), TI_E_LIMIT, err);
}

Test(npy, refuses_every_truncation_cleanly)
{
	uint8_t buf[256];
	ti_npy_header h;
	size_t n = build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", 48);
	for (size_t cut = 0; cut < n; cut++) {
		ti_error_clear(&err);
		ti_status st = ti_npy_parse(buf, cut, cut, &h, &err);
		cr_expect(st == TI_E_CORRUPT, "cut at %zu: got %s (%s)", cut, ti_status_name(st), err.message);
	}
	ti_error_clear(&err);
	EXPECT_STATUS(ti_npy_parse(buf, n, n + 7, &h, &err), TI_OK, err); /* bytes after the data: np.load ignores them */
}

Test(npy, refuses_a_nul_byte_in_the_header)
{
	uint8_t buf[256];
	ti_npy_header h;
	size_t n = build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 4);
	buf[30] = 0;
	EXPECT_STATUS(ti_npy_parse(buf, n, n, &h, &err), TI_E_CORRUPT, err);
}

/* ---- writing ---- */

static size_t slurp(const char *path, uint8_t *buf, size_t size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f != NULL, "cannot open %s", path);
	size_t n = fread(buf, 1, size, f);
	fclose(f);
	return n;
}

Test(npy, formats_the_header_np_save_writes_byte_for_byte)
{
	static const struct {
		const char *file;
		ti_dtype dtype;
		int ndim;
		int64_t shape[2];
	} cases[] = {
		{"fixtures/npy/f32.npy", TI_DT_FLOAT32, 2, {3, 4}},
		{"fixtures/npy/scalar.npy", TI_DT_FLOAT32, 0, {0}},
		{"fixtures/npy/empty.npy", TI_DT_FLOAT32, 1, {0}},
		{"fixtures/npy/empty_2d.npy", TI_DT_INT64, 2, {2, 0}},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t want[4096];
		char got[TI_NPY_HEAD_MAX];
		size_t len = 0, n = slurp(cases[i].file, want, sizeof(want));
		ASSERT_STATUS(ti_npy_header_format(cases[i].dtype, cases[i].ndim, cases[i].shape, got, sizeof(got), &len, &err),
		              TI_OK, err);
		EXPECT_INT(len % 64, 0);
		cr_expect(len <= n && !memcmp(got, want, len), "%s: header differs from np.save's", cases[i].file);
		ti_npy_header h;
		EXPECT_STATUS(ti_npy_parse(got, len, len + 1024, &h, &err), TI_OK, err);
	}
	char buf[TI_NPY_HEAD_MAX];
	size_t len;
	int64_t one = 1;
	EXPECT_STATUS(ti_npy_header_format(TI_DT_BFLOAT16, 1, &one, buf, sizeof(buf), &len, &err), TI_E_UNSUPPORTED, err);
}

/* ---- sniffing ---- */

Test(npy, sniffs_the_magic_and_an_npz_by_its_first_member)
{
	EXPECT_INT(ti_file_sniff("\x93NUMPY\x01\x00", 8, 8), TI_FILE_NPY);
	EXPECT_INT(ti_file_sniff("\x93NUMPX\x01\x00", 8, 8), TI_FILE_UNKNOWN);
	uint8_t zip[64] = "PK\3\4";
	zip[26] = 9; /* "w.b.c.npy" */
	memcpy(zip + 30, "w.b.c.npy", 9);
	EXPECT_INT(ti_file_sniff(zip, sizeof(zip), 4096), TI_FILE_ZIP);
	EXPECT_INT(ti_npz_sniff(zip, sizeof(zip)), true);
	EXPECT_INT(ti_npz_sniff(zip, 38), false); /* the name does not fit */
	EXPECT_INT(ti_npz_sniff_size(zip, sizeof(zip)), 39); /* what it reads: the header and the name */
	EXPECT_INT(ti_npz_sniff_size(zip, 29), 0);
	zip[3] = 6; /* "PK\3\6": no local header */
	EXPECT_INT(ti_npz_sniff_size(zip, sizeof(zip)), 0);
	zip[3] = 4;
	memcpy(zip + 30, "archive/data.pkl", 16);
	zip[26] = 16;
	EXPECT_INT(ti_npz_sniff(zip, sizeof(zip)), false);
}

/* ---- the source rows ---- */

static float big_value(int64_t i) { return (float)(i % 7); }

Test(npy, reads_a_deflated_member_forward_and_backward)
{
	ti_source *src;
	ASSERT_STATUS(ti_source_open("fixtures/npy/compressed.npz", &src, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(src), TI_SOURCE_NPZ);
	const ti_source_tensor *big = NULL;
	for (size_t i = 0; i < ti_source_tensor_count(src); i++)
		if (!strcmp(ti_source_tensor_at(src, i)->name, "big"))
			big = ti_source_tensor_at(src, i);
	ASSERT_INT(big != NULL, 1);
	EXPECT_INT(big->numel, 70000);
	static const int64_t at[] = {69000, 10, 40000, 0, 65535, 69999};
	for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
		float v[1];
		ASSERT_STATUS(ti_source_read(src, big->storage, (uint64_t)at[k] * 4, v, 4, &err), TI_OK, err);
		EXPECT_DOUBLE(v[0], big_value(at[k]));
	}
	ti_source_close(src);
}

Test(npy, names_a_npy_after_its_stem_and_swaps_big_endian)
{
	ti_source *src;
	ASSERT_STATUS(ti_source_open("fixtures/npy/big_endian_i2.npy", &src, &err), TI_OK, err);
	ASSERT_INT(ti_source_tensor_count(src), 1);
	const ti_source_tensor *t = ti_source_tensor_at(src, 0);
	EXPECT_STR(t->name, "big_endian_i2");
	int16_t v[5];
	ASSERT_STATUS(ti_source_read(src, t->storage, 0, v, sizeof(v), &err), TI_OK, err);
	EXPECT_INT(v[0], 1);
	EXPECT_INT(v[1], -2);
	EXPECT_INT(v[4], 32767);
	ti_source_close(src);
}

Test(npy, gives_a_fortran_array_column_major_strides)
{
	ti_source *src;
	ASSERT_STATUS(ti_source_open("fixtures/npy/fortran.npy", &src, &err), TI_OK, err);
	const ti_source_tensor *t = ti_source_tensor_at(src, 0);
	ASSERT_INT(t->ndim, 2);
	EXPECT_INT(t->stride[0], 1);
	EXPECT_INT(t->stride[1], 2);
	EXPECT_INT(ti_source_tensor_contiguous(t), false);
	ti_source_close(src);
}

/* The sniff reads the first name whole, however long: 1,000 bytes here, more than it keeps on its stack. */
Test(npy, knows_an_npz_whose_first_name_is_long)
{
	char path[] = "/tmp/tinspect-npz-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_INT(fd >= 0, 1);
	char name[1001];
	memset(name, 'w', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ti_npz_writer *w;
	ASSERT_STATUS(ti_npz_writer_begin(fd, &w, &err), TI_OK, err);
	int64_t x = 7;
	ASSERT_STATUS(ti_npz_writer_add(w, name, TI_DT_INT64, 0, NULL, &err), TI_OK, err);
	ASSERT_STATUS(ti_npz_writer_put(w, &x, 8, &err), TI_OK, err);
	ASSERT_STATUS(ti_npz_writer_end(w, &err), TI_OK, err);
	ti_npz_writer_free(w);
	close(fd);

	ti_source *src;
	ASSERT_STATUS(ti_source_open(path, &src, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(src), TI_SOURCE_NPZ);
	ASSERT_INT(ti_source_tensor_count(src), 1);
	EXPECT_STR(ti_source_tensor_at(src, 0)->name, name);
	ti_source_close(src);
	unlink(path);
}

Test(npy, writes_an_npz_that_reads_back)
{
	char path[] = "/tmp/tinspect-npz-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_INT(fd >= 0, 1);
	ti_npz_writer *w;
	ASSERT_STATUS(ti_npz_writer_begin(fd, &w, &err), TI_OK, err);
	int64_t shape[2] = {2, 3};
	float a[6] = {1, 2, 3, 4, 5, 6};
	ASSERT_STATUS(ti_npz_writer_add(w, "a/b c", TI_DT_FLOAT32, 2, shape, &err), TI_OK, err);
	ASSERT_STATUS(ti_npz_writer_put(w, a, 8, &err), TI_OK, err);
	/* a member that is not complete cannot be left */
	EXPECT_STATUS(ti_npz_writer_add(w, "x", TI_DT_FLOAT32, 0, NULL, &err), TI_E_INVALID, err);
	ASSERT_STATUS(ti_npz_writer_put(w, a + 2, 16, &err), TI_OK, err);
	EXPECT_STATUS(ti_npz_writer_put(w, a, 4, &err), TI_E_INVALID, err);
	ASSERT_STATUS(ti_npz_writer_add(w, "x", TI_DT_INT64, 0, NULL, &err), TI_OK, err);
	int64_t x = -5;
	ASSERT_STATUS(ti_npz_writer_put(w, &x, 8, &err), TI_OK, err);
	EXPECT_STATUS(ti_npz_writer_add(w, "x", TI_DT_INT64, 0, NULL, &err), TI_E_INVALID, err);
	ASSERT_STATUS(ti_npz_writer_end(w, &err), TI_OK, err);
	ti_npz_writer_free(w);
	close(fd);

	ti_source *src;
	ASSERT_STATUS(ti_source_open(path, &src, &err), TI_OK, err);
	ASSERT_INT(ti_source_tensor_count(src), 2);
	EXPECT_STR(ti_source_tensor_at(src, 0)->name, "a/b c");
	EXPECT_STR(ti_source_tensor_at(src, 1)->name, "x");
	float back[6];
	ASSERT_STATUS(ti_source_read(src, ti_source_tensor_at(src, 0)->storage, 0, back, sizeof(back), &err), TI_OK, err);
	EXPECT_INT(!memcmp(back, a, sizeof(a)), 1);
	int64_t xb;
	ASSERT_STATUS(ti_source_read(src, ti_source_tensor_at(src, 1)->storage, 0, &xb, 8, &err), TI_OK, err);
	EXPECT_INT(xb, -5);
	ti_source_close(src);
	unlink(path);
}
