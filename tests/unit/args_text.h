/*
 * args_text.h - arguments written as Python text, for the tests of the
 * matrix, convolution and pooling rules and modules (test_ops_linalg.c,
 * test_ops_conv.c, test_ops_pooling.c, test_nn_linear.c, test_nn_conv.c,
 * test_nn_pooling.c). Each test file includes it once: it defines the
 * fixture (arena, symbol context, shape context, error, call) and static
 * helpers.
 *
 * "<2, 3>" is a contiguous float32 tensor, "<2, 3 : 1, 2>" one with strides,
 * "<f64 3>" / "<i64 3>" other dtypes, "<grad 4, 5>" one that requires grad;
 * "[1, 2]" and "(1, 2)" are lists, "'same'" a string, "N" a symbolic size,
 * "dim=0" a keyword argument.
 */
#ifndef TINSPECT_TESTS_ARGS_TEXT_H
#define TINSPECT_TESTS_ARGS_TEXT_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>

#include "nn/module.h"
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
}

static inline void teardown(void) { ti_arena_release(&arena); }

/* ---- arguments written as text ---- */

static inline const char *skip(const char *s)
{
	while (*s == ' ')
		s++;
	return s;
}

/* "2, 3, N" up to ':' or '>'. */
static inline int parse_dims(const char **text, ti_dim *out)
{
	int n = 0;
	const char *s = skip(*text);
	while (*s && *s != ':' && *s != '>') {
		if (isalpha((unsigned char)*s)) {
			const char *start = s;
			while (isalnum((unsigned char)*s))
				s++;
			out[n++] = ti_dim_symbol(&sym, ti_arena_strndup(&arena, start, (size_t)(s - start)));
		} else {
			char *end;
			out[n++] = ti_dim_int(strtoll(s, &end, 10));
			s = end;
		}
		s = skip(s);
		if (*s == ',')
			s = skip(s + 1);
	}
	*text = s;
	return n;
}

/* "<f64 grad 2, 3 : 3, 1>" */
static inline ti_arg parse_tensor(const char **text)
{
	const char *s = skip(*text + 1);
	ti_dtype dtype = TI_DT_FLOAT32;
	bool grad = false;
	for (;;) {
		if (!strncmp(s, "f64 ", 4))
			dtype = TI_DT_FLOAT64, s += 4;
		else if (!strncmp(s, "i64 ", 4))
			dtype = TI_DT_INT64, s += 4;
		else if (!strncmp(s, "grad ", 5))
			grad = true, s += 5;
		else
			break;
	}
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int n = parse_dims(&s, shape);
	ti_meta_tensor *t = ti_meta_new(&ctx, dtype, n, shape);
	cr_assert(t != NULL);
	if (*s == ':') {
		s++;
		cr_assert(parse_dims(&s, stride) == n, "as many strides as sizes");
		t = ti_meta_view(&ctx, t, n, shape, stride);
	}
	t->requires_grad = grad;
	*text = s + 1;
	return ti_arg_tensor(t);
}

/* One value: a tensor, a list, 'str', None, True/False, a number or a name (a symbolic size). */
static inline ti_arg parse_value(const char **text)
{
	const char *s = skip(*text);
	if (*s == '<') {
		*text = s;
		return parse_tensor(text);
	}
	if (*s == '[' || *s == '(') {
		char close = *s == '[' ? ']' : ')';
		ti_arg *items = ti_arena_calloc(&arena, 16, sizeof(*items));
		int n = 0;
		for (s = skip(s + 1); *s != close; s = skip(s)) {
			items[n++] = parse_value(&s);
			s = skip(s);
			if (*s == ',')
				s++;
		}
		*text = s + 1;
		return ti_arg_list(items, n);
	}
	if (*s == '\'') {
		const char *end = strchr(s + 1, '\'');
		*text = end + 1;
		return ti_arg_str(ti_arena_strndup(&arena, s + 1, (size_t)(end - s - 1)));
	}
	if (isalpha((unsigned char)*s)) {
		const char *start = s;
		while (isalnum((unsigned char)*s) || *s == '_')
			s++;
		*text = s;
		char *word = ti_arena_strndup(&arena, start, (size_t)(s - start));
		if (!strcmp(word, "None"))
			return ti_arg_none();
		if (!strcmp(word, "True") || !strcmp(word, "False"))
			return ti_arg_bool(word[0] == 'T');
		return ti_arg_str(word);
	}
	char *end;
	long long v = strtoll(s, &end, 10);
	cr_assert(end != s, "cannot read an argument at \"%s\"", s);
	if (*end == '.') {
		double d = strtod(s, &end);
		*text = end;
		return ti_arg_float(d);
	}
	*text = end;
	return ti_arg_int(v);
}

