/*
 * draw.h - uniform and normal values from Philox words, a batch of blocks at a time
 * (internal to src/materialize/).
 *
 * The formulas are those of "The random generator" in tinspect/fill.h; these
 * are the loops that compute them over the words of TI_PHILOX_BATCH blocks
 * (ti_philox4x32_10_batch()), written so that the compiler vectorises them
 * with plain -O2: fixed trip counts, no branches, no calls but sqrt. The
 * float32 normal transform uses its own polynomials for log, sin and cos
 * (Cephes's logf, sinf and cosf), so its values are the same bits with any C
 * library and in any lane, vectorised or not: only +, -, *, sqrt and
 * conversions, all rounded to nearest as IEEE 754 defines them.
 *
 * draw.c is compiled with -fno-math-errno (Makefile): a sqrtf that may set
 * errno cannot be vectorised. The values do not depend on it. It also keeps
 * the compiler from fusing multiplies and adds (FMA), which would.
 */
#ifndef TINSPECT_MATERIALIZE_DRAW_H
#define TINSPECT_MATERIALIZE_DRAW_H

#include <stdint.h>

#include "materialize/philox.h"

/* The words of one batch of blocks. */
#define TI_DRAW_WORDS (4 * TI_PHILOX_BATCH)

/* out[i] = (w[i] >> (32 - bits)) * 2^-bits, bits 1..24: uniform on [0, 1), exact in float. */
void ti_draw_uniform_f32(const uint32_t w[TI_DRAW_WORDS], int bits, float out[TI_DRAW_WORDS]);

/* out[i] = (x >> 11) * 2^-53 with x = w[2i + 1]:w[2i] (high:low): uniform on [0, 1). */
void ti_draw_uniform_f64(const uint32_t w[TI_DRAW_WORDS], double out[TI_DRAW_WORDS / 2]);

/*
 * Standard normal values in float32, Box-Muller on the pair of words
 * (w[2p], w[2p + 1]): u = fl(w) * 2^-32 + 2^-33 for each (in (0, 1]),
 * r = sqrt(-2 ln u1), out[2p] = r cos(2 pi u2), out[2p + 1] = r sin(2 pi u2).
 */
void ti_draw_normal_f32(const uint32_t w[TI_DRAW_WORDS], float out[TI_DRAW_WORDS]);

/*
 * Standard normal values in float64, Box-Muller with the C library's log, sqrt,
 * cos and sin on block p = words 4p..4p + 3: x1 = w[4p + 1]:w[4p],
 * x2 = w[4p + 3]:w[4p + 2], u1 = 1 - (x1 >> 11) * 2^-53, u2 = (x2 >> 11) * 2^-53,
 * out[2p] = r cos(2 pi u2), out[2p + 1] = r sin(2 pi u2).
 */
void ti_draw_normal_f64(const uint32_t w[TI_DRAW_WORDS], double out[TI_DRAW_WORDS / 2]);

/*
 * x[i] = fl32(a + scale * x[i]), the sum and product in double and rounded
 * once to float32 (so a later cast to float16 or bfloat16 rounds as a cast of
 * the double would): the value of uniform:A,B (a = A, scale = B - A) and of
 * normal:MEAN,STD (a = MEAN, scale = STD).
 */
void ti_draw_affine_f32(double a, double scale, float x[TI_DRAW_WORDS]);

/* x[i] = a + scale * x[i] in double. */
void ti_draw_affine_f64(double a, double scale, double x[TI_DRAW_WORDS / 2]);

#endif
