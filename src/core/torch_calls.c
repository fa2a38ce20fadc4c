/*
 * torch_calls.c - torch.save's rebuild functions and types, as metadata.
 *
 * Each function mirrors the one torch.load would call (torch/_utils.py,
 * torch/_tensor.py, torch/serialization.py) and checks its arguments the
 * way a careful caller must: kinds, counts, ranges, and that every view
 * fits inside its storage. The persistent-id and BUILD hooks are here too.
 */
#include <inttypes.h>
#include <string.h>

#include "core/findings.h"
#include "core/known_global.h"
#include "core/torch_calls.h"
#include "core/torch_state.h"
#include "core/value_build.h"
#include "tinspect/tensor.h"

#define NOMEM(err) TI_FAIL((err), TI_E_LIMIT, "metadata exceeds the memory ceiling")

/* ---- arguments ---- */

static ti_status arity(const ti_value *args, size_t min, size_t max, const char *fn, ti_error *err)
{
	size_t n = args->as.seq.count;
	if (n < min || n > max)
		return TI_FAIL(err, TI_E_CORRUPT, "%s takes %zu to %zu arguments, got %zu", fn, min, max, n);
	return TI_OK;
}

static const ti_value *arg(const ti_value *args, size_t i)
{
	return i < args->as.seq.count ? args->as.seq.items[i] : NULL;
}

static ti_status want_dtype(const ti_value *v, ti_dtype *dt, const char *fn, ti_error *err)
{
	if (!ti_global_is(v, TI_G_DTYPE))
		return TI_FAIL(err, TI_E_CORRUPT, "%s expects a torch dtype, got %s", fn, v ? ti_kind_name(v->kind) : "nothing");
	*dt = ti_dtype_from_torch_name(v->as.global->name);
	return TI_OK;
}

static ti_status want_bool(const ti_value *v, bool *b, const char *fn, ti_error *err)
{
	if (ti_value_as_bool(v, b, err))
		return TI_FAIL(err, TI_E_CORRUPT, "%s: requires_grad is a %s, not a bool", fn, v ? ti_kind_name(v->kind) : "nothing");
	return TI_OK;
}

/*
 * A tensor with its shape and stride after it, in one allocation; stride
 * NULL for the sparse layouts, which have none.
 */
static ti_tensor *new_tensor(ti_torch *t, int ndim, const int64_t *shape, const int64_t *stride)
{
	size_t dims = (size_t)ndim * (stride ? 2 : 1);
	ti_tensor *tensor = ti_arena_alloc(t->arena, sizeof(*tensor) + dims * sizeof(int64_t));
	if (!tensor)
		return NULL;
	int64_t *d = (int64_t *)(tensor + 1);
	memcpy(d, shape, (size_t)ndim * sizeof(int64_t));
	tensor->shape = d;
	if (stride) {
		memcpy(d + ndim, stride, (size_t)ndim * sizeof(int64_t));
		tensor->stride = d + ndim;
	}
	tensor->ndim = ndim;
	t->tensor_count++;
	return tensor;
}

/* The tensor's own extension, made on first need. */
static ti_tensor_ext *ext(ti_torch *t, ti_tensor *tensor)
{
	if (!tensor->ext)
		tensor->ext = ti_arena_alloc(t->arena, sizeof(ti_tensor_ext));
	return (ti_tensor_ext *)tensor->ext;
}

static ti_status wrap(ti_torch *t, ti_tensor *tensor, ti_value **out, ti_error *err)
{
	ti_value *v = ti_value_new(t->arena, TI_TENSOR);
	if (!v)
		return NOMEM(err);
	v->as.tensor = tensor;
	*out = v;
	return TI_OK;
}

/* Reads a size or stride tuple into out (TI_MAX_DIMS items). */
static ti_status dims(const ti_value *v, int64_t *out, int *ndim, const char *what, ti_error *err)
{
	size_t n = 0;
	*ndim = 0;
	if (ti_value_as_int_array(v, out, TI_MAX_DIMS, &n, err)) {
		char msg[TI_ERROR_MESSAGE_MAX];
		memcpy(msg, err->message, sizeof(msg));
		return TI_FAIL(err, err->code, "tensor %s: %s", what, msg);
	}
	*ndim = (int)n;
	return TI_OK;
}

