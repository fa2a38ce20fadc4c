/*
 * run.c - the executor (see tinspect/run.h): the traced calls of a shape
 * run, walked again with real tensors.
 *
 * The walk is the memory simulation's trace (src/memory/trace.c): a tree of
 * calls, each with its bound arguments and its outputs on the meta device.
 * At each call the executor runs the kernel of the module type or operator
 * when there is one (its parts are then not run), else walks into its parts;
 * a call whose outputs all have values already (Identity, a forward that is
 * one operator) needs nothing. Real tensors are found by the meta tensor
 * they stand for, so a module's parameters and the graph's names need no
 * bookkeeping of their own.
 *
 * The same walk runs three times: to find each value's last reader, then
 * without data to find the peak (refused before anything is allocated when
 * it passes the ceiling), then for real, freeing each value after its last
 * reader.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "memory/memory_internal.h"
#include "model/model_internal.h"
#include "run/exec.h"
#include "run/run_internal.h"
#include "tinspect/cast.h"
#include "tinspect/check.h"
#include "tinspect/view.h"

struct ti_run {
	rt_exec ex;
	ti_run_report report;
};

/* ---- statistics ---- */

/*
 * One pass: count, min, max, and sums of v - shift and its square in double
 * (shift: the chunk's first finite value, so the variance does not cancel).
 */
typedef struct moments {
	int64_t count, nan, inf;
	double lo, hi, shift, sum, sq;
} moments;

/* One value into m, whatever it is (the slow path: a block that holds NaN or inf). */
static void moments_one(moments *m, float v)
{
	if (v != v) {
		m->nan++;
		return;
	}
	if (v - v != 0) {
		m->inf++;
		return;
	}
	if (!m->count)
		m->lo = m->hi = m->shift = v;
	m->lo = v < m->lo ? v : m->lo;
	m->hi = v > m->hi ? v : m->hi;
	double d = (double)v - m->shift;
	m->sum += d;
	m->sq += d * d;
	m->count++;
}

#define MOMENTS_BLOCK 512
#define MOMENTS_LANES 8

/*
 * The moments of n values, block by block. A block of finite values (the
 * usual case) is summed in float32 over MOMENTS_LANES independent lanes
 * (straight-line code the compiler turns into vector instructions: a pass
 * over every step's output costs as much as its sgemm otherwise), each of
 * at most MOMENTS_BLOCK / MOMENTS_LANES shifted values, then the lanes and
 * blocks in float64: relative error about 1e-6, far below what the table
 * prints. A block with NaN or inf goes value by value. The order of
 * additions depends on n alone: the same figures whatever the thread count.
 */
__attribute__((target_clones("avx2", "default"))) static void moments_of(const float *x, int64_t n, moments *m)
{
	memset(m, 0, sizeof(*m));
	for (int64_t b = 0; b < n; b += MOMENTS_BLOCK) {
		int64_t len = n - b < MOMENTS_BLOCK ? n - b : MOMENTS_BLOCK;
		const float *p = x + b;
		float shift = m->count ? (float)m->shift : p[0];
		float lo[MOMENTS_LANES], hi[MOMENTS_LANES], bad[MOMENTS_LANES], s[MOMENTS_LANES], q[MOMENTS_LANES];
		for (int k = 0; k < MOMENTS_LANES; k++) {
			lo[k] = hi[k] = p[0];
			bad[k] = s[k] = q[k] = 0;
		}
		int64_t i = 0;
		for (; i + MOMENTS_LANES <= len; i += MOMENTS_LANES)
			for (int k = 0; k < MOMENTS_LANES; k++) {
				float v = p[i + k], d = v - shift;
				bad[k] += v - v; /* NaN for NaN and inf, 0 otherwise */
				lo[k] = v < lo[k] ? v : lo[k];
				hi[k] = v > hi[k] ? v : hi[k];
				s[k] += d;
				q[k] += d * d;
			}
		for (; i < len; i++) {
			float v = p[i], d = v - shift;
			bad[0] += v - v;
			lo[0] = v < lo[0] ? v : lo[0];
			hi[0] = v > hi[0] ? v : hi[0];
			s[0] += d;
			q[0] += d * d;
		}
		float nonfinite = 0;
		double sum = 0, sq = 0;
		for (int k = 0; k < MOMENTS_LANES; k++) {
			nonfinite += bad[k];
			sum += s[k];
			sq += q[k];
		}
		if (nonfinite != 0) { /* NaN: some value was not finite */
			for (int64_t j = 0; j < len; j++)
				moments_one(m, p[j]);
			continue;
		}
		if (!m->count)
			m->lo = m->hi = m->shift = shift;
		for (int k = 0; k < MOMENTS_LANES; k++) {
			m->lo = lo[k] < m->lo ? lo[k] : m->lo;
			m->hi = hi[k] > m->hi ? hi[k] : m->hi;
		}
		m->sum += sum;
		m->sq += sq;
		m->count += len;
	}
}

