/*
 * test_gguf.c - the GGUF reader, writer and source row.
 *
 * The files are built here byte by byte from the specification (ggml
 * docs/gguf.md): "GGUF", u32 version, u64 tensor count, u64 pair count,
 * pairs (u64-length key, u32 type, value), tensor infos (name, u32 n_dims,
 * u64 ne[] fastest first, u32 ggml type, u64 offset), padding to the
 * alignment, data. They are read from an unlinked temporary file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "tinspect/gguf.h"
#include "tinspect/source.h"
#include "unit.h"

static ti_gguf_file *file;
static ti_error err;
static FILE *tmp;

/* ---- building files ---- */

typedef struct buf {
	unsigned char b[8192];
	size_t n;
} buf;

static buf g;

static void put(const void *p, size_t n)
{
	cr_assert(g.n + n <= sizeof(g.b), "test file too large");
	memcpy(g.b + g.n, p, n);
	g.n += n;
}

static void le(uint64_t v, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned char c = (unsigned char)(v >> (8 * i));
		put(&c, 1);
	}
}

static void str(const char *s)
{
	le(strlen(s), 8);
	put(s, strlen(s));
}

static void header(uint32_t version, uint64_t tensors, uint64_t kvs)
{
	g.n = 0;
	put("GGUF", 4);
	le(version, 4);
	le(tensors, 8);
	le(kvs, 8);
}

static void info(const char *name, int ndim, const uint64_t *ne, uint32_t type, uint64_t offset)
{
	str(name);
	le((uint64_t)ndim, 4);
	for (int i = 0; i < ndim; i++)
		le(ne[i], 8);
	le(type, 4);
	le(offset, 8);
}

static void pad(size_t align)
{
	while (g.n % align)
		le(0, 1);
}

static void zeros(size_t n)
{
	while (n--)
		le(0, 1);
}

/* Opens what was built; the status, with err set. */
static ti_status open_built(void)
{
	if (tmp)
		fclose(tmp);
	tmp = tmpfile();
	cr_assert(tmp != NULL);
	cr_assert(fwrite(g.b, 1, g.n, tmp) == g.n);
	fflush(tmp);
	ti_gguf_close(file);
	file = NULL;
	ti_error_clear(&err);
	return ti_gguf_open_fd(fileno(tmp), &file, &err);
}

static void teardown(void)
{
	ti_gguf_close(file);
	file = NULL;
	if (tmp)
		fclose(tmp);
	tmp = NULL;
}

TestSuite(gguf, .fini = teardown, .timeout = 60);

/* ---- reading ---- */

Test(gguf, reads_every_metadata_type_as_text)
{
	header(3, 0, 15);
	str("u8"), le(TI_GGUF_UINT8, 4), le(200, 1);
	str("i8"), le(TI_GGUF_INT8, 4), le((uint8_t)-5, 1);
	str("u16"), le(TI_GGUF_UINT16, 4), le(65535, 2);
	str("i16"), le(TI_GGUF_INT16, 4), le((uint16_t)-300, 2);
	str("u32"), le(TI_GGUF_UINT32, 4), le(4000000000u, 4);
	str("i32"), le(TI_GGUF_INT32, 4), le((uint32_t)-7, 4);
	str("f32"), le(TI_GGUF_FLOAT32, 4), le(0x3fc00000, 4); /* 1.5 */
	str("bool"), le(TI_GGUF_BOOL, 4), le(1, 1);
	str("s"), le(TI_GGUF_STRING, 4), str("llama");
	str("u64"), le(TI_GGUF_UINT64, 4), le(UINT64_MAX, 8);
	str("i64"), le(TI_GGUF_INT64, 4), le((uint64_t)INT64_MIN, 8);
	str("f64"), le(TI_GGUF_FLOAT64, 4), le(0x3fd0000000000000ull, 8); /* 0.25 */
	str("arr"), le(TI_GGUF_ARRAY, 4), le(TI_GGUF_INT16, 4), le(3, 8), le(1, 2), le(2, 2), le(3, 2);
	str("nested"), le(TI_GGUF_ARRAY, 4), le(TI_GGUF_ARRAY, 4), le(2, 8);
	le(TI_GGUF_STRING, 4), le(1, 8), str("a");
	le(TI_GGUF_UINT8, 4), le(0, 8);
	str("long"), le(TI_GGUF_ARRAY, 4), le(TI_GGUF_UINT32, 4), le(10, 8);
	for (int i = 0; i < 10; i++)
		le((uint64_t)i, 4);
	ASSERT_STATUS(open_built(), TI_OK, err);
	ASSERT_INT(ti_gguf_kv_count(file), 15);
	static const char *const want[][2] = {
		{"u8", "200"}, {"i8", "-5"}, {"u16", "65535"}, {"i16", "-300"}, {"u32", "4000000000"}, {"i32", "-7"},
		{"f32", "1.5"}, {"bool", "true"}, {"s", "llama"}, {"u64", "18446744073709551615"},
		{"i64", "-9223372036854775808"}, {"f64", "0.25"}, {"arr", "[3 x int16] 1, 2, 3"},
		{"nested", "[2 x array] [\"a\"], []"}, {"long", "[10 x uint32] 0, 1, 2, 3, 4, 5, 6, 7, ..."},
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const ti_gguf_kv *kv = ti_gguf_kv_find(file, want[i][0]);
		cr_assert(kv != NULL, "no pair '%s'", want[i][0]);
		EXPECT_STR(kv->text, want[i][1]);
	}
	EXPECT_INT(ti_gguf_kv_find(file, "long")->count, 10);
	EXPECT_INT(ti_gguf_kv_find(file, "long")->array_type, TI_GGUF_UINT32);
	EXPECT_INT(ti_gguf_file_info(file)->alignment, 32);
}

