/*
 * ops_cases.h - what the operator and module tests share (every
 * tests/unit/test_ops_*.c and test_nn_*.c): a fixture, calls written as
 * Python text so that a table row reads like the PyTorch line it was checked
 * against, the checks of the usual table rows, and module helpers.
 *
 * Arguments: "{2, 3}" is a contiguous float32 tensor, "{3, 2 : 1, 3}" one with
 * strides, "int64{5}" or "bool{2, 3}" one of another dtype, "{}" a zero-dim
 * one, "{N, 3}" or "{3*N}" one with a symbolic size, "grad {4, 5}" or
 * "grad float64{4}" one that requires grad; then lists [..] or (..), 'str',
 * None, True, False, numbers, names (symbolic sizes, or dtypes such as
 * torch.float64 written as 'float64'), slice(start, stop, step), ... (Ellipsis,
 * the str "..."), and name=value keywords.
 *
 * Everything parsed lives in the fixture's arena, which teardown frees.
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

/* ---- the fixture ---- */

static ti_arena arena;
static ti_symctx sym;
static ti_shape_ctx ctx;
static ti_error err;
static ti_op_call call;

static inline void setup(void)
{
	/* a ceiling, not a reservation: the Transformer stacks are the largest */
	ti_arena_init(&arena, (size_t)1 << 26);
	ti_symctx_init(&sym, &arena);
	ctx = (ti_shape_ctx){.arena = &arena, .sym = &sym, .default_dtype = TI_DT_FLOAT32};
	ti_error_clear(&err);
	memset(&call, 0, sizeof(call));
}

static inline void teardown(void) { ti_arena_release(&arena); }

/* ---- arguments written as text ---- */

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

