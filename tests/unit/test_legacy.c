/*
 * test_legacy.c - legacy torch.save files (before PyTorch 1.6): storages
 * found by their count headers, storage views inside their roots, whole
 * pickled modules named as state_dict() names them, and damaged files
 * refused with the byte offset of what is wrong.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/legacy.h"
#include "unit.h"

static ti_error err;
static char path[64];

static void make_path(void)
{
	snprintf(path, sizeof(path), "/tmp/tinspect-legacy-%d.pt", (int)getpid());
	ti_error_clear(&err);
}

static void remove_path(void) { unlink(path); }

TestSuite(legacy, .init = make_path, .fini = remove_path);

static unsigned char *slurp(const char *from, size_t *n)
{
	FILE *f = fopen(from, "rb");
	cr_assert(f, "cannot open %s", from);
	unsigned char *buf = malloc(1 << 16);
	*n = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

static void spill(const unsigned char *bytes, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert(f && fwrite(bytes, 1, n, f) == n && fclose(f) == 0, "cannot write %s", path);
}

static const ti_source_tensor *named(ti_source *s, const char *name)
{
	for (size_t i = 0; i < ti_source_tensor_count(s); i++)
		if (!strcmp(ti_source_tensor_at(s, i)->name, name))
			return ti_source_tensor_at(s, i);
	cr_assert_fail("no tensor '%s'", name);
	return NULL;
}

Test(legacy, tied_weights_share_one_storage_read_after_its_count)
{
	ti_source *s;
	ASSERT_STATUS(ti_source_open("fixtures/legacy_tied.pt", &s, &err), TI_OK, err);
	EXPECT_STR(ti_source_format_name(ti_source_get_format(s)), "torch-legacy");
	ASSERT_INT(ti_source_tensor_count(s), 2);
	EXPECT_INT(ti_source_storage_count(s), 1);
	const ti_source_tensor *a = named(s, "embed.weight"), *b = named(s, "head.weight");
	EXPECT_INT(a->storage, b->storage);
	int fd;
	uint64_t offset;
	cr_assert(ti_source_file_place(s, a->storage, &fd, &offset));
	/* the storage's bytes end the file: its count header is the 8 bytes before them */
	size_t n;
	unsigned char *file = slurp("fixtures/legacy_tied.pt", &n);
	EXPECT_INT(offset + 96, n);
	EXPECT_INT(file[offset - 8], 24); /* 6 x 4 elements, int64 little-endian */
	free(file);
	ti_source_close(s);
}

Test(legacy, a_storage_view_reads_the_elements_of_its_root_it_covers)
{
	/* gen_legacy.py build_storage_views: root 0..7, view ('view', 2, 4), a tensor at 1 with stride 2 */
	ti_source *s;
	ASSERT_STATUS(ti_source_open("fixtures/legacy_storage_views.pt", &s, &err), TI_OK, err);
	const ti_source_tensor *v = named(s, "view");
	EXPECT_INT(v->offset, 1);
	EXPECT_INT(v->stride[0], 2);
	EXPECT_INT(ti_source_storage_at(s, v->storage)->nbytes, 16);
	float got[4];
	ASSERT_STATUS(ti_source_read(s, v->storage, 0, got, sizeof(got), &err), TI_OK, err);
	EXPECT_DOUBLE(got[0], 2.0);
	EXPECT_DOUBLE(got[1], 3.0);
	EXPECT_DOUBLE(got[3], 5.0);
	ti_source_close(s);
}

Test(legacy, a_whole_module_lists_its_state_dict_and_classes)
{
	ti_source *s;
	ASSERT_STATUS(ti_source_open("fixtures/legacy_module.pt", &s, &err), TI_OK, err);
	static const char *const want[] = {"0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var",
	                                   "1.num_batches_tracked", "4.weight", "4.bias"};
	ASSERT_INT(ti_source_tensor_count(s), 8);
	for (size_t i = 0; i < 8; i++)
		EXPECT_STR(ti_source_tensor_at(s, i)->name, want[i]);
	size_t n;
	const ti_entry *e = ti_source_entries(s, &n, &err);
	bool root_class = false;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(e[i].name, "__class__")) {
			ASSERT_KIND(e[i].value, TI_GLOBAL);
			EXPECT_STR(e[i].value->as.global->name, "Sequential");
			root_class = true;
		}
	cr_expect(root_class, "the root module's class is an entry");
	ti_source_close(s);
}