/* "<2, 3>, [1, 2], dim=0": positional values, then name=value pairs. */
static inline int parse_args(const char *text, ti_arg *out)
{
	int n = 0;
	for (const char *s = skip(text); *s; s = skip(s)) {
		const char *word = s;
		while (isalnum((unsigned char)*word) || *word == '_')
			word++;
		const char *name = NULL;
		if (*word == '=' && word != s) {
			name = ti_arena_strndup(&arena, s, (size_t)(word - s));
			s = word + 1;
		}
		out[n] = parse_value(&s);
		if (name)
			out[n] = ti_arg_named(name, out[n]);
		n++;
		s = skip(s);
		if (*s == ',')
			s++;
	}
	return n;
}

static inline ti_status run(const char *op, const char *args)
{
	ti_arg a[16];
	int n = parse_args(args, a);
	return ti_op_invoke(&ctx, op, a, n, &call, &err);
}

static inline const ti_meta_tensor *output(int i)
{
	cr_assert(i < call.output_count && call.outputs[i].kind == TI_ARG_TENSOR, "no output %d", i);
	return call.outputs[i].as.tensor;
}

static inline const char *dim_text(ti_dim d) { return ti_dim_str(&sym, d); }

/* A tensor's shape, and its strides ("" wants contiguous ones). */
static inline void expect_geometry(const char *what, const ti_meta_tensor *t, const char *shape, const char *stride)
{
	const char *got = ti_meta_shape_str(&ctx, t), *strides = ti_shape_str(&ctx, t->ndim, t->stride);
	cr_expect(!strcmp(got, shape), "%s: shape %s, want %s", what, got, shape);
	if (*stride)
		cr_expect(!strcmp(strides, stride), "%s: stride %s, want %s", what, strides, stride);
	else
		cr_expect(ti_meta_is_contiguous(&ctx, t), "%s: stride %s, want contiguous", what, strides);
}

/* op(args) fails with a shape error and PyTorch's message. */
static inline void expect_shape_error(const char *op, const char *args, const char *message)
{
	ti_status st = run(op, args);
	cr_expect(st == TI_E_SHAPE, "%s(%s): got %s, want a shape error", op, args, ti_status_name(st));
	cr_expect(!strcmp(err.message, message), "%s(%s):\n got  \"%s\"\n want \"%s\"", op, args, err.message, message);
}

/* The call's MACs and FLOPs as text ("24", "128*B*T"). */
static inline void expect_counts(const char *what, const char *macs, const char *flops)
{
	cr_expect(call.counted, "%s: not counted", what);
	cr_expect(!strcmp(dim_text(call.macs), macs), "%s: MACs %s, want %s", what, dim_text(call.macs), macs);
	cr_expect(!strcmp(dim_text(call.flops), flops), "%s: FLOPs %s, want %s", what, dim_text(call.flops), flops);
}

/* ---- modules ---- */

/* Builds a module of type from constructor arguments written as text. */
static inline ti_status build(const char *type, const char *args, ti_module **m)
{
	ti_arg a[16];
	int n = parse_args(args, a);
	return ti_module_new_leaf(&ctx, "layer", type, a, n, m, &err);
}

/* Builds a module and runs its forward; fails the test when the constructor fails. */
static inline ti_status forward(const char *type, const char *ctor, const char *args, ti_module **m)
{
	ti_status st = build(type, ctor, m);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", type, ctor, ti_status_name(st), err.message);
	ti_arg a[16];
	int n = parse_args(args, a);
	return ti_module_call(&ctx, *m, a, n, &call, &err);
}

/* A parameter's shape, or "None". */
static inline const char *param_shape(const ti_module *m, const char *name)
{
	const ti_meta_tensor *t = ti_module_tensor_get(m, name);
	return t ? ti_meta_shape_str(&ctx, t) : "None";
}

#endif
