/*
 * elementwise.h - what the pointwise rules share (elementwise.c, activation.c,
 * create.c, reduce.c): the layout PyTorch gives a new pointwise result and
 * the dtype of an op that computes in floating point.
 *
 * Results live in the run's arena, like everything a rule makes.
 */
#ifndef TINSPECT_OPS_ELEMENTWISE_H
#define TINSPECT_OPS_ELEMENTWISE_H

#include "ops/op.h"

/*
 * The result of a pointwise op over operands (NULL stands for a Python
 * number, which broadcasts as a zero-dim tensor): their broadcast shape and
 * the strides TensorIterator gives it (aten/src/ATen/TensorIterator.cpp:
 * contiguous when every operand is, else the inputs' memory order), dtype as
 * given. requires_grad when a floating result has an input that requires it.
 * Fails with PyTorch's broadcast message; at most 4 operands (TI_E_INVALID).
 */
ti_status ti_elementwise_new(ti_shape_ctx *ctx, const ti_meta_tensor *const *operands, int count,
                             ti_dtype dtype, ti_meta_tensor **out, ti_error *err);

/* Adds t as the call's output and counts flops_per_element flops per element of it. */
ti_status ti_elementwise_output(ti_op_call *call, const ti_meta_tensor *t, int flops_per_element, ti_error *err);

/*
 * torch.empty_like(t, dtype=dtype) with memory_format=torch.preserve_format:
 * t's strides when t is non-overlapping and dense, else dense strides in t's
 * memory order (infer_dense_strides). requires_grad false; NULL when out of memory.
 */
ti_meta_tensor *ti_meta_like(ti_shape_ctx *ctx, const ti_meta_tensor *t, ti_dtype dtype);

/* A channels-last (4-d) or channels-last-3d (5-d) tensor; NULL for other ranks or out of memory. */
ti_meta_tensor *ti_meta_new_channels_last(ti_shape_ctx *ctx, ti_dtype dtype, int ndim, const ti_dim *shape);

/* The dtype of an op that computes in floating point: integers and bool give the default dtype. */
ti_dtype ti_dtype_to_float(const ti_shape_ctx *ctx, ti_dtype dt);

#endif
