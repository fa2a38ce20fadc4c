/*
 * torch_version.c - which PyTorch the step follows: 1.13 (what the CPU
 * figures are measured against, Debian's build) or 2.x (what the CUDA ones
 * are). What differs is read where it applies: the attention kernels in
 * expand_attention.c, the optimizers' defaults and temporaries in optim.c.
 */
#include <string.h>

#include "tinspect/memory.h"

static const char *const names[] = {[TI_TORCH_DEFAULT] = NULL, [TI_TORCH_1_13] = "1.13", [TI_TORCH_2] = "2"};

const char *ti_torch_version_name(ti_torch_version v)
{
	return (unsigned)v < sizeof(names) / sizeof(names[0]) ? names[v] : NULL;
}

int ti_torch_version_parse(const char *name)
{
	if (!strcmp(name, "1.13"))
		return TI_TORCH_1_13;
	/* "2", "2.x" or a release of 2 ("2.4", "2.11"): the rules are the same for every 2.x */
	if (name[0] == '2' && (name[1] == '\0' || (name[1] == '.' && name[2] != '\0' &&
	                                           (!strcmp(name + 2, "x") || strspn(name + 2, "0123456789") == strlen(name + 2)))))
		return TI_TORCH_2;
	return -1;
}

ti_torch_version ti_memory_torch(const ti_memory_options *options)
{
	if (options->torch != TI_TORCH_DEFAULT)
		return options->torch;
	return options->device == TI_MEMORY_CUDA ? TI_TORCH_2 : TI_TORCH_1_13;
}

static const char *const attention_names[] = {[TI_ATTN_DEFAULT] = "default", [TI_ATTN_EAGER] = "eager",
                                              [TI_ATTN_SDPA] = "sdpa", [TI_ATTN_FLASH] = "flash"};

const char *ti_memory_attention_name(ti_memory_attention a)
{
	return (unsigned)a < sizeof(attention_names) / sizeof(attention_names[0]) ? attention_names[a] : NULL;
}

static const char *const loss_names[] = {[TI_LOSS_DEFAULT] = "default", [TI_LOSS_SUM] = "sum",
                                         [TI_LOSS_CROSS_ENTROPY] = "cross-entropy"};

const char *ti_memory_loss_name(ti_memory_loss loss)
{
	return (unsigned)loss < sizeof(loss_names) / sizeof(loss_names[0]) ? loss_names[loss] : NULL;
}
