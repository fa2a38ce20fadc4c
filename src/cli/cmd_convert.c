/*
 * cmd_convert.c - `tinspect convert IN -o OUT`: a checkpoint into a torch zip
 * or safetensors file, selected, renamed and cast on the way, written to a
 * temporary file and renamed into place only when complete.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "cli/outfile.h"
#include "cli/progress.h"
#include "tinspect/convert.h"

enum {
	OPT_HELP = 1, OPT_OUTPUT, OPT_FORMAT, OPT_DTYPE, OPT_SELECT, OPT_EXCLUDE, OPT_RENAME, OPT_STRIP,
	OPT_KEY, OPT_KEEP, OPT_FORCE, OPT_QUIET, OPT_JSON, OPT_TRUST, OPT_RAW,
	OPT_QUANTIZE, OPT_UNTIE
};

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"output", 'o', OPT_VALUE, OPT_OUTPUT},
	{"format", 0, OPT_VALUE, OPT_FORMAT},
	{"dtype", 0, OPT_VALUE, OPT_DTYPE},
	{"select", 0, OPT_VALUE, OPT_SELECT},
	{"filter", 0, OPT_VALUE, OPT_SELECT}, /* the name inspect and diff give it */
	{"exclude", 0, OPT_VALUE, OPT_EXCLUDE},
	{"rename", 0, OPT_VALUE, OPT_RENAME},
	{"strip-prefix", 0, OPT_VALUE, OPT_STRIP},
	{"key", 0, OPT_VALUE, OPT_KEY},
	{"keep-storage", 0, OPT_FLAG, OPT_KEEP},
	{"force", 'f', OPT_FLAG, OPT_FORCE},
	{"quiet", 'q', OPT_FLAG, OPT_QUIET},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"trust", 0, OPT_FLAG, OPT_TRUST},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	{"quantize", 0, OPT_VALUE, OPT_QUANTIZE},
	{"untie", 0, OPT_FLAG, OPT_UNTIE},
	CLI_URL_OPTIONS,
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect convert IN -o OUT [options]\n"
	"\n"
	"Write IN's tensors to OUT, a PyTorch zip checkpoint (torch.load reads it,\n"
	"with weights_only=True too), a safetensors file, a GGUF file, or a NumPy\n"
	".npz (or .npy, for one tensor). IN is a torch.save zip, a safetensors\n"
	"file, a sharded checkpoint's *.index.json or a folder holding one, any\n"
	"other format tinspect reads (see FORMATS in tinspect(1)), known by its\n"
	"content.\n"
	"\n"
	"options:\n"
	"  -o, --output OUT     the file to write (required)\n"
	"  --format FMT         torch, safetensors, gguf, npz or npy (default: from\n"
	"                       OUT's extension)\n"
	"  --dtype DT           cast floating tensors: float16, bfloat16, float32, float64\n"
	"  --select GLOB        keep only tensors whose name matches (repeatable;\n"
	"                       --filter is the same)\n"
	"  --exclude GLOB       leave out tensors whose name matches (repeatable)\n"
	"  --rename FROM=TO     replace the name prefix FROM by TO (repeatable)\n"
	"  --strip-prefix P     remove the name prefix P, e.g. DDP's 'module.'\n"
	"  --key K              take the tensors under K, e.g. 'model' of a training checkpoint\n"
	"  --keep-storage       keep shared storages and views as they are (torch output)\n"
	"  --untie              write every name as a tensor of its own, ties too (safetensors\n"
	"                       keeps a tie's second name only in __metadata__ otherwise)\n"
	"  --quantize q8_0      gguf output: float matrices as ggml's Q8_0 blocks\n"
	"  -f, --force          replace OUT if it exists\n"
	"  --trust              convert a file whose pickle calls something dangerous,\n"
	"                       which is refused otherwise (it is never executed)\n"
	"  -q, --quiet          no progress bar\n"
	"  --json               print the summary as JSON\n"
	"  --raw                print the size as an exact integer, not 4.59 KiB\n"
	CLI_URL_HELP("     ")
	"  -h, --help           show this help\n";

enum { LIST_MAX = 64 };

/* What OUT's name says to write, when --format does not say. */
static const struct {
	const char *ext, *format;
} extensions[] = {
	{".safetensors", "safetensors"}, {".gguf", "gguf"}, {".npz", "npz"},  {".npy", "npy"},
	{".pt", "torch"},                {".pth", "torch"}, {".bin", "torch"}, {".ckpt", "torch"},
};

