/*
 * tensors.c - what kernels call: the values by meta tensor, tensors and
 * their storages (blocks kept for reuse under the plan's ceiling), views,
 * outputs, arguments, and the threads a kernel splits its work over. Below
 * run.c's walks, the kernel table and the scratch plan, which all use it.
 */
#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/exec.h"
#include "run/run_internal.h"
#include "tinspect/cast.h"
#include "util/ptr_hash.h"

/* ---- the value map ---- */

entry *rt_entry_find(rt_exec *ex, const void *meta)
{
	if (!ex->key_cap)
		return NULL;
	for (size_t i = ti_ptr_hash(meta) & (ex->key_cap - 1);; i = (i + 1) & (ex->key_cap - 1)) {
		if (!ex->keys[i])
			return NULL;
		if (ex->keys[i] == meta)
			return &ex->entries[ex->slots[i]];
	}
}

entry *rt_entry_add(rt_exec *ex, const void *meta)
{
	entry *e = rt_entry_find(ex, meta);
	if (e)
		return e;
	if (2 * (ex->count + 1) > ex->key_cap) {
		size_t cap = ex->key_cap ? 2 * ex->key_cap : 1024;
		const void **keys = calloc(cap, sizeof(*keys));
		int *slots = calloc(cap, sizeof(*slots));
		if (!keys || !slots) {
			free(keys);
			free(slots);
			return NULL;
		}
		for (size_t k = 0; k < ex->count; k++) {
			size_t i = ti_ptr_hash(ex->entries[k].meta) & (cap - 1);
			while (keys[i])
				i = (i + 1) & (cap - 1);
			keys[i] = ex->entries[k].meta;
			slots[i] = (int)k;
		}
		free(ex->keys);
		free(ex->slots);
		ex->keys = keys;
		ex->slots = slots;
		ex->key_cap = cap;
	}
	if (ex->count == ex->cap) {
		size_t cap = ex->cap ? 2 * ex->cap : 512;
		entry *more = realloc(ex->entries, cap * sizeof(*more));
		if (!more)
			return NULL;
		ex->entries = more;
		ex->cap = cap;
	}
	size_t i = ti_ptr_hash(meta) & (ex->key_cap - 1);
	while (ex->keys[i])
		i = (i + 1) & (ex->key_cap - 1);
	ex->keys[i] = meta;
	ex->slots[i] = (int)ex->count;
	e = &ex->entries[ex->count++];
	*e = (entry){.meta = meta, .last_use = -1};
	return e;
}

/* ---- tensors and storages ---- */

int64_t rt_numel(const rt_tensor *t)
{
	int64_t n = 1;
	for (int i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

void rt_contiguous_strides(int ndim, const int64_t *shape, int64_t *stride)
{
	int64_t s = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		stride[i] = s;
		s *= shape[i] > 1 ? shape[i] : 1;
	}
}

bool rt_is_contiguous(const rt_tensor *t)
{
	int64_t s = 1;
	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] != 1 && t->stride[i] != s)
			return false;
		s *= t->shape[i];
	}
	return true;
}

/*
 * Freed blocks are kept for the next request of the same size, as
 * PyTorch's allocator keeps its: a fresh block costs a page fault per 4 KiB
 * on first touch (a fifth of a transformer's forward), and a run allocates
 * the same few sizes layer after layer. What is live and what is kept never
 * passes the planned peak, so the run's memory stays within what was
 * checked against the ceiling.
 */
static void give_block(rt_exec *ex, void *data, size_t bytes)
{
	if (!data)
		return;
	if (ex->cached == RT_CACHE_BLOCKS || ex->live + ex->cached_bytes + bytes > ex->ceiling) {
		free(data);
		return;
	}
	ex->cache[ex->cached++] = (struct block){data, bytes};
	ex->cached_bytes += bytes;
}

