/*
 * test_pickle.c - the pickle machine, opcode by opcode, on hand-assembled bytes.
 *
 * Encodings are Python's (Lib/pickletools.py). Every test loads with a fresh
 * arena and no hooks, so what comes back is the raw structure: globals stay
 * TI_GLOBAL, calls stay TI_OBJECT, persistent ids stay TI_PERSID.
 * err.offset is the byte offset of the opcode that failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/known_globals.h"
#include "unit.h"

static ti_arena arena;
static ti_error err;
static ti_value *result;
static size_t consumed;

static void setup(void)
{
	ti_arena_init(&arena, (size_t)1 << 24);
	ti_error_clear(&err);
	result = NULL;
}

static void teardown(void) { ti_arena_release(&arena); }

TestSuite(pickle, .init = setup, .fini = teardown);

/* Bytes as a (pointer, size) pair: BYTES(0x80, 2, 'N', '.'), TEXT("I42\n."). */
#define BYTES(...) ((const uint8_t[]){__VA_ARGS__}), sizeof((const uint8_t[]){__VA_ARGS__})
#define TEXT(s) ((const uint8_t *)(s)), (sizeof(s) - 1)

static ti_status load_limited(const uint8_t *data, size_t size, const ti_pickle_limits *limits)
{
	ti_error_clear(&err);
	result = NULL;
	consumed = 0;
	return ti_pickle_load(data, size, &arena, NULL, limits, &result, &consumed, &err);
}

static ti_status load(const uint8_t *data, size_t size) { return load_limited(data, size, NULL); }

/* Loads and requires success; evaluates to the value. */
static ti_value *loaded_at(const uint8_t *data, size_t size, int line)
{
	ti_status s = load(data, size);
	cr_assert(s == TI_OK, "line %d: got %s (\"%s\" at offset %" PRId64 "), want success",
	          line, ti_status_name(s), err.message, err.offset);
	return result;
}
#define LOADED(...) loaded_at(__VA_ARGS__, __LINE__)

/* Loads and requires a failure with this code at this opcode offset, and a message. */
#define EXPECT_FAILURE_WITH(limits_, code_, offset_, ...)                                     \
	do {                                                                                  \
		ti_status s_ = load_limited(__VA_ARGS__, (limits_));                          \
		EXPECT_STATUS(s_, (code_), err);                                              \
		EXPECT_INT(err.offset, (offset_));                                            \
		cr_expect(err.message[0] != '\0', "the error has no message");                \
	} while (0)
#define EXPECT_FAILURE(code_, offset_, ...) EXPECT_FAILURE_WITH(NULL, code_, offset_, __VA_ARGS__)

/* A str or bytes value holds exactly these bytes. */
#define EXPECT_TEXT(value, kind_, literal)                                                    \
	do {                                                                                  \
		const ti_value *v_ = (value);                                                 \
		ASSERT_KIND(v_, kind_);                                                       \
		size_t want_size_ = sizeof(literal) - 1;                                      \
		cr_expect(v_->as.bytes.size == want_size_ &&                                  \
		          !memcmp(v_->as.bytes.data, literal, want_size_),                    \
		          "%s: got \"%.*s\" (%zu bytes), want \"%s\" (%zu bytes)", #value,      \
		          (int)v_->as.bytes.size, v_->as.bytes.data, v_->as.bytes.size,       \
		          literal, want_size_);                                               \
	} while (0)

#define EXPECT_INT_VALUE(value, want)                                                         \
	do {                                                                                  \
		const ti_value *iv_ = (value);                                                \
		ASSERT_KIND(iv_, TI_INT);                                                     \
		EXPECT_INT(iv_->as.integer, want);                                            \
	} while (0)

#define EXPECT_GLOBAL(value, module_, name_)                                                  \
	do {                                                                                  \
		const ti_value *g_ = (value);                                                 \
		ASSERT_KIND(g_, TI_GLOBAL);                                                   \
		EXPECT_STR(g_->as.global->module, module_);                                    \
		EXPECT_STR(g_->as.global->name, name_);                                        \
	} while (0)

static void expect_bigint(const ti_value *v, const uint8_t *want, size_t size)
{
	ASSERT_KIND(v, TI_BIGINT);
	ASSERT_INT(v->as.bytes.size, size);
	for (size_t i = 0; i < size; i++)
		cr_expect((uint8_t)v->as.bytes.data[i] == want[i], "bigint byte %zu: got 0x%02x, want 0x%02x",
		          i, (uint8_t)v->as.bytes.data[i], want[i]);
}

/* ---- protocol 0: text opcodes ---- */

Test(pickle, reads_protocol_0_int)
{
	EXPECT_INT_VALUE(LOADED(TEXT("I42\n.")), 42);
	EXPECT_INT_VALUE(LOADED(TEXT("I-7\n.")), -7);
	EXPECT_INT_VALUE(LOADED(TEXT("I9223372036854775807\n.")), INT64_MAX);
}

Test(pickle, reads_I01_and_I00_as_bools)
{
	const ti_value *v = LOADED(TEXT("I01\n."));
	ASSERT_KIND(v, TI_BOOL);
	EXPECT_INT(v->as.boolean, 1);
	v = LOADED(TEXT("I00\n."));
	ASSERT_KIND(v, TI_BOOL);
	EXPECT_INT(v->as.boolean, 0);
	/* Only the two-character spellings are bools: I1 is the int 1. */
	EXPECT_INT_VALUE(LOADED(TEXT("I1\n.")), 1);
}

Test(pickle, reads_an_int_too_big_for_64_bits_as_a_bigint)
{
	/* 2**64 */
	expect_bigint(LOADED(TEXT("I18446744073709551616\n.")), BYTES(0, 0, 0, 0, 0, 0, 0, 0, 1));
}

Test(pickle, reads_long_with_L_suffix)
{
	EXPECT_INT_VALUE(LOADED(TEXT("L42L\n.")), 42);
	EXPECT_INT_VALUE(LOADED(TEXT("L-1L\n.")), -1);
	EXPECT_INT_VALUE(LOADED(TEXT("L-9223372036854775808L\n.")), INT64_MIN);
	EXPECT_INT_VALUE(LOADED(TEXT("L7\n.")), 7); /* Python 3 writes no suffix */
}

Test(pickle, reads_huge_long_as_bigint)
{
	/* 2**70 and -2**70: nine bytes of little-endian two's complement */
	expect_bigint(LOADED(TEXT("L1180591620717411303424L\n.")), BYTES(0, 0, 0, 0, 0, 0, 0, 0, 0x40));
	expect_bigint(LOADED(TEXT("L-1180591620717411303424L\n.")), BYTES(0, 0, 0, 0, 0, 0, 0, 0, 0xc0));
	/* 2**63 needs a ninth byte for its sign */
	expect_bigint(LOADED(TEXT("L9223372036854775808L\n.")), BYTES(0, 0, 0, 0, 0, 0, 0, 0x80, 0));
}

Test(pickle, rejects_bad_integer_text)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("I12x\n."));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("I\n."));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("L-L\n."));
}

Test(pickle, reads_protocol_0_float)
{
	const ti_value *v = LOADED(TEXT("F1.5\n."));
	ASSERT_KIND(v, TI_FLOAT);
	EXPECT_DOUBLE(v->as.real, 1.5);
	EXPECT_DOUBLE(LOADED(TEXT("F-1e-08\n."))->as.real, -1e-08);
	EXPECT_DOUBLE(LOADED(TEXT("F1e+300\n."))->as.real, 1e300);
	v = LOADED(TEXT("Finf\n."));
	cr_expect(isinf(v->as.real) && v->as.real > 0, "Finf: got %g, want inf", v->as.real);
}

Test(pickle, rejects_bad_float_text)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("F1.5abc\n."));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("F\n."));
}

Test(pickle, reads_string_with_escapes)
{
	/* Python 2 repr: \n \t \xNN \' \\ and octal */
	EXPECT_TEXT(LOADED(TEXT("S'a\\nb\\tc\\x41\\'d\\\\e'\n.")), TI_STR, "a\nb\tcA'd\\e");
	EXPECT_TEXT(LOADED(TEXT("S\"it's\"\n.")), TI_STR, "it's");
	EXPECT_TEXT(LOADED(TEXT("S'\\101\\0'\n.")), TI_STR, "A\0");
	EXPECT_TEXT(LOADED(TEXT("S''\n.")), TI_STR, "");
}