static void on_progress(void *user, uint64_t done, uint64_t total)
{
	cli_progress *bar = user;
	bar->total = total; /* known once the output is planned */
	cli_progress_add(bar, done - bar->done);
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

int cmd_convert(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "convert", false};
	const char *in = NULL, *out = NULL, *format = NULL, *selects[LIST_MAX], *excludes[LIST_MAX];
	ti_rename renames[LIST_MAX];
	char rename_text[LIST_MAX][256];
	ti_convert_options o = {0};
	bool force = false, quiet = false, json = false, trust = false;
	static const char *const dtypes[] = {"float16", "bfloat16", "float32", "float64", NULL};
	static const char *const formats[] = {"torch", "safetensors", "gguf", "npz", "npy", NULL};
	static const char *const format_names[] = {[TI_OUT_TORCH_ZIP] = "torch-zip", [TI_OUT_SAFETENSORS] = "safetensors",
	                                           [TI_OUT_NPY] = "npy", [TI_OUT_NPZ] = "npz", [TI_OUT_GGUF] = "gguf"};
	char hint[128];
	int id;
	const char *value;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (in)
				return cli_usage_error("convert: one input at a time (and -o OUT)");
			in = value;
			break;
		case CLI_OPT_TOKEN_FILE:
		case CLI_OPT_CACERT:
		case CLI_OPT_OFFLINE:
		case CLI_OPT_NO_CACHE: {
			int url_rc = cli_url_option("convert", id, value);
			if (url_rc)
				return url_rc;
			break;
		}
		case OPT_HELP:
			return cli_help(help);
		case OPT_OUTPUT:
			out = value;
			break;
		case OPT_FORMAT:
			format = value;
			break;
		case OPT_DTYPE: {
			const char *name = strncmp(value, "torch.", 6) ? value : value + 6;
			o.dtype = ti_dtype_from_torch_name(name);
			if (o.dtype != TI_DT_FLOAT16 && o.dtype != TI_DT_BFLOAT16 && o.dtype != TI_DT_FLOAT32 &&
			    o.dtype != TI_DT_FLOAT64)
				return cli_usage_error("convert: --dtype wants float16, bfloat16, float32 or float64, not '%s'%s", value,
				                       cli_did_you_mean(value, dtypes, "", hint, sizeof(hint)));
			break;
		}
		case OPT_SELECT:
		case OPT_EXCLUDE:
		case OPT_RENAME: {
			size_t *count = id == OPT_SELECT ? &o.select_count : id == OPT_EXCLUDE ? &o.exclude_count : &o.rename_count;
			if (*count == LIST_MAX)
				return cli_usage_error("convert: more than %d of one option", LIST_MAX);
			if (id == OPT_SELECT)
				selects[(*count)++] = value;
			else if (id == OPT_EXCLUDE)
				excludes[(*count)++] = value;
			else {
				const char *eq = strchr(value, '=');
				if (!eq || strlen(value) >= sizeof(rename_text[0]))
					return cli_usage_error("convert: --rename wants FROM=TO, not '%s'", value);
				char *t = rename_text[*count];
				strcpy(t, value);
				t[eq - value] = '\0';
				renames[*count] = (ti_rename){t, t + (eq - value) + 1};
				(*count)++;
			}
			break;
		}
		case OPT_STRIP:
			o.strip_prefix = value;
			break;
		case OPT_KEY:
			o.key = value;
			break;
		case OPT_KEEP:
			o.keep_storage = true;
			break;
		case OPT_UNTIE:
			o.untie = true;
			break;
		case OPT_FORCE:
			force = true;
			break;
		case OPT_TRUST:
			trust = true;
			break;
		case OPT_QUIET:
			quiet = true;
			break;
		case OPT_JSON:
			json = true;
			break;
		case OPT_RAW:
			cli_raw_numbers = true;
			break;
		case OPT_QUANTIZE:
			if (strcasecmp(value, "q8_0"))
				return cli_usage_error("convert: --quantize wants q8_0, not '%s'", value);
			o.gguf_q8_0 = true;
			break;
		}
	}
	if (!in || !out)
		return cli_usage_error("convert: give IN and -o OUT (see 'tinspect convert --help')");
	if (!format) {
		for (size_t i = 0; i < sizeof(extensions) / sizeof(extensions[0]) && !format; i++)
			if (ends_with(out, extensions[i].ext))
				format = extensions[i].format;
		if (!format)
			return cli_usage_error("convert: cannot tell what to write from the name '%s': end it in .pt, .pth, "
			                       ".bin, .ckpt, .safetensors, .gguf, .npz or .npy, or give --format", out);
	}
	if (o.untie && o.keep_storage)
		return cli_usage_error("convert: --untie and --keep-storage ask for opposite things: choose one");
	if (!strcmp(format, "safetensors"))
		o.format = TI_OUT_SAFETENSORS;
	else if (!strcmp(format, "gguf"))
		o.format = TI_OUT_GGUF;
	else if (!strcmp(format, "npz"))
		o.format = TI_OUT_NPZ;
	else if (!strcmp(format, "npy"))
		o.format = TI_OUT_NPY;
	else if (!strcmp(format, "torch") || !strcmp(format, "pt"))
		o.format = TI_OUT_TORCH_ZIP;
	else
		return cli_usage_error("convert: --format wants torch, safetensors, gguf, npz or npy, not '%s'%s", format,
		                       cli_did_you_mean(format, formats, "", hint, sizeof(hint)));
	if (o.keep_storage && o.format != TI_OUT_TORCH_ZIP)
		return cli_usage_error("convert: --keep-storage needs a torch output: %s forbids shared storage",
		                       o.format == TI_OUT_SAFETENSORS ? "safetensors" : o.format == TI_OUT_GGUF ? "GGUF"
		                       : "NumPy");
	if (o.gguf_q8_0 && o.format != TI_OUT_GGUF)
		return cli_usage_error("convert: --quantize q8_0 needs a gguf output (-o OUT.gguf or --format gguf)");
	o.select = selects;
	o.exclude = excludes;
	o.renames = renames;

	int checked = cli_check_input(in);
	if (checked)
		return checked;
	ti_error err;
	ti_error_clear(&err);
	ti_source *src;
	ti_status st = ti_source_open(in, &src, &err);
	if (st)
		return cli_report_open_failure(in, &err);
	int refused = cli_check_source_safety(src, trust);
	if (refused) {
		ti_source_close(src);
		return refused;
	}
	/* every file the source reads is an input: a sharded checkpoint's shards too */
	cli_outfile of;
	const char *inputs[65] = {in};
	int input_count = 1;
	for (size_t i = 0; i < ti_source_file_count(src) && input_count < 65; i++)
		inputs[input_count++] = ti_source_file_at(src, i);
	int rc = cli_outfile_open(&of, out, inputs, input_count, force);
	if (rc) {
		ti_source_close(src);
		return rc;
	}
	cli_progress bar;
	cli_progress_begin(&bar, stderr, "convert", 0, !quiet);
	o.progress = on_progress;
	o.progress_user = &bar;
	ti_convert_stats stats;
	o.refusal_hint = "leave it out with --exclude";
	st = ti_convert(src, of.fd, &o, &stats, &err);
	cli_progress_end(&bar);
	ti_source_close(src);
	if (st) {
		cli_outfile_abort(&of);
		return cli_report(st == TI_E_IO || st == TI_E_NOMEM ? out : in, &err);
	}
	if ((rc = cli_outfile_commit(&of)))
		return rc;
	char bytes[64];
	if (json) {
		cJSON *j = cli_json_root();
		cJSON_AddStringToObject(j, "file", in);
		cJSON_AddStringToObject(j, "output", out);
		cJSON_AddStringToObject(j, "format", format_names[o.format]);
		cJSON_AddItemToObject(j, "tensors", cli_json_dim(ti_dim_int((int64_t)stats.tensors)));
		cJSON_AddItemToObject(j, "storages", cli_json_dim(ti_dim_int((int64_t)stats.storages)));
		cJSON_AddItemToObject(j, "ties", cli_json_dim(ti_dim_int((int64_t)stats.ties)));
		/* safetensors: the ties are names in __metadata__ only, which load_file does not return */
		cJSON_AddBoolToObject(j, "ties_in_metadata_only", o.format == TI_OUT_SAFETENSORS && stats.ties);
		cJSON_AddItemToObject(j, "cast", cli_json_dim(ti_dim_int((int64_t)stats.cast)));
		cJSON_AddItemToObject(j, "nbytes", cli_json_dim(ti_dim_int((int64_t)stats.data_bytes)));
		return cli_json_print(j);
	}
	printf("wrote %s: %zu tensors (%zu tied, %zu cast), %s of data, %s\n", out, stats.tensors, stats.ties, stats.cast,
	       cli_quantity((int64_t)stats.data_bytes, true, bytes, sizeof(bytes)),
	       o.format == TI_OUT_TORCH_ZIP ? "torch zip" : format_names[o.format]);
	cli_print_fetched();
	/* torch.load gives a tie back as one storage; safetensors' load_file does not */
	if (o.format == TI_OUT_SAFETENSORS && stats.ties)
		printf("note: %zu name%s written only as a tie in __metadata__ (%s%s): safetensors' load_file does not "
		       "return %s, so a strict load_state_dict misses %s; safetensors.torch.load_model(model, FILE) or the "
		       "model's tie_weights() restores %s, and --untie writes every name\n",
		       stats.ties, stats.ties == 1 ? " is" : "s are", stats.first_tie, stats.ties > 1 ? ", ..." : "",
		       stats.ties == 1 ? "it" : "them", stats.ties == 1 ? "it" : "them", stats.ties == 1 ? "it" : "them");
	return EXIT_OK;
}
