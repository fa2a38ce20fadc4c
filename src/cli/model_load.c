/*
 * model_load.c - what `shapes` and `params` share: reading a description
 * file within the size ceiling, --bind parsing, and JSON numbers for dims.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli.h"
#include "cli/model_cli.h"
#include "cli/output.h"
#include "tinspect/hf_describe.h"

int cli_model_bind(cli_model *cm, const char *text)
{
	const char *eq = strchr(text, '=');
	if (!eq || eq == text)
		return cli_usage_error("shapes: --bind wants NAME=VALUE, not '%s'", text);
	if (cm->bind_count == CLI_MODEL_MAX_BINDS)
		return cli_usage_error("shapes: more than %d --bind options", CLI_MODEL_MAX_BINDS);
	char *end;
	errno = 0;
	long long v = strtoll(eq + 1, &end, 10);
	if (errno || end == eq + 1 || *end || v < 0)
		return cli_usage_error("shapes: --bind %.*s: '%s' is not a non-negative integer", (int)(eq - text), text, eq + 1);
	size_t len = (size_t)(eq - text);
	if (len >= sizeof(cm->bind_storage[0]))
		return cli_usage_error("shapes: --bind: name '%.*s' is too long", (int)len, text);
	/* a size past 2^40 only overflows the description's arithmetic: say so here, as a usage error */
	if (v > CLI_MODEL_MAX_BIND)
		return cli_usage_error("shapes: --bind %.*s: %lld is out of range (0 to %lld)", (int)len, text, v,
		                       (long long)CLI_MODEL_MAX_BIND);
	for (int i = 0; i < cm->bind_count; i++)
		if (strlen(cm->bind_names[i]) == len && !strncmp(cm->bind_names[i], text, len))
			return cli_usage_error("shapes: --bind %.*s: bound twice (%lld and %lld); give it once", (int)len, text,
			                       (long long)cm->bind_values[i], v);
	memcpy(cm->bind_storage[cm->bind_count], text, len);
	cm->bind_storage[cm->bind_count][len] = '\0';
	cm->bind_names[cm->bind_count] = cm->bind_storage[cm->bind_count];
	cm->bind_values[cm->bind_count++] = (int64_t)v;
	return EXIT_OK;
}

int cli_model_input(cli_model *cm, const char *command, char *text)
{
	char *eq = strchr(text, '=');
	if (!eq || eq == text || !eq[1])
		return cli_usage_error("%s: --input wants NAME=SHAPE[:DTYPE] (x=8x3x224x224, x=N,3,224,224:float16), not '%s'",
		                       command, text);
	if (cm->input_count == CLI_MODEL_MAX_BINDS)
		return cli_usage_error("%s: more than %d --input options", command, CLI_MODEL_MAX_BINDS);
	*eq = '\0';
	for (int i = 0; i < cm->input_count; i++)
		if (!strcmp(cm->input_names[i], text))
			return cli_usage_error("%s: --input %s given twice; give it once", command, text);
	cm->input_names[cm->input_count] = text;
	cm->input_specs[cm->input_count++] = eq + 1;
	return EXIT_OK;
}

/* A folder whose config.json names a model_type with a template: described, not read as weights. */
static bool is_described_folder(const char *path)
{
	char config_path[4096];
	const char *config = cli_hf_config_path(path, config_path, sizeof(config_path));
	if (config == path)
		return false;
	size_t got;
	ti_error ignored;
	char *buf = cli_read_json(config, TI_HF_CONFIG_MAX_BYTES, &got, &ignored);
	bool known = false;
	if (buf && got < TI_HF_CONFIG_MAX_BYTES && ti_hf_is_config(buf, got)) {
		char *desc = NULL;
		ti_error err;
		known = ti_hf_describe(buf, got, &desc, &err) != TI_E_UNSUPPORTED;
		free(desc);
	}
	free(buf);
	return known;
}

