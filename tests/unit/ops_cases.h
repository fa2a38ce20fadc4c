/*
 * ops_cases.h - what the operator tests of the pointwise, reduction and
 * creation families share (test_ops_elementwise.c, test_ops_activation.c,
 * test_ops_reduce.c, test_ops_create.c, test_nn_activation.c): a fixture, and
 * calls written as Python text so that a table row reads like the PyTorch
 * line it was checked against.
 *
 * Arguments: "{2, 3}" is a contiguous float32 tensor, "{3, 2 : 1, 3}" one with
 * strides, "int64{5}" or "bool{2, 3}" one of another dtype, "{}" a zero-dim
 * one, "{N, 3}" one with a symbolic size; then lists [..] or (..), 'str',
 * None, True, False, numbers, names (symbolic sizes, or dtypes such as
 * torch.float64 written as 'float64'), and name=value keywords.
 *
 * Everything is static: each test file that includes this gets its own copy.
 */
#ifndef TINSPECT_TESTS_OPS_CASES_H
#define TINSPECT_TESTS_OPS_CASES_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/module.h"
#include "ops/op.h"
#include "unit.h"
#include <criterion/parameterized.h>

static ti_arena arena;
static ti_symctx sym;
static ti_shape_ctx ctx;
static ti_error err;
static ti_op_call call;

static inline void setup(void)
{
	ti_arena_init(&arena, (size_t)1 << 24);
	ti_symctx_init(&sym, &arena);
	ctx = (ti_shape_ctx){&arena, &sym, TI_DT_FLOAT32, NULL, NULL};
	ti_error_clear(&err);
	memset(&call, 0, sizeof(call));
}

static inline void teardown(void) { ti_arena_release(&arena); }

