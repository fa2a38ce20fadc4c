/*
 * test_torchscript.c - TorchScript archives read as torch.jit.load(f).state_dict() lists them.
 *
 * The archives are fixtures/jit_*.pt, written by torch.jit.save
 * (fixtures/gen_torchscript.py); the damaged ones are written here, from
 * the same records with one changed.
 */
#include <stdlib.h>
#include <string.h>
#include <zip.h>

#include "unit.h"

#include "tinspect/source.h"

static ti_source *open_ok(const char *path)
{
	ti_source *src;
	ti_error err;
	ti_status st = ti_source_open(path, &src, &err);
	cr_assert(st == TI_OK, "%s: %s", path, err.message);
	return src;
}

static void expect_names(ti_source *src, const char *const *want, size_t n)
{
	EXPECT_INT(ti_source_tensor_count(src), n);
	for (size_t i = 0; i < n && i < ti_source_tensor_count(src); i++)
		EXPECT_STR(ti_source_tensor_at(src, i)->name, want[i]);
}

Test(torchscript, a_traced_module_lists_its_state_dict_in_order)
{
	ti_source *src = open_ok("fixtures/jit_cnn_traced.pt");
	static const char *const want[] = {"conv1.weight", "conv1.bias", "bn.weight", "bn.bias", "bn.running_mean",
	                                   "bn.running_var", "bn.num_batches_tracked", "fc.weight", "fc.bias"};
	expect_names(src, want, sizeof(want) / sizeof(want[0]));
	EXPECT_STR(ti_source_format_name(ti_source_get_format(src)), "torchscript-zip");
	EXPECT_INT(ti_source_tensor_at(src, 6)->dtype, TI_DT_INT64);
	EXPECT_INT(ti_source_tensor_at(src, 6)->ndim, 0);
	ti_source_close(src);
}

Test(torchscript, buffers_come_before_children_and_ties_share_a_storage)
{
	ti_source *src = open_ok("fixtures/jit_tied_scripted.pt");
	/* the non-persistent buffer is listed (TorchScript keeps no flag); the plain tensor attribute is not */
	static const char *const want[] = {"pos", "scratch", "scale16", "emb.weight", "out.weight"};
	expect_names(src, want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(ti_source_tensor_at(src, 2)->dtype, TI_DT_FLOAT16);
	EXPECT_INT(ti_source_tensor_at(src, 3)->storage, ti_source_tensor_at(src, 4)->storage);
	size_t n;
	ti_error err;
	const ti_entry *e = ti_source_entries(src, &n, &err);
	EXPECT_INT(n, 5); /* no training flags, no other attribute */
	cr_assert(e);
	ti_source_close(src);
}

Test(torchscript, constants_are_entries_but_no_tensors_of_the_state_dict)
{
	ti_source *src = open_ok("fixtures/jit_traced_constants.pt");
	static const char *const want[] = {"fc.weight", "fc.bias"};
	expect_names(src, want, 2);
	size_t n;
	ti_error err;
	const ti_entry *e = ti_source_entries(src, &n, &err);
	cr_assert(e);
	EXPECT_INT(n, 3);
	EXPECT_STR(e[2].name, "constants.c0");
	EXPECT_INT(e[2].value->kind, TI_TENSOR);
	ti_source_close(src);
}

/* A copy of the fixture at path with record name (under its root) replaced by data. */
static void rewrite(const char *from, const char *to, const char *name, const char *data)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	cr_assert(in && out);
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, got, out);
	fclose(in);
	fclose(out);
	int zerr;
	zip_t *z = zip_open(to, 0, &zerr);
	cr_assert(z);
	zip_source_t *s = zip_source_buffer(z, data, strlen(data), 0);
	cr_assert(s);
	cr_assert(zip_file_add(z, name, s, ZIP_FL_OVERWRITE) >= 0);
	cr_assert(zip_close(z) == 0);
}

static ti_status open_fails(const char *path, ti_error *err)
{
	ti_source *src = NULL;
	ti_status st = ti_source_open(path, &src, err);
	cr_expect(st != TI_OK, "%s opened", path);
	ti_source_close(src);
	return st;
}