bool cli_is_description(const char *path)
{
	if (is_described_folder(path))
		return true;
	if (ti_io_is_url(path)) { /* its head, and only JSON whole (a checkpoint is never fetched whole here) */
		size_t got;
		ti_error ignored;
		char *text = cli_read_json(path, TI_MODEL_MAX_BYTES, &got, &ignored);
		bool json = text && !strstr(text, "\"weight_map\"");
		free(text);
		return json;
	}
	FILE *f = fopen(path, "rb");
	struct stat sb;
	if (!f || fstat(fileno(f), &sb) || !S_ISREG(sb.st_mode)) {
		if (f)
			fclose(f);
		return false;
	}
	/* JSON, and no "weight_map" key anywhere: an index names it near its top, a description never */
	static const char key[] = "\"weight_map\"";
	enum { KEY = sizeof(key) - 1, CHUNK = 1 << 16 };
	char buf[CHUNK + KEY];
	size_t kept = 0, got;
	bool json = false, first = true, index = false;
	while (!index && (got = fread(buf + kept, 1, CHUNK, f)) > 0) {
		if (first) {
			if (ti_file_sniff(buf, got, (uint64_t)sb.st_size) != TI_FILE_JSON)
				break;
			json = true;
			first = false;
		}
		size_t n = kept + got;
		for (size_t i = 0; i + KEY <= n && !index; i++)
			index = !memcmp(buf + i, key, KEY);
		kept = n < KEY ? n : KEY - 1; /* a key cut in two by the chunks is found on the next pass */
		memmove(buf, buf + n - kept, kept);
	}
	fclose(f);
	return json && !index;
}

const char *cli_hf_config_path(const char *path, char *buf, size_t size)
{
	if (ti_source_is_hf_repo(path)) { /* a repository on the Hub: its config.json, whether it has one or not */
		size_t n = strlen(path);
		while (n && path[n - 1] == '/')
			n--;
		return snprintf(buf, size, "%.*s/config.json", (int)n, path) < (int)size ? buf : path;
	}
	struct stat sb;
	if (stat(path, &sb) || !S_ISDIR(sb.st_mode))
		return path;
	size_t n = strlen(path);
	if (snprintf(buf, size, "%s%sconfig.json", path, n && path[n - 1] == '/' ? "" : "/") >= (int)size ||
	    stat(buf, &sb) || !S_ISREG(sb.st_mode))
		return path;
	return buf;
}

/* The bytes of a description read whole (buf, taken): a checkpoint's bytes are said to be one. */
static int model_bytes(const char *path, char *buf, size_t size, char **out, size_t *out_size)
{
	ti_error err;
	ti_error_clear(&err);
	/* a checkpoint given where a description belongs: say what it is, not where its "JSON" went wrong */
	ti_file_kind kind = ti_file_sniff(buf, size, size);
	if (kind != TI_FILE_JSON && kind != TI_FILE_TEXT && kind != TI_FILE_EMPTY) {
		free(buf);
		TI_FAIL(&err, TI_E_UNSUPPORTED, "%s, not a model description (JSON)%s", ti_file_kind_name(kind),
		        kind == TI_FILE_UNKNOWN ? "" : ": 'tinspect inspect' reads checkpoints");
		return cli_report(path, &err);
	}
	*out = buf;
	*out_size = size;
	return EXIT_OK;
}


int cli_model_read(const char *path, char **out, size_t *out_size)
{
	*out = NULL;
	int rc = cli_check_input(path);
	if (rc)
		return rc;
	ti_error err;
	ti_error_clear(&err);
	if (ti_io_is_url(path)) {
		size_t size;
		char *buf = cli_read_head(path, TI_MODEL_MAX_BYTES + 1, &size, &err);
		if (!buf)
			return cli_report(path, &err);
		return model_bytes(path, buf, size, out, out_size);
	}
	FILE *f = fopen(path, "rb");
	if (!f) {
		TI_FAIL(&err, TI_E_IO, "cannot open: %s", strerror(errno));
		return cli_report(path, &err);
	}
	/* read at most the ceiling and one byte more, to tell "too large" from "just fits" */
	size_t cap = 1 << 16, size = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t got = fread(buf + size, 1, cap - size, f);
		size += got;
		if (size < cap || size > TI_MODEL_MAX_BYTES)
			break;
		char *bigger = realloc(buf, cap * 2);
		if (!bigger) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = bigger;
		cap *= 2;
	}
	bool failed = ferror(f);
	fclose(f);
	if (!buf) {
		TI_FAIL(&err, TI_E_NOMEM, "out of memory reading the description");
		return cli_report(path, &err);
	}
	if (failed) {
		free(buf);
		TI_FAIL(&err, TI_E_IO, "read error");
		return cli_report(path, &err);
	}
	return model_bytes(path, buf, size, out, out_size);
}

