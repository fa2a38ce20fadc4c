/* sniff.c - what a file is, from its first bytes (see tinspect/sniff.h). */
#include "tinspect/sniff.h"

#include <stdbool.h>
#include <string.h>

/*
 * torch.save before 1.6 starts with pickle.dump(0x1950a86a20f9469cfc6c,
 * protocol=2): PROTO 2, LONG1 of 10 bytes, the number little-endian.
 */
static const unsigned char legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46,
                                             0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

/* Other archives and compressors, by their signatures: what a file wrapped around a model may be. */
static const struct {
	const char *magic;
	size_t length;
	ti_file_kind kind;
} foreign_archives[] = {
	{"7z\xbc\xaf\x27\x1c", 6, TI_FILE_7Z},  /* 7z's signature header */
	{"\x1f\x8b", 2, TI_FILE_GZIP},            /* RFC 1952 ID1 ID2 */
	{"\xfd" "7zXZ\0", 6, TI_FILE_XZ},          /* the xz stream header's magic */
	{"\x28\xb5\x2f\xfd", 4, TI_FILE_ZSTD},    /* RFC 8878 frame magic 0xFD2FB528, little-endian */
	{"Rar!\x1a\x07", 6, TI_FILE_RAR},         /* RAR 1.5 to 5 */
};

/* "BZh" and a block size digit, then the first block's magic (pi's digits): text starting "BZh" is not one. */
static bool looks_bzip2(const unsigned char *p, size_t n)
{
	return n >= 10 && !memcmp(p, "BZh", 3) && p[3] >= '1' && p[3] <= '9' && !memcmp(p + 4, "\x31\x41\x59\x26\x53\x59", 6);
}

static bool is_space(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/*
 * An 8-byte little-endian length, then '{' after optional spaces (the
 * safetensors writer pads with spaces). A real header is at most 100 MB
 * (the safetensors crate's limit), so the top three bytes of the length
 * are zero: text and pickles never pass that test.
 */
static bool looks_safetensors(const unsigned char *p, size_t n)
{
	if (n < 8 || p[5] || p[6] || p[7])
		return false;
	bool empty = !p[0] && !p[1] && !p[2] && !p[3] && !p[4];
	if (empty || n == 8) /* no header at all: still what a safetensors writer began, for its reader to name */
		return true;
	for (size_t i = 8; i < n; i++) {
		if (p[i] == '{' || p[i] == '[' || p[i] == '"') /* JSON, if not the object the format wants */
			return true;
		if (!is_space(p[i]))
			return false;
	}
	return false;
}

/* Printable ASCII, whitespace, or bytes of UTF-8 sequences: what an editor writes. */
static bool looks_text(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && !is_space(p[i]) && p[i] != '\f')
			return false;
		else if (p[i] == 0x7f)
			return false;
	return true;
}

ti_file_kind ti_file_sniff(const void *head, size_t n, uint64_t file_size)
{
	const unsigned char *p = head;
	if (file_size == 0 || n == 0)
		return TI_FILE_EMPTY;
	if (n >= 4 && (!memcmp(p, "PK\3\4", 4) || !memcmp(p, "PK\5\6", 4)))
		return TI_FILE_ZIP;
	for (size_t i = 0; i < sizeof(foreign_archives) / sizeof(foreign_archives[0]); i++)
		if (n >= foreign_archives[i].length && !memcmp(p, foreign_archives[i].magic, foreign_archives[i].length))
			return foreign_archives[i].kind;
	if (looks_bzip2(p, n))
		return TI_FILE_BZIP2;
	if (n >= 6 && !memcmp(p, "\x93NUMPY", 6)) /* numpy/lib/format.py MAGIC_PREFIX */
		return TI_FILE_NPY;
	if (n >= sizeof(legacy_magic) && !memcmp(p, legacy_magic, sizeof(legacy_magic)))
		return TI_FILE_LEGACY_TORCH;
	if (n >= 4 && !memcmp(p, "GGUF", 4)) /* before safetensors: a version and count can pass its test */
		return TI_FILE_GGUF;
	if (looks_safetensors(p, n))
		return TI_FILE_SAFETENSORS;
	if (n >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5)
		return TI_FILE_PICKLE;
	size_t i = n >= 3 && !memcmp(p, "\xef\xbb\xbf", 3) ? 3 : 0; /* a UTF-8 byte order mark */
	while (i < n && is_space(p[i]))
		i++;
	if (i < n && (p[i] == '{' || p[i] == '['))
		return TI_FILE_JSON;
	return looks_text(p, n) ? TI_FILE_TEXT : TI_FILE_UNKNOWN;
}

const char *ti_file_kind_name(ti_file_kind kind)
{
	static const char *const names[] = {
		[TI_FILE_EMPTY] = "an empty file",
		[TI_FILE_ZIP] = "a zip archive",
		[TI_FILE_LEGACY_TORCH] = "a legacy torch.save file (PyTorch before 1.6)",
		[TI_FILE_SAFETENSORS] = "a safetensors file",
		[TI_FILE_PICKLE] = "a bare pickle",
		[TI_FILE_JSON] = "a JSON file",
		[TI_FILE_TEXT] = "a text file",
		[TI_FILE_DIRECTORY] = "a directory",
		[TI_FILE_DCP] = "a torch.distributed.checkpoint directory",
		[TI_FILE_GGUF] = "a GGUF file",
		[TI_FILE_NPY] = "a NumPy .npy array",
		[TI_FILE_NPZ] = "a NumPy .npz archive",
		[TI_FILE_7Z] = "a 7z archive",
		[TI_FILE_GZIP] = "a gzip file",
		[TI_FILE_BZIP2] = "a bzip2 file",
		[TI_FILE_XZ] = "an xz file",
		[TI_FILE_ZSTD] = "a zstd file",
		[TI_FILE_RAR] = "a RAR archive",
		[TI_FILE_UNKNOWN] = "of no format tinspect knows",
	};
	return (unsigned)kind <= TI_FILE_UNKNOWN ? names[kind] : names[TI_FILE_UNKNOWN];
}

bool ti_file_kind_is_foreign_archive(ti_file_kind kind)
{
	return kind >= TI_FILE_7Z && kind <= TI_FILE_RAR;
}

/*
 * np.savez writes with zipfile, one NAME.npy member after another: the
 * file starts with the first member's local header (APPNOTE 4.3.7), whose
 * name follows its 30 fixed bytes. A torch zip's first record is always
 * under its root folder ("archive/data.pkl", "archive/version").
 */
size_t ti_npz_sniff_size(const void *head, size_t n)
{
	const unsigned char *p = head;
	if (n < 30 || memcmp(p, "PK\3\4", 4))
		return 0;
	return 30 + ((size_t)p[26] | (size_t)p[27] << 8);
}

bool ti_npz_sniff(const void *head, size_t n)
{
	size_t size = ti_npz_sniff_size(head, n);
	return size > 30 + 4 && size <= n && !memcmp((const unsigned char *)head + size - 4, ".npy", 4);
}
