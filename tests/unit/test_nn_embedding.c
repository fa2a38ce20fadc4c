/*
 * test_nn_embedding.c - torch.nn.Embedding and EmbeddingBag (src/nn/embedding.c).
 *
 * Parameters, outputs and messages were read from PyTorch on the meta device
 * (torch.nn.Embedding(10, 3, device='meta')); _freeze is 2.x's. Calls are
 * written as Python text (tests/unit/ops_cases.h): int64{2, 5} is a tensor
 * of indices, {10, 3} a float32 one.
 */
#include "ops_cases.h"

TestSuite(nn_embedding, .init = setup, .fini = teardown);

typedef struct embedding_row {
	char type[16], ctor[96], forward[64];
	char weight[24];           /* the parameter's shape */
	char shape[32], dtype[16]; /* the output's */
} embedding_row;

static const embedding_row modules[] = {
	{"Embedding", "10, 3", "int64{2, 5}", "[10, 3]", "[2, 5, 3]", "float32"},
	{"Embedding", "10, 3, padding_idx=-1", "int32{4}", "[10, 3]", "[4, 3]", "float32"},
	{"Embedding", "10, 3, padding_idx=0", "int64{}", "[10, 3]", "[3]", "float32"},
	{"Embedding", "50257, 768", "int64{B, T}", "[50257, 768]", "[B, T, 768]", "float32"},
	{"Embedding", "10, 3, dtype='float16'", "int64{2}", "[10, 3]", "[2, 3]", "float16"},
	{"Embedding", "num_embeddings=10, embedding_dim=3, _weight=float64{10, 3}", "int64{2}", "[10, 3]", "[2, 3]",
	 "float64"},
	{"EmbeddingBag", "10, 3", "int64{2, 5}", "[10, 3]", "[2, 3]", "float32"},
	{"EmbeddingBag", "10, 3, mode='sum'", "int64{8}, int64{3}", "[10, 3]", "[3, 3]", "float32"},
	{"EmbeddingBag", "10, 3, mode='sum', include_last_offset=True", "int64{8}, int64{3}", "[10, 3]", "[2, 3]",
	 "float32"},
	{"EmbeddingBag", "10, 3, mode='sum'", "int64{2, 5}, per_sample_weights={2, 5}", "[10, 3]", "[2, 3]", "float32"},
	{"EmbeddingBag", "10, 3, mode='max', padding_idx=-10", "int64{2, 5}", "[10, 3]", "[2, 3]", "float32"},
};

ParameterizedTestParameters(nn_embedding, modules_follow_pytorch)
{
	return ROWS(modules);
}

ParameterizedTest(const embedding_row *r, nn_embedding, modules_follow_pytorch, .init = setup, .fini = teardown)
{
	char what[192];
	ti_module *m;
	snprintf(what, sizeof(what), "%s(%s)(%s)", r->type, r->ctor, r->forward);
	ti_status st = run_module(r->type, r->ctor, r->forward, &m);
	cr_assert(st == TI_OK, "%s: got %s (\"%s\")", what, ti_status_name(st), err.message);
	ASSERT_INT(m->tensor_count, 1);
	EXPECT_STR(m->tensors[0].name, "weight");
	cr_expect(m->tensors[0].trainable && !m->tensors[0].buffer, "%s: weight is a trainable parameter", what);
	expect_tensor(what, m->tensors[0].tensor, r->weight, NULL, r->dtype);
	expect_tensor(what, output(0), r->shape, NULL, r->dtype);
}

Test(nn_embedding, a_frozen_weight_is_not_trainable)
{
	ti_module *m;
	ASSERT_STATUS(run_module("Embedding", "10, 3, _freeze=True", "int64{2}", &m), TI_OK, err);
	cr_expect(!m->tensors[0].trainable, "_freeze=True: not trainable");
	cr_expect(!output(0)->requires_grad, "the output of a frozen embedding does not require grad");
	ASSERT_STATUS(run_module("Embedding", "10, 3", "int64{2}", &m), TI_OK, err);
	cr_expect(output(0)->requires_grad, "the output of a trainable embedding requires grad");
}

Test(nn_embedding, embedding_is_free_and_a_bag_adds_its_rows)
{
	ti_module *m;
	ASSERT_STATUS(run_module("Embedding", "10, 3", "int64{2, 5}", &m), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "0"), "embedding: flops got %s, want 0", flops_text());
	ASSERT_STATUS(run_module("EmbeddingBag", "10, 3, mode='sum'", "int64{8}, int64{3}", &m), TI_OK, err);
	cr_expect(call.counted && !strcmp(flops_text(), "24"), "embedding_bag: flops got %s, want 24", flops_text());
}

static const module_error_row errors[] = {
	{"Embedding", "10, 3, padding_idx=10", "int64{2}", "Padding_idx must be within num_embeddings"},
	{"Embedding", "10, 3, padding_idx=-11", "int64{2}", "Padding_idx must be within num_embeddings"},
	/* padding_idx 0 passes the assert; reset_parameters then zeroes a row that is not there */
	{"Embedding", "0, 0, padding_idx=0", "int64{2}", "index 0 is out of bounds for dimension 0 with size 0"},
	{"EmbeddingBag", "0, 3, padding_idx=0", "int64{2, 5}", "index 0 is out of bounds for dimension 0 with size 0"},
	{"Embedding", "10, 3, _weight={3, 3}", "int64{2}", "Shape of weight does not match num_embeddings and embedding_dim"},
	{"Embedding", "10, 3", "{2}",
	 "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got "
	 "torch.FloatTensor instead (while checking arguments for embedding)"},
	{"EmbeddingBag", "10, 3, padding_idx=10", "int64{2, 5}", "padding_idx must be within num_embeddings"},
	{"EmbeddingBag", "10, 3, _weight={3, 3}", "int64{2, 5}",
	 "Shape of weight does not match num_embeddings and embedding_dim"},
	{"EmbeddingBag", "10, 3", "int64{8}", "offsets has to be a 1D Tensor but got None"},
	{"EmbeddingBag", "10, 3", "int64{2, 5}, per_sample_weights={2, 5}",
	 "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for mode='sum' (got "
	 "mode='mean'). Please open a feature request on GitHub."},
	{"EmbeddingBag", "10, 3, mode='median'", "int64{2, 5}", "mode has to be one of sum, mean or max"},
};

ParameterizedTestParameters(nn_embedding, errors_are_pytorch_s)
{
	return ROWS(errors);
}

ParameterizedTest(const module_error_row *r, nn_embedding, errors_are_pytorch_s, .init = setup, .fini = teardown)
{
	check_module_error(r);
}