/* Chan et al.'s pairwise combination of two partial moments. */
static void moments_add(moments *into, const moments *m)
{
	into->nan += m->nan;
	into->inf += m->inf;
	if (!m->count)
		return;
	if (!into->count) {
		int64_t nan = into->nan, inf = into->inf;
		*into = *m;
		into->nan = nan;
		into->inf = inf;
		return;
	}
	double na = (double)into->count, nb = (double)m->count;
	double mean_a = into->shift + into->sum / na, mean_b = m->shift + m->sum / nb;
	double m2a = into->sq - into->sum * into->sum / na, m2b = m->sq - m->sum * m->sum / nb;
	double delta = mean_b - mean_a, n = na + nb;
	double m2 = m2a + m2b + delta * delta * na * nb / n;
	double mean = mean_a + delta * nb / n;
	into->count += m->count;
	into->lo = m->lo < into->lo ? m->lo : into->lo;
	into->hi = m->hi > into->hi ? m->hi : into->hi;
	into->shift = mean;
	into->sum = 0;
	into->sq = m2;
}

static void moments_stats(const moments *m, ti_run_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->nan = m->nan;
	out->inf = m->inf;
	out->count = m->count;
	if (!m->count)
		return;
	double mean = m->shift + m->sum / (double)m->count;
	double m2 = m->sq - m->sum * m->sum / (double)m->count;
	out->min = m->lo;
	out->max = m->hi;
	out->mean = mean;
	out->std = m->count > 1 && m2 > 0 ? sqrt(m2 / (double)(m->count - 1)) : 0; /* torch.std: unbiased */
}

void ti_run_stats_of(const float *x, size_t n, ti_run_stats *out)
{
	moments m;
	moments_of(x, (int64_t)n, &m);
	moments_stats(&m, out);
}

#define STATS_CHUNKS 64

typedef struct stats_job {
	const float *x;
	int64_t n;
	moments parts[STATS_CHUNKS];
} stats_job;

static void stats_chunks(void *user, int64_t begin, int64_t end)
{
	stats_job *j = user;
	for (int64_t c = begin; c < end; c++)
		moments_of(j->x + j->n * c / STATS_CHUNKS, j->n * (c + 1) / STATS_CHUNKS - j->n * c / STATS_CHUNKS,
		           &j->parts[c]);
}

/* The statistics of n values, in chunks over the run's threads (the same numbers whatever the thread count). */
static void stats_parallel(rt_exec *ex, const float *x, int64_t n, ti_run_stats *out)
{
	stats_job *j = malloc(sizeof(*j));
	if (!j || n < (1 << 16)) {
		free(j);
		ti_run_stats_of(x, (size_t)n, out);
		return;
	}
	j->x = x;
	j->n = n;
	rt_call c = {.ex = ex, .threads = ex->threads};
	rt_parallel(&c, STATS_CHUNKS, 1, stats_chunks, j);
	moments all = j->parts[0];
	for (int k = 1; k < STATS_CHUNKS; k++)
		moments_add(&all, &j->parts[k]);
	moments_stats(&all, out);
	free(j);
}

/* Statistics of any tensor the kernels make (float32, int64, bool), over its elements. */
static ti_status stats_of(rt_exec *ex, const rt_tensor *t, ti_run_stats *out, ti_error *err)
{
	int64_t n = rt_numel(t);
	float *tmp = NULL;
	const float *x;
	if (t->dtype == TI_DT_FLOAT32 && rt_is_contiguous(t)) {
		x = rt_f32(t);
	} else {
		tmp = malloc((size_t)(n ? n : 1) * sizeof(float));
		if (!tmp)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory for statistics");
		if (t->dtype == TI_DT_FLOAT32) {
			rt_copy_strided(t, tmp);
		} else {
			size_t es = ti_dtype_size(t->dtype);
			void *raw = malloc((size_t)(n ? n : 1) * es);
			if (!raw) {
				free(tmp);
				return TI_FAIL(err, TI_E_NOMEM, "out of memory for statistics");
			}
			rt_copy_strided(t, raw);
			ti_status st = ti_cast(t->dtype, raw, TI_DT_FLOAT32, tmp, (size_t)n, 0, err);
			free(raw);
			if (st) {
				free(tmp);
				return st;
			}
		}
		x = tmp;
	}
	stats_parallel(ex, x, n, out);
	free(tmp);
	return TI_OK;
}

/* The tensors of a value, lists flattened, into out[max]; returns how many there are. */
static int tensors_of(const ti_arg *a, const ti_meta_tensor **out, int n, int max)
{
	if (a->kind == TI_ARG_TENSOR) {
		if (n < max)
			out[n] = a->as.tensor;
		return n + 1;
	}
	if (a->kind == TI_ARG_LIST)
		for (int i = 0; i < a->as.list.count; i++)
			n = tensors_of(&a->as.list.items[i], out, n, max);
	return n;
}

