/*
 * test_source.c - the source layer: what a file is comes from its content,
 * a folder is read as from_pretrained reads it, and every failure says
 * what the file is or which piece is missing.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unit.h"

static char tmpdir[64];
static ti_error err;

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/tinspect-source-XXXXXX", "/tmp");
	cr_assert(mkdtemp(tmpdir) != NULL, "cannot make a temporary folder");
	ti_error_clear(&err);
}

static void remove_tmpdir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect(system(cmd) == 0);
}

TestSuite(source, .init = make_tmpdir, .fini = remove_tmpdir);

static void copy_file(const char *from, const char *name)
{
	char to[256];
	snprintf(to, sizeof(to), "%s/%s", tmpdir, name);
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	cr_assert(in && out, "cannot copy %s to %s", from, to);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		cr_assert(fwrite(buf, 1, n, out) == n, "cannot write %s", to);
	fclose(in);
	cr_assert(fclose(out) == 0, "cannot write %s", to);
}

static void write_file(const char *name, const void *bytes, size_t n)
{
	char to[256];
	snprintf(to, sizeof(to), "%s/%s", tmpdir, name);
	FILE *out = fopen(to, "wb");
	cr_assert(out && fwrite(bytes, 1, n, out) == n && fclose(out) == 0, "cannot write %s", to);
}

static const char *in_tmp(const char *name)
{
	static char path[256];
	snprintf(path, sizeof(path), "%s%s%s", tmpdir, *name ? "/" : "", name);
	return path;
}

static ti_file_kind sniff_bytes(const char *bytes, size_t n)
{
	return ti_file_sniff(bytes, n, n);
}

/* ---- sniffing ---- */

Test(source, a_zip_header_is_a_zip_whatever_follows)
{
	EXPECT_INT(sniff_bytes("PK\3\4 rest of a local header", 28), TI_FILE_ZIP);
	EXPECT_INT(sniff_bytes("PK\5\6", 4), TI_FILE_ZIP);
}

Test(source, the_legacy_magic_number_is_a_legacy_torch_file)
{
	static const char legacy[] = "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.\x80\x02M\xe9\x03.";
	EXPECT_INT(sniff_bytes(legacy, sizeof(legacy) - 1), TI_FILE_LEGACY_TORCH);
}

Test(source, any_other_pickle_is_a_bare_pickle)
{
	EXPECT_INT(sniff_bytes("\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00}\x94.", 14), TI_FILE_PICKLE);
	EXPECT_INT(sniff_bytes("\x80\x02}q\x00.", 6), TI_FILE_PICKLE);
}

Test(source, a_header_length_and_a_brace_is_safetensors_even_when_the_length_is_wrong)
{
	EXPECT_INT(sniff_bytes("\x02\0\0\0\0\0\0\0{}", 10), TI_FILE_SAFETENSORS);
	/* a length past the end of the file: still safetensors, for its reader to say what is wrong */
	EXPECT_INT(sniff_bytes("\xff\xff\0\0\0\0\0\0  {\"a\"", 15), TI_FILE_SAFETENSORS);
}

Test(source, json_text_and_nothing_are_told_apart)
{
	EXPECT_INT(sniff_bytes("  {\"weight_map\": {}}", 20), TI_FILE_JSON);
	EXPECT_INT(sniff_bytes("\xef\xbb\xbf[1, 2]", 9), TI_FILE_JSON);
	EXPECT_INT(sniff_bytes("hello, world\n", 13), TI_FILE_TEXT);
	EXPECT_INT(sniff_bytes("\x00\x01\x02\x03\xfe", 5), TI_FILE_UNKNOWN);
	EXPECT_INT(ti_file_sniff("", 0, 0), TI_FILE_EMPTY);
}

Test(source, archives_of_other_kinds_are_named_not_taken_for_pickles_or_text)
{
	EXPECT_INT(sniff_bytes("7z\xbc\xaf\x27\x1c\x00\x04", 8), TI_FILE_7Z);
	EXPECT_INT(sniff_bytes("\x1f\x8b\x08\x00", 4), TI_FILE_GZIP);
	EXPECT_INT(sniff_bytes("\xfd" "7zXZ\0\0\x04", 8), TI_FILE_XZ);
	EXPECT_INT(sniff_bytes("\x28\xb5\x2f\xfd\x04", 5), TI_FILE_ZSTD);
	EXPECT_INT(sniff_bytes("Rar!\x1a\x07\x01\x00", 8), TI_FILE_RAR);
	EXPECT_INT(sniff_bytes("BZh91AY&SY\x01", 11), TI_FILE_BZIP2);
	/* text that merely starts like bzip2 is text */
	EXPECT_INT(sniff_bytes("BZh is a prefix\n", 16), TI_FILE_TEXT);
	cr_expect(ti_file_kind_is_foreign_archive(TI_FILE_7Z));
	cr_expect(!ti_file_kind_is_foreign_archive(TI_FILE_ZIP));
	EXPECT_STR(ti_file_kind_name(TI_FILE_7Z), "a 7z archive");
}

