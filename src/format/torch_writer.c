/*
 * torch_writer.c - torch.save's zip layout, streamed.
 *
 * Two layers. The pickle (build_pickle) makes the calls CPython's Pickler
 * makes for torch.save(state_dict) under torch 1.13: Pickler.save_reduce
 * for the OrderedDict and each _rebuild_* call, save_tuple for the
 * arguments, _batch_setitems for the items, memoizing what the Python
 * pickler memoizes (every GLOBAL, str, non-empty tuple and REDUCE result)
 * and reusing what is the same Python object there (the globals, the
 * strings 'storage', 'cpu' and 'version', and a storage's key, which
 * _save's id_map hands out once per storage). The zip (the rest) lays
 * records out as PyTorchStreamWriter does with miniz, but with the CRC and
 * sizes in the local header instead of a data descriptor.
 *
 * Format facts are cited where used: PKWARE APPNOTE.TXT sections 4.3.7
 * (local header), 4.3.12 (central header), 4.3.14-4.3.16 (end records),
 * 4.5.3 (ZIP64 extra); torch-formats.md sections 1 and 2.
 */
#include "tinspect/torch_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format/crc32.h"
#include "format/pickle_writer.h"

/* ---- tables ---- */

/*
 * torch 1.13 torch/storage.py _dtype_to_storage_type_map(): the typed
 * storages weights_only allows. grad: the dtype may require grad (torch
 * allows it for floating point and complex tensors only).
 */
static const struct {
	ti_dtype dtype;
	const char *name;
	bool grad;
} storage_classes[] = {
	{TI_DT_FLOAT64, "DoubleStorage", true},          {TI_DT_FLOAT32, "FloatStorage", true},
	{TI_DT_FLOAT16, "HalfStorage", true},            {TI_DT_BFLOAT16, "BFloat16Storage", true},
	{TI_DT_INT64, "LongStorage", false},             {TI_DT_INT32, "IntStorage", false},
	{TI_DT_INT16, "ShortStorage", false},            {TI_DT_INT8, "CharStorage", false},
	{TI_DT_UINT8, "ByteStorage", false},             {TI_DT_BOOL, "BoolStorage", false},
	{TI_DT_COMPLEX64, "ComplexFloatStorage", true},  {TI_DT_COMPLEX128, "ComplexDoubleStorage", true},
};

/*
 * PyTorch 2.x torch/storage.py _new_dtypes(): the dtypes with no typed
 * storage, which _reduce_ex_internal saves as an UntypedStorage and
 * _rebuild_tensor_v3 with the dtype (torch-formats.md section 2). grad: a
 * floating point or complex dtype.
 */
static const struct {
	ti_dtype dtype;
	bool grad;
} v3_dtypes[] = {
	{TI_DT_COMPLEX32, true},        {TI_DT_FLOAT8_E5M2, true},      {TI_DT_FLOAT8_E4M3FN, true},
	{TI_DT_FLOAT8_E5M2FNUZ, true},  {TI_DT_FLOAT8_E4M3FNUZ, true},  {TI_DT_FLOAT8_E8M0FNU, true},
	{TI_DT_FLOAT4_E2M1FN_X2, false}, {TI_DT_UINT16, false},         {TI_DT_UINT32, false},
	{TI_DT_UINT64, false},          {TI_DT_BITS8, false},           {TI_DT_BITS16, false},
	{TI_DT_BITS1X8, false},         {TI_DT_BITS2X4, false},         {TI_DT_BITS4X2, false},
};

static int storage_class_row(ti_dtype dtype)
{
	for (size_t i = 0; i < sizeof(storage_classes) / sizeof(storage_classes[0]); i++)
		if (storage_classes[i].dtype == dtype)
			return (int)i;
	return -1;
}

static int v3_row(ti_dtype dtype)
{
	for (size_t i = 0; i < sizeof(v3_dtypes) / sizeof(v3_dtypes[0]); i++)
		if (v3_dtypes[i].dtype == dtype)
			return (int)i;
	return -1;
}

const char *ti_tw_storage_class(ti_dtype dtype)
{
	int row = storage_class_row(dtype);
	return row < 0 ? NULL : storage_classes[row].name;
}

bool ti_tw_needs_v3(ti_dtype dtype)
{
	return v3_row(dtype) >= 0;
}

static bool can_require_grad(ti_dtype dtype)
{
	int row = storage_class_row(dtype), v3 = v3_row(dtype);
	return row >= 0 ? storage_classes[row].grad : v3 >= 0 && v3_dtypes[v3].grad;
}

#define ALIGNMENT 64           /* kFieldAlignment, caffe2/serialize/inline_container.h */
#define SETITEMS_BATCH 1000    /* Pickler._BATCHSIZE, CPython Lib/pickle.py */
#define VERSION_RECORD "3\n"   /* kProducedFileFormatVersion for torch.save, 1.13 and 2.x */
#define WRITE_BUFFER ((size_t)1 << 20)
#define ZIP64_LIMIT 0xFFFFFFFFu /* a 32-bit field at this value means "see the ZIP64 extra" */
#define NOT_MEMOIZED UINT32_MAX /* ti_pickler_put never hands this index out */

