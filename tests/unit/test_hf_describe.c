/*
 * test_hf_describe.c - descriptions built from Hugging Face config.json files
 * (src/model/hf/): the parameter totals of real models from their real
 * configs (fixtures/hf/), the state_dict names transformers' modeling code
 * gives, and errors that name the field or list the known model_types.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cJSON.h>

#include "unit.h"

#include "tinspect/hf_describe.h"
#include "tinspect/memory.h"
#include "tinspect/model.h"
#include "tinspect/safetensors.h"
#include "util/strmap.h"

static char *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f, "cannot open %s", path);
	char *buf = malloc(1 << 20);
	*size = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* The description of a config's text, opened; NULL with err set when describing fails. */
static ti_model *describe_text(const char *text, size_t size, ti_error *err)
{
	char *desc;
	ti_error_clear(err);
	if (ti_hf_describe(text, size, &desc, err))
		return NULL;
	ti_model *m = NULL;
	ti_model_options opts = {0};
	ti_status st = ti_model_open(desc, strlen(desc), &opts, &m, err);
	free(desc);
	cr_assert(st == TI_OK, "the description does not open: %s in '%s'", err->message, err->member);
	return m;
}

static ti_model *describe_file(const char *path)
{
	size_t size;
	char *text = slurp(path, &size);
	ti_error err;
	ti_model *m = describe_text(text, size, &err);
	free(text);
	cr_assert(m, "%s: %s", path, err.message);
	return m;
}

static int64_t total_params(const ti_model *m)
{
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i].buffer || p[i].tied_to)
			continue;
		int64_t e = 1;
		for (int k = 0; k < p[i].ndim; k++)
			e *= p[i].shape[k];
		total += e;
	}
	return total;
}

/*
 * Published parameter totals (tied weights once, as model.num_parameters()
 * counts them) of models whose real config.json is in fixtures/hf/. The
 * totals are the ones the Hugging Face Hub shows from each model's
 * safetensors metadata ("Model size"), and agree with the model cards'
 * rounded figures: Llama 3.1 "8B", Llama 3.2 "1.23B", Mistral "7.24B",
 * Qwen2.5-0.5B "0.49B" (0.36B non-embedding), Qwen2.5-7B "7.61B",
 * gemma-2b "2.51B", Phi-3-mini "3.8B", GPT-2 "124M", Pythia-160M
 * (162,322,944 in the Pythia paper's table), Mixtral "46.7B total",
 * BERT-base "110M" (BertModel with its pooler), Llama-2-7b "6.74B",
 * Qwen3-0.6B "0.6B" (0.44B non-embedding; tied head).
 *
 * The later families' totals were each worked out by hand from the real
 * config and the shapes of transformers' modules (the arithmetic is beside
 * each row), so no template was fitted to a number; they agree with the
 * figures the Hub and the model cards publish: gemma-2-2b ("2.6B"; its
 * model.safetensors.index.json gives 5,228,683,776 bytes in bfloat16,
 * google/gemma-2-2b-it's index as quoted in public documentation, which is
 * this total at 2 bytes each), gemma-2-9b ("9B", 9.24B on the Hub),
 * gemma-3-1b-pt ("1B"; the text model, tied head), Qwen1.5-MoE-A2.7B (model
 * card "14.3B parameters in total"), Qwen3-30B-A3B ("30.5B total"),
 * OLMo-2-1124-7B ("7B"), roberta-base (RobertaModel with its pooler,
 * "125M"), vit-base-patch16-224-in21k (ViTModel with its pooler, "86M"),
 * falcon-7b ("7B"; tied head), t5-small (T5ForConditionalGeneration, "60M";
 * the head and both stacks' embeddings tied to shared) and DeepSeek-V3
 * (671B, without the multi-token-prediction layer its upload adds after
 * layer 60, which transformers' model does not build).
 */
static const struct {
	const char *folder;
	int64_t params;
} published[] = {
	{"fixtures/hf/Llama-3.1-8B/config.json", 8030261248},
	/* Llama-3.1-70B "70B": 2 x 128256 x 8192 (untied) + 80 x (2 x 8192^2 + 2 x 8192 x 1024 + 3 x 8192 x 28672
	   + 2 x 8192) + 8192; the Hub's model.safetensors.index.json total_size, 141,107,412,992 bytes in
	   bfloat16, is this total at 2 bytes each */
	{"fixtures/hf/Llama-3.1-70B/config.json", 70553706496},
	{"fixtures/hf/Llama-3.2-1B/config.json", 1235814400},
	{"fixtures/hf/Llama-2-7b-hf/config.json", 6738415616},
	{"fixtures/hf/Mistral-7B-v0.1/config.json", 7241732096},
	{"fixtures/hf/Qwen2.5-0.5B/config.json", 494032768},
	{"fixtures/hf/Qwen2.5-7B/config.json", 7615616512},
	{"fixtures/hf/Qwen3-0.6B/config.json", 596049920},
	{"fixtures/hf/gemma-2b/config.json", 2506172416},
	{"fixtures/hf/Phi-3-mini-4k-instruct/config.json", 3821079552},
	{"fixtures/hf/gpt2/config.json", 124439808},
	{"fixtures/hf/pythia-160m/config.json", 162322944},
	{"fixtures/hf/Mixtral-8x7B-v0.1/config.json", 46702792704},
	{"fixtures/hf/bert-base-uncased/config.json", 109482240},
	/* 256000*2304 tied + 26*(q 2304*2048 + k,v 2*2304*1024 + o 2048*2304 + mlp 3*2304*9216 + 4 norms*2304) + 2304 */
	{"fixtures/hf/gemma-2-2b/config.json", 2614341888},
	/* 256000*3584 tied + 42*(q,o 2*3584*4096 + k,v 2*3584*2048 + mlp 3*3584*14336 + 4*3584) + 3584 */
	{"fixtures/hf/gemma-2-9b/config.json", 9241705984},
	/* 262144*1152 tied + 26*(q,o 2*1152*1024 + k,v 2*1152*256 + q/k norms 2*256 + mlp 3*1152*6912 + 4*1152) + 1152 */
	{"fixtures/hf/gemma-3-1b-pt/config.json", 999885952},
	/* 2*151936*2048 + 24*(qkv 3*(2048^2+2048) + o 2048^2 + gate 60*2048 + 60 experts 3*2048*1408
	 * + shared 3*2048*5632 + shared gate 2048 + 2*2048) + 2048 */
	{"fixtures/hf/Qwen1.5-MoE-A2.7B/config.json", 14315784192},
	/* 2*151936*2048 + 48*(q,o 2*2048*4096 + k,v 2*2048*512 + 2*128 + gate 128*2048
	 * + 128 experts 3*2048*768 + 2*2048) + 2048 */
	{"fixtures/hf/Qwen3-30B-A3B/config.json", 30532122624},
	/* 2*100352*4096 + 32*(4*4096^2 + q/k norms 2*4096 + mlp 3*4096*11008 + 2*4096) + 4096 */
	{"fixtures/hf/OLMo-2-1124-7B/config.json", 7298617344},
	/* 50265*768 + 514*768 + 1*768 + 2*768 + 12*(4*(768^2+768) + 2*(768*3072) + 3072 + 768 + 2*2*768) + 768^2+768 */
	{"fixtures/hf/roberta-base/config.json", 124645632},
	/* patch conv 3*16*16*768+768, class token 768, positions 197*768, the same 12 layers as BERT-base,
	 * the final layernorm 2*768 and the pooler 768^2+768 */
	{"fixtures/hf/vit-base-patch16-224-in21k/config.json", 86389248},
	/* 65024*4544 tied + 32*(fused qkv 4544*(71+2)*64 + dense 4544^2 + mlp 2*4544*18176 + layernorm 2*4544)
	 * + ln_f 2*4544 */
	{"fixtures/hf/falcon-7b/config.json", 6921720704},
	/* shared 32128*512 + encoder 6*(4*512^2 + 2*512*2048 + 2*512) + decoder 6*(8*512^2 + 2*512*2048 + 3*512)
	 * + a relative_attention_bias 32*8 and a final_layer_norm 512 in each stack */
	{"fixtures/hf/t5-small/config.json", 60506624},
	/* 2*129280*7168 + 61*(MLA 7168*1536 + 1536 + 1536*128*192 + 7168*576 + 512 + 512*128*256 + 128*128*7168
	 * + 2*7168) + 3 dense MLPs 3*7168*18432 + 58*(256 experts 3*7168*2048 + gate 256*7168
	 * + shared expert 3*7168*2048) + 7168; the gates' e_score_correction_bias are buffers */
	{"fixtures/hf/DeepSeek-V3/config.json", 671026404352},
};

Test(hf_describe, counts_the_published_parameters_of_real_models_from_their_configs)
{
	for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
		ti_model *m = describe_file(published[i].folder);
		int64_t got = total_params(m);
		cr_expect(got == published[i].params, "%s: got %" PRId64 " parameters, want %" PRId64, published[i].folder,
		          got, published[i].params);
		ti_model_close(m);
	}
}

Test(hf_describe, propagates_every_real_model_to_logits_of_the_vocabulary)
{
	const char *const names[] = {"B", "T"};
	const int64_t values[] = {2, 8};
	for (size_t i = 0; i < sizeof(published) / sizeof(published[0]); i++) {
		size_t size;
		char *text = slurp(published[i].folder, &size), *desc;
		ti_error err;
		ti_error_clear(&err);
		cr_assert(ti_hf_describe(text, size, &desc, &err) == TI_OK, "%s: %s", published[i].folder, err.message);
		ti_model_options opts = {.bind_names = names, .bind_values = values, .bind_count = 2};
		ti_model *m = NULL;
		cr_assert(ti_model_open(desc, strlen(desc), &opts, &m, &err) == TI_OK, "%s", err.message);
		const ti_model_report *rep;
		cr_assert(ti_model_run(m, &rep, &err) == TI_OK, "%s: %s", published[i].folder, err.message);
		cr_expect(!rep->failed, "%s: step %d raised: %s", published[i].folder, rep->error_step, rep->error.message);
		cr_expect(rep->output_count >= 1 && rep->outputs[0].ndim == 3, "%s: the first output is [B, T, ...]",
		          published[i].folder);
		ti_model_close(m);
		free(desc);
		free(text);
	}
}

