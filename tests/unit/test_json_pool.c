/*
 * test_json_pool.c - the program's allocator for cJSON: every block keeps
 * what is written to it, freed blocks are reused, threads keep their own
 * pools, and what the library hands out from cJSON's text is free()-able.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cli/json_pool.h"
#include "tinspect/hf_describe.h"
#include "tinspect/lora.h"
#include "unit.h"

enum { SIZES = 600, ROUNDS = 40 };

/* Blocks of every size from 0 to 599 bytes, each filled with its own byte, freed in a shuffled order and made again. */
static void churn(unsigned seed)
{
	static _Thread_local unsigned char *blocks[SIZES];
	for (int round = 0; round < ROUNDS; round++) {
		for (size_t n = 0; n < SIZES; n++) {
			blocks[n] = cli_json_pool_malloc(n);
			cr_assert(blocks[n] != NULL, "no block of %zu bytes", n);
			cr_assert((uintptr_t)blocks[n] % 8 == 0, "a block of %zu bytes is not 8-byte aligned", n);
			memset(blocks[n], (int)((n + seed) & 0xff), n);
		}
		for (size_t n = 0; n < SIZES; n++)
			for (size_t i = 0; i < n; i++)
				if (blocks[n][i] != (unsigned char)((n + seed) & 0xff))
					cr_assert_fail("byte %zu of the %zu-byte block was overwritten (round %d)", i, n, round);
		for (size_t k = 0; k < SIZES; k++) {
			size_t n = (k * 7919 + (size_t)round) % SIZES;
			cli_json_pool_free(blocks[n]);
		}
	}
}

Test(json_pool, every_block_keeps_its_bytes_through_reuse)
{
	churn(0);
	cli_json_pool_free(NULL);
}

Test(json_pool, a_freed_block_is_the_next_of_its_size)
{
	void *a = cli_json_pool_malloc(64);
	cli_json_pool_free(a);
	void *b = cli_json_pool_malloc(60); /* the same size class */
	EXPECT_INT(a == b, 1);
	cli_json_pool_free(b);
	void *big = cli_json_pool_malloc(100000); /* from malloc: its own */
	cr_assert(big != NULL);
	memset(big, 1, 100000);
	cli_json_pool_free(big);
}

static void *churn_thread(void *arg)
{
	churn((unsigned)(uintptr_t)arg);
	return NULL;
}

Test(json_pool, threads_allocate_and_free_side_by_side)
{
	pthread_t t[3];
	for (uintptr_t i = 0; i < 3; i++)
		cr_assert(pthread_create(&t[i], NULL, churn_thread, (void *)(i + 1)) == 0);
	churn(7);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
}

Test(json_pool, cjson_documents_and_the_library_texts_work_under_it)
{
	cli_json_pool_install();
	/* a document bigger than a chunk, so that a second (huge-page) chunk is cut */
	cJSON *list = cJSON_CreateArray();
	for (int i = 0; i < 40000; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", "layers.0.self_attn.q_proj.weight");
		cJSON_AddNumberToObject(o, "i", i);
		cJSON_AddItemToArray(list, o);
	}
	char *text = cJSON_PrintUnformatted(list);
	cr_assert(text != NULL);
	cJSON *back = cJSON_Parse(text);
	cr_assert(back != NULL);
	EXPECT_INT(cJSON_GetArraySize(back), 40000);
	EXPECT_INT((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(back, 39999), "i")), 39999);
	cJSON_free(text);
	cJSON_Delete(back);
	cJSON_Delete(list);

	/* the description of a config.json and its LoRA rewrite: malloc'd, freed with free() */
	static const char config[] = "{\"model_type\": \"llama\", \"hidden_size\": 64, \"intermediate_size\": 128, "
	                             "\"num_attention_heads\": 4, \"num_hidden_layers\": 2, \"vocab_size\": 100, "
	                             "\"num_key_value_heads\": 2, \"max_position_embeddings\": 128, \"rms_norm_eps\": 1e-5}";
	char *desc = NULL;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(config, strlen(config), &desc, &err) == TI_OK, "%s", err.message);
	ti_lora_config lora;
	cr_assert(ti_lora_parse("r=4", &lora, &err) == TI_OK, "%s", err.message);
	cr_assert(ti_lora_parse_targets("q_proj,v_proj", &lora, &err) == TI_OK, "%s", err.message);
	char *wrapped = NULL;
	size_t modules = 0;
	cr_assert(ti_lora_apply(desc, strlen(desc), &lora, &wrapped, &modules, &err) == TI_OK, "%s", err.message);
	cr_expect(modules > 0, "LoRA wrapped no module");
	cr_expect(strstr(wrapped, "lora_A") != NULL, "the rewrite names no lora_A");
	free(wrapped);
	free(desc);
}
