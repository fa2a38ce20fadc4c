/*
 * linalg.c - Linear, linear, matmul, bmm, addmm: OpenBLAS sgemm on float32,
 * the only file that touches BLAS. Batched products call sgemm per matrix
 * (rt_sgemm threads each one); a transposed view is handed to sgemm as a
 * transposed operand, without a copy.
 *
 * OpenBLAS is not linked: `run` opens it (dlopen) when a forward begins, so
 * no other command maps it, pays its ~16,000 relocations at start-up or
 * gets its worker threads.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/run_internal.h"
/* after our headers: OpenBLAS's config pulls in <complex.h>, whose `complex` macro they must not see */
#include <cblas.h> /* its types and constants only: the functions come from dlsym */

typedef void sgemm_fn(const enum CBLAS_ORDER, const enum CBLAS_TRANSPOSE, const enum CBLAS_TRANSPOSE, const blasint,
                      const blasint, const blasint, const float, const float *, const blasint, const float *,
                      const blasint, const float, float *, const blasint);
typedef void set_threads_fn(int);

/* The runtime library's names, most specific first: Debian's alternatives give libopenblas.so.0. */
static const char *const blas_names[] = {"libopenblas.so.0", "libopenblas.so"};

static struct {
	pthread_once_t once;
	sgemm_fn *sgemm;
	char why[256]; /* why it could not be opened; empty when it was */
} blas = {.once = PTHREAD_ONCE_INIT};

/*
 * The pthread OpenBLAS starts its workers when it loads, as many as
 * OPENBLAS_NUM_THREADS says (default: every core). Products are split across
 * threads here (below), so it is loaded with one: no worker is started.
 */
static void blas_load(void)
{
	const char *had = getenv("OPENBLAS_NUM_THREADS");
	char *saved = had ? strdup(had) : NULL;
	setenv("OPENBLAS_NUM_THREADS", "1", 1);
	void *lib = NULL;
	for (size_t i = 0; i < sizeof(blas_names) / sizeof(blas_names[0]) && !lib; i++)
		lib = dlopen(blas_names[i], RTLD_NOW | RTLD_LOCAL);
	if (saved) {
		setenv("OPENBLAS_NUM_THREADS", saved, 1);
		free(saved);
	} else {
		unsetenv("OPENBLAS_NUM_THREADS");
	}
	if (!lib) {
		const char *e = dlerror();
		snprintf(blas.why, sizeof(blas.why), "%s", e ? e : "not found");
		return;
	}
	sgemm_fn *sgemm = (sgemm_fn *)dlsym(lib, "cblas_sgemm");
	set_threads_fn *set_threads = (set_threads_fn *)dlsym(lib, "openblas_set_num_threads");
	if (!sgemm) {
		snprintf(blas.why, sizeof(blas.why), "%s has no cblas_sgemm", blas_names[0]);
		return;
	}
	if (set_threads)
		set_threads(1);
	blas.sgemm = sgemm;
}

/*
 * Threads: OpenBLAS runs single-threaded and a product is split here, its
 * larger side cut into one block per thread, each block an sgemm of its
 * own. OpenBLAS's own workers spin (sched_yield) between its calls, taking
 * the cores from every other kernel of a run: a quarter of ResNet-50's time
 * at two threads went to the scheduler.
 */
static int gemm_threads = 1;

typedef struct gemm_part {
	bool ta, tb;
	int64_t m, n, k, lda, ldb, ldc;
	float alpha, beta;
	const float *a, *b;
	float *c;
} gemm_part;

static void gemm_one(const gemm_part *p)
{
	if (!p->m || !p->n)
		return;
	blas.sgemm(CblasRowMajor, p->ta ? CblasTrans : CblasNoTrans, p->tb ? CblasTrans : CblasNoTrans, (blasint)p->m,
	            (blasint)p->n, (blasint)p->k, p->alpha, p->a, (blasint)(p->lda ? p->lda : 1), p->b,
	            (blasint)(p->ldb ? p->ldb : 1), p->beta, p->c, (blasint)(p->ldc ? p->ldc : 1));
}

static void *gemm_thread(void *arg)
{
	gemm_one(arg);
	return NULL;
}

#define GEMM_MAX_THREADS 64
#define GEMM_MIN_WORK ((int64_t)1 << 22) /* multiply-adds a block must have to be worth a thread */

