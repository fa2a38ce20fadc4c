/*
 * test_checkpoint.c - opening the fixtures onto the meta device.
 *
 * Paths are relative to the repository root, where the tests run. The values
 * wanted are what PyTorch reports: torch.load(f, map_location='meta') with
 * Debian's torch 1.13 for the 1.13 files (map_location='cpu' for quantized
 * and sparse), and the docstrings of fixtures/gen_torch2.py for the 2.x ones.
 * Every file in fixtures/broken/ must fail cleanly, except the two whose
 * payload is a call we must record and never run.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

static ti_ckpt *ckpt;
static ti_error err;

static void teardown(void)
{
	ti_ckpt_close(ckpt);
	ckpt = NULL;
}

TestSuite(checkpoint, .fini = teardown, .timeout = 60);

static const char *fixture_path(const char *name)
{
	static char path[512];
	snprintf(path, sizeof(path), "fixtures/%s", name);
	return path;
}

/* Opens fixtures/<name> with these limits (NULL: defaults) and requires success. */
static ti_ckpt *open_with(const char *name, const ti_limits *limits)
{
	const char *path = fixture_path(name);
	struct stat st;
	cr_assert(stat(path, &st) == 0, "%s is missing: run the tests from the repository root", path);
	ti_ckpt_close(ckpt);
	ckpt = NULL;
	ti_status s = ti_ckpt_open(path, limits, &ckpt, &err);
	char where[512];
	ti_error_format(&err, where, sizeof(where));
	cr_assert(s == TI_OK, "%s: got %s (\"%s\"), want success", name, ti_status_name(s), where);
	cr_assert(ckpt != NULL, "%s: opened, but no handle", name);
	return ckpt;
}

static ti_ckpt *open_fixture(const char *name) { return open_with(name, NULL); }

/* Opens fixtures/<name> and requires a failure with this status. */
static void expect_open_fails(const char *name, const ti_limits *limits, ti_status want)
{
	ti_ckpt *c = (ti_ckpt *)0x1;
	ti_status s = ti_ckpt_open(fixture_path(name), limits, &c, &err);
	cr_expect(s == want, "%s: got %s (\"%s\"), want %s", name, ti_status_name(s), err.message, ti_status_name(want));
	cr_expect(c == NULL, "%s: failed but left a handle", name);
	cr_expect(err.message[0] != '\0', "%s: the error has no message", name);
	if (s == TI_OK)
		ti_ckpt_close(c);
}