Test(source, a_7z_archive_is_refused_by_what_it_is)
{
	ti_source *s = NULL;
	ASSERT_STATUS(ti_source_open("fixtures/malicious/sevenzip_wrapped.pt", &s, &err), TI_E_UNSUPPORTED, err);
	cr_expect(strstr(err.message, "a 7z archive, not a torch.save file; its members are not read"), "got '%s'",
	          err.message);
}

/* ---- opening by content, not by name ---- */

Test(source, a_safetensors_file_named_like_a_torch_file_opens_as_safetensors)
{
	copy_file("fixtures/safetensors/multi_dtype.safetensors", "model.pt");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(in_tmp("model.pt"), &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_SAFETENSORS);
	EXPECT_INT(ti_source_file_count(s), 1);
	cr_expect(ti_source_checkpoint(s, 0) == NULL, "a safetensors file has no pickle");
	ti_source_close(s);
}

Test(source, a_torch_zip_named_like_safetensors_opens_as_a_torch_zip)
{
	copy_file("fixtures/tied.pt", "weights.safetensors");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(in_tmp("weights.safetensors"), &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_TORCH_ZIP);
	cr_expect(ti_source_checkpoint(s, 0) != NULL, "a torch zip gives its checkpoint");
	ti_source_close(s);
}

Test(source, an_index_is_known_by_its_json_not_its_name)
{
	copy_file("fixtures/safetensors/hf/model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model.safetensors.index.json", "weights.map");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(in_tmp("weights.map"), &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_HF_SHARDED);
	EXPECT_INT(ti_source_file_count(s), 2);
	ti_source_close(s);
}

