/*
 * table.c - the one kernel table: every family's rows, looked up by the
 * operator's name (as its shape rule's signature spells it) or by module
 * type. An operator or module without a row runs through its parts, or
 * fails with "no CPU kernel yet for 'X'".
 */
#include <string.h>

#include "run/run_internal.h"
#include "tinspect/run.h"

/* one family a line: each kernels/<family>.c exports its rows */
extern const rt_kernel rt_kernels_elementwise[];
extern const rt_kernel rt_kernels_shape[];
extern const rt_kernel rt_kernels_norm[];
extern const rt_kernel rt_kernels_pool[];
extern const rt_kernel rt_kernels_embedding[];
extern const rt_kernel rt_kernels_attention[];
extern const rt_kernel rt_kernels_rnn[];
extern const rt_kernel rt_kernels_conv[];
extern const rt_kernel rt_kernels_index[];
extern const rt_kernel rt_kernels_resize[];
extern const rt_kernel rt_kernels_reduce[];

static const rt_kernel linalg[] = {
	{"linear", false, rt_k_linear, false},
	{"matmul", false, rt_k_matmul, false},
	{"bmm", false, rt_k_bmm, false},
	{"mm", false, rt_k_bmm, false},
	{"addmm", false, rt_k_addmm, false},
	{NULL, false, NULL, false},
};

static const rt_kernel *const families[] = {
	linalg,
	rt_kernels_elementwise,
	rt_kernels_shape,
	rt_kernels_norm,
	rt_kernels_pool,
	rt_kernels_embedding,
	rt_kernels_attention,
	rt_kernels_rnn,
	rt_kernels_conv,
	rt_kernels_index,
	rt_kernels_resize,
	rt_kernels_reduce,
};

const rt_kernel *rt_kernel_find(const char *name, bool module)
{
	if (!name)
		return NULL;
	for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
		for (const rt_kernel *k = families[f]; k->name; k++)
			if (k->module == module && !strcmp(k->name, name))
				return k;
	return NULL;
}

/* each family's scratch rows, beside its kernels: a row per kernel function */
extern const rt_scratch rt_scratch_conv[];
extern const rt_scratch rt_scratch_attention[];
extern const rt_scratch rt_scratch_rnn[];
static const rt_scratch *const scratch_families[] = {rt_scratch_conv, rt_scratch_attention, rt_scratch_rnn};

int64_t rt_scratch_bytes(const rt_kernel *k, rt_call *c)
{
	for (size_t f = 0; f < sizeof(scratch_families) / sizeof(scratch_families[0]); f++)
		for (const rt_scratch *s = scratch_families[f]; s->run; s++)
			if (s->run == k->run) {
				int64_t n = s->bytes(c);
				return n > 0 ? n : 0;
			}
	return 0;
}

/* Kernels that write into their first argument and return it (x[i] = v): run although their output has a value. */
static const char *const in_place[] = {"setitem", "operator.setitem"};

bool rt_kernel_in_place(const rt_kernel *k)
{
	for (size_t i = 0; k && !k->module && i < sizeof(in_place) / sizeof(in_place[0]); i++)
		if (!strcmp(k->name, in_place[i]))
			return true;
	return false;
}

bool ti_run_has_kernel(const char *name, bool module) { return rt_kernel_find(name, module) != NULL; }

void ti_run_each_kernel(void (*fn)(void *user, const char *name, bool module), void *user)
{
	for (int module = 0; module < 2; module++)
		for (size_t f = 0; f < sizeof(families) / sizeof(families[0]); f++)
			for (const rt_kernel *k = families[f]; k->name; k++)
				if (k->module == (module == 1))
					fn(user, k->name, k->module);
}