static const ti_entry *find_entry(const char *name)
{
	for (size_t i = 0; i < ti_ckpt_entry_count(ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(ckpt, i);
		if (!strcmp(e->name, name))
			return e;
	}
	return NULL;
}

static const ti_value *entry(const char *name)
{
	const ti_entry *e = find_entry(name);
	cr_assert(e != NULL, "no entry named '%s'", name);
	cr_assert(e->value != NULL, "entry '%s' has no value", name);
	return e->value;
}

static const ti_tensor *tensor(const char *name)
{
	const ti_value *v = entry(name);
	cr_assert(v->kind == TI_TENSOR, "entry '%s' is a %s, not a tensor", name, ti_kind_name(v->kind));
	return v->as.tensor;
}

/* Shape and strides as "[2, 3]" for readable failures. */
static const char *dims_text(const int64_t *dims, int n, char *buf, size_t size)
{
	size_t len = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(buf + len, size - len, i ? ", %" PRId64 : "%" PRId64, dims[i]);
	if (len < size)
		snprintf(buf + len, size - len, "]");
	return buf;
}

#define EXPECT_DIMS(what, got, ndim, want)                                                    \
	do {                                                                                  \
		const int64_t want_[] = want;                                                 \
		int want_n_ = (int)(sizeof(want_) / sizeof(want_[0]));                        \
		char got_buf_[256], want_buf_[256];                                           \
		cr_expect((ndim) == want_n_ && (!want_n_ || !memcmp((got), want_, sizeof(want_))), \
		          "%s: got %s, want %s", what, dims_text((got), (ndim), got_buf_, sizeof(got_buf_)), \
		          dims_text(want_, want_n_, want_buf_, sizeof(want_buf_)));          \
	} while (0)
#define L(...) {__VA_ARGS__}

/* dtype, shape and (when wanted) stride of a named tensor */
#define EXPECT_TENSOR(name, dtype_, shape_)                                                   \
	do {                                                                                  \
		const ti_tensor *t_ = tensor(name);                                           \
		cr_expect(t_->dtype == (dtype_), "%s dtype: got %s, want %s", name,           \
		          ti_dtype_name(t_->dtype), ti_dtype_name(dtype_));                   \
		EXPECT_DIMS(name " shape", t_->shape, t_->ndim, L shape_);                    \
	} while (0)
#define EXPECT_STRIDE(name, stride_)                                                          \
	do {                                                                                  \
		const ti_tensor *t_ = tensor(name);                                           \
		cr_assert(t_->stride != NULL, "%s has no strides", name);                     \
		EXPECT_DIMS(name " stride", t_->stride, t_->ndim, L stride_);                 \
	} while (0)

/* ---- PyTorch 1.13 files ---- */

Test(checkpoint, resnet18_small_names_every_state_dict_tensor)
{
	open_fixture("resnet18_small.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 122);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 122);
	EXPECT_TENSOR("conv1.weight", TI_DT_FLOAT32, (8, 3, 7, 7));
	EXPECT_STRIDE("conv1.weight", (147, 49, 7, 1));
	EXPECT_TENSOR("bn1.running_var", TI_DT_FLOAT32, (8));
	EXPECT_TENSOR("layer2.0.downsample.0.weight", TI_DT_FLOAT32, (16, 8, 1, 1));
	EXPECT_STRIDE("layer2.0.downsample.0.weight", (8, 1, 1, 1));
	EXPECT_TENSOR("layer4.1.conv2.weight", TI_DT_FLOAT32, (64, 64, 3, 3));
	EXPECT_TENSOR("fc.weight", TI_DT_FLOAT32, (10, 64));
	EXPECT_TENSOR("fc.bias", TI_DT_FLOAT32, (10));
	/* the order is the state_dict's */
	EXPECT_STR(ti_ckpt_entry(ckpt, 0)->name, "conv1.weight");
	EXPECT_STR(ti_ckpt_entry(ckpt, 121)->name, "fc.bias");
}

Test(checkpoint, state_dict_tensors_are_not_parameters)
{
	open_fixture("resnet18_small.pt");
	for (size_t i = 0; i < ti_ckpt_entry_count(ckpt); i++) {
		const ti_entry *e = ti_ckpt_entry(ckpt, i);
		ASSERT_KIND(e->value, TI_TENSOR);
		const ti_tensor *t = e->value->as.tensor;
		cr_expect(!t->is_parameter, "%s: is a parameter, want a plain tensor", e->name);
		cr_expect(!t->requires_grad, "%s: requires grad", e->name);
		cr_expect(t->layout == TI_LAYOUT_STRIDED, "%s: layout %s", e->name, ti_layout_name(t->layout));
		cr_expect(t->storage != NULL && t->storage->tensor_count == 1, "%s: storage not its own", e->name);
		cr_expect(ti_tensor_is_contiguous(t), "%s: not contiguous", e->name);
		EXPECT_STR(t->rebuild, "_rebuild_tensor_v2");
	}
}

Test(checkpoint, num_batches_tracked_is_a_0_dim_int64)
{
	open_fixture("resnet18_small.pt");
	const ti_tensor *t = tensor("layer3.1.bn2.num_batches_tracked");
	EXPECT_INT(t->dtype, TI_DT_INT64);
	EXPECT_INT(t->ndim, 0);
	EXPECT_INT(t->numel, 1);
	EXPECT_INT(t->nbytes, 8);
	EXPECT_INT(t->storage->numel, 1);
}

Test(checkpoint, the_root_of_a_state_dict_is_an_ordered_dict_with_metadata)
{
	open_fixture("resnet18_small.pt");
	const ti_value *root = ti_ckpt_root(ckpt);
	ASSERT_KIND(root, TI_DICT);
	EXPECT_INT(root->flags & TI_F_ORDERED, TI_F_ORDERED);
	EXPECT_INT(root->as.dict->count, 122);
	cr_assert(root->as.dict->attributes != NULL, "the OrderedDict lost its _metadata");
	ASSERT_KIND(ti_dict_get(root->as.dict->attributes, "_metadata"), TI_DICT);
}

Test(checkpoint, info_describes_a_1_13_archive)
{
	open_fixture("resnet18_small.pt");
	const ti_ckpt_info *info = ti_ckpt_get_info(ckpt);
	EXPECT_STR(info->format, "torch-zip");
	EXPECT_STR(info->root, "resnet18_small");
	EXPECT_INT(info->version, 3);
	EXPECT_STR(info->byteorder, "little");
	cr_expect(!info->has_byteorder, "1.13 writes no byteorder record");
	EXPECT_INT(info->format_version, -1);
	EXPECT_INT(info->storage_alignment, -1);
	EXPECT_INT(info->pickle_protocol, 2);
	EXPECT_INT(info->pickle_size, 14685);
	EXPECT_INT(ti_ckpt_record_count(ckpt), 124);
}

Test(checkpoint, records_are_named_and_sized)
{
	open_fixture("views.pt");
	EXPECT_INT(ti_ckpt_record_count(ckpt), 6);
	const ti_record *r = ti_ckpt_record(ckpt, 0);
	cr_assert(r != NULL);
	EXPECT_STR(r->name, "views/data.pkl");
	EXPECT_INT(r->method, 0);
	EXPECT_INT(r->size, 646);
	EXPECT_INT(r->compressed_size, 646);
	cr_expect(ti_ckpt_record(ckpt, 6) == NULL, "record 6 of 6 exists");
	cr_expect(ti_ckpt_storage(ckpt, 4) == NULL, "storage 4 of 4 exists");
	cr_expect(ti_ckpt_entry(ckpt, 9) == NULL, "entry 9 of 9 exists");
}

Test(checkpoint, storages_point_at_their_records)
{
	open_fixture("views.pt");
	for (size_t i = 0; i < ti_ckpt_storage_count(ckpt); i++) {
		const ti_storage *st = ti_ckpt_storage(ckpt, i);
		cr_assert(st != NULL);
		EXPECT_INT(st->index, i);
		cr_assert(st->record_index >= 0, "storage '%s' has no record", st->key);
		const ti_record *r = ti_ckpt_record(ckpt, (size_t)st->record_index);
		char want[64];
		snprintf(want, sizeof(want), "views/data/%s", st->key);
		EXPECT_STR(r->name, want);
		EXPECT_INT(st->record_size, st->nbytes);
		EXPECT_INT(r->size, st->nbytes);
	}
}

Test(checkpoint, training_ckpt_keeps_tensors_and_plain_values)
{
	open_fixture("training_ckpt.pt");
	EXPECT_TENSOR("optimizer.state.0.exp_avg", TI_DT_FLOAT32, (16, 8));
	EXPECT_TENSOR("optimizer.state.0.exp_avg_sq", TI_DT_FLOAT32, (16, 8));
	EXPECT_TENSOR("optimizer.state.3.exp_avg", TI_DT_FLOAT32, (4));
	EXPECT_TENSOR("model.2.weight", TI_DT_FLOAT32, (4, 16));
	/* Adam's step is a float32 0-dim tensor since 1.12 */
	const ti_tensor *step = tensor("optimizer.state.0.step");
	EXPECT_INT(step->dtype, TI_DT_FLOAT32);
	EXPECT_INT(step->ndim, 0);

	const ti_value *epoch = entry("epoch");
	ASSERT_KIND(epoch, TI_INT);
	EXPECT_INT(epoch->as.integer, 7);
	const ti_value *best = entry("best_acc");
	ASSERT_KIND(best, TI_FLOAT);
	EXPECT_DOUBLE(best->as.real, 0.875);
	const ti_value *tag = entry("tag");
	ASSERT_KIND(tag, TI_BYTES);
	cr_expect(tag->as.bytes.size == 6 && !memcmp(tag->as.bytes.data, "ckpt\x00\xff", 6),
	          "tag: got %zu bytes, want b'ckpt\\x00\\xff'", tag->as.bytes.size);
	/* a container without tensors is one value */
	const ti_value *history = entry("history");
	ASSERT_KIND(history, TI_LIST);
	EXPECT_INT(history->as.seq.count, 3);
	ASSERT_KIND(entry("optimizer.param_groups"), TI_LIST);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 16);
}

Test(checkpoint, an_argparse_namespace_is_an_object_with_its_attributes)
{
	open_fixture("training_ckpt.pt");
	const ti_value *args = entry("args");
	ASSERT_KIND(args, TI_OBJECT);
	char type[128];
	EXPECT_STR(ti_value_type_name(args, type, sizeof(type)), "argparse.Namespace");
	ASSERT_KIND(args->as.object->callable, TI_GLOBAL);
	EXPECT_STR(args->as.object->callable->as.global->module, "argparse");
	EXPECT_STR(args->as.object->callable->as.global->name, "Namespace");
	const ti_value *state = args->as.object->state;
	ASSERT_KIND(state, TI_DICT);
	const ti_value *batch = ti_dict_get(state, "batch_size");
	ASSERT_KIND(batch, TI_INT);
	EXPECT_INT(batch->as.integer, 32);
	const ti_value *arch = ti_dict_get(state, "arch");
	ASSERT_KIND(arch, TI_STR);
	EXPECT_STR(arch->as.bytes.data, "mlp");
	const ti_value *nesterov = ti_dict_get(state, "nesterov");
	ASSERT_KIND(nesterov, TI_BOOL);
	EXPECT_INT(nesterov->as.boolean, 0);
	char repr[256];
	EXPECT_STR(ti_value_repr(args, repr, sizeof(repr), 200),
	           "Namespace(lr=0.001, batch_size=32, arch='mlp', nesterov=False)");
}

Test(checkpoint, views_keep_their_strides_and_offsets)
{
	open_fixture("views.pt");
	EXPECT_TENSOR("base", TI_DT_FLOAT32, (4, 6));
	EXPECT_STRIDE("base", (6, 1));
	EXPECT_TENSOR("row", TI_DT_FLOAT32, (6));
	EXPECT_INT(tensor("row")->storage_offset, 6);
	EXPECT_TENSOR("col", TI_DT_FLOAT32, (4));
	EXPECT_STRIDE("col", (6));
	EXPECT_INT(tensor("col")->storage_offset, 2);
	EXPECT_TENSOR("transposed", TI_DT_FLOAT32, (6, 4));
	EXPECT_STRIDE("transposed", (1, 6));
	EXPECT_TENSOR("narrow", TI_DT_FLOAT32, (2, 3));
	EXPECT_STRIDE("narrow", (6, 1));
	EXPECT_INT(tensor("narrow")->storage_offset, 8);
	EXPECT_TENSOR("expanded", TI_DT_FLOAT32, (3, 4));
	EXPECT_STRIDE("expanded", (1, 0));
	EXPECT_INT(tensor("expanded")->storage->numel, 3);
	EXPECT_TENSOR("step2", TI_DT_FLOAT32, (4, 3));
	EXPECT_STRIDE("step2", (6, 2));

	const ti_tensor *scalar = tensor("scalar");
	EXPECT_INT(scalar->ndim, 0);
	EXPECT_INT(scalar->numel, 1);
	const ti_tensor *empty = tensor("empty");
	EXPECT_DIMS("empty shape", empty->shape, empty->ndim, L(0, 5));
	EXPECT_INT(empty->numel, 0);
	EXPECT_INT(empty->nbytes, 0);
	EXPECT_INT(empty->storage->record_size, 0);

	cr_expect(ti_tensor_is_contiguous(tensor("base")));
	cr_expect(ti_tensor_is_contiguous(tensor("row")));
	cr_expect(!ti_tensor_is_contiguous(tensor("col")));
	cr_expect(!ti_tensor_is_contiguous(tensor("transposed")));
	cr_expect(!ti_tensor_is_contiguous(tensor("expanded")));
	cr_expect(!ti_tensor_is_contiguous(tensor("step2")));
}

Test(checkpoint, views_share_one_storage)
{
	open_fixture("views.pt");
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 4);
	const ti_storage *base = tensor("base")->storage;
	cr_assert(base != NULL);
	static const char *const views[] = {"row", "col", "transposed", "narrow", "step2"};
	for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		cr_expect(tensor(views[i])->storage == base, "%s: not a view of base's storage", views[i]);
	cr_expect(tensor("expanded")->storage != base, "expanded shares base's storage");
	EXPECT_INT(base->tensor_count, 6);
	EXPECT_INT(base->numel, 24);
	EXPECT_INT(base->nbytes, 96);
	EXPECT_STR(base->key, "0");
	EXPECT_INT(tensor("expanded")->storage->tensor_count, 1);
}