/* Zip header sizes and fixed fields (APPNOTE 4.3.7, 4.3.12, 4.3.14-16, 4.5.3). */
#define LOCAL_HEADER 30
#define CENTRAL_HEADER 46
#define ZIP64_LOCAL_EXTRA 20   /* id, length, size, compressed size */
#define PAD_EXTRA 4            /* 'F' 'B' and a u16 length, then the padding */
#define EOCD64 56
#define EOCD64_LOCATOR 20
#define EOCD 22
#define VERSION_PLAIN 10       /* 1.0: stored records (APPNOTE 4.4.3.2) */
#define VERSION_ZIP64 45       /* 4.5: ZIP64 fields */
#define FLAG_UTF8 0x0800       /* bit 11: names are UTF-8, as torch sets */
#define DOS_DATE_1980 0x0021   /* 1980-01-01, the first DOS date: files are reproducible */

/* ---- checks on the arguments ---- */

/* RFC 3629 UTF-8: what Python's decoder accepts in a BINUNICODE (except lone surrogates). */
static bool valid_utf8(const unsigned char *s, size_t n)
{
	size_t i = 0;
	while (i < n) {
		unsigned c = s[i];
		size_t len;
		uint32_t cp, min;
		if (c < 0x80) {
			i++;
			continue;
		} else if ((c & 0xe0) == 0xc0) {
			len = 2, cp = c & 0x1f, min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			len = 3, cp = c & 0x0f, min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			len = 4, cp = c & 0x07, min = 0x10000;
		} else {
			return false;
		}
		if (n - i < len)
			return false;
		for (size_t k = 1; k < len; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += len;
	}
	return true;
}

static ti_status check_storages(const ti_tw_storage *storages, size_t count, ti_error *err)
{
	for (size_t i = 0; i < count; i++) {
		ti_dtype dt = storages[i].dtype;
		if (dt <= TI_DT_INVALID || dt >= TI_DT_COUNT)
			return TI_FAIL(err, TI_E_INVALID, "storage %zu has no valid dtype", i);
		if (!ti_tw_storage_class(dt) && !ti_tw_needs_v3(dt))
			return TI_FAIL(err, TI_E_UNSUPPORTED,
			               "dtype '%s' of storage %zu cannot be written: a quantized tensor needs _rebuild_qtensor",
			               ti_dtype_name(dt), i);
		uint64_t bytes;
		if (__builtin_mul_overflow(storages[i].numel, (uint64_t)ti_dtype_size(dt), &bytes) || bytes > INT64_MAX)
			return TI_FAIL(err, TI_E_INVALID, "storage %zu of %" PRIu64 " elements is too large", i,
			               storages[i].numel);
	}
	return TI_OK;
}

/* One tensor: its storage exists and holds every element the view reaches (torch's set_ checks the same). */
static ti_status check_tensor(const ti_tw_tensor *t, size_t i, const ti_tw_storage *storages,
                              size_t storage_count, ti_error *err)
{
	if (!t->name)
		return TI_FAIL(err, TI_E_INVALID, "tensor %zu has no name", i);
	if (!valid_utf8((const unsigned char *)t->name, strlen(t->name)))
		return TI_FAIL(err, TI_E_INVALID, "name of tensor %zu is not valid UTF-8", i);
	if (t->storage >= storage_count)
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' views storage %zu of %zu", t->name, t->storage,
		               storage_count);
	if (t->ndim > TI_TW_MAX_DIMS)
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has %zu dimensions, more than %d", t->name, t->ndim,
		               TI_TW_MAX_DIMS);
	if (t->ndim && !t->shape)
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has %zu dimensions and no shape", t->name, t->ndim);
	if (t->offset > INT64_MAX)
		return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has a storage offset past int64", t->name);
	/* _rebuild_tensor_v2 sets requires_grad, which torch refuses for other dtypes: the file would not load. */
	if (t->requires_grad && !can_require_grad(storages[t->storage].dtype))
		return TI_FAIL(err, TI_E_INVALID,
		               "tensor '%s' of dtype %s cannot require grad (only floating point and complex ones can)",
		               t->name, ti_dtype_name(storages[t->storage].dtype));
	/* Contiguous strides when none are given; the last extent in elements otherwise. */
	uint64_t numel = 1, last = t->offset, contiguous = 1;
	for (size_t d = t->ndim; d-- > 0;) {
		int64_t size = t->shape[d], stride = t->stride ? t->stride[d] : (int64_t)contiguous;
		if (size < 0 || stride < 0)
			return TI_FAIL(err, TI_E_INVALID, "tensor '%s' has a negative size or stride in dimension %zu",
			               t->name, d);
		uint64_t reach;
		if (__builtin_mul_overflow(numel, (uint64_t)size, &numel) || numel > INT64_MAX ||
		    (!t->stride && __builtin_mul_overflow(contiguous, (uint64_t)(size ? size : 1), &contiguous)) ||
		    (size && (__builtin_mul_overflow((uint64_t)(size - 1), (uint64_t)stride, &reach) ||
		              __builtin_add_overflow(last, reach, &last))) ||
		    last > INT64_MAX)
			return TI_FAIL(err, TI_E_INVALID, "tensor '%s' is too large: its extent overflows int64", t->name);
	}
	/* An empty tensor may sit anywhere in any storage (computeStorageNbytes is 0). */
	if (numel > 0 && last >= storages[t->storage].numel)
		return TI_FAIL(err, TI_E_INVALID,
		               "tensor '%s' reaches element %" PRIu64 " of storage %zu, which has %" PRIu64, t->name,
		               last, t->storage, storages[t->storage].numel);
	return TI_OK;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp((*(const ti_tw_tensor *const *)a)->name, (*(const ti_tw_tensor *const *)b)->name);
}

