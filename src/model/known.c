/*
 * known.c - what a description may name: every operator and module type the
 * shape rules know, for `tinspect ops` and for exporters that must decide
 * what to write as an opaque step.
 */
#include "model/model_internal.h"

typedef struct each {
	void (*fn)(void *user, const ti_model_known *k);
	void *user;
} each;

static const char *const counting_names[] = {"rule", "free", "none"};

static void one_op(void *user, const ti_op_rule *r)
{
	each *e = user;
	ti_model_known k = {false, r->signature, NULL, counting_names[r->counting]};
	e->fn(e->user, &k);
}

static void one_module(void *user, const ti_module_rule *r)
{
	each *e = user;
	ti_model_known k = {true, r->signature, r->forward, counting_names[r->counting]};
	e->fn(e->user, &k);
}

void ti_model_each_known(void (*fn)(void *user, const ti_model_known *k), void *user)
{
	each e = {fn, user};
	ti_op_each(one_op, &e);
	ti_module_each(one_module, &e);
}
