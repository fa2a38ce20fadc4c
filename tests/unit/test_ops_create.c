/*
 * test_ops_create.c - creation and conversion (src/ops/create.c): arange's
 * length and dtype, factories from sizes, the *_like and new_* families,
 * to() and the dtype shorthands, clone.
 *
 * Rows were read from PyTorch 1.13 on CPU and on the meta device; where the
 * 1.13 meta device is wrong (arange(5.) gives int64, full(size, 1) float32),
 * the row follows eager PyTorch and 2.x. Rows are written as in ops_cases.h.
 */
#include "ops_cases.h"

TestSuite(ops_create, .init = setup, .fini = teardown);

static const rule_row rules[] = {
	{"arange", "5", "[5]", "[1]", "int64"},
	{"arange", "5.0", "[5]", "[1]", "float32"},
	{"arange", "1, 10, 3", "[3]", "[1]", "int64"},
	{"arange", "10, 1, -3", "[3]", "[1]", "int64"},
	{"arange", "0, 1, 0.1", "[10]", "[1]", "float32"},
	{"arange", "0.0, 1.0, 0.3", "[4]", "[1]", "float32"},
	{"arange", "0, 0", "[0]", "[1]", "int64"},
	{"arange", "5, dtype=float16", "[5]", "[1]", "float16"},
	{"arange", "0, 2.5, dtype=int64", "[2]", "[1]", "int64"},
	{"arange", "0, 2.5, dtype=int32", "[3]", "[1]", "int32"},
	{"arange", "1, 2.5, 0.5", "[3]", "[1]", "float32"},
	{"arange", "end=5", "[5]", "[1]", "int64"},
	{"arange", "start=1, end=5", "[4]", "[1]", "int64"},
	{"arange", "True", "[1]", "[1]", "int64"},
	{"arange", "0, 10, 3, dtype=float32", "[4]", "[1]", "float32"},
	{"zeros", "2, 3", "[2, 3]", "[3, 1]", "float32"},
	{"zeros", "[2, 3]", "[2, 3]", "[3, 1]", "float32"},
	{"zeros", "size=(2, 3), dtype=int64", "[2, 3]", "[3, 1]", "int64"},
	{"zeros", "()", "[]", "[]", "float32"},
	{"ones", "4", "[4]", "[1]", "float32"},
	{"empty", "4, 5, device='cuda'", "[4, 5]", "[5, 1]", "float32"},
	{"empty", "N, 0, 3", "[N, 0, 3]", "[3, 3, 1]", "float32"},
	{"full", "(2, 3), 1.5", "[2, 3]", "[3, 1]", "float32"},
	{"full", "(2, 3), 1", "[2, 3]", "[3, 1]", "int64"},
	{"full", "(2, 3), True", "[2, 3]", "[3, 1]", "bool"},
	{"full", "(2, 3), 1, dtype=float16", "[2, 3]", "[3, 1]", "float16"},
	{"rand", "2, 3", "[2, 3]", "[3, 1]", "float32"},
	{"randn", "2, 3, dtype=float64", "[2, 3]", "[3, 1]", "float64"},
	{"randint", "0, 10, (2, 3)", "[2, 3]", "[3, 1]", "int64"},
	{"randint", "10, (2, 3)", "[2, 3]", "[3, 1]", "int64"},
	{"randperm", "7", "[7]", "[1]", "int64"},
	{"eye", "3", "[3, 3]", "[3, 1]", "float32"},
	{"eye", "3, 4", "[3, 4]", "[4, 1]", "float32"},
	{"linspace", "0, 1, 5", "[5]", "[1]", "float32"},
	{"linspace", "0, 10, 5", "[5]", "[1]", "float32"},
	{"logspace", "0, 1, 5", "[5]", "[1]", "float32"},
	/* *_like keep a dense input's strides (memory_format=torch.preserve_format) */
	{"zeros_like", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"zeros_like", "int64{3, 4 : 1, 3}, dtype=float32", "[3, 4]", "[1, 3]", "float32"},
	{"zeros_like", "{4, 3 : 6, 2}", "[4, 3]", "[3, 1]", "float32"},
	{"zeros_like", "{3, 1 : 1, 5}", "[3, 1]", "[1, 5]", "float32"},
	{"zeros_like", "{T, 4 : 1, T}", "[T, 4]", "[1, T]", "float32"},
	{"ones_like", "{2, 3, 4, 5 : 60, 1, 15, 3}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", "float32"},
	{"ones_like", "{2, 3, 4, 5 : 120, 1, 30, 6}", "[2, 3, 4, 5]", "[60, 1, 15, 3]", "float32"},
	{"empty_like", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	/* not dense: infer_dense_strides keeps the memory order */
	{"empty_like", "{2, 3 : 1, 4}", "[2, 3]", "[1, 2]", "float32"},
	{"clone", "{5, 5, 3 : 10, 2, 50}", "[5, 5, 3]", "[5, 1, 25]", "float32"},
	{"clone", "{2, 3, 1, 0 : 15, 1, 3, 30}", "[2, 3, 1, 0]", "[15, 1, 3, 30]", "float32"},
	{"empty_like", "{3, 4 : 1, 3}, memory_format='torch.contiguous_format'", "[3, 4]", "[4, 1]", "float32"},
	{"empty_like", "{2, 3, 4, 5}, memory_format='channels_last'", "[2, 3, 4, 5]", "[60, 1, 15, 3]", "float32"},
	{"full_like", "int64{4, 3}, 2.5", "[4, 3]", "[3, 1]", "int64"},
	{"full_like", "{3}, True", "[3]", "[1]", "float32"},
	{"rand_like", "{4, 3}", "[4, 3]", "[3, 1]", "float32"},
	{"randn_like", "{4, 3}", "[4, 3]", "[3, 1]", "float32"},
	{"new_zeros", "int64{4, 3}, 2, 3", "[2, 3]", "[3, 1]", "int64"},
	{"new_ones", "int64{4, 3}, (2, 3)", "[2, 3]", "[3, 1]", "int64"},
	{"new_full", "int64{4, 3}, (2, 3), 2.5", "[2, 3]", "[3, 1]", "int64"},
	{"new_empty", "int64{4, 3}, (2,), dtype=float16", "[2]", "[1]", "float16"},
	/* conversion keeps a dense layout */
	{"to", "{3, 4 : 1, 3}, float64", "[3, 4]", "[1, 3]", "float64"},
	{"to", "{4, 3 : 6, 2}, float64", "[4, 3]", "[3, 1]", "float64"},
	{"to", "{3, 4 : 1, 3}, dtype=float16, memory_format='contiguous_format'", "[3, 4]", "[4, 1]", "float16"},
	{"to", "{4, 3}, device='cuda'", "[4, 3]", "[3, 1]", "float32"},
	{"type", "{3, 4 : 1, 3}, float64", "[3, 4]", "[1, 3]", "float64"},
	{"type_as", "{3}, int64{2}", "[3]", "[1]", "int64"},
	{"float", "int64{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"half", "{4, 3}", "[4, 3]", "[3, 1]", "float16"},
	{"double", "{4, 3}", "[4, 3]", "[3, 1]", "float64"},
	{"long", "{4, 3}", "[4, 3]", "[3, 1]", "int64"},
	{"int", "{4, 3}", "[4, 3]", "[3, 1]", "int32"},
	{"bool", "{4, 3}", "[4, 3]", "[3, 1]", "bool"},
	{"bfloat16", "{4, 3}", "[4, 3]", "[3, 1]", "bfloat16"},
	{"clone", "{3, 4 : 1, 3}", "[3, 4]", "[1, 3]", "float32"},
	{"clone", "{4, 3 : 6, 2}", "[4, 3]", "[3, 1]", "float32"},
	{"clone", "{3, 4 : 1, 3}, memory_format='torch.contiguous_format'", "[3, 4]", "[4, 1]", "float32"},
};

ParameterizedTestParameters(ops_create, rules_follow_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_create, rules_follow_pytorch, .init = setup, .fini = teardown)
{
	check_rule(r);
	cr_expect(call.counted && ti_dim_is_int(call.flops) && call.flops.value == 0, "%s(%s): counted as free",
	          r->op, r->args);
}

static const error_row errors[] = {
	{"arange", "1, 10, -3", "upper bound and larger bound inconsistent with step sign"},
	{"arange", "-5", "upper bound and larger bound inconsistent with step sign"},
	{"arange", "0, 5, 0", "step must be nonzero"},
	{"arange", "0.5, 3.7, 0.5, dtype=int64", "step must be nonzero"},
	{"arange", "0.0, 1.0, -0.5", "upper bound and larger bound inconsistent with step sign"},
	{"zeros", "2, -3", "Trying to create tensor with negative dimension -3: [2, -3]"},
	{"empty", "-1", "Trying to create tensor with negative dimension -1: [-1]"},
	{"randperm", "-1", "Trying to create tensor with negative dimension -1: [-1]"},
	{"eye", "-1", "n must be greater or equal to 0, got -1"},
	{"eye", "2, -1", "m must be greater or equal to 0, got -1"},
	{"linspace", "0, 1, -1", "number of steps must be non-negative"},
	{"randint", "5, 2, (3,)", "random_ expects 'from' to be less than 'to', but got from=5 >= to=2"},
	{"rand", "2, dtype=int64", "\"check_uniform_bounds\" not implemented for 'Long'"},
	{"rand", "2, dtype=bool", "\"check_uniform_bounds\" not implemented for 'Bool'"},
	{"rand_like", "int64{3}", "\"check_uniform_bounds\" not implemented for 'Long'"},
	{"empty_like", "{2, 3}, memory_format='channels_last'", "required rank 4 tensor to use channels_last format"},
};

ParameterizedTestParameters(ops_create, errors_are_pytorch_s) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_create, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_error(r);
}

/* ---- symbols, identity, gradients ---- */

typedef struct length_row {
	char args[48], length[24];
} length_row;

/* arange over symbolic ends: (end - start + step - sign(step)) // step */
static const length_row lengths[] = {
	{"N", "N"},
	{"1, N", "N - 1"},
	{"0, N, 2", "(N - 1)//2 + 1"},
	{"N, 0, -1", "N"},
	};

ParameterizedTestParameters(ops_create, arange_takes_symbolic_ends) { return ROWS(lengths); }

ParameterizedTest(const length_row *r, ops_create, arange_takes_symbolic_ends, .init = setup, .fini = teardown)
{
	/* a symbolic size reaches a Scalar as an int that is a ti_dim, as from x.size(1) */
	ti_arg args[3];
	int n = parse_args(r->args, args);
	for (int i = 0; i < n; i++)
		if (args[i].kind == TI_ARG_STR)
			args[i] = ti_arg_dim(ti_dim_symbol(&sym, args[i].as.str));
	ASSERT_STATUS(ti_op_invoke(&ctx, "arange", args, n, &call, &err), TI_OK, err);
	EXPECT_STR(ti_dim_str(&sym, output(0)->shape[0]), r->length);
}

Test(ops_create, arange_with_float_ends_and_a_symbol_is_unsupported)
{
	ti_arg args[] = {ti_arg_float(0.5), ti_arg_dim(ti_dim_symbol(&sym, "N"))};
	EXPECT_STATUS(ti_op_invoke(&ctx, "arange", args, 2, &call, &err), TI_E_UNSUPPORTED, err);
}

Test(ops_create, to_the_same_dtype_is_the_input_itself)
{
	ASSERT_STATUS(run("to", "{4, 3}, float32"), TI_OK, err);
	const ti_meta_tensor *input = call.in.args[0].as.tensor;
	cr_expect(output(0) == input, "x.to(x.dtype) is x");
	ASSERT_STATUS(run("float", "{4, 3}"), TI_OK, err);
	cr_expect(output(0) == call.in.args[0].as.tensor, "x.float() of a float is x");
	ASSERT_STATUS(run("to", "{4, 3}, float32, copy=True"), TI_OK, err);
	cr_expect(output(0) != call.in.args[0].as.tensor, "copy=True copies");
}

Test(ops_create, requires_grad_is_taken_from_the_call)
{
	ASSERT_STATUS(run("zeros", "2, 3, requires_grad=True"), TI_OK, err);
	cr_expect(output(0)->requires_grad, "zeros(..., requires_grad=True)");
	ASSERT_STATUS(run("ones_like", "{3}"), TI_OK, err);
	cr_expect(!output(0)->requires_grad, "ones_like does not require grad by default");
}

Test(ops_create, type_without_a_dtype_is_unsupported)
{
	EXPECT_STATUS(run("type", "{3}"), TI_E_UNSUPPORTED, err);
	EXPECT_STATUS(run("clone", "{3}, memory_format='sideways'"), TI_E_CORRUPT, err);
}