static inline const char *skip_blanks(const char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

static inline const char *word_end(const char *s)
{
	while (isalnum((unsigned char)*s) || *s == '_' || *s == '.')
		s++;
	return s;
}

/* One size: a product of integers and symbols ("3*N"). */
static inline ti_dim parse_size(const char **text)
{
	ti_dim size = ti_dim_int(1);
	const char *s = *text;
	do {
		s = skip_blanks(*s == '*' ? s + 1 : s);
		if (isalpha((unsigned char)*s)) {
			const char *end = word_end(s);
			size = ti_dim_mul(&sym, size, ti_dim_symbol(&sym, ti_arena_strndup(&arena, s, (size_t)(end - s))));
			s = end;
		} else {
			char *end;
			size = ti_dim_mul(&sym, size, ti_dim_int(strtoll(s, &end, 10)));
			cr_assert(end != s, "cannot read a size at \"%s\"", s);
			s = end;
		}
		s = skip_blanks(s);
	} while (*s == '*');
	*text = s;
	return size;
}

/* Sizes up to a ':' or the closing '}'. */
static inline int parse_sizes(const char **text, ti_dim *out)
{
	int n = 0;
	const char *s = skip_blanks(*text);
	while (*s && *s != ':' && *s != '}') {
		cr_assert(n < TI_META_MAX_DIMS, "too many sizes");
		out[n++] = parse_size(&s);
		if (*s == ',')
			s = skip_blanks(s + 1);
	}
	*text = s;
	return n;
}

/* The inside of "{2, 3}" or "{3, 2 : 1, 3}", and its closing brace. */
static inline ti_meta_tensor *parse_tensor(ti_dtype dtype, const char **text)
{
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	const char *s = *text;
	int n = parse_sizes(&s, shape);
	ti_meta_tensor *t = ti_meta_new(&ctx, dtype, n, shape);
	cr_assert(t != NULL, "out of memory for a tensor");
	if (*s == ':') {
		s++;
		cr_assert(parse_sizes(&s, stride) == n, "as many strides as sizes at \"%s\"", s);
		t = ti_meta_view(&ctx, t, n, shape, stride);
	}
	cr_assert(*s == '}', "a tensor not closed at \"%s\"", s);
	*text = s + 1;
	return t;
}

static inline ti_arg parse_value(const char **text);

static inline ti_arg parse_list(const char **text)
{
	const char *s = *text;
	char close = *s == '[' ? ']' : ')';
	ti_arg *items = ti_arena_calloc(&arena, 64, sizeof(*items));
	int n = 0;
	for (s = skip_blanks(s + 1); *s != close; s = skip_blanks(s)) {
		cr_assert(n < 64 && *s, "a list too long or not closed");
		items[n++] = parse_value(&s);
		s = skip_blanks(s);
		if (*s == ',')
			s++;
	}
	*text = s + 1;
	return ti_arg_list(items, n);
}

static inline ti_arg parse_number(const char **text)
{
	char *end;
	const char *s = *text;
	long long v = strtoll(s, &end, 10);
	cr_assert(end != s, "cannot read an argument at \"%s\"", s);
	if (*end == '.' || *end == 'e') {
		double d = strtod(s, &end);
		*text = end;
		return ti_arg_float(d);
	}
	*text = end;
	return ti_arg_int(v);
}

/* A name: None, True, False, a dtype before '{', or a str (a symbolic size or a dtype name). */
static inline ti_arg parse_word(const char **text)
{
	const char *s = *text, *end = word_end(s);
	char *word = ti_arena_strndup(&arena, s, (size_t)(end - s));
	*text = end;
	if (*end == '{') {
		ti_dtype dtype = ti_dtype_from_torch_name(word);
		cr_assert(dtype != TI_DT_INVALID, "unknown dtype %s", word);
		*text = end + 1;
		return ti_arg_tensor(parse_tensor(dtype, text));
	}
	if (!strcmp(word, "None"))
		return ti_arg_none();
	if (!strcmp(word, "True") || !strcmp(word, "False"))
		return ti_arg_bool(word[0] == 'T');
	return ti_arg_str(word);
}

static inline ti_arg parse_value(const char **text)
{
	const char *s = skip_blanks(*text);
	*text = s;
	if (*s == '[' || *s == '(')
		return parse_list(text);
	if (*s == '\'') {
		const char *end = strchr(s + 1, '\'');
		cr_assert(end != NULL, "a string not closed at \"%s\"", s);
		*text = end + 1;
		return ti_arg_str(ti_arena_strndup(&arena, s + 1, (size_t)(end - s - 1)));
	}
	if (*s == '{') {
		*text = s + 1;
		return ti_arg_tensor(parse_tensor(TI_DT_FLOAT32, text));
	}
	if (isalpha((unsigned char)*s))
		return parse_word(text);
	return parse_number(text);
}

/* "{2, 3}, [1, 2], dim=0": positional values, then name=value pairs. */
static inline int parse_args(const char *text, ti_arg *out)
{
	int n = 0;
	for (const char *s = skip_blanks(text); *s; s = skip_blanks(s)) {
		const char *name = NULL, *word = s;
		while (isalnum((unsigned char)*word) || *word == '_')
			word++;
		if (word > s && *skip_blanks(word) == '=') {
			name = ti_arena_strndup(&arena, s, (size_t)(word - s));
			s = skip_blanks(word) + 1;
		}
		cr_assert(n < TI_OP_MAX_PARAMS, "too many arguments");
		out[n] = parse_value(&s);
		out[n++].name = name;
		s = skip_blanks(s);
		if (*s == ',')
			s++;
	}
	return n;
}

/* Runs op on the arguments written as text, into the fixture's call. */
static inline ti_status run(const char *op, const char *args)
{
	ti_arg a[TI_OP_MAX_PARAMS];
	int n = parse_args(args, a);
	return ti_op_invoke(&ctx, op, a, n, &call, &err);
}

/* Builds a module of type from ctor arguments and calls it on forward arguments. */
static inline ti_status run_module(const char *type, const char *ctor, const char *forward, ti_module **module)
{
	ti_arg a[TI_OP_MAX_PARAMS];
	int n = parse_args(ctor, a);
	ti_status st = ti_module_new_leaf(&ctx, "m", type, a, n, module, &err);
	if (st)
		return st;
	n = parse_args(forward, a);
	return ti_module_call(&ctx, *module, a, n, &call, &err);
}

static inline const ti_meta_tensor *output(int i)
{
	cr_assert(call.output_count > i, "got %d outputs, want more than %d", call.output_count, i);
	cr_assert(call.outputs[i].kind == TI_ARG_TENSOR, "output %d is not a tensor", i);
	return call.outputs[i].as.tensor;
}

/* Shape "[2, 3]", strides (not checked when NULL or empty) and dtype ("float32"; not checked when NULL or empty). */
static inline void expect_tensor(const char *what, const ti_meta_tensor *t, const char *shape, const char *stride,
                          const char *dtype)
{
	const char *got = ti_meta_shape_str(&ctx, t);
	cr_expect(!strcmp(got, shape), "%s: shape got %s, want %s", what, got, shape);
	if (stride && *stride) {
		got = ti_shape_str(&ctx, t->ndim, t->stride);
		cr_expect(!strcmp(got, stride), "%s: stride got %s, want %s", what, got, stride);
	}
	if (dtype && *dtype)
		cr_expect(!strcmp(ti_dtype_name(t->dtype), dtype), "%s: dtype got %s, want %s", what,
		          ti_dtype_name(t->dtype), dtype);
}

/* The call's flops as text ("12", "3*N"). */
static inline const char *flops_text(void)
{
	return ti_dim_str(&sym, call.flops);
}

/*
 * Table rows. Criterion copies parameters into another process, so rows hold
 * their text, not pointers.
 */
typedef struct rule_row {
	char op[24], args[96];
	char shape[48], stride[48], dtype[16]; /* wanted; an empty stride or dtype is not checked */
} rule_row;

typedef struct error_row {
	char op[24], args[96];
	char message[TI_ERROR_MESSAGE_MAX]; /* PyTorch's */
} error_row;

/* A rule row: runs, one output of the wanted geometry and dtype. */
static inline void check_rule(const rule_row *r)
{
	char what[160];
	snprintf(what, sizeof(what), "%s(%s)", r->op, r->args);
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	expect_tensor(what, output(0), r->shape, r->stride, r->dtype);
}

/* An error row: a shape error with PyTorch's message. */
static inline void check_error(const error_row *r)
{
	ti_status st = run(r->op, r->args);
	cr_expect(st == TI_E_SHAPE, "%s(%s): got %s, want a shape error", r->op, r->args, ti_status_name(st));
	cr_expect(!strcmp(err.message, r->message), "%s(%s):\n got  \"%s\"\n want \"%s\"", r->op, r->args,
	          err.message, r->message);
}

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))

#endif
