/*
 * test_ops_data_dependent.c - operators whose output shape depends on tensor
 * values (src/ops/data_dependent.c): refused with PyTorch 2.x's meta-device
 * message and the reason; repeat_interleave computed where it has a shape.
 */
#include "ops_cases.h"

TestSuite(ops_data_dependent, .init = setup, .fini = teardown);

#define BECAUSE ": the output shape depends on the values in the tensor, which meta tensors do not have"
#define NONZERO "The register_meta function for torch.nonzero() raises unimplemented by default, as a correct " \
                "data-independent implementation does not exist" BECAUSE

static const error_row errors[] = {
	{"nonzero", "{2, 3}", NONZERO},
	{"nonzero", "{2, 3}, as_tuple=True", NONZERO},
	{"argwhere", "{2, 3}", NONZERO},
	{"unique", "{2, 3}", "aten::_unique2: attempted to run this operator with Meta tensors" BECAUSE},
	{"unique_consecutive", "{2, 3}", "aten::unique_consecutive: attempted to run this operator with Meta tensors" BECAUSE},
	{"masked_select", "{2, 3}, bool{2, 3}", "aten::masked_select: attempted to run this operator with Meta tensors" BECAUSE},
	{"bincount", "int64{3}", "aten::bincount: attempted to run this operator with Meta tensors" BECAUSE},
	{"item", "{}", "Tensor.item() cannot be called on meta tensors" BECAUSE},
	{"item", "{2, 3}", "a Tensor with 6 elements cannot be converted to Scalar"},
	{"tolist", "{2}", "Cannot copy out of meta tensor; no data!" BECAUSE},
	{"repeat_interleave", "{2, 3}, int64{2}, dim=0", "cannot repeat_interleave a meta tensor without output_size" BECAUSE},
	{"repeat_interleave", "{2, 3}, int64{3}, dim=0, output_size=5",
	 "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2"},
	{"repeat_interleave", "{2, 3}, int64{2, 1}, dim=0, output_size=5", "repeats must be 0-dim or 1-dim tensor"},
	{"repeat_interleave", "{2, 3}, -1", "Repeats must be non-negative"},
	{"repeat_interleave", "{2, 3}, 2, dim=0, output_size=5", "repeat_interleave: Invalid output_size, expected 4 but got 5"},
	{"repeat_interleave", "{2, 3}, 2, dim=2", "Dimension out of range (expected to be in range of [-2, 1], but got 2)"},
};

ParameterizedTestParameters(ops_data_dependent, refusals_say_why) { return ROWS(errors); }

ParameterizedTest(const error_row *r, ops_data_dependent, refusals_say_why, .init = setup, .fini = teardown)
{
	check_error(r);
}

static const rule_row rules[] = {
	{"repeat_interleave", "{2, 3}, 2", "[12]", "[1]", "float32"},
	{"repeat_interleave", "{2, 3}, 2, dim=0", "[4, 3]", "[3, 1]", "float32"},
	{"repeat_interleave", "{2, 3}, 2, dim=-1", "[2, 6]", "[6, 1]", "float32"},
	{"repeat_interleave", "int64{2, 3 : 1, 2}, 3, dim=1", "[2, 9]", "[9, 1]", "int64"},
	{"repeat_interleave", "{2, 3}, int64{2}, dim=0, output_size=7", "[7, 3]", "[3, 1]", "float32"},
	{"repeat_interleave", "{2, 3}, int64{}, dim=1, output_size=9", "[2, 9]", "[9, 1]", "float32"},
	{"repeat_interleave", "{B, T}, 4, dim=1", "[B, 4*T]", "[4*T, 1]", "float32"},
};

ParameterizedTestParameters(ops_data_dependent, repeat_interleave_follows_pytorch) { return ROWS(rules); }

ParameterizedTest(const rule_row *r, ops_data_dependent, repeat_interleave_follows_pytorch, .init = setup,
                  .fini = teardown)
{
	check_rule(r);
}

Test(ops_data_dependent, refusals_fit_the_error_message)
{
	/* the longest refusal must not be cut: TI_ERROR_MESSAGE_MAX */
	cr_expect(strlen(NONZERO) < TI_ERROR_MESSAGE_MAX, "the nonzero refusal fits (%zu bytes)", strlen(NONZERO));
	EXPECT_STATUS(run("nonzero", "{2, 3}"), TI_E_SHAPE, err);
	cr_expect(!call.counted, "a refused call is not counted");
}
