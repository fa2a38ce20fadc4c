/*
 * test_http_parse.c - the HTTP layer's parsers (io/http_parse.h) and the
 * cache's file formats (io/cache.h), fed fixed nasty input and then many
 * thousands of seeded random and mutated cases through the same functions
 * libcurl's callbacks and the cache call. Run under ASan by `make asan`:
 * every read and write of these buffers is checked there.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/cache.h"
#include "io/http_parse.h"
#include "tinspect/io.h"
#include "unit.h"

enum { FUZZ_CASES = 20000 };

/* xorshift64*: the same cases on every run, so a failure can be replayed by its number */
static uint64_t fuzz_state;
static uint64_t next_random(void)
{
	fuzz_state ^= fuzz_state >> 12;
	fuzz_state ^= fuzz_state << 25;
	fuzz_state ^= fuzz_state >> 27;
	return fuzz_state * 0x2545F4914F6CDD1DULL;
}
static size_t below(size_t n)
{
	return n ? (size_t)(next_random() % n) : 0;
}

/* The bytes that break parsers: the separators, digits, the edges of signed and unsigned bytes. */
static const char nasty[] = {'\r', '\n', '\0', ' ', '\t', ':', '-', '/', '*', '"', '\\', '0', '9', '+', '\x7f', '\x80', '\xff'};

/* Mutates n bytes of buf (capacity cap) in place: flips, nasty bytes, cuts, repeats; the new length. */
static size_t mutate(char *buf, size_t n, size_t cap)
{
	int edits = 1 + (int)below(4);
	for (int e = 0; e < edits; e++) {
		switch (below(6)) {
		case 0: /* flip a bit */
			if (n)
				buf[below(n)] ^= (char)(1 << below(8));
			break;
		case 1: /* a nasty byte in place */
			if (n)
				buf[below(n)] = nasty[below(sizeof(nasty))];
			break;
		case 2: /* cut */
			n = below(n + 1);
			break;
		case 3: /* insert a nasty byte */
			if (n < cap) {
				size_t at = below(n + 1);
				memmove(buf + at + 1, buf + at, n - at);
				buf[at] = nasty[below(sizeof(nasty))];
				n++;
			}
			break;
		case 4: /* a run of digits: numbers that overflow */
			for (size_t k = below(24); k && n < cap; k--)
				buf[n++] = (char)('0' + below(10));
			break;
		default: /* random bytes */
			for (size_t k = below(8); k && n < cap; k--)
				buf[n++] = (char)next_random();
			break;
		}
	}
	return n;
}

/* ---- fixed cases ---- */