void rt_sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
              const float *b, int64_t ldb, float beta, float *cmat, int64_t ldc)
{
	gemm_part whole = {trans_a, trans_b, m, n, k, lda, ldb, ldc, alpha, beta, a, b, cmat};
	int64_t threads = gemm_threads < GEMM_MAX_THREADS ? gemm_threads : GEMM_MAX_THREADS;
	int64_t work = m * n * (k ? k : 1);
	if (threads > work / GEMM_MIN_WORK)
		threads = work / GEMM_MIN_WORK;
	bool by_columns = n >= m;
	if (threads > (by_columns ? n : m))
		threads = by_columns ? n : m;
	if (threads <= 1) {
		gemm_one(&whole);
		return;
	}
	gemm_part parts[GEMM_MAX_THREADS];
	pthread_t ids[GEMM_MAX_THREADS];
	bool started[GEMM_MAX_THREADS] = {false};
	int64_t side = by_columns ? n : m;
	for (int64_t t = 0; t < threads; t++) {
		int64_t lo = side * t / threads, hi = side * (t + 1) / threads;
		gemm_part p = whole;
		if (by_columns) { /* C[:, lo:hi] = A B[:, lo:hi] */
			p.n = hi - lo;
			p.b = trans_b ? b + lo * ldb : b + lo;
			p.c = cmat + lo;
		} else { /* C[lo:hi, :] = A[lo:hi, :] B */
			p.m = hi - lo;
			p.a = trans_a ? a + lo : a + lo * lda;
			p.c = cmat + lo * ldc;
		}
		parts[t] = p;
	}
	for (int64_t t = 1; t < threads; t++)
		started[t] = !pthread_create(&ids[t], NULL, gemm_thread, &parts[t]);
	gemm_one(&parts[0]);
	for (int64_t t = 1; t < threads; t++) {
		if (started[t])
			pthread_join(ids[t], NULL);
		else
			gemm_one(&parts[t]); /* no thread to spare: this one does it */
	}
}

ti_status rt_blas_open(int threads, ti_error *err)
{
	gemm_threads = threads > 0 ? threads : 1;
	pthread_once(&blas.once, blas_load);
	if (!blas.sgemm)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "cannot load OpenBLAS, which run's products need: %s (install libopenblas0)",
		               blas.why);
	return TI_OK;
}

static ti_status need_float(const char *op, const rt_tensor *t, ti_error *err)
{
	if (t && t->dtype != TI_DT_FLOAT32)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for '%s' on %s", op, ti_dtype_name(t->dtype));
	return TI_OK;
}

/* How sgemm reads the last two dims [rows, cols] of t: as is, transposed, or not at all (copy first). */
static bool as_matrix(const rt_tensor *t, int64_t rows, int64_t cols, bool *trans, int64_t *ld)
{
	int nd = t->ndim;
	int64_t rs = nd >= 2 ? t->stride[nd - 2] : cols, cs = t->stride[nd - 1];
	if ((cs == 1 || cols == 1) && (rs >= cols || rows == 1)) {
		*trans = false;
		*ld = rows == 1 ? (cols > 0 ? cols : 1) : rs;
		return *ld >= cols;
	}
	if ((rs == 1 || rows == 1) && (cs >= rows || cols == 1)) {
		*trans = true;
		*ld = cols == 1 ? (rows > 0 ? rows : 1) : cs;
		return *ld >= rows;
	}
	return false;
}

/* Y[m, n] = X[m, k] W[n, k]^T + bias: Linear's and linear's product. */
static ti_status linear_of(rt_call *c, rt_tensor *x, rt_tensor *w, rt_tensor *bias, ti_error *err)
{
	ti_status st = need_float("linear", x, err);
	if (!st)
		st = need_float("linear", w, err);
	if (!st)
		st = need_float("linear", bias, err);
	if (st)
		return st;
	if (w->ndim != 2 || x->ndim < 1)
		return TI_FAIL(err, TI_E_UNSUPPORTED, "no CPU kernel yet for 'linear' with a %d-d weight", w->ndim);
	int64_t k = x->shape[x->ndim - 1], n = w->shape[0];
	int64_t shape[RT_MAX_DIMS];
	memcpy(shape, x->shape, (size_t)x->ndim * sizeof(*shape));
	shape[x->ndim - 1] = n;
	rt_tensor *xc, *y;
	if ((st = rt_contiguous(c, x, &xc, err)))
		return st;
	if ((st = rt_new(c, TI_DT_FLOAT32, x->ndim, shape, &y, err))) {
		rt_release(c->ex, xc);
		return st;
	}
	int64_t m = k ? rt_numel(xc) / k : rt_numel(y) / (n ? n : 1);
	float *out = rt_f32(y);
	float beta = 0;
	if (bias) {
		const float *b = rt_f32(bias);
		for (int64_t i = 0; i < m; i++)
			for (int64_t j = 0; j < n; j++)
				out[i * n + j] = b[j * bias->stride[0]];
		beta = 1;
	}
	bool wt;
	int64_t ldw;
	rt_tensor *wc = NULL;
	if (!as_matrix(w, n, k, &wt, &ldw)) {
		if ((st = rt_contiguous(c, w, &wc, err))) {
			rt_release(c->ex, xc);
			rt_release(c->ex, y);
			return st;
		}
		wt = false;
		ldw = k;
	}
	/* W is [n, k]: X W^T reads it transposed (or, when W is itself a transposed view, as is) */
	rt_sgemm(false, !wt, m, n, k, 1.0f, rt_f32(xc), k, rt_f32(wc ? wc : w), ldw, beta, out, n);
	rt_release(c->ex, wc);
	rt_release(c->ex, xc);
	return rt_output(c, y, err);
}

