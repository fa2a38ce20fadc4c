/*
 * vec.h - 16-byte vectors of the GNU C vector extension, for the loops
 * that read every element of a tensor (stats.c, diff.c).
 *
 * GCC and Clang compile these types to SSE2 on x86-64, NEON on arm64 and
 * plain code elsewhere, with the same IEEE results lane by lane as the
 * scalar code. They stay 16 bytes so that no vector is passed in a
 * register the baseline ABI lacks. Where GCC does not find the one
 * instruction in the generic form (a float32 pair widened, minps, maxps),
 * SSE2 is named; every function has the generic form for other targets.
 */
#ifndef TINSPECT_UTIL_VEC_H
#define TINSPECT_UTIL_VEC_H

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/*
 * A function whose loops gcc vectorises is also compiled for AVX2 and the
 * one the CPU has is chosen when the process starts (target clones, an
 * ifunc). Only where the lanes do what the scalar code does: no fused
 * multiply-add (ISO C mode forbids contraction), no approximations.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define TI_AVX2_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define TI_AVX2_CLONES
#endif

typedef float ti_f32x4 __attribute__((vector_size(16)));
typedef double ti_f64x2 __attribute__((vector_size(16)));
typedef int32_t ti_i32x4 __attribute__((vector_size(16)));
typedef int64_t ti_i64x2 __attribute__((vector_size(16)));
typedef uint32_t ti_u32x4 __attribute__((vector_size(16)));

/* Loads from any alignment. */
static inline ti_f32x4 ti_load_f32x4(const float *p)
{
	ti_f32x4 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

static inline ti_f64x2 ti_load_f64x2(const double *p)
{
	ti_f64x2 v;
	memcpy(&v, p, sizeof(v));
	return v;
}

/* Four uint16 at p, each in the low half of a 32-bit lane. */
static inline ti_u32x4 ti_load_u16x4(const unsigned char *p)
{
#ifdef __SSE2__
	return (ti_u32x4)_mm_unpacklo_epi16(_mm_loadl_epi64((const __m128i *)(const void *)p), _mm_setzero_si128());
#else
	uint16_t h[4];
	memcpy(h, p, sizeof(h));
	return (ti_u32x4){h[0], h[1], h[2], h[3]};
#endif
}

static inline void ti_store_f32x4(float *p, ti_f32x4 v)
{
	memcpy(p, &v, sizeof(v));
}

/* The two float32 at p as float64 (exact); GCC makes the generic form of two scalar conversions. */
static inline ti_f64x2 ti_widen_f64x2(const float *p)
{
#ifdef __SSE2__
	return (ti_f64x2)_mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(const void *)p)));
#else
	return (ti_f64x2){p[0], p[1]};
#endif
}

/* Lane by lane x < y ? x : y, and x > y ? x : y: y where either is NaN, as SSE's min and max. */
static inline ti_f32x4 ti_min_f32x4(ti_f32x4 x, ti_f32x4 y)
{
#ifdef __SSE2__
	return (ti_f32x4)_mm_min_ps((__m128)x, (__m128)y);
#else
	ti_i32x4 m = x < y;
	return (ti_f32x4)((m & (ti_i32x4)x) | (~m & (ti_i32x4)y));
#endif
}

static inline ti_f32x4 ti_max_f32x4(ti_f32x4 x, ti_f32x4 y)
{
#ifdef __SSE2__
	return (ti_f32x4)_mm_max_ps((__m128)x, (__m128)y);
#else
	ti_i32x4 m = x > y;
	return (ti_f32x4)((m & (ti_i32x4)x) | (~m & (ti_i32x4)y));
#endif
}

static inline ti_f64x2 ti_min_f64x2(ti_f64x2 x, ti_f64x2 y)
{
#ifdef __SSE2__
	return (ti_f64x2)_mm_min_pd((__m128d)x, (__m128d)y);
#else
	ti_i64x2 m = x < y;
	return (ti_f64x2)((m & (ti_i64x2)x) | (~m & (ti_i64x2)y));
#endif
}

static inline ti_f64x2 ti_max_f64x2(ti_f64x2 x, ti_f64x2 y)
{
#ifdef __SSE2__
	return (ti_f64x2)_mm_max_pd((__m128d)x, (__m128d)y);
#else
	ti_i64x2 m = x > y;
	return (ti_f64x2)((m & (ti_i64x2)x) | (~m & (ti_i64x2)y));
#endif
}

/* Lane by lane m ? x : y, for a mask m of compares (all bits set or none). */
static inline ti_f64x2 ti_select_f64x2(ti_i64x2 m, ti_f64x2 x, ti_f64x2 y)
{
	return (ti_f64x2)((m & (ti_i64x2)x) | (~m & (ti_i64x2)y));
}

/* Whether any lane of a mask of compares is set. */
static inline int ti_any_i64x2(ti_i64x2 m)
{
#ifdef __SSE2__
	return _mm_movemask_pd((__m128d)m) != 0;
#else
	return (m[0] | m[1]) != 0;
#endif
}

/* |x|: the sign bit cleared, as fabs. */
static inline ti_f64x2 ti_abs_f64x2(ti_f64x2 x)
{
	const ti_i64x2 magnitude = {INT64_MAX, INT64_MAX};
	return (ti_f64x2)((ti_i64x2)x & magnitude);
}

#endif