#define RT_MAX_IO 256 /* tensors in or out of one call: cat of more is refused */

static int call_inputs(const ti_op_call *call, const ti_meta_tensor **out)
{
	int n = 0;
	for (int i = 0; call->in.sig && i < call->in.sig->count; i++)
		n = tensors_of(&call->in.args[i], out, n, RT_MAX_IO);
	return n;
}

static int call_outputs(const ti_op_call *call, const ti_meta_tensor **out)
{
	int n = 0;
	for (int i = 0; i < call->output_count; i++)
		n = tensors_of(&call->outputs[i], out, n, RT_MAX_IO);
	return n;
}

static bool is_final_output(rt_exec *ex, const void *meta)
{
	for (size_t i = 0; i < ex->rep->output_count; i++)
		if (ex->rep->outputs[i].meta == meta)
			return true;
	return false;
}

static const char *shape_text(rt_exec *ex, int ndim, const int64_t *shape)
{
	char buf[512];
	size_t n = 0;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "[");
	for (int i = 0; i < ndim && n < sizeof(buf) - 24; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%lld", i ? ", " : "", (long long)shape[i]);
	snprintf(buf + n, sizeof(buf) - n, "]");
	return ti_arena_strdup(&ex->arena, buf);
}

/* Rounds a held float32 tensor's values to dtype's precision in place (float16, bfloat16: as .to(dtype) would). */
static ti_status round_values(const rt_tensor *t, ti_dtype dtype, ti_error *err)
{
	if (dtype != TI_DT_FLOAT16 && dtype != TI_DT_BFLOAT16)
		return TI_OK;
	if (!rt_is_contiguous(t))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for a strided %s result", ti_dtype_name(dtype));
	float *x = rt_f32(t);
	uint16_t half[4096];
	for (int64_t n = rt_numel(t), i = 0; i < n; i += 4096) {
		size_t k = (size_t)(n - i < 4096 ? n - i : 4096);
		ti_status st = ti_cast(TI_DT_FLOAT32, x + i, dtype, half, k, 0, err);
		if (!st)
			st = ti_cast(dtype, half, TI_DT_FLOAT32, x + i, k, 0, err);
		if (st)
			return st;
	}
	return TI_OK;
}

/* The kernel's output against the propagated one: false (and ex->mismatch) when they differ. */
static bool same_as_meta(rt_exec *ex, const char *name, int k, const ti_meta_tensor *meta, const rt_tensor *t)
{
	bool same = meta->ndim == t->ndim && rt_held_as(meta->dtype) == t->dtype;
	for (int i = 0; same && i < t->ndim; i++)
		same = !meta->shape[i].sym && meta->shape[i].value == t->shape[i];
	if (same)
		return true;
	int64_t want[TI_META_MAX_DIMS];
	for (int i = 0; i < meta->ndim; i++)
		want[i] = meta->shape[i].value;
	ex->mismatch = ti_arena_printf(&ex->arena,
	                               "'%s' output %d: the CPU kernel made %s %s, shape propagation says %s %s "
	                               "(a bug of tinspect: please report it)",
	                               name, k, shape_text(ex, t->ndim, t->shape), ti_dtype_name(t->dtype),
	                               shape_text(ex, meta->ndim, want), ti_dtype_name(meta->dtype));
	return false;
}

static ti_status bind_value(rt_exec *ex, const void *meta, rt_tensor *t, bool permanent, ti_error *err)
{
	entry *e = rt_entry_add(ex, meta);
	if (!e) {
		rt_release(ex, t);
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	}
	rt_release(ex, e->t);
	e->t = t;
	e->made = true;
	e->permanent = permanent || e->permanent || ex->opt->keep_all || is_final_output(ex, meta);
	return TI_OK;
}