Test(pickle, reads_string_with_the_bell_backspace_formfeed_and_vtab_escapes)
{
	/* Once a bug: op_string_text knows only \n \t \r \x and octal; Python's
	 * escape_decode (which STRING uses) also maps \a \b \f \v. The library
	 * turns "\a" into the letter 'a'. */
	EXPECT_TEXT(LOADED(TEXT("S'\\a\\b\\f\\v'\n.")), TI_STR, "\a\b\f\v");
}

Test(pickle, keeps_a_string_that_is_not_utf8_as_bytes)
{
	EXPECT_TEXT(LOADED(TEXT("S'\\xff'\n.")), TI_BYTES, "\xff");
}

Test(pickle, rejects_an_unquoted_string)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("Sabc\n."));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("S'abc\"\n."));
}

Test(pickle, reads_unicode_with_u_escapes)
{
	EXPECT_TEXT(LOADED(TEXT("Vcaf\\u00e9 \\U0001f600\n.")), TI_STR, "caf\xc3\xa9 \xf0\x9f\x98\x80");
	EXPECT_TEXT(LOADED(TEXT("V\\u005cu\n.")), TI_STR, "\\u");
}

Test(pickle, reads_raw_unicode_bytes_as_latin1)
{
	/* raw-unicode-escape: a byte that is not an escape is a latin-1 character */
	EXPECT_TEXT(LOADED(TEXT("V\xe9t\xe9\n.")), TI_STR, "\xc3\xa9t\xc3\xa9");
}

Test(pickle, put_and_get_share_one_value)
{
	const ti_value *v = LOADED(TEXT("(I5\np0\ng0\nt."));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 2);
	EXPECT_INT_VALUE(v->as.seq.items[0], 5);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "GET returned a copy, not the stored value");
}

Test(pickle, rejects_get_of_bad_index_text)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 6, TEXT("I5\np0\ngx\n."));
}

Test(pickle, inst_records_a_call_without_running_it)
{
	const ti_value *v = LOADED(TEXT("(I1\nI2\nimymod\nMaker\n."));
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_INT(v->flags & TI_F_INST, TI_F_INST);
	EXPECT_GLOBAL(v->as.object->callable, "mymod", "Maker");
	ASSERT_KIND(v->as.object->args, TI_TUPLE);
	ASSERT_INT(v->as.object->args->as.seq.count, 2);
	EXPECT_INT_VALUE(v->as.object->args->as.seq.items[1], 2);
	cr_expect(v->as.object->state == NULL, "INST set a state");
}

Test(pickle, obj_takes_the_class_from_below_the_arguments)
{
	const ti_value *v = LOADED(TEXT("(cmymod\nMaker\nI3\no."));
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_INT(v->flags & TI_F_INST, TI_F_INST);
	EXPECT_GLOBAL(v->as.object->callable, "mymod", "Maker");
	ASSERT_INT(v->as.object->args->as.seq.count, 1);
	EXPECT_INT_VALUE(v->as.object->args->as.seq.items[0], 3);
}

Test(pickle, rejects_obj_without_a_class)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 1, TEXT("(o."));
}

Test(pickle, dict_list_and_tuple_collect_above_the_mark)
{
	const ti_value *d = LOADED(TEXT("(S'a'\nI1\nS'b'\nI2\nd."));
	ASSERT_KIND(d, TI_DICT);
	ASSERT_INT(d->as.dict->count, 2);
	EXPECT_TEXT(d->as.dict->keys[1], TI_STR, "b");
	EXPECT_INT_VALUE(d->as.dict->values[1], 2);

	const ti_value *l = LOADED(TEXT("I9\n(I1\nI2\nl."));
	ASSERT_KIND(l, TI_LIST);
	ASSERT_INT(l->as.seq.count, 2);
	EXPECT_INT_VALUE(l->as.seq.items[0], 1);

	const ti_value *t = LOADED(TEXT("(I1\nI2\nI3\nt."));
	ASSERT_KIND(t, TI_TUPLE);
	EXPECT_INT(t->as.seq.count, 3);

	const ti_value *empty = LOADED(TEXT("(t."));
	ASSERT_KIND(empty, TI_TUPLE);
	EXPECT_INT(empty->as.seq.count, 0);
}

Test(pickle, rejects_dict_with_an_odd_number_of_items)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 4, TEXT("(I1\nd."));
}

Test(pickle, pop_discards_the_top)
{
	EXPECT_INT_VALUE(LOADED(TEXT("I1\nI2\n0.")), 1);
}

Test(pickle, pop_with_nothing_above_the_mark_pops_the_mark)
{
	/* _pickle.c's load_pop: an empty mark is discarded */
	EXPECT_INT_VALUE(LOADED(TEXT("I7\n(0.")), 7);
	/* ... so no mark remains for POP_MARK at offset 6 */
	EXPECT_FAILURE(TI_E_CORRUPT, 6, TEXT("I7\n(0N1."));
}

Test(pickle, pop_mark_discards_through_the_mark)
{
	EXPECT_INT_VALUE(LOADED(TEXT("I7\n(I1\nI2\n1.")), 7);
}

Test(pickle, dup_pushes_the_top_again)
{
	const ti_value *v = LOADED(TEXT("(I3\n2t."));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 2);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "DUP made a copy");
}

Test(pickle, rejects_dup_on_an_empty_stack)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("2."));
}

Test(pickle, append_appends_setitem_and_setitems_fill_containers)
{
	const ti_value *l = LOADED(TEXT("]I1\na(I2\nI3\ne."));
	ASSERT_KIND(l, TI_LIST);
	ASSERT_INT(l->as.seq.count, 3);
	EXPECT_INT_VALUE(l->as.seq.items[2], 3);

	const ti_value *d = LOADED(TEXT("}S'k'\nI1\ns(S'j'\nI2\nS'i'\nI3\nu."));
	ASSERT_KIND(d, TI_DICT);
	ASSERT_INT(d->as.dict->count, 3);
	EXPECT_TEXT(d->as.dict->keys[0], TI_STR, "k");
	EXPECT_TEXT(d->as.dict->keys[2], TI_STR, "i");
	EXPECT_INT_VALUE(d->as.dict->values[2], 3);
}

Test(pickle, appends_to_an_object_are_kept_with_it)
{
	/* list subclasses are pickled as NEWOBJ then APPENDS: the items are recorded */
	const ti_value *v = LOADED(TEXT("cmymod\nMyList\n)\x81(I1\nI2\ne."));
	ASSERT_KIND(v, TI_OBJECT);
	ASSERT_KIND(v->as.object->list_items, TI_LIST);
	EXPECT_INT(v->as.object->list_items->as.seq.count, 2);
}

Test(pickle, none_is_none)
{
	ASSERT_KIND(LOADED(TEXT("N.")), TI_NONE);
}

Test(pickle, maps_python_2_module_names_to_python_3)
{
	/* Lib/_compat_pickle.py: __builtin__ and exceptions are builtins, copy_reg is copyreg */
	EXPECT_GLOBAL(LOADED(TEXT("c__builtin__\nset\n.")), "builtins", "set");
	EXPECT_GLOBAL(LOADED(TEXT("cexceptions\nValueError\n.")), "builtins", "ValueError");
	EXPECT_GLOBAL(LOADED(TEXT("ccopy_reg\n_reconstructor\n.")), "copyreg", "_reconstructor");
	EXPECT_GLOBAL(LOADED(TEXT("ccollections\nOrderedDict\n.")), "collections", "OrderedDict");
}

Test(pickle, a_global_remembers_the_offset_of_its_opcode)
{
	const ti_value *v = LOADED(TEXT("(I1\ncmod\nfn\nt."));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_KIND(v->as.seq.items[1], TI_GLOBAL);
	EXPECT_INT(v->as.seq.items[1]->as.global->offset, 4);
	cr_expect(v->as.seq.items[1]->as.global->known == NULL, "a global is known without hooks");
}

Test(pickle, text_persid_without_hooks_is_kept)
{
	const ti_value *v = LOADED(TEXT("Pkey1\n."));
	ASSERT_KIND(v, TI_PERSID);
	EXPECT_TEXT(v->as.persid, TI_STR, "key1");
}