/* The metadata argument of v2/v3: {'conj': True} / {'neg': True}, sent only when set. */
static ti_status tensor_metadata(ti_tensor *tensor, const ti_value *meta, ti_error *err)
{
	if (!meta || meta->kind == TI_NONE)
		return TI_OK;
	if (meta->kind != TI_DICT)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor metadata is a %s, not a dict", ti_kind_name(meta->kind));
	const ti_value *conj = ti_dict_get(meta, "conj"), *neg = ti_dict_get(meta, "neg");
	if ((conj && ti_value_as_bool(conj, &tensor->conj, err)) || (neg && ti_value_as_bool(neg, &tensor->neg, err)))
		return err->code;
	return TI_OK;
}

/*
 * The common core of the strided rebuilds: storage, offset, size, stride.
 * dtype is TI_DT_INVALID to take the storage's own (typed storages).
 */
static ti_status strided(ti_torch *t, const ti_value *const *a, ti_dtype dtype, const char *fn,
                         ti_tensor **out, ti_error *err)
{
	const ti_value *sv = a[0];
	if (!sv || sv->kind != TI_STORAGE)
		return TI_FAIL(err, TI_E_CORRUPT, "%s expects a storage, got %s", fn, sv ? ti_kind_name(sv->kind) : "nothing");
	ti_storage *st = sv->as.storage;
	int64_t shape[TI_MAX_DIMS], stride[TI_MAX_DIMS], offset;
	int nshape, nstride;
	if (ti_value_as_int(a[1], &offset, err) ||
	    dims(a[2], shape, &nshape, "size", err) || dims(a[3], stride, &nstride, "stride", err))
		return err->code;
	if (nshape != nstride)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor has %d sizes but %d strides", nshape, nstride);
	ti_tensor *tensor = new_tensor(t, nshape, shape, stride);
	if (!tensor)
		return NOMEM(err);
	tensor->storage_offset = offset;
	tensor->storage = st;
	tensor->rebuild = fn;
	if (dtype == TI_DT_INVALID) {
		if (st->untyped)
			return TI_FAIL(err, TI_E_CORRUPT, "%s on an untyped storage needs a dtype", fn);
		dtype = st->dtype;
	} else if (st->untyped && st->dtype == TI_DT_UINT8) {
		st->dtype = dtype; /* an untyped storage takes the type of the first tensor that views it */
	}
	tensor->dtype = dtype;
	size_t esize = ti_dtype_size(dtype);
	int64_t extent;
	if (ti_shape_check(nshape, tensor->shape, tensor->stride, tensor->storage_offset, &tensor->numel, &extent, err))
		return err->code;
	/* quint4x2 and quint2x4 pack 2 or 4 values per byte, each innermost row
	 * rounded up to whole bytes (aten/src/ATen/quantized/Quantizer.cpp): the
	 * view's extent in bytes is rows * ceil(last / per_byte). */
	int per_byte = dtype == TI_DT_QUINT4X2 ? 2 : dtype == TI_DT_QUINT2X4 ? 4 : 1;
	if (per_byte > 1 && extent > 0) {
		int64_t last = nshape ? shape[nshape - 1] : 1;
		int64_t rows = last ? tensor->numel / last : 0;
		extent = tensor->storage_offset + rows * ((last + per_byte - 1) / per_byte);
	}
	/* The view must fit: torch checks this in set_() (checkInBoundsForStorage). */
	int64_t need_bytes;
	if (__builtin_mul_overflow(extent, (int64_t)esize, &need_bytes))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor extent overflows 64 bits");
	if (need_bytes > st->nbytes)
		return TI_FAIL(err, TI_E_CORRUPT,
		               "tensor of shape and stride needing %" PRId64 " bytes views storage '%s' of %" PRId64 " bytes",
		               need_bytes, st->key, st->nbytes);
	if (__builtin_mul_overflow(tensor->numel, (int64_t)esize, &tensor->nbytes))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor byte size overflows 64 bits");
	*out = tensor;
	return TI_OK;
}

static ti_status requires_grad_arg(ti_tensor *tensor, const ti_value *v, const char *fn, ti_error *err)
{
	return want_bool(v, &tensor->requires_grad, fn, err);
}

/* ---- tensors ---- */

TI_CALL_DECL(ti_call_rebuild_tensor)
{
	(void)how;
	ti_tensor *tensor;
	if (arity(args, 4, 4, "_rebuild_tensor", err) ||
	    strided(t, (const ti_value *const *)args->as.seq.items, TI_DT_INVALID, "_rebuild_tensor", &tensor, err))
		return err->code;
	return wrap(t, tensor, out, err);
}

