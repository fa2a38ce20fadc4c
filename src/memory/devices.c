/*
 * devices.c - how much memory a device has: a size ("80GiB", "24GB",
 * "512MiB", bytes) or a GPU by name from one table. A GPU's figure is the
 * total nvidia-smi reports for it (what torch.cuda.get_device_properties
 * calls total_memory, to the MiB); the CUDA context takes its share of it
 * at run time, which the estimate counts as an overhead.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "memory/memory_internal.h"

typedef struct gpu_row {
	const char *name;
	int64_t mib;           /* 0: a name several cards share, which must be said in full */
	const char *variants;  /* those cards, for the error */
} gpu_row;

static const gpu_row gpus[] = {
	{"H200", 143771, NULL},      {"H100-80GB", 81559, NULL},  {"H100", 81559, NULL},
	{"A100-80GB", 81920, NULL},  {"A100-40GB", 40960, NULL},  {"A100", 0, "A100-40GB or A100-80GB"},
	{"L40S", 46068, NULL},       {"L4", 23034, NULL},         {"A10G", 23028, NULL},
	{"A10", 23028, NULL},        {"RTX-4090", 24564, NULL},   {"RTX-3090", 24576, NULL},
	{"V100-32GB", 32768, NULL},  {"V100-16GB", 16384, NULL},  {"V100", 0, "V100-16GB or V100-32GB"},
	{"T4", 15360, NULL},
};

/* The GPUs a size without a unit may have meant ("4090": RTX-4090), as a list for the error; "" none. */
static void gpus_with_number(const char *text, char *out, size_t cap)
{
	size_t n = 0;
	out[0] = '\0';
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]) && n < cap; i++) {
		const char *hit = strstr(gpus[i].name, text);
		if (gpus[i].mib && hit && !isdigit((unsigned char)hit[strlen(text)]) &&
		    (hit == gpus[i].name || !isdigit((unsigned char)hit[-1])))
			n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? ", " : "", gpus[i].name);
	}
}

/* "RTX 4090", "rtx4090", "RTX-4090" all name one row. */
static bool same_gpu(const char *a, const char *b)
{
	for (;;) {
		while (*a == ' ' || *a == '-' || *a == '_')
			a++;
		while (*b == ' ' || *b == '-' || *b == '_')
			b++;
		if (!*a || !*b)
			return !*a && !*b;
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
			return false;
		a++;
		b++;
	}
}

const char *ti_memory_gpu_name(size_t i)
{
	return i < sizeof(gpus) / sizeof(gpus[0]) ? gpus[i].name : NULL;
}

ti_status ti_memory_parse_size(const char *text, int64_t *out, const char **gpu, ti_error *err)
{
	*gpu = NULL;
	for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
		if (same_gpu(text, gpus[i].name)) {
			if (!gpus[i].mib)
				return TI_FAIL(err, TI_E_INVALID, "'%s' names more than one card: say %s", text, gpus[i].variants);
			*out = gpus[i].mib << 20;
			*gpu = gpus[i].name;
			return TI_OK;
		}
	static const struct { const char *suffix; double scale; } units[] = {
		{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"K", 1024.0}, {"M", 1048576.0},
		{"G", 1073741824.0}, {"T", 1099511627776.0}, {"B", 1.0},
	};
	errno = 0;
	char *end;
	double v = strtod(text, &end);
	if (end == text || errno || v < 0 || !isdigit((unsigned char)text[0])) {
		char names[512];
		size_t n = 0;
		for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]) && n < sizeof(names); i++)
			if (gpus[i].mib)
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", n ? ", " : "", gpus[i].name);
		return TI_FAIL(err, TI_E_INVALID, "'%s' is neither a size (80GiB, 24GB, 512MiB) nor a GPU this table knows "
		               "(%s)", text, names);
	}
	while (*end == ' ')
		end++;
	if (!*end) { /* 24 is not 24 bytes, nor 4090 an RTX 4090: a size says its unit */
		char near[128];
		gpus_with_number(text, near, sizeof(near));
		return TI_FAIL(err, TI_E_INVALID, "'%s' has no unit: write a size with one (%sGiB, %sGB, %sMiB; B for "
		               "bytes)%s%s", text, text, text, text, *near ? " or a GPU: " : "", near);
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcasecmp(end, units[i].suffix)) {
			double bytes = v * units[i].scale;
			if (bytes > (double)TI_MEMORY_MAX_BYTES)
				return TI_FAIL(err, TI_E_INVALID, "'%s' is more than 2^62 bytes", text);
			*out = (int64_t)bytes;
			return TI_OK;
		}
	return TI_FAIL(err, TI_E_INVALID, "'%s': unknown unit '%s' (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)", text, end);
}
