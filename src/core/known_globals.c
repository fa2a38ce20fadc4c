/*
 * known_globals.c - the table of globals torch.save writes, and what they mean.
 * Names from torch/_utils.py, torch/serialization.py, torch/_tensor.py and
 * Lib/pickle.py; the pickle machine maps __builtin__ to builtins first.
 */
#include "core/known_globals.h"

#include <string.h>

#include "core/torch_calls.h"
#include "tinspect/tensor.h"

#define FN(mod, nm, fn) {mod, nm, TI_G_CALLABLE, "function", fn}
#define CLASS(mod, nm, fn) {mod, nm, TI_G_CALLABLE, "type", fn}

static const struct ti_known_global table[] = {
	FN("torch._utils", "_rebuild_tensor", ti_call_rebuild_tensor),
	FN("torch._utils", "_rebuild_tensor_v2", ti_call_rebuild_tensor_v2),
	FN("torch._utils", "_rebuild_tensor_v3", ti_call_rebuild_tensor_v3),
	FN("torch._utils", "_rebuild_parameter", ti_call_rebuild_parameter),
	FN("torch._utils", "_rebuild_parameter_with_state", ti_call_rebuild_parameter_with_state),
	FN("torch._utils", "_rebuild_meta_tensor_no_storage", ti_call_rebuild_meta_tensor_no_storage),
	FN("torch._utils", "_rebuild_qtensor", ti_call_rebuild_qtensor),
	FN("torch._utils", "_rebuild_sparse_tensor", ti_call_rebuild_sparse_tensor),
	FN("torch._utils", "_rebuild_sparse_csr_tensor", ti_call_rebuild_sparse_csr_tensor),
	FN("torch._tensor", "_rebuild_from_type_v2", ti_call_rebuild_from_type_v2),
	FN("torch.serialization", "_get_layout", ti_call_get_layout),
	FN("_codecs", "encode", ti_call_codecs_encode),
	CLASS("collections", "OrderedDict", ti_call_ordered_dict),
	CLASS("builtins", "set", ti_call_set),
	CLASS("builtins", "frozenset", ti_call_frozenset),
	CLASS("builtins", "complex", ti_call_complex),
	CLASS("builtins", "bytearray", ti_call_bytearray),
	CLASS("builtins", "bytes", ti_call_bytes),
	CLASS("torch", "Size", ti_call_torch_size),
	CLASS("torch", "device", ti_call_torch_device),
	{"torch", "Tensor", TI_G_TENSOR_CLASS, "type", NULL},
	{"torch.nn.parameter", "Parameter", TI_G_TENSOR_CLASS, "type", NULL},
};

/* Rows matched by pattern rather than by exact name. */
static const struct ti_known_global dtype_row = {NULL, NULL, TI_G_DTYPE, "torch.dtype", NULL};
static const struct ti_known_global storage_row = {NULL, NULL, TI_G_STORAGE_CLASS, "type", NULL};
static const struct ti_known_global qscheme_row = {NULL, NULL, TI_G_QSCHEME, "torch.qscheme", NULL};

const struct ti_known_global *ti_known_global_find(const char *module, const char *name)
{
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name) && !strcmp(table[i].module, module))
			return &table[i];
	if (!strcmp(module, "torch")) {
		if (ti_dtype_from_torch_name(name) != TI_DT_INVALID)
			return &dtype_row;
		if (ti_qscheme_from_name(name) != TI_QS_NONE)
			return &qscheme_row;
	}
	/* torch.load's find_class takes any name containing "Storage" as a storage
	 * type, whatever its module (torch, torch.cuda, torch.storage). */
	if (strstr(name, "Storage") && !strncmp(module, "torch", 5))
		return &storage_row;
	return NULL;
}