Test(pickle, binstring_and_short_binstring_are_python_2_strings)
{
	/* torch.load decodes Python 2 str as UTF-8, keeping bytes when that fails */
	EXPECT_TEXT(LOADED(BYTES('T', 3, 0, 0, 0, 'a', 'b', 'c', '.')), TI_STR, "abc");
	EXPECT_TEXT(LOADED(BYTES('U', 2, 'h', 'i', '.')), TI_STR, "hi");
	EXPECT_TEXT(LOADED(BYTES('U', 1, 0xff, '.')), TI_BYTES, "\xff");
}

Test(pickle, rejects_binstring_with_a_negative_length)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES('T', 0xff, 0xff, 0xff, 0xff, '.'));
}

/* ---- protocol 1 and 2: binary opcodes ---- */

Test(pickle, reads_proto_and_counts_bytes_to_stop)
{
	ASSERT_KIND(LOADED(BYTES(0x80, 2, 'N', '.', 'j', 'u', 'n', 'k')), TI_NONE);
	EXPECT_INT(consumed, 4);
}

Test(pickle, binint_is_signed_32_bit)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'J', 0xff, 0xff, 0xff, 0xff, '.')), -1);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'J', 0x00, 0x00, 0x00, 0x80, '.')), INT32_MIN);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'J', 0xff, 0xff, 0xff, 0x7f, '.')), INT32_MAX);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'J', 0x01, 0x02, 0x03, 0x04, '.')), 0x04030201);
}

Test(pickle, binint1_and_binint2_are_unsigned)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'K', 0xff, '.')), 255);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'K', 0x00, '.')), 0);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'M', 0xff, 0xff, '.')), 65535);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 'M', 0x00, 0x01, '.')), 256);
}

Test(pickle, long1_of_zero_bytes_is_zero)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 0, '.')), 0);
}

Test(pickle, long1_is_little_endian_twos_complement)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 1, 0xff, '.')), -1);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 1, 0x80, '.')), -128);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 2, 0xff, 0x00, '.')), 255);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 2, 0x00, 0x80, '.')), -32768);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 5, 0x00, 0x00, 0x00, 0x00, 0x01, '.')), INT64_C(1) << 32);
}

Test(pickle, long1_of_8_bytes_fills_int64)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, '.')), INT64_MIN);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '.')),
	                 INT64_MAX);
}

Test(pickle, long1_of_9_bytes_is_a_bigint)
{
	expect_bigint(LOADED(BYTES(0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, '.')),
	              BYTES(0, 0, 0, 0, 0, 0, 0, 0, 0x01));
	expect_bigint(LOADED(BYTES(0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0x40, '.')),
	              BYTES(0, 0, 0, 0, 0, 0, 0, 0, 0x40));
	expect_bigint(LOADED(BYTES(0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0xc0, '.')),
	              BYTES(0, 0, 0, 0, 0, 0, 0, 0, 0xc0));
}

Test(pickle, long1_with_redundant_sign_bytes_still_fits_int64)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, '.')), -1);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0x00, '.')),
	                 INT64_MAX);
}

Test(pickle, long4_reads_a_4_byte_length)
{
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8b, 2, 0, 0, 0, 0x01, 0x01, '.')), 257);
	EXPECT_INT_VALUE(LOADED(BYTES(0x80, 2, 0x8b, 0, 0, 0, 0, '.')), 0);
	expect_bigint(LOADED(BYTES(0x80, 2, 0x8b, 10, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, '.')),
	              BYTES(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
}

Test(pickle, binfloat_is_big_endian)
{
	const ti_value *v = LOADED(BYTES(0x80, 2, 'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, '.'));
	ASSERT_KIND(v, TI_FLOAT);
	EXPECT_DOUBLE(v->as.real, 1.5);
	EXPECT_DOUBLE(LOADED(BYTES(0x80, 2, 'G', 0xc0, 0, 0, 0, 0, 0, 0, 0, '.'))->as.real, -2.0);
	/* 0.1 = 0x3fb999999999999a */
	EXPECT_DOUBLE(LOADED(BYTES(0x80, 2, 'G', 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a, '.'))->as.real, 0.1);
}

Test(pickle, tuple1_to_tuple3_take_the_top_items)
{
	const ti_value *v = LOADED(BYTES(0x80, 2, 'K', 1, 0x85, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	EXPECT_INT(v->as.seq.count, 1);
	v = LOADED(BYTES(0x80, 2, 'K', 9, 'K', 1, 'K', 2, 0x86, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 2);
	EXPECT_INT_VALUE(v->as.seq.items[0], 1);
	EXPECT_INT_VALUE(v->as.seq.items[1], 2);
	v = LOADED(BYTES(0x80, 2, 'K', 1, 'K', 2, 'K', 3, 0x87, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 3);
	EXPECT_INT_VALUE(v->as.seq.items[2], 3);
	v = LOADED(BYTES(0x80, 2, ')', '.'));
	ASSERT_KIND(v, TI_TUPLE);
	EXPECT_INT(v->as.seq.count, 0);
}

Test(pickle, rejects_tuple2_with_one_item)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 4, BYTES(0x80, 2, 'K', 1, 0x86, '.'));
	/* nor may it reach below a mark */
	EXPECT_FAILURE(TI_E_CORRUPT, 7, BYTES(0x80, 2, 'K', 1, '(', 'K', 2, 0x86, '.'));
}

Test(pickle, newtrue_and_newfalse_are_bools)
{
	const ti_value *v = LOADED(BYTES(0x80, 2, 0x88, '.'));
	ASSERT_KIND(v, TI_BOOL);
	EXPECT_INT(v->as.boolean, 1);
	v = LOADED(BYTES(0x80, 2, 0x89, '.'));
	ASSERT_KIND(v, TI_BOOL);
	EXPECT_INT(v->as.boolean, 0);
}

Test(pickle, newobj_records_cls_new_without_running_it)
{
	const ti_value *v = LOADED(TEXT("\x80\x02" "cmymod\nThing\n" ")" "\x81" "."));
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_INT(v->flags & TI_F_NEWOBJ, TI_F_NEWOBJ);
	EXPECT_GLOBAL(v->as.object->callable, "mymod", "Thing");
	ASSERT_KIND(v->as.object->args, TI_TUPLE);
	EXPECT_INT(v->as.object->args->as.seq.count, 0);
	cr_expect(v->as.object->kwargs == NULL, "NEWOBJ has keyword arguments");
}

Test(pickle, rejects_newobj_arguments_that_are_not_a_tuple)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 16, TEXT("\x80\x02" "cmymod\nThing\n" "N" "\x81" "."));
}

Test(pickle, reduce_records_the_call_without_running_it)
{
	const ti_value *v = LOADED(TEXT("\x80\x02" "cmymod\nfn\n" "K\x01" "\x85" "R."));
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_INT(v->flags & (TI_F_NEWOBJ | TI_F_INST), 0);
	EXPECT_GLOBAL(v->as.object->callable, "mymod", "fn");
	ASSERT_KIND(v->as.object->args, TI_TUPLE);
	ASSERT_INT(v->as.object->args->as.seq.count, 1);
	EXPECT_INT_VALUE(v->as.object->args->as.seq.items[0], 1);
}

Test(pickle, rejects_reduce_arguments_that_are_not_a_tuple)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 13, TEXT("\x80\x02" "cmymod\nfn\n" "N" "R."));
}

Test(pickle, build_on_a_dict_sets_its_attributes)
{
	/* OrderedDict's _metadata in a state_dict arrives this way */
	const ti_value *v = LOADED(TEXT("\x80\x02" "}" "}" "X\x01\x00\x00\x00" "a" "K\x01" "s" "b" "."));
	ASSERT_KIND(v, TI_DICT);
	EXPECT_INT(v->as.dict->count, 0);
	ASSERT_KIND(v->as.dict->attributes, TI_DICT);
	ASSERT_INT(v->as.dict->attributes->as.dict->count, 1);
	EXPECT_TEXT(v->as.dict->attributes->as.dict->keys[0], TI_STR, "a");
}

Test(pickle, build_on_an_object_sets_its_state)
{
	const ti_value *v = LOADED(TEXT("\x80\x02" "cmymod\nC\n" ")" "\x81" "}" "X\x01\x00\x00\x00" "x" "K\x02" "s" "b" "."));
	ASSERT_KIND(v, TI_OBJECT);
	ASSERT_KIND(v->as.object->state, TI_DICT);
	ASSERT_INT(v->as.object->state->as.dict->count, 1);
	EXPECT_INT_VALUE(v->as.object->state->as.dict->values[0], 2);
}

Test(pickle, rejects_build_on_an_int)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 5, BYTES(0x80, 2, 'K', 1, '}', 'b', '.'));
}