ti_status rt_k_linear(rt_call *c, ti_error *err)
{
	rt_tensor *x, *w, *b;
	ti_status st = rt_arg(c, "input", &x, err);
	if (!st && c->module) {
		st = rt_param(c, "weight", &w, err);
		if (!st)
			st = rt_param(c, "bias", &b, err);
	} else if (!st) {
		st = rt_arg(c, "weight", &w, err);
		if (!st)
			st = rt_arg(c, "bias", &b, err);
	}
	return st ? st : linear_of(c, x, w, b, err);
}

/*
 * a @ b as torch.matmul: 1-d operands gain a dimension that is dropped
 * again, batch dimensions broadcast. One sgemm per matrix of the batch.
 */
static ti_status matmul_of(rt_call *c, rt_tensor *a, rt_tensor *b, ti_error *err)
{
	ti_status st = need_float("matmul", a, err);
	if (!st)
		st = need_float("matmul", b, err);
	if (st)
		return st;
	if (!a->ndim || !b->ndim)
		return TI_FAIL(err, TI_E_SHAPE, "both arguments to matmul need to be at least 1D");
	/* views of a and b with at least two dims */
	rt_tensor A = *a, B = *b;
	bool drop_row = false, drop_col = false;
	if (A.ndim == 1) {
		A.shape[1] = A.shape[0];
		A.stride[1] = A.stride[0];
		A.shape[0] = 1;
		A.stride[0] = A.shape[1];
		A.ndim = 2;
		drop_row = true;
	}
	if (B.ndim == 1) {
		B.shape[1] = 1;
		B.stride[1] = 1;
		B.ndim = 2;
		drop_col = true;
	}
	int64_t m = A.shape[A.ndim - 2], k = A.shape[A.ndim - 1], n = B.shape[B.ndim - 1];
	if (B.shape[B.ndim - 2] != k)
		return TI_FAIL(err, TI_E_SHAPE, "mat1 and mat2 shapes cannot be multiplied (%lldx%lld and %lldx%lld)",
		               (long long)m, (long long)k, (long long)B.shape[B.ndim - 2], (long long)n);
	int batch_nd = (A.ndim > B.ndim ? A.ndim : B.ndim) - 2;
	int64_t batch[RT_MAX_DIMS], sa[RT_MAX_DIMS], sb[RT_MAX_DIMS];
	for (int i = 0; i < batch_nd; i++) {
		int ia = i - (batch_nd - (A.ndim - 2)), ib = i - (batch_nd - (B.ndim - 2));
		int64_t da = ia >= 0 ? A.shape[ia] : 1, db = ib >= 0 ? B.shape[ib] : 1;
		if (da != db && da != 1 && db != 1)
			return TI_FAIL(err, TI_E_SHAPE, "The size of tensor a (%lld) must match the size of tensor b (%lld) at "
			               "non-singleton dimension %d", (long long)da, (long long)db, i);
		batch[i] = da > db ? da : db;
		sa[i] = ia >= 0 && da != 1 ? A.stride[ia] : 0;
		sb[i] = ib >= 0 && db != 1 ? B.stride[ib] : 0;
	}
	int64_t shape[RT_MAX_DIMS];
	int nd = 0;
	for (int i = 0; i < batch_nd; i++)
		shape[nd++] = batch[i];
	if (!drop_row)
		shape[nd++] = m;
	if (!drop_col)
		shape[nd++] = n;
	rt_tensor *y;
	if ((st = rt_new(c, TI_DT_FLOAT32, nd, shape, &y, err)))
		return st;
	/* operands sgemm cannot read as they are are copied */
	rt_tensor *ac = NULL, *bc = NULL;
	bool ta, tb;
	int64_t lda, ldb;
	if (!as_matrix(&A, m, k, &ta, &lda)) {
		if ((st = rt_contiguous(c, a, &ac, err)))
			goto fail;
		A = *ac;
		A.ndim = a->ndim;
		if (drop_row) {
			A.shape[1] = k, A.stride[1] = 1, A.shape[0] = 1, A.stride[0] = k, A.ndim = 2;
		}
		for (int i = 0, nb = A.ndim - 2; i < batch_nd; i++) {
			int ia = i - (batch_nd - nb);
			sa[i] = ia >= 0 && A.shape[ia] != 1 ? A.stride[ia] : 0;
		}
		ta = false;
		lda = k;
	}
	if (!as_matrix(&B, k, n, &tb, &ldb)) {
		if ((st = rt_contiguous(c, b, &bc, err)))
			goto fail;
		B = *bc;
		if (drop_col) {
			B.shape[1] = 1, B.stride[1] = 1, B.ndim = 2;
		}
		for (int i = 0, nb = B.ndim - 2; i < batch_nd; i++) {
			int ib = i - (batch_nd - nb);
			sb[i] = ib >= 0 && B.shape[ib] != 1 ? B.stride[ib] : 0;
		}
		tb = false;
		ldb = n;
	}
	{
		const float *pa = (const float *)A.storage->data + A.offset, *pb = (const float *)B.storage->data + B.offset;
		float *py = rt_f32(y);
		int64_t count = 1;
		for (int i = 0; i < batch_nd; i++)
			count *= batch[i];
		int64_t idx[RT_MAX_DIMS] = {0};
		for (int64_t t = 0; t < count; t++) {
			int64_t oa = 0, ob = 0;
			for (int i = 0; i < batch_nd; i++) {
				oa += idx[i] * sa[i];
				ob += idx[i] * sb[i];
			}
			rt_sgemm(ta, tb, m, n, k, 1.0f, pa + oa, lda, pb + ob, ldb, 0.0f, py + t * m * n, n);
			for (int i = batch_nd - 1; i >= 0; i--) {
				if (++idx[i] < batch[i])
					break;
				idx[i] = 0;
			}
		}
	}
	rt_release(c->ex, ac);
	rt_release(c->ex, bc);
	return rt_output(c, y, err);
fail:
	rt_release(c->ex, ac);
	rt_release(c->ex, bc);
	rt_release(c->ex, y);
	return st;
}