/* The first entries of a state_dict, in order, as transformers' modules register them. */
static void expect_names(const char *config, const char *const *want, size_t count)
{
	ti_model *m = describe_file(config);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	cr_assert(n >= count, "%s: %zu entries, want at least %zu", config, n, count);
	for (size_t i = 0; i < count; i++)
		cr_expect(!strcmp(p[i].name, want[i]), "%s: entry %zu is '%s', want '%s'", config, i, p[i].name, want[i]);
	ti_model_close(m);
}

/* Size dim of the named entry of a config's description; -1 when there is no such entry. */
static int64_t size_of(const char *config, const char *name, int dim)
{
	ti_model *m = describe_file(config);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t size = -1;
	for (size_t i = 0; i < n && size < 0; i++)
		if (!strcmp(p[i].name, name) && dim < p[i].ndim)
			size = p[i].shape[dim];
	ti_model_close(m);
	return size;
}

Test(hf_describe, names_phi3s_fused_projections_as_transformers_registers_them)
{
	/* Phi3Attention registers o_proj before qkv_proj; Phi3MLP gate_up_proj, then down_proj */
	static const char *const want[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.o_proj.weight",
		"model.layers.0.self_attn.qkv_proj.weight", "model.layers.0.mlp.gate_up_proj.weight",
		"model.layers.0.mlp.down_proj.weight", "model.layers.0.input_layernorm.weight",
		"model.layers.0.post_attention_layernorm.weight",
	};
	expect_names("fixtures/hf/Phi-3-mini-4k-instruct/config.json", want, sizeof(want) / sizeof(want[0]));
}

Test(hf_describe, names_gpt2s_conv1d_weights_in_then_out)
{
	static const char *const want[] = {
		"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight", "transformer.h.0.ln_1.bias",
		"transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
	};
	expect_names("fixtures/hf/gpt2/config.json", want, sizeof(want) / sizeof(want[0]));
	ti_model *m = describe_file("fixtures/hf/gpt2/config.json");
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	EXPECT_INT(p[4].shape[0], 768);  /* Conv1D(nf=2304, nx=768): weight [nx, nf] */
	EXPECT_INT(p[4].shape[1], 2304);
	EXPECT_STR(p[n - 1].name, "lm_head.weight");
	EXPECT_STR(p[n - 1].tied_to, "transformer.wte.weight");
	ti_model_close(m);
}

Test(hf_describe, gives_qwen2_biases_on_q_k_v_but_not_o)
{
	ti_model *m = describe_file("fixtures/hf/Qwen2.5-0.5B/config.json");
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	bool q = false, o = false;
	for (size_t i = 0; i < n; i++) {
		q |= !strcmp(p[i].name, "model.layers.0.self_attn.q_proj.bias");
		o |= !strcmp(p[i].name, "model.layers.0.self_attn.o_proj.bias");
	}
	cr_expect(q && !o, "q_proj.bias %s, o_proj.bias %s", q ? "present" : "absent", o ? "present" : "absent");
	ti_model_close(m);
}

Test(hf_describe, keeps_every_mixtral_expert_resident)
{
	ti_model *m = describe_file("fixtures/hf/Mixtral-8x7B-v0.1/config.json");
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	bool gate = false, last = false;
	for (size_t i = 0; i < n; i++) {
		gate |= !strcmp(p[i].name, "model.layers.31.block_sparse_moe.gate.weight");
		last |= !strcmp(p[i].name, "model.layers.31.block_sparse_moe.experts.7.w3.weight");
	}
	cr_expect(gate && last, "the router gate and expert 7's w3 of the last layer are parameters");
	ti_model_close(m);
}

Test(hf_describe, gives_gemma2_and_gemma3_four_norms_a_layer_and_gemma3_per_head_qk_norms)
{
	/* Gemma2DecoderLayer registers self_attn, mlp, then input, post-attention, pre- and post-feedforward norms */
	static const char *const want[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
		"model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
		"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight",
		"model.layers.0.input_layernorm.weight", "model.layers.0.post_attention_layernorm.weight",
		"model.layers.0.pre_feedforward_layernorm.weight", "model.layers.0.post_feedforward_layernorm.weight",
	};
	expect_names("fixtures/hf/gemma-2-2b/config.json", want, sizeof(want) / sizeof(want[0]));
	/* Gemma3Attention registers q_norm and k_norm, Gemma3RMSNorm(head_dim), after o_proj */
	static const char *const gemma3[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
		"model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
		"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight",
	};
	expect_names("fixtures/hf/gemma-3-1b-pt/config.json", gemma3, sizeof(gemma3) / sizeof(gemma3[0]));
	EXPECT_INT(size_of("fixtures/hf/gemma-3-1b-pt/config.json", "model.layers.0.self_attn.k_norm.weight", 0), 256);
}