static ti_status check_tensors(const ti_tw_tensor *tensors, size_t count, const ti_tw_storage *storages,
                               size_t storage_count, ti_error *err)
{
	for (size_t i = 0; i < count; i++)
		if (check_tensor(&tensors[i], i, storages, storage_count, err))
			return err->code;
	/* Every storage viewed (torch.save writes only what the pickle names), every name once. */
	bool *viewed = calloc(storage_count ? storage_count : 1, sizeof(*viewed));
	const ti_tw_tensor **sorted = calloc(count ? count : 1, sizeof(*sorted));
	ti_status s = TI_OK;
	if (!viewed || !sorted) {
		s = TI_FAIL(err, TI_E_NOMEM, "out of memory checking %zu tensors", count);
		goto done;
	}
	for (size_t i = 0; i < count; i++) {
		viewed[tensors[i].storage] = true;
		sorted[i] = &tensors[i];
	}
	for (size_t i = 0; i < storage_count; i++)
		if (!viewed[i]) {
			s = TI_FAIL(err, TI_E_INVALID, "storage %zu is viewed by no tensor", i);
			goto done;
		}
	qsort(sorted, count, sizeof(*sorted), compare_names);
	for (size_t i = 1; i < count; i++)
		if (!strcmp(sorted[i - 1]->name, sorted[i]->name)) {
			s = TI_FAIL(err, TI_E_INVALID, "two tensors are named '%s'", sorted[i]->name);
			goto done;
		}
done:
	free(viewed);
	free(sorted);
	return s;
}

static ti_status check_options(const ti_tw_options *o, const char *root, ti_error *err)
{
	size_t len = strlen(root);
	if (len == 0 || len > TI_TW_ROOT_MAX)
		return TI_FAIL(err, TI_E_INVALID, "the archive's root name must have 1 to %d bytes", TI_TW_ROOT_MAX);
	/* PyTorchStreamReader takes the root to be the text before the first '/'. */
	if (strchr(root, '/') || strchr(root, '\\') || !valid_utf8((const unsigned char *)root, len))
		return TI_FAIL(err, TI_E_INVALID, "the archive's root name '%s' must be UTF-8 without '/' or '\\'", root);
	for (size_t i = 0; i < o->module_count; i++) {
		const char *prefix = o->modules[i].prefix;
		if (!prefix || !valid_utf8((const unsigned char *)prefix, strlen(prefix)))
			return TI_FAIL(err, TI_E_INVALID, "module %zu of the metadata has no UTF-8 prefix", i);
	}
	return TI_OK;
}

/* ---- the pickle ---- */

typedef struct memo {
	uint32_t ordered_dict, rebuild_tensor, rebuild_tensor_v3, rebuild_parameter, untyped_storage;
	uint32_t storage_str, cpu_str, version_str;
	uint32_t storage_class[TI_DT_COUNT];
	uint32_t dtype[TI_DT_COUNT]; /* torch.<dtype>, the last argument of _rebuild_tensor_v3 */
	uint32_t *key; /* per storage: its key string */
} memo;

/* A GLOBAL the first time, BINGET after: the pickler memoizes the class or function object. */
static void global_once(ti_pickler *p, uint32_t *slot, const char *module, const char *name)
{
	if (*slot != NOT_MEMOIZED) {
		ti_pickler_get(p, *slot);
		return;
	}
	ti_pickler_global(p, module, name);
	*slot = ti_pickler_put(p);
}

/* The same for a str that is one Python object each time (a literal, or id_map's key). */
static void str_once(ti_pickler *p, uint32_t *slot, const char *s)
{
	if (*slot != NOT_MEMOIZED) {
		ti_pickler_get(p, *slot);
		return;
	}
	ti_pickler_str(p, s, strlen(s));
	*slot = ti_pickler_put(p);
}

/* A fresh str object: written and memoized. */
static void str_new(ti_pickler *p, const char *s)
{
	ti_pickler_str(p, s, strlen(s));
	ti_pickler_put(p);
}

/* collections.OrderedDict(): REDUCE of the class on (), memoized; save_reduce's first half. */
static void ordered_dict_new(ti_pickler *p, memo *m)
{
	global_once(p, &m->ordered_dict, "collections", "OrderedDict");
	ti_pickler_op(p, TI_PICKLER_EMPTY_TUPLE);
	ti_pickler_op(p, TI_PICKLER_REDUCE);
	ti_pickler_put(p);
}