Test(http_parse, reads_status_lines_and_refuses_what_is_not_one)
{
	static const struct {
		const char *line;
		bool ok;
		long status;
	} cases[] = {
		{"HTTP/1.1 206 Partial Content\r\n", true, 206}, {"HTTP/2 200\r\n", true, 200},
		{"HTTP/1.0 304", true, 304}, {"HTTP/1.1 20\r\n", false, 0}, {"HTTP/1.1 2000 OK\r\n", false, 0},
		{"HTTP/ 200 OK\r\n", false, 0}, {"HTTP/1.1 abc\r\n", false, 0}, {"HTTP/1.1 099 x\r\n", false, 0},
		{"HTTP/1.1\r\n", false, 0}, {"HTTP/1.1  200 OK\r\n", false, 0}, {"HTTP/x 200 OK\r\n", false, 0},
		{"http/1.1 200 OK\r\n", false, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		long status = 0;
		bool ok = http_status_line(cases[i].line, strlen(cases[i].line), &status);
		cr_expect(ok == cases[i].ok, "'%s': got %d, want %d", cases[i].line, ok, cases[i].ok);
		if (ok)
			EXPECT_INT(status, cases[i].status);
	}
}

Test(http_parse, reads_content_range_strictly)
{
	static const struct {
		const char *value;
		bool ok;
		uint64_t first, last, total;
	} cases[] = {
		{"bytes 0-9/10", true, 0, 9, 10},
		{"bytes 131072-262143/6293784", true, 131072, 262143, 6293784},
		{"bytes 0-18446744073709551614/18446744073709551615", true, 0, 18446744073709551614ULL, 18446744073709551615ULL},
		{"bytes 0-9/9", false, 0, 0, 0},          /* last past the end */
		{"bytes 9-0/10", false, 0, 0, 0},         /* backwards */
		{"bytes -1-9/10", false, 0, 0, 0},        /* sscanf would take -1 as 2^64 - 1 */
		{"bytes +0-9/10", false, 0, 0, 0},
		{"bytes 0-18446744073709551616/20", false, 0, 0, 0}, /* overflow */
		{"bytes */10", false, 0, 0, 0},
		{" bytes 0-9/10", false, 0, 0, 0},
		{"bytes 0-9/10 ", false, 0, 0, 0},
		{"bytes 0-9/", false, 0, 0, 0},
		{"bytes 0 -9/10", false, 0, 0, 0},
		{"", false, 0, 0, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t first = 0, last = 0, total = 0;
		bool ok = http_content_range(cases[i].value, &first, &last, &total);
		cr_expect(ok == cases[i].ok, "'%s': got %d, want %d", cases[i].value, ok, cases[i].ok);
		if (ok && cases[i].ok) {
			EXPECT_INT(first, cases[i].first);
			EXPECT_INT(last, cases[i].last);
			EXPECT_INT(total, cases[i].total);
		}
	}
	uint64_t n;
	cr_expect(http_content_length("6293784", &n) && n == 6293784);
	cr_expect(!http_content_length("-1", &n));
	cr_expect(!http_content_length("", &n));
	cr_expect(!http_content_length("1 2", &n));
	cr_expect(!http_content_length("99999999999999999999", &n));
}

/* Feeds the lines to a fresh answer. */
static void feed(http_answer *a, const char *const *lines, size_t n)
{
	for (size_t i = 0; i < n; i++)
		http_answer_header(a, lines[i], strlen(lines[i]));
}

Test(http_parse, a_new_status_line_forgets_the_last_answers_fields)
{
	http_answer a;
	unsigned char dst[16];
	http_answer_start(&a, dst, sizeof(dst), 100);
	static const char *const lines[] = {
		"HTTP/1.1 302 Found\r\n", "ETag: \"old\"\r\n", "Content-Length: 5\r\n", "X-Error-Code: Gated\r\n", "\r\n",
		"HTTP/1.1 206 Partial Content\r\n", "etag:   \"v1\"  \r\n", "CONTENT-RANGE: bytes 0-3/10\r\n",
		"Content-Length: -4\r\n", "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
	};
	feed(&a, lines, sizeof(lines) / sizeof(lines[0]));
	EXPECT_INT(a.status, 206);
	EXPECT_STR(a.etag, "\"v1\"");
	EXPECT_STR(a.range, "bytes 0-3/10");
	EXPECT_STR(a.hub_error, "");
	EXPECT_STR(a.modified, "Wed, 21 Oct 2015 07:28:00 GMT");
	EXPECT_INT(a.has_length, 0); /* "-4" is no length */
}

Test(http_parse, cuts_long_values_and_stops_at_a_nul)
{
	http_answer a;
	http_answer_start(&a, NULL, 0, 0);
	char line[1200];
	int n = snprintf(line, sizeof(line), "ETag: \"");
	memset(line + n, 'x', sizeof(line) - (size_t)n);
	http_answer_header(&a, line, sizeof(line)); /* no NUL, no CR LF, far longer than the field */
	EXPECT_INT(strlen(a.etag), HTTP_VALIDATOR_MAX - 1);
	static const char with_nul[] = "ETag: \"a\0\r\nX: y\"\r\n";
	http_answer_header(&a, with_nul, sizeof(with_nul) - 1);
	EXPECT_STR(a.etag, "\"a");
	cr_expect(http_validator_usable("\"abc\""));
	cr_expect(http_validator_usable("Wed, 21 Oct 2015 07:28:00 GMT"));
	cr_expect(!http_validator_usable(""));
	cr_expect(!http_validator_usable("\"a\"\r\nX-Injected: 1"));
	cr_expect(!http_validator_usable("\"caf\xc3\xa9\""));
}

Test(http_parse, bodies_stop_past_what_was_asked_or_allowed)
{
	http_answer a;
	unsigned char dst[8];
	http_answer_start(&a, dst, sizeof(dst), 16);
	http_answer_header(&a, "HTTP/1.1 206 x\r\n", 16);
	EXPECT_INT(http_answer_body(&a, "12345", 5), 5);
	EXPECT_INT(http_answer_body(&a, "6789", 4), 0); /* 9 bytes for 8 asked */
	EXPECT_INT(a.overflow, 1);
	EXPECT_INT(a.got, 5);

	http_answer_start(&a, dst, sizeof(dst), 16);
	http_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	http_answer_header(&a, "Content-Length: 17\r\n", 20);
	EXPECT_INT(http_answer_body(&a, "x", 1), 0); /* a known length past body_max: refused before a byte */
	EXPECT_INT(a.too_long, 1);

	http_answer_start(&a, dst, sizeof(dst), 16);
	http_answer_header(&a, "HTTP/1.1 200 OK\r\n", 17);
	EXPECT_INT(http_answer_body(&a, "0123456789", 10), 10);
	EXPECT_INT(http_answer_body(&a, "0123456789", 10), 0); /* no length: cut at body_max */
	EXPECT_INT(a.body_len, 10);
	free(a.body);

	http_answer_start(&a, dst, sizeof(dst), 16);
	http_answer_header(&a, "HTTP/1.1 404 Not Found\r\n", 24);
	EXPECT_INT(http_answer_body(&a, "not here", 8), 8); /* read and dropped */
	EXPECT_INT(a.got + a.body_len, 0);
}

Test(http_parse, netrc_gives_a_machines_entry_to_that_host_alone)
{
	static const char text[] = "# a comment is no token here, but harmless\n"
	                           "machine other.example login o password op\n"
	                           "macdef init\nmachine evil login x password y\n\n"
	                           "machine Files.Example.com\n\tlogin \"me\" password \"two words \\\" quoted\"\n"
	                           "default login anyone password anything\n";
	char login[64], password[64];
	cr_assert(http_netrc_find(text, sizeof(text) - 1, "files.example.com", login, sizeof(login), password,
	                          sizeof(password)));
	EXPECT_STR(login, "me");
	EXPECT_STR(password, "two words \" quoted");
	cr_assert(http_netrc_find(text, sizeof(text) - 1, "other.example", login, sizeof(login), password, sizeof(password)));
	EXPECT_STR(login, "o");
	/* the macro's body is not an entry; the default entry goes to no host */
	cr_expect(!http_netrc_find(text, sizeof(text) - 1, "evil", login, sizeof(login), password, sizeof(password)));
	cr_expect(!http_netrc_find(text, sizeof(text) - 1, "unknown.example", login, sizeof(login), password,
	                           sizeof(password)));
	EXPECT_STR(login, "");
	EXPECT_STR(password, "");
	/* an entry without a password, a password longer than its buffer, an entry cut off */
	static const char partial[] = "machine a login only\nmachine b login u password 0123456789abcdef\nmachine";
	cr_expect(!http_netrc_find(partial, sizeof(partial) - 1, "a", login, sizeof(login), password, sizeof(password)));
	cr_expect(!http_netrc_find(partial, sizeof(partial) - 1, "b", login, sizeof(login), password, 8));
	cr_expect(http_netrc_find(partial, sizeof(partial) - 1, "b", login, sizeof(login), password, sizeof(password)));
}

Test(http_parse, urls_are_refused_with_a_reason_and_hosts_read_without_ports)
{
	static const struct {
		const char *url, *refusal, *host;
	} cases[] = {
		{"https://huggingface.co/org/repo/resolve/main/x", NULL, "huggingface.co"},
		{"http://127.0.0.1:8000/a", NULL, "127.0.0.1"},
		{"http://[::1]:8000/a", NULL, "::1"},
		{"http://LocalHost?x=1", NULL, "LocalHost"},
		{"http://user:pw@h/a", "credentials", "h"},
		{"http:///a", "names no host", NULL},
		{"no scheme at all", "not an http", NULL},
		{"ftp://h/x", "not an http", "h"},
		{"x@y://h/x", "not an http", "h"}, /* found by fuzz_http: an '@' before the authority */
		{"HTTPS://h/x", NULL, "h"},
		{"http://h/a b", "a space or a control", "h"},
		{"http://h/a\r\nX: 1", "a space or a control", "h"},
		{"http://[::1/a", NULL, NULL}, /* no closing bracket: no host to look up */
		{"http://:8000/a", NULL, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *why = http_url_refusal(cases[i].url);
		if (cases[i].refusal)
			cr_expect(why && strstr(why, cases[i].refusal), "'%s': got '%s'", cases[i].url, why ? why : "(none)");
		else
			cr_expect(!why, "'%s': refused: %s", cases[i].url, why);
		char host[64];
		bool found = http_url_host(cases[i].url, host, sizeof(host));
		cr_expect(found == (cases[i].host != NULL), "'%s': host found %d", cases[i].url, found);
		if (found && cases[i].host)
			EXPECT_STR(host, cases[i].host);
	}
	cr_expect(http_same_origin("https://HF.co/a", "https://hf.co/b?c"));
	cr_expect(!http_same_origin("https://hf.co/a", "http://hf.co/a"));
	cr_expect(!http_same_origin("https://hf.co/a", "https://hf.co:444/a"));
	cr_expect(!http_same_origin("https://hf.co.evil/a", "https://hf.co/a"));
	cr_expect(!http_same_origin("nothing", "nothing"));
}

Test(http_parse, mutated_locations_are_refused_or_clean)
{
	fuzz_state = 0xfeedfacefeedfaceULL;
	static const char *const seeds[] = {
		"https://cdn-lfs.hf.co/repos/ab/cd?X-Amz-Signature=0123&Expires=1", "http://127.0.0.1:8000/files/big.pt",
		"http://[::1]:80/x", "https://u:p@h/x", "/relative/path",
	};
	char url[160];
	for (int c = 0; c < FUZZ_CASES; c++) {
		const char *seed = seeds[below(sizeof(seeds) / sizeof(seeds[0]))];
		size_t n = strlen(seed);
		memcpy(url, seed, n);
		n = mutate(url, n, sizeof(url) - 1);
		url[n] = '\0';
		if (!http_url_refusal(url)) { /* what tinspect would ask for: a host, no credentials, nothing below a space */
			size_t origin = http_origin_length(url);
			cr_assert(origin > 0 && origin <= strlen(url), "case %d: '%s'", c, url);
			cr_assert(!memchr(url, '@', origin), "case %d: credentials in '%s'", c, url);
			for (const char *p = url; *p; p++)
				cr_assert((unsigned char)*p > ' ' && *p != 0x7f, "case %d", c);
			cr_assert(http_same_origin(url, url), "case %d: '%s' is not its own origin", c, url);
		}
		char host[16];
		if (http_url_host(url, host, sizeof(host)))
			cr_assert(strlen(host) > 0 && strlen(host) < sizeof(host) && !strchr(host, '/') && !strchr(host, '@'),
			          "case %d: host '%s' of '%s'", c, host, url);
	}
}

/* ---- random and mutated input ---- */

static const char *const header_templates[] = {
	"HTTP/1.1 206 Partial Content\r\n", "HTTP/1.1 200 OK\r\n", "HTTP/2 302\r\n", "HTTP/1.1 304 Not Modified\r\n",
	"HTTP/1.1 416 Range Not Satisfiable\r\n", "Content-Range: bytes 0-131071/6293784\r\n",
	"Content-Range: bytes */0\r\n", "Content-Length: 131072\r\n", "ETag: \"6b0bf184-600918\"\r\n",
	"ETag: W/\"x\"\r\n", "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
	"Location: https://cdn.example/a?X-Amz-Signature=abc\r\n", "X-Error-Code: GatedRepo\r\n", "\r\n",
};

Test(http_parse, random_and_mutated_answers_keep_every_bound)
{
	fuzz_state = 0x9e3779b97f4a7c15ULL;
	unsigned char dst[256];
	char line[512];
	for (int c = 0; c < FUZZ_CASES; c++) {
		http_answer a;
		uint64_t want = below(sizeof(dst) + 1), max = below(600);
		http_answer_start(&a, dst, want, max);
		for (size_t k = 1 + below(12); k; k--) {
			if (below(3)) {
				const char *t = header_templates[below(sizeof(header_templates) / sizeof(header_templates[0]))];
				size_t n = strlen(t);
				memcpy(line, t, n);
				n = below(3) ? mutate(line, n, sizeof(line)) : n;
				http_answer_header(&a, line, n);
			} else {
				size_t n = below(300);
				for (size_t i = 0; i < n; i++)
					line[i] = (char)next_random();
				size_t took = http_answer_body(&a, line, n);
				cr_assert(took == n || took == 0, "case %d: took %zu of %zu", c, took, n);
			}
			cr_assert(a.status == 0 || (a.status >= 100 && a.status <= 999), "case %d: status %ld", c, a.status);
			cr_assert(a.got <= a.want, "case %d: %" PRIu64 " bytes into %" PRIu64, c, a.got, a.want);
			cr_assert(a.body_len <= a.body_max && a.body_len <= (a.body ? a.body_cap : 0), "case %d", c);
			cr_assert(strlen(a.etag) < sizeof(a.etag) && strlen(a.range) < sizeof(a.range), "case %d", c);
			cr_assert(strlen(a.modified) < sizeof(a.modified) && strlen(a.hub_error) < sizeof(a.hub_error));
		}
		uint64_t first, last, total;
		if (http_content_range(a.range, &first, &last, &total))
			cr_assert(first <= last && last < total, "case %d: '%s'", c, a.range);
		free(a.body);
	}
}

Test(http_parse, random_numbers_parse_only_when_they_print_back_the_same)
{
	fuzz_state = 0x0123456789abcdefULL;
	char buf[128];
	for (int c = 0; c < FUZZ_CASES; c++) {
		int n = snprintf(buf, sizeof(buf), "bytes %" PRIu64 "-%" PRIu64 "/%" PRIu64, next_random() >> below(64),
		                 next_random() >> below(64), next_random() >> below(64));
		size_t len = mutate(buf, (size_t)n, sizeof(buf) - 1);
		buf[len] = '\0';
		uint64_t first, last, total;
		if (http_content_range(buf, &first, &last, &total)) {
			/* only "bytes DIGITS-DIGITS/DIGITS", read as the same numbers (leading zeros aside) */
			const char *p = buf + 6, *dash = strchr(p, '-'), *slash = strchr(p, '/');
			cr_assert(!strncmp(buf, "bytes ", 6) && strspn(p, "0123456789-/") == strlen(p) && dash && slash &&
			          dash < slash && !strchr(dash + 1, '-') && !strchr(slash + 1, '/'), "case %d: '%s'", c, buf);
			cr_assert(strtoull(p, NULL, 10) == first && strtoull(dash + 1, NULL, 10) == last &&
			          strtoull(slash + 1, NULL, 10) == total, "case %d: '%s'", c, buf);
			cr_assert(first <= last && last < total);
		}
		long status;
		if (http_status_line(buf, len, &status))
			cr_assert(!strncmp(buf, "HTTP/", 5) && status >= 100 && status <= 999);
		uint64_t length;
		if (http_content_length(buf, &length))
			cr_assert(strspn(buf, "0123456789") == strlen(buf) && strtoull(buf, NULL, 10) == length, "case %d", c);
	}
}

Test(http_parse, mutated_netrc_files_never_read_past_their_end)
{
	fuzz_state = 0xdeadbeefcafef00dULL;
	static const char seed[] = "machine h login u password p\nmacdef m\nline\n\n"
	                           "machine \"h2\" login \"a b\" password \"c\\\"d\"\ndefault login d password e\n";
	for (int c = 0; c < FUZZ_CASES; c++) {
		size_t cap = sizeof(seed) + 64;
		char *text = malloc(cap); /* its exact length: ASan sees a read past it */
		memcpy(text, seed, sizeof(seed) - 1);
		size_t n = mutate(text, sizeof(seed) - 1, cap);
		char *exact = malloc(n ? n : 1);
		memcpy(exact, text, n);
		char login[8], password[8];
		const char *host = below(2) ? "h" : "h2";
		if (http_netrc_find(exact, n, host, login, sizeof(login), password, sizeof(password)))
			cr_assert(strlen(login) < sizeof(login) && strlen(password) < sizeof(password), "case %d", c);
		free(exact);
		free(text);
	}
}

/* ---- the cache's formats ---- */

Test(http_parse, a_mutated_cache_head_or_block_is_never_trusted)
{
	fuzz_state = 0x5eed5eed5eed5eedULL;
	const char *url = "http://127.0.0.1:8000/files/big.pt";
	char head[IO_CACHE_HEAD_MAX], copy[IO_CACHE_HEAD_MAX], got_url[256], got_validator[HTTP_VALIDATOR_MAX];
	size_t n = io_cache_head_format(head, sizeof(head), url, "\"6b0bf184-600918\"", 6297036);
	cr_assert(n > 0);
	uint64_t size;
	cr_assert(io_cache_head_parse(head, n, got_url, sizeof(got_url), got_validator, sizeof(got_validator), &size));
	EXPECT_STR(got_url, url);
	EXPECT_STR(got_validator, "\"6b0bf184-600918\"");
	EXPECT_INT(size, 6297036);
	unsigned char data[300], file[IO_CACHE_HEADER + 300 + 64];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7);
	uint64_t version = io_cache_version(url, "\"6b0bf184-600918\"", 6297036);
	io_cache_block_header(file, version, 3, data, sizeof(data));
	memcpy(file + IO_CACHE_HEADER, data, sizeof(data));
	size_t whole = IO_CACHE_HEADER + sizeof(data);
	cr_assert(io_cache_block_check(file, whole, version, 3, sizeof(data)));
	cr_expect(!io_cache_block_check(file, whole, version, 4, sizeof(data)));     /* another block */
	cr_expect(!io_cache_block_check(file, whole, version + 1, 3, sizeof(data))); /* another version */
	cr_expect(!io_cache_block_check(file, whole - 1, version, 3, sizeof(data))); /* torn */
	for (int c = 0; c < FUZZ_CASES; c++) {
		memcpy(copy, head, n);
		size_t m = mutate(copy, n, sizeof(copy));
		if (io_cache_head_parse(copy, m, got_url, sizeof(got_url), got_validator, sizeof(got_validator), &size))
			cr_assert(m == n && !memcmp(copy, head, n), "case %d: a changed head was trusted", c);
		unsigned char block[sizeof(file)];
		memcpy(block, file, whole);
		size_t k = mutate((char *)block, whole, sizeof(block));
		if (io_cache_block_check(block, k, version, 3, sizeof(data)))
			cr_assert(k == whole && !memcmp(block, file, whole), "case %d: a changed block was trusted", c);
	}
	/* what cannot be kept: a validator that would break its line, a URL with a line break */
	EXPECT_INT(io_cache_head_format(head, sizeof(head), url, "\"a\"\nsize 1", 1), 0);
	EXPECT_INT(io_cache_head_format(head, sizeof(head), "http://h/a\nb", "\"a\"", 1), 0);
	EXPECT_INT(io_cache_head_format(head, 40, url, "\"a\"", 1), 0);
}

Test(http_parse, keys_and_versions_differ_for_each_url_validator_and_size)
{
	const char *url = "http://h/a";
	cr_expect(io_cache_key(url) != io_cache_key("http://h/b"));
	cr_expect(io_cache_key(url) == io_cache_key("http://h/a"));
	uint64_t v = io_cache_version(url, "\"1\"", 10);
	cr_expect(v != io_cache_version(url, "\"2\"", 10));
	cr_expect(v != io_cache_version(url, "\"1\"", 11));
	cr_expect(v != io_cache_version("http://h/b", "\"1\"", 10));
	cr_expect(io_cache_version("http://h/a", "b", 1) != io_cache_version("http://h/ab", "", 1));
	/* FNV-1a 64 of "a", the published value */
	EXPECT_INT(io_cache_fnv1a("a", 1, 0xcbf29ce484222325ULL), 0xaf63dc4c8601ec8cULL);
}

Test(http_parse, eviction_removes_the_least_recently_used_until_the_rest_fit)
{
	io_cache_usage e[] = {
		{.bytes = 100, .last_used = 30}, {.bytes = 100, .last_used = 10}, {.bytes = 100, .last_used = 20},
		{.bytes = 100, .last_used = 5, .keep = true},
	};
	EXPECT_INT(io_cache_plan_eviction(e, 4, 250), 2);
	EXPECT_INT(e[1].evict, 1); /* the oldest that may go */
	EXPECT_INT(e[2].evict, 1);
	EXPECT_INT(e[0].evict, 0);
	EXPECT_INT(e[3].evict, 0); /* in use: never, even when the oldest */
	io_cache_usage fits[] = {{.bytes = 100, .last_used = 1}};
	EXPECT_INT(io_cache_plan_eviction(fits, 1, 100), 0);
	io_cache_usage alone[] = {{.bytes = 500, .last_used = 1, .keep = true}};
	EXPECT_INT(io_cache_plan_eviction(alone, 1, 100), 0);
}

Test(http_parse, cache_max_reads_bytes_and_suffixes)
{
	static const struct {
		const char *value;
		uint64_t want;
	} cases[] = {
		{"1000", 1000}, {"200K", 200 << 10}, {"3m", 3 << 20}, {"2G", (uint64_t)2 << 30}, {"1T", (uint64_t)1 << 40},
		{"", IO_CACHE_MAX_DEFAULT}, {"-5", IO_CACHE_MAX_DEFAULT}, {"12Q", IO_CACHE_MAX_DEFAULT},
		{"99999999999999999999", IO_CACHE_MAX_DEFAULT}, {"17179869184T", IO_CACHE_MAX_DEFAULT}, {"5KK", IO_CACHE_MAX_DEFAULT},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		setenv("TINSPECT_CACHE_MAX", cases[i].value, 1);
		cr_expect(io_cache_max() == cases[i].want, "'%s': got %" PRIu64 ", want %" PRIu64, cases[i].value,
		          io_cache_max(), cases[i].want);
	}
	unsetenv("TINSPECT_CACHE_MAX");
	EXPECT_INT(io_cache_max(), IO_CACHE_MAX_DEFAULT);
}

/* ---- the cache on disk, through the calls http.c makes ---- */

/* A fresh cache folder for one test: XDG_CACHE_HOME in a temporary folder; its path in dir. */
static void fresh_cache(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/tinspect-cache-XXXXXX");
	cr_assert(mkdtemp(dir));
	setenv("XDG_CACHE_HOME", dir, 1);
}

/* The path of the only block file of url's entry, into out. */
static void block_path(const char *dir, const char *url, uint64_t version, uint64_t index, char *out, size_t size)
{
	snprintf(out, size, "%s/tinspect/v1/%016" PRIx64 "/%016" PRIx64 "-%016" PRIx64, dir, io_cache_key(url), version,
	         index);
}

Test(http_parse, cache_blocks_come_back_whole_and_torn_ones_are_dropped)
{
	char dir[64], path[512];
	fresh_cache(dir, sizeof(dir));
	const char *url = "http://h.example/model.safetensors";
	unsigned char data[1000], back[1000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 13 + 1);
	io_cache *c = io_cache_open(url);
	cr_assert(c);
	const char *validator;
	uint64_t size;
	cr_expect(!io_cache_head(c, &validator, &size));
	cr_expect(!io_cache_set_version(c, "", 1000)); /* no validator: nothing kept */
	cr_assert(io_cache_set_version(c, "\"v1\"", 1000));
	io_cache_put(c, 0, data, sizeof(data));
	cr_assert(io_cache_get(c, 0, back, sizeof(back)));
	cr_expect(!memcmp(back, data, sizeof(data)));
	io_cache_close(c);

	c = io_cache_open(url); /* another process: the head says which version is kept */
	cr_assert(io_cache_head(c, &validator, &size));
	EXPECT_STR(validator, "\"v1\"");
	EXPECT_INT(size, 1000);
	cr_assert(io_cache_set_version(c, validator, size));
	block_path(dir, url, io_cache_version(url, "\"v1\"", 1000), 0, path, sizeof(path));
	cr_assert(truncate(path, 500) == 0); /* torn */
	cr_expect(!io_cache_get(c, 0, back, sizeof(back)));
	cr_expect(access(path, F_OK) != 0, "a torn block is removed");
	io_cache_put(c, 0, data, sizeof(data));
	cr_assert(io_cache_set_version(c, "\"v2\"", 1000)); /* the server has another version now */
	cr_expect(access(path, F_OK) != 0, "the old version's blocks are removed");
	cr_expect(!io_cache_get(c, 0, back, sizeof(back)));
	io_cache_put(c, 0, data, sizeof(data));
	io_cache_close(c);

	ti_io_cache_entry *entries;
	size_t n;
	ti_error err;
	ASSERT_STATUS(ti_io_cache_list(&entries, &n, &err), TI_OK, err);
	ASSERT_INT(n, 1);
	EXPECT_STR(entries[0].url, url);
	EXPECT_STR(entries[0].validator, "\"v2\"");
	EXPECT_INT(entries[0].bytes, 1000);
	ti_io_cache_list_free(entries, n);
	uint64_t removed, bytes;
	ASSERT_STATUS(ti_io_cache_clear(url, &removed, &bytes, &err), TI_OK, err);
	EXPECT_INT(removed, 1);
	EXPECT_INT(bytes > 1000, 1);
	ASSERT_STATUS(ti_io_cache_list(&entries, &n, &err), TI_OK, err);
	EXPECT_INT(n, 0);
	ti_io_cache_list_free(entries, n);
	ASSERT_STATUS(ti_io_cache_clear(url, &removed, &bytes, &err), TI_OK, err);
	EXPECT_INT(removed, 0);
	EXPECT_STATUS(ti_io_cache_clear("http://user:pw@h/x", &removed, &bytes, &err), TI_E_INVALID, err);
	char command[128];
	snprintf(command, sizeof(command), "rm -rf '%s'", dir);
	cr_expect(system(command) == 0);
	unsetenv("XDG_CACHE_HOME");
}

Test(http_parse, a_process_past_the_bound_stops_writing_and_evicts_the_oldest)
{
	char dir[64];
	fresh_cache(dir, sizeof(dir));
	unsigned char data[4096] = {0};
	setenv("TINSPECT_CACHE_MAX", "10K", 1);
	io_cache *old = io_cache_open("http://h/old");
	cr_assert(io_cache_set_version(old, "\"1\"", 8192));
	io_cache_put(old, 0, data, sizeof(data));
	io_cache_close(old);
	char head[256];
	snprintf(head, sizeof(head), "%s/tinspect/v1/%016" PRIx64 "/head", dir, io_cache_key("http://h/old"));
	struct timespec long_ago[2] = {{1000000000, 0}, {1000000000, 0}};
	cr_assert(utimensat(AT_FDCWD, head, long_ago, 0) == 0); /* last used long ago */
	io_cache *c = io_cache_open("http://h/new");
	cr_assert(io_cache_set_version(c, "\"1\"", 65536));
	for (uint64_t i = 0; i < 4; i++)
		io_cache_put(c, i, data, sizeof(data)); /* the third and fourth would pass 10 KiB: not written */
	unsigned char back[4096];
	cr_expect(io_cache_get(c, 1, back, sizeof(back)));
	cr_expect(!io_cache_get(c, 3, back, sizeof(back)));
	io_cache_close(c);
	ti_io_cache_entry *entries;
	size_t n;
	ti_error err;
	ASSERT_STATUS(ti_io_cache_list(&entries, &n, &err), TI_OK, err);
	ASSERT_INT(n, 1);
	EXPECT_STR(entries[0].url, "http://h/new");
	ti_io_cache_list_free(entries, n);
	unsetenv("TINSPECT_CACHE_MAX");
	char command[128];
	snprintf(command, sizeof(command), "rm -rf '%s'", dir);
	cr_expect(system(command) == 0);
	unsetenv("XDG_CACHE_HOME");
}