Test(pickle, binpersid_without_hooks_is_kept)
{
	const ti_value *v = LOADED(TEXT("\x80\x02" "X\x01\x00\x00\x00" "k" "Q."));
	ASSERT_KIND(v, TI_PERSID);
	EXPECT_TEXT(v->as.persid, TI_STR, "k");
}

Test(pickle, ext_codes_name_a_copyreg_extension)
{
	/* The registry lives in the writer's process: only the code can be named. */
	EXPECT_GLOBAL(LOADED(BYTES(0x80, 2, 0x82, 5, '.')), "copyreg", "extension_5");
	EXPECT_GLOBAL(LOADED(BYTES(0x80, 2, 0x83, 0x34, 0x12, '.')), "copyreg", "extension_4660");
	EXPECT_GLOBAL(LOADED(BYTES(0x80, 2, 0x84, 0x78, 0x56, 0x34, 0x12, '.')), "copyreg", "extension_305419896");
}

Test(pickle, binput_binget_long_binput_and_long_binget_share_values)
{
	const ti_value *v = LOADED(BYTES(0x80, 2, ']', 'q', 3, 'h', 3, 0x86, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_KIND(v->as.seq.items[0], TI_LIST);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "BINGET made a copy");
	v = LOADED(BYTES(0x80, 2, '}', 'r', 1, 0, 0, 0, 'j', 1, 0, 0, 0, 0x86, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_KIND(v->as.seq.items[1], TI_DICT);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "LONG_BINGET made a copy");
}

/* ---- protocol 3 ---- */

Test(pickle, binbytes_and_short_binbytes_are_bytes)
{
	EXPECT_TEXT(LOADED(BYTES(0x80, 3, 'B', 3, 0, 0, 0, 'a', 'b', 'c', '.')), TI_BYTES, "abc");
	EXPECT_TEXT(LOADED(BYTES(0x80, 3, 'C', 2, 0, 0xff, '.')), TI_BYTES, "\0\xff");
	EXPECT_TEXT(LOADED(BYTES(0x80, 3, 'C', 0, '.')), TI_BYTES, "");
}

/* ---- protocol 4 ---- */

Test(pickle, short_binunicode_and_binunicode8_are_str)
{
	EXPECT_TEXT(LOADED(BYTES(0x80, 4, 0x8c, 3, 'a', 'b', 'c', '.')), TI_STR, "abc");
	EXPECT_TEXT(LOADED(BYTES(0x80, 4, 0x8d, 2, 0, 0, 0, 0, 0, 0, 0, 'h', 'i', '.')), TI_STR, "hi");
	EXPECT_TEXT(LOADED(BYTES(0x80, 4, 'X', 2, 0, 0, 0, 0xc3, 0xa9, '.')), TI_STR, "\xc3\xa9");
}

Test(pickle, binbytes8_is_bytes)
{
	EXPECT_TEXT(LOADED(BYTES(0x80, 4, 0x8e, 1, 0, 0, 0, 0, 0, 0, 0, 0x7f, '.')), TI_BYTES, "\x7f");
}

Test(pickle, empty_set_and_additems_make_a_set)
{
	const ti_value *v = LOADED(BYTES(0x80, 4, 0x8f, '(', 'K', 1, 'K', 2, 0x90, '.'));
	ASSERT_KIND(v, TI_SET);
	ASSERT_INT(v->as.seq.count, 2);
	EXPECT_INT_VALUE(v->as.seq.items[1], 2);
}

Test(pickle, rejects_additems_to_a_list)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 6, BYTES(0x80, 4, ']', '(', 'K', 1, 0x90, '.'));
}

Test(pickle, frozenset_collects_above_the_mark)
{
	const ti_value *v = LOADED(BYTES(0x80, 4, '(', 'K', 1, 'K', 2, 'K', 3, 0x91, '.'));
	ASSERT_KIND(v, TI_FROZENSET);
	EXPECT_INT(v->as.seq.count, 3);
}

Test(pickle, newobj_ex_keeps_keyword_arguments)
{
	const ti_value *v = LOADED(TEXT("\x80\x04" "cm\nC\n" ")" "}" "\x8c\x01" "k" "K\x01" "s" "\x92" "."));
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_INT(v->flags & TI_F_NEWOBJ, TI_F_NEWOBJ);
	EXPECT_GLOBAL(v->as.object->callable, "m", "C");
	ASSERT_KIND(v->as.object->kwargs, TI_DICT);
	EXPECT_INT(v->as.object->kwargs->as.dict->count, 1);
	/* no keywords at all is plain NEWOBJ */
	v = LOADED(TEXT("\x80\x04" "cm\nC\n" ")" "}" "\x92" "."));
	ASSERT_KIND(v, TI_OBJECT);
	cr_expect(v->as.object->kwargs == NULL, "empty keyword arguments were kept");
}

Test(pickle, rejects_newobj_ex_keywords_that_are_not_a_dict)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 9, TEXT("\x80\x04" "cm\nC\n" ")" "N" "\x92" "."));
}

Test(pickle, stack_global_names_a_global)
{
	EXPECT_GLOBAL(LOADED(TEXT("\x80\x04" "\x8c\x05" "torch" "\x8c\x04" "Size" "\x93" ".")), "torch", "Size");
	EXPECT_GLOBAL(LOADED(TEXT("\x80\x04" "\x8c\x0b" "__builtin__" "\x8c\x03" "set" "\x93" ".")), "builtins", "set");
}

Test(pickle, rejects_stack_global_of_non_strings)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 6, BYTES(0x80, 4, 'K', 1, 'K', 2, 0x93, '.'));
}

Test(pickle, memoize_stores_at_the_next_index)
{
	/* list -> memo 0, dict -> memo 1; BINGET 1, BINGET 0, TUPLE2 -> (dict, list) */
	const ti_value *v = LOADED(BYTES(0x80, 4, ']', 0x94, '}', 0x94, 'h', 1, 'h', 0, 0x86, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 2);
	ASSERT_KIND(v->as.seq.items[0], TI_DICT);
	ASSERT_KIND(v->as.seq.items[1], TI_LIST);
}

Test(pickle, frame_is_read_through)
{
	ASSERT_KIND(LOADED(BYTES(0x80, 4, 0x95, 2, 0, 0, 0, 0, 0, 0, 0, 'N', '.')), TI_NONE);
}

Test(pickle, rejects_a_frame_longer_than_the_pickle)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 4, 0x95, 100, 0, 0, 0, 0, 0, 0, 0, 'N', '.'));
}

/*
 * Reads that cross a FRAME's end, read as CPython's C unpickler reads the
 * io.BytesIO torch.load gives it: the frame's rest is dropped and the read
 * starts after the frame, but for BINBYTES' data, which runs on.
 */
static int divergences;
static ti_status count_divergence(void *ctx, uint8_t opcode, const char *what, int64_t offset, ti_error *e)
{
	(void)ctx, (void)opcode, (void)what, (void)offset, (void)e;
	divergences++;
	return TI_OK;
}
static const ti_pickle_hooks diverge_hooks = {.diverge = count_divergence};

static ti_value *loaded_counting(const uint8_t *data, size_t size, int line)
{
	divergences = 0;
	ti_error_clear(&err);
	result = NULL;
	ti_status s = ti_pickle_load(data, size, &arena, &diverge_hooks, NULL, &result, &consumed, &err);
	cr_assert(s == TI_OK, "line %d: got %s (\"%s\"), want success", line, ti_status_name(s), err.message);
	return result;
}
#define LOADED_COUNTING(...) loaded_counting(__VA_ARGS__, __LINE__)
#define FRAMED(n, ...) BYTES(0x80, 5, 0x95, n, 0, 0, 0, 0, 0, 0, 0, __VA_ARGS__)