Test(source, a_file_of_no_model_format_says_what_it_is)
{
	static const struct {
		const char *bytes;
		size_t n;
		ti_status status;
		const char *says;
	} cases[] = {
		{"", 0, TI_E_CORRUPT, "empty file"},
		{"epoch 3, loss 0.25\n", 19, TI_E_UNSUPPORTED, "a text file, not a model file"},
		{"\x80\x04}\x94.", 5, TI_E_UNSUPPORTED, "a bare pickle, not a torch.save file"},
		{"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15, TI_E_CORRUPT, "the file ends before pickle 2"},
		{"\x7f" "ELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00", 16, TI_E_UNSUPPORTED,
		 "not a model file tinspect reads"},
		{"\x08\0\0\0\0", 5, TI_E_CORRUPT, "a file of 5 bytes, too short to be any model file"},
		/* what a safetensors writer began is read as safetensors, whose reader says what is wrong */
		{"\0\0\0\0\0\0\0\0", 8, TI_E_CORRUPT, "header of 0 bytes is too short"},
		{"\x08\0\0\0\0\0\0\0[\"a\"]   ", 16, TI_E_CORRUPT, "header does not start with '{'"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_file("x", cases[i].bytes, cases[i].n);
		ti_source *s;
		EXPECT_STATUS(ti_source_open(in_tmp("x"), &s, &err), cases[i].status, err);
		cr_expect(s == NULL);
		EXPECT_CONTAINS(err.message, cases[i].says);
	}
}

Test(source, a_fifo_is_refused_without_being_read)
{
	cr_assert(mkfifo(in_tmp("pipe"), 0600) == 0, "mkfifo: %s", strerror(errno));
	ti_source *s;
	EXPECT_STATUS(ti_source_open(in_tmp("pipe"), &s, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "not a regular file");
}

/* ---- folders, as from_pretrained reads them ---- */

Test(source, a_folder_with_model_safetensors_is_that_file)
{
	copy_file("fixtures/safetensors/multi_dtype.safetensors", "model.safetensors");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(tmpdir, &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_SAFETENSORS);
	EXPECT_STR(ti_source_path(s), tmpdir);
	EXPECT_STR(ti_source_file_at(s, 0), in_tmp("model.safetensors"));
	ti_source_close(s);
}

Test(source, safetensors_win_over_pytorch_model_bin_as_in_from_pretrained)
{
	copy_file("fixtures/tied.pt", "pytorch_model.bin");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(tmpdir, &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_TORCH_ZIP);
	ti_source_close(s);
	copy_file("fixtures/safetensors/multi_dtype.safetensors", "model.safetensors");
	ASSERT_STATUS(ti_source_open(tmpdir, &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_SAFETENSORS);
	ti_source_close(s);
}

Test(source, a_folder_with_a_sharded_index_reads_every_shard)
{
	copy_file("fixtures/safetensors/hf/model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model.safetensors.index.json", "model.safetensors.index.json");
	ti_source *s;
	ASSERT_STATUS(ti_source_open(tmpdir, &s, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(s), TI_SOURCE_HF_SHARDED);
	EXPECT_INT(ti_source_file_count(s), 2);
	EXPECT_INT(ti_source_tensor_count(s), 5);
	ti_source_close(s);
}

Test(source, a_folder_without_a_checkpoint_names_what_it_looked_for)
{
	write_file("config.json", "{}", 2);
	ti_source *s;
	EXPECT_STATUS(ti_source_open(tmpdir, &s, &err), TI_E_UNSUPPORTED, err);
	EXPECT_CONTAINS(err.message, "holds no Hugging Face checkpoint");
	EXPECT_CONTAINS(err.message, "model.safetensors.index.json");
}

Test(source, a_folder_named_like_a_weight_file_is_not_followed)
{
	cr_assert(mkdir(in_tmp("model.safetensors"), 0700) == 0);
	ti_source *s;
	EXPECT_STATUS(ti_source_open(tmpdir, &s, &err), TI_E_UNSUPPORTED, err);
	EXPECT_CONTAINS(err.message, "is not a regular file");
}

Test(source, a_missing_shard_names_the_index_the_shard_and_its_tensors)
{
	copy_file("fixtures/safetensors/hf/model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model.safetensors.index.json", "model.safetensors.index.json");
	char index[256];
	snprintf(index, sizeof(index), "%s", in_tmp("model.safetensors.index.json"));
	ti_source *s;
	EXPECT_STATUS(ti_source_open(index, &s, &err), TI_E_IO, err);
	EXPECT_CONTAINS(err.message, "shard 'model-00002-of-00002.safetensors' named by '");
	EXPECT_CONTAINS(err.message, "model.safetensors.index.json' is missing: it should hold "
	                             "'head.bias', 'head.weight', 'layers.1.weight'");
}

Test(source, a_shard_of_no_known_format_says_what_it_is)
{
	copy_file("fixtures/safetensors/hf/model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors");
	write_file("model-00002-of-00002.safetensors", "not tensors\n", 12);
	copy_file("fixtures/safetensors/hf/model.safetensors.index.json", "model.safetensors.index.json");
	ti_source *s;
	EXPECT_STATUS(ti_source_open(in_tmp("model.safetensors.index.json"), &s, &err), TI_E_UNSUPPORTED, err);
	EXPECT_CONTAINS(err.message, "is a text file, not a safetensors or torch zip file");
}

/* ---- scan reads through the same eyes ---- */

Test(source, scan_of_an_index_scans_every_shard_and_names_it_in_findings)
{
	copy_file("fixtures/malicious/checkpoint_hidden_payload.pt", "pytorch_model-00001-of-00002.bin");
	copy_file("fixtures/malicious/clean_checkpoint.pt", "pytorch_model-00002-of-00002.bin");
	static const char index[] = "{\"weight_map\": {\"a\": \"pytorch_model-00001-of-00002.bin\", "
	                            "\"b\": \"pytorch_model-00002-of-00002.bin\"}}";
	write_file("pytorch_model.bin.index.json", index, sizeof(index) - 1);
	ti_scan_report *r;
	ASSERT_STATUS(ti_scan_file(in_tmp("pytorch_model.bin.index.json"), NULL, &r, &err), TI_OK, err);
	EXPECT_STR(r->format, "hf-index");
	EXPECT_INT(r->verdict, TI_SCAN_DANGEROUS);
	EXPECT_INT(r->pickles, 2);
	bool named = false;
	for (size_t i = 0; i < r->count; i++)
		named |= r->findings[i].severity == TI_SCAN_DANGEROUS && r->findings[i].record &&
		         !strncmp(r->findings[i].record, "pytorch_model-00001-of-00002.bin", 32);
	cr_expect(named, "the dangerous finding names its shard");
	ti_scan_report_free(r);

	/* the folder is scanned as from_pretrained would load it: through the same index */
	ASSERT_STATUS(ti_scan_file(tmpdir, NULL, &r, &err), TI_OK, err);
	EXPECT_STR(r->format, "hf-index");
	EXPECT_INT(r->verdict, TI_SCAN_DANGEROUS);
	ti_scan_report_free(r);
}

Test(source, scan_calls_text_and_json_no_model_file_but_reads_protocol_0_pickles)
{
	write_file("notes.txt", "epoch 3\n", 8);
	write_file("config.json", "{\"hidden_size\": 768}", 20);
	static const char inst[] = "(S'touch /tmp/x'\nios\nsystem\n.";
	write_file("proto0.pkl", inst, sizeof(inst) - 1);
	static const struct {
		const char *file, *format;
		int not_model;
		ti_scan_severity verdict;
	} cases[] = {
		{"notes.txt", "text", 1, TI_SCAN_SAFE},
		{"config.json", "json", 1, TI_SCAN_SAFE},
		{"proto0.pkl", "pickle", 0, TI_SCAN_DANGEROUS},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ti_scan_report *r;
		ASSERT_STATUS(ti_scan_file(in_tmp(cases[i].file), NULL, &r, &err), TI_OK, err);
		EXPECT_STR(r->format, cases[i].format);
		EXPECT_INT(r->not_model, cases[i].not_model);
		EXPECT_INT(r->verdict, cases[i].verdict);
		EXPECT_INT(r->unreadable, 0);
		ti_scan_report_free(r);
	}
}

/* ---- every command reads a folder: convert, through the same source ---- */

Test(source, a_folder_converts_to_one_file_holding_every_shard_tensor)
{
	copy_file("fixtures/safetensors/hf/model-00001-of-00002.safetensors", "model-00001-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model-00002-of-00002.safetensors", "model-00002-of-00002.safetensors");
	copy_file("fixtures/safetensors/hf/model.safetensors.index.json", "model.safetensors.index.json");
	ti_source *in, *back;
	ASSERT_STATUS(ti_source_open(tmpdir, &in, &err), TI_OK, err);
	char out[256];
	snprintf(out, sizeof(out), "%s/../%s.pt", tmpdir, strrchr(tmpdir, '/') + 1);
	int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0600);
	cr_assert(fd >= 0);
	ti_convert_options o = {.format = TI_OUT_TORCH_ZIP};
	ti_convert_stats stats;
	ASSERT_STATUS(ti_convert(in, fd, &o, &stats, &err), TI_OK, err);
	close(fd);
	EXPECT_INT(stats.tensors, 5);
	ASSERT_STATUS(ti_source_open(out, &back, &err), TI_OK, err);
	EXPECT_INT(ti_source_get_format(back), TI_SOURCE_TORCH_ZIP);
	ASSERT_INT(ti_source_tensor_count(back), 5);
	for (size_t i = 0; i < 5; i++) {
		const ti_source_tensor *a = ti_source_tensor_at(in, i), *b = NULL;
		for (size_t k = 0; k < 5; k++)
			if (!strcmp(ti_source_tensor_at(back, k)->name, a->name))
				b = ti_source_tensor_at(back, k);
		cr_assert(b, "'%s' is in the converted file", a->name);
		size_t n = (size_t)a->numel * ti_dtype_size(a->dtype);
		unsigned char x[64], y[64];
		cr_assert(n <= sizeof(x));
		ASSERT_STATUS(ti_source_read(in, a->storage, 0, x, n, &err), TI_OK, err);
		ASSERT_STATUS(ti_source_read(back, b->storage, (uint64_t)b->offset * ti_dtype_size(b->dtype), y, n, &err), TI_OK, err);
		cr_expect(!memcmp(x, y, n), "'%s' has the same bytes", a->name);
	}
	ti_source_close(back);
	ti_source_close(in);
	unlink(out);
}

Test(source, a_file_order_sorts_storages_as_their_bytes_lie_without_reading_a_local_header)
{
	ti_source *src;
	ASSERT_STATUS(ti_source_open("fixtures/diff/base.pt", &src, &err), TI_OK, err);
	size_t n = ti_source_storage_count(src);
	cr_assert(n >= 2);
	int fd_order[8], fd_place[8];
	uint64_t order[8], place[8];
	cr_assert(n <= 8);
	for (size_t i = 0; i < n; i++) /* first the order: no local header has been read yet */
		cr_assert(ti_source_file_order(src, i, &fd_order[i], &order[i]), "storage %zu has no file order", i);
	for (size_t i = 0; i < n; i++)
		cr_assert(ti_source_file_place(src, i, &fd_place[i], &place[i]), "storage %zu has no file place", i);
	for (size_t i = 0; i < n; i++) {
		EXPECT_INT(fd_order[i], fd_place[i]);
		cr_expect(order[i] < place[i], "a record's header (%llu) comes before its bytes (%llu)",
		          (unsigned long long)order[i], (unsigned long long)place[i]);
		for (size_t j = 0; j < n; j++) /* the same order as the bytes' */
			cr_expect((order[i] < order[j]) == (place[i] < place[j]), "storages %zu and %zu", i, j);
	}
	/* once a place is read, the order is the place itself */
	uint64_t again;
	int fd;
	cr_assert(ti_source_file_order(src, 0, &fd, &again));
	EXPECT_INT(again, place[0]);
	ti_source_close(src);
}

Test(source, no_storage_past_the_last_has_a_file_order)
{
	ti_source *src;
	ASSERT_STATUS(ti_source_open("fixtures/diff/base.pt", &src, &err), TI_OK, err);
	int fd;
	uint64_t at;
	cr_expect(!ti_source_file_order(src, ti_source_storage_count(src), &fd, &at), "past the last storage");
	ti_source_close(src);
}