TI_CALL_DECL(ti_call_rebuild_tensor_v2)
{
	(void)how;
	/* storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata] */
	ti_tensor *tensor;
	if (arity(args, 6, 7, "_rebuild_tensor_v2", err) ||
	    strided(t, (const ti_value *const *)args->as.seq.items, TI_DT_INVALID, "_rebuild_tensor_v2", &tensor, err) ||
	    requires_grad_arg(tensor, arg(args, 4), "_rebuild_tensor_v2", err) ||
	    tensor_metadata(tensor, arg(args, 6), err))
		return err->code;
	return wrap(t, tensor, out, err);
}

TI_CALL_DECL(ti_call_rebuild_tensor_v3)
{
	(void)how;
	/* storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata] */
	ti_tensor *tensor;
	ti_dtype dtype;
	if (arity(args, 7, 8, "_rebuild_tensor_v3", err) ||
	    want_dtype(arg(args, 6), &dtype, "_rebuild_tensor_v3", err) ||
	    strided(t, (const ti_value *const *)args->as.seq.items, dtype, "_rebuild_tensor_v3", &tensor, err) ||
	    requires_grad_arg(tensor, arg(args, 4), "_rebuild_tensor_v3", err) ||
	    tensor_metadata(tensor, arg(args, 7), err))
		return err->code;
	return wrap(t, tensor, out, err);
}

/* A Parameter is its data with a flag: copy, since the data may be shared. */
static ti_status as_parameter(ti_torch *t, const ti_value *data, const ti_value *requires_grad,
                              const char *fn, ti_value **out, ti_error *err)
{
	if (!data || data->kind != TI_TENSOR)
		return TI_FAIL(err, TI_E_CORRUPT, "%s expects a tensor, got %s", fn, data ? ti_kind_name(data->kind) : "nothing");
	ti_tensor *p = ti_arena_alloc(t->arena, sizeof(*p));
	if (!p)
		return NOMEM(err);
	*p = *data->as.tensor;
	if (p->ext) { /* its own copy, which _rebuild_from_type_v2 may change */
		ti_tensor_ext *x = ti_arena_alloc(t->arena, sizeof(*x));
		if (!x)
			return NOMEM(err);
		*x = *p->ext;
		p->ext = x;
	}
	p->is_parameter = true;
	if (want_bool(requires_grad, &p->requires_grad, fn, err))
		return err->code;
	return wrap(t, p, out, err);
}

TI_CALL_DECL(ti_call_rebuild_parameter)
{
	(void)how;
	/* data, requires_grad, backward_hooks */
	if (arity(args, 3, 3, "_rebuild_parameter", err))
		return err->code;
	return as_parameter(t, arg(args, 0), arg(args, 1), "_rebuild_parameter", out, err);
}

TI_CALL_DECL(ti_call_rebuild_parameter_with_state)
{
	(void)how;
	/* data, requires_grad, backward_hooks, state: the state sets Python attributes only */
	if (arity(args, 4, 4, "_rebuild_parameter_with_state", err))
		return err->code;
	return as_parameter(t, arg(args, 0), arg(args, 1), "_rebuild_parameter_with_state", out, err);
}

TI_CALL_DECL(ti_call_rebuild_meta_tensor_no_storage)
{
	(void)how;
	/* dtype, size, stride, requires_grad: a tensor saved from the meta device, no record */
	int64_t shape[TI_MAX_DIMS], stride[TI_MAX_DIMS];
	ti_dtype dtype;
	bool requires_grad;
	int ns, nt;
	if (arity(args, 4, 4, "_rebuild_meta_tensor_no_storage", err) ||
	    want_dtype(arg(args, 0), &dtype, "_rebuild_meta_tensor_no_storage", err) ||
	    dims(arg(args, 1), shape, &ns, "size", err) || dims(arg(args, 2), stride, &nt, "stride", err) ||
	    want_bool(arg(args, 3), &requires_grad, "_rebuild_meta_tensor_no_storage", err))
		return err->code;
	if (ns != nt)
		return TI_FAIL(err, TI_E_CORRUPT, "tensor has %d sizes but %d strides", ns, nt);
	ti_tensor *tensor = new_tensor(t, ns, shape, stride);
	if (!tensor)
		return NOMEM(err);
	tensor->dtype = dtype;
	tensor->requires_grad = requires_grad;
	tensor->rebuild = "_rebuild_meta_tensor_no_storage";
	if (ti_shape_check(ns, shape, stride, 0, &tensor->numel, NULL, err))
		return err->code;
	if (__builtin_mul_overflow(tensor->numel, (int64_t)ti_dtype_size(tensor->dtype), &tensor->nbytes))
		return TI_FAIL(err, TI_E_CORRUPT, "tensor byte size overflows 64 bits");
	return wrap(t, tensor, out, err);
}