Test(pickle, a_line_with_no_newline_left_in_its_frame_is_read_from_after_the_frame)
{
	/* FRAME 4 holds 'c', "mac": the C unpickler drops "mac", reads module "os", then "system" */
	const ti_value *v = LOADED_COUNTING(FRAMED(4, 'c', 'm', 'a', 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'));
	ASSERT_KIND(v, TI_GLOBAL);
	EXPECT_STR(v->as.global->module, "os");
	EXPECT_STR(v->as.global->name, "system");
	EXPECT_INT(divergences, 1);
}

Test(pickle, the_second_line_of_a_global_crosses_its_frame_alone)
{
	/* FRAME 7 holds 'c', "os\n", "sys": the name line drops "sys" and reads "tem" */
	const ti_value *v = LOADED_COUNTING(FRAMED(7, 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'));
	ASSERT_KIND(v, TI_GLOBAL);
	EXPECT_STR(v->as.global->module, "os");
	EXPECT_STR(v->as.global->name, "tem");
	EXPECT_INT(divergences, 1);
}

Test(pickle, a_counted_length_that_crosses_its_frame_is_read_after_it)
{
	/* FRAME 2 holds 'B' and one byte of its length: the length is 1 from after the frame, the data 'x' */
	const ti_value *v = LOADED_COUNTING(FRAMED(2, 'B', 7, 1, 0, 0, 0, 'x', '.'));
	EXPECT_TEXT(v, TI_BYTES, "x");
	EXPECT_INT(divergences, 1);
}

Test(pickle, bytes_data_runs_on_past_the_frame_and_is_still_reported)
{
	/* SHORT_BINBYTES of 3 in a frame of 3: its data is read into the object, on into the file */
	const ti_value *v = LOADED_COUNTING(FRAMED(3, 'C', 3, 'a', 'b', 'c', '.'));
	EXPECT_TEXT(v, TI_BYTES, "abc");
	EXPECT_INT(divergences, 1);
}

Test(pickle, a_text_argument_that_crosses_its_frame_is_dropped_to_the_frame_end)
{
	/* SHORT_BINUNICODE of 3 in a frame of 3 ('\x8c', 3, 'a'): the C unpickler reads "bc." and runs out */
	divergences = 0;
	ti_error_clear(&err);
	ti_status s = ti_pickle_load(FRAMED(3, 0x8c, 3, 'a', 'b', 'c', '.'), &arena, &diverge_hooks, NULL, &result, NULL, &err);
	EXPECT_INT(s, TI_E_CORRUPT);
	EXPECT_INT(divergences, 1);
}

Test(pickle, a_frame_inside_a_frame_is_reported_and_read_through)
{
	ASSERT_KIND(LOADED_COUNTING(FRAMED(12, 'N', 0x95, 2, 0, 0, 0, 0, 0, 0, 0, 'N', '.')), TI_NONE);
	EXPECT_INT(divergences, 1);
}

Test(pickle, frames_as_picklers_write_them_are_no_divergence)
{
	/* two frames back to back, and bytes data written after its frame (as the pickler writes large bytes) */
	ASSERT_KIND(LOADED_COUNTING(FRAMED(2, ']', 0x94, 0x95, 2, 0, 0, 0, 0, 0, 0, 0, 'N', 'a', '.')), TI_LIST);
	EXPECT_INT(divergences, 0);
	EXPECT_TEXT(LOADED_COUNTING(FRAMED(5, 'B', 2, 0, 0, 0, 'h', 'i', '.')), TI_BYTES, "hi");
	EXPECT_INT(divergences, 0);
}

Test(pickle, setitems_appends_and_additems_of_nothing_touch_no_container)
{
	/* EMPTY_LIST MARK SETITEMS: _pickle.c returns before it sees the list is no dict */
	ASSERT_KIND(LOADED(BYTES(0x80, 2, ']', '(', 'u', '.')), TI_LIST);
	ASSERT_KIND(LOADED(BYTES(0x80, 4, '}', '(', 'e', '.')), TI_DICT);
	ASSERT_KIND(LOADED(BYTES(0x80, 4, ']', '(', 0x90, '.')), TI_LIST);
	/* with items, the container must be the right one */
	EXPECT_FAILURE(TI_E_CORRUPT, 6, BYTES(0x80, 2, ']', '(', 'N', 'N', 'u', '.'));
}

/* ---- protocol 5 ---- */

Test(pickle, bytearray8_is_bytes_flagged_bytearray)
{
	const ti_value *v = LOADED(BYTES(0x80, 5, 0x96, 2, 0, 0, 0, 0, 0, 0, 0, 'h', 'i', '.'));
	EXPECT_TEXT(v, TI_BYTES, "hi");
	EXPECT_INT(v->flags & TI_F_BYTEARRAY, TI_F_BYTEARRAY);
}

Test(pickle, next_buffer_is_unsupported)
{
	EXPECT_FAILURE(TI_E_UNSUPPORTED, 2, BYTES(0x80, 5, 0x97, '.'));
}

Test(pickle, readonly_buffer_leaves_the_value)
{
	EXPECT_TEXT(LOADED(BYTES(0x80, 5, 'C', 1, 'x', 0x98, '.')), TI_BYTES, "x");
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 5, 0x98, '.'));
}

/* ---- errors: each with its code and the offset of the opcode that failed ---- */

Test(pickle, rejects_an_unknown_opcode)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, '}', 0xff, '.'));
	EXPECT_CONTAINS(err.message, "0xff");
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES(0x99, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES(0x00));
}

Test(pickle, rejects_stack_underflow)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'R', '.'));
	EXPECT_CONTAINS(err.message, "underflow");
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES('.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES('0', '.'));
}

Test(pickle, rejects_pop_below_mark)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 4, BYTES(0x80, 2, 'N', '(', 'R', '.'));
	EXPECT_CONTAINS(err.message, "MARK");
	EXPECT_FAILURE(TI_E_CORRUPT, 4, BYTES(0x80, 2, 'N', '(', '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 4, BYTES(0x80, 2, ']', '(', 'a', '.'));
}

Test(pickle, rejects_pop_mark_with_no_mark)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, ']', '1', '.'));
	EXPECT_CONTAINS(err.message, "MARK");
}

Test(pickle, rejects_tuple_with_no_mark)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, 'N', 't', '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, ']', 'e', '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, '}', 'u', '.'));
}

Test(pickle, rejects_a_memo_index_never_stored)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'h', 200, '.'));
	EXPECT_CONTAINS(err.message, "200");
	EXPECT_FAILURE(TI_E_CORRUPT, 5, BYTES(0x80, 2, 'N', 'q', 0, 'h', 1, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'j', 0, 0, 0, 0, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("g3\n."));
}

Test(pickle, a_memo_index_past_the_limit_is_refused_only_where_it_is_read_back)
{
	ti_pickle_limits limits;
	ti_pickle_limits_default(&limits);
	limits.memo_max = 4;
	/* PUT 4, never fetched: the C unpickler stores it, nothing reads it, the load goes on */
	ASSERT_STATUS(load_limited(BYTES(0x80, 2, 'N', 'q', 4, '.'), &limits), TI_OK, err);
	/* fetched, it is past the ceiling */
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 5, BYTES(0x80, 2, 'N', 'q', 4, 'h', 4, 0x86, '.'));
	/* with MEMOIZE, whose index counts every entry set */
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 3, BYTES(0x80, 4, 'N', 'q', 4, 0x94, '.'));
	/* memo 3 is fine */
	ASSERT_STATUS(load_limited(BYTES(0x80, 2, 'N', 'q', 3, '.'), &limits), TI_OK, err);
}

Test(pickle, a_memo_index_past_the_pickles_size_is_valid)
{
	/* BINPUT 200 and BINGET 200 in a pickle of 10 bytes: Python's pickler never writes it, the C unpickler loads it */
	ASSERT_KIND(LOADED(BYTES(0x80, 2, 'N', 'q', 200, 'h', 200, 0x86, '.')), TI_TUPLE);
	/* a LONG_BINPUT no fetch reads back */
	ASSERT_KIND(LOADED(BYTES(0x80, 2, 'N', 'r', 0xff, 0xff, 0xff, 0xff, '.')), TI_NONE);
}

Test(pickle, rejects_a_truncated_argument)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'J', 0x01, 0x00));
	EXPECT_CONTAINS(err.message, "truncated");
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 10, 0, 0, 0, 'a', 'b', 'c', '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'G', 0x3f, 0xf0, 0));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 0x8a, 4, 1, 2));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, BYTES(0x80));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("I12"));
	EXPECT_FAILURE(TI_E_CORRUPT, 0, TEXT("cmodule\nname"));
}

