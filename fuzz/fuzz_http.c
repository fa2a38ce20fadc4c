/*
 * fuzz_http.c - what a server and the user's files give the HTTP layer:
 * answers (status lines, headers, bodies), a .netrc, the remote-read
 * cache's files.
 *
 * The input is one server's answer as libcurl hands it to http.c's
 * callbacks: its first byte says how many bytes the range asked for and
 * how long a whole body may grow; then lines up to each LF are header
 * lines (a status line starts a new answer) until an empty line, and what
 * follows is the body, fed in pieces the next bytes size. Each answer must
 * keep every bound (nothing past the range asked for or the body's
 * ceiling, every field NUL-terminated inside its buffer), and a
 * Content-Range it accepts must be consistent. The same bytes are then
 * read as a redirect's Location (a URL let through has a host and no
 * credentials), as a .netrc (a login and password found fit their buffers), as a
 * cache head (one that parses must print back to the same bytes) and as a
 * block file (one that checks must carry the bytes its header sums).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "io/cache.h"
#include "io/http_parse.h"

static void check_answer(const uint8_t *data, size_t size)
{
	if (!size)
		return;
	unsigned char dst[256];
	http_answer a;
	http_answer_start(&a, dst, data[0] % (sizeof(dst) + 1), (uint64_t)data[0] * 4);
	size_t at = 1;
	while (at < size) { /* the header lines */
		const uint8_t *lf = memchr(data + at, '\n', size - at);
		size_t n = lf ? (size_t)(lf - (data + at)) + 1 : size - at;
		http_answer_header(&a, (const char *)data + at, n);
		at += n;
		if (n <= 2 && (data[at - n] == '\r' || data[at - n] == '\n'))
			break; /* the empty line: the body follows */
	}
	while (at < size) { /* the body, in pieces */
		size_t piece = 1 + data[at] % 64;
		at++;
		if (piece > size - at)
			piece = size - at;
		size_t took = http_answer_body(&a, (const char *)data + at, piece);
		FUZZ_CHECK(took == piece || took == 0, "took %zu of %zu", took, piece);
		at += piece;
		if (!took)
			break; /* libcurl stops the transfer */
	}
	FUZZ_CHECK(a.status == 0 || (a.status >= 100 && a.status <= 999), "status %ld", a.status);
	FUZZ_CHECK(a.got <= a.want, "%llu bytes into %llu", (unsigned long long)a.got, (unsigned long long)a.want);
	FUZZ_CHECK(a.body_len <= a.body_max, "a body of %llu", (unsigned long long)a.body_len);
	FUZZ_CHECK(strlen(a.etag) < sizeof(a.etag) && strlen(a.modified) < sizeof(a.modified) &&
	           strlen(a.range) < sizeof(a.range) && strlen(a.hub_error) < sizeof(a.hub_error), "a field overran");
	uint64_t first, last, total;
	if (http_content_range(a.range, &first, &last, &total))
		FUZZ_CHECK(first <= last && last < total, "'%s'", a.range);
	free(a.body);
}

static void check_netrc(const uint8_t *data, size_t size)
{
	char login[16], password[16];
	if (http_netrc_find((const char *)data, size, "example.com", login, sizeof(login), password, sizeof(password)))
		FUZZ_CHECK(strlen(login) < sizeof(login) && strlen(password) < sizeof(password), "credentials overran");
}

static void check_cache_files(const uint8_t *data, size_t size)
{
	char url[IO_CACHE_URL_MAX], validator[HTTP_VALIDATOR_MAX];
	uint64_t file_size;
	if (io_cache_head_parse((const char *)data, size, url, sizeof(url), validator, sizeof(validator), &file_size)) {
		char *again = malloc(IO_CACHE_HEAD_MAX);
		size_t n = again ? io_cache_head_format(again, IO_CACHE_HEAD_MAX, url, validator, file_size) : 0;
		FUZZ_CHECK(!again || (n == size && !memcmp(again, data, size)), "a head that does not print back");
		free(again);
	}
	if (size >= IO_CACHE_HEADER) {
		size_t len = size - IO_CACHE_HEADER;
		uint64_t version = 0, index = 0;
		for (int i = 7; i >= 0; i--) {
			index = index << 8 | data[8 + i];
			version = version << 8 | data[24 + i];
		}
		if (len <= IO_CACHE_BLOCK && io_cache_block_check(data, size, version, index, len)) {
			unsigned char header[IO_CACHE_HEADER];
			io_cache_block_header(header, version, index, data + IO_CACHE_HEADER, len);
			FUZZ_CHECK(!memcmp(header, data, IO_CACHE_HEADER), "a block whose header is not its bytes'");
		}
	}
}

/* The bytes as a redirect's Location: refused, or a URL with a host, no credentials, nothing below a space. */
static void check_url(const uint8_t *data, size_t size)
{
	char *url = malloc(size + 1);
	if (!url)
		return;
	memcpy(url, data, size);
	url[size] = '\0';
	if (!http_url_refusal(url)) {
		size_t origin = http_origin_length(url);
		FUZZ_CHECK(origin > 0 && !memchr(url, '@', origin), "'%s' let through", url);
		FUZZ_CHECK(http_same_origin(url, url), "'%s' is not its own origin", url);
	}
	char host[64];
	if (http_url_host(url, host, sizeof(host)))
		FUZZ_CHECK(*host && !strchr(host, '/') && !strchr(host, '@'), "host '%s'", host);
	free(url);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_answer(data, size);
	check_url(data, size);
	check_netrc(data, size);
	check_cache_files(data, size);
	return 0;
}