/* save_tuple of ints: EMPTY_TUPLE unmemoized; TUPLE1-3 up to three items; else MARK ... TUPLE. */
static void int_tuple(ti_pickler *p, const int64_t *v, size_t n)
{
	static const uint8_t small[] = {TI_PICKLER_EMPTY_TUPLE, TI_PICKLER_TUPLE1, TI_PICKLER_TUPLE2,
	                                TI_PICKLER_TUPLE3};
	if (n == 0) {
		ti_pickler_op(p, TI_PICKLER_EMPTY_TUPLE);
		return;
	}
	if (n > 3)
		ti_pickler_op(p, TI_PICKLER_MARK);
	for (size_t i = 0; i < n; i++)
		ti_pickler_int(p, v[i]);
	ti_pickler_op(p, n > 3 ? TI_PICKLER_TUPLE : small[n]);
	ti_pickler_put(p);
}

/*
 * torch.Tensor._reduce_ex_internal for a CPU tensor:
 * _rebuild_tensor_v2(persistent storage, offset, size, stride, requires_grad, OrderedDict()),
 * the storage ('storage', torch.<Legacy>Storage, key, 'cpu', numel). A dtype of
 * _new_dtypes() (PyTorch 2.x): _rebuild_tensor_v3(..., OrderedDict(), torch.<dtype>) over
 * ('storage', torch.storage.UntypedStorage, key, 'cpu', nbytes), the offset still in elements.
 * A Parameter wraps it: _rebuild_parameter(tensor.data, requires_grad, OrderedDict()).
 */
static void tensor_value(ti_pickler *p, memo *m, const ti_tw_tensor *t, const ti_tw_storage *st)
{
	int64_t stride[TI_TW_MAX_DIMS];
	if (t->stride) {
		memcpy(stride, t->stride, t->ndim * sizeof(*stride));
	} else {
		int64_t c = 1;
		for (size_t d = t->ndim; d-- > 0;) {
			stride[d] = c;
			c *= t->shape[d] ? t->shape[d] : 1;
		}
	}
	bool v3 = ti_tw_needs_v3(st->dtype);
	if (t->is_parameter)
		global_once(p, &m->rebuild_parameter, "torch._utils", "_rebuild_parameter");
	if (v3)
		global_once(p, &m->rebuild_tensor_v3, "torch._utils", "_rebuild_tensor_v3");
	else
		global_once(p, &m->rebuild_tensor, "torch._utils", "_rebuild_tensor_v2");
	ti_pickler_op(p, TI_PICKLER_MARK);
	/* The persistent id: ('storage', torch.XStorage, key, location, numel), a 5-tuple, then BINPERSID. */
	ti_pickler_op(p, TI_PICKLER_MARK);
	str_once(p, &m->storage_str, "storage");
	if (v3)
		global_once(p, &m->untyped_storage, "torch.storage", "UntypedStorage");
	else
		global_once(p, &m->storage_class[st->dtype], "torch", ti_tw_storage_class(st->dtype));
	char key[24];
	snprintf(key, sizeof(key), "%zu", t->storage);
	str_once(p, &m->key[t->storage], key);
	str_once(p, &m->cpu_str, "cpu");
	ti_pickler_int(p, (int64_t)(v3 ? st->numel * ti_dtype_size(st->dtype) : st->numel));
	ti_pickler_op(p, TI_PICKLER_TUPLE);
	ti_pickler_put(p);
	ti_pickler_op(p, TI_PICKLER_BINPERSID);
	ti_pickler_int(p, (int64_t)t->offset);
	int_tuple(p, t->shape, t->ndim);
	int_tuple(p, stride, t->ndim);
	/* A Parameter pickles its .data, which never requires grad. */
	ti_pickler_bool(p, t->requires_grad && !t->is_parameter);
	ordered_dict_new(p, m); /* backward hooks: never saved */
	if (v3)
		global_once(p, &m->dtype[st->dtype], "torch", ti_dtype_name(st->dtype));
	ti_pickler_op(p, TI_PICKLER_TUPLE);
	ti_pickler_put(p);
	ti_pickler_op(p, TI_PICKLER_REDUCE);
	ti_pickler_put(p);
	if (t->is_parameter) {
		ti_pickler_bool(p, t->requires_grad);
		ordered_dict_new(p, m);
		ti_pickler_op(p, TI_PICKLER_TUPLE3);
		ti_pickler_put(p);
		ti_pickler_op(p, TI_PICKLER_REDUCE);
		ti_pickler_put(p);
	}
}

/* Pickler._batch_setitems: MARK ... SETITEMS per batch of 1000, a lone item as SETITEM. */
typedef void (*item_fn)(ti_pickler *p, memo *m, size_t i, const void *ctx);

static void batch_setitems(ti_pickler *p, memo *m, size_t count, item_fn item, const void *ctx)
{
	for (size_t start = 0; start < count; start += SETITEMS_BATCH) {
		size_t n = count - start < SETITEMS_BATCH ? count - start : SETITEMS_BATCH;
		if (n > 1)
			ti_pickler_op(p, TI_PICKLER_MARK);
		for (size_t i = start; i < start + n; i++)
			item(p, m, i, ctx);
		ti_pickler_op(p, n > 1 ? TI_PICKLER_SETITEMS : TI_PICKLER_SETITEM);
	}
}

