/*
 * call.c - running a rule: binding, outputs and counts (see ops/op.h).
 */
#include <string.h>

#include "ops/op.h"

/* Parsed signatures live as long as the process: the tables they come from do too. */
static ti_arena signature_arena = {0};

ti_status ti_signature_cached(const char *text, ti_signature **slot, ti_error *err)
{
	if (*slot)
		return TI_OK;
	if (!signature_arena.limit)
		ti_arena_init(&signature_arena, (size_t)64 << 20);
	ti_signature *sig = ti_arena_alloc(&signature_arena, sizeof(*sig));
	if (!sig)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for a signature");
	ti_status st = ti_signature_parse(&signature_arena, text, sig, err);
	if (st)
		return st;
	*slot = sig;
	return TI_OK;
}

ti_status ti_call_output(ti_op_call *call, ti_arg value, ti_error *err)
{
	if (call->output_count == TI_OP_MAX_OUTPUTS)
		return TI_FAIL(err, TI_E_LIMIT, "more than %d outputs from one call", TI_OP_MAX_OUTPUTS);
	value.name = NULL;
	call->outputs[call->output_count++] = value;
	return TI_OK;
}

ti_status ti_call_output_tensor(ti_op_call *call, const ti_meta_tensor *t, ti_error *err)
{
	if (!t)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for an output");
	return ti_call_output(call, ti_arg_tensor(t), err);
}

void ti_call_macs_only(ti_op_call *call, ti_dim macs)
{
	ti_symctx *s = call->ctx->sym;
	call->macs = ti_dim_add(s, call->macs, macs);
	call->flops = ti_dim_add(s, call->flops, ti_dim_mul(s, macs, ti_dim_int(2)));
	call->counted = true;
}

void ti_call_count_as(ti_op_call *call, ti_dim flops_torch, ti_dim flops_fvcore)
{
	ti_symctx *s = call->ctx->sym;
	call->flops_torch = ti_dim_add(s, call->flops_torch, flops_torch);
	call->flops_fvcore = ti_dim_add(s, call->flops_fvcore, flops_fvcore);
	call->counted = true;
}

void ti_call_macs(ti_op_call *call, ti_dim macs)
{
	ti_call_macs_only(call, macs);
	ti_call_count_as(call, ti_dim_mul(call->ctx->sym, macs, ti_dim_int(2)), macs);
}

void ti_call_flops(ti_op_call *call, ti_dim flops)
{
	call->flops = ti_dim_add(call->ctx->sym, call->flops, flops);
	call->counted = true;
}

/* Runs rule on args into result, which the caller owns. */
static ti_status run_rule(ti_shape_ctx *ctx, const char *op, const ti_arg *args, int nargs,
                          ti_op_call *result, ti_error *err)
{
	memset(result, 0, sizeof(*result));
	result->ctx = ctx;
	ti_op_rule *rule = (ti_op_rule *)ti_op_find(op);
	if (!rule)
		return TI_FAIL(err, TI_E_CORRUPT, "unknown operator '%s'", op);
	result->rule = rule;
	ti_status st = ti_signature_cached(rule->signature, &rule->parsed, err);
	if (st)
		return st;
	if ((st = ti_bind(ctx, rule->parsed, args, nargs, &result->in, err)))
		return st;
	if (ctx->observer)
		ctx->observer->enter(ctx->observer->user, rule->parsed->name, NULL);
	if ((st = rule->run(result, err)))
		return st;
	if (rule->counting == TI_COUNT_FREE)
		result->counted = true;
	if (rule->counting == TI_COUNT_NONE && !result->counted)
		result->uncounted_part = true;
	if ((st = ti_sym_ok(ctx->sym, err)))
		return st;
	if (ctx->observer)
		ctx->observer->leave(ctx->observer->user, result);
	return TI_OK;
}

ti_status ti_op_invoke(ti_shape_ctx *ctx, const char *op, const ti_arg *args, int nargs,
                       ti_op_call *result, ti_error *err)
{
	return run_rule(ctx, op, args, nargs, result, err);
}

ti_status ti_call_op(ti_op_call *call, const char *op, const ti_arg *args, int nargs,
                     ti_op_call *result, ti_error *err)
{
	ti_status st = run_rule(call->ctx, op, args, nargs, result, err);
	if (st)
		return st;
	ti_symctx *s = call->ctx->sym;
	call->macs = ti_dim_add(s, call->macs, result->macs);
	call->flops = ti_dim_add(s, call->flops, result->flops);
	call->flops_torch = ti_dim_add(s, call->flops_torch, result->flops_torch);
	call->flops_fvcore = ti_dim_add(s, call->flops_fvcore, result->flops_fvcore);
	call->counted = true;
	call->uncounted_part |= result->uncounted_part;
	return TI_OK;
}

ti_status ti_call_forward(ti_op_call *call, const char *op, const ti_arg *args, int nargs, ti_error *err)
{
	ti_op_call sub;
	ti_status st = ti_call_op(call, op, args, nargs, &sub, err);
	for (int i = 0; !st && i < sub.output_count; i++)
		st = ti_call_output(call, sub.outputs[i], err);
	return st;
}
