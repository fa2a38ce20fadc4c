/*
 * cmd_cache.c - `tinspect cache list|clear`: the remote-read cache, the
 * bytes kept from URLs (io.h: ti_io_cache_*; docs/inspect.md gives its
 * format on disk).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "cli/cli.h"
#include "cli/output.h"
#include "tinspect/io.h"

enum { OPT_HELP = 1, OPT_JSON, OPT_RAW };

static const cli_option options[] = {
	{"help", 'h', OPT_FLAG, OPT_HELP},
	{"json", 0, OPT_FLAG, OPT_JSON},
	{"raw", 0, OPT_FLAG, OPT_RAW},
	{NULL, 0, 0, 0},
};

static const char help[] =
	"usage: tinspect cache list [--json] [--raw]\n"
	"       tinspect cache clear [URL...]\n"
	"\n"
	"The remote-read cache: the bytes a command fetched from a URL, kept under\n"
	"$XDG_CACHE_HOME/tinspect (default ~/.cache/tinspect) with the URL's ETag\n"
	"(else Last-Modified) and size. A second read of the URL costs one\n"
	"conditional request; a new version on the server replaces the old. At most\n"
	"$TINSPECT_CACHE_MAX bytes (default 2G; suffixes K, M, G, T), the least\n"
	"recently used URLs removed first. A command's --offline (or\n"
	"TINSPECT_OFFLINE=1, HF_HUB_OFFLINE=1) reads the cache alone; --no-cache\n"
	"neither reads nor writes it.\n"
	"\n"
	"  list          one line per URL: when last used, the bytes kept of its\n"
	"                size, its version (ETag or Last-Modified), the URL\n"
	"  clear [URL]   remove the URLs given (hf:// names as well), or every one\n"
	"\n"
	"options:\n"
	"  --json          list: print one JSON document instead of a table\n"
	"  --raw           list: print sizes as exact integers, not 4.59 KiB\n"
	"  -h, --help      show this help\n";

static const cli_column columns[] = {
	{"LAST USED", CLI_LEFT, 0}, {"KEPT", CLI_RIGHT, 0}, {"SIZE", CLI_RIGHT, 0},
	{"VERSION", CLI_LEFT, 40},  {"URL", CLI_LEFT, 0},
};

static int list(bool json)
{
	ti_error err;
	ti_io_cache_entry *entries;
	size_t n;
	if (ti_io_cache_list(&entries, &n, &err))
		return cli_report("cache", &err);
	int rc;
	if (json) {
		cJSON *root = cli_json_root(), *array = cJSON_AddArrayToObject(root, "entries");
		char dir[4096];
		if (ti_io_cache_dir(dir, sizeof(dir)))
			cJSON_AddStringToObject(root, "folder", dir);
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "url", entries[i].url);
			cJSON_AddStringToObject(o, "validator", entries[i].validator);
			cJSON_AddNumberToObject(o, "size", (double)entries[i].size);
			cJSON_AddNumberToObject(o, "bytes", (double)entries[i].bytes);
			cJSON_AddNumberToObject(o, "last_used", (double)entries[i].last_used);
			cJSON_AddItemToArray(array, o);
		}
		rc = cli_json_print(root);
	} else {
		cli_table t;
		cli_table_init(&t, columns, 5);
		for (size_t i = 0; i < n; i++) {
			char when[32] = "", kept[48], size[48];
			time_t at = (time_t)entries[i].last_used;
			struct tm tm;
			if (localtime_r(&at, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
			const char *row[] = {when, cli_bytes((int64_t)entries[i].bytes, kept, sizeof(kept)),
			                     cli_bytes((int64_t)entries[i].size, size, sizeof(size)), entries[i].validator,
			                     entries[i].url};
			cli_table_add(&t, row);
		}
		if (n) {
			rc = cli_table_flush(&t);
		} else {
			cli_table_free(&t);
			printf("the cache holds no URL\n");
			rc = EXIT_OK;
		}
	}
	ti_io_cache_list_free(entries, n);
	return rc;
}

static int clear(char **urls, int count)
{
	ti_error err;
	uint64_t entries = 0, bytes = 0;
	if (!count) {
		if (ti_io_cache_clear(NULL, &entries, &bytes, &err))
			return cli_report("cache", &err);
	}
	for (int i = 0; i < count; i++) {
		uint64_t e, b;
		if (ti_io_cache_clear(urls[i], &e, &b, &err))
			return cli_report(urls[i], &err);
		if (!e) {
			fprintf(stderr, "tinspect: cache: ");
			cli_put_safe(stderr, urls[i], 0);
			fprintf(stderr, ": not in the cache\n");
			return EXIT_NEGATIVE;
		}
		entries += e;
		bytes += b;
	}
	char size[48];
	printf("removed %" PRIu64 " URL%s, %s\n", entries, entries == 1 ? "" : "s", cli_bytes((int64_t)bytes, size,
	       sizeof(size)));
	return EXIT_OK;
}

int cmd_cache(int argc, char **argv)
{
	cli_parser p = {argc, 1, argv, options, "cache", false};
	bool json = false, raw = false;
	const char *action = NULL, *value;
	char *urls[256];
	int count = 0, id;
	while ((id = cli_next(&p, &value)) != -1) {
		switch (id) {
		case -2:
			return EXIT_USAGE;
		case 0:
			if (!action) {
				static const char *const actions[] = {"list", "clear", NULL};
				char hint[128];
				if (strcmp(value, "list") && strcmp(value, "clear"))
					return cli_usage_error("cache: '%s' is neither list nor clear%s", value,
					                       cli_did_you_mean(value, actions, "", hint, sizeof(hint)));
				action = value;
			} else if (action[0] == 'l') {
				return cli_usage_error("cache list: takes no URL ('%s')", value);
			} else if (count == (int)(sizeof(urls) / sizeof(urls[0]))) {
				return cli_usage_error("cache clear: more than %zu URLs at once", sizeof(urls) / sizeof(urls[0]));
			} else {
				urls[count++] = (char *)value;
			}
			break;
		case OPT_HELP:
			return cli_help(help);
		case OPT_JSON:
			json = true;
			break;
		case OPT_RAW:
			raw = true;
			break;
		}
	}
	if (!action)
		return cli_usage_error("cache: say list or clear (usage: tinspect cache list|clear [URL...]; see --help)");
	if (action[0] == 'c' && (json || raw))
		return cli_usage_error("cache clear: --%s is for list", json ? "json" : "raw");
	cli_raw_numbers = raw;
	return action[0] == 'l' ? list(json) : clear(urls, count);
}