int cli_model_text(const char *file, char **out, size_t *out_size)
{
	char config_path[4096];
	const char *path = cli_hf_config_path(file, config_path, sizeof(config_path));
	int rc = cli_model_read(path, out, out_size);
	if (rc || !ti_hf_is_config(*out, *out_size))
		return rc;
	/* a Hugging Face config.json: the description of its model_type, built from it */
	ti_error err;
	ti_error_clear(&err);
	char *desc;
	ti_status st = ti_hf_describe(*out, *out_size, &desc, &err);
	free(*out);
	*out = NULL;
	if (st)
		return cli_report(path, &err);
	*out = desc;
	*out_size = strlen(desc);
	return EXIT_OK;
}

int cli_model_open(cli_model *cm)
{
	char *buf;
	size_t size;
	int rc = cli_model_text(cm->file, &buf, &size);
	if (rc)
		return rc;
	ti_error err;
	ti_error_clear(&err);
	if (cm->lora) {
		char *wrapped;
		ti_status lst = ti_lora_apply(buf, size, cm->lora, &wrapped, &cm->lora_modules, &err);
		free(buf);
		if (lst) {
			if (lst == TI_E_INVALID)
				return cli_usage_error("memory: --lora: %s", err.message);
			return cli_report(cm->file, &err);
		}
		buf = wrapped;
		size = strlen(wrapped);
	}
	ti_model_options opts = {.bind_names = cm->bind_names,
	                         .bind_values = cm->bind_values,
	                         .bind_count = (size_t)cm->bind_count,
	                         .training = cm->training,
	                         .input_names = cm->input_names,
	                         .input_specs = cm->input_specs,
	                         .input_count = (size_t)cm->input_count,
	                         .default_dtype = cm->default_dtype,
	                         .cast_floating = cm->cast_floating,
	                         .cast_dtype = cm->cast_dtype};
	ti_status st = ti_model_open(buf, size, &opts, &cm->model, &err);
	free(buf);
	if (st)
		return cli_report(cm->file, &err);
	return EXIT_OK;
}

cJSON *cli_json_dim(ti_dim d)
{
	if (ti_dim_is_int(d)) {
		char buf[32];
		snprintf(buf, sizeof(buf), "%" PRId64, d.value);
		return cJSON_CreateRaw(buf); /* exact: cJSON numbers go through double */
	}
	char buf[512];
	return cJSON_CreateString(ti_dim_format(d, buf, sizeof(buf)));
}

cJSON *cli_json_dims(const ti_dim *d, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cli_json_dim(d[i]));
	return a;
}

const char *cli_dim_text(ti_dim d, bool bytes, char *buf, size_t size)
{
	if (!ti_dim_is_int(d))
		return ti_dim_format(d, buf, size);
	return bytes ? cli_bytes(d.value, buf, size) : cli_count(d.value, buf, size);
}

const char *cli_dim_human(ti_dim d, const char *unit, char *buf, size_t size)
{
	if (!ti_dim_is_int(d))
		return ti_dim_format(d, buf, size);
	return cli_human(d.value, unit, buf, size);
}

const char *cli_shape_text(const ti_dim *d, int n, char *buf, size_t size)
{
	size_t len = 0;
	buf[len++] = '[';
	for (int i = 0; i < n && len + 8 < size; i++) {
		if (i) {
			buf[len++] = ',';
			buf[len++] = ' ';
		}
		ti_dim_format(d[i], buf + len, size - len - 2);
		len += strlen(buf + len);
	}
	buf[len++] = ']';
	buf[len] = '\0';
	return buf;
}

cJSON *cli_json_params(const ti_model *model)
{
	size_t n;
	const ti_model_param *p = ti_model_params(model, &n);
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", p[i].name);
		cJSON *shape = cJSON_AddArrayToObject(o, "shape");
		for (int k = 0; k < p[i].ndim; k++)
			cJSON_AddItemToArray(shape, cli_json_dim(ti_dim_int(p[i].shape[k])));
		cJSON_AddStringToObject(o, "dtype", ti_dtype_name(p[i].dtype));
		cJSON_AddStringToObject(o, "kind", p[i].buffer ? "buffer" : "parameter");
		cJSON_AddBoolToObject(o, "trainable", p[i].trainable);
		if (p[i].tied_to)
			cJSON_AddStringToObject(o, "tied_to", p[i].tied_to);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}