Test(pickle, rejects_a_string_longer_than_string_max)
{
	ti_pickle_limits limits;
	ti_pickle_limits_default(&limits);
	limits.string_max = 4;
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 2, BYTES(0x80, 2, 'X', 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', '.'));
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 2, BYTES(0x80, 4, 0x8c, 5, 'h', 'e', 'l', 'l', 'o', '.'));
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 2, BYTES(0x80, 3, 'B', 5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', '.'));
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 0, TEXT("S'hello'\n."));
	/* an integer too big for int64 is a string of bytes too */
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 2, BYTES(0x80, 2, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1, '.'));
	/* a declared length is refused before the bytes are looked for */
	EXPECT_FAILURE(TI_E_LIMIT, 2, BYTES(0x80, 2, 'X', 0xf0, 0xff, 0xff, 0xff, 'a', 'b', 'c', '.'));
	/* four bytes is fine */
	ASSERT_STATUS(load_limited(BYTES(0x80, 2, 'X', 4, 0, 0, 0, 'h', 'e', 'l', 'l', '.'), &limits), TI_OK, err);
}

Test(pickle, rejects_a_stack_deeper_than_stack_max)
{
	ti_pickle_limits limits;
	ti_pickle_limits_default(&limits);
	limits.stack_max = 3;
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 5, BYTES(0x80, 2, 'N', 'N', 'N', 'N', '.'));
	ASSERT_STATUS(load_limited(BYTES(0x80, 2, 'N', 'N', 'N', '.'), &limits), TI_OK, err);
}

Test(pickle, rejects_marks_deeper_than_marks_max)
{
	ti_pickle_limits limits;
	ti_pickle_limits_default(&limits);
	limits.marks_max = 2;
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 4, BYTES(0x80, 2, '(', '(', '(', ')', '.'));
	ASSERT_STATUS(load_limited(BYTES(0x80, 2, '(', '(', 't', 't', '.'), &limits), TI_OK, err);
}

Test(pickle, rejects_a_container_with_more_than_items_max)
{
	ti_pickle_limits limits;
	ti_pickle_limits_default(&limits);
	limits.items_max = 2;
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 9, BYTES(0x80, 2, '(', 'K', 1, 'K', 2, 'K', 3, 'l', '.'));
	EXPECT_FAILURE_WITH(&limits, TI_E_LIMIT, 10, BYTES(0x80, 2, ']', '(', 'K', 1, 'K', 2, 'K', 3, 'e', '.'));
}

Test(pickle, rejects_invalid_utf8_in_binunicode)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 2, 0, 0, 0, 0xc3, 0x28, '.'));
	EXPECT_CONTAINS(err.message, "UTF-8");
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 1, 0, 0, 0, 0xc3, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 1, 0, 0, 0, 0xff, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 1, 0, 0, 0, 0x80, '.'));
	/* overlong two-byte NUL */
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 2, 0, 0, 0, 0xc0, 0x80, '.'));
	/* surrogates pass: pickle decodes with 'surrogatepass' */
	EXPECT_TEXT(LOADED(BYTES(0x80, 2, 'X', 3, 0, 0, 0, 0xed, 0xa0, 0x80, '.')), TI_STR, "\xed\xa0\x80");
}

Test(pickle, rejects_overlong_and_out_of_range_utf8_in_binunicode)
{
	/* Once a bug: valid_utf8() checks lead and continuation bytes only. Python's
	 * UTF-8 decoder (even with 'surrogatepass') also refuses overlong 3- and
	 * 4-byte forms and code points above U+10FFFF; the library accepts them. */
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 3, 0, 0, 0, 0xe0, 0x80, 0x80, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 4, 0, 0, 0, 0xf0, 0x80, 0x80, 0x80, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 4, 0, 0, 0, 0xf4, 0x90, 0x80, 0x80, '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 'X', 4, 0, 0, 0, 0xf5, 0x80, 0x80, 0x80, '.'));
}

Test(pickle, rejects_odd_setitems)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 6, BYTES(0x80, 2, '}', '(', 'K', 1, 'u', '.'));
	EXPECT_CONTAINS(err.message, "odd");
}

Test(pickle, rejects_append_to_a_dict)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 5, BYTES(0x80, 2, '}', 'K', 1, 'a', '.'));
	/* SETITEM to a list, APPEND to None */
	EXPECT_FAILURE(TI_E_CORRUPT, 7, BYTES(0x80, 2, ']', 'K', 1, 'K', 2, 's', '.'));
	EXPECT_FAILURE(TI_E_CORRUPT, 5, BYTES(0x80, 2, 'N', 'K', 1, 'a', '.'));
}

Test(pickle, rejects_a_missing_stop)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 3, BYTES(0x80, 2, 'N'));
	EXPECT_CONTAINS(err.message, "STOP");
	EXPECT_FAILURE(TI_E_CORRUPT, 0, (const uint8_t *)"", 0);
}

Test(pickle, rejects_a_negative_long4_length)
{
	EXPECT_FAILURE(TI_E_CORRUPT, 2, BYTES(0x80, 2, 0x8b, 0xff, 0xff, 0xff, 0xff, '.'));
}

Test(pickle, rejects_protocol_6)
{
	EXPECT_FAILURE(TI_E_UNSUPPORTED, 0, BYTES(0x80, 6, 'N', '.'));
	EXPECT_CONTAINS(err.message, "6");
}

Test(pickle, error_offset_is_that_of_the_latest_failure)
{
	/* Once a bug: ti_pickle_load() leaves err->offset alone when it is already set
	 * (ti_error_at keeps an offset >= 0), and never clears err itself. So a
	 * caller that reuses one ti_error, or zero-fills it with {0} (offset 0,
	 * not -1), gets a stale offset. Here the second failure is at offset 2
	 * but err.offset still says 5 from the first. */
	ti_error shared;
	ti_error_clear(&shared);
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(BYTES(0x80, 2, 'K', 1, '}', 'b', '.'), &arena, NULL, NULL, &v, NULL, &shared);
	EXPECT_STATUS(s, TI_E_CORRUPT, shared);
	EXPECT_INT(shared.offset, 5);
	s = ti_pickle_load(BYTES(0x80, 2, 'R', '.'), &arena, NULL, NULL, &v, NULL, &shared);
	EXPECT_STATUS(s, TI_E_CORRUPT, shared);
	EXPECT_INT(shared.offset, 2);

	ti_error zeroed = {0};
	s = ti_pickle_load(BYTES(0x80, 2, 'R', '.'), &arena, NULL, NULL, &v, NULL, &zeroed);
	EXPECT_INT(zeroed.offset, 2);
}

/* ---- nothing is executed ---- */

Test(pickle, a_reduce_of_posix_system_is_recorded_not_run)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/tinspect_pwned_unit_%ld", (long)getpid());
	char command[96];
	int n = snprintf(command, sizeof(command), "touch %s", path);
	uint8_t bytes[256];
	size_t size = 0;
	const char head[] = "\x80\x02" "cposix\nsystem\n";
	memcpy(bytes, head, sizeof(head) - 1);
	size += sizeof(head) - 1;
	bytes[size++] = 'X';
	bytes[size++] = (uint8_t)n;
	bytes[size++] = 0;
	bytes[size++] = 0;
	bytes[size++] = 0;
	memcpy(bytes + size, command, (size_t)n);
	size += (size_t)n;
	bytes[size++] = 0x85; /* TUPLE1 */
	bytes[size++] = 'R';
	bytes[size++] = '.';

	const ti_value *v = LOADED(bytes, size);
	ASSERT_KIND(v, TI_OBJECT);
	EXPECT_GLOBAL(v->as.object->callable, "posix", "system");
	ASSERT_KIND(v->as.object->args, TI_TUPLE);
	ASSERT_INT(v->as.object->args->as.seq.count, 1);
	ASSERT_KIND(v->as.object->args->as.seq.items[0], TI_STR);
	EXPECT_STR(v->as.object->args->as.seq.items[0]->as.bytes.data, command);
	cr_expect(access(path, F_OK) != 0, "%s exists: the payload ran", path);
}

/* ---- the arena's ceiling ---- */