Test(gguf, reads_tensor_infos_in_pytorch_order_with_offsets_from_the_data_section)
{
	header(3, 3, 0);
	info("w", 2, (uint64_t[]){3, 2}, TI_GGML_F32, 0);           /* PyTorch [2, 3]: 24 bytes */
	info("q", 2, (uint64_t[]){64, 2}, TI_GGML_Q8_0, 32);        /* 4 blocks of 34 */
	info("k", 1, (uint64_t[]){256}, TI_GGML_Q4_K, 192);         /* one block of 144 */
	pad(32);
	size_t data = g.n;
	zeros(192 + 144);
	ASSERT_STATUS(open_built(), TI_OK, err);
	ASSERT_INT(ti_gguf_tensor_count(file), 3);
	const ti_gguf_tensor *w = ti_gguf_tensor_at(file, 0), *q = ti_gguf_tensor_at(file, 1), *k = ti_gguf_tensor_at(file, 2);
	EXPECT_STR(w->name, "w");
	ASSERT_INT(w->ndim, 2);
	EXPECT_INT(w->shape[0], 2);
	EXPECT_INT(w->shape[1], 3);
	EXPECT_INT(w->nbytes, 24);
	EXPECT_INT(w->offset, data);
	EXPECT_INT(q->shape[0], 2);
	EXPECT_INT(q->shape[1], 64);
	EXPECT_INT(q->nbytes, 136);
	EXPECT_INT(q->offset, data + 32);
	EXPECT_INT(k->nbytes, 144);
	EXPECT_INT(k->data_offset, 192);
	EXPECT_INT(ti_gguf_file_info(file)->data_start, data);
}

Test(gguf, honours_general_alignment_and_reads_version_2)
{
	header(2, 2, 1);
	str("general.alignment"), le(TI_GGUF_UINT32, 4), le(64, 4);
	info("a", 1, (uint64_t[]){4}, TI_GGML_F32, 0);
	info("b", 1, (uint64_t[]){4}, TI_GGML_F16, 64);
	pad(64);
	zeros(72);
	ASSERT_STATUS(open_built(), TI_OK, err);
	EXPECT_INT(ti_gguf_file_info(file)->version, 2);
	EXPECT_INT(ti_gguf_file_info(file)->alignment, 64);
	EXPECT_INT(ti_gguf_file_info(file)->data_start % 64, 0);
	/* at 32 the second tensor would be misaligned under this alignment */
	header(3, 2, 1);
	str("general.alignment"), le(TI_GGUF_UINT32, 4), le(64, 4);
	info("a", 1, (uint64_t[]){4}, TI_GGML_F32, 0);
	info("b", 1, (uint64_t[]){4}, TI_GGML_F16, 32);
	pad(64);
	zeros(72);
	EXPECT_STATUS(open_built(), TI_E_CORRUPT, err);
	cr_expect(strstr(err.message, "not aligned to 64"));
}

/* ---- refusing ---- */

/* Opens what was built, wanting code and a message that contains what. */
static void refused(ti_status code, const char *what)
{
	ti_status st = open_built();
	EXPECT_STATUS(st, code, err);
	cr_expect(strstr(err.message, what) != NULL, "message \"%s\" lacks \"%s\"", err.message, what);
	cr_expect(err.offset >= 0 && (uint64_t)err.offset <= g.n, "offset %lld outside the %zu-byte file",
	          (long long)err.offset, g.n);
	cr_expect(file == NULL);
}