static ti_status run_kernel(rt_exec *ex, const mem_event *ev, const rt_kernel *k, ti_error *err)
{
	const ti_op_call *call = ev->call;
	const ti_meta_tensor *ins[RT_MAX_IO], *outs[RT_MAX_IO];
	int nin = call_inputs(call, ins), nout = call_outputs(call, outs);
	if (nin > RT_MAX_IO || nout > RT_MAX_IO)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' with more than %d tensors", ev->name,
		               RT_MAX_IO);
	for (int i = 0; i < nin; i++) {
		entry *e = rt_entry_find(ex, ins[i]);
		if (!e || !e->t)
			return TI_FAIL(err, TI_E_UNSUPPORTED, "a tensor '%s' reads has no value", ev->name);
		if (ex->mode == WALK_USES)
			e->last_use = ex->seq;
	}
	for (int i = 0; i < nout; i++)
		if (!rt_held_as(outs[i]->dtype))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' making %s", ev->name,
			               ti_dtype_name(outs[i]->dtype));
	rt_call c = {.ex = ex, .call = call, .module = k->module ? ev->module : NULL, .threads = ex->threads};
	ti_status st = TI_OK;
	if (ex->mode == WALK_REAL) {
		ex->kernel_high = ex->live + ex->scratch_held;
		st = k->run(&c, err);
		if (rt_scratch_probe && !st)
			rt_scratch_probe(k, &c, rt_scratch_bytes(k, &c), (int64_t)(ex->kernel_high - ex->live));
	} else {
		/* no data: outputs as propagated, views on their first input */
		for (int i = 0; i < nout && !st; i++) {
			int64_t shape[TI_META_MAX_DIMS];
			for (int d = 0; d < outs[i]->ndim; d++)
				shape[d] = outs[i]->shape[d].value;
			rt_tensor *t;
			entry *base = k->view && nin ? rt_entry_find(ex, ins[0]) : NULL;
			st = base ? rt_view(&c, base->t, outs[i]->ndim, shape, base->t->stride, 0, &t, err)
			          : rt_new(&c, rt_held_as(outs[i]->dtype), outs[i]->ndim, shape, &t, err);
			if (!st)
				st = rt_output(&c, t, err);
		}
		/* the kernel's temporaries, live beside its inputs and outputs while it runs */
		size_t scratch = st ? 0 : (size_t)rt_scratch_bytes(k, &c);
		if (ex->live + scratch > ex->peak) {
			ex->peak = ex->live + scratch;
			ex->peak_at = ev->name;
		}
	}
	if (!st && c.out_count != nout) {
		ex->mismatch = ti_arena_printf(&ex->arena,
		                               "'%s': the CPU kernel made %d outputs, shape propagation says %d "
		                               "(a bug of tinspect: please report it)", ev->name, c.out_count, nout);
	}
	for (int i = 0; i < c.out_count; i++) {
		if (st || ex->mismatch || !same_as_meta(ex, ev->name, i, outs[i], c.out[i])) {
			rt_release(ex, c.out[i]);
			continue;
		}
		entry *e = rt_entry_add(ex, outs[i]);
		if (ex->mode == WALK_REAL && e) {
			e->checked = true;
			/* a view holds its base's values, rounded already; a new value is rounded to its dtype */
			if (!k->view && (st = round_values(c.out[i], outs[i]->dtype, err))) {
				rt_release(ex, c.out[i]);
				continue;
			}
			if (e->wanted && (st = stats_of(ex, c.out[i], &e->stats, err))) {
				rt_release(ex, c.out[i]);
				continue;
			}
			e->has_stats = e->wanted;
		}
		st = bind_value(ex, outs[i], c.out[i], false, err);
	}
	if (st || ex->mismatch)
		return st;
	/* values this kernel read last, and outputs nobody reads, let go */
	if (ex->mode != WALK_USES) {
		for (int i = 0; i < nin + nout; i++) {
			entry *e = rt_entry_find(ex, i < nin ? (const void *)ins[i] : (const void *)outs[i - nin]);
			if (e && e->t && !e->permanent && e->last_use <= ex->seq) {
				rt_release(ex, e->t);
				e->t = NULL;
			}
		}
	}
	ex->seq++;
	return TI_OK;
}

static bool outputs_have_values(rt_exec *ex, const ti_op_call *call)
{
	const ti_meta_tensor *outs[RT_MAX_IO];
	int n = call_outputs(call, outs);
	for (int i = 0; i < n && i < RT_MAX_IO; i++) {
		entry *e = rt_entry_find(ex, outs[i]);
		if (!e || !e->t)
			return false;
	}
	return true;
}

/* Every output was made in this walk: a module's parts ran, though an output nobody reads is let go already. */
static bool outputs_made(rt_exec *ex, const ti_op_call *call)
{
	const ti_meta_tensor *outs[RT_MAX_IO];
	int n = call_outputs(call, outs);
	for (int i = 0; i < n && i < RT_MAX_IO; i++) {
		entry *e = rt_entry_find(ex, outs[i]);
		if (!e || (!e->t && !e->made))
			return false;
	}
	return true;
}

static ti_status walk(rt_exec *ex, int id, ti_error *err)
{
	const mem_event *ev = &ex->trace.events[id];
	if (ev->released || !ev->name)
		return TI_OK;
	const ti_op_call *call = ev->call;
	const rt_kernel *k = rt_kernel_find(ev->module ? ev->module->type : ev->name, ev->module != NULL);
	if (call && outputs_have_values(ex, call) && !rt_kernel_in_place(k))
		return TI_OK; /* Identity, a forward that hands on its operator's outputs */
	if (k && call)
		return run_kernel(ex, ev, k, err);
	ti_status st = TI_OK;
	for (int child = ev->first_child; child >= 0 && !st; child = ex->trace.events[child].next_sibling)
		st = walk(ex, child, err);
	if (st == TI_E_UNSUPPORTED && call && !strstr(err->message, "no CPU kernel yet for '")) {
		char why[TI_ERROR_MESSAGE_MAX];
		snprintf(why, sizeof(why), "%s", err->message);
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' (%s)", ev->name, why);
	}
	if (!st && call && !outputs_made(ex, call))
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s'", ev->name);
	return st;
}

