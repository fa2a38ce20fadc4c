/*
 * cpu_isa.c - the instruction sets oneDNN chooses its CPU kernels for: one
 * table of names (oneDNN's spelling of ONEDNN_MAX_CPU_ISA, oneDNN 2.6's
 * src/cpu/x64/cpu_isa_traits.hpp) and the host's, read from cpuid.
 */
#include <ctype.h>
#include <string.h>

#include "tinspect/memory.h"

/* Every name ONEDNN_MAX_CPU_ISA takes on x86-64, with the family whose float32 convolution kernels it
   selects: the _vnni, _bf16 and _amx extensions add integer and bfloat16 kernels only. */
static const struct {
	const char *name;
	ti_cpu_isa isa;
} isa_names[] = {
	{"avx512_core", TI_ISA_AVX512_CORE}, /* the canonical name of each family first */
	{"avx2", TI_ISA_AVX2},
	{"avx", TI_ISA_AVX},
	{"sse41", TI_ISA_SSE41},
	{"avx512_core_vnni", TI_ISA_AVX512_CORE},
	{"avx512_core_bf16", TI_ISA_AVX512_CORE},
	{"avx512_core_amx", TI_ISA_AVX512_CORE},
	{"avx2_vnni", TI_ISA_AVX2},
};

#define ISA_FAMILIES 4

const char *ti_cpu_isa_name(ti_cpu_isa isa)
{
	return (unsigned)isa < ISA_FAMILIES ? isa_names[isa].name : NULL;
}

int ti_cpu_isa_parse(const char *name)
{
	char lower[32];
	size_t n = strlen(name);
	if (n >= sizeof(lower))
		return -1;
	for (size_t i = 0; i <= n; i++)
		lower[i] = (char)tolower((unsigned char)name[i]);
	for (size_t i = 0; i < sizeof(isa_names) / sizeof(isa_names[0]); i++)
		if (!strcmp(isa_names[i].name, lower))
			return (int)isa_names[i].isa;
	return -1;
}

ti_cpu_isa ti_cpu_isa_host(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
	/* oneDNN's avx512_core: AVX-512 F, BW, VL and DQ (cpu_isa_traits.hpp); gcc's cpu model checks that the
	   operating system saves the registers (XGETBV) as oneDNN's Xbyak does */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
		return TI_ISA_AVX512_CORE;
	if (__builtin_cpu_supports("avx2"))
		return TI_ISA_AVX2;
	if (__builtin_cpu_supports("avx"))
		return TI_ISA_AVX;
	return TI_ISA_SSE41;
#else
	return TI_ISA_AVX512_CORE; /* no x86 kernels to choose between: the figures as measured */
#endif
}
