/*
 * embedding.c - embedding (Embedding through it): rows of the weight
 * gathered by int64 indices; an index outside the table is PyTorch's
 * IndexError. max_norm (which renormalises the weight in place) has no
 * kernel yet.
 */
#include <string.h>

#include "run/run_internal.h"

static ti_status k_embedding(rt_call *c, ti_error *err)
{
	rt_tensor *idx, *w, *ic, *wc, *y;
	ti_status st = rt_arg(c, "input", &idx, err);
	if (!st)
		st = rt_arg(c, "weight", &w, err);
	if (st)
		return st;
	const ti_arg *max_norm = ti_bound_get(&c->call->in, "max_norm");
	if (max_norm && max_norm->kind == TI_ARG_FLOAT)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'embedding' with max_norm");
	if (idx->dtype != TI_DT_INT64 || w->dtype != TI_DT_FLOAT32 || w->ndim != 2)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'embedding' on %s indices",
		               ti_dtype_name(idx->dtype));
	int64_t rows = w->shape[0], dim = w->shape[1], shape[RT_MAX_DIMS];
	if (idx->ndim + 1 > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'embedding' of %d-d indices", idx->ndim);
	memcpy(shape, idx->shape, (size_t)idx->ndim * sizeof(*shape));
	shape[idx->ndim] = dim;
	if ((st = rt_contiguous(c, idx, &ic, err)))
		return st;
	if ((st = rt_contiguous(c, w, &wc, err))) {
		rt_release(c->ex, ic);
		return st;
	}
	if ((st = rt_new(c, TI_DT_FLOAT32, idx->ndim + 1, shape, &y, err)))
		goto done;
	int64_t n = rt_numel(ic);
	const int64_t *ix = rt_i64(ic);
	for (int64_t i = 0; i < n && !st; i++) {
		int64_t r = ix[i];
		if (r < 0 || r >= rows) {
			st = TI_FAIL(err, TI_E_CORRUPT, "index out of range in self: index %lld of a table of %lld rows",
			             (long long)r, (long long)rows);
			break;
		}
		memcpy(rt_f32(y) + i * dim, rt_f32(wc) + r * dim, (size_t)dim * sizeof(float));
	}
	if (st)
		rt_release(c->ex, y);
	else
		st = rt_output(c, y, err);
done:
	rt_release(c->ex, ic);
	rt_release(c->ex, wc);
	return st;
}

const rt_kernel rt_kernels_embedding[] = {
	{"embedding", false, k_embedding, false},
	{NULL, false, NULL, false},
};