Test(checkpoint, shared_views_of_one_storage)
{
	open_fixture("shared_views.pt");
	const ti_tensor *a = tensor("a"), *b = tensor("b");
	cr_expect(a->storage == b->storage, "a and b have different storages");
	EXPECT_INT(b->storage_offset, 12);
	EXPECT_INT(a->storage->tensor_count, 2);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 1);
}

Test(checkpoint, tied_weights_are_two_names_for_one_storage)
{
	open_fixture("tied.pt");
	const ti_tensor *embed = tensor("embed.weight"), *decoder = tensor("decoder.weight");
	cr_expect(embed->storage == decoder->storage, "the tied weights have different storages");
	EXPECT_INT(embed->storage->tensor_count, 2);
	EXPECT_INT(tensor("decoder.bias")->storage->tensor_count, 1);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 2);
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 3);
	cr_expect(!embed->is_parameter && !decoder->is_parameter);
}

Test(checkpoint, tied_keepvars_are_parameters_that_require_grad)
{
	open_fixture("tied_keepvars.pt");
	const ti_tensor *embed = tensor("embed.weight"), *decoder = tensor("decoder.weight");
	cr_expect(embed->is_parameter && decoder->is_parameter, "keep_vars=True saves Parameters");
	cr_expect(embed->requires_grad && decoder->requires_grad);
	cr_expect(embed->storage == decoder->storage);
	EXPECT_INT(embed->storage->tensor_count, 2);
	cr_expect(tensor("decoder.bias")->is_parameter);
}

Test(checkpoint, dtypes_has_every_1_13_dtype)
{
	open_fixture("dtypes.pt");
	static const struct { const char *name; ti_dtype dt; } rows[] = {
		{"float32", TI_DT_FLOAT32}, {"float64", TI_DT_FLOAT64}, {"float16", TI_DT_FLOAT16},
		{"bfloat16", TI_DT_BFLOAT16}, {"int64", TI_DT_INT64}, {"int32", TI_DT_INT32},
		{"int16", TI_DT_INT16}, {"int8", TI_DT_INT8}, {"uint8", TI_DT_UINT8},
		{"bool", TI_DT_BOOL}, {"complex64", TI_DT_COMPLEX64}, {"complex128", TI_DT_COMPLEX128},
	};
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 12);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const ti_tensor *t = tensor(rows[i].name);
		cr_expect(t->dtype == rows[i].dt, "%s: got %s", rows[i].name, ti_dtype_name(t->dtype));
		cr_expect(t->storage->dtype == rows[i].dt, "%s storage: got %s", rows[i].name, ti_dtype_name(t->storage->dtype));
		cr_expect(!t->storage->untyped, "%s: 1.13 storages are typed", rows[i].name);
		EXPECT_INT(t->numel, 3);
		EXPECT_INT(t->nbytes, 3 * (int64_t)ti_dtype_size(rows[i].dt));
	}
}