Test(pickle, a_tiny_arena_fails_a_big_pickle_with_limit)
{
	/* EMPTY_LIST MARK 1000 x BINUNICODE 'hello' APPENDS STOP: ~10 KiB of values */
	enum { ITEMS = 1000 };
	size_t size = 0;
	uint8_t *bytes = malloc(8 + ITEMS * 10);
	cr_assert(bytes != NULL);
	bytes[size++] = 0x80;
	bytes[size++] = 2;
	bytes[size++] = ']';
	bytes[size++] = '(';
	for (int i = 0; i < ITEMS; i++) {
		memcpy(bytes + size, "X\x05\x00\x00\x00hello", 10);
		size += 10;
	}
	bytes[size++] = 'e';
	bytes[size++] = '.';

	ti_arena tiny;
	ti_arena_init(&tiny, 4096);
	ti_error e;
	ti_error_clear(&e);
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(bytes, size, &tiny, NULL, NULL, &v, NULL, &e);
	EXPECT_STATUS(s, TI_E_LIMIT, e);
	cr_expect(e.message[0] != '\0', "the error has no message");
	cr_expect(tiny.reserved <= 4096, "arena reserved %zu bytes past its 4096-byte ceiling", tiny.reserved);
	ti_arena_release(&tiny);

	/* the same pickle loads in a roomy arena */
	ti_error_clear(&e);
	s = ti_pickle_load(bytes, size, &arena, NULL, NULL, &v, NULL, &e);
	EXPECT_STATUS(s, TI_OK, e);
	free(bytes);
}

Test(pickle, a_tiny_arena_still_loads_a_small_pickle)
{
	ti_arena tiny;
	ti_arena_init(&tiny, 4096);
	ti_error e;
	ti_error_clear(&e);
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(BYTES(0x80, 2, 'K', 7, 0x85, '.'), &tiny, NULL, NULL, &v, NULL, &e);
	EXPECT_STATUS(s, TI_OK, e);
	if (s == TI_OK) {
		ASSERT_KIND(v, TI_TUPLE);
		EXPECT_INT_VALUE(v->as.seq.items[0], 7);
	}
	ti_arena_release(&tiny);
}

/* ---- hooks ---- */

static int64_t seen_offsets[8];
static int seen_count;

static const struct ti_known_global *record_lookup(void *ctx, const char *module, const char *name, int64_t offset)
{
	(void)ctx;
	(void)module;
	(void)name;
	if (seen_count < 8)
		seen_offsets[seen_count++] = offset;
	return NULL;
}

static ti_status replace_persid(void *ctx, ti_arena *a, ti_value *pid, ti_value **out, ti_error *e)
{
	(void)ctx;
	(void)pid;
	(void)e;
	ti_value *v = ti_arena_alloc(a, sizeof(*v));
	if (v) {
		v->kind = TI_INT;
		v->as.integer = 99;
	}
	*out = v;
	return TI_OK;
}

Test(pickle, hooks_see_every_global_and_may_replace_a_persistent_id)
{
	ti_pickle_hooks hooks = {.lookup = record_lookup, .persistent_load = replace_persid};
	seen_count = 0;
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(TEXT("\x80\x04" "ca\nb\n" "\x8c\x01" "c" "\x8c\x01" "d" "\x93" "Pid\n" "\x87" "."),
	                             &arena, &hooks, NULL, &v, NULL, &err);
	ASSERT_STATUS(s, TI_OK, err);
	ASSERT_INT(seen_count, 2);
	EXPECT_INT(seen_offsets[0], 2);  /* GLOBAL */
	EXPECT_INT(seen_offsets[1], 13); /* STACK_GLOBAL */
	ASSERT_KIND(v, TI_TUPLE);
	EXPECT_INT_VALUE(v->as.seq.items[2], 99);
}

/* A lookup that knows every global in module "known", and counts its calls. */
static const struct ti_known_global known_row = {"known", "any", TI_G_CALLABLE, "function", NULL};
static int lookups;

static const struct ti_known_global *know_module(void *ctx, const char *module, const char *name, int64_t offset)
{
	(void)ctx;
	(void)name;
	(void)offset;
	lookups++;
	return !strcmp(module, "known") ? &known_row : NULL;
}

Test(pickle, a_known_global_is_made_once_and_an_unknown_one_each_time)
{
	ti_pickle_hooks hooks = {.lookup = know_module};
	lookups = 0;
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(TEXT("(cknown\nf\ncknown\nf\ncother\nf\ncother\nf\nt."), &arena, &hooks, NULL, &v, NULL, &err);
	ASSERT_STATUS(s, TI_OK, err);
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 4);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "the known global was made twice");
	EXPECT_INT(v->as.seq.items[0]->as.global->offset, 1); /* where it was first named */
	cr_expect(v->as.seq.items[2] != v->as.seq.items[3], "an unknown global was shared");
	EXPECT_INT(v->as.seq.items[3]->as.global->offset, 28);
	EXPECT_INT(lookups, 3); /* the known one once, the unknown one each time */
}

/* ---- memory: shared values, and values handed back ---- */