TI_CALL_DECL(ti_call_rebuild_qtensor)
{
	(void)how;
	/* storage, storage_offset, size, stride, quantizer_params, requires_grad, backward_hooks */
	ti_tensor *tensor;
	if (arity(args, 7, 7, "_rebuild_qtensor", err) ||
	    strided(t, (const ti_value *const *)args->as.seq.items, TI_DT_INVALID, "_rebuild_qtensor", &tensor, err) ||
	    requires_grad_arg(tensor, arg(args, 5), "_rebuild_qtensor", err))
		return err->code;
	const ti_value *q = arg(args, 4);
	const ti_seq *qp;
	if (ti_value_as_seq(q, &qp, err) || qp->count < 1 || !ti_global_is(qp->items[0], TI_G_QSCHEME))
		return TI_FAIL(err, TI_E_CORRUPT, "_rebuild_qtensor: quantizer parameters do not start with a qscheme");
	ti_tensor_ext *x = ext(t, tensor);
	if (!x)
		return NOMEM(err);
	x->quant.scheme = ti_qscheme_from_name(qp->items[0]->as.global->name);
	switch (x->quant.scheme) {
	case TI_QS_PER_TENSOR_AFFINE:
	case TI_QS_PER_TENSOR_SYMMETRIC:
		/* (qscheme, scale, zero_point) */
		if (qp->count != 3 || ti_value_as_float(qp->items[1], &x->quant.scale, err) ||
		    ti_value_as_int(qp->items[2], &x->quant.zero_point, err))
			return TI_FAIL(err, TI_E_CORRUPT, "_rebuild_qtensor: per-tensor parameters are not (qscheme, scale, zero_point)");
		break;
	default:
		/* (qscheme, scales, zero_points, axis); float_qparams is written as per_channel_affine */
		if (qp->count != 4 || qp->items[1]->kind != TI_TENSOR || qp->items[2]->kind != TI_TENSOR ||
		    ti_value_as_int(qp->items[3], &x->quant.axis, err))
			return TI_FAIL(err, TI_E_CORRUPT, "_rebuild_qtensor: per-channel parameters are not (qscheme, scales, zero_points, axis)");
		x->quant.scales = qp->items[1]->as.tensor;
		x->quant.zero_points = qp->items[2]->as.tensor;
		if (x->quant.axis < 0 || x->quant.axis >= (tensor->ndim ? tensor->ndim : 1))
			return TI_FAIL(err, TI_E_CORRUPT, "_rebuild_qtensor: axis %" PRId64 " out of range", x->quant.axis);
		break;
	}
	return wrap(t, tensor, out, err);
}