Test(checkpoint, a_root_parameter_is_named_root_as_in_every_command)
{
	open_fixture("parameter.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 1);
	EXPECT_STR(ti_ckpt_entry(ckpt, 0)->name, TI_ROOT_NAME);
	const ti_tensor *p = tensor(TI_ROOT_NAME);
	cr_expect(p->is_parameter, "the root is an nn.Parameter");
	cr_expect(p->requires_grad, "nn.Parameter requires grad by default");
	EXPECT_DIMS("shape", p->shape, p->ndim, L(3, 4));
	ASSERT_KIND(ti_ckpt_root(ckpt), TI_TENSOR);
	char type[128];
	EXPECT_STR(ti_value_type_name(ti_ckpt_root(ckpt), type, sizeof(type)), "torch.nn.parameter.Parameter");

	open_fixture("parameter_nograd.pt");
	cr_expect(tensor(TI_ROOT_NAME)->is_parameter);
	cr_expect(!tensor(TI_ROOT_NAME)->requires_grad);

	open_fixture("root_tensor.pt");
	cr_expect(!tensor(TI_ROOT_NAME)->is_parameter);
	EXPECT_DIMS("shape", tensor(TI_ROOT_NAME)->shape, tensor(TI_ROOT_NAME)->ndim, L(2, 3));
}

Test(checkpoint, requires_grad_of_a_plain_tensor)
{
	open_fixture("tensor_requires_grad.pt");
	cr_expect(tensor("w")->requires_grad);
	cr_expect(!tensor("w")->is_parameter);
	cr_expect(!tensor("x")->requires_grad);
}

Test(checkpoint, quantized_tensors_keep_their_quantizer)
{
	open_fixture("quantized.pt");
	const ti_tensor *pt = tensor("per_tensor");
	EXPECT_INT(pt->dtype, TI_DT_QUINT8);
	EXPECT_INT(ti_tensor_ext_of(pt)->quant.scheme, TI_QS_PER_TENSOR_AFFINE);
	EXPECT_DOUBLE(ti_tensor_ext_of(pt)->quant.scale, 0.1);
	EXPECT_INT(ti_tensor_ext_of(pt)->quant.zero_point, 3);
	EXPECT_DIMS("per_tensor shape", pt->shape, pt->ndim, L(4, 3));
	EXPECT_STR(pt->rebuild, "_rebuild_qtensor");

	const ti_tensor *pc = tensor("per_channel");
	EXPECT_INT(pc->dtype, TI_DT_QINT8);
	EXPECT_INT(ti_tensor_ext_of(pc)->quant.scheme, TI_QS_PER_CHANNEL_AFFINE);
	EXPECT_INT(ti_tensor_ext_of(pc)->quant.axis, 0);
	cr_assert(ti_tensor_ext_of(pc)->quant.scales != NULL && ti_tensor_ext_of(pc)->quant.zero_points != NULL, "per-channel parameters are missing");
	EXPECT_INT(ti_tensor_ext_of(pc)->quant.scales->dtype, TI_DT_FLOAT64);
	EXPECT_DIMS("scales shape", ti_tensor_ext_of(pc)->quant.scales->shape, ti_tensor_ext_of(pc)->quant.scales->ndim, L(4));
	EXPECT_INT(ti_tensor_ext_of(pc)->quant.zero_points->dtype, TI_DT_INT64);
	EXPECT_DIMS("zero_points shape", ti_tensor_ext_of(pc)->quant.zero_points->shape, ti_tensor_ext_of(pc)->quant.zero_points->ndim, L(4));

	const ti_tensor *q32 = tensor("qint32");
	EXPECT_INT(q32->dtype, TI_DT_QINT32);
	EXPECT_DOUBLE(ti_tensor_ext_of(q32)->quant.scale, 0.5);
	EXPECT_INT(ti_tensor_ext_of(q32)->quant.zero_point, 0);
	EXPECT_INT(q32->nbytes, 48);
	EXPECT_STR(ti_qscheme_name(ti_tensor_ext_of(q32)->quant.scheme), "per_tensor_affine");
}

Test(checkpoint, sparse_tensors_are_their_components)
{
	open_fixture("sparse.pt");
	const ti_tensor *coo = tensor("coo");
	EXPECT_STR(ti_layout_name(coo->layout), "sparse_coo");
	EXPECT_INT(coo->dtype, TI_DT_FLOAT32);
	EXPECT_DIMS("coo shape", coo->shape, coo->ndim, L(3, 4));
	cr_expect(coo->stride == NULL, "a sparse tensor has strides");
	cr_expect(coo->storage == NULL, "a sparse tensor has a storage of its own");
	EXPECT_INT(coo->numel, 12);
	ASSERT_INT(ti_tensor_ext_of(coo)->component_count, 2);
	EXPECT_STR(ti_tensor_ext_of(coo)->component_names[0], "indices");
	EXPECT_STR(ti_tensor_ext_of(coo)->component_names[1], "values");
	EXPECT_INT(ti_tensor_ext_of(coo)->components[0]->dtype, TI_DT_INT64);
	EXPECT_DIMS("coo indices", ti_tensor_ext_of(coo)->components[0]->shape, ti_tensor_ext_of(coo)->components[0]->ndim, L(2, 4));
	EXPECT_DIMS("coo values", ti_tensor_ext_of(coo)->components[1]->shape, ti_tensor_ext_of(coo)->components[1]->ndim, L(4));
	EXPECT_INT(coo->nbytes, 2 * 4 * 8 + 4 * 4);
	/* 1.13 does not save is_coalesced: torch.load gives an uncoalesced tensor */
	cr_expect(!ti_tensor_ext_of(coo)->coalesced, "coo: coalesced, but 1.13 does not save the flag");

	const ti_tensor *csr = tensor("csr");
	EXPECT_STR(ti_layout_name(csr->layout), "sparse_csr");
	ASSERT_INT(ti_tensor_ext_of(csr)->component_count, 3);
	EXPECT_STR(ti_tensor_ext_of(csr)->component_names[0], "crow_indices");
	EXPECT_STR(ti_tensor_ext_of(csr)->component_names[1], "col_indices");
	EXPECT_STR(ti_tensor_ext_of(csr)->component_names[2], "values");
	EXPECT_DIMS("csr crow_indices", ti_tensor_ext_of(csr)->components[0]->shape, ti_tensor_ext_of(csr)->components[0]->ndim, L(4));
	EXPECT_DIMS("csr col_indices", ti_tensor_ext_of(csr)->components[1]->shape, ti_tensor_ext_of(csr)->components[1]->ndim, L(4));
	EXPECT_INT(ti_tensor_ext_of(csr)->components[2]->dtype, TI_DT_FLOAT32);
	EXPECT_DIMS("csr shape", csr->shape, csr->ndim, L(3, 4));
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 2);
}

Test(checkpoint, a_storage_saved_on_cuda_says_so)
{
	open_fixture("cuda_saved.pt");
	EXPECT_STR(tensor("weight")->storage->location, "cuda:0");
	EXPECT_STR(tensor("bias")->storage->location, "cuda:0");
	EXPECT_TENSOR("weight", TI_DT_FLOAT32, (2, 4));

	open_fixture("resnet18_small.pt");
	EXPECT_STR(tensor("fc.bias")->storage->location, "cpu");
}

Test(checkpoint, a_meta_tensor_has_no_storage)
{
	open_fixture("meta_saved.pt");
	const ti_tensor *t = tensor(TI_ROOT_NAME);
	cr_expect(t->storage == NULL, "a meta tensor has a storage");
	EXPECT_DIMS("shape", t->shape, t->ndim, L(3, 4));
	EXPECT_DIMS("stride", t->stride, t->ndim, L(4, 1));
	EXPECT_INT(t->numel, 12);
	EXPECT_INT(t->nbytes, 48);
	EXPECT_STR(t->rebuild, "_rebuild_meta_tensor_no_storage");
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 0);
	EXPECT_INT(ti_ckpt_record_count(ckpt), 2);
}

Test(checkpoint, proto4_and_proto5_read_like_proto2)
{
	open_fixture("proto4.pt");
	EXPECT_INT(ti_ckpt_get_info(ckpt)->pickle_protocol, 4);
	EXPECT_TENSOR("weight", TI_DT_FLOAT32, (2, 3));
	EXPECT_TENSOR("bias", TI_DT_FLOAT32, (2));
	open_fixture("proto5.pt");
	EXPECT_INT(ti_ckpt_get_info(ckpt)->pickle_protocol, 5);
	EXPECT_TENSOR("weight", TI_DT_FLOAT32, (2, 3));
	EXPECT_TENSOR("bias", TI_DT_FLOAT32, (2));
}