typedef struct state_dict {
	const ti_tw_tensor *tensors;
	const ti_tw_storage *storages;
	const ti_tw_module_version *modules;
} state_dict;

static void tensor_item(ti_pickler *p, memo *m, size_t i, const void *ctx)
{
	const state_dict *sd = ctx;
	str_new(p, sd->tensors[i].name);
	tensor_value(p, m, &sd->tensors[i], &sd->storages[sd->tensors[i].storage]);
}

/* A _metadata entry: prefix -> {'version': v} (Module._save_to_state_dict's local_metadata). */
static void module_item(ti_pickler *p, memo *m, size_t i, const void *ctx)
{
	const state_dict *sd = ctx;
	str_new(p, sd->modules[i].prefix);
	ti_pickler_op(p, TI_PICKLER_EMPTY_DICT);
	ti_pickler_put(p);
	str_once(p, &m->version_str, "version");
	ti_pickler_int(p, sd->modules[i].version);
	ti_pickler_op(p, TI_PICKLER_SETITEM);
}

static ti_status build_pickle(const ti_tw_storage *storages, size_t storage_count, const ti_tw_tensor *tensors,
                              size_t tensor_count, const ti_tw_options *o, uint8_t **data, size_t *size,
                              ti_error *err)
{
	memo m;
	m.ordered_dict = m.rebuild_tensor = m.rebuild_tensor_v3 = m.rebuild_parameter = NOT_MEMOIZED;
	m.untyped_storage = m.storage_str = m.cpu_str = m.version_str = NOT_MEMOIZED;
	for (size_t i = 0; i < TI_DT_COUNT; i++)
		m.storage_class[i] = m.dtype[i] = NOT_MEMOIZED;
	m.key = malloc((storage_count ? storage_count : 1) * sizeof(*m.key));
	if (!m.key)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for %zu storage keys", storage_count);
	for (size_t i = 0; i < storage_count; i++)
		m.key[i] = NOT_MEMOIZED;
	state_dict sd = {tensors, storages, o->modules};
	ti_pickler p;
	ti_pickler_init(&p, TI_TW_PICKLE_MAX, err);
	ti_pickler_proto(&p, 2);
	ordered_dict_new(&p, &m);
	batch_setitems(&p, &m, tensor_count, tensor_item, &sd);
	if (o->module_count) {
		/* OrderedDict.__reduce__'s state, the instance __dict__, applied by BUILD. */
		ti_pickler_op(&p, TI_PICKLER_EMPTY_DICT);
		ti_pickler_put(&p);
		str_new(&p, "_metadata");
		ordered_dict_new(&p, &m);
		batch_setitems(&p, &m, o->module_count, module_item, &sd);
		ti_pickler_op(&p, TI_PICKLER_SETITEM);
		ti_pickler_op(&p, TI_PICKLER_BUILD);
	}
	ti_pickler_op(&p, TI_PICKLER_STOP);
	free(m.key);
	*data = ti_pickler_take(&p, size);
	ti_pickler_release(&p);
	return *data ? TI_OK : err->code;
}

/* ---- the zip ---- */

typedef struct record {
	uint64_t size;
	uint64_t header_offset;
	uint32_t crc;
} record;

struct ti_tw {
	int fd;
	char *root;
	uint64_t zip64_threshold;
	record *records;        /* data.pkl, byteorder, data/0 ... data/N-1, version */
	size_t record_count;
	size_t storage_count;
	size_t current;         /* the storage being streamed */
	uint64_t current_done;  /* its bytes so far */
	uint32_t current_crc;
	uint64_t pos;           /* archive bytes produced; [pos - buffered, pos) are in buf */
	uint8_t *buf;
	size_t buffered;
	bool failed, finished;
	char name[TI_TW_ROOT_MAX + 32];
	uint8_t header[LOCAL_HEADER + TI_TW_ROOT_MAX + 32 + ZIP64_LOCAL_EXTRA + PAD_EXTRA + ALIGNMENT];
};

enum { RECORD_PICKLE, RECORD_BYTEORDER, RECORD_FIRST_STORAGE };

static size_t version_record(const ti_tw *w) { return RECORD_FIRST_STORAGE + w->storage_count; }

/* The full name of record r, in w->name. */
static const char *record_name(ti_tw *w, size_t r)
{
	if (r == RECORD_PICKLE)
		snprintf(w->name, sizeof(w->name), "%s/data.pkl", w->root);
	else if (r == RECORD_BYTEORDER)
		snprintf(w->name, sizeof(w->name), "%s/byteorder", w->root);
	else if (r == version_record(w))
		snprintf(w->name, sizeof(w->name), "%s/version", w->root);
	else
		snprintf(w->name, sizeof(w->name), "%s/data/%zu", w->root, r - RECORD_FIRST_STORAGE);
	return w->name;
}

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Records the first failure; from then on every call is refused. */
static ti_status failed(ti_tw *w, ti_error *err)
{
	w->failed = true;
	return err->code;
}

