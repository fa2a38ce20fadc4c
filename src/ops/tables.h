/* tables.h - the operator tables registry.c lists, one per file in src/ops/. */
#ifndef TINSPECT_OPS_TABLES_H
#define TINSPECT_OPS_TABLES_H

#include "ops/op.h"

/* The tables are mutable only so that each row can cache its parsed signature. */
extern ti_op_rule ti_ops_elementwise[];     /* elementwise.c: arithmetic, comparisons, where, masked_fill, math */
extern ti_op_rule ti_ops_activation[];      /* activation.c: relu ... softmax, dropout, stochastic_depth */
extern ti_op_rule ti_ops_linalg[];          /* linalg.c: matmul, mm, bmm, baddbmm, linear, bilinear, einsum */
extern ti_op_rule ti_ops_conv[];            /* conv.c: conv1d/2d/3d, conv_transpose1d/2d/3d */
extern ti_op_rule ti_ops_pooling[];         /* pooling.c: max/avg/adaptive pools */
extern ti_op_rule ti_ops_resize[];          /* resize.c: interpolate, pixel_shuffle, pad */
extern ti_op_rule ti_ops_shape[];           /* shape.c: reshape, view, permute, squeeze, expand ... */
extern ti_op_rule ti_ops_join[];            /* join.c: cat, stack, split, chunk, unbind, meshgrid */
extern ti_op_rule ti_ops_index[];           /* index.c: narrow, select, index_select, gather, embedding */
extern ti_op_rule ti_ops_reduce[];          /* reduce.c: sum, mean, amax, amin, argmax, var, std, norm */
extern ti_op_rule ti_ops_norm[];            /* norm.c: batch_norm, layer_norm, group_norm, instance_norm, dropout */
extern ti_op_rule ti_ops_attention[];       /* attention.c: scaled_dot_product_attention */
extern ti_op_rule ti_ops_create[];          /* create.c: arange, zeros, ones, full, to, type */
extern ti_op_rule ti_ops_scan[];            /* scan.c: cumsum, cumprod, logcumsumexp, cummax, cummin */
extern ti_op_rule ti_ops_sort[];            /* sort.c: sort, argsort, msort, topk, kthvalue */
extern ti_op_rule ti_ops_triangular[];      /* triangular.c: triu, tril */
extern ti_op_rule ti_ops_data_dependent[];  /* data_dependent.c: nonzero, unique, masked_select, item: refused */
extern ti_op_rule ti_ops_python[];          /* python.c: size, dim, numel, getitem, operator.*, _assert */

#endif
