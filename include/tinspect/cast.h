/*
 * cast.h - converting elements from one dtype to another, as PyTorch's `.to()` does on CPU.
 *
 * ti_cast() converts n elements, bit for bit as `tensor.to(dtype)` does for a
 * contiguous tensor on an x86-64 CPU with PyTorch 1.13 (checked against it by
 * tests/conformance/cast_conformance.py, which also checks TI_CAST_NAN_SCALAR
 * against PyTorch's element-by-element path).
 * Buffers hold elements in memory order, little-endian, as a storage does.
 * The caller owns both buffers; ti_cast allocates nothing and keeps no state,
 * so it may be called on any chunk of a tensor, from any thread.
 *
 * Dtypes: float32, float64, float16, bfloat16, int64, int32, int16, int8,
 * uint8, bool; uint16, uint32 and uint64 (PyTorch 2.3+) from and to integers
 * and bool, and to floats. Complex, quantized, float8 and bits dtypes are
 * TI_E_UNSUPPORTED, as are floats to uint16/32/64 (C++ leaves the result
 * undefined and we have no PyTorch to copy it from). ti_cast_supported() says
 * which pairs work.
 *
 * The rules, each checked against PyTorch 1.13 on x86-64:
 *
 *   float32 -> bfloat16  round to nearest even on the bits
 *                        (c10/util/BFloat16.h round_to_nearest_even); every
 *                        NaN becomes 0xFFFF, as the AVX2/AVX-512 copy kernel
 *                        writes it (cvtfp32_bf16 blends in 0xffff; same code
 *                        in 2.x), unless TI_CAST_NAN_SCALAR.
 *   float32 -> float16   round to nearest even, subnormals kept, overflow to
 *                        inf; NaN becomes sign|0x7E00
 *                        (c10/util/Half.h fp16_ieee_from_fp32_value), unless
 *                        TI_CAST_F16_NAN_PAYLOAD.
 *   float64 -> float16, bfloat16
 *                        through float32: double rounding, as c10::Half and
 *                        c10::BFloat16 are built from a float. 1+2^-11+2^-40
 *                        gives 0x3C00 in float16, not 0x3C01. NaN to
 *                        bfloat16 is 0xFFFF as above.
 *   float16 -> bfloat16  through float32; NaN becomes 0x7FC0 (the scalar path).
 *   bfloat16 -> float16  through float32; NaN becomes sign|0x7E00.
 *   float16, bfloat16 -> float32, float64
 *                        exact. A signalling NaN from float16 comes out quiet
 *                        (sign|0x7FC00000|payload<<13); from bfloat16 to
 *                        float32 the bits are kept as they are.
 *   float32 <-> float64  C casts: round to nearest even; NaN payloads kept,
 *                        signalling NaNs quieted (x86 cvtss2sd/cvtsd2ss).
 *   float -> int64       truncation toward zero; NaN, +-inf and values out of
 *                        range give INT64_MIN (0x8000000000000000), which is
 *                        what x86's cvttsd2si writes for C++'s undefined case.
 *   float -> int32       the same with INT32_MIN.
 *   float -> int16, int8 through int32, then the low bits: 70000.0 -> 4464,
 *                        NaN -> 0, 1e10 -> 0.
 *   float -> uint8       through int64, then the low 8 bits: -1.0 -> 255,
 *                        300.7 -> 44, 2^32+7 -> 7 (float64), NaN -> 0.
 *   int -> int           two's complement wrap-around (static_cast).
 *   int -> float32, float64
 *                        round to nearest even from the integer.
 *   int -> float16, bfloat16
 *                        through float32 (double rounding): int64
 *                        2^24+2^16+1 gives bfloat16 2^24.
 *   anything -> bool     x != 0; NaN is true.
 *   bool -> anything     0 or 1.
 *   same dtype           the bytes are copied.
 *
 * Where PyTorch's own paths disagree the flags pick the other answer:
 *   TI_CAST_NAN_SCALAR       NaN to bfloat16 is 0x7FC0 from every source, as
 *                            PyTorch writes it for non-contiguous tensors,
 *                            single values, and with ATEN_CPU_CAPABILITY=default.
 *   TI_CAST_F16_NAN_PAYLOAD  float32 NaN to float16 keeps its sign and the top
 *                            9 payload bits with the quiet bit set
 *                            (sign|0x7E00|mantissa>>13), as F16C's vcvtps2ph
 *                            does; PyTorch 2.1+ uses it for contiguous
 *                            float32 -> float16 on x86.
 */
#ifndef TINSPECT_CAST_H
#define TINSPECT_CAST_H

#include <stdbool.h>
#include <stddef.h>

#include "tinspect/dtype.h"
#include "tinspect/error.h"

#define TI_CAST_NAN_SCALAR 0x1u
#define TI_CAST_F16_NAN_PAYLOAD 0x2u

/*
 * Converts n elements of `from` at src into n elements of `to` at dst. The
 * buffers must not overlap unless src == dst and both dtypes have the same
 * size (an in-place cast, e.g. float32 to int32). Neither needs any
 * alignment. flags: 0 or TI_CAST_* above. TI_E_UNSUPPORTED for a pair that
 * ti_cast_supported() refuses, TI_E_INVALID for NULL buffers with n > 0 or
 * unknown flags.
 */
ti_status ti_cast(ti_dtype from, const void *src, ti_dtype to, void *dst, size_t n, unsigned flags,
                  ti_error *err);

/* Whether ti_cast() converts from `from` to `to`. */
bool ti_cast_supported(ti_dtype from, ti_dtype to);

/*
 * Whether every value of `from` comes back unchanged from `to`: float16 and
 * bfloat16 to float32 and float64, float32 to float64, integers to wider
 * integers that hold their whole range, integers to floats with enough
 * mantissa (uint8 and int8 to float16 and bfloat16, int16 to float32, int32
 * to float64), bool to anything, and a dtype to itself. NaN counts as kept
 * (its payload may be quieted). False for pairs ti_cast() does not support.
 */
bool ti_cast_is_lossless(ti_dtype from, ti_dtype to);

/*
 * PyTorch's name for a dtype's C++ scalar type, as its error messages print
 * it ("Long", "Float", "BFloat16", "Bool"); "" for dtypes without one here.
 */
const char *ti_cast_scalar_type_name(ti_dtype dt);

#endif