/* ---- weights and inputs ---- */

/*
 * Casts n values of dtype `from` into t's held storage as a value of dtype
 * `as` would hold them: through `as` first (a float32 checkpoint loaded into
 * a float16 model is rounded, as load_state_dict's copy_ rounds it).
 */
static ti_status cast_into(ti_dtype from, const void *src, ti_dtype as, rt_tensor *t, size_t first, size_t n,
                           ti_error *err)
{
	void *dst = (char *)t->storage->data + first * ti_dtype_size(t->dtype);
	if (from == as && as == t->dtype) {
		memcpy(dst, src, n * ti_dtype_size(as));
		return TI_OK;
	}
	if (as == t->dtype || from == as) /* one rounding: straight into the held dtype */
		return ti_cast(from, src, t->dtype, dst, n, 0, err);
	void *mid = malloc(n * ti_dtype_size(as) + 1);
	if (!mid)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_status st = ti_cast(from, src, as, mid, n, 0, err);
	if (!st)
		st = ti_cast(as, mid, t->dtype, dst, n, 0, err);
	free(mid);
	return st;
}

/* Reads a source tensor's values (any strides) into t (contiguous, same numel), held as a value of dtype `as`. */
static ti_status read_source(ti_source *src, const ti_source_tensor *st_t, ti_dtype as, rt_tensor *t, ti_error *err)
{
	if (st_t->dtype != as && !ti_cast_supported(st_t->dtype, as)) /* a sub-byte dtype, which nothing computes with */
		return TI_FAIL(err, TI_E_UNSUPPORTED, "'%s' is %s, which cannot be read as %s", st_t->name,
		               ti_dtype_name(st_t->dtype), ti_dtype_name(as));
	ti_status st = ti_view_check(src, st_t, err);
	if (st)
		return st;
	size_t es = ti_dtype_size(st_t->dtype), total = (size_t)st_t->numel;
	size_t chunk = TI_VIEW_CHUNK_MAX < total ? TI_VIEW_CHUNK_MAX : total;
	void *raw = malloc(chunk * es + 1);
	if (!raw)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory reading '%s'", st_t->name);
	ti_view_reader r;
	ti_view_reader_init(&r);
	for (size_t first = 0; first < total && !st; first += chunk) {
		size_t n = total - first < chunk ? total - first : chunk;
		st = ti_view_read(&r, src, st_t, (int64_t)first, n, raw, err);
		if (!st)
			st = cast_into(st_t->dtype, raw, as, t, first, n, err);
	}
	ti_view_reader_release(&r);
	free(raw);
	if (st)
		ti_error_at(err, st_t->name, -1);
	return st;
}

/* Fills t as a tensor of dtype `as` is filled (materialize's values), then holds them. */
static ti_status fill_tensor(rt_exec *ex, const ti_fill_policy *policy, const char *name, ti_dtype as, rt_tensor *t,
                             ti_error *err)
{
	size_t n = (size_t)rt_numel(t);
	void *buf = as == t->dtype ? t->storage->data : malloc(n * ti_dtype_size(as) + 1);
	if (!buf)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory filling '%s'", name);
	ti_status st = ti_fill(policy, as, ti_fill_key_of(ex->opt->seed, name), 0, n, buf, err);
	if (!st && buf != t->storage->data)
		st = cast_into(as, buf, as, t, 0, n, err);
	if (buf != t->storage->data)
		free(buf);
	if (st)
		ti_error_at(err, name, -1);
	return st;
}