Test(hf_describe, norms_olmo2s_whole_q_and_k_projections_after_each_sublayer)
{
	/* Olmo2Attention: q_norm over num_attention_heads*head_dim, k_norm over num_key_value_heads*head_dim;
	 * Olmo2DecoderLayer has no input norm, a post-attention and a post-feedforward one */
	static const char *const want[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
		"model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
		"model.layers.0.self_attn.q_norm.weight", "model.layers.0.self_attn.k_norm.weight",
		"model.layers.0.mlp.gate_proj.weight", "model.layers.0.mlp.up_proj.weight", "model.layers.0.mlp.down_proj.weight",
		"model.layers.0.post_attention_layernorm.weight", "model.layers.0.post_feedforward_layernorm.weight",
		"model.layers.1.self_attn.q_proj.weight",
	};
	expect_names("fixtures/hf/OLMo-2-1124-7B/config.json", want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(size_of("fixtures/hf/OLMo-2-1124-7B/config.json", "model.layers.0.self_attn.q_norm.weight", 0), 4096);
}

Test(hf_describe, gives_qwen2_moe_a_gated_shared_expert_beside_the_routed_ones)
{
	static const char *const want[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.bias",
		"model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.k_proj.bias",
		"model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.v_proj.bias",
		"model.layers.0.self_attn.o_proj.weight", "model.layers.0.mlp.gate.weight",
		"model.layers.0.mlp.experts.0.gate_proj.weight", "model.layers.0.mlp.experts.0.up_proj.weight",
		"model.layers.0.mlp.experts.0.down_proj.weight",
	};
	static const char config[] = "fixtures/hf/Qwen1.5-MoE-A2.7B/config.json";
	expect_names(config, want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(size_of(config, "model.layers.23.mlp.shared_expert.down_proj.weight", 1), 5632);
	EXPECT_INT(size_of(config, "model.layers.23.mlp.shared_expert_gate.weight", 0), 1);
	EXPECT_INT(size_of(config, "model.layers.23.mlp.experts.59.up_proj.weight", 0), 1408);
}

Test(hf_describe, refuses_a_moe_config_whose_dense_layers_the_template_cannot_place)
{
	/* Qwen2MoeDecoderLayer: a layer in mlp_only_layers, or off decoder_sparse_step, is dense */
	static const char text[] = "{\"model_type\": \"qwen3_moe\", \"vocab_size\": 10, \"hidden_size\": 8,"
	                           " \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"moe_intermediate_size\": 4,"
	                           " \"num_experts\": 2, \"num_experts_per_tok\": 1, \"mlp_only_layers\": [0]}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_INT(err.code, TI_E_UNSUPPORTED);
	cr_expect(strstr(err.message, "config.json's 'mlp_only_layers' is not []") != NULL, "got '%s'", err.message);
}

Test(hf_describe, registers_vits_class_token_and_positions_before_the_patch_embedding)
{
	/* ViTEmbeddings' own parameters come first in its state dict, then its child modules */
	static const char *const want[] = {
		"embeddings.cls_token", "embeddings.position_embeddings", "embeddings.patch_embeddings.projection.weight",
		"embeddings.patch_embeddings.projection.bias", "encoder.layer.0.attention.attention.query.weight",
	};
	static const char config[] = "fixtures/hf/vit-base-patch16-224-in21k/config.json";
	expect_names(config, want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(size_of(config, "embeddings.position_embeddings", 1), 197); /* (224/16)^2 patches + the class token */
	EXPECT_INT(size_of(config, "encoder.layer.11.layernorm_after.weight", 0), 768);
	EXPECT_INT(size_of(config, "pooler.dense.weight", 0), 768);
}

/*
 * Real checkpoints' tensor names: the index (model.safetensors.index.json or
 * pytorch_model.bin.index.json) of a real upload beside its config.json,
 * copied from public GitHub repositories that vendor the Hugging Face files
 * (the shards themselves are not there); fixtures/hf/SOURCES.md names each
 * repository and commit. An index has no shapes, but its total_size is the
 * shards' bytes: at the config's torch_dtype it is the parameter count of the
 * names it lists.
 *
 * RedPajama-INCITE-7B-Base was saved by transformers 4.28, whose GPT-NeoX
 * attention still registered three persistent buffers that later versions
 * dropped or made non-persistent: the causal mask `attention.bias` (bool
 * [1, 1, 2048, 2048], counted as 1/8 byte an element by that version's
 * shard sizes: 524,288 bytes), `attention.masked_bias` (a float16 scalar, 2)
 * and `attention.rotary_emb.inv_freq` (64 float16, 128): 524,418 bytes a
 * layer, 16,781,376 for its 32 layers. The description follows today's
 * modeling code; the test takes exactly those names, and those bytes, as the
 * file's surplus.
 *
 * medgemma-27b-it is a Gemma3ForConditionalGeneration upload: the gemma3
 * template describes its text_config (model_type gemma3_text) as the module
 * language_model, whose names the index gives as "language_model.model.*"
 * (the tied head left out), and its SigLIP vision tower ("vision_tower.")
 * and projector ("multi_modal_projector.") as weights beside it: every name,
 * and the bytes to the byte.
 */
static const struct {
	const char *dir, *index;
	const char *legacy[3]; /* name suffixes of buffers the saving transformers kept */
	int64_t legacy_bytes;  /* and their bytes */
} real_indexes[] = {
	{"fixtures/hf/gemma-2b-it", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/WizardLM-2-8x22B", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/Llama-3.2-3B", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/Mistral-7B-v0.1", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/3PRYMMAL-PHI3-3B-SLERP", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/Qwen3-1.7B", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/cogito-v1-preview-qwen-14B", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/gemma-2-9b-it", "model.safetensors.index.json", {NULL}, 0},
	{"fixtures/hf/falcon-7b-instruct", "pytorch_model.bin.index.json", {NULL}, 0},
	{"fixtures/hf/RedPajama-INCITE-7B-Base", "pytorch_model.bin.index.json",
	 {".attention.bias", ".attention.masked_bias", ".attention.rotary_emb.inv_freq"},
	 32 * (2048 * 2048 / 8 + 2 + 64 * 2)},
	{"fixtures/hf/medgemma-27b-it", "model.safetensors.index.json", {NULL}, 0},
};

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Bytes an element of the config's torch_dtype, as the shards hold it. */
static int element_bytes(const char *config)
{
	size_t size;
	char *text = slurp(config, &size);
	cJSON *json = cJSON_ParseWithLength(text, size);
	free(text);
	const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(json, "torch_dtype"));
	cr_assert(dtype, "%s has no torch_dtype", config);
	int bytes = strcmp(dtype, "float32") == 0 ? 4 : strcmp(dtype, "bfloat16") == 0 || strcmp(dtype, "float16") == 0 ? 2 : 0;
	cr_assert(bytes, "%s: torch_dtype %s", config, dtype);
	cJSON_Delete(json);
	return bytes;
}

Test(hf_describe, names_exactly_the_tensors_of_real_checkpoints_and_their_bytes)
{
	for (size_t f = 0; f < sizeof(real_indexes) / sizeof(real_indexes[0]); f++) {
		const char *dir = real_indexes[f].dir;
		char path[256];
		size_t size;
		snprintf(path, sizeof(path), "%s/%s", dir, real_indexes[f].index);
		char *text = slurp(path, &size);
		cJSON *index = cJSON_ParseWithLength(text, size);
		free(text);
		const cJSON *map = cJSON_GetObjectItemCaseSensitive(index, "weight_map");
		const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(index, "metadata"),
		                                                      "total_size");
		cr_assert(cJSON_IsObject(map) && cJSON_IsNumber(bytes), "%s: no weight_map or total_size", path);
		snprintf(path, sizeof(path), "%s/config.json", dir);
		int element = element_bytes(path);
		ti_model *m = describe_file(path);
		size_t n;
		const ti_model_param *p = ti_model_params(m, &n);
		int64_t elements = 0;
		size_t listed = 0;
		for (size_t i = 0; i < n; i++) {
			if (p[i].buffer && !p[i].persistent)
				continue;
			const char *name = p[i].name;
			bool in_file = cJSON_GetObjectItemCaseSensitive(map, name) != NULL;
			/* save_pretrained leaves a tied head out; a file may also keep it */
			cr_expect(in_file || p[i].tied_to, "%s: '%s' is not in the checkpoint", dir, name);
			if (!in_file)
				continue;
			listed++;
			int64_t e = 1;
			for (int k = 0; k < p[i].ndim; k++)
				e *= p[i].shape[k];
			elements += e;
		}
		/* every name of the file the description lacks is a legacy buffer */
		size_t surplus = 0;
		const cJSON *entry;
		cJSON_ArrayForEach(entry, map)
		{
			bool described = false;
			for (size_t i = 0; i < n && !described; i++)
				described = strcmp(p[i].name, entry->string) == 0;
			bool other = false;
			for (size_t k = 0; k < 3 && real_indexes[f].legacy[k] && !other; k++)
				other = ends_with(entry->string, real_indexes[f].legacy[k]);
			cr_expect(described || other, "%s: the checkpoint has '%s', the description does not", dir, entry->string);
			surplus += !described && other;
		}
		cr_expect(listed + surplus == (size_t)cJSON_GetArraySize(map),
		          "%s: the checkpoint has %d tensors, the description %zu of them and %zu others", dir,
		          cJSON_GetArraySize(map), listed, surplus);
		cr_expect(elements * element + real_indexes[f].legacy_bytes == (int64_t)bytes->valuedouble,
		          "%s: %" PRId64 " bytes at %d an element (+ %" PRId64 " of legacy buffers), the index says %.0f", dir,
		          elements * element, element, real_indexes[f].legacy_bytes, bytes->valuedouble);
		ti_model_close(m);
		cJSON_Delete(index);
	}
}

/*
 * Real safetensors headers: names, dtypes and shapes. tiny-gpt2's
 * model.safetensors (a 2-layer GPT-2 of width 2, as uploaded) is kept with its
 * header byte for byte and its data zeroed; tests/cli/cases also checks the
 * folder with `tinspect check`.
 */
static const char *const real_headers[] = {
	"fixtures/hf/tiny-gpt2",
};

Test(hf_describe, gives_the_names_dtypes_and_shapes_of_real_safetensors_headers)
{
	for (size_t f = 0; f < sizeof(real_headers) / sizeof(real_headers[0]); f++) {
		const char *dir = real_headers[f];
		char path[256];
		snprintf(path, sizeof(path), "%s/model.safetensors", dir);
		FILE *file = fopen(path, "rb");
		cr_assert(file, "cannot open %s", path);
		unsigned char le[8];
		cr_assert(fread(le, 1, 8, file) == 8);
		uint64_t length = 0;
		for (int k = 7; k >= 0; k--)
			length = length << 8 | le[k];
		cr_assert(length > 0 && length < (1u << 20), "%s: header of %" PRIu64 " bytes", path, length);
		char *text = malloc(length);
		cr_assert(fread(text, 1, length, file) == length);
		fclose(file);
		cJSON *header = cJSON_ParseWithLength(text, length);
		free(text);
		cr_assert(cJSON_IsObject(header), "%s: the header is not a JSON object", path);

		snprintf(path, sizeof(path), "%s/config.json", dir);
		ti_model *m = describe_file(path);
		size_t n, in_file = 0;
		const ti_model_param *p = ti_model_params(m, &n);
		for (size_t i = 0; i < n; i++) {
			if (p[i].buffer && !p[i].persistent)
				continue;
			const cJSON *t = cJSON_GetObjectItemCaseSensitive(header, p[i].name);
			cr_expect(t || p[i].tied_to, "%s: '%s' is not in the file", dir, p[i].name);
			if (!t)
				continue;
			in_file++;
			const char *dtype = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(t, "dtype"));
			const char *want = ti_st_dtype_name(p[i].dtype);
			cr_expect(dtype && want && strcmp(dtype, want) == 0, "%s: '%s' is %s in the file, %s in the description",
			          dir, p[i].name, dtype ? dtype : "?", want ? want : ti_dtype_name(p[i].dtype));
			const cJSON *shape = cJSON_GetObjectItemCaseSensitive(t, "shape");
			bool same = cJSON_GetArraySize(shape) == p[i].ndim;
			for (int k = 0; same && k < p[i].ndim; k++)
				same = (int64_t)cJSON_GetArrayItem(shape, k)->valuedouble == p[i].shape[k];
			cr_expect(same, "%s: '%s' has another shape in the file", dir, p[i].name);
		}
		int tensors = cJSON_GetArraySize(header) - (cJSON_GetObjectItemCaseSensitive(header, "__metadata__") != NULL);
		cr_expect(in_file == (size_t)tensors, "%s: the file has %d tensors, the description %zu of them", dir, tensors,
		          in_file);
		ti_model_close(m);
		cJSON_Delete(header);
	}
}

Test(hf_describe, fuses_falcons_multi_query_projection_and_refuses_the_new_architecture)
{
	/* FalconAttention with multi_query: query_key_value gives every head's q and one shared k and v */
	static const char config[] = "fixtures/hf/falcon-7b/config.json";
	EXPECT_INT(size_of(config, "transformer.h.0.self_attention.query_key_value.weight", 0), 4544 + 2 * 64);
	EXPECT_INT(size_of(config, "transformer.h.31.input_layernorm.bias", 0), 4544);
	EXPECT_INT(size_of(config, "transformer.h.0.post_attention_layernorm.weight", 0), -1); /* parallel_attn */
	static const char text[] = "{\"model_type\": \"falcon\", \"vocab_size\": 10, \"hidden_size\": 8,"
	                           " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"new_decoder_architecture\": true}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_INT(err.code, TI_E_UNSUPPORTED);
	cr_expect(strstr(err.message, "'new_decoder_architecture' is not false") != NULL, "got '%s'", err.message);
}

Test(hf_describe, gives_t5s_relative_attention_bias_to_the_first_block_of_each_stack_alone)
{
	/* T5Stack: T5Block(config, has_relative_attention_bias=bool(i == 0)) */
	static const char *const want[] = {
		"shared.weight", "encoder.embed_tokens.weight", "encoder.block.0.layer.0.SelfAttention.q.weight",
		"encoder.block.0.layer.0.SelfAttention.k.weight", "encoder.block.0.layer.0.SelfAttention.v.weight",
		"encoder.block.0.layer.0.SelfAttention.o.weight",
		"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight",
		"encoder.block.0.layer.0.layer_norm.weight", "encoder.block.0.layer.1.DenseReluDense.wi.weight",
		"encoder.block.0.layer.1.DenseReluDense.wo.weight", "encoder.block.0.layer.1.layer_norm.weight",
		"encoder.block.1.layer.0.SelfAttention.q.weight",
	};
	static const char config[] = "fixtures/hf/t5-small/config.json";
	expect_names(config, want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(size_of(config, "decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", 1), 8);
	EXPECT_INT(size_of(config, "decoder.block.1.layer.0.SelfAttention.relative_attention_bias.weight", 0), -1);
	EXPECT_INT(size_of(config, "decoder.block.5.layer.1.EncDecAttention.o.weight", 0), 512);
	EXPECT_INT(size_of(config, "decoder.block.6.layer.0.SelfAttention.q.weight", 0), -1);
}

Test(hf_describe, gives_deepseek_v3_dense_layers_then_moe_layers_with_mla_attention)
{
	static const char config[] = "fixtures/hf/DeepSeek-V3/config.json";
	/* DeepseekV3Attention with q_lora_rank: q_a_proj, q_a_layernorm, q_b_proj, then the compressed kv; the
	   config's fp8 quantization_config gives each Linear its weight_scale_inv (test_hf_quant.c) */
	static const char *const want[] = {
		"model.embed_tokens.weight", "model.layers.0.self_attn.q_a_proj.weight",
		"model.layers.0.self_attn.q_a_proj.weight_scale_inv",
		"model.layers.0.self_attn.q_a_layernorm.weight", "model.layers.0.self_attn.q_b_proj.weight",
		"model.layers.0.self_attn.q_b_proj.weight_scale_inv",
		"model.layers.0.self_attn.kv_a_proj_with_mqa.weight",
		"model.layers.0.self_attn.kv_a_proj_with_mqa.weight_scale_inv",
		"model.layers.0.self_attn.kv_a_layernorm.weight",
		"model.layers.0.self_attn.kv_b_proj.weight", "model.layers.0.self_attn.kv_b_proj.weight_scale_inv",
		"model.layers.0.self_attn.o_proj.weight", "model.layers.0.self_attn.o_proj.weight_scale_inv",
		"model.layers.0.mlp.gate_proj.weight",
	};
	expect_names(config, want, sizeof(want) / sizeof(want[0]));
	EXPECT_INT(size_of(config, "model.layers.0.self_attn.kv_a_proj_with_mqa.weight", 0), 512 + 64);
	EXPECT_INT(size_of(config, "model.layers.2.mlp.up_proj.weight", 0), 18432);     /* first_k_dense_replace 3 */
	EXPECT_INT(size_of(config, "model.layers.2.mlp.gate.weight", 0), -1);
	EXPECT_INT(size_of(config, "model.layers.3.mlp.experts.255.up_proj.weight", 0), 2048);
	EXPECT_INT(size_of(config, "model.layers.60.mlp.shared_experts.down_proj.weight", 1), 2048);
	EXPECT_INT(size_of(config, "model.layers.60.mlp.gate.e_score_correction_bias", 0), 256);
	EXPECT_INT(size_of(config, "model.layers.61.self_attn.q_a_proj.weight", 0), -1);
	/* with the 58 persistent e_score_correction_bias buffers, the state dict holds 671,026,419,200 elements */
	ti_model *m = describe_file(config);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	int64_t buffered = 0;
	for (size_t i = 0; i < n; i++)
		if (p[i].buffer && p[i].persistent && p[i].ndim == 1)
			buffered += p[i].shape[0];
	EXPECT_INT(buffered, 58 * 256);
	EXPECT_INT(total_params(m) + buffered, 671026419200);
	ti_model_close(m);
}

Test(hf_describe, unties_llama_unless_the_config_ties_it)
{
	ti_model *tied = describe_file("fixtures/hf/Llama-3.2-1B/config.json");
	ti_model *untied = describe_file("fixtures/hf/Llama-3.1-8B/config.json");
	size_t n1, n2;
	const ti_model_param *a = ti_model_params(tied, &n1), *b = ti_model_params(untied, &n2);
	EXPECT_STR(a[n1 - 1].name, "lm_head.weight");
	EXPECT_STR(a[n1 - 1].tied_to, "model.embed_tokens.weight");
	EXPECT_STR(b[n2 - 1].name, "lm_head.weight");
	EXPECT_STR(b[n2 - 1].tied_to, NULL);
	ti_model_close(tied);
	ti_model_close(untied);
}

Test(hf_describe, refuses_an_unknown_model_type_listing_the_known_ones)
{
	static const char text[] = "{\"model_type\": \"frobnet\"}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_INT(err.code, TI_E_UNSUPPORTED);
	cr_expect(strstr(err.message, "'frobnet'") && strstr(err.message, "llama") && strstr(err.message, "tinspect-export"),
	          "got '%s'", err.message);
}

Test(hf_describe, names_the_field_a_config_lacks)
{
	static const char text[] = "{\"model_type\": \"mistral\", \"vocab_size\": 10, \"hidden_size\": 8,"
	                           " \"intermediate_size\": 16, \"num_attention_heads\": 2}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_INT(err.code, TI_E_CORRUPT);
	EXPECT_STR(err.message, "config.json has no 'num_hidden_layers', which a mistral model needs");
}

Test(hf_describe, refuses_a_field_of_the_wrong_kind)
{
	static const char text[] = "{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": \"8\","
	                           " \"intermediate_size\": 16, \"num_hidden_layers\": 1, \"num_attention_heads\": 2}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_STR(err.message, "config.json's 'hidden_size' is a string, not a number");
}

/*
 * Configs that leave optional fields out, and the entry whose size the
 * config class's default gives: a describe of each text must have that
 * entry at that index, with that first dimension.
 */
static const struct {
	const char *text;
	size_t entry;
	const char *name;
	int64_t size;
} defaults[] = {
	/* LlamaConfig: num_key_value_heads = num_attention_heads, head_dim = hidden_size // heads */
	{"{\"model_type\": \"llama\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 1, \"num_attention_heads\": 2, \"head_dim\": null}",
	 2, "model.layers.0.self_attn.k_proj.weight", 8},
	/* Qwen3MoeConfig has no head_dim field, unlike Qwen3Config (128): the attention takes hidden_size // heads */
	{"{\"model_type\": \"qwen3_moe\", \"vocab_size\": 10, \"hidden_size\": 8, \"num_hidden_layers\": 1,"
	 " \"num_attention_heads\": 2, \"moe_intermediate_size\": 4, \"num_experts\": 2, \"num_experts_per_tok\": 1}",
	 5, "model.layers.0.self_attn.q_norm.weight", 4},
};

Test(hf_describe, takes_transformers_defaults_for_optional_fields)
{
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		ti_error err;
		ti_model *m = describe_text(defaults[i].text, strlen(defaults[i].text), &err);
		cr_assert(m, "%s", err.message);
		size_t n;
		const ti_model_param *p = ti_model_params(m, &n);
		cr_assert(n > defaults[i].entry, "%zu entries", n);
		EXPECT_STR(p[defaults[i].entry].name, defaults[i].name);
		EXPECT_INT(p[defaults[i].entry].shape[0], defaults[i].size);
		EXPECT_STR(p[n - 1].tied_to, NULL); /* both untied by default */
		ti_model_close(m);
	}
}

Test(hf_describe, tells_a_config_from_a_description)
{
	static const char config[] = "{\"model_type\": \"llama\"}", desc[] = "{\"model_type\": \"x\", \"graph\": []}";
	EXPECT_INT(ti_hf_is_config(config, strlen(config)), 1);
	EXPECT_INT(ti_hf_is_config(desc, strlen(desc)), 0);
}

/* The definition ti_hf_is_config keeps, on a whole tree: what its quick reading of the keys must agree with. */
static int config_by_tree(const char *text, size_t size)
{
	cJSON *j = cJSON_ParseWithLength(text, size);
	int is = cJSON_IsObject(j) && cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j, "model_type")) &&
	         !cJSON_GetObjectItemCaseSensitive(j, "graph");
	cJSON_Delete(j);
	return is;
}

