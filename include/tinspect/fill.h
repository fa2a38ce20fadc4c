/*
 * fill.h - fill policies: what a materialized tensor holds when it is not loaded.
 *
 * A policy is parsed once from its text (ti_fill_parse) and then fills any
 * chunk of any tensor (ti_fill). Filling is a pure function of (policy,
 * dtype, key, element index): a tensor filled in one call, in chunks of any
 * size, or by several threads holds the same bytes. A ti_fill_policy owns no
 * memory and may be copied freely; a ti_fill_table lives in the caller's
 * arena.
 *
 * Policies (the text the CLI's --fill takes):
 *
 *   empty            allocated, not written (ti_fill leaves the buffer alone)
 *   zeros            0 (every bit zero, for any dtype)
 *   ones             1
 *   full:V           V, a number as strtod(3) reads it ("0.5", "-3", "1e-3",
 *                    "nan", "inf"); written as a plain integer it is kept
 *                    exactly (full:9007199254740993 into int64)
 *   rand             uniform on [0, 1)
 *   randn            normal, mean 0, standard deviation 1
 *   uniform:A,B      uniform on [A, B); A <= B
 *   normal:MEAN,STD  normal; STD >= 0
 *   arange           element i of the tensor (row-major, from 0) holds i, as
 *                    torch.arange(numel).reshape(shape)
 *   init             the module's default initialisation, resolved per tensor
 *                    by ti_init_policy() or ti_init_policy_by_name()
 *                    (init_rules.h) into one of the policies above
 *   load             the checkpoint's bytes; the caller copies them
 *
 * Dtypes follow PyTorch. Every value is computed in double and converted with
 * ti_cast() (cast.h) and its flag TI_CAST_NAN_SCALAR, as a PyTorch fill
 * converts its scalar: float16 and bfloat16 values go through float32
 * (full:0.1 in float16 is 0x2E66). zeros, ones, full and arange accept every
 * dtype ti_cast() writes (bool: full:V is V != 0); arange refuses bool.
 * rand, randn, uniform and normal accept the float dtypes only, and refuse
 * the others with PyTorch's words: "check_uniform_bounds" (rand, uniform) or
 * "normal_kernel_cpu" (randn, normal) not implemented for 'Long'. full:V
 * refuses a V that does not fit the dtype as torch.full does ("value cannot
 * be converted to type int8 without overflow": finite values beyond the
 * largest float16, out-of-range or non-finite values for integers; an
 * integer V for an unsigned dtype may be negative down to -max, which wraps,
 * as c10 allows). uniform refuses bounds outside the dtype's range and
 * B - A beyond its largest value, as uniform_ does. ti_fill_check() runs
 * these checks without filling.
 *
 * The random generator (documented here for the man page; tests check it):
 *
 *   key     = the 64-bit seed: key[0] = its low 32 bits, key[1] = its high 32
 *   stream  = 64-bit FNV-1a of the tensor's name (offset basis
 *             0xcbf29ce484222325, prime 0x100000001b3, over its bytes)
 *   block b = Philox4x32-10(counter = {b mod 2^32, b / 2^32, stream mod 2^32,
 *             stream / 2^32}, key): four 32-bit words w[0..3]
 *             (Random123's philox4x32_R(10, ...); cuRAND's and PyTorch's CUDA
 *             generator use the same function)
 *
 *   Element i of a tensor (its row-major index, not its byte offset) takes:
 *     rand, uniform, float32/float16/bfloat16:
 *             w = word i mod 4 of block i / 4; u = (w >> (32 - d)) * 2^-d with
 *             d = 24, 11, 8 significand bits, so u is exact in the dtype and
 *             below 1 (as PyTorch's uniform_real_distribution uses the
 *             dtype's digits)
 *     rand, uniform, float64:
 *             words 2(i mod 2) and 2(i mod 2) + 1 of block i / 2 as the low
 *             and high halves of x; u = (x >> 11) * 2^-53
 *     value = A + (B - A) * u in double, then cast: rounding to the dtype may
 *             give B itself, as in PyTorch
 *     randn, normal, float32/float16/bfloat16: a standard normal z drawn in
 *             float32, Box-Muller on pairs of words: elements 4b + 2j and
 *             4b + 2j + 1 (j = 0, 1) take words w[2j] and w[2j + 1] of block
 *             b; u1 = fl(w[2j]) * 2^-32 + 2^-33, u2 = fl(w[2j + 1]) * 2^-32
 *             + 2^-33, in float32 (fl: w rounded to float32; u in [2^-33, 1],
 *             as cuRAND's curand_uniform); r = sqrt(-2 ln u1); element
 *             4b + 2j = r cos(2 pi u2), element 4b + 2j + 1 = r sin(2 pi u2).
 *             ln, cos and sin are tinspect's own float32 polynomials (Cephes's
 *             logf, sinf and cosf; src/materialize/draw.c), evaluated with
 *             IEEE 754 float32 +, -, *, sqrt: the result is within 3 float32
 *             ulps of max(r, 1) (7.5e-7 absolute) of the same formula in
 *             double, and |z| <= sqrt(66 ln 2) = 6.7637
 *     randn, normal, float64: elements 2p and 2p + 1 share block p;
 *             x1 = w[1]:w[0], x2 = w[3]:w[2] (high:low);
 *             u1 = 1 - (x1 >> 11) * 2^-53 in (0, 1], u2 = (x2 >> 11) * 2^-53;
 *             r = sqrt(-2 ln u1); element 2p = r cos(2 pi u2),
 *             element 2p + 1 = r sin(2 pi u2) (Box-Muller in double, with the
 *             C library's log, sin and cos)
 *     randn, normal: value = MEAN + STD * z in double, then cast
 *
 *   Two tensors with different names draw different streams; adding,
 *   removing or reordering tensors changes no other tensor's values; tied
 *   tensors are one storage and are filled once, under the name the caller
 *   chooses. The values are not PyTorch's (its CPU generator is MT19937).
 *   The same seed gives the same tensors from tinspect on every machine:
 *   float32, float16 and bfloat16 values use IEEE 754 arithmetic alone, each
 *   operation rounded on its own (draw.c forbids fused multiply-adds, so
 *   builds with -march and FMA give the same bits); float64 normal values
 *   also need the C library's log, sin and cos to agree (glibc's do). The
 *   batches of blocks drawn together (draw.h) and the threads that draw them
 *   are an implementation detail: they change no value.
 */