static ti_status bind_weights(rt_exec *ex, const ti_check_report *load, ti_error *err)
{
	ti_model *m = ex->model;
	rt_tensor **made = calloc(m->param_count_all + 1, sizeof(*made));
	if (!made)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	ti_status st = TI_OK;
	bool real = ex->mode == WALK_REAL;
	for (size_t i = 0; i < m->param_count_all && !st; i++) {
		const ti_model_param *p = &m->params[i];
		if (p->stores) /* a quantized layer's stored tensors: the forward reads its floating weight */
			continue;
		const ti_meta_tensor *meta = ti_module_tensor_get(m->param_modules[i], m->param_locals[i]);
		rt_tensor *t = NULL;
		for (size_t j = 0; p->tied_to && j < i && !t; j++)
			if (!strcmp(m->params[j].name, p->tied_to) && made[j]) {
				t = made[j];
				t->refs++;
			}
		if (!t) {
			if (!rt_held_as(p->dtype)) {
				st = TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for %s parameters ('%s')",
				             ti_dtype_name(p->dtype), p->name);
				break;
			}
			if ((st = rt_tensor_make(ex, rt_held_as(p->dtype), p->ndim, p->shape, real, &t, err)))
				break;
			ex->peak_at = "the weights";
			if (real) {
				const ti_source_tensor *from = load && i < m->param_count ? load->bound[i] : NULL;
				ti_fill_policy policy = ex->opt->fill;
				if (from) {
					st = read_source(ex->opt->weights, from, p->dtype, t, err);
				} else if (load && i < m->param_count) {
					st = TI_FAIL(err, TI_E_CORRUPT, "the weights have no tensor for parameter '%s'", p->name);
				} else {
					if (policy.kind == TI_FILL_INIT)
						st = i < m->param_count ? ti_model_param_init(m, i, &policy, NULL, err)
						                        : (policy = ti_fill_constant(TI_FILL_ZEROS), TI_OK);
					if (!st && policy.kind != TI_FILL_ZEROS && policy.kind != TI_FILL_ONES &&
					    policy.kind != TI_FILL_FULL && !ti_dtype_is_floating(p->dtype))
						policy = ti_fill_constant(TI_FILL_ZEROS); /* counters, indices: PyTorch starts them at 0 */
					if (!st)
						st = fill_tensor(ex, &policy, p->name, p->dtype, t, err);
				}
			}
		}
		made[i] = t;
		if (!st && meta) {
			t->refs++;
			st = bind_value(ex, meta, t, true, err);
		}
	}
	for (size_t i = 0; i < m->param_count_all; i++)
		rt_release(ex, made[i]);
	free(made);
	return st;
}

static ti_status bind_inputs(rt_exec *ex, ti_error *err)
{
	const ti_model_report *rep = ex->rep;
	bool real = ex->mode == WALK_REAL;
	for (size_t k = 0; k < ex->opt->input_count; k++) {
		bool known = false;
		for (size_t i = 0; i < rep->input_count && !known; i++)
			known = !strcmp(ex->opt->inputs[k].name, rep->inputs[i].name);
		if (!known)
			return TI_FAIL(err, TI_E_INVALID, "the description has no input '%s'", ex->opt->inputs[k].name);
	}
	for (size_t i = 0; i < rep->input_count; i++) {
		const ti_model_tensor *x = &rep->inputs[i];
		if (!rt_held_as(x->dtype))
			return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for %s inputs ('%s')", ti_dtype_name(x->dtype),
			               x->name);
		int64_t shape[TI_META_MAX_DIMS];
		for (int d = 0; d < x->ndim; d++) {
			if (x->shape[d].sym)
				return TI_FAIL(err, TI_E_INVALID, "input '%s' has a symbolic size: give it with --bind", x->name);
			shape[d] = x->shape[d].value;
		}
		const ti_run_input *given = NULL;
		for (size_t k = 0; k < ex->opt->input_count; k++)
			if (!strcmp(ex->opt->inputs[k].name, x->name))
				given = &ex->opt->inputs[k];
		rt_tensor *t;
		ti_status st = rt_tensor_make(ex, rt_held_as(x->dtype), x->ndim, shape, real, &t, err);
		if (st)
			return st;
		if (real && given && given->kind == TI_RUN_INPUT_TENSOR) {
			const ti_source_tensor *s = ti_source_tensor_at(given->source, given->tensor);
			bool same = s->ndim == x->ndim;
			for (int d = 0; same && d < x->ndim; d++)
				same = s->shape[d] == shape[d];
			st = same ? read_source(given->source, s, x->dtype, t, err)
			          : TI_FAIL(err, TI_E_CORRUPT, "input '%s': the tensor '%s' is %s, the description's input is %s",
			                    x->name, s->name, shape_text(ex, s->ndim, s->shape), shape_text(ex, x->ndim, shape));
		} else if (real) {
			ti_fill_policy policy = given ? given->fill
			                              : ti_fill_constant(ti_dtype_is_floating(x->dtype) ? TI_FILL_RANDN : TI_FILL_ZEROS);
			st = fill_tensor(ex, &policy, x->name, x->dtype, t, err);
		}
		if (!st)
			st = bind_value(ex, x->meta, t, false, err);
		else
			rt_release(ex, t);
		if (st)
			return st;
	}
	return TI_OK;
}

static void let_all_go(rt_exec *ex)
{
	for (size_t i = 0; i < ex->count; i++) {
		rt_release(ex, ex->entries[i].t);
		ex->entries[i].t = NULL;
		ex->entries[i].permanent = false;
		ex->entries[i].made = false;
	}
}

static ti_status walk_all(rt_exec *ex, walk_mode mode, const ti_check_report *load, ti_error *err)
{
	let_all_go(ex);
	ex->mode = mode;
	ex->seq = 0;
	ex->live = ex->peak = 0;
	ti_status st = bind_weights(ex, load, err);
	if (!st)
		st = bind_inputs(ex, err);
	clock_gettime(CLOCK_MONOTONIC, &ex->started);
	for (size_t i = 0; i < ex->trace.count && !st && !ex->mismatch; i++)
		if (ex->trace.events[i].parent < 0)
			st = walk(ex, (int)i, err);
	return st;
}