/* "{2, 3}", "int64{5}" or "{3, 2 : 1, 3}", up to its closing brace. */
static inline ti_arg parse_tensor(bool requires_grad, const char **text)
{
	const char *s = *text, *brace = word_end(s);
	ti_dtype dtype = TI_DT_FLOAT32;
	if (brace > s) {
		dtype = ti_dtype_from_torch_name(ti_arena_strndup(&arena, s, (size_t)(brace - s)));
		cr_assert(dtype != TI_DT_INVALID, "unknown dtype at \"%s\"", s);
	}
	s = brace + 1;
	ti_dim shape[TI_META_MAX_DIMS], stride[TI_META_MAX_DIMS];
	int n = parse_sizes(&s, shape);
	ti_meta_tensor *t = ti_meta_new(&ctx, dtype, n, shape);
	cr_assert(t != NULL, "out of memory for a tensor");
	if (*s == ':') {
		s++;
		cr_assert(parse_sizes(&s, stride) == n, "as many strides as sizes at \"%s\"", s);
		t = ti_meta_view(&ctx, t, n, shape, stride);
	}
	cr_assert(*s == '}', "a tensor not closed at \"%s\"", s);
	t->requires_grad = requires_grad;
	*text = s + 1;
	return ti_arg_tensor(t);
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

/* A name: None, True, False, or a str (a symbolic size or a dtype name). */
static inline ti_arg parse_word(const char **text)
{
	const char *s = *text, *end = word_end(s);
	char *word = ti_arena_strndup(&arena, s, (size_t)(end - s));
	*text = end;
	if (!strcmp(word, "None"))
		return ti_arg_none();
	if (!strcmp(word, "True") || !strcmp(word, "False"))
		return ti_arg_bool(word[0] == 'T');
	return ti_arg_str(word);
}

static inline ti_arg parse_value(const char **text)
{
	const char *s = skip_blanks(*text);
	bool requires_grad = !strncmp(s, "grad ", 5);
	if (requires_grad)
		s = skip_blanks(s + 5);
	*text = s;
	if (*s == '{' || (isalpha((unsigned char)*s) && *word_end(s) == '{'))
		return parse_tensor(requires_grad, text);
	cr_assert(!requires_grad, "grad marks a tensor, not \"%s\"", s);
	if (*s == '[' || *s == '(')
		return parse_list(text);
	if (!strncmp(s, "...", 3)) {
		*text = s + 3;
		return ti_arg_str("...");
	}
	if (!strncmp(s, "slice(", 6)) {
		*text = s + 5;
		ti_arg bounds = parse_list(text);
		cr_assert(bounds.as.list.count == 3, "slice(start, stop, step) at \"%s\"", s);
		return ti_arg_slice(bounds.as.list.items);
	}
	if (*s == '\'') {
		const char *end = strchr(s + 1, '\'');
		cr_assert(end != NULL, "a string not closed at \"%s\"", s);
		*text = end + 1;
		return ti_arg_str(ti_arena_strndup(&arena, s + 1, (size_t)(end - s - 1)));
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

/* ---- operators ---- */

/* Runs op on the arguments written as text, into the fixture's call. */
static inline ti_status run(const char *op, const char *args)
{
	ti_arg a[TI_OP_MAX_PARAMS];
	int n = parse_args(args, a);
	return ti_op_invoke(&ctx, op, a, n, &call, &err);
}

static inline const ti_meta_tensor *output(int i)
{
	cr_assert(call.output_count > i, "got %d outputs, want more than %d", call.output_count, i);
	cr_assert(call.outputs[i].kind == TI_ARG_TENSOR, "output %d is not a tensor", i);
	return call.outputs[i].as.tensor;
}

/* The call's one output, which must be a tensor. */
static inline const ti_meta_tensor *only_output(void)
{
	cr_assert(call.output_count == 1 && call.outputs[0].kind == TI_ARG_TENSOR, "one tensor output");
	return call.outputs[0].as.tensor;
}

static inline const char *output_shape(void) { return ti_meta_shape_str(&ctx, only_output()); }

/* "shape/strides" of a tensor argument, or "None". */
static inline const char *layout_text(const ti_arg *a)
{
	if (a->kind == TI_ARG_NONE)
		return "None";
	cr_assert(a->kind == TI_ARG_TENSOR, "a tensor output");
	const ti_meta_tensor *t = a->as.tensor;
	return ti_arena_printf(&arena, "%s/%s", ti_meta_shape_str(&ctx, t), ti_shape_str(&ctx, t->ndim, t->stride));
}

static inline const char *output_layout(void)
{
	only_output();
	return layout_text(&call.outputs[0]);
}

static inline const char *dim_text(ti_dim d) { return ti_dim_str(&sym, d); }

/* The call's flops as text ("12", "3*N"). */
static inline const char *flops_text(void) { return dim_text(call.flops); }

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

/* The call is counted, with these MACs and FLOPs as text ("24", "128*B*T"). */
static inline void expect_counts(const char *what, const char *macs, const char *flops)
{
	cr_expect(call.counted, "%s: not counted", what);
	cr_expect(!strcmp(dim_text(call.macs), macs), "%s: MACs %s, want %s", what, dim_text(call.macs), macs);
	cr_expect(!strcmp(dim_text(call.flops), flops), "%s: FLOPs %s, want %s", what, dim_text(call.flops), flops);
}

/* A shape error with PyTorch's message. */
#define EXPECT_FAILS(status, want)                                                                            \
	do {                                                                                                  \
		EXPECT_STATUS(status, TI_E_SHAPE, err);                                                       \
		EXPECT_STR(err.message, want);                                                                \
	} while (0)

/* ---- modules ---- */

/* Builds a module of type from constructor arguments written as text; out may be NULL. */
static inline ti_status build_module(const char *type, const char *ctor, ti_module **out)
{
	ti_arg a[TI_OP_MAX_PARAMS];
	ti_module *m = NULL;
	int n = parse_args(ctor, a);
	ti_status st = ti_module_new_leaf(&ctx, "m", type, a, n, &m, &err);
	if (out)
		*out = m;
	return st;
}

/* A module that must build. */
static inline ti_module *module(const char *type, const char *ctor)
{
	ti_module *m;
	ti_status st = build_module(type, ctor, &m);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", type, ctor, ti_status_name(st), err.message);
	return m;
}

/* Calls a module on forward arguments written as text, into the fixture's call. */
static inline ti_status call_module(const ti_module *m, const char *args)
{
	ti_arg a[TI_OP_MAX_PARAMS];
	int n = parse_args(args, a);
	return ti_module_call(&ctx, m, a, n, &call, &err);
}

/* Builds a module and calls it; the constructor's failure, if any, is the status. */
static inline ti_status run_module(const char *type, const char *ctor, const char *forward, ti_module **out)
{
	ti_status st = build_module(type, ctor, out);
	return st ? st : call_module(*out, forward);
}

/* A parameter's shape, or "None". */
static inline const char *param_shape(const ti_module *m, const char *name)
{
	const ti_meta_tensor *t = ti_module_tensor_get(m, name);
	return t ? ti_meta_shape_str(&ctx, t) : "None";
}

/*
 * A module's tensors in order: "weight[4] running_mean[4]* num_batches_tracked[]*int64"
 * (buffers starred, dtypes other than float32 named), or their names alone.
 */
static inline const char *module_tensors_text(const ti_module *m, bool shapes)
{
	char buf[8192] = "";
	size_t n = 0;
	for (int i = 0; i < m->tensor_count && n < sizeof(buf); i++) {
		const ti_module_tensor *t = &m->tensors[i];
		if (!shapes) {
			n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", t->name);
			continue;
		}
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s%s%s%s", i ? " " : "", t->name,
		                      ti_meta_shape_str(&ctx, t->tensor), t->buffer ? "*" : "",
		                      t->tensor->dtype == TI_DT_FLOAT32 ? "" : ti_dtype_name(t->tensor->dtype));
	}
	return ti_arena_strdup(&arena, buf);
}

static inline const char *tensors_text(const ti_module *m) { return module_tensors_text(m, true); }
static inline const char *tensor_names(const ti_module *m) { return module_tensors_text(m, false); }

/*
 * ---- table rows ----
 *
 * Criterion copies parameters into another process, so rows hold their
 * text, not pointers.
 */

/* An operator's output: geometry and dtype; an empty stride or dtype is not checked. */
typedef struct rule_row {
	char op[24], args[96];
	char shape[48], stride[48], dtype[16];
} rule_row;

/* An operator's shape error, with PyTorch's message. */
typedef struct error_row {
	char op[24], args[128];
	char message[TI_ERROR_MESSAGE_MAX];
} error_row;

/* An operator's output and its counts; an empty stride wants a contiguous output. */
typedef struct macs_row {
	char op[24], args[128];
	char shape[48], stride[48];
	char macs[96], flops[96];
} macs_row;

/* An operator's FLOPs alone. */
typedef struct flops_row {
	char op[24], args[96], flops[32];
} flops_row;

/* A module's output: type(ctor)(input); an empty stride or dtype is not checked. */
typedef struct module_row {
	char type[24], ctor[96], input[64];
	char shape[48], stride[48], dtype[16];
} module_row;

/* A module's shape error, from its constructor (an empty input) or its forward. */
typedef struct module_error_row {
	char type[24], ctor[96], input[64];
	char message[TI_ERROR_MESSAGE_MAX];
} module_error_row;

/* A module's weight and bias shapes ("None": no such parameter). */
typedef struct param_row {
	char type[24], ctor[96];
	char weight[32], bias[32];
} param_row;

static inline void check_rule(const rule_row *r)
{
	char what[160];
	snprintf(what, sizeof(what), "%s(%s)", r->op, r->args);
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	expect_tensor(what, output(0), r->shape, r->stride, r->dtype);
}

static inline void check_error(const error_row *r)
{
	ti_status st = run(r->op, r->args);
	cr_expect(st == TI_E_SHAPE, "%s(%s): got %s, want a shape error", r->op, r->args, ti_status_name(st));
	cr_expect(!strcmp(err.message, r->message), "%s(%s):\n got  \"%s\"\n want \"%s\"", r->op, r->args,
	          err.message, r->message);
}

static inline void check_macs(const macs_row *r)
{
	char what[192];
	snprintf(what, sizeof(what), "%s(%s)", r->op, r->args);
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	const ti_meta_tensor *t = output(0);
	expect_tensor(what, t, r->shape, r->stride, NULL);
	if (!*r->stride)
		cr_expect(ti_meta_is_contiguous(&ctx, t), "%s: stride %s, want contiguous", what,
		          ti_shape_str(&ctx, t->ndim, t->stride));
	expect_counts(what, r->macs, r->flops);
}

static inline void check_flops(const flops_row *r)
{
	ti_status st = run(r->op, r->args);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->op, r->args, ti_status_name(st), err.message);
	cr_expect(call.counted, "%s(%s) is counted", r->op, r->args);
	cr_expect(!strcmp(flops_text(), r->flops), "%s(%s): flops got %s, want %s", r->op, r->args, flops_text(),
	          r->flops);
}

/* Returns the module, for further checks. */
static inline const ti_module *check_module(const module_row *r)
{
	char what[192];
	snprintf(what, sizeof(what), "%s(%s)(%s)", r->type, r->ctor, r->input);
	ti_module *m;
	ti_status st = run_module(r->type, r->ctor, r->input, &m);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	expect_tensor(what, output(0), r->shape, r->stride, r->dtype);
	return m;
}

static inline void check_module_error(const module_error_row *r)
{
	ti_module *m;
	ti_status st = run_module(r->type, r->ctor, r->input, &m);
	cr_expect(st == TI_E_SHAPE, "%s(%s)(%s): got %s, want a shape error", r->type, r->ctor, r->input,
	          ti_status_name(st));
	cr_expect(!strcmp(err.message, r->message), "%s(%s)(%s):\n got  \"%s\"\n want \"%s\"", r->type, r->ctor,
	          r->input, err.message, r->message);
}

/* Returns the module, for further checks. */
static inline const ti_module *check_params(const param_row *r)
{
	ti_module *m;
	ti_status st = build_module(r->type, r->ctor, &m);
	cr_assert(st == TI_OK, "%s(%s): got %s (\"%s\")", r->type, r->ctor, ti_status_name(st), err.message);
	cr_expect(!strcmp(param_shape(m, "weight"), r->weight), "%s(%s): weight %s, want %s", r->type, r->ctor,
	          param_shape(m, "weight"), r->weight);
	cr_expect(!strcmp(param_shape(m, "bias"), r->bias), "%s(%s): bias %s, want %s", r->type, r->ctor,
	          param_shape(m, "bias"), r->bias);
	return m;
}

#define ROWS(array) cr_make_param_array(__typeof__((array)[0]), (array), sizeof(array) / sizeof((array)[0]))

#endif
