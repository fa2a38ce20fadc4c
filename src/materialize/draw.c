/*
 * draw.c - uniform and normal values from Philox words (see draw.h and tinspect/fill.h).
 *
 * Every loop here runs over a whole batch and has no branch, so that gcc -O2
 * vectorises it (check with -fopt-info-vec): selections are done on bits.
 */
#include "materialize/draw.h"

#include <math.h>
#include <string.h>

#include "util/vec.h"

/*
 * The values are defined by separately rounded operations: a compiler must not
 * fuse a * b + c into one multiply-add where the target has one (-march with
 * FMA). ISO C mode (-std=c11) already keeps gcc from doing so; these keep
 * clang (unless told -ffp-contract=fast), and gcc in its GNU modes, from it.
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

static const double TWO_PI = 6.283185307179586476925286766559;

static inline float float_of_bits(uint32_t b)
{
	float f;
	memcpy(&f, &b, sizeof(f));
	return f;
}

static inline uint32_t bits_of_float(float f)
{
	uint32_t b;
	memcpy(&b, &f, sizeof(b));
	return b;
}

TI_AVX2_CLONES void ti_draw_uniform_f32(const uint32_t w[TI_DRAW_WORDS], int bits, float out[TI_DRAW_WORDS])
{
	int shift = 32 - bits;
	float scale = ldexpf(1.0f, -bits); /* a power of two: the products are exact */
	for (int i = 0; i < TI_DRAW_WORDS; i++)
		out[i] = (float)(int32_t)(w[i] >> shift) * scale; /* below 2^24: exact, and a signed conversion */
}

void ti_draw_uniform_f64(const uint32_t w[TI_DRAW_WORDS], double out[TI_DRAW_WORDS / 2])
{
	for (int i = 0; i < TI_DRAW_WORDS / 2; i++) {
		uint64_t x = (uint64_t)w[2 * i + 1] << 32 | w[2 * i];
		out[i] = (double)(int64_t)(x >> 11) * 0x1p-53;
	}
}

/* u = fl(w) * 2^-32 + 2^-33 in float, as cuRAND's curand_uniform: in [2^-33, 1], never 0. */
static inline float open_uniform(uint32_t w)
{
	return (float)w * 0x1p-32f + 0x1p-33f;
}

/*
 * ln u for u in [2^-33, 1]: Cephes logf (Moshier). u = m 2^e with m in
 * (sqrt(1/2), sqrt(2)]; f = m - 1 (exact); ln(1 + f) = f - f^2/2 + f^3 P(f),
 * e ln 2 added in two parts (0.693359375 exact, -2.12194440e-4 the rest).
 */
static inline float log_open(float u)
{
	uint32_t bits = bits_of_float(u), mant = bits & 0x7fffffu;
	uint32_t big = mant > 0x3504f3u; /* m = 1.mant above sqrt(2): halve it */
	float e = (float)((int32_t)(bits >> 23) - 127 + (int32_t)big);
	float m = float_of_bits((mant | 0x3f800000u) - (big << 23));
	float f = m - 1.0f, f2 = f * f;
	float p = 7.0376836292e-2f;
	p = p * f - 1.1514610310e-1f;
	p = p * f + 1.1676998740e-1f;
	p = p * f - 1.2420140846e-1f;
	p = p * f + 1.4249322787e-1f;
	p = p * f - 1.6668057665e-1f;
	p = p * f + 2.0000714765e-1f;
	p = p * f - 2.4999993993e-1f;
	p = p * f + 3.3333331174e-1f;
	float y = p * f * f2;
	y += -2.12194440e-4f * e;
	y += -0.5f * f2;
	return f + y + 0.693359375f * e;
}

/*
 * cos and sin of 2 pi u for u in [0, 1]: u = q/4 + t with q = nearest
 * integer to 4u (t in [-1/8, 1/8], exact), x = 2 pi t in [-pi/4, pi/4], the
 * Cephes sinf and cosf polynomials on x, and the quadrant q mod 4 swapping and
 * negating them (on the bits: no branch).
 */
static inline void cos_sin_turn(float u, float *c_out, float *s_out)
{
	uint32_t q = (uint32_t)(int32_t)(u * 4.0f + 0.5f);
	float x = (u - (float)(int32_t)q * 0.25f) * 6.28318530717958647692f, x2 = x * x;
	float s = ((-1.9515295891e-4f * x2 + 8.3321608736e-3f) * x2 - 1.6666654611e-1f) * x2 * x + x;
	float c = ((2.443315711809948e-5f * x2 - 1.388731625493765e-3f) * x2 + 4.166664568298827e-2f) * x2 * x2 -
	          0.5f * x2 + 1.0f;
	uint32_t sb = bits_of_float(s), cb = bits_of_float(c), swap = 0u - (q & 1u);
	uint32_t cos_bits = (sb & swap) | (cb & ~swap), sin_bits = (cb & swap) | (sb & ~swap);
	cos_bits ^= ((q + 1u) & 2u) << 30; /* quadrants 1 and 2: cos < 0 */
	sin_bits ^= (q & 2u) << 30;        /* quadrants 2 and 3: sin < 0 */
	*c_out = float_of_bits(cos_bits);
	*s_out = float_of_bits(sin_bits);
}

TI_AVX2_CLONES void ti_draw_normal_f32(const uint32_t w[TI_DRAW_WORDS], float out[TI_DRAW_WORDS])
{
	for (int p = 0; p < TI_DRAW_WORDS / 2; p++) {
		float r = sqrtf(-2.0f * log_open(open_uniform(w[2 * p])));
		float c, s;
		cos_sin_turn(open_uniform(w[2 * p + 1]), &c, &s);
		out[2 * p] = r * c;
		out[2 * p + 1] = r * s;
	}
}

void ti_draw_normal_f64(const uint32_t w[TI_DRAW_WORDS], double out[TI_DRAW_WORDS / 2])
{
	for (int p = 0; p < TI_DRAW_WORDS / 4; p++) {
		uint64_t x1 = (uint64_t)w[4 * p + 1] << 32 | w[4 * p], x2 = (uint64_t)w[4 * p + 3] << 32 | w[4 * p + 2];
		double u1 = 1.0 - (double)(x1 >> 11) * 0x1p-53; /* (0, 1]: log stays finite */
		double u2 = (double)(x2 >> 11) * 0x1p-53;
		double r = sqrt(-2.0 * log(u1)), t = TWO_PI * u2;
		out[2 * p] = r * cos(t);
		out[2 * p + 1] = r * sin(t);
	}
}

TI_AVX2_CLONES void ti_draw_affine_f32(double a, double scale, float x[TI_DRAW_WORDS])
{
	if (a == 0 && scale == 1) { /* a + x, exactly: only -0 becomes +0 when a is +0 */
		float a32 = (float)a;
		for (int i = 0; i < TI_DRAW_WORDS; i++)
			x[i] = a32 + x[i];
		return;
	}
	for (int i = 0; i < TI_DRAW_WORDS; i++)
		x[i] = (float)(a + scale * (double)x[i]);
}

void ti_draw_affine_f64(double a, double scale, double x[TI_DRAW_WORDS / 2])
{
	for (int i = 0; i < TI_DRAW_WORDS / 2; i++)
		x[i] = a + scale * x[i];
}