Test(gguf, rejects_a_bad_magic_and_old_or_big_endian_versions)
{
	header(3, 0, 0);
	memcpy(g.b, "GGUG", 4);
	refused(TI_E_CORRUPT, "magic");
	header(1, 0, 0);
	refused(TI_E_UNSUPPORTED, "version 1");
	header(0x03000000, 0, 0);
	refused(TI_E_UNSUPPORTED, "big-endian");
	header(4, 0, 0);
	refused(TI_E_UNSUPPORTED, "version 4");
}

Test(gguf, rejects_huge_counts_before_allocating)
{
	header(3, UINT64_MAX, 0);
	refused(TI_E_LIMIT, "tensor count");
	header(3, 1000, 0); /* under the ceiling, but 24 bytes each do not fit */
	refused(TI_E_CORRUPT, "more than the file can hold");
	header(3, 0, (uint64_t)1 << 40);
	refused(TI_E_LIMIT, "metadata count");
	header(3, 0, 1);
	str("a"), le(TI_GGUF_ARRAY, 4), le(TI_GGUF_UINT64, 4), le((uint64_t)1 << 60, 8);
	refused(TI_E_CORRUPT, "array of");
}

Test(gguf, rejects_truncated_and_oversized_strings)
{
	header(3, 0, 1);
	le(100, 8);
	put("general", 7);
	refused(TI_E_CORRUPT, "cut short");
	header(3, 0, 1);
	le(70000, 8); /* past the 65535 bytes a key may have */
	zeros(16);
	refused(TI_E_LIMIT, "metadata key");
	header(3, 0, 1);
	str("k"), le(TI_GGUF_STRING, 4), le(UINT64_MAX, 8);
	refused(TI_E_CORRUPT, "cut short");
}

Test(gguf, rejects_bad_value_types_deep_nesting_and_duplicate_keys)
{
	header(3, 0, 1);
	str("k"), le(13, 4);
	refused(TI_E_CORRUPT, "unknown type 13");
	header(3, 0, 1);
	str("k"), le(TI_GGUF_ARRAY, 4);
	for (int i = 0; i < 12; i++)
		le(TI_GGUF_ARRAY, 4), le(1, 8);
	le(TI_GGUF_UINT8, 4), le(0, 8);
	refused(TI_E_LIMIT, "nested deeper");
	header(3, 0, 2);
	str("k"), le(TI_GGUF_UINT8, 4), le(1, 1);
	str("k"), le(TI_GGUF_UINT8, 4), le(2, 1);
	refused(TI_E_CORRUPT, "appears twice");
	header(3, 0, 1);
	str("general.alignment"), le(TI_GGUF_UINT32, 4), le(0, 4);
	refused(TI_E_CORRUPT, "power of two");
}

Test(gguf, rejects_bad_tensor_infos)
{
	header(3, 1, 0);
	info("t", 5, (uint64_t[]){1, 1, 1, 1, 1}, TI_GGML_F32, 0);
	refused(TI_E_CORRUPT, "5 dimensions");
	header(3, 1, 0);
	info("t", 2, (uint64_t[]){(uint64_t)1 << 32, (uint64_t)1 << 32}, TI_GGML_F32, 0);
	refused(TI_E_CORRUPT, "overflows");
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){UINT64_MAX}, TI_GGML_F32, 0);
	refused(TI_E_CORRUPT, "overflows");
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){4}, 5, 0); /* Q4_3, removed from ggml */
	refused(TI_E_UNSUPPORTED, "ggml type 5");
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){40}, TI_GGML_Q8_0, 0);
	refused(TI_E_CORRUPT, "not a multiple");
	header(3, 2, 0);
	info("t", 1, (uint64_t[]){4}, TI_GGML_F32, 0);
	info("t", 1, (uint64_t[]){4}, TI_GGML_F32, 32);
	pad(32);
	zeros(64);
	refused(TI_E_CORRUPT, "appears twice");
}