Test(pickle, every_empty_tuple_is_the_same_one)
{
	const ti_value *v = LOADED(BYTES(0x80, 2, ')', ')', 0x86, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	ASSERT_INT(v->as.seq.count, 2);
	cr_expect(v->as.seq.items[0] == v->as.seq.items[1], "two () are two values");
}

Test(pickle, a_value_popped_from_the_stack_lives_on_in_the_memo)
{
	/* (1, 2) memoized, popped, fetched: nothing holds it but the memo in between */
	const ti_value *v = LOADED(BYTES(0x80, 2, 'K', 1, 'K', 2, 0x86, 'q', 0, '0', ']', 'h', 0, 'a', '.'));
	ASSERT_KIND(v, TI_LIST);
	ASSERT_INT(v->as.seq.count, 1);
	ASSERT_KIND(v->as.seq.items[0], TI_TUPLE);
	EXPECT_INT_VALUE(v->as.seq.items[0]->as.seq.items[1], 2);
	/* the same through a text PUT and GET, and LONG_BINPUT and LONG_BINGET */
	v = LOADED(TEXT("(I1\nI2\ntp7\n0(lg7\na."));
	ASSERT_KIND(v, TI_LIST);
	ASSERT_KIND(v->as.seq.items[0], TI_TUPLE);
	v = LOADED(BYTES(0x80, 2, 'K', 3, 0x85, 'r', 9, 0, 0, 0, '0', 'j', 9, 0, 0, 0, '.'));
	ASSERT_KIND(v, TI_TUPLE);
	EXPECT_INT_VALUE(v->as.seq.items[0], 3);
}

Test(pickle, a_value_shared_by_two_containers_outlives_one_of_them)
{
	/* t = (1000,); [t, (t,)], then the outer tuple dropped: t stays in the list */
	const ti_value *v = LOADED(BYTES(0x80, 2, 'M', 0xe8, 3, 0x85, '2', 0x85, 'q', 0, '0', 'h', 0, 0x85, '0',
	                                 ']', 'h', 0, 'a', '.'));
	ASSERT_KIND(v, TI_LIST);
	ASSERT_KIND(v->as.seq.items[0], TI_TUPLE);
	ASSERT_KIND(v->as.seq.items[0]->as.seq.items[0], TI_TUPLE);
	EXPECT_INT_VALUE(v->as.seq.items[0]->as.seq.items[0]->as.seq.items[0], 1000);
}

#if !TI_ARENA_ASAN
Test(pickle, values_nothing_holds_go_back_to_the_arena)
{
	/* 20,000 times: (1000, 1001) built, memoized (never fetched) and popped. Each
	 * tuple and its ints are reused by the next, so the arena stays small: 1.7 MB
	 * if nothing were reused. A few entries whose LONG_BINPUT bytes read as a GET
	 * are kept (find_fetched counts every such byte), which is all the arena holds.
	 * (Under AddressSanitizer nothing is reused, to catch dangling pointers.) */
	size_t n = 20000, size = 0;
	uint8_t *p = malloc(n * 13 + 8);
	cr_assert(p != NULL);
	p[size++] = 0x80;
	p[size++] = 2;
	for (size_t i = 0; i < n; i++) {
		const uint8_t item[] = {'M', 0xe8, 3, 'M', 0xe9, 3, 0x86, 'r', (uint8_t)i, (uint8_t)(i >> 8), 0, 0, '0'};
		memcpy(p + size, item, sizeof(item));
		size += sizeof(item);
	}
	p[size++] = 'N';
	p[size++] = '.';
	ti_arena a;
	ti_arena_init(&a, (size_t)1 << 24);
	ti_value *v = NULL;
	ti_status s = ti_pickle_load(p, size, &a, NULL, NULL, &v, NULL, &err);
	EXPECT_STATUS(s, TI_OK, err);
	cr_expect(a.used < 16384, "the arena handed out %zu bytes for 20,000 dropped tuples", a.used);
	ti_arena_release(&a);
	free(p);
}
#endif

/* ---- reading from a source in windows ---- */

typedef struct memory_source {
	const uint8_t *data;
	int reads;
} memory_source;

static ti_status read_memory(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *e)
{
	(void)e;
	memory_source *m = ctx;
	memcpy(buf, m->data + offset, n);
	m->reads++;
	return TI_OK;
}

/*
 * A pickle of some 400 KB whose text lines, GETs and strings fall across
 * the machine's 64 KiB windows: text ints and GETs of every length, a
 * string and a text line longer than a window, all in one list.
 */
static uint8_t *straddling_pickle(size_t *size)
{
	size_t cap = 1 << 20, n = 0;
	uint8_t *p = malloc(cap);
	cr_assert(p != NULL);
#define PUT(s, len) (memcpy(p + n, (s), (len)), n += (len))
	PUT("\x80\x02" "X\x01\x00\x00\x00x" "q\x01" "0" "]q\x00(", 15);
	for (int i = 0; n < cap - 200000; i++) {
		char text[64];
		int len = snprintf(text, sizeof(text), "I%d\ng1\n", i * 7919 % 100003);
		PUT(text, (size_t)len);
		PUT("h\x01j\x01\x00\x00\x00", 7);
		if (i % 5000 == 2500) {
			PUT("X\x70\x11\x01\x00", 5); /* BINUNICODE of 70,000 bytes */
			memset(p + n, 'a', 70000), n += 70000;
			PUT("V", 1); /* UNICODE: a text line of 70,000 characters */
			memset(p + n, 'b', 70000), n += 70000;
			PUT("\ncmodule\nname\n", 14);
		}
	}
	PUT("e.", 2);
#undef PUT
	*size = n;
	return p;
}

Test(pickle, a_source_read_in_windows_loads_what_memory_loads)
{
	size_t size;
	uint8_t *p = straddling_pickle(&size);
	ti_value *a = NULL, *b = NULL;
	ASSERT_STATUS(ti_pickle_load(p, size, &arena, NULL, NULL, &a, NULL, &err), TI_OK, err);
	memory_source m = {p, 0};
	ti_pickle_source src = {size, read_memory, &m, NULL};
	size_t consumed = 0;
	ASSERT_STATUS(ti_pickle_load_source(&src, &arena, NULL, NULL, &b, &consumed, &err), TI_OK, err);
	EXPECT_INT(consumed, size);
	cr_expect(m.reads > 2 * (int)(size / (64 * 1024)), "%d reads of a %zu-byte pickle", m.reads, size);
	ASSERT_KIND(a, TI_LIST);
	ASSERT_KIND(b, TI_LIST);
	ASSERT_INT(b->as.seq.count, a->as.seq.count);
	for (uint32_t i = 0; i < a->as.seq.count; i++) {
		const ti_value *x = a->as.seq.items[i], *y = b->as.seq.items[i];
		cr_assert(x->kind == y->kind, "item %u: %s in memory, %s from the source", i, ti_kind_name(x->kind), ti_kind_name(y->kind));
		if (x->kind == TI_INT)
			cr_assert(x->as.integer == y->as.integer, "item %u: %" PRId64 " and %" PRId64, i, x->as.integer, y->as.integer);
		else if (x->kind == TI_STR)
			cr_assert(x->as.bytes.size == y->as.bytes.size && !memcmp(x->as.bytes.data, y->as.bytes.data, x->as.bytes.size),
			          "item %u: strings differ", i);
	}
	free(p);
}

Test(pickle, a_source_cut_anywhere_fails_as_memory_does)
{
	size_t size;
	uint8_t *p = straddling_pickle(&size);
	for (size_t cut = 1; cut < size; cut += cut < 70000 ? 4093 : 65521) {
		size_t at[] = {cut, 65536 * (cut % 5 + 1) + cut % 23};
		for (int k = 0; k < 2; k++) {
			if (at[k] >= size)
				continue;
			ti_value *v = NULL;
			ti_error e1, e2;
			ti_arena a1, a2;
			ti_arena_init(&a1, (size_t)1 << 24);
			ti_arena_init(&a2, (size_t)1 << 24);
			ti_status s1 = ti_pickle_load(p, at[k], &a1, NULL, NULL, &v, NULL, &e1);
			memory_source m = {p, 0};
			ti_pickle_source src = {at[k], read_memory, &m, NULL};
			ti_status s2 = ti_pickle_load_source(&src, &a2, NULL, NULL, &v, NULL, &e2);
			ti_arena_release(&a1);
			ti_arena_release(&a2);
			cr_assert(s1 != TI_OK && s2 == s1 && e1.offset == e2.offset && !strcmp(e1.message, e2.message),
			          "cut at %zu: memory says %s \"%s\" at %" PRId64 ", the source %s \"%s\" at %" PRId64,
			          at[k], ti_status_name(s1), e1.message, e1.offset, ti_status_name(s2), e2.message, e2.offset);
		}
	}
	free(p);
}

Test(pickle, knows_exactly_python_s_opcodes)
{
	/* Lib/pickletools.py's opcodes list (Python 3.11): 68 opcodes, protocols 0 to 5 */
	static const struct { uint8_t code; const char *name; } python[] = {
		{0x28, "MARK"}, {0x29, "EMPTY_TUPLE"}, {0x2e, "STOP"}, {0x30, "POP"}, {0x31, "POP_MARK"},
		{0x32, "DUP"}, {0x42, "BINBYTES"}, {0x43, "SHORT_BINBYTES"}, {0x46, "FLOAT"},
		{0x47, "BINFLOAT"}, {0x49, "INT"}, {0x4a, "BININT"}, {0x4b, "BININT1"}, {0x4c, "LONG"},
		{0x4d, "BININT2"}, {0x4e, "NONE"}, {0x50, "PERSID"}, {0x51, "BINPERSID"},
		{0x52, "REDUCE"}, {0x53, "STRING"}, {0x54, "BINSTRING"}, {0x55, "SHORT_BINSTRING"},
		{0x56, "UNICODE"}, {0x58, "BINUNICODE"}, {0x5d, "EMPTY_LIST"}, {0x61, "APPEND"},
		{0x62, "BUILD"}, {0x63, "GLOBAL"}, {0x64, "DICT"}, {0x65, "APPENDS"}, {0x67, "GET"},
		{0x68, "BINGET"}, {0x69, "INST"}, {0x6a, "LONG_BINGET"}, {0x6c, "LIST"}, {0x6f, "OBJ"},
		{0x70, "PUT"}, {0x71, "BINPUT"}, {0x72, "LONG_BINPUT"}, {0x73, "SETITEM"},
		{0x74, "TUPLE"}, {0x75, "SETITEMS"}, {0x7d, "EMPTY_DICT"}, {0x80, "PROTO"},
		{0x81, "NEWOBJ"}, {0x82, "EXT1"}, {0x83, "EXT2"}, {0x84, "EXT4"}, {0x85, "TUPLE1"},
		{0x86, "TUPLE2"}, {0x87, "TUPLE3"}, {0x88, "NEWTRUE"}, {0x89, "NEWFALSE"},
		{0x8a, "LONG1"}, {0x8b, "LONG4"}, {0x8c, "SHORT_BINUNICODE"}, {0x8d, "BINUNICODE8"},
		{0x8e, "BINBYTES8"}, {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"},
		{0x92, "NEWOBJ_EX"}, {0x93, "STACK_GLOBAL"}, {0x94, "MEMOIZE"}, {0x95, "FRAME"},
		{0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}, {0x98, "READONLY_BUFFER"},
	};
	size_t named = 0;
	for (int b = 0; b < 256; b++)
		named += ti_pickle_opcode_name((uint8_t)b) != NULL;
	EXPECT_INT(named, sizeof(python) / sizeof(python[0]));
	for (size_t i = 0; i < sizeof(python) / sizeof(python[0]); i++)
		EXPECT_STR(ti_pickle_opcode_name(python[i].code), python[i].name);
}

Test(pickle, names_its_opcodes)
{
	EXPECT_STR(ti_pickle_opcode_name('X'), "BINUNICODE");
	EXPECT_STR(ti_pickle_opcode_name(0x80), "PROTO");
	EXPECT_STR(ti_pickle_opcode_name(0x95), "FRAME");
	EXPECT_STR(ti_pickle_opcode_name(0x98), "READONLY_BUFFER");
	EXPECT_STR(ti_pickle_opcode_name('.'), "STOP");
	cr_expect(ti_pickle_opcode_name(0xff) == NULL, "0xff has a name");
	cr_expect(ti_pickle_opcode_name(0x99) == NULL, "0x99 has a name");
}