/* A sparse tensor is its components: COO (indices, values), compressed (crow/ccol, col/row, values). */
static ti_status sparse(ti_torch *t, ti_layout layout, const ti_value *data, const char *fn,
                        ti_value **out, ti_error *err)
{
	const ti_seq *d;
	if (ti_value_as_seq(data, &d, err))
		return err->code;
	static const char *const coo[] = {"indices", "values"};
	static const char *const csr[] = {"crow_indices", "col_indices", "values"};
	static const char *const csc[] = {"ccol_indices", "row_indices", "values"};
	static const char *const bsr[] = {"crow_indices", "col_indices", "values"};
	static const char *const bsc[] = {"ccol_indices", "row_indices", "values"};
	const char *const *names;
	size_t n;
	switch (layout) {
	case TI_LAYOUT_SPARSE_COO: names = coo; n = 2; break;
	case TI_LAYOUT_SPARSE_CSR: names = csr; n = 3; break;
	case TI_LAYOUT_SPARSE_CSC: names = csc; n = 3; break;
	case TI_LAYOUT_SPARSE_BSR: names = bsr; n = 3; break;
	case TI_LAYOUT_SPARSE_BSC: names = bsc; n = 3; break;
	default: return TI_FAIL(err, TI_E_UNSUPPORTED, "%s with layout %s", fn, ti_layout_name(layout));
	}
	/* COO: (indices, values, size[, is_coalesced]); compressed: (..., values, size) */
	if (d->count < n + 1 || d->count > n + 2)
		return TI_FAIL(err, TI_E_CORRUPT, "%s: %s data has %" PRIu32 " items", fn, ti_layout_name(layout), d->count);
	for (size_t i = 0; i < n; i++)
		if (d->items[i]->kind != TI_TENSOR)
			return TI_FAIL(err, TI_E_CORRUPT, "%s: %s is a %s, not a tensor", fn, names[i], ti_kind_name(d->items[i]->kind));
	int64_t shape[TI_MAX_DIMS];
	int ndim;
	if (dims(d->items[n], shape, &ndim, "size", err))
		return err->code;
	ti_tensor *tensor = new_tensor(t, ndim, shape, NULL);
	ti_tensor_ext *x = tensor ? ext(t, tensor) : NULL;
	if (!x)
		return NOMEM(err);
	tensor->layout = layout;
	tensor->rebuild = fn;
	for (size_t i = 0; i < n; i++) {
		x->components[i] = d->items[i]->as.tensor;
		x->component_names[i] = names[i];
		tensor->nbytes += d->items[i]->as.tensor->nbytes;
	}
	x->component_count = n;
	tensor->dtype = x->components[n - 1]->dtype;
	tensor->requires_grad = x->components[n - 1]->requires_grad;
	if (ti_shape_check(ndim, shape, NULL, 0, &tensor->numel, NULL, err))
		return err->code;
	if (d->count == n + 2 && d->items[n + 1]->kind != TI_NONE && ti_value_as_bool(d->items[n + 1], &x->coalesced, err))
		return err->code;
	return wrap(t, tensor, out, err);
}

static ti_status want_layout(const ti_value *v, ti_layout *layout, const char *fn, ti_error *err)
{
	/* Layouts arrive as the result of torch.serialization._get_layout: a device-like string value. */
	if (!v || v->kind != TI_GLOBAL || strcmp(v->as.global->module, "torch") ||
	    (*layout = ti_layout_from_name(v->as.global->name)) == TI_LAYOUT_COUNT)
		return TI_FAIL(err, TI_E_CORRUPT, "%s expects a torch layout", fn);
	return TI_OK;
}

TI_CALL_DECL(ti_call_rebuild_sparse_tensor)
{
	(void)how;
	ti_layout layout;
	if (arity(args, 2, 2, "_rebuild_sparse_tensor", err) ||
	    want_layout(arg(args, 0), &layout, "_rebuild_sparse_tensor", err))
		return err->code;
	return sparse(t, layout, arg(args, 1), "_rebuild_sparse_tensor", out, err);
}

TI_CALL_DECL(ti_call_rebuild_sparse_csr_tensor)
{
	(void)how;
	ti_layout layout;
	if (arity(args, 2, 2, "_rebuild_sparse_csr_tensor", err) ||
	    want_layout(arg(args, 0), &layout, "_rebuild_sparse_csr_tensor", err))
		return err->code;
	return sparse(t, layout, arg(args, 1), "_rebuild_sparse_csr_tensor", out, err);
}

TI_CALL_DECL(ti_call_rebuild_from_type_v2)
{
	(void)how;
	/* func, new_type, args, state: ret = func(*args), then as_subclass(new_type) and state */
	if (arity(args, 4, 4, "_rebuild_from_type_v2", err))
		return err->code;
	const ti_value *func = arg(args, 0), *type = arg(args, 1), *inner = arg(args, 2);
	if (!func || func->kind != TI_GLOBAL || !func->as.global->known || !func->as.global->known->call ||
	    !inner || inner->kind != TI_TUPLE)
		return TI_OK; /* not a rebuild we know: leave it to be recorded as an object */
	ti_value *result = NULL;
	if (func->as.global->known->call(t, inner, TI_CALL_REDUCE, &result, err))
		return err->code;
	if (result && result->kind == TI_TENSOR && type && type->kind == TI_GLOBAL) {
		ti_tensor *tensor = result->as.tensor;
		if (!strcmp(type->as.global->module, "torch.nn.parameter") && !strcmp(type->as.global->name, "Parameter"))
			tensor->is_parameter = true;
		else if (!ti_global_is(type, TI_G_TENSOR_CLASS)) {
			ti_tensor_ext *x = ext(t, tensor);
			if (!x || !(x->subclass = ti_arena_printf(t->arena, "%s.%s", type->as.global->module, type->as.global->name)))
				return NOMEM(err);
		}
	}
	*out = result;
	return TI_OK;
}