Test(hf_describe, tells_a_config_by_its_keys_as_a_whole_parse_would)
{
	static const char *const cases[] = {
		"{\"model_type\": \"llama\", \"x\": {\"graph\": 1}}",      /* a nested graph is no description */
		"{\"model_type\": 7}",                                  /* not a string */
		"{\"model_type\": 7, \"model_type\": \"llama\"}",         /* the first one counts */
		"{\"model_type\": \"llama\", \"model_type\": 7}",
		"{\"model\\u005ftype\": \"llama\"}",                     /* an escaped key */
		"{\"gr\\u0061ph\": [], \"model_type\": \"x\"}",
		"{\"a\": \"}{\\\"graph\\\": [\", \"model_type\": \"x\"}",  /* braces and quotes in a string */
		"{\"model_type\": \"x\", \"b\": [1, {\"c\": [2, 3]}, \"]\"]}",
		"{\"model_type\": \"x\",}",                               /* invalid: a trailing comma */
		"{\"model_type\": \"x\"",                                 /* cut short */
		"{\"model_type\": \"x\", \"b\": }",
		"[{\"model_type\": \"x\"}]",
		"\xef\xbb\xbf{\"model_type\": \"x\"}",                     /* a byte-order mark */
		"  \n{ \"graph\" : [] , \"model_type\" : \"x\" }",
		"{\"model_type\": \"x\"} trailing",
		"{}", "", "{", "}", "{\"model_type\"}", "{\"model_type\": }", "{:}",
	};
	/* a NUL inside a key: cJSON compares the C string, so these name model_type and graph */
	static const char nul_key[] = "{\"model_type\0x\": \"llama\"}", nul_graph[] = "{\"model_type\": \"x\", \"graph\0\": 1}";
	EXPECT_INT(ti_hf_is_config(nul_key, sizeof(nul_key) - 1), config_by_tree(nul_key, sizeof(nul_key) - 1));
	EXPECT_INT(ti_hf_is_config(nul_graph, sizeof(nul_graph) - 1), config_by_tree(nul_graph, sizeof(nul_graph) - 1));
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (ti_hf_is_config(cases[i], strlen(cases[i])) != config_by_tree(cases[i], strlen(cases[i])))
			cr_assert_fail("case %zu, %s: says %d, a whole parse says %d", i, cases[i],
			               ti_hf_is_config(cases[i], strlen(cases[i])), config_by_tree(cases[i], strlen(cases[i])));
	/* random documents of those pieces, some cut or with a byte changed */
	static const char *const keys[] = {"\"model_type\"", "\"graph\"", "\"other\"", "\"model\\u005ftype\"", "\"gr\\u0061ph\""};
	static const char *const values[] = {"\"llama\"", "12", "-1.5e3", "true", "null", "[]", "{}",
	                                     "{\"graph\": [1, \"}\"]}", "[\"a\\\"b\", {\"model_type\": 1}]", "\"{[\"", "\"\\\\\""};
	unsigned seed = 12345;
	char doc[512];
	for (int n = 0; n < 20000; n++) {
		size_t len = 0;
		doc[len++] = '{';
		int members = (int)((seed = seed * 1103515245u + 12345u) >> 16) % 4;
		for (int m = 0; m < members; m++) {
			const char *k = keys[((seed = seed * 1103515245u + 12345u) >> 16) % 5];
			const char *v = values[((seed = seed * 1103515245u + 12345u) >> 16) % 11];
			len += (size_t)snprintf(doc + len, sizeof(doc) - len, "%s%s: %s", m ? ", " : "", k, v);
		}
		doc[len++] = '}';
		doc[len] = 0;
		unsigned r = (seed = seed * 1103515245u + 12345u) >> 16;
		if (r % 4 == 1)
			len = r / 4 % len; /* cut */
		else if (r % 4 == 2)
			doc[r / 4 % len] = ",:{}[]\"\\ x0"[r / 64 % 12]; /* a byte changed, a NUL among them */
		if (ti_hf_is_config(doc, len) != config_by_tree(doc, len))
			cr_assert_fail("document %d, %.*s: says %d, a whole parse says %d", n, (int)len, doc,
			               ti_hf_is_config(doc, len), config_by_tree(doc, len));
	}
}

