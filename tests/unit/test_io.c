/*
 * test_io.c - a file's bytes through ti_io: the local kind's reads, and the
 * URLs refused before any request (the server cases are tests/remote/run.sh).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tinspect/io.h"
#include "unit.h"

static ti_error err;

/* A temporary file holding "0123456789"; its path in path. */
static void make_file(char *path, size_t size)
{
	snprintf(path, size, "/tmp/tinspect-io-XXXXXX");
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	cr_assert(write(fd, "0123456789", 10) == 10);
	close(fd);
}

Test(io, local_reads_stop_at_the_end_and_say_how_many)
{
	char path[64], buf[16];
	make_file(path, sizeof(path));
	ti_io *io;
	ASSERT_STATUS(ti_io_open(path, &io, &err), TI_OK, err);
	EXPECT_INT(io->size, 10);
	EXPECT_INT(io->remote == NULL, 1);
	size_t got;
	ASSERT_STATUS(ti_io_read(io, 3, buf, 4, &got, &err), TI_OK, err);
	EXPECT_INT(got, 4);
	EXPECT_INT(memcmp(buf, "3456", 4), 0);
	ASSERT_STATUS(ti_io_read(io, 8, buf, 8, &got, &err), TI_OK, err); /* past the end: what there is */
	EXPECT_INT(got, 2);
	ASSERT_STATUS(ti_io_read(io, 12, buf, 8, &got, &err), TI_OK, err);
	EXPECT_INT(got, 0);
	EXPECT_STATUS(ti_io_read_full(io, 8, buf, 4, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "the file ends at byte 10");
	EXPECT_STATUS(ti_io_read_full(io, 0, buf, 10, &err), TI_OK, err);
	ti_io *again = ti_io_ref(io);
	ti_io_close(io);
	EXPECT_STATUS(ti_io_read_full(again, 0, buf, 2, &err), TI_OK, err); /* one reference left: still open */
	ti_io_close(again);
	unlink(path);
}

Test(io, a_borrowed_descriptor_stays_open)
{
	char path[64], buf[4];
	make_file(path, sizeof(path));
	int fd = open(path, O_RDONLY);
	cr_assert(fd >= 0);
	ti_io *io;
	ASSERT_STATUS(ti_io_wrap_fd(fd, &io, &err), TI_OK, err);
	EXPECT_INT(io->size, 10);
	ti_io_close(io);
	EXPECT_INT(read(fd, buf, 4), 4); /* not closed by the handle */
	close(fd);
	unlink(path);
}

Test(io, refuses_what_is_not_a_regular_file)
{
	ti_io *io = (ti_io *)1;
	EXPECT_STATUS(ti_io_open("/tmp", &io, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "not a regular file");
	EXPECT_INT(io == NULL, 1);
	EXPECT_STATUS(ti_io_open("/nonexistent/tinspect-io", &io, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "cannot open");
	char fifo[] = "/tmp/tinspect-io-fifo";
	unlink(fifo);
	cr_assert(mkfifo(fifo, 0600) == 0);
	EXPECT_STATUS(ti_io_open(fifo, &io, &err), TI_E_IO, err); /* and does not wait for a writer */
	unlink(fifo);
}

Test(io, tells_urls_from_paths)
{
	EXPECT_INT(ti_io_is_url("http://h/x"), 1);
	EXPECT_INT(ti_io_is_url("https://h/x"), 1);
	EXPECT_INT(ti_io_is_url("hf://org/repo/x"), 1);
	EXPECT_INT(ti_io_is_url("ftp://h/x"), 0);
	EXPECT_INT(ti_io_is_url("model.safetensors"), 0);
	EXPECT_INT(ti_io_is_url("http:/h"), 0);
}

/* URLs refused before a request: none of these reaches a network. */
Test(io, refuses_urls_it_cannot_use)
{
	static const struct {
		const char *url, *why;
	} cases[] = {
		{"http://user:secret@127.0.0.1:9/x", "credentials in a URL are refused"},
		{"http:///x", "names no host"},
		{"https://h/a b", "space or a control character"},
		{"hf://org", "hf://ORG/REPO[@REVISION]/PATH"},
		{"hf://org/repo", "names a file in the repository"},
		{"hf://org/repo@/x", "hf://ORG/REPO[@REVISION]/PATH"},
		{"hf:///repo/x", "hf://ORG/REPO[@REVISION]/PATH"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_io *io = (ti_io *)1;
		ti_error_clear(&err);
		ti_status st = ti_io_open(cases[i].url, &io, &err);
		cr_expect(st == TI_E_INVALID || (st == TI_E_NETWORK && strstr(err.message, "libcurl")),
		          "%s: status %d (%s)", cases[i].url, st, err.message);
		if (st == TI_E_INVALID)
			EXPECT_CONTAINS(err.message, cases[i].why);
		EXPECT_INT(io == NULL, 1);
		EXPECT_INT(strstr(err.message, "secret") == NULL, 1);
	}
}

Test(io, tells_what_looks_like_a_url)
{
	EXPECT_INT(ti_io_looks_like_url("ftp://h/x"), 1);
	EXPECT_INT(ti_io_looks_like_url("s3+x.y-z://b/k"), 1);
	EXPECT_INT(ti_io_looks_like_url("http://h/x"), 1);
	EXPECT_INT(ti_io_looks_like_url("1ftp://h/x"), 0);
	EXPECT_INT(ti_io_looks_like_url("dir/ftp://x"), 0);
	EXPECT_INT(ti_io_looks_like_url("model.pt"), 0);
	EXPECT_INT(ti_io_looks_like_url("c:/x"), 0);
}

/* ti_io_check_url says what ti_io_open would refuse, with no request; a repository alone is allowed. */
Test(io, checks_urls_without_a_request)
{
	static const struct {
		const char *url, *why; /* NULL: allowed */
	} cases[] = {
		{"ftp://h/x", "the URL scheme 'ftp' is not one tinspect reads"},
		{"http://user:secret@h/x", "credentials in a URL are refused"},
		{"http:///x", "names no host"},
		{"hf://org", "hf://ORG/REPO[@REVISION]/PATH"},
		{"hf://org/repo@/x", "hf://ORG/REPO[@REVISION]/PATH"},
		{"hf://org/repo", NULL},
		{"hf://org/repo@v1/", NULL},
		{"hf://org/repo/a/b.pt", NULL},
		{"https://h:8443/x.safetensors", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_error_clear(&err);
		ti_status st = ti_io_check_url(cases[i].url, &err);
		EXPECT_INT(st, cases[i].why ? TI_E_INVALID : TI_OK);
		if (cases[i].why)
			EXPECT_CONTAINS(err.message, cases[i].why);
		EXPECT_INT(strstr(err.message, "secret") == NULL, 1);
	}
}

Test(io, an_hf_endpoint_that_is_no_http_url_is_refused)
{
	setenv("HF_ENDPOINT", "ftp://mirror", 1);
	ti_io *io;
	ti_status st = ti_io_open("hf://org/repo/model.safetensors", &io, &err);
	unsetenv("HF_ENDPOINT");
	cr_expect(st == TI_E_INVALID || st == TI_E_NETWORK);
	if (st == TI_E_INVALID)
		EXPECT_CONTAINS(err.message, "HF_ENDPOINT");
}

/* What a repository's probe of its candidate files passes over: a 404, or offline a file the cache lacks. */
Test(io, says_a_file_is_absent_on_a_404_or_offline_when_the_cache_lacks_it)
{
	char dir[] = "/tmp/tinspect-io-XXXXXX";
	ASSERT_INT(mkdtemp(dir) != NULL, 1);
	setenv("XDG_CACHE_HOME", dir, 1);
	ti_io_set_cache_mode(TI_IO_CACHE_ONLY);
	ti_io *io = NULL;
	ti_status st = ti_io_open("http://127.0.0.1:9/model.safetensors", &io, &err);
	ti_io_set_cache_mode(TI_IO_CACHE_DEFAULT);
	unsetenv("XDG_CACHE_HOME");
	EXPECT_INT(st, TI_E_NETWORK);
	EXPECT_STR(err.message, TI_IO_OFFLINE_ABSENT);
	EXPECT_INT(ti_io_error_is_absent(st, &err), 1);
	EXPECT_INT(io == NULL, 1);

	TI_FAIL(&err, TI_E_NETWORK, "HTTP 404, not found");
	EXPECT_INT(ti_io_error_is_absent(TI_E_NETWORK, &err), 1);
	TI_FAIL(&err, TI_E_NETWORK, "HTTP 403, forbidden");
	EXPECT_INT(ti_io_error_is_absent(TI_E_NETWORK, &err), 0);
	TI_FAIL(&err, TI_E_NETWORK, "offline (--offline, TINSPECT_OFFLINE or HF_HUB_OFFLINE): bytes 0-9 of the file are not in the cache");
	EXPECT_INT(ti_io_error_is_absent(TI_E_NETWORK, &err), 0); /* a file read before, short of bytes: not absent */
	rmdir(dir);
}