/* ---- Python and torch types ---- */

TI_CALL_DECL(ti_call_get_layout)
{
	(void)how;
	/* _get_layout('torch.sparse_coo') returns the layout object, named like a global */
	const char *name;
	if (arity(args, 1, 1, "_get_layout", err) || ti_value_as_str(arg(args, 0), &name, err))
		return err->code;
	if (ti_layout_from_name(name) == TI_LAYOUT_COUNT)
		return TI_FAIL(err, TI_E_CORRUPT, "unknown layout '%s'", name);
	ti_value *v = ti_value_new(t->arena, TI_GLOBAL);
	if (!v)
		return NOMEM(err);
	v->as.global->module = "torch";
	v->as.global->name = ti_layout_name(ti_layout_from_name(name));
	v->as.global->offset = -1;
	*out = v;
	return TI_OK;
}

TI_CALL_DECL(ti_call_ordered_dict)
{
	(void)how;
	/* OrderedDict() or OrderedDict([(k, v), ...]) */
	ti_value *d = ti_value_new(t->arena, TI_DICT);
	if (!d)
		return NOMEM(err);
	d->flags = TI_F_ORDERED;
	if (args->as.seq.count > 1)
		return TI_FAIL(err, TI_E_CORRUPT, "OrderedDict takes one argument, got %zu", (size_t)args->as.seq.count);
	if (args->as.seq.count == 1) {
		const ti_seq *pairs;
		if (ti_value_as_seq(arg(args, 0), &pairs, err))
			return err->code;
		for (size_t i = 0; i < pairs->count; i++) {
			const ti_seq *kv;
			if (ti_value_as_seq(pairs->items[i], &kv, err) || kv->count != 2)
				return TI_FAIL(err, TI_E_CORRUPT, "OrderedDict item is not a pair");
			if (ti_dict_push(t->arena, d, kv->items[0], kv->items[1], SIZE_MAX, err))
				return err->code;
		}
	}
	*out = d;
	return TI_OK;
}

static ti_status make_set(ti_torch *t, const ti_value *args, ti_kind kind, ti_value **out, ti_error *err)
{
	const ti_seq *items = NULL;
	if (args->as.seq.count > 1 || (args->as.seq.count == 1 && ti_value_as_seq(arg(args, 0), &items, err)))
		return TI_FAIL(err, TI_E_CORRUPT, "%s takes one list", ti_kind_name(kind));
	*out = ti_value_new_seq(t->arena, kind, items ? items->items : NULL, items ? items->count : 0);
	return *out ? TI_OK : NOMEM(err);
}

TI_CALL_DECL(ti_call_set) { (void)how; return make_set(t, args, TI_SET, out, err); }
TI_CALL_DECL(ti_call_frozenset) { (void)how; return make_set(t, args, TI_FROZENSET, out, err); }

TI_CALL_DECL(ti_call_complex)
{
	(void)how;
	ti_value *v = ti_value_new(t->arena, TI_COMPLEX);
	if (!v)
		return NOMEM(err);
	if (arity(args, 0, 2, "complex", err) ||
	    (arg(args, 0) && ti_value_as_float(arg(args, 0), &v->as.complex.re, err)) ||
	    (arg(args, 1) && ti_value_as_float(arg(args, 1), &v->as.complex.im, err)))
		return err->code;
	*out = v;
	return TI_OK;
}