Test(torchscript, a_class_missing_from_code_is_an_error_naming_it_and_the_record)
{
	rewrite("fixtures/jit_cnn_traced.pt", "/tmp/tinspect-jit-noclass.pt", "jit_cnn_traced/code/__torch__.py",
	        "class Other(Module):\n  __parameters__ = []\n");
	ti_error err;
	ti_status st = open_fails("/tmp/tinspect-jit-noclass.pt", &err);
	EXPECT_INT(st, TI_E_CORRUPT);
	cr_expect(strstr(err.message, "'__torch__.SmallCNN'"), "message: %s", err.message);
	EXPECT_STR(err.member, "jit_cnn_traced/code/__torch__.py");
	remove("/tmp/tinspect-jit-noclass.pt");
}

Test(torchscript, a_bad_string_in_a_parameter_list_is_an_error_with_its_line)
{
	rewrite("fixtures/jit_cnn_traced.pt", "/tmp/tinspect-jit-badstr.pt", "jit_cnn_traced/code/__torch__.py",
	        "class SmallCNN(Module):\n  __parameters__ = [\"weight\\q\", ]\n");
	ti_error err;
	EXPECT_INT(open_fails("/tmp/tinspect-jit-badstr.pt", &err), TI_E_CORRUPT);
	cr_expect(strstr(err.message, "line 2"), "message: %s", err.message);
	remove("/tmp/tinspect-jit-badstr.pt");
}

Test(torchscript, a_declared_parameter_names_the_attribute_whatever_the_order)
{
	/* __parameters__ after the attribute, one name given in single quotes */
	rewrite("fixtures/jit_cnn_traced.pt", "/tmp/tinspect-jit-order.pt",
	        "jit_cnn_traced/code/__torch__/torch/nn/modules/linear.py",
	        "class Linear(Module):\n  bias : Tensor\n  weight : Tensor\n  training : bool\n"
	        "  in_features : Final[int] = 4\n  __parameters__ = ['weight', \"bias\", ]\n  __buffers__ = []\n"
	        "  def forward(self: __torch__.torch.nn.modules.linear.Linear,\n    x: Tensor) -> Tensor:\n"
	        "    return x\n");
	ti_source *src = open_ok("/tmp/tinspect-jit-order.pt");
	EXPECT_INT(ti_source_tensor_count(src), 9);
	/* declaration order is the slots' order: bias before weight */
	EXPECT_STR(ti_source_tensor_at(src, 7)->name, "fc.bias");
	EXPECT_STR(ti_source_tensor_at(src, 8)->name, "fc.weight");
	ti_source_close(src);
	remove("/tmp/tinspect-jit-order.pt");
}

/* Adds a record of n bytes to a new zip being written. */
static void add_record(zip_t *z, const char *name, const void *data, size_t n)
{
	zip_source_t *s = zip_source_buffer(z, data, n, 0);
	cr_assert(s);
	cr_assert(zip_file_add(z, name, s, ZIP_FL_OVERWRITE) >= 0);
}

Test(torchscript, modules_shared_at_every_level_stop_at_a_ceiling_not_after_2_to_the_depth)
{
	/* 40 levels, each module holding the one below under two names (a memo reference): 2^40 paths */
	static char pkl[8192];
	size_t n = 0;
	n += (size_t)snprintf(pkl + n, sizeof(pkl) - n, "\x80\x02" "c__torch__\nM\n)\x81}(ubq%c", 0);
	for (int i = 1; i < 40; i++)
		n += (size_t)snprintf(pkl + n, sizeof(pkl) - n,
		                      "c__torch__\nM\n)\x81}(X\x01%c%c%ca" "h%c" "X\x01%c%c%cb" "h%c" "ubq%c",
		                      0, 0, 0, i - 1, 0, 0, 0, i - 1, i);
	pkl[n++] = '.';
	static const char code[] = "class M(Module):\n  __parameters__ = []\n  __buffers__ = []\n"
	                           "  a : __torch__.M\n  b : __torch__.M\n";
	const char *path = "/tmp/tinspect-jit-dag.pt";
	remove(path);
	int zerr;
	zip_t *z = zip_open(path, ZIP_CREATE, &zerr);
	cr_assert(z);
	add_record(z, "dag/data.pkl", pkl, n);
	add_record(z, "dag/code/__torch__.py", code, sizeof(code) - 1);
	add_record(z, "dag/constants.pkl", "\x80\x02).", 4);
	add_record(z, "dag/version", "3\n", 2);
	cr_assert(zip_close(z) == 0);
	ti_error err;
	EXPECT_INT(open_fails(path, &err), TI_E_LIMIT);
	cr_expect(strstr(err.message, "modules"), "message: %s", err.message);
	remove(path);
}