/*
 * Which layers slide, as transformers' config classes derive layer_types
 * (sliding_attention for layer i): Gemma 2 when (i + 1) % 2, Gemma 3 when
 * (i + 1) % sliding_window_pattern, Qwen2 when use_sliding_window and
 * i >= max_window_layers, Mistral and Phi-3 on every layer while
 * sliding_window is set; a config's own layer_types list wins. want lists
 * the sliding layers' indices (-1 ends), window their window.
 */
static const struct {
	const char *text;
	int64_t window;
	int want[8];
} sliding[] = {
	{"{\"model_type\": \"gemma2\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 5, \"num_attention_heads\": 2, \"head_dim\": 4, \"sliding_window\": 7}",
	 7, {0, 2, 4, -1}},
	{"{\"model_type\": \"gemma3_text\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 7, \"num_attention_heads\": 2, \"head_dim\": 4, \"sliding_window\": 9,"
	 " \"sliding_window_pattern\": 3}",
	 9, {0, 1, 3, 4, 6, -1}},
	{"{\"model_type\": \"qwen2\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 4, \"num_attention_heads\": 2, \"sliding_window\": 5,"
	 " \"use_sliding_window\": true, \"max_window_layers\": 2}",
	 5, {2, 3, -1}},
	{"{\"model_type\": \"qwen2\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 4, \"num_attention_heads\": 2, \"sliding_window\": 5, \"max_window_layers\": 0}",
	 0, {-1}}, /* use_sliding_window defaults to false */
	{"{\"model_type\": \"mistral\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 2, \"num_attention_heads\": 2}",
	 4096, {0, 1, -1}}, /* MistralConfig's default sliding_window */
	{"{\"model_type\": \"mistral\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"sliding_window\": null}",
	 0, {-1}},
	{"{\"model_type\": \"gemma3_text\", \"vocab_size\": 10, \"hidden_size\": 8, \"intermediate_size\": 16,"
	 " \"num_hidden_layers\": 3, \"num_attention_heads\": 2, \"head_dim\": 4, \"sliding_window\": 6,"
	 " \"layer_types\": [\"full_attention\", \"sliding_attention\", \"full_attention\"]}",
	 6, {1, -1}},
};

Test(hf_describe, marks_the_sliding_layers_as_transformers_configs_derive_them)
{
	for (size_t c = 0; c < sizeof(sliding) / sizeof(sliding[0]); c++) {
		ti_error err;
		ti_model *m = describe_text(sliding[c].text, strlen(sliding[c].text), &err);
		cr_assert(m, "%s", err.message);
		for (int i = 0; i < 8; i++) {
			char path[64];
			snprintf(path, sizeof(path), "model.layers.%d.self_attn", i);
			bool slides = false;
			for (int k = 0; sliding[c].want[k] >= 0; k++)
				slides |= sliding[c].want[k] == i;
			cr_expect_eq(ti_model_kv_window(m, path), slides ? sliding[c].window : 0, "config %zu layer %d", c, i);
		}
		ti_model_close(m);
	}
}

Test(hf_describe, refuses_layer_types_that_do_not_list_every_layer)
{
	static const char text[] = "{\"model_type\": \"gemma2\", \"vocab_size\": 10, \"hidden_size\": 8,"
	                           " \"intermediate_size\": 16, \"num_hidden_layers\": 3, \"num_attention_heads\": 2,"
	                           " \"layer_types\": [\"full_attention\"]}";
	ti_error err;
	cr_assert(!describe_text(text, strlen(text), &err));
	EXPECT_STR(err.message, "config.json's 'layer_types' must list one type per layer (3)");
}

/*
 * The KV cache of real configs at B = 1 and T = 8192, float32, worked out
 * by hand: per token and layer 2 (k, v) x kv_heads x head_dim x 4 bytes;
 * a full layer holds T tokens, a sliding one min(T, window).
 *   gemma-2-2b: 26 layers, 13 sliding (even ones) at 4096, 4 kv heads x 256
 *   gemma-2-9b: 42 layers, 21 sliding at 4096, 8 kv heads x 256
 *   gemma-3-1b-pt: 26 layers, full ones 5, 11, 17, 23 (pattern 6), 22 at 512, 1 kv head x 256
 *   Mistral-7B-v0.1: 32 layers all at 4096, 8 kv heads x 128
 */
static const struct {
	const char *config;
	int64_t full, sliding, window, kv_heads, head_dim;
} kv_cases[] = {
	{"fixtures/hf/gemma-2-2b/config.json", 13, 13, 4096, 4, 256},
	{"fixtures/hf/gemma-2-9b/config.json", 21, 21, 4096, 8, 256},
	{"fixtures/hf/gemma-3-1b-pt/config.json", 4, 22, 512, 1, 256},
	{"fixtures/hf/Mistral-7B-v0.1/config.json", 0, 32, 4096, 8, 128},
};

typedef struct kv_figures { int64_t bytes; int sliding, compressed; } kv_figures;

/*
 * The KV cache of config at B = 1 and T = tokens: the prefill's, or with
 * decode a decode step's beside the cache of T tokens; every layer capped at
 * window when > 0 (--sliding-window).
 */
static kv_figures kv_layout_report(const char *config, int64_t tokens, int64_t window, bool decode, bool compressed)
{
	size_t size;
	char *text = slurp(config, &size), *desc;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, size, &desc, &err) == TI_OK, "%s: %s", config, err.message);
	free(text);
	const char *names[] = {"B", "T"};
	int64_t values[] = {1, tokens};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 2};
	ti_model *m = NULL;
	cr_assert(ti_model_open(desc, strlen(desc), &o, &m, &err) == TI_OK, "%s", err.message);
	free(desc);
	ti_memory_options mo = {.mode = TI_MEMORY_INFER, .kv_window = window, .kv_tokens = decode ? tokens : 0,
	                        .kv_compressed = compressed};
	const ti_memory_report *r = NULL;
	cr_assert(ti_memory_estimate(m, &mo, &r, &err) == TI_OK, "%s", err.message);
	kv_figures f = {r->kv_cache, r->kv_sliding, r->kv_compressed};
	ti_model_close(m);
	return f;
}

static kv_figures kv_report(const char *config, int64_t tokens, int64_t window, bool decode)
{
	return kv_layout_report(config, tokens, window, decode, false);
}

Test(hf_describe, caches_each_sliding_layer_at_most_its_window_of_real_configs)
{
	const int64_t T = 8192;
	for (size_t c = 0; c < sizeof(kv_cases) / sizeof(kv_cases[0]); c++) {
		int64_t per_token = 2 * kv_cases[c].kv_heads * kv_cases[c].head_dim * 4;
		int64_t layers = kv_cases[c].full + kv_cases[c].sliding;
		int64_t want = per_token * (kv_cases[c].full * T + kv_cases[c].sliding * kv_cases[c].window);
		kv_figures f = kv_report(kv_cases[c].config, T, 0, true);
		cr_expect_eq(f.bytes, want, "%s: %lld, not %lld", kv_cases[c].config, (long long)f.bytes, (long long)want);
		cr_expect_eq(f.sliding, (int)kv_cases[c].sliding, "%s", kv_cases[c].config);
		/* the prefill: every layer holds the whole context (a dynamic cache's view of the prefill's keys) */
		f = kv_report(kv_cases[c].config, T, 0, false);
		cr_expect_eq(f.bytes, per_token * layers * T, "%s", kv_cases[c].config);
		cr_expect_eq(f.sliding, 0, "%s", kv_cases[c].config);
		/* --sliding-window overrides, in both: every layer at most 1024 tokens */
		for (int decode = 0; decode < 2; decode++)
			cr_expect_eq(kv_report(kv_cases[c].config, T, 1024, decode).bytes, per_token * layers * 1024, "%s",
			             kv_cases[c].config);
	}
	/* a context inside the window: every layer holds all of it */
	EXPECT_INT(kv_report("fixtures/hf/gemma-2-2b/config.json", 2048, 0, true).bytes,
	           (int64_t)2 * 4 * 256 * 4 * 26 * 2048);
}

/*
 * DeepSeek-V3's MLA cache at B = 1, T = 4096, float32 (61 layers, 128 heads):
 * transformers caches the expanded per-head keys, qk_nope_head_dim 128 +
 * qk_rope_head_dim 64, and values, v_head_dim 128: 128 x (192 + 128) =
 * 40,960 elements a token and layer; DeepSeek's own inference and vLLM keep
 * the latent, kv_lora_rank 512 + qk_rope_head_dim 64 = 576 (71 times less).
 */
Test(hf_describe, caches_deepseeks_mla_expanded_as_transformers_or_compressed_as_its_latent)
{
	const char *config = "fixtures/hf/DeepSeek-V3/config.json";
	const int64_t T = 4096, layers = 61;
	kv_figures expanded = kv_layout_report(config, T, 0, false, false);
	/* transformers' expanded cache: the keys (nope 128 + rope 64 a head) are a new tensor, the values a view
	   of kv_b_proj's output (nope keys and values, 128 + 128 a head), which the cache holds whole */
	EXPECT_INT(expanded.bytes, layers * T * 128 * (192 + 128 + 128) * 4);
	EXPECT_INT(expanded.compressed, 0);
	for (int decode = 0; decode < 2; decode++) {
		kv_figures latent = kv_layout_report(config, T, 0, decode, true);
		EXPECT_INT(latent.bytes, layers * T * (512 + 64) * 4);
		EXPECT_INT(latent.compressed, (int)layers);
	}
	/* a model without MLA keeps its keys and values whatever the layout asked */
	EXPECT_INT(kv_layout_report("fixtures/hf/Mistral-7B-v0.1/config.json", 1024, 0, false, true).bytes,
	           (int64_t)32 * 1024 * 2 * 8 * 128 * 4);
}