ti_status rt_k_matmul(rt_call *c, ti_error *err)
{
	rt_tensor *a, *b;
	ti_status st = rt_arg(c, "input", &a, err);
	if (!st)
		st = rt_arg(c, "other", &b, err);
	return st ? st : matmul_of(c, a, b, err);
}

ti_status rt_k_bmm(rt_call *c, ti_error *err)
{
	rt_tensor *a, *b;
	ti_status st = rt_arg(c, "input", &a, err);
	if (!st)
		st = rt_arg(c, "mat2", &b, err);
	return st ? st : matmul_of(c, a, b, err);
}

/* beta * input + alpha * mat1 @ mat2, input broadcast to the product's shape. */
ti_status rt_k_addmm(rt_call *c, ti_error *err)
{
	rt_tensor *in, *a, *b;
	ti_status st = rt_arg(c, "input", &in, err);
	if (!st)
		st = rt_arg(c, "mat1", &a, err);
	if (!st)
		st = rt_arg(c, "mat2", &b, err);
	if (!st)
		st = need_float("addmm", in, err);
	if (st)
		return st;
	double alpha = 1, beta = 1;
	rt_scalar(ti_bound_get(&c->call->in, "alpha"), &alpha);
	rt_scalar(ti_bound_get(&c->call->in, "beta"), &beta);
	if ((st = matmul_of(c, a, b, err)))
		return st;
	rt_tensor *y = c->out[0];
	int64_t m = y->shape[0], n = y->shape[1];
	float *py = rt_f32(y);
	const float *pi = rt_f32(in);
	int64_t si0 = in->ndim == 2 && in->shape[0] != 1 ? in->stride[0] : 0;
	int64_t si1 = in->ndim >= 1 && in->shape[in->ndim - 1] != 1 ? in->stride[in->ndim - 1] : 0;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++)
			py[i * n + j] = (float)(alpha * py[i * n + j] + beta * pi[i * si0 + j * si1]);
	return TI_OK;
}
