/*
 * test_signature.c - PyTorch-style signatures: parsing, and binding a call's
 * arguments as Python binds them.
 */
#include "unit.h"

#include "ops/op.h"

typedef struct fixture {
	ti_arena arena;
	ti_symctx sym;
	ti_shape_ctx ctx;
	ti_error err;
} fixture;

static void setup(fixture *f)
{
	ti_arena_init(&f->arena, 1 << 24);
	ti_symctx_init(&f->sym, &f->arena);
	f->ctx = (ti_shape_ctx){.arena = &f->arena, .sym = &f->sym, .default_dtype = TI_DT_FLOAT32};
	ti_error_clear(&f->err);
}

static ti_signature parse(fixture *f, const char *text)
{
	ti_signature sig;
	ASSERT_STATUS(ti_signature_parse(&f->arena, text, &sig, &f->err), TI_OK, f->err);
	return sig;
}

static const char *conv2d =
	"conv2d(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, "
	"int[2]|str padding=0, int[2] dilation=1, int groups=1)";

Test(signature, parses_types_defaults_and_optionals)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, conv2d);
	EXPECT_STR(sig.name, "conv2d");
	ASSERT_INT(sig.count, 7);
	EXPECT_STR(sig.params[2].name, "bias");
	cr_expect(sig.params[2].optional && sig.params[2].has_default, "bias is optional with a default");
	EXPECT_INT(sig.params[3].type, TI_P_INT_LIST);
	EXPECT_INT(sig.params[3].list_size, 2);
	EXPECT_INT(sig.params[4].type, TI_P_INT_LIST_OR_STR);
	EXPECT_INT(sig.params[6].default_value.as.dim.value, 1);
	ti_arena_release(&f.arena);
}

Test(signature, marks_keyword_only_parameters_after_a_star)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, "sum(Tensor input, int[]? dim=None, bool keepdim=False, *, ScalarType? dtype=None)");
	ASSERT_INT(sig.count, 4);
	cr_expect(!sig.params[2].keyword_only, "keepdim is positional");
	cr_expect(sig.params[3].keyword_only, "dtype is keyword-only");
	ti_arena_release(&f.arena);
}

Test(signature, rejects_an_unknown_type)
{
	fixture f;
	setup(&f);
	ti_signature sig;
	EXPECT_STATUS(ti_signature_parse(&f.arena, "f(Tensr x)", &sig, &f.err), TI_E_INVALID, f.err);
	EXPECT_CONTAINS(f.err.message, "Tensr");
	ti_arena_release(&f.arena);
}

static ti_meta_tensor *tensor(fixture *f, int n, const int64_t *shape)
{
	ti_dim d[8];
	for (int i = 0; i < n; i++)
		d[i] = ti_dim_int(shape[i]);
	return ti_meta_new(&f->ctx, TI_DT_FLOAT32, n, d);
}

Test(signature, binds_positional_and_keyword_arguments_and_fills_defaults)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, conv2d);
	const ti_meta_tensor *x = tensor(&f, 4, (int64_t[]){1, 3, 8, 8}), *w = tensor(&f, 4, (int64_t[]){4, 3, 3, 3});
	ti_arg args[] = {ti_arg_tensor(x), ti_arg_tensor(w), ti_arg_named("stride", ti_arg_int(2))};
	ti_bound b;
	ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 3, &b, &f.err), TI_OK, f.err);
	cr_expect(ti_bound_tensor(&b, "weight") == w);
	cr_expect(ti_bound_is_none(&b, "bias"), "bias defaults to None");
	int n;
	const ti_arg *stride = ti_bound_list(&b, "stride", &n);
	ASSERT_INT(n, 2);
	EXPECT_INT(stride[0].as.dim.value, 2);
	EXPECT_INT(stride[1].as.dim.value, 2);
	cr_expect(ti_bound_given(&b, "stride") && !ti_bound_given(&b, "dilation"));
	const ti_arg *pad = ti_bound_list(&b, "padding", &n);
	ASSERT_INT(n, 2);
	EXPECT_INT(pad[1].as.dim.value, 0);
	ti_arena_release(&f.arena);
}

Test(signature, keeps_a_padding_string_as_a_string)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, conv2d);
	const ti_meta_tensor *x = tensor(&f, 3, (int64_t[]){3, 8, 8}), *w = tensor(&f, 4, (int64_t[]){4, 3, 3, 3});
	ti_arg args[] = {ti_arg_tensor(x), ti_arg_tensor(w), ti_arg_named("padding", ti_arg_str("same"))};
	ti_bound b;
	ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 3, &b, &f.err), TI_OK, f.err);
	EXPECT_STR(ti_bound_str(&b, "padding"), "same");
	ti_arena_release(&f.arena);
}

/* Each bad call, and the words Python would use. */
static const struct {
	const char *why;
	int nargs;
	const char *message;
} bad_calls[] = {
	{"a missing argument", 1, "conv2d() missing required argument 'weight'"},
	{"an unknown keyword", 3, "conv2d() got an unexpected keyword argument 'strides'"},
	{"a repeated argument", 4, "conv2d() got multiple values for argument 'weight'"},
	{"a wrong type", 5, "conv2d(): argument 'groups' must be int, not float"},
	{"a list of the wrong length", 6, "argument 'stride' must be an int or a list of 2 ints, not a list of 3"},
};