Test(checkpoint, int_keys_and_a_tensor_named_twice)
{
	open_fixture("int_keys.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 6);
	EXPECT_TENSOR("0", TI_DT_FLOAT32, (2));
	EXPECT_TENSOR("1", TI_DT_FLOAT32, (1));
	EXPECT_TENSOR("x.2", TI_DT_INT32, (2));
	EXPECT_TENSOR("list.1", TI_DT_FLOAT32, (3));
	EXPECT_TENSOR("tuple.0", TI_DT_FLOAT32, (1));
	/* list[0] is the very tensor at key 0 */
	cr_expect(entry("list.0") == entry("0"), "list.0 is not the tensor at key 0");
	EXPECT_INT(tensor("0")->storage->tensor_count, 2);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 5);
}

Test(checkpoint, long_binget_names_the_same_tensor_again)
{
	open_fixture("long_binget.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 301);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 300);
	cr_expect(entry("again") == entry("tensors.299"), "'again' is not tensors[-1]");
}

Test(checkpoint, big_index_has_1200_tensors)
{
	open_fixture("big_index.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 1200);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 1200);
	EXPECT_INT(ti_ckpt_record_count(ckpt), 1202);
	char name[16];
	for (int i = 0; i < 1200; i += 97) {
		snprintf(name, sizeof(name), "t%04d", i);
		const ti_tensor *t = tensor(name);
		EXPECT_DIMS(name, t->shape, t->ndim, L(1));
		char key[16];
		snprintf(key, sizeof(key), "%d", i);
		EXPECT_STR(t->storage->key, key);
	}
	EXPECT_STR(ti_ckpt_entry(ckpt, 1199)->name, "t1199");
}

Test(checkpoint, deep_nesting_makes_long_names)
{
	open_fixture("deep.pt");
	EXPECT_INT(ti_ckpt_entry_count(ckpt), 2);
	EXPECT_TENSOR("a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.aa.ab.ac.ad.ae.af.ag.ah.ai.aj.ak.al.am.an",
	              TI_DT_FLOAT32, (1));
	EXPECT_TENSOR("lists.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0", TI_DT_FLOAT32, (1));
}

/* ---- PyTorch 2.x files (gen_torch2.py) ---- */

Test(checkpoint, info_describes_a_torch2_archive)
{
	open_fixture("torch2_v3_float8.pt");
	const ti_ckpt_info *info = ti_ckpt_get_info(ckpt);
	EXPECT_STR(info->root, "torch2_v3_float8");
	EXPECT_INT(info->version, 3);
	cr_expect(info->has_byteorder, "2.x writes a byteorder record");
	EXPECT_STR(info->byteorder, "little");
	EXPECT_INT(info->format_version, 1);
	EXPECT_INT(info->storage_alignment, 64);
	EXPECT_INT(info->pickle_protocol, 2);

	open_fixture("torch2_align4096.pt");
	EXPECT_INT(ti_ckpt_get_info(ckpt)->storage_alignment, 4096);
}

Test(checkpoint, float8_and_unsigned_dtypes_view_untyped_storages)
{
	open_fixture("torch2_v3_float8.pt");
	EXPECT_TENSOR("w_f8e4m3", TI_DT_FLOAT8_E4M3FN, (2, 2));
	EXPECT_STRIDE("w_f8e4m3", (2, 1));
	EXPECT_TENSOR("w_f8e4m3_t", TI_DT_FLOAT8_E4M3FN, (2, 2));
	EXPECT_STRIDE("w_f8e4m3_t", (1, 2));
	EXPECT_TENSOR("w_f8e5m2", TI_DT_FLOAT8_E5M2, (4));
	EXPECT_TENSOR("u16", TI_DT_UINT16, (3));
	EXPECT_TENSOR("u32", TI_DT_UINT32, (2));
	EXPECT_TENSOR("u64", TI_DT_UINT64, (2));
	EXPECT_TENSOR("f32", TI_DT_FLOAT32, (2));

	const ti_storage *f8 = tensor("w_f8e4m3")->storage;
	cr_expect(f8 == tensor("w_f8e4m3_t")->storage, "the transposed view has its own storage");
	cr_expect(f8->untyped, "a v3 storage is an UntypedStorage");
	EXPECT_INT(f8->numel, 4);
	EXPECT_INT(f8->nbytes, 4);
	EXPECT_INT(f8->tensor_count, 2);
	EXPECT_STR(tensor("w_f8e4m3")->rebuild, "_rebuild_tensor_v3");

	/* an offset counts elements, not bytes */
	const ti_tensor *u16 = tensor("u16");
	EXPECT_INT(u16->storage_offset, 1);
	EXPECT_INT(u16->storage->nbytes, 8);
	EXPECT_INT(u16->nbytes, 6);
	EXPECT_INT(tensor("u64")->storage->nbytes, 16);

	const ti_tensor *f32 = tensor("f32");
	cr_expect(!f32->storage->untyped, "a FloatStorage is typed");
	EXPECT_STR(f32->rebuild, "_rebuild_tensor_v2");
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 6);
}

Test(checkpoint, conj_and_neg_bits_come_from_the_metadata_argument)
{
	open_fixture("torch2_conj_neg.pt");
	const ti_tensor *z = tensor("z"), *plain = tensor("z_plain"), *n = tensor("n");
	EXPECT_INT(z->dtype, TI_DT_COMPLEX64);
	cr_expect(z->conj && !z->neg, "z: conj %d neg %d, want conj only", z->conj, z->neg);
	cr_expect(!plain->conj && !plain->neg, "z_plain: conj %d neg %d, want neither", plain->conj, plain->neg);
	cr_expect(n->neg && !n->conj, "n: conj %d neg %d, want neg only", n->conj, n->neg);
	cr_expect(z->storage == plain->storage, "z and z_plain have different storages");
	EXPECT_DIMS("n shape", n->shape, n->ndim, L(2, 2));
}

Test(checkpoint, torch2_meta_tensors_have_no_storage)
{
	open_fixture("torch2_meta.pt");
	static const char *const metas[] = {"m_f32", "m_bf16", "m_grad", "m_f8", "m_big"};
	for (size_t i = 0; i < sizeof(metas) / sizeof(metas[0]); i++)
		cr_expect(tensor(metas[i])->storage == NULL, "%s has a storage", metas[i]);
	cr_expect(tensor("real")->storage != NULL, "real has no storage");
	EXPECT_TENSOR("m_f32", TI_DT_FLOAT32, (3, 4));
	EXPECT_TENSOR("m_bf16", TI_DT_BFLOAT16, (2));
	EXPECT_TENSOR("m_grad", TI_DT_FLOAT32, (8, 8));
	EXPECT_STRIDE("m_grad", (1, 8));
	cr_expect(tensor("m_grad")->requires_grad);
	EXPECT_TENSOR("m_f8", TI_DT_FLOAT8_E4M3FN, (5));
	const ti_tensor *big = tensor("m_big");
	EXPECT_INT(big->dtype, TI_DT_FLOAT16);
	EXPECT_INT(big->numel, INT64_C(1) << 32);
	EXPECT_INT(big->nbytes, INT64_C(1) << 33);
	EXPECT_INT(ti_ckpt_storage_count(ckpt), 1);
}

Test(checkpoint, parameters_with_state_and_tensor_subclasses)
{
	open_fixture("torch2_param_state.pt");
	const ti_tensor *p_state = tensor("p_state");
	cr_expect(p_state->is_parameter && p_state->requires_grad, "p_state: parameter %d grad %d",
	          p_state->is_parameter, p_state->requires_grad);
	EXPECT_DIMS("p_state shape", p_state->shape, p_state->ndim, L(2, 2));
	const ti_tensor *p_plain = tensor("p_plain");
	cr_expect(p_plain->is_parameter && !p_plain->requires_grad, "p_plain: parameter %d grad %d",
	          p_plain->is_parameter, p_plain->requires_grad);
	const ti_tensor *sub = tensor("sub");
	cr_expect(!sub->is_parameter, "a Tensor subclass is not a Parameter");
	EXPECT_STR(ti_tensor_ext_of(sub)->subclass, "mylib.Subclass");
	const ti_tensor *as_param = tensor("as_param");
	cr_expect(as_param->is_parameter && as_param->requires_grad, "as_param: parameter %d grad %d",
	          as_param->is_parameter, as_param->requires_grad);
	cr_expect(ti_tensor_ext_of(as_param)->subclass == NULL, "Parameter is not recorded as a subclass");
}

Test(checkpoint, payloads_of_a_1_13_file_are_64_byte_aligned)
{
	static const char *const files[] = {"resnet18_small.pt", "views.pt", "big_index.pt", "meta_saved.pt"};
	for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
		open_fixture(files[f]);
		for (size_t i = 0; i < ti_ckpt_record_count(ckpt); i++) {
			uint64_t offset = 1;
			ti_status s = ti_ckpt_record_payload_offset(ckpt, i, &offset, &err);
			cr_assert(s == TI_OK, "%s record %zu: got %s (\"%s\")", files[f], i, ti_status_name(s), err.message);
			cr_expect(offset % 64 == 0, "%s: %s starts at %" PRIu64 ", not a multiple of 64", files[f],
			          ti_ckpt_record(ckpt, i)->name, offset);
			cr_expect(offset > 0, "%s: %s starts at 0", files[f], ti_ckpt_record(ckpt, i)->name);
		}
	}
	open_fixture("resnet18_small.pt");
	uint64_t offset = 0;
	EXPECT_STATUS(ti_ckpt_record_payload_offset(ckpt, 0, &offset, &err), TI_OK, err);
	EXPECT_INT(offset, 64); /* data.pkl: 30-byte header + name + 'FB' padding */
}