Test(legacy, scan_judges_module_ids_as_their_class_and_names_the_pickle)
{
	ti_scan_report *r;
	ASSERT_STATUS(ti_scan_file("fixtures/legacy_module.pt", NULL, &r, &err), TI_OK, err);
	EXPECT_INT(r->verdict, TI_SCAN_UNKNOWN);
	for (size_t i = 0; i < r->count; i++)
		EXPECT_STR(r->findings[i].record, "pickle 4 (object)");
	ti_scan_report_free(r);
}

/* A damaged copy of legacy_tied.pt: the error and the offset it names. */
static void expect_refused(const unsigned char *bytes, size_t n, const char *says, int64_t at)
{
	spill(bytes, n);
	ti_source *s;
	EXPECT_STATUS(ti_source_open(path, &s, &err), TI_E_CORRUPT, err);
	cr_expect(s == NULL);
	EXPECT_CONTAINS(err.message, says);
	EXPECT_INT(err.offset, at);
}

Test(legacy, damaged_storages_are_refused_at_their_offset)
{
	size_t n;
	unsigned char *file = slurp("fixtures/legacy_tied.pt", &n);
	size_t data = n - 96, count = data - 8;
	expect_refused(file, n - 1, "needs 96 bytes but the file ends 95 bytes on", (int64_t)count);
	expect_refused(file, count + 4, "the file ends before storage", (int64_t)count);
	file[count] = 25;
	expect_refused(file, n, "holds 25 elements in the file but 24 in the object pickle", (int64_t)count);
	free(file);
}

Test(legacy, a_cut_in_the_object_pickle_names_the_pickle)
{
	size_t n;
	unsigned char *file = slurp("fixtures/legacy_tied.pt", &n);
	spill(file, 200);
	ti_source *s;
	EXPECT_STATUS(ti_source_open(path, &s, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "pickle 4 (object)");
	cr_expect(err.offset > 137 && err.offset <= 200, "offset %lld is in the file", (long long)err.offset);
	free(file);
}

static ti_status read_memory(void *ctx, uint64_t offset, void *buf, size_t n, ti_error *e)
{
	(void)e;
	memcpy(buf, (const char *)ctx + offset, n);
	return TI_OK;
}

Test(legacy, a_pickle_ends_at_its_stop_whatever_follows)
{
	/* PROTO 2, BINUNICODE 'a.c' (a '.' inside a counted string is no STOP), GLOBAL, TUPLE2, STOP, then storage bytes */
	static const char bytes[] = "\x80\x02X\x03\x00\x00\x00" "a.cctorch\nFloatStorage\n\x86.\x18\x00\x00\x00\x00\x00\x00\x00.";
	ti_pickle_source src = {sizeof(bytes) - 1, read_memory, (void *)bytes, NULL};
	uint64_t extent = 0;
	ASSERT_STATUS(ti_legacy_pickle_extent(&src, &extent, &err), TI_OK, err);
	EXPECT_INT(extent, 32);
	/* a counted string longer than what is left, and a pickle with no STOP */
	static const char long_string[] = "\x80\x02X\xff\xff\xff\x00" "abc";
	src = (ti_pickle_source){sizeof(long_string) - 1, read_memory, (void *)long_string, NULL};
	EXPECT_STATUS(ti_legacy_pickle_extent(&src, &extent, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "passes the end of the pickle");
	EXPECT_INT(err.offset, 2);
	src = (ti_pickle_source){4, read_memory, (void *)"\x80\x02K\x01", NULL};
	EXPECT_STATUS(ti_legacy_pickle_extent(&src, &extent, &err), TI_E_CORRUPT, err);
	EXPECT_CONTAINS(err.message, "without STOP");
}