Test(signature, refuses_bad_calls_with_pythons_words)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, conv2d);
	const ti_meta_tensor *x = tensor(&f, 4, (int64_t[]){1, 3, 8, 8});
	ti_arg three[] = {ti_arg_int(1), ti_arg_int(2), ti_arg_int(3)};
	ti_arg calls[][3] = {
		{ti_arg_tensor(x)},
		{ti_arg_tensor(x), ti_arg_tensor(x), ti_arg_named("strides", ti_arg_int(1))},
		{ti_arg_tensor(x), ti_arg_tensor(x), ti_arg_named("weight", ti_arg_tensor(x))},
		{ti_arg_tensor(x), ti_arg_tensor(x), ti_arg_named("groups", ti_arg_float(1.5))},
		{ti_arg_tensor(x), ti_arg_tensor(x), ti_arg_named("stride", ti_arg_list(three, 3))},
	};
	int counts[] = {1, 3, 3, 3, 3};
	for (size_t i = 0; i < sizeof(bad_calls) / sizeof(bad_calls[0]); i++) {
		ti_bound b;
		ti_error_clear(&f.err);
		ti_status st = ti_bind(&f.ctx, &sig, calls[i], counts[i], &b, &f.err);
		cr_expect(st == TI_E_CORRUPT, "%s: got %s", bad_calls[i].why, ti_status_name(st));
		EXPECT_CONTAINS(f.err.message, bad_calls[i].message);
	}
	ti_arena_release(&f.arena);
}

Test(signature, refuses_too_many_positional_arguments)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, "relu(Tensor input, bool inplace=False)");
	const ti_meta_tensor *x = tensor(&f, 1, (int64_t[]){3});
	ti_arg args[] = {ti_arg_tensor(x), ti_arg_bool(false), ti_arg_int(1)};
	ti_bound b;
	EXPECT_STATUS(ti_bind(&f.ctx, &sig, args, 3, &b, &f.err), TI_E_CORRUPT, f.err);
	EXPECT_STR(f.err.message, "relu() takes 2 positional arguments but 3 were given");
	ti_arena_release(&f.arena);
}

Test(signature, gathers_trailing_ints_into_a_varargs_list)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, "view(Tensor input, int[]... size)");
	const ti_meta_tensor *x = tensor(&f, 1, (int64_t[]){6});
	ti_arg args[] = {ti_arg_tensor(x), ti_arg_int(2), ti_arg_int(-1)};
	ti_bound b;
	ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 3, &b, &f.err), TI_OK, f.err);
	int n;
	const ti_arg *size = ti_bound_list(&b, "size", &n);
	ASSERT_INT(n, 2);
	EXPECT_INT(size[1].as.dim.value, -1);
	ti_arena_release(&f.arena);
}

Test(signature, reads_a_symbol_name_where_an_int_is_expected)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, "view(Tensor input, int[]... size)");
	const ti_meta_tensor *x = tensor(&f, 1, (int64_t[]){6});
	ti_arg list[] = {ti_arg_str("N"), ti_arg_int(-1)};
	ti_arg args[] = {ti_arg_tensor(x), ti_arg_list(list, 2)};
	ti_bound b;
	ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 2, &b, &f.err), TI_OK, f.err);
	int n;
	const ti_arg *size = ti_bound_list(&b, "size", &n);
	char buf[32];
	EXPECT_STR(ti_dim_format(size[0].as.dim, buf, sizeof(buf)), "N");
	ti_arena_release(&f.arena);
}

Test(signature, reads_dtype_names_with_or_without_the_torch_prefix)
{
	fixture f;
	setup(&f);
	ti_signature sig = parse(&f, "to(Tensor input, ScalarType dtype)");
	const ti_meta_tensor *x = tensor(&f, 1, (int64_t[]){6});
	const char *names[] = {"float16", "torch.half", "bfloat16"};
	ti_dtype want[] = {TI_DT_FLOAT16, TI_DT_FLOAT16, TI_DT_BFLOAT16};
	for (int i = 0; i < 3; i++) {
		ti_arg args[] = {ti_arg_tensor(x), ti_arg_str(names[i])};
		ti_bound b;
		ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 2, &b, &f.err), TI_OK, f.err);
		EXPECT_INT(ti_bound_dtype(&b, "dtype"), want[i]);
	}
	ti_arg bad[] = {ti_arg_tensor(x), ti_arg_str("float13")};
	ti_bound b;
	EXPECT_STATUS(ti_bind(&f.ctx, &sig, bad, 2, &b, &f.err), TI_E_CORRUPT, f.err);
	EXPECT_CONTAINS(f.err.message, "unknown dtype 'float13'");
	ti_arena_release(&f.arena);
}

/* A resolver over two names, as a graph's scope would be. */
static ti_status lookup(void *user, const char *name, ti_arg *out, ti_error *err)
{
	const ti_meta_tensor *const *known = user;
	if (!strcmp(name, "x")) {
		*out = ti_arg_tensor(known[0]);
		return TI_OK;
	}
	return TI_FAIL(err, TI_E_CORRUPT, "undefined tensor '%s'", name);
}

Test(signature, resolves_names_only_where_a_tensor_is_expected)
{
	fixture f;
	setup(&f);
	const ti_meta_tensor *x = tensor(&f, 1, (int64_t[]){6});
	f.ctx.resolve = lookup;
	f.ctx.resolve_user = &x;
	ti_signature sig = parse(&f, "gelu(Tensor input, str approximate='none')");
	ti_arg args[] = {ti_arg_str("x"), ti_arg_str("tanh")};
	ti_bound b;
	ASSERT_STATUS(ti_bind(&f.ctx, &sig, args, 2, &b, &f.err), TI_OK, f.err);
	cr_expect(ti_bound_tensor(&b, "input") == x);
	EXPECT_STR(ti_bound_str(&b, "approximate"), "tanh");
	ti_arg missing[] = {ti_arg_str("y")};
	EXPECT_STATUS(ti_bind(&f.ctx, &sig, missing, 1, &b, &f.err), TI_E_CORRUPT, f.err);
	EXPECT_STR(f.err.message, "undefined tensor 'y'");
	ti_arena_release(&f.arena);
}