Test(checkpoint, payloads_follow_storage_alignment_4096)
{
	open_fixture("torch2_align4096.pt");
	EXPECT_INT(ti_ckpt_record_count(ckpt), 8);
	for (size_t i = 0; i < ti_ckpt_record_count(ckpt); i++) {
		uint64_t offset = 1;
		ti_status s = ti_ckpt_record_payload_offset(ckpt, i, &offset, &err);
		cr_assert(s == TI_OK, "record %zu: got %s (\"%s\")", i, ti_status_name(s), err.message);
		cr_expect(offset % 4096 == 0 && offset > 0, "%s starts at %" PRIu64 ", not a multiple of 4096",
		          ti_ckpt_record(ckpt, i)->name, offset);
	}
	EXPECT_TENSOR("a", TI_DT_FLOAT32, (3));
	EXPECT_TENSOR("b", TI_DT_INT64, (2));
}

Test(checkpoint, payload_offset_of_a_record_that_is_not_there)
{
	open_fixture("views.pt");
	uint64_t offset = 0;
	ti_status s = ti_ckpt_record_payload_offset(ckpt, 6, &offset, &err);
	cr_expect(s != TI_OK, "record 6 of 6 has a payload offset %" PRIu64, offset);
	s = ti_ckpt_record_payload_offset(ckpt, SIZE_MAX, &offset, &err);
	cr_expect(s != TI_OK, "record SIZE_MAX has a payload offset %" PRIu64, offset);
}

Test(checkpoint, every_good_fixture_opens)
{
	DIR *dir = opendir("fixtures");
	cr_assert(dir != NULL, "cannot list fixtures/: run the tests from the repository root");
	size_t count = 0;
	struct dirent *d;
	while ((d = readdir(dir))) {
		size_t n = strlen(d->d_name);
		if (n < 4 || strcmp(d->d_name + n - 3, ".pt"))
			continue;
		ti_ckpt *c = NULL;
		ti_error e;
		char path[512];
		snprintf(path, sizeof(path), "fixtures/%s", d->d_name);
		ti_status s = ti_ckpt_open(path, NULL, &c, &e);
		cr_expect(s == TI_OK, "%s: got %s (\"%s\"), want success", d->d_name, ti_status_name(s), e.message);
		if (s == TI_OK) {
			cr_expect(ti_ckpt_entry_count(c) > 0, "%s: no entries", d->d_name);
			ti_ckpt_close(c);
		}
		count++;
	}
	closedir(dir);
	cr_expect(count >= 25, "found only %zu fixtures", count);
}

/* ---- files that must fail, and how ---- */

Test(checkpoint, a_missing_file_is_an_io_error)
{
	ti_ckpt *c = (ti_ckpt *)0x1;
	EXPECT_STATUS(ti_ckpt_open("fixtures/no_such_file.pt", NULL, &c, &err), TI_E_IO, err);
	cr_expect(c == NULL);
	cr_expect(err.message[0] != '\0');
}

Test(checkpoint, a_directory_is_not_a_checkpoint)
{
	ti_ckpt *c = NULL;
	ti_status s = ti_ckpt_open("fixtures", NULL, &c, &err);
	cr_expect(s != TI_OK, "opening a directory succeeded");
	cr_expect(c == NULL);
	if (c)
		ti_ckpt_close(c);
}

typedef struct broken_case {
	const char *file;
	ti_status status;
	const char *member; /* the error's member, or NULL not to check */
	int64_t offset;     /* the error's offset, or -2 not to check */
} broken_case;

static const broken_case broken_cases[] = {
	{"truncated.pt", TI_E_CORRUPT, NULL, -2},
	{"not_zip.pt", TI_E_CORRUPT, NULL, -2},
	{"empty.pt", TI_E_CORRUPT, NULL, -2},
	{"no_data_pkl.pt", TI_E_CORRUPT, NULL, -2},
	{"not_in_subdir.pt", TI_E_CORRUPT, NULL, -2},
	{"duplicate_record.pt", TI_E_CORRUPT, "archive/data/0", -2},
	{"version_too_new.pt", TI_E_UNSUPPORTED, NULL, -2},
	{"zip_bad_offset.pt", TI_E_CORRUPT, "archive/data.pkl", -2},
	{"bad_opcode.pt", TI_E_CORRUPT, "archive/data.pkl", 3},
	{"stack_underflow.pt", TI_E_CORRUPT, "archive/data.pkl", 2},
	{"pop_mark.pt", TI_E_CORRUPT, "archive/data.pkl", 3},
	{"tuple_no_mark.pt", TI_E_CORRUPT, "archive/data.pkl", 3},
	{"memo_out_of_range.pt", TI_E_CORRUPT, "archive/data.pkl", 2},
	{"huge_length.pt", TI_E_LIMIT, "archive/data.pkl", 2},
	{"no_stop.pt", TI_E_CORRUPT, "archive/data.pkl", 3},
	{"numel_overflow.pt", TI_E_CORRUPT, "archive/data.pkl", -2},
	{"storage_too_small.pt", TI_E_CORRUPT, "archive/data.pkl", -2},
	{"size_mismatch.pt", TI_E_CORRUPT, "archive/data/0", -2},
	{"missing_record.pt", TI_E_CORRUPT, "archive/data/7", -2},
	{"negative_stride.pt", TI_E_CORRUPT, "archive/data.pkl", -2},
	{"unknown_storage.pt", TI_E_UNSUPPORTED, "archive/data.pkl", -2},
	{"bad_persid.pt", TI_E_CORRUPT, "archive/data.pkl", -2},
	{"huge_rank.pt", TI_E_LIMIT, "archive/data.pkl", -2},
	{"recursion_bomb.pt", TI_E_LIMIT, NULL, -2},
	{"billion_laughs.pt", TI_E_LIMIT, NULL, -2},
};