static ti_status write_all(ti_tw *w, const void *data, size_t n, ti_error *err)
{
	const uint8_t *p = data;
	while (n) {
		ssize_t done = write(w->fd, p, n);
		if (done < 0 && errno == EINTR)
			continue;
		if (done <= 0) {
			TI_FAIL(err, TI_E_IO, "cannot write the checkpoint: %s", done < 0 ? strerror(errno) : "no progress");
			return failed(w, err);
		}
		p += done;
		n -= (size_t)done;
	}
	return TI_OK;
}

static ti_status flush(ti_tw *w, ti_error *err)
{
	size_t n = w->buffered;
	w->buffered = 0;
	return n ? write_all(w, w->buf, n, err) : TI_OK;
}

/* Appends to the archive through the buffer; a chunk that does not fit goes straight to the file. */
static ti_status emit(ti_tw *w, const void *data, size_t n, ti_error *err)
{
	if (n > WRITE_BUFFER - w->buffered && flush(w, err))
		return err->code;
	if (n >= WRITE_BUFFER) {
		if (write_all(w, data, n, err))
			return err->code;
	} else {
		memcpy(w->buf + w->buffered, data, n);
		w->buffered += n;
	}
	w->pos += n;
	return TI_OK;
}

static bool zip64_size(const ti_tw *w, uint64_t size) { return size >= w->zip64_threshold; }

/*
 * The local header of record r at the current position, with this CRC:
 * signature, version needed, flags, method 0, DOS time and date, CRC, sizes,
 * name and extra lengths (APPNOTE 4.3.7); the name; a ZIP64 extra with both
 * sizes when they saturate (4.5.3: the local one must hold both); then the
 * 'FB' extra that pads the payload to a multiple of 64, as getPadding() does.
 */
static ti_status local_header(ti_tw *w, size_t r, uint32_t crc, ti_error *err)
{
	record *rec = &w->records[r];
	rec->header_offset = w->pos;
	rec->crc = crc;
	const char *name = record_name(w, r);
	size_t name_len = strlen(name);
	bool big = zip64_size(w, rec->size);
	size_t fixed_extra = (big ? ZIP64_LOCAL_EXTRA : 0) + PAD_EXTRA;
	uint64_t start = w->pos + LOCAL_HEADER + name_len + fixed_extra;
	size_t pad = (size_t)((ALIGNMENT - start % ALIGNMENT) % ALIGNMENT);
	uint8_t *h = w->header;
	memcpy(h, "PK\3\4", 4);
	le(h + 4, big ? VERSION_ZIP64 : VERSION_PLAIN, 2);
	le(h + 6, FLAG_UTF8, 2);
	le(h + 8, 0, 2);  /* stored */
	le(h + 10, 0, 2); /* 00:00:00 */
	le(h + 12, DOS_DATE_1980, 2);
	le(h + 14, crc, 4);
	le(h + 18, big ? ZIP64_LIMIT : rec->size, 4);
	le(h + 22, big ? ZIP64_LIMIT : rec->size, 4);
	le(h + 26, name_len, 2);
	le(h + 28, fixed_extra + pad, 2);
	uint8_t *x = h + LOCAL_HEADER;
	memcpy(x, name, name_len);
	x += name_len;
	if (big) {
		le(x, 0x0001, 2);
		le(x + 2, 16, 2);
		le(x + 4, rec->size, 8);
		le(x + 12, rec->size, 8);
		x += ZIP64_LOCAL_EXTRA;
	}
	x[0] = 'F';
	x[1] = 'B';
	le(x + 2, pad, 2);
	memset(x + PAD_EXTRA, 'Z', pad);
	x += PAD_EXTRA + pad;
	return emit(w, h, (size_t)(x - h), err);
}

/* A record whose bytes are in memory: header with its CRC, then the bytes. */
static ti_status small_record(ti_tw *w, size_t r, const void *data, size_t size, ti_error *err)
{
	w->records[r].size = size;
	if (local_header(w, r, ti_crc32(0, data, size), err) || emit(w, data, size, err))
		return err->code;
	return TI_OK;
}