#ifndef TINSPECT_FILL_H
#define TINSPECT_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tinspect/arena.h"
#include "tinspect/dtype.h"
#include "tinspect/error.h"
#include "tinspect/fill_policy.h"

/* Where a tensor's random numbers come from: see "The random generator" above. */
typedef struct ti_fill_key {
	uint64_t seed;
	uint64_t stream;
} ti_fill_key;

/* The longest text ti_fill_format() writes, with its NUL. */
#define TI_FILL_TEXT_MAX 64

/* ---- policies ---- */

/*
 * Parses a policy's text. TI_E_INVALID names the text:
 * "bad fill policy 'uniform:1': expected uniform:A,B",
 * "unknown fill policy 'ranf': expected empty, zeros, ...".
 */
ti_status ti_fill_parse(const char *text, ti_fill_policy *out, ti_error *err);

/* A policy in the text ti_fill_parse() reads back ("uniform:-0.125,0.125"); numbers shortest-exact. */
void ti_fill_format(const ti_fill_policy *policy, char *buf, size_t size);


/* ---- filling ---- */

/* The key of the tensor called name under seed: stream = FNV-1a 64 of the name. */
ti_fill_key ti_fill_key_of(uint64_t seed, const char *name);

/* Whether ti_fill() would accept this policy for this dtype; the error is ti_fill()'s. */
ti_status ti_fill_check(const ti_fill_policy *policy, ti_dtype dtype, ti_error *err);

/*
 * Writes elements [offset, offset + n) of a tensor of the given dtype into
 * buf (n * ti_dtype_size(dtype) bytes, any alignment, little-endian). The
 * tensor's elements are numbered row-major from 0 whatever the chunking.
 * TI_E_INVALID for init and load (the caller resolves them), for a range past
 * 2^64, and for the refusals listed at the top; TI_E_UNSUPPORTED for a dtype
 * the policy cannot write (complex ones, for example; a sub-byte dtype for
 * every policy, empty included: its packed elements are only loaded). empty
 * returns TI_OK and writes nothing.
 */
ti_status ti_fill(const ti_fill_policy *policy, ti_dtype dtype, ti_fill_key key, uint64_t offset, size_t n,
                  void *buf, ti_error *err);

/* ---- per-tensor overrides: --fill 'GLOB=POLICY' ---- */

/* The most overrides one table holds. */
#define TI_FILL_TABLE_MAX 4096

typedef struct ti_fill_override {
	const char *glob;       /* fnmatch(3) pattern, flags 0: '*' also matches '.' */
	const char *text;       /* the policy as given */
	ti_fill_policy policy;
} ti_fill_override;

/* Overrides in the order given; everything is allocated in the arena. */
typedef struct ti_fill_table {
	ti_arena *arena;
	ti_fill_override *items;
	size_t count, capacity;
} ti_fill_table;

void ti_fill_table_init(ti_fill_table *table, ti_arena *arena);

/*
 * Adds "GLOB=POLICY" (split at the last '='). TI_E_INVALID for a missing
 * glob or '=', or a bad policy (the message names both); TI_E_LIMIT past
 * TI_FILL_TABLE_MAX; TI_E_NOMEM when the arena says no.
 */
ti_status ti_fill_table_add(ti_fill_table *table, const char *spec, ti_error *err);

/* The override for a tensor name: the last one whose glob matches; NULL when none does. */
const ti_fill_override *ti_fill_table_lookup(const ti_fill_table *table, const char *name);

#endif