/* A kept block of exactly bytes, or NULL; with none, kept blocks go until a new one fits under the peak. */
static void *take_block(rt_exec *ex, size_t bytes)
{
	for (int i = ex->cached - 1; i >= 0; i--)
		if (ex->cache[i].bytes == bytes) {
			void *data = ex->cache[i].data;
			ex->cache[i] = ex->cache[--ex->cached];
			ex->cached_bytes -= bytes;
			return data;
		}
	while (ex->cached && ex->live + ex->cached_bytes + bytes > ex->ceiling) {
		ex->cached--;
		ex->cached_bytes -= ex->cache[ex->cached].bytes;
		free(ex->cache[ex->cached].data);
	}
	return NULL;
}

void rt_cache_drop(rt_exec *ex)
{
	while (ex->cached)
		free(ex->cache[--ex->cached].data);
	ex->cached_bytes = 0;
}

static void storage_drop(rt_exec *ex, rt_storage *s)
{
	if (--s->refs > 0)
		return;
	ex->live -= s->bytes;
	give_block(ex, s->data, (s->bytes + 63) & ~(size_t)63);
	free(s);
}

void rt_release(rt_exec *ex, rt_tensor *t)
{
	if (!t || --t->refs > 0)
		return;
	storage_drop(ex, t->storage);
	free(t);
}

/*
 * The dtype a value of dtype dt is held in while kernels compute: every
 * floating type in float32 (PyTorch's CPU kernels compute float16 and
 * bfloat16 in float32 too; the result is rounded back after each kernel,
 * round_outputs), integers in int64, bool as bool. TI_DT_INVALID: not run.
 */
static const ti_dtype held_as_table[TI_DT_COUNT] = {
	[TI_DT_FLOAT32] = TI_DT_FLOAT32, [TI_DT_FLOAT64] = TI_DT_FLOAT32, [TI_DT_FLOAT16] = TI_DT_FLOAT32,
	[TI_DT_BFLOAT16] = TI_DT_FLOAT32, [TI_DT_INT64] = TI_DT_INT64,    [TI_DT_INT32] = TI_DT_INT64,
	[TI_DT_INT16] = TI_DT_INT64,     [TI_DT_INT8] = TI_DT_INT64,      [TI_DT_UINT8] = TI_DT_INT64,
	[TI_DT_BOOL] = TI_DT_BOOL,
};

ti_dtype rt_held_as(ti_dtype dt) { return dt > TI_DT_INVALID && dt < TI_DT_COUNT ? held_as_table[dt] : TI_DT_INVALID; }