/* Puts the CRC of a finished storage into its local header (offset 14), in the buffer or in the file. */
static ti_status patch_crc(ti_tw *w, const record *rec, ti_error *err)
{
	uint8_t crc[4];
	le(crc, rec->crc, 4);
	uint64_t at = rec->header_offset + 14, buffer_start = w->pos - w->buffered;
	if (at >= buffer_start) {
		memcpy(w->buf + (at - buffer_start), crc, 4);
		return TI_OK;
	}
	if (at + 4 > buffer_start && flush(w, err))
		return err->code;
	size_t done = 0;
	while (done < 4) {
		ssize_t n = pwrite(w->fd, crc + done, 4 - done, (off_t)(at + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			TI_FAIL(err, TI_E_IO, "cannot write a CRC into the checkpoint: %s",
			        n < 0 ? strerror(errno) : "no progress");
			return failed(w, err);
		}
		done += (size_t)n;
	}
	return TI_OK;
}

/* Closes every storage that has all its bytes and opens the next, passing over empty ones. */
static ti_status settle(ti_tw *w, ti_error *err)
{
	while (w->current < w->storage_count) {
		record *rec = &w->records[RECORD_FIRST_STORAGE + w->current];
		if (w->current_done < rec->size)
			return TI_OK;
		rec->crc = w->current_crc;
		if (patch_crc(w, rec, err))
			return err->code;
		w->current++;
		w->current_done = 0;
		w->current_crc = 0;
		if (w->current < w->storage_count &&
		    local_header(w, RECORD_FIRST_STORAGE + w->current, 0, err))
			return err->code;
	}
	return TI_OK;
}

/* Refuses a writer that failed or finished. */
static ti_status usable(const ti_tw *w, ti_error *err)
{
	if (!w)
		return TI_FAIL(err, TI_E_INVALID, "no writer");
	if (w->failed)
		return TI_FAIL(err, TI_E_INVALID, "the checkpoint writer failed earlier and cannot go on");
	if (w->finished)
		return TI_FAIL(err, TI_E_INVALID, "the checkpoint is already finished");
	return TI_OK;
}

ti_status ti_tw_begin(int fd, const ti_tw_storage *storages, size_t storage_count, const ti_tw_tensor *tensors,
                      size_t tensor_count, const ti_tw_options *options, ti_tw **out, ti_error *err)
{
	static const ti_tw_options defaults;
	const ti_tw_options *o = options ? options : &defaults;
	const char *root = o->root ? o->root : "archive";
	*out = NULL;
	if ((storage_count && !storages) || (tensor_count && !tensors) || (o->module_count && !o->modules))
		return TI_FAIL(err, TI_E_INVALID, "a count without its array");
	if (check_options(o, root, err) || check_storages(storages, storage_count, err) ||
	    check_tensors(tensors, tensor_count, storages, storage_count, err))
		return err->code;
	/* pwrite patches CRCs and zip offsets are absolute: a seekable file, from its start. */
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (at < 0)
		return TI_FAIL(err, TI_E_INVALID, "the checkpoint must go to a seekable file: %s", strerror(errno));
	int flags = fcntl(fd, F_GETFL);
	if (at != 0 || flags < 0 || (flags & O_APPEND))
		return TI_FAIL(err, TI_E_INVALID, "the checkpoint must be written from offset 0, without O_APPEND");

	ti_tw *w = calloc(1, sizeof(*w));
	if (!w)
		return TI_FAIL(err, TI_E_NOMEM, "out of memory for the checkpoint writer");
	w->fd = fd;
	w->storage_count = storage_count;
	w->record_count = storage_count + 3;
	w->zip64_threshold = o->zip64_threshold ? o->zip64_threshold : ZIP64_LIMIT;
	w->root = strdup(root);
	w->buf = malloc(WRITE_BUFFER);
	w->records = w->record_count > storage_count ? calloc(w->record_count, sizeof(*w->records)) : NULL;
	uint8_t *pickle = NULL;
	size_t pickle_size = 0;
	if (!w->root || !w->buf || !w->records) {
		TI_FAIL(err, TI_E_NOMEM, "out of memory for the checkpoint writer");
		goto fail;
	}
	for (size_t i = 0; i < storage_count; i++)
		w->records[RECORD_FIRST_STORAGE + i].size = storages[i].numel * ti_dtype_size(storages[i].dtype);
	if (build_pickle(storages, storage_count, tensors, tensor_count, o, &pickle, &pickle_size, err))
		goto fail;
	const char *byteorder = o->big_endian ? "big" : "little";
	if (small_record(w, RECORD_PICKLE, pickle, pickle_size, err) ||
	    small_record(w, RECORD_BYTEORDER, byteorder, strlen(byteorder), err))
		goto fail;
	if (storage_count && (local_header(w, RECORD_FIRST_STORAGE, 0, err) || settle(w, err)))
		goto fail;
	free(pickle);
	*out = w;
	return TI_OK;
fail:
	free(pickle);
	ti_tw_free(w);
	return err->code;
}

ti_status ti_tw_storage_put(ti_tw *w, const void *bytes, size_t n, ti_error *err)
{
	if (usable(w, err))
		return err->code;
	if (n == 0)
		return TI_OK;
	if (w->current >= w->storage_count)
		return TI_FAIL(err, TI_E_INVALID, "%zu bytes more than the storages hold", n);
	const record *rec = &w->records[RECORD_FIRST_STORAGE + w->current];
	if (n > rec->size - w->current_done)
		return TI_FAIL(err, TI_E_INVALID, "%zu bytes for storage %zu, which has %" PRIu64 " bytes left", n,
		               w->current, rec->size - w->current_done);
	w->current_crc = ti_crc32(w->current_crc, bytes, n);
	w->current_done += n;
	if (emit(w, bytes, n, err) || settle(w, err))
		return failed(w, err);
	return TI_OK;
}

/*
 * The central header of record r (APPNOTE 4.3.12): the 32-bit size and
 * offset fields saturate at the threshold, and a ZIP64 extra then holds, in
 * this order, the sizes and the offset that saturated (4.5.3).
 */
static ti_status central_header(ti_tw *w, size_t r, ti_error *err)
{
	const record *rec = &w->records[r];
	const char *name = record_name(w, r);
	size_t name_len = strlen(name);
	bool big = zip64_size(w, rec->size), far = rec->header_offset >= w->zip64_threshold;
	size_t zip64 = (big ? 16 : 0) + (far ? 8 : 0);
	size_t extra = zip64 ? 4 + zip64 : 0;
	uint8_t *h = w->header;
	memcpy(h, "PK\1\2", 4);
	le(h + 4, VERSION_ZIP64, 2); /* version made by: 4.5, MS-DOS attributes */
	le(h + 6, zip64 ? VERSION_ZIP64 : VERSION_PLAIN, 2);
	le(h + 8, FLAG_UTF8, 2);
	le(h + 10, 0, 2);
	le(h + 12, 0, 2);
	le(h + 14, DOS_DATE_1980, 2);
	le(h + 16, rec->crc, 4);
	le(h + 20, big ? ZIP64_LIMIT : rec->size, 4);
	le(h + 24, big ? ZIP64_LIMIT : rec->size, 4);
	le(h + 28, name_len, 2);
	le(h + 30, extra, 2);
	le(h + 32, 0, 2); /* comment */
	le(h + 34, 0, 2); /* disk */
	le(h + 36, 0, 2); /* internal attributes */
	le(h + 38, 0, 4); /* external attributes */
	le(h + 42, far ? ZIP64_LIMIT : rec->header_offset, 4);
	uint8_t *x = h + CENTRAL_HEADER;
	memcpy(x, name, name_len);
	x += name_len;
	if (zip64) {
		le(x, 0x0001, 2);
		le(x + 2, zip64, 2);
		x += 4;
		if (big) {
			le(x, rec->size, 8);
			le(x + 8, rec->size, 8);
			x += 16;
		}
		if (far) {
			le(x, rec->header_offset, 8);
			x += 8;
		}
	}
	return emit(w, h, (size_t)(x - h), err);
}

/*
 * The end records: the ZIP64 end of central directory (4.3.14) and its
 * locator (4.3.15), which torch always writes (MZ_ZIP_FLAG_WRITE_ZIP64),
 * then the classic end record (4.3.16) with saturated fields where needed.
 */
static ti_status end_records(ti_tw *w, uint64_t cd_offset, uint64_t cd_size, ti_error *err)
{
	uint8_t e[EOCD64 + EOCD64_LOCATOR + EOCD];
	uint64_t eocd64_offset = w->pos, entries = w->record_count;
	uint8_t *p = e;
	memcpy(p, "PK\6\6", 4);
	le(p + 4, EOCD64 - 12, 8); /* the record's size after this field */
	le(p + 12, VERSION_ZIP64, 2);
	le(p + 14, VERSION_ZIP64, 2);
	le(p + 16, 0, 4);
	le(p + 20, 0, 4);
	le(p + 24, entries, 8);
	le(p + 32, entries, 8);
	le(p + 40, cd_size, 8);
	le(p + 48, cd_offset, 8);
	p += EOCD64;
	memcpy(p, "PK\6\7", 4);
	le(p + 4, 0, 4);
	le(p + 8, eocd64_offset, 8);
	le(p + 16, 1, 4);
	p += EOCD64_LOCATOR;
	bool many = entries >= 0xffff;
	memcpy(p, "PK\5\6", 4);
	le(p + 4, 0, 2);
	le(p + 6, 0, 2);
	le(p + 8, many ? 0xffff : entries, 2);
	le(p + 10, many ? 0xffff : entries, 2);
	le(p + 12, cd_size >= w->zip64_threshold ? ZIP64_LIMIT : cd_size, 4);
	le(p + 16, cd_offset >= w->zip64_threshold ? ZIP64_LIMIT : cd_offset, 4);
	le(p + 20, 0, 2);
	return emit(w, e, sizeof(e), err);
}

ti_status ti_tw_end(ti_tw *w, ti_error *err)
{
	if (usable(w, err))
		return err->code;
	if (w->current < w->storage_count)
		return TI_FAIL(err, TI_E_INVALID, "storage %zu has %" PRIu64 " of its %" PRIu64 " bytes", w->current,
		               w->current_done, w->records[RECORD_FIRST_STORAGE + w->current].size);
	if (small_record(w, version_record(w), VERSION_RECORD, strlen(VERSION_RECORD), err))
		return failed(w, err);
	uint64_t cd_offset = w->pos;
	for (size_t r = 0; r < w->record_count; r++)
		if (central_header(w, r, err))
			return failed(w, err);
	if (end_records(w, cd_offset, w->pos - cd_offset, err) || flush(w, err))
		return failed(w, err);
	/* A file that held more before would keep a stale tail after our end record. */
	struct stat st;
	if (fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > w->pos &&
	    ftruncate(w->fd, (off_t)w->pos) != 0) {
		TI_FAIL(err, TI_E_IO, "cannot cut the checkpoint to its end: %s", strerror(errno));
		return failed(w, err);
	}
	w->finished = true;
	return TI_OK;
}

void ti_tw_free(ti_tw *w)
{
	if (!w)
		return;
	free(w->root);
	free(w->buf);
	free(w->records);
	free(w);
}

size_t ti_tw_current_storage(const ti_tw *w) { return w->current; }

uint64_t ti_tw_bytes_written(const ti_tw *w) { return w->pos; }