/* Python 3 str (UTF-8 here) to latin-1 bytes, as _codecs.encode(s, 'latin1') does. */
static ti_status latin1(ti_torch *t, const ti_value *s, ti_value **out, ti_error *err)
{
	if (!s || s->kind != TI_STR)
		return TI_FAIL(err, TI_E_CORRUPT, "bytes are encoded from a %s, not a str", s ? ti_kind_name(s->kind) : "nothing");
	const unsigned char *p = (const unsigned char *)s->as.bytes.data;
	size_t n = s->as.bytes.size, len = 0;
	char *buf = ti_arena_alloc(t->arena, n + 1);
	if (!buf)
		return NOMEM(err);
	for (size_t i = 0; i < n; i++) {
		if (p[i] < 0x80) {
			buf[len++] = (char)p[i];
		} else if ((p[i] == 0xc2 || p[i] == 0xc3) && i + 1 < n) {
			buf[len++] = (char)(((p[i] & 0x03) << 6) | (p[i + 1] & 0x3f));
			i++;
		} else {
			return TI_FAIL(err, TI_E_CORRUPT, "bytes encoded as latin-1 hold a character beyond U+00FF");
		}
	}
	ti_value *v = ti_value_new(t->arena, TI_BYTES);
	if (!v)
		return NOMEM(err);
	v->as.bytes.data = buf;
	v->as.bytes.size = len;
	*out = v;
	return TI_OK;
}

TI_CALL_DECL(ti_call_codecs_encode)
{
	(void)how;
	/* encode(str, 'latin1'): protocol 2's spelling of bytes */
	const char *encoding = "utf-8";
	if (arity(args, 1, 2, "_codecs.encode", err) || (arg(args, 1) && ti_value_as_str(arg(args, 1), &encoding, err)))
		return err->code;
	if (strcmp(encoding, "latin1") && strcmp(encoding, "latin-1") && strcmp(encoding, "iso-8859-1"))
		return TI_OK; /* another codec: keep the call as an object rather than guess */
	return latin1(t, arg(args, 0), out, err);
}

TI_CALL_DECL(ti_call_bytearray)
{
	(void)how;
	/* bytearray(b'...') at protocol 3+; bytearray('latin-1 text', 'latin-1') at protocol 2 */
	const ti_value *src = arg(args, 0);
	ti_status s = TI_OK;
	if (!src) {
		*out = ti_value_new(t->arena, TI_BYTES);
	} else if (src->kind == TI_BYTES) {
		*out = ti_value_new_str(t->arena, TI_BYTES, src->as.bytes.data, src->as.bytes.size);
	} else if (src->kind == TI_STR) {
		s = latin1(t, src, out, err);
	} else {
		return TI_OK;
	}
	if (s)
		return s;
	if (!*out)
		return NOMEM(err);
	(*out)->flags |= TI_F_BYTEARRAY;
	return TI_OK;
}

TI_CALL_DECL(ti_call_bytes)
{
	/* bytes() is how protocol 2 writes b''; bytes('text', 'latin-1') like bytearray */
	if (args->as.seq.count == 0) {
		*out = ti_value_new_str(t->arena, TI_BYTES, "", 0);
		return *out ? TI_OK : NOMEM(err);
	}
	ti_status s = ti_call_bytearray(t, args, how, out, err);
	if (!s && *out)
		(*out)->flags &= ~(unsigned)TI_F_BYTEARRAY;
	return s;
}

TI_CALL_DECL(ti_call_torch_size)
{
	(void)how;
	const ti_seq *dims_;
	if (arity(args, 0, 1, "torch.Size", err))
		return err->code;
	if (args->as.seq.count == 0) {
		*out = ti_value_new(t->arena, TI_TUPLE);
	} else {
		if (ti_value_as_seq(arg(args, 0), &dims_, err))
			return err->code;
		*out = ti_value_new_seq(t->arena, TI_TUPLE, dims_->items, dims_->count);
	}
	if (!*out)
		return NOMEM(err);
	(*out)->flags |= TI_F_TORCH_SIZE;
	return TI_OK;
}

TI_CALL_DECL(ti_call_torch_device)
{
	(void)how;
	/* device('cuda', 0) or device('cuda:0') */
	const char *type;
	int64_t index = -1;
	if (arity(args, 1, 2, "torch.device", err) || ti_value_as_str(arg(args, 0), &type, err) ||
	    (arg(args, 1) && arg(args, 1)->kind != TI_NONE && ti_value_as_int(arg(args, 1), &index, err)))
		return err->code;
	const char *text = index >= 0 ? ti_arena_printf(t->arena, "%s:%" PRId64, type, index) : ti_arena_strdup(t->arena, type);
	ti_value *v = text ? ti_value_new_str(t->arena, TI_DEVICE, text, strlen(text)) : NULL;
	if (!v)
		return NOMEM(err);
	*out = v;
	return TI_OK;
}