Test(gguf, rejects_offsets_out_of_range_misaligned_or_overlapping)
{
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){16}, TI_GGML_F32, 0);
	pad(32);
	zeros(60); /* 64 bytes wanted */
	refused(TI_E_CORRUPT, "ends past");
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){4}, TI_GGML_F32, UINT64_MAX - 31);
	pad(32);
	zeros(32);
	refused(TI_E_CORRUPT, "ends past");
	header(3, 1, 0);
	info("t", 1, (uint64_t[]){4}, TI_GGML_F32, 4);
	pad(32);
	zeros(64);
	refused(TI_E_CORRUPT, "not aligned");
	header(3, 2, 0);
	info("a", 1, (uint64_t[]){16}, TI_GGML_F32, 0);
	info("b", 1, (uint64_t[]){4}, TI_GGML_F32, 32);
	pad(32);
	zeros(64);
	refused(TI_E_CORRUPT, "overlap");
}

Test(gguf, refuses_every_cut_of_a_good_file_cleanly)
{
	header(3, 2, 2);
	str("general.architecture"), le(TI_GGUF_STRING, 4), str("llama");
	str("tokens"), le(TI_GGUF_ARRAY, 4), le(TI_GGUF_STRING, 4), le(2, 8), str("<s>"), str("</s>");
	info("a", 2, (uint64_t[]){2, 2}, TI_GGML_F32, 0);
	info("b", 1, (uint64_t[]){32}, TI_GGML_Q8_0, 32);
	pad(32);
	zeros(32 + 34);
	size_t whole = g.n;
	ASSERT_STATUS(open_built(), TI_OK, err);
	for (size_t n = 0; n < whole; n++) {
		g.n = n;
		ti_status st = open_built();
		cr_expect(st == TI_E_CORRUPT || st == TI_E_UNSUPPORTED, "cut at %zu: %s", n, ti_status_name(st));
	}
}

Test(gguf, knows_ggml_block_sizes)
{
	const ti_ggml_type *q4k = ti_ggml_type_of(TI_GGML_Q4_K), *q8 = ti_ggml_type_of(TI_GGML_Q8_0);
	cr_assert(q4k && q8);
	EXPECT_STR(q4k->name, "Q4_K");
	EXPECT_INT(q4k->block_size, 256);
	EXPECT_INT(q4k->block_bytes, 144);
	EXPECT_INT(q8->block_bytes, 34);
	cr_expect(ti_ggml_type_of(4) == NULL);
	cr_expect(ti_ggml_type_of(1000) == NULL);
	EXPECT_INT(ti_ggml_type_from_name("q8_0"), TI_GGML_Q8_0);
	EXPECT_INT(ti_ggml_type_from_dtype(TI_DT_BFLOAT16), TI_GGML_BF16);
	EXPECT_INT(ti_ggml_type_from_dtype(TI_DT_BOOL), -1);
}

/* ---- writing ---- */

Test(gguf, writes_what_it_reads_back_with_q8_0_quantized_as_ggml_does)
{
	tmp = tmpfile();
	cr_assert(tmp != NULL);
	int fd = fileno(tmp);
	float f[6] = {1, -2, 3.5f, 0, 0.25f, -8};
	float q[64];
	for (int i = 0; i < 64; i++)
		q[i] = (float)(i - 32) / 8;
	q[5] = 127; /* block 0's d = 1: every value rounds to an integer */
	const ti_gguf_spec specs[] = {
		{"f", TI_GGML_F32, 2, (int64_t[]){2, 3}},
		{"q", TI_GGML_Q8_0, 2, (int64_t[]){2, 32}},
	};
	const ti_gguf_meta meta[] = {{"general.name", "t", 0}, {"general.file_type", NULL, 7}};
	ti_gguf_writer *w;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_gguf_writer_begin(fd, specs, 2, meta, 2, &w, &err), TI_OK, err);
	ASSERT_STATUS(ti_gguf_writer_put(w, 0, f, sizeof(f), &err), TI_OK, err);
	ASSERT_STATUS(ti_gguf_writer_put(w, 1, q, 10 * 4, &err), TI_OK, err); /* pieces across a block */
	ASSERT_STATUS(ti_gguf_writer_put(w, 1, q + 10, 54 * 4, &err), TI_OK, err);
	ASSERT_STATUS(ti_gguf_writer_end(w, &err), TI_OK, err);
	ti_gguf_writer_free(w);
	fflush(tmp);

	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ti_source *src;
	ASSERT_STATUS(ti_source_open(path, &src, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(src), TI_SOURCE_GGUF);
	ASSERT_INT(ti_source_tensor_count(src), 2);
	const ti_source_tensor *tq = ti_source_tensor_at(src, 1);
	EXPECT_INT(tq->dtype, TI_DT_FLOAT32);
	EXPECT_INT(tq->shape[0], 2);
	EXPECT_INT(tq->shape[1], 32);
	float back[64];
	ASSERT_STATUS(ti_source_read(src, 0, 0, back, sizeof(f), &err), TI_OK, err);
	for (int i = 0; i < 6; i++)
		EXPECT_DOUBLE(back[i], f[i]);
	ASSERT_STATUS(ti_source_read(src, tq->storage, 0, back, sizeof(back), &err), TI_OK, err);
	for (int i = 0; i < 32; i++) /* d = 127/127 = 1: round(x) */
		EXPECT_DOUBLE(back[i], roundf(q[i]));
	/* block 1: max |x| = 31/8, d = fp16(31/8/127); the values within half a step */
	for (int i = 32; i < 64; i++)
		cr_expect(fabsf(back[i] - q[i]) <= 31.0f / 8 / 127 * 0.51f, "element %d: %g for %g", i, back[i], q[i]);
	/* a read from the middle of a block */
	ASSERT_STATUS(ti_source_read(src, tq->storage, 4 * 37, back, 4 * 3, &err), TI_OK, err);
	cr_expect(fabsf(back[0] - q[37]) <= 0.02f);
	size_t m = ti_source_metadata_count(src);
	ASSERT_INT(m, 2);
	EXPECT_STR(ti_source_metadata_at(src, 0)->value, "t");
	EXPECT_STR(ti_source_metadata_at(src, 1)->value, "7");
	ti_source_close(src);
}