Test(checkpoint, each_broken_file_fails_with_its_own_error)
{
	for (size_t i = 0; i < sizeof(broken_cases) / sizeof(broken_cases[0]); i++) {
		const broken_case *b = &broken_cases[i];
		char path[256];
		snprintf(path, sizeof(path), "broken/%s", b->file);
		ti_ckpt *c = (ti_ckpt *)0x1;
		ti_status s = ti_ckpt_open(fixture_path(path), NULL, &c, &err);
		cr_expect(s == b->status, "%s: got %s (\"%s\"), want %s", b->file, ti_status_name(s), err.message,
		          ti_status_name(b->status));
		cr_expect(c == NULL, "%s: failed but left a handle", b->file);
		cr_expect(err.message[0] != '\0', "%s: the error has no message", b->file);
		if (b->member)
			cr_expect(!strcmp(err.member, b->member), "%s: member got '%s', want '%s'", b->file, err.member, b->member);
		if (b->offset != -2)
			cr_expect(err.offset == b->offset, "%s: offset got %" PRId64 ", want %" PRId64, b->file, err.offset, b->offset);
		if (s == TI_OK)
			ti_ckpt_close(c);
	}
}

static bool is_payload_fixture(const char *name)
{
	return !strcmp(name, "os_system.pt") || !strcmp(name, "unsupported_global.pt");
}

Test(checkpoint, every_broken_file_fails_cleanly)
{
	DIR *dir = opendir("fixtures/broken");
	cr_assert(dir != NULL, "cannot list fixtures/broken: run the tests from the repository root");
	size_t count = 0;
	struct dirent *d;
	while ((d = readdir(dir))) {
		size_t n = strlen(d->d_name);
		if (n < 4 || strcmp(d->d_name + n - 3, ".pt") || is_payload_fixture(d->d_name))
			continue;
		char path[512];
		snprintf(path, sizeof(path), "fixtures/broken/%s", d->d_name);
		ti_ckpt *c = (ti_ckpt *)0x1;
		ti_error e;
		ti_status s = ti_ckpt_open(path, NULL, &c, &e);
		cr_expect(s == TI_E_CORRUPT || s == TI_E_UNSUPPORTED || s == TI_E_LIMIT,
		          "%s: got %s (\"%s\"), want corrupt, unsupported or limit", d->d_name, ti_status_name(s), e.message);
		cr_expect(e.message[0] != '\0', "%s: the error has no message", d->d_name);
		cr_expect(c == NULL, "%s: failed but left a handle", d->d_name);
		if (s == TI_OK)
			ti_ckpt_close(c);
		count++;
	}
	closedir(dir);
	cr_expect(count >= 25, "found only %zu broken fixtures", count);
}

/* The payload is kept as an object whose callable is the global; nothing runs. */
static void expect_recorded_call(const char *file, const char *module, const char *name, const char *arg)
{
	char path[64];
	snprintf(path, sizeof(path), "broken/%s", file);
	open_fixture(path);
	EXPECT_TENSOR("weight", TI_DT_FLOAT32, (2, 3));
	const ti_value *payload = entry("payload");
	ASSERT_KIND(payload, TI_OBJECT);
	ASSERT_KIND(payload->as.object->callable, TI_GLOBAL);
	EXPECT_STR(payload->as.object->callable->as.global->module, module);
	EXPECT_STR(payload->as.object->callable->as.global->name, name);
	cr_expect(payload->as.object->callable->as.global->known == NULL, "%s.%s is a known global", module, name);
	ASSERT_KIND(payload->as.object->args, TI_TUPLE);
	ASSERT_INT(payload->as.object->args->as.seq.count, 1);
	ASSERT_KIND(payload->as.object->args->as.seq.items[0], TI_STR);
	EXPECT_STR(payload->as.object->args->as.seq.items[0]->as.bytes.data, arg);
}

Test(checkpoint, os_system_is_recorded_and_never_run)
{
	bool existed = access("/tmp/tinspect_pwned", F_OK) == 0;
	expect_recorded_call("os_system.pt", "posix", "system", "touch /tmp/tinspect_pwned");
	if (!existed)
		cr_expect(access("/tmp/tinspect_pwned", F_OK) != 0, "/tmp/tinspect_pwned appeared: the payload ran");
	else
		cr_log_warn("/tmp/tinspect_pwned existed before the test: cannot tell whether the payload ran");
}

Test(checkpoint, an_unsupported_global_is_kept_opaque)
{
	expect_recorded_call("unsupported_global.pt", "builtins", "eval", "1+1");
	char repr[128];
	EXPECT_STR(ti_value_repr(entry("payload"), repr, sizeof(repr), 100), "eval('1+1')");
}

/* ---- limits ---- */

Test(checkpoint, a_small_arena_fails_with_limit)
{
	ti_limits limits;
	ti_limits_default(&limits);
	limits.arena_max = 16 * 1024;
	expect_open_fails("resnet18_small.pt", &limits, TI_E_LIMIT);
	/* the default is plenty */
	open_fixture("resnet18_small.pt");
}

Test(checkpoint, nesting_past_depth_max_fails_with_limit)
{
	ti_limits limits;
	ti_limits_default(&limits);
	/* the deepest path opens 40 dicts: the root 'a' dict down to 'an' */
	limits.depth_max = 39;
	expect_open_fails("deep.pt", &limits, TI_E_LIMIT);
	limits.depth_max = 40;
	open_with("deep.pt", &limits);
}

Test(checkpoint, more_entries_than_entries_max_fail_with_limit)
{
	ti_limits limits;
	ti_limits_default(&limits);
	limits.entries_max = 1000;
	expect_open_fails("big_index.pt", &limits, TI_E_LIMIT);
	limits.entries_max = 1200;
	open_with("big_index.pt", &limits);
}

Test(checkpoint, more_records_than_records_max_fail_with_limit)
{
	ti_limits limits;
	ti_limits_default(&limits);
	limits.records_max = 100;
	expect_open_fails("big_index.pt", &limits, TI_E_LIMIT);
}

Test(checkpoint, a_pickle_longer_than_pickle_max_fails_with_limit)
{
	ti_limits limits;
	ti_limits_default(&limits);
	limits.pickle_max = 1000;
	expect_open_fails("resnet18_small.pt", &limits, TI_E_LIMIT);
}