/* The report of a config at B = 1, T = tokens under options (mode, expert_parallel ...); closes the model. */
typedef struct moe_figures {
	int64_t weights, communication, experts, held, peak, high;
	bool routing;
} moe_figures;

static moe_figures moe_report(const char *config, int64_t tokens, ti_memory_options mo)
{
	size_t size;
	char *text = slurp(config, &size), *desc;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, size, &desc, &err) == TI_OK, "%s: %s", config, err.message);
	free(text);
	const char *names[] = {"B", "T"};
	int64_t values[] = {1, tokens};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 2};
	ti_model *m = NULL;
	cr_assert(ti_model_open(desc, strlen(desc), &o, &m, &err) == TI_OK, "%s", err.message);
	free(desc);
	const ti_memory_report *r = NULL;
	cr_assert(ti_memory_estimate(m, &mo, &r, &err) == TI_OK, "%s", err.message);
	moe_figures f = {r->weights, r->communication, r->experts, r->experts_held, r->peak, r->peak_high, false};
	for (size_t i = 0; i < r->uncertain_count; i++)
		f.routing |= !strcmp(r->uncertain[i].name, "moe-routing");
	ti_model_close(m);
	return f;
}

/*
 * --strategy ep=K on Mixtral-8x7B (32 MoE layers of 8 experts, each 3 x
 * 4096 x 14336 float32 weights; 2 experts a token; hidden 4096): rank 0
 * holds ceil(8 / K) experts of each layer and everything else, and the
 * all-to-all's dispatch and combine buffers of the routed token states,
 * 2 x (B x T x 2 x 4096 x 4 bytes).
 */
Test(hf_describe, holds_a_ranks_share_of_the_experts_under_expert_parallelism)
{
	const char *config = "fixtures/hf/Mixtral-8x7B-v0.1/config.json";
	const int64_t expert = (int64_t)3 * 4096 * 14336 * 4, T = 16;
	moe_figures one = moe_report(config, T, (ti_memory_options){.mode = TI_MEMORY_INFER});
	EXPECT_INT(one.experts, 256);
	EXPECT_INT(one.held, 256);
	EXPECT_INT(one.communication, 0);
	cr_expect(one.routing, "a MoE model's range names moe-routing");
	static const struct { int64_t k, held; } ranks[] = {{8, 1}, {3, 3}, {2, 4}};
	for (size_t i = 0; i < sizeof(ranks) / sizeof(ranks[0]); i++) {
		moe_figures ep = moe_report(config, T, (ti_memory_options){.mode = TI_MEMORY_INFER,
		                                                           .expert_parallel = ranks[i].k});
		EXPECT_INT(ep.held, 32 * ranks[i].held);
		EXPECT_INT(one.weights - ep.weights, 32 * (8 - ranks[i].held) * expert);
		EXPECT_INT(ep.communication, 2 * (1 * T * 2 * 4096 * 4));
		/* the high end: every rank's tokens routed here, the receive K times the average */
		cr_expect_gt(ep.high - ep.peak, (ranks[i].k - 1) * (T * 2 * 4096 * 4), "ep=%lld", (long long)ranks[i].k);
	}
	/* training: a rank's experts' gradients only */
	moe_figures train = moe_report(config, T, (ti_memory_options){.mode = TI_MEMORY_TRAIN, .expert_parallel = 8});
	EXPECT_INT(train.held, 32);
	/* a dense model has no experts, and no moe-routing */
	moe_figures dense = moe_report("fixtures/hf/Llama-3.2-1B/config.json", T, (ti_memory_options){.mode = TI_MEMORY_INFER});
	EXPECT_INT(dense.experts, 0);
	cr_expect(!dense.routing);
}

/*
 * t5-small (6 + 6 layers, 8 heads of 64, d_model 512) at B = 2, an input of
 * T = 256 tokens and a decoder of U = 64: generation caches the decoder's
 * self-attention (U tokens a layer) and its cross-attention (the encoder's T),
 * never the encoder's own; a decode step runs the decoder alone on one new
 * token, beside the encoder's output, which generation keeps.
 */
static const ti_memory_report *t5_report(int64_t u, int64_t kv_tokens, ti_model **m)
{
	size_t size;
	char *text = slurp("fixtures/hf/t5-small/config.json", &size), *desc;
	ti_error err;
	ti_error_clear(&err);
	cr_assert(ti_hf_describe(text, size, &desc, &err) == TI_OK, "%s", err.message);
	free(text);
	const char *names[] = {"B", "T", "U"};
	int64_t values[] = {2, 256, u};
	ti_model_options o = {.bind_names = names, .bind_values = values, .bind_count = 3};
	cr_assert(ti_model_open(desc, strlen(desc), &o, m, &err) == TI_OK, "%s", err.message);
	free(desc);
	cr_expect_str_eq(ti_model_decode_length(*m), "U", "a decode step adds to the decoder's tokens");
	ti_memory_options mo = {.mode = TI_MEMORY_INFER, .kv_tokens = kv_tokens};
	const ti_memory_report *r = NULL;
	cr_assert(ti_memory_estimate(*m, &mo, &r, &err) == TI_OK, "%s", err.message);
	return r;
}

Test(hf_describe, caches_an_encoder_decoders_decoder_attention_and_cross_attention_but_not_its_encoder)
{
	const int64_t self = (int64_t)6 * 2 * 2 * 8 * 64 * 64 * 4, cross = (int64_t)6 * 2 * 2 * 8 * 256 * 64 * 4;
	ti_model *m;
	const ti_memory_report *r = t5_report(64, 0, &m);
	EXPECT_INT(r->kv_sites, 12);
	EXPECT_INT(r->kv_cache, self + cross);
	ti_model_close(m);
}

Test(hf_describe, decodes_an_encoder_decoder_beside_its_encoders_output_without_running_the_encoder)
{
	const int64_t self = (int64_t)6 * 2 * 2 * 8 * 64 * 64 * 4, cross = (int64_t)6 * 2 * 2 * 8 * 256 * 64 * 4;
	const int64_t encoded = (int64_t)2 * 256 * 512 * 4, scores = (int64_t)2 * 8 * 256 * 256 * 4;
	ti_model *m;
	const ti_memory_report *r = t5_report(1, 64, &m);
	EXPECT_INT(r->kv_cache, self + cross);
	/* held: the encoder's output, beside the ids and the masks (a few KiB) */
	cr_expect(r->inputs >= encoded && r->inputs < encoded + 8192, "the encoder's output is held: inputs %lld",
	          (long long)r->inputs);
	/* one token's work, none of the encoder's (a prefill's score matrices are 2 MiB each): at most the copy
	   PyTorch 1.13's matmul makes of a cross-attention's cached keys (strided: [B, T, H, hd] seen as
	   [B, H, T, hd]) and a token's few KiB */
	const int64_t copy = (int64_t)2 * 8 * 256 * 64 * 4;
	int64_t own = r->peak - r->weights - r->kv_cache - r->inputs;
	cr_expect(own >= copy && own < copy + 128 * 1024 && own < scores, "a decode step's own bytes %lld",
	          (long long)own);
	ti_model_close(m);
}

/* A multimodal wrapper's language model keeps its own rules under its module: Gemma 3's sliding layers. */
Test(hf_describe, slides_a_wrapped_language_models_layers_under_its_module)
{
	/* medgemma-27b-it: 62 layers, every sixth full (sliding_window_pattern 6), the rest at 1024 tokens */
	kv_figures f = kv_report("fixtures/hf/medgemma-27b-it/config.json", 8192, 0, true);
	EXPECT_INT(f.sliding, 52);
	EXPECT_INT(f.bytes, (int64_t)2 * 16 * 128 * 4 * (10 * 8192 + 52 * 1024));
}