/* ---- the run ---- */

static size_t machine_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	return pages > 0 && size > 0 ? (size_t)pages * (size_t)size : (size_t)-1;
}

static int machine_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* A report tensor for a meta one: shape as propagated, statistics, data when kept (made contiguous). */
static ti_status report_tensor(rt_exec *ex, const ti_model_tensor *mt, ti_run_tensor *t, bool *ran, ti_error *err)
{
	entry *e = rt_entry_find(ex, mt->meta);
	t->name = mt->name;
	t->dtype = mt->dtype;
	t->ndim = mt->ndim;
	int64_t *shape = ti_arena_calloc(&ex->arena, (size_t)mt->ndim + 1, sizeof(*shape));
	if (!shape)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	for (int d = 0; d < mt->ndim; d++)
		shape[d] = mt->shape[d].value;
	t->shape = shape;
	*ran = e && (e->has_stats || e->t);
	if (!e)
		return TI_OK;
	if (e->t && !rt_is_contiguous(e->t)) {
		rt_call c = {.ex = ex, .threads = ex->threads};
		rt_tensor *copy;
		ti_status st = rt_contiguous(&c, e->t, &copy, err);
		if (st)
			return st;
		rt_release(ex, e->t);
		e->t = copy;
	}
	if (e->t && !e->t->storage->data && e->t->storage->bytes)
		return TI_OK; /* the walk stopped before its real run */
	if (e->t && !e->has_stats) { /* a weight or an input handed on: nothing computed, nothing to check */
		ti_status st = stats_of(ex, e->t, &e->stats, err);
		if (st)
			return st;
		e->has_stats = e->checked = true;
	}
	t->stats = e->stats;
	t->checked = e->checked;
	if (e->t && e->t->dtype != mt->dtype) { /* held in float32 or int64: the value's own dtype, for --save */
		rt_tensor *own;
		ti_status st = rt_tensor_make(ex, mt->dtype, e->t->ndim, e->t->shape, true, &own, err);
		if (!st && (st = ti_cast(e->t->dtype, (const char *)e->t->storage->data + (size_t)e->t->offset * ti_dtype_size(e->t->dtype), mt->dtype, own->storage->data, (size_t)rt_numel(e->t),
		                         0, err)))
			rt_release(ex, own);
		if (st)
			return st;
		rt_release(ex, e->t);
		e->t = own;
	}
	if (e->t) {
		t->data = (const char *)e->t->storage->data + (size_t)e->t->offset * ti_dtype_size(e->t->dtype);
		t->nbytes = (size_t)rt_numel(e->t) * ti_dtype_size(e->t->dtype);
	}
	return TI_OK;
}

static ti_status fill_report(ti_run *run, ti_error *err)
{
	rt_exec *ex = &run->ex;
	ti_run_report *r = &run->report;
	const ti_model_report *rep = ex->rep;
	r->shapes = rep;
	r->mismatch = ex->mismatch;
	r->steps = ti_arena_calloc(&ex->arena, rep->step_count + 1, sizeof(*r->steps));
	r->outputs = ti_arena_calloc(&ex->arena, rep->output_count + 1, sizeof(*r->outputs));
	if (!r->steps || !r->outputs)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	r->step_count = rep->step_count;
	ti_status st = TI_OK;
	for (size_t i = 0; i < rep->step_count && !st; i++) {
		const ti_model_step *s = &rep->steps[i];
		ti_run_step *o = &r->steps[i];
		o->step = s;
		o->output_count = s->output_count;
		o->outputs = ti_arena_calloc(&ex->arena, (size_t)s->output_count + 1, sizeof(*o->outputs));
		if (!o->outputs)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		o->ran = true;
		for (int k = 0; k < s->output_count && !st; k++) {
			bool ran;
			st = report_tensor(ex, &s->outputs[k], &o->outputs[k], &ran, err);
			o->ran &= ran;
		}
	}
	r->output_count = rep->output_count;
	for (size_t i = 0; i < rep->output_count && !st; i++) {
		bool ran;
		st = report_tensor(ex, &rep->outputs[i], &r->outputs[i], &ran, err);
	}
	return st;
}

/*
 * The values whose statistics are reported: outputs of the steps shown
 * (above stats_depth; every step's with 0) and the model's outputs. A pass
 * over every intermediate value costs as much as a convolution's sgemm, so
 * nested calls nobody shows are not summarised.
 */