ti_status rt_tensor_make(rt_exec *ex, ti_dtype dtype, int ndim, const int64_t *shape, bool data, rt_tensor **out,
                          ti_error *err)
{
	if (ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for tensors of %d dimensions", ndim);
	rt_tensor *t = calloc(1, sizeof(*t));
	rt_storage *s = calloc(1, sizeof(*s));
	if (!t || !s) {
		free(t);
		free(s);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	t->dtype = dtype;
	t->ndim = ndim;
	if (ndim)
		memcpy(t->shape, shape, (size_t)ndim * sizeof(*shape));
	rt_contiguous_strides(ndim, t->shape, t->stride);
	t->storage = s;
	t->refs = 1;
	s->refs = 1;
	s->bytes = (size_t)rt_numel(t) * ti_dtype_size(dtype);
	if (data && s->bytes) {
		/* 64-byte lines: sgemm and the vector loops like them aligned */
		size_t bytes = (s->bytes + 63) & ~(size_t)63;
		if (!(s->data = take_block(ex, bytes)) && posix_memalign(&s->data, 64, bytes)) {
			free(t);
			free(s);
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for a tensor of %zu bytes", bytes);
		}
	}
	ex->live += s->bytes;
	if (ex->live > ex->peak)
		ex->peak = ex->live;
	if (ex->live + ex->scratch_held > ex->kernel_high)
		ex->kernel_high = ex->live + ex->scratch_held;
	*out = t;
	return TI_OK;
}

ti_status rt_new(rt_call *c, ti_dtype dtype, int ndim, const int64_t *shape, rt_tensor **out, ti_error *err)
{
	ti_dtype held = rt_held_as(dtype); /* a kernel that asks for the propagated dtype gets what holds it */
	if (!held)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for %s values", ti_dtype_name(dtype));
	return rt_tensor_make(c->ex, held, ndim, shape, c->ex->mode == WALK_REAL, out, err);
}

const ti_meta_tensor *rt_meta_out(rt_call *c)
{
	const ti_arg *a = &c->call->outputs[0];
	return c->call->output_count && a->kind == TI_ARG_TENSOR ? a->as.tensor : NULL;
}

ti_status rt_new_out(rt_call *c, ti_dtype dtype, rt_tensor **out, ti_error *err)
{
	const ti_meta_tensor *m = rt_meta_out(c);
	int64_t shape[RT_MAX_DIMS];
	if (!m || m->ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for this output");
	for (int i = 0; i < m->ndim; i++)
		shape[i] = m->shape[i].value;
	return rt_new(c, dtype, m->ndim, shape, out, err);
}

ti_status rt_new_exact(rt_call *c, ti_dtype dtype, int ndim, const int64_t *shape, rt_tensor **out, ti_error *err)
{
	return rt_tensor_make(c->ex, dtype, ndim, shape, c->ex->mode == WALK_REAL, out, err);
}

ti_status rt_view(rt_call *c, rt_tensor *base, int ndim, const int64_t *shape, const int64_t *stride, int64_t offset,
                  rt_tensor **out, ti_error *err)
{
	if (ndim > RT_MAX_DIMS)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for tensors of %d dimensions", ndim);
	rt_tensor *t = calloc(1, sizeof(*t));
	if (!t)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	t->dtype = base->dtype;
	t->ndim = ndim;
	if (ndim) {
		memcpy(t->shape, shape, (size_t)ndim * sizeof(*shape));
		memcpy(t->stride, stride, (size_t)ndim * sizeof(*stride));
	}
	t->offset = offset;
	t->storage = base->storage;
	t->storage->refs++;
	t->refs = 1;
	(void)c;
	*out = t;
	return TI_OK;
}

rt_tensor *rt_reuse(rt_call *c, const ti_meta_tensor *input, ti_dtype dtype, int ndim, const int64_t *shape)
{
	rt_exec *ex = c->ex;
	entry *e = ex->mode == WALK_REAL && input ? rt_entry_find(ex, input) : NULL;
	if (!e || !e->t || e->permanent || e->last_use != ex->seq)
		return NULL; /* read later, kept, or not a value of this walk */
	rt_tensor *t = e->t, *out;
	int64_t n = 1;
	for (int i = 0; i < ndim; i++)
		n *= shape[i];
	if (t->refs != 1 || t->storage->refs != 1 || t->dtype != rt_held_as(dtype) || t->offset || !rt_is_contiguous(t) ||
	    rt_numel(t) != n || ndim > RT_MAX_DIMS)
		return NULL; /* a view of it, or it of another, lives; or it is no plain copy of the output's size */
	int64_t stride[RT_MAX_DIMS];
	rt_contiguous_strides(ndim, shape, stride);
	ti_error ignored;
	return rt_view(c, t, ndim, shape, stride, 0, &out, &ignored) ? NULL : out;
}

/* Copies src (any strides) into dst (contiguous, same shape and dtype size). */
void rt_copy_strided(const rt_tensor *src, void *dst)
{
	size_t es = ti_dtype_size(src->dtype);
	int64_t n = rt_numel(src);
	if (!n)
		return;
	const char *base = (const char *)src->storage->data + (size_t)src->offset * es;
	int64_t idx[RT_MAX_DIMS] = {0};
	int nd = src->ndim;
	/* the innermost dimension as a run */
	int64_t inner = nd ? src->shape[nd - 1] : 1, istride = nd ? src->stride[nd - 1] : 1;
	char *out = dst;
	for (int64_t done = 0; done < n; done += inner) {
		int64_t off = 0;
		for (int d = 0; d < nd - 1; d++)
			off += idx[d] * src->stride[d];
		const char *p = base + (size_t)off * es;
		if (istride == 1) {
			memcpy(out, p, (size_t)inner * es);
		} else if (es == 4) {
			for (int64_t i = 0; i < inner; i++)
				((float *)out)[i] = ((const float *)p)[i * istride];
		} else {
			for (int64_t i = 0; i < inner; i++)
				memcpy(out + (size_t)i * es, p + (size_t)(i * istride) * es, es);
		}
		out += (size_t)inner * es;
		for (int d = nd - 2; d >= 0; d--) {
			if (++idx[d] < src->shape[d])
				break;
			idx[d] = 0;
		}
	}
}

ti_status rt_contiguous(rt_call *c, rt_tensor *t, rt_tensor **out, ti_error *err)
{
	if (rt_is_contiguous(t)) {
		t->refs++;
		*out = t;
		return TI_OK;
	}
	ti_status st = rt_new(c, t->dtype, t->ndim, t->shape, out, err);
	if (!st && c->ex->mode == WALK_REAL)
		rt_copy_strided(t, (*out)->storage->data);
	return st;
}

ti_status rt_output(rt_call *c, rt_tensor *t, ti_error *err)
{
	if (c->out_count == TI_OP_MAX_OUTPUTS) {
		rt_release(c->ex, t);
		return TI_FAIL(err, TI_E_LIMIT, "more than %d outputs", TI_OP_MAX_OUTPUTS);
	}
	c->out[c->out_count++] = t;
	return TI_OK;
}

ti_status rt_of(rt_call *c, const ti_meta_tensor *meta, rt_tensor **out, ti_error *err)
{
	entry *e = rt_entry_find(c->ex, meta);
	if (!e || !e->t)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "a tensor has no value here");
	*out = e->t;
	return TI_OK;
}

ti_status rt_arg(rt_call *c, const char *name, rt_tensor **out, ti_error *err)
{
	const ti_meta_tensor *meta = ti_bound_tensor(&c->call->in, name);
	*out = NULL;
	return meta ? rt_of(c, meta, out, err) : TI_OK;
}

ti_status rt_param(rt_call *c, const char *name, rt_tensor **out, ti_error *err)
{
	const ti_meta_tensor *meta = c->module ? ti_module_tensor_get(c->module, name) : NULL;
	*out = NULL;
	return meta ? rt_of(c, meta, out, err) : TI_OK;
}

int64_t rt_int(rt_call *c, const char *name) { return ti_bound_dim(&c->call->in, name).value; }
double rt_float(rt_call *c, const char *name) { return ti_bound_float(&c->call->in, name); }

bool rt_dim(rt_call *c, const ti_arg *a, int64_t *out)
{
	ti_dim d;
	switch (a ? a->kind : TI_ARG_ABSENT) {
	case TI_ARG_INT: d = a->as.dim; break;
	case TI_ARG_BOOL: d = ti_dim_int(a->as.boolean); break;
	case TI_ARG_STR: /* a symbol or a formula of them ("T", "T // 2"), as the shape rules read it */
		if (!ti_dim_parse(&c->ex->model->sym, a->as.str, &d))
			return false;
		break;
	default: return false;
	}
	if (!ti_dim_is_int(d))
		return false;
	*out = d.value;
	return true;
}

int rt_ints(rt_call *c, const char *name, int64_t *out, int max)
{
	int n = 0;
	const ti_arg *items = ti_bound_list(&c->call->in, name, &n);
	if (n > max)
		return -1;
	for (int i = 0; i < n; i++)
		if (!rt_dim(c, &items[i], &out[i]))
			out[i] = 0;
	return n;
}

bool rt_scalar(const ti_arg *a, double *out)
{
	if (!a)
		return false;
	switch (a->kind) {
	case TI_ARG_INT: *out = (double)a->as.dim.value; return true;
	case TI_ARG_FLOAT: *out = a->as.real; return true;
	case TI_ARG_BOOL: *out = a->as.boolean; return true;
	default: return false;
	}
}

/* ---- threads ---- */

typedef struct chunk {
	void (*fn)(void *, int64_t, int64_t);
	void *user;
	int64_t begin, end;
} chunk;

static void *run_chunk(void *p)
{
	chunk *k = p;
	k->fn(k->user, k->begin, k->end);
	return NULL;
}

void rt_parallel(rt_call *c, int64_t n, int64_t grain, void (*fn)(void *user, int64_t begin, int64_t end), void *user)
{
	int threads = c->threads > 64 ? 64 : c->threads;
	if (grain < 1)
		grain = 1;
	if (threads > n / grain)
		threads = (int)(n / grain);
	if (threads <= 1) {
		fn(user, 0, n);
		return;
	}
	chunk parts[64];
	pthread_t ids[64];
	bool started[64] = {0};
	for (int i = 0; i < threads; i++)
		parts[i] = (chunk){fn, user, n * i / threads, n * (i + 1) / threads};
	for (int i = 1; i < threads; i++)
		started[i] = !pthread_create(&ids[i], NULL, run_chunk, &parts[i]);
	run_chunk(&parts[0]);
	for (int i = 1; i < threads; i++) {
		if (started[i])
			pthread_join(ids[i], NULL);
		else
			run_chunk(&parts[i]); /* no thread to spare: this one does it */
	}
}

void (*rt_scratch_probe)(const rt_kernel *k, rt_call *c, int64_t stated, int64_t held);

/* Each temporary starts with its size, so that rt_scratch_free can count it off; the rest stays aligned as malloc's. */
#define SCRATCH_HEADER (_Alignof(max_align_t) > sizeof(size_t) ? _Alignof(max_align_t) : sizeof(size_t))

void *rt_scratch_alloc(rt_call *c, size_t bytes, bool zero)
{
	if (bytes > SIZE_MAX - SCRATCH_HEADER)
		return NULL;
	char *block = zero ? calloc(1, SCRATCH_HEADER + bytes) : malloc(SCRATCH_HEADER + bytes);
	if (!block)
		return NULL;
	memcpy(block, &bytes, sizeof(bytes));
	rt_exec *ex = c->ex;
	ex->scratch_held += bytes;
	if (ex->live + ex->scratch_held > ex->kernel_high)
		ex->kernel_high = ex->live + ex->scratch_held;
	return block + SCRATCH_HEADER;
}

void rt_scratch_free(rt_call *c, void *p)
{
	if (!p)
		return;
	char *block = (char *)p - SCRATCH_HEADER;
	size_t bytes;
	memcpy(&bytes, block, sizeof(bytes));
	c->ex->scratch_held -= bytes;
	free(block);
}

void rt_scratch_note(rt_call *c, size_t bytes)
{
	rt_exec *ex = c->ex;
	if (ex->live + ex->scratch_held + bytes > ex->kernel_high)
		ex->kernel_high = ex->live + ex->scratch_held + bytes;
}

const rt_tensor *rt_arg_or_null(rt_call *c, const char *name)
{
	ti_error ignored;
	ti_error_clear(&ignored);
	rt_tensor *x = NULL;
	return rt_arg(c, name, &x, &ignored) ? NULL : x;
}

/* The (L, N) of a sequence argument: [L, N, E], [N, L, E] when batch_first, [L, E] unbatched. */
void rt_sequence_dims(const rt_tensor *x, bool batch_first, int64_t *L, int64_t *N)
{
	bool batched = x->ndim == 3;
	*L = x->shape[batched && batch_first ? 1 : 0];
	*N = batched ? x->shape[batch_first ? 0 : 1] : 1;
}