Test(hf_describe, names_what_a_wrapped_config_lacks)
{
	static const struct { const char *config, *message; } cases[] = {
		{"{\"model_type\": \"gemma3\", \"vision_config\": {}}",
		 "config.json has no 'text_config' object, which a gemma3 model needs"},
		{"{\"model_type\": \"gemma3\", \"text_config\": {\"model_type\": \"gemma9_text\"}}",
		 "unknown model_type 'gemma9_text'"},
		{"{\"model_type\": \"gemma3\", \"text_config\": {\"vocab_size\": 1000}}",
		 "text_config: config.json has no 'hidden_size', which a gemma3_text model needs"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_error err;
		ti_error_clear(&err);
		char *desc = NULL;
		cr_expect(ti_hf_describe(cases[i].config, strlen(cases[i].config), &desc, &err) == TI_E_CORRUPT ||
		              err.code == TI_E_UNSUPPORTED,
		          "case %zu", i);
		cr_expect(strstr(err.message, cases[i].message), "case %zu: %s", i, err.message);
		free(desc);
	}
}

/*
 * llama.cpp's converter tables: the families no real index or header was
 * found for (see docs/huggingface.md) are held to the Hugging Face names that
 * llama.cpp's convert_hf_to_gguf.py maps for the architecture, written to
 * fixtures/hf/llama_cpp_tensor_names.json by
 * tests/conformance/llama_cpp_tensor_names.py from a llama.cpp tree (the
 * commit is in the file and in fixtures/hf/SOURCES.md). Each name of the
 * description, after the converter's own unconditional drops and renames
 * (filter_tensors, prepare_tensors: the fixture's rules without a guard),
 * must be one of the patterns of a tensor the architecture has, or a
 * per-expert name an MoE class stacks; and each tensor the architecture has
 * must be named by the description unless it is listed below as not applying.
 * ViT: llama.cpp registers no converter class for ViTModel (its vision
 * tables map CLIP/SigLIP-style towers of multimodal models for mmproj, under
 * other names), so vit is held to transformers' own converter instead (the
 * last test of this file); the last assertion here fails when a regenerated
 * fixture maps it, so that it gets its row.
 */
static const struct {
	const char *family, *config;
} llama_cpp_families[] = {
	{"bert", "fixtures/hf/bert-base-uncased/config.json"},
	{"roberta", "fixtures/hf/roberta-base/config.json"},
	{"t5", "fixtures/hf/t5-small/config.json"},
	{"olmo2", "fixtures/hf/OLMo-2-1124-7B/config.json"},
	{"qwen2_moe", "fixtures/hf/Qwen1.5-MoE-A2.7B/config.json"},
	{"qwen3_moe", "fixtures/hf/Qwen3-30B-A3B/config.json"},
	{"deepseek_v3", "fixtures/hf/DeepSeek-V3/config.json"},
};

/*
 * Names the tables do not map because the converter handles them itself,
 * under a condition the fixture keeps as text (its guard): accepted by name,
 * and only if the fixture has a rule of the family's converter for the name.
 */
static const struct {
	const char *family, *name;
} converter_handled[] = {
	/* conversion/t5.py T5Model.modify_tensors: shared.weight and the stacks'
	   embed_tokens are one tied tensor; the first met is written as
	   shared.weight (token_embd), the others skipped */
	{"t5", "encoder.embed_tokens.weight"},
	{"t5", "decoder.embed_tokens.weight"},
};

/*
 * Tensors of the llama.cpp architecture that the committed config's model
 * does not have, each checked against transformers' modeling code.
 */
static const struct {
	const char *family, *tensor;
} not_applying[] = {
	/* BERT (and RoBERTa, converted as BERT): a post-norm encoder, no final
	   norm (modeling_bert.py BertEncoder); ATTN_QKV is the fused projection of
	   other BERT-like models the arch serves (nomic-bert's Wqkv); CLS/CLS_OUT
	   are a sequence-classification head (BertForSequenceClassification,
	   renamed by BertModel.modify_tensors when the config has id2label), not
	   in BertModel */
	{"bert", "OUTPUT_NORM"},
	{"bert", "ATTN_QKV"},
	{"bert", "CLS"},
	{"bert", "CLS_OUT"},
	{"roberta", "OUTPUT_NORM"},
	{"roberta", "ATTN_QKV"},
	{"roberta", "CLS"},
	{"roberta", "CLS_OUT"},
	/* T5: modeling_t5.py T5LayerCrossAttention builds T5Attention with
	   has_relative_attention_bias=False (the table's cross-attention bias is
	   for other T5-like uploads); ffn_gate is wi_0 of the gated feed-forward
	   (T5 v1.1, FLAN-T5), t5-small's feed_forward_proj is relu: one wi */
	{"t5", "DEC_CROSS_ATTN_REL_B"},
	{"t5", "ENC_FFN_GATE"},
	{"t5", "DEC_FFN_GATE"},
	/* DeepSeek-V3: rotary inv_freq is a non-persistent buffer (the converter
	   drops *.rotary_emb.inv_freq, conversion/base.py prepare_tensors);
	   ATTN_Q is the path without q_lora_rank (V2-Lite), V3 has 1536 (q_a_proj,
	   q_b_proj); MLA has no k_proj/v_proj (modeling_deepseek_v3.py
	   DeepseekV3Attention: kv_a_proj_with_mqa, kv_b_proj); NEXTN_* is the
	   multi-token-prediction layer the upload adds after the last layer, which
	   transformers does not build and the converter skips (skip_mtp) */
	{"deepseek_v3", "ROPE_FREQS"},
	{"deepseek_v3", "ATTN_ROT_EMBD"},
	{"deepseek_v3", "ATTN_Q"},
	{"deepseek_v3", "ATTN_K"},
	{"deepseek_v3", "ATTN_V"},
	{"deepseek_v3", "NEXTN_EH_PROJ"},
	{"deepseek_v3", "NEXTN_EMBED_TOKENS"},
	{"deepseek_v3", "NEXTN_ENORM"},
	{"deepseek_v3", "NEXTN_HNORM"},
	{"deepseek_v3", "NEXTN_SHARED_HEAD_HEAD"},
	{"deepseek_v3", "NEXTN_SHARED_HEAD_NORM"},
};

/* A llama.cpp name pattern against a name: {bid} and {xid} each take one run of digits. */
static bool pattern_matches(const char *pattern, const char *name)
{
	while (*pattern) {
		if (!strncmp(pattern, "{bid}", 5) || !strncmp(pattern, "{xid}", 5)) {
			if (*name < '0' || *name > '9')
				return false;
			while (*name >= '0' && *name <= '9')
				name++;
			pattern += 5;
		} else if (*pattern++ != *name++) {
			return false;
		}
	}
	return *name == '\0';
}

/* As TensorNameMap.get_type_and_name: the name itself, or less ".weight" or ".bias". */
static bool table_matches(const char *pattern, const char *name)
{
	if (pattern_matches(pattern, name))
		return true;
	static const char *const suffixes[] = {".weight", ".bias"};
	for (size_t i = 0; i < 2; i++) {
		size_t n = strlen(name), s = strlen(suffixes[i]);
		char base[512];
		if (n <= s || n >= sizeof(base) || strcmp(name + n - s, suffixes[i]))
			continue;
		memcpy(base, name, n - s);
		base[n - s] = '\0';
		if (pattern_matches(pattern, base))
			return true;
	}
	return false;
}

static bool rule_matches(const cJSON *rule, const char *name)
{
	const char *match = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "match"));
	const char *value = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "value"));
	cr_assert(match && value, "a rule without match or value");
	if (!strcmp(match, "prefix"))
		return starts_with(name, value);
	if (!strcmp(match, "suffix"))
		return ends_with(name, value);
	if (!strcmp(match, "equals"))
		return !strcmp(name, value);
	return strstr(name, value) != NULL; /* contains */
}

enum { MAX_ALTS = 4, NAME_SIZE = 512 };

/*
 * The name with each number from 3 up as 3: the names of every later layer
 * and expert alike, so that each is mapped once. 0 to 2 are kept: the
 * tables' patterns hold such numbers literally (T5's sublayers layer.0/1/2).
 */
static char *name_shape(const char *name)
{
	char *shape = malloc(strlen(name) + 1), *out = shape;
	for (const char *c = name;; c++) {
		if (*c >= '0' && *c <= '9') {
			char *end;
			long number = strtol(c, &end, 10);
			*out++ = number >= 3 ? '3' : *c;
			c = end - 1;
			continue;
		}
		*out++ = *c;
		if (!*c)
			return shape;
	}
}

/* Replace the first "from" in name by "to", in place (the rule's strings are short). */
static void replace_in(char *name, size_t size, const char *from, const char *to)
{
	char *at = strstr(name, from);
	if (!at || !*from)
		return;
	char rest[NAME_SIZE];
	snprintf(rest, sizeof(rest), "%s", at + strlen(from));
	snprintf(at, size - (size_t)(at - name), "%s%s", to, rest);
}

/*
 * Apply a rule to name. Returns false when it drops the tensor. Only the
 * rules without a guard apply; modify_tensors' replace rules (DeepSeek's
 * kv_b_proj split into k_b/v_b) each give a further name, in alts.
 */
static bool apply_rule(const cJSON *rule, char *name, size_t size, char (*alts)[NAME_SIZE], int *n_alts)
{
	if (!cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(rule, "guard")) || !rule_matches(rule, name))
		return true;
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "rule"));
	const char *method = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "method"));
	const char *from = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "from"));
	const char *to = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(rule, "to"));
	if (!strcmp(kind, "drop"))
		return false;
	if (!strcmp(kind, "set")) {
		snprintf(name, size, "%s", to);
	} else if (!strcmp(kind, "strip_prefix")) {
		memmove(name, name + strlen(from), strlen(name) - strlen(from) + 1);
	} else if (!strcmp(kind, "replace_suffix")) {
		name[strlen(name) - strlen(from)] = '\0';
		strncat(name, to, size - strlen(name) - 1);
	} else if (!strcmp(kind, "replace") && !strcmp(method, "modify_tensors")) {
		cr_assert(*n_alts < MAX_ALTS, "'%s': more names than the test holds", name);
		snprintf(alts[*n_alts], NAME_SIZE, "%s", name);
		replace_in(alts[(*n_alts)++], NAME_SIZE, from, to);
	} else if (!strcmp(kind, "replace")) {
		replace_in(name, size, from, to);
	}
	return true;
}

/* The index in the family's tensor list of the tensor a name maps to, or -1. */
static int map_name(const cJSON *doc, const cJSON *family, const char *name)
{
	const cJSON *tables = cJSON_GetObjectItemCaseSensitive(doc, "tensors");
	const cJSON *classes = cJSON_GetObjectItemCaseSensitive(doc, "converter_classes");
	const cJSON *tensor;
	int index = 0;
	cJSON_ArrayForEach(tensor, cJSON_GetObjectItemCaseSensitive(family, "tensors"))
	{
		const cJSON *pattern;
		cJSON_ArrayForEach(pattern, cJSON_GetObjectItemCaseSensitive(
		                                    cJSON_GetObjectItemCaseSensitive(tables, tensor->valuestring), "hf"))
		{
			if (table_matches(pattern->valuestring, name))
				return index;
		}
		/* the per-expert names an MoE class stacks into this tensor */
		const cJSON *cls;
		cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(family, "converter_chain"))
		{
			const cJSON *stack;
			cJSON_ArrayForEach(stack, cJSON_GetObjectItemCaseSensitive(
			                                  cJSON_GetObjectItemCaseSensitive(classes, cls->valuestring), "stacks"))
			{
				const char *stacked_to = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(stack, "tensor"));
				const char *per_expert = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(stack, "per_expert"));
				if (stacked_to && !strcmp(stacked_to, tensor->valuestring) && table_matches(per_expert, name))
					return index;
			}
		}
		index++;
	}
	return -1;
}

/* Whether the family's converter has a rule, guarded or not, for the name. */
static bool converter_has_rule_for(const cJSON *doc, const cJSON *family, const char *name)
{
	const cJSON *cls, *rule;
	cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(family, "converter_chain"))
	{
		cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(
		                             cJSON_GetObjectItemCaseSensitive(doc, "converter_classes"), cls->valuestring),
		                         "rules"))
		{
			if (rule_matches(rule, name))
				return true;
		}
	}
	return false;
}

static bool listed_for(const char *family, const char *what, bool tensors)
{
	if (tensors) {
		for (size_t i = 0; i < sizeof(not_applying) / sizeof(not_applying[0]); i++)
			if (!strcmp(not_applying[i].family, family) && !strcmp(not_applying[i].tensor, what))
				return true;
		return false;
	}
	for (size_t i = 0; i < sizeof(converter_handled) / sizeof(converter_handled[0]); i++)
		if (!strcmp(converter_handled[i].family, family) && !strcmp(converter_handled[i].name, what))
			return true;
	return false;
}

enum { MAX_ARCH_TENSORS = 64 };