Test(checkpoint, pickle_limits_apply_inside_a_checkpoint)
{
	ti_limits limits;
	ti_limits_default(&limits);
	limits.pickle.memo_max = 100;
	expect_open_fails("big_index.pt", &limits, TI_E_LIMIT);
	ti_limits_default(&limits);
	limits.pickle.items_max = 100;
	expect_open_fails("big_index.pt", &limits, TI_E_LIMIT);
}

/* ---- storage keys torch.save would not write ---- */

/* A stored zip of these members (CRCs left zero: nothing checks them), written to a temporary file. */
typedef struct member {
	const char *name;
	const void *data;
	size_t size;
} member;

static void put_le(FILE *f, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		fputc((int)(v >> (8 * i)) & 0xff, f);
}

static void write_zip(const char *path, const member *m, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f != NULL, "cannot write %s", path);
	long offsets[16];
	for (size_t i = 0; i < n; i++) { /* local headers (APPNOTE 4.3.7) */
		size_t nlen = strlen(m[i].name);
		offsets[i] = ftell(f);
		put_le(f, 0x04034b50, 4), put_le(f, 20, 2), put_le(f, 0, 2), put_le(f, 0, 2);
		put_le(f, 0, 4), put_le(f, 0, 4), put_le(f, m[i].size, 4), put_le(f, m[i].size, 4);
		put_le(f, nlen, 2), put_le(f, 0, 2);
		fwrite(m[i].name, 1, nlen, f);
		fwrite(m[i].data, 1, m[i].size, f);
	}
	long cd = ftell(f);
	for (size_t i = 0; i < n; i++) { /* central directory (4.3.12) */
		size_t nlen = strlen(m[i].name);
		put_le(f, 0x02014b50, 4), put_le(f, 20, 2), put_le(f, 20, 2), put_le(f, 0, 2), put_le(f, 0, 2);
		put_le(f, 0, 4), put_le(f, 0, 4), put_le(f, m[i].size, 4), put_le(f, m[i].size, 4);
		put_le(f, nlen, 2), put_le(f, 0, 2), put_le(f, 0, 2), put_le(f, 0, 2), put_le(f, 0, 2);
		put_le(f, 0, 4), put_le(f, (uint64_t)offsets[i], 4);
		fwrite(m[i].name, 1, nlen, f);
	}
	long end = ftell(f);
	put_le(f, 0x06054b50, 4), put_le(f, 0, 2), put_le(f, 0, 2), put_le(f, n, 2), put_le(f, n, 2);
	put_le(f, (uint64_t)(end - cd), 4), put_le(f, (uint64_t)cd, 4), put_le(f, 0, 2);
	cr_assert(fclose(f) == 0);
}

/* Writes the members to a temporary zip and opens it, as ti_ckpt_open does. */
static ti_status open_members(const member *m, size_t n, ti_ckpt **out)
{
	char path[] = "/tmp/tinspect-keys-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	close(fd);
	write_zip(path, m, n);
	ti_status s = ti_ckpt_open(path, NULL, out, &err);
	unlink(path);
	return s;
}

/* {name: float tensor of numel elements viewing storage key} for each (name, key, numel). */
static size_t keyed_pickle(uint8_t *p, const char *const (*t)[2], const int *numel, size_t n)
{
	size_t len = 0;
#define PUT(s, k) (memcpy(p + len, (s), (k)), len += (k))
#define STR(s) (p[len++] = 'X', p[len++] = (uint8_t)strlen(s), memset(p + len, 0, 3), len += 3, PUT((s), strlen(s)))
	PUT("\x80\x02}(", 4);
	for (size_t i = 0; i < n; i++) {
		STR(t[i][0]);
		PUT("ctorch._utils\n_rebuild_tensor_v2\n((", 35);
		STR("storage");
		PUT("ctorch\nFloatStorage\n", 20);
		STR(t[i][1]);
		STR("cpu");
		p[len++] = 'K', p[len++] = (uint8_t)numel[i];
		PUT("tQK\0K", 5);
		p[len++] = (uint8_t)numel[i];
		PUT("\x85K\x01\x85\x89}tR", 8);
	}
	PUT("u.", 2);
#undef STR
#undef PUT
	return len;
}

Test(checkpoint, storage_keys_that_are_not_positions_find_their_records)
{
	/* torch.save names storage i "i"; these keys are names, padded numbers and
	 * numbers out of order, and "k1" is viewed twice */
	static const char *const tensors[][2] = {{"a", "k1"}, {"b", "05"}, {"c", "1"}, {"d", "0"}, {"e", "k1"}};
	static const int numel[] = {2, 3, 4, 5, 2};
	uint8_t pkl[1024];
	size_t n = keyed_pickle(pkl, tensors, numel, 5);
	static const float zeros[5] = {0};
	const member m[] = {
		{"archive/data.pkl", pkl, n},
		{"archive/data/0", zeros, 5 * 4}, {"archive/data/05", zeros, 3 * 4},
		{"archive/data/1", zeros, 4 * 4}, {"archive/data/k1", zeros, 2 * 4},
		{"archive/version", "3\n", 2},
	};
	ASSERT_STATUS(open_members(m, sizeof(m) / sizeof(m[0]), &ckpt), TI_OK, err);
	ASSERT_INT(ti_ckpt_storage_count(ckpt), 4);
	static const char *const want_key[] = {"k1", "05", "1", "0"};
	static const char *const want_record[] = {"archive/data/k1", "archive/data/05", "archive/data/1", "archive/data/0"};
	for (size_t i = 0; i < 4; i++) {
		const ti_storage *st = ti_ckpt_storage(ckpt, i);
		EXPECT_STR(st->key, want_key[i]);
		cr_assert(st->record_index >= 0, "storage '%s' has no record", st->key);
		EXPECT_STR(ti_ckpt_record(ckpt, (size_t)st->record_index)->name, want_record[i]);
		EXPECT_INT(st->record_size, st->nbytes);
	}
	cr_expect(tensor("a")->storage == tensor("e")->storage, "'a' and 'e' view two storages named k1");
	EXPECT_INT(tensor("a")->storage->tensor_count, 2);
	EXPECT_INT(tensor("d")->numel, 5);
}

Test(checkpoint, a_storage_without_its_record_is_named_whatever_its_key)
{
	static const char *const tensors[][2] = {{"a", "0"}, {"b", "x"}};
	static const int numel[] = {2, 2};
	uint8_t pkl[512];
	size_t n = keyed_pickle(pkl, tensors, numel, 2);
	static const float zeros[2] = {0};
	for (int missing = 0; missing < 2; missing++) {
		const member m[] = {
			{"archive/data.pkl", pkl, n},
			{missing ? "archive/data/0" : "archive/data/x", zeros, 8},
			{"archive/version", "3\n", 2},
		};
		ti_ckpt *c = NULL;
		EXPECT_STATUS(open_members(m, sizeof(m) / sizeof(m[0]), &c), TI_E_CORRUPT, err);
		EXPECT_STR(err.message, missing ? "storage 'x' has no record" : "storage '0' has no record");
		EXPECT_STR(err.member, missing ? "archive/data/x" : "archive/data/0");
		ti_ckpt_close(c);
	}
}