Test(gguf, writer_refuses_rows_that_are_not_whole_blocks)
{
	tmp = tmpfile();
	cr_assert(tmp != NULL);
	const ti_gguf_spec spec = {"q", TI_GGML_Q8_0, 2, (int64_t[]){2, 33}};
	ti_gguf_writer *w = NULL;
	ti_error_clear(&err);
	EXPECT_STATUS(ti_gguf_writer_begin(fileno(tmp), &spec, 1, NULL, 0, &w, &err), TI_E_INVALID, err);
	cr_expect(w == NULL);
}

/* ---- the source row, on the generator's fixture ---- */

Test(gguf, source_lists_the_fixture_with_quantized_types_refused_or_dequantized)
{
	ti_source *src;
	ti_error_clear(&err);
	ASSERT_STATUS(ti_source_open("fixtures/gguf/every_type.gguf", &src, &err), TI_OK, err);
	EXPECT_STR(ti_source_format_name(ti_source_get_format(src)), "gguf");
	size_t n = ti_source_tensor_count(src);
	ASSERT_INT(n, 13);
	for (size_t i = 0; i < n; i++) {
		const ti_source_tensor *t = ti_source_tensor_at(src, i);
		if (!strcmp(t->name, "blk.0.ffn_gate.weight")) {
			cr_expect(t->unsupported && strstr(t->unsupported, "Q4_K"), "Q4_K: %s", t->unsupported);
		} else if (!strcmp(t->name, "blk.0.ffn_down.weight")) { /* Q4_0, d = 0.25: exact */
			float x[64];
			ASSERT_STATUS(ti_source_read(src, t->storage, 0, x, sizeof(x), &err), TI_OK, err);
			for (int k = 0; k < 64; k++) /* gen_gguf.py's elem(): ((k*7 + len(name)) % 23 - 11) / 4 */
				EXPECT_DOUBLE(x[k], (double)(((k * 7 + 21) % 23) - 11) / 4.0 < -2 ? -2.0
				                    : (double)(((k * 7 + 21) % 23) - 11) / 4.0 > 1.75 ? 1.75
				                                                                       : (((k * 7 + 21) % 23) - 11) / 4.0);
		} else {
			cr_expect(!t->unsupported, "'%s': %s", t->name, t->unsupported);
		}
	}
	size_t count;
	const ti_entry *e = ti_source_entries(src, &count, &err);
	cr_assert(e != NULL);
	EXPECT_INT(count, 13);
	ti_source_close(src);
}

Test(gguf, shows_a_value_that_is_not_utf8_with_replacements_and_refuses_such_a_name)
{
	header(3, 0, 1);
	str("s"), le(TI_GGUF_STRING, 4), le(4, 8), put("a\xff\0b", 4);
	ASSERT_STATUS(open_built(), TI_OK, err);
	EXPECT_STR(ti_gguf_kv_at(file, 0)->text, "a\xef\xbf\xbd\xef\xbf\xbd" "b");
	header(3, 1, 0);
	info("w\xc3", 1, (uint64_t[]){4}, TI_GGML_F32, 0);
	pad(32);
	zeros(16);
	refused(TI_E_CORRUPT, "not UTF-8");
}