Test(hf_describe, names_what_llama_cpps_converter_maps_for_families_without_a_real_file)
{
	size_t size;
	char *text = slurp("fixtures/hf/llama_cpp_tensor_names.json", &size);
	cJSON *doc = cJSON_ParseWithLength(text, size);
	free(text);
	cr_assert(doc, "fixtures/hf/llama_cpp_tensor_names.json does not parse");
	const cJSON *families = cJSON_GetObjectItemCaseSensitive(doc, "families");
	const cJSON *classes = cJSON_GetObjectItemCaseSensitive(doc, "converter_classes");
	for (size_t f = 0; f < sizeof(llama_cpp_families) / sizeof(llama_cpp_families[0]); f++) {
		const char *fam = llama_cpp_families[f].family;
		const cJSON *family = cJSON_GetObjectItemCaseSensitive(families, fam);
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(family, "tensors");
		cr_assert(cJSON_GetArraySize(list) > 0 && cJSON_GetArraySize(list) <= MAX_ARCH_TENSORS,
		          "%s: no llama.cpp architecture, or more tensors than the test holds", fam);
		bool named[MAX_ARCH_TENSORS] = {false};
		ti_model *m = describe_file(llama_cpp_families[f].config);
		size_t n;
		const ti_model_param *p = ti_model_params(m, &n);
		/* each shape of name once (see name_shape) */
		ti_strmap seen;
		ti_strmap_init(&seen);
		char **shapes = calloc(n, sizeof(*shapes));
		for (size_t i = 0; i < n; i++) {
			if (p[i].buffer && !p[i].persistent)
				continue; /* not in a state_dict, so not in a checkpoint */
			/* a quantized layer's storage beside its weight (DeepSeek-V3's fp8 weight_scale_inv): the
			   converter folds it into the weight first (conversion/base.py, dequant_model, quant_method
			   "fp8": a name ending in "_scale_inv" dequantizes the weight it names, then goes) */
			if (p[i].stores && ends_with(p[i].name, "_scale_inv"))
				continue;
			shapes[i] = name_shape(p[i].name);
			void *existing;
			if (ti_strmap_add(&seen, shapes[i], NULL, &existing) != 0)
				continue;
			char name[NAME_SIZE], alts[MAX_ALTS][NAME_SIZE];
			int n_alts = 0;
			snprintf(name, sizeof(name), "%s", p[i].name);
			bool kept = true;
			const cJSON *cls, *rule;
			cJSON_ArrayForEach(cls, cJSON_GetObjectItemCaseSensitive(family, "converter_chain"))
			{
				cJSON_ArrayForEach(rule, cJSON_GetObjectItemCaseSensitive(
				                             cJSON_GetObjectItemCaseSensitive(classes, cls->valuestring), "rules"))
				{
					kept = kept && apply_rule(rule, name, sizeof(name), alts, &n_alts);
				}
			}
			if (!kept)
				continue; /* dropped by the converter: BERT's pooler */
			int t = map_name(doc, family, name);
			bool mapped = t >= 0;
			if (t >= 0)
				named[t] = true;
			for (int a = 0; a < n_alts; a++) {
				int t_alt = map_name(doc, family, alts[a]);
				mapped = mapped || t_alt >= 0;
				if (t_alt >= 0)
					named[t_alt] = true;
			}
			if (!mapped && listed_for(fam, p[i].name, false)) {
				cr_expect(converter_has_rule_for(doc, family, p[i].name),
				          "%s: '%s' is listed as handled by the converter, which has no rule for it", fam,
				          p[i].name);
				continue;
			}
			cr_expect(mapped, "%s: '%s' (as '%s') is no name llama.cpp maps for %s", fam, p[i].name,
			          name, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(family, "llama_cpp_arch")));
		}
		int index = 0;
		const cJSON *tensor;
		cJSON_ArrayForEach(tensor, list)
		{
			bool exempt = listed_for(fam, tensor->valuestring, true);
			cr_expect(named[index] || exempt, "%s: llama.cpp's %s has %s, the description names none", fam,
			          cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(family, "llama_cpp_arch")),
			          tensor->valuestring);
			cr_expect(!(named[index] && exempt), "%s: %s is listed as not applying, but the description names it",
			          fam, tensor->valuestring);
			index++;
		}
		for (size_t i = 0; i < n; i++)
			free(shapes[i]);
		free(shapes);
		ti_strmap_release(&seen);
		ti_model_close(m);
	}
	/* every exemption is one of its family's tensors */
	for (size_t i = 0; i < sizeof(not_applying) / sizeof(not_applying[0]); i++) {
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(
		    cJSON_GetObjectItemCaseSensitive(families, not_applying[i].family), "tensors");
		bool found = false;
		const cJSON *tensor;
		cJSON_ArrayForEach(tensor, list) found = found || !strcmp(tensor->valuestring, not_applying[i].tensor);
		cr_expect(found, "%s: %s is not a tensor of its llama.cpp architecture", not_applying[i].family,
		          not_applying[i].tensor);
	}
	const cJSON *vit = cJSON_GetObjectItemCaseSensitive(families, "vit");
	cr_expect(vit && cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(vit, "llama_cpp_arch")),
	          "llama.cpp now maps ViT: hold vit to it here");
	cJSON_Delete(doc);
}

/*
 * ViT has no real file here and no llama.cpp converter (above), but the
 * google/vit-* uploads were made by transformers' own converter,
 * src/transformers/models/vit/convert_vit_timm_to_pytorch.py: timm's weights
 * renamed by create_rename_keys and the fused qkv split by read_in_q_k_v.
 * tests/conformance/vit_converter_names.py reads both functions (with `ast`)
 * and writes the names they give for base_model=True to
 * fixtures/hf/vit_converter_names.json (the commit is in the file and in
 * fixtures/hf/SOURCES.md). base_model=True is the converter's path for the
 * *_in21k models, which it saves as ViTModel, as the committed
 * google/vit-base-patch16-224-in21k config is: the names lose "vit." (line
 * 74), the final norm is "layernorm" and the pooler is written from timm's
 * pre_logits.fc (lines 66-69; modeling_vit.py ViTModel builds ViTPooler by
 * default, add_pooling_layer=True). The description and the converter name
 * the same tensors both ways, with no exception: embeddings.mask_token is
 * not among ours, rightly (ViTModel builds it only with use_mask_token, which
 * ViTForMaskedImageModeling passes), nor the classifier (the converter's
 * other path, for ViTForImageClassification).
 */
static const char vit_config[] = "fixtures/hf/vit-base-patch16-224-in21k/config.json";

/* The name with each dot-separated number as "{i}", the converter's f-string layer. */
static void with_layer_placeholder(const char *name, char *out, size_t size)
{
	size_t n = 0;
	for (const char *c = name; *c && n + 5 < size;) {
		const char *end = c;
		while (*end >= '0' && *end <= '9')
			end++;
		if (end > c && (c == name || c[-1] == '.') && (*end == '.' || *end == '\0')) {
			n += (size_t)snprintf(out + n, size - n, "{i}");
			c = end;
		} else {
			out[n++] = *c++;
		}
	}
	out[n] = '\0';
}

Test(hf_describe, names_what_transformers_vit_converter_writes_for_the_in21k_base_model)
{
	size_t size;
	char *text = slurp("fixtures/hf/vit_converter_names.json", &size);
	cJSON *doc = cJSON_ParseWithLength(text, size);
	free(text);
	cr_assert(doc, "fixtures/hf/vit_converter_names.json does not parse");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(doc, "base_model")), "not the base model's names");
	const char *commit = cJSON_GetStringValue(
	    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "source"), "commit"));
	cr_expect(commit && strlen(commit) == 40, "the fixture records no transformers commit");

	/* the converter's names: create_rename_keys' targets, then the q/k/v read_in_q_k_v writes */
	enum { MAX_VIT_NAMES = 64 };
	const char *converter[MAX_VIT_NAMES];
	int lines[MAX_VIT_NAMES], count = 0;
	const cJSON *item;
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "create_rename_keys"))
	{
		cr_assert(count < MAX_VIT_NAMES, "more converter names than the test holds");
		converter[count] = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "to"));
		lines[count++] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(item, "line"));
	}
	cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(
	                             cJSON_GetObjectItemCaseSensitive(doc, "read_in_q_k_v"), "to"))
	{
		cr_assert(count < MAX_VIT_NAMES, "more converter names than the test holds");
		converter[count] = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(item, "name"));
		lines[count++] = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(item, "line"));
	}
	cr_assert(count > 0, "the fixture holds no names");

	ti_model *m = describe_file(vit_config);
	size_t n;
	const ti_model_param *p = ti_model_params(m, &n);
	ti_strmap ours;
	ti_strmap_init(&ours);
	for (size_t i = 0; i < n; i++) {
		if (p[i].buffer && !p[i].persistent)
			continue; /* not in a state_dict */
		cr_assert(ti_strmap_put(&ours, p[i].name, (void *)&p[i]) == 0, "out of memory");
		char pattern[NAME_SIZE];
		with_layer_placeholder(p[i].name, pattern, sizeof(pattern));
		bool written = false;
		for (int c = 0; c < count; c++)
			written = written || !strcmp(converter[c], pattern);
		cr_expect(written, "vit: '%s' (as '%s') is no name the converter writes", p[i].name, pattern);
	}

	/* each converter name, at every layer of the config, is one of ours */
	size = 0;
	text = slurp(vit_config, &size);
	cJSON *config = cJSON_ParseWithLength(text, size);
	free(text);
	int layers = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(config, "num_hidden_layers"));
	cJSON_Delete(config);
	cr_assert(layers > 0, "%s: no num_hidden_layers", vit_config);
	for (int c = 0; c < count; c++) {
		bool per_layer = strstr(converter[c], "{i}") != NULL;
		for (int layer = 0; layer < (per_layer ? layers : 1); layer++) {
			char name[NAME_SIZE], number[16];
			snprintf(name, sizeof(name), "%s", converter[c]);
			snprintf(number, sizeof(number), "%d", layer);
			replace_in(name, sizeof(name), "{i}", number);
			cr_expect(ti_strmap_get(&ours, name) != NULL,
			          "vit: the converter writes '%s' (line %d), the description names none", name, lines[c]);
		}
	}
	ti_strmap_release(&ours);
	ti_model_close(m);
	cJSON_Delete(doc);
}