static ti_status want_stats(rt_exec *ex, ti_error *err)
{
	const ti_model_report *rep = ex->rep;
	int depth = ex->opt->stats_depth;
	for (size_t i = 0; i < rep->step_count; i++)
		for (int k = 0; (!depth || rep->steps[i].depth < depth) && k < rep->steps[i].output_count; k++) {
			entry *e = rt_entry_add(ex, rep->steps[i].outputs[k].meta);
			if (!e)
				return TI_FAIL(err, TI_E_NOMEM, "out of memory");
			e->wanted = true;
		}
	for (size_t i = 0; i < rep->output_count; i++) {
		entry *e = rt_entry_add(ex, rep->outputs[i].meta);
		if (!e)
			return TI_FAIL(err, TI_E_NOMEM, "out of memory");
		e->wanted = true;
	}
	return TI_OK;
}

/* Every size must be a number: a symbol left (batch "N", a length "T") is bound with --bind. */
static ti_status check_concrete(rt_exec *ex, ti_error *err)
{
	const ti_model_report *rep = ex->rep;
	for (size_t i = 0; i < rep->step_count; i++) {
		const ti_model_step *s = &rep->steps[i];
		for (int k = 0; k < s->output_count; k++)
			for (int d = 0; d < s->outputs[k].ndim; d++)
				if (s->outputs[k].shape[d].sym) {
					TI_FAIL(err, TI_E_INVALID, "step %d (%s) has an output of symbolic size: give its symbols with --bind",
					        s->index, s->target ? s->target : "?");
					return TI_E_INVALID;
				}
	}
	return TI_OK;
}

ti_status ti_run_execute(ti_model *model, const ti_run_options *options, ti_run **out, const ti_run_report **report,
                         ti_error *err)
{
	*out = NULL;
	ti_run *run = calloc(1, sizeof(*run));
	if (!run)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory");
	rt_exec *ex = &run->ex;
	ex->model = model;
	ex->opt = options;
	ex->threads = options->threads > 0 ? options->threads : machine_cores();
	ti_arena_init(&ex->arena, (size_t)1 << 30); /* report strings and rows */
	ti_status st = rt_blas_open(ex->threads, err);
	if (!st)
		st = mem_trace_run(model, &ex->trace, &ex->rep, err);
	if (!st && ex->rep->failed) {
		*err = ex->rep->error;
		st = TI_E_SHAPE;
	}
	if (!st)
		st = check_concrete(ex, err);
	if (!st)
		st = want_stats(ex, err);
	ti_check_report load = {0};
	if (!st && options->weights) {
		ti_check_options co = {.strict = false, .dtype = TI_DT_INVALID};
		st = ti_check_load(model, options->weights, &co, &ex->arena, &load, err);
		if (!st && load.mismatch_count) {
			/* PyTorch's message, on one line: "...for Model: size mismatch for ..." */
			char one[TI_ERROR_MESSAGE_MAX];
			size_t n = 0;
			for (const char *p = load.message; *p && n + 1 < sizeof(one); p++)
				if (*p == '\n' || *p == '\t')
					n += n && one[n - 1] != ' ' ? (one[n] = ' ', 1) : 0;
				else
					one[n++] = *p;
			one[n] = '\0';
			st = TI_FAIL(err, TI_E_CORRUPT, "%s", one);
		}
		for (size_t i = 0; !st && i < model->param_count; i++)
			if (!load.bound[i])
				st = TI_FAIL(err, TI_E_CORRUPT, "the weights have no tensor for parameter '%s'", model->params[i].name);
	}
	if (!st)
		st = walk_all(ex, WALK_USES, NULL, err);
	if (!st && !ex->mismatch)
		st = walk_all(ex, WALK_PLAN, NULL, err);
	if (!st && !ex->mismatch) {
		run->report.peak_bytes = ex->peak;
		size_t limit = options->max_memory ? options->max_memory : machine_memory();
		if (ex->peak > limit)
			st = TI_FAIL(err, TI_E_LIMIT, "the run needs %zu bytes at its peak, more than the %zu bytes %s", ex->peak,
			             limit, options->max_memory ? "--max-memory allows" : "of this machine's memory");
	}
	if (!st && !ex->mismatch) {
		ex->ceiling = ex->peak; /* freed blocks may be kept up to the planned peak */
		st = walk_all(ex, WALK_REAL, options->weights ? &load : NULL, err);
		ex->ceiling = 0;
		rt_cache_drop(ex);
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		run->report.forward_seconds =
			(double)(now.tv_sec - ex->started.tv_sec) + (double)(now.tv_nsec - ex->started.tv_nsec) * 1e-9;
	}
	if (!st)
		st = fill_report(run, err);
	if (st) {
		ti_run_free(run);
		return st;
	}
	*out = run;
	*report = &run->report;
	return TI_OK;
}

void ti_run_free(ti_run *run)
{
	if (!run)
		return;
	let_all_go(&run->ex);
	rt_cache_drop(&run->ex);
	free(run->ex.entries);
	free(run->ex.keys);
	free(run->ex.slots);
	ti_arena_release(&run->ex.arena);
	free(run);
}
