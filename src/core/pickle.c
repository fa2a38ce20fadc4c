/*
 * pickle.c - the pickle machine: one table row per opcode, nothing executed.
 *
 * Opcodes and their encodings are Python's (Lib/pickletools.py documents each
 * one; Modules/_pickle.c is the reference machine). The stack and the memo
 * have ceilings; values live in the caller's arena. A MARK is remembered as a
 * stack position, as _pickle.c's metastack does.
 *
 * Memory stays near what the result needs, because torch.save's pickles
 * make ten values per tensor and keep one. Python's pickler memoizes nearly
 * every value and fetches few of them again, so a first pass over the
 * opcodes notes which memo entries are ever fetched, and only those are kept.
 * Then every value's references are counted (value_build.h): the arguments
 * of a rebuild call, its size and stride tuples and its persistent id go
 * back to the arena as soon as the call has made its tensor. The pickle is
 * read in windows, so a source need not be in memory (ti_pickle_load_source).
 *
 * Bytes are taken as CPython's C unpickler takes them from the file
 * torch.load hands it (Modules/_pickle.c in file mode: torch.load reads
 * data.pkl through an io.BytesIO, which has no peek). A FRAME's bytes are
 * read into its buffer, and every later read is served from that buffer
 * while the buffer holds all of it. A read it cannot serve drops what is
 * left of the frame and takes its bytes from the file after it
 * (_Unpickler_ReadImpl); a text line does the same when no newline is left
 * in the frame (_Unpickler_Readline); only the data of BINBYTES and
 * BYTEARRAY8 runs on from the frame into the file (_Unpickler_ReadInto).
 * pickletools reads every byte in order and the pure-Python unpickler
 * refuses a read that crosses a frame's end, so a stream where one does
 * shows them something else than what torch.load runs. The machine reads
 * as the C unpickler does and tells the diverge hook of every crossing.
 */
#include "tinspect/pickle.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "core/value_build.h"

enum {
	WINDOW = 64 * 1024,  /* bytes read from a source at a time */
	MEMO_CHUNK = 1024,   /* memo entries are kept in chunks of this many */
	GLOBALS_CACHED = 64, /* distinct known globals made once per pickle */
	MEMO_DENSE = 1 << 20 /* memo indices kept whatever the pickle's size (a bit each, 128 KiB) */
};

/* A bit set that grows to the highest index set; a bit past its end is clear. */
typedef struct bits {
	uint64_t *words;
	size_t count; /* words */
} bits;

typedef struct vm {
	/* Input: the window holds the pickle's bytes [base, base + avail). */
	const ti_pickle_source *src; /* NULL: data is the whole pickle */
	const uint8_t *data;
	size_t base, avail;
	uint8_t *buf;               /* the window's buffer, for a source */
	size_t buf_cap;
	size_t size, pos, op_pos;
	size_t frame_end;           /* the end of the last FRAME's bytes: pos below it is inside that frame */
	uint8_t op;                 /* the opcode at op_pos */
	ti_arena *arena;
	size_t arena_start;         /* arena->used when the main pass began */
	const ti_pickle_hooks *hooks;
	ti_pickle_limits limits;
	ti_error *err;
	ti_value **stack;
	size_t sp, stack_cap;
	size_t *marks;
	size_t mark_count, marks_cap;
	/* The memo: which entries are ever fetched (the first pass), and the
	 * values of those, in chunks made on first use; which are set, counted
	 * for MEMOIZE's index when the pickle has one. */
	bits memo_fetched, memo_set; /* memo_fetched: the indices below the pickle's size */
	ti_value ***memo_chunks;
	size_t memo_chunk_count;
	/* Fetched indices from the pickle's size up (sorted), and their values: few, in any real pickle none. */
	uint64_t *far;
	ti_value **far_values;
	size_t far_count, far_cap;
	bool memoize;    /* a MEMOIZE byte is in the pickle: memo_set and memo_len are kept */
	uint64_t memo_limit; /* indices kept: below the ceiling and below MEMO_DENSE or the pickle's size */
	size_t memo_len; /* entries set, which MEMOIZE uses as its index */
	ti_value *result;
	int proto;
	/* Made once and shared, since none of them is ever changed: */
	ti_value *small_ints[256]; /* BININT1 values */
	ti_value *none, *bools[2], *empty_tuple;
	struct {
		ti_value *global; /* a global the lookup hook recognised */
		size_t module_len, name_len;
	} globals[GLOBALS_CACHED];
	size_t globals_count;
} vm;

typedef ti_status (*op_fn)(vm *m, uint8_t op);

/* ---- errors, reading ---- */

#define FAIL(m, code, ...) TI_FAIL((m)->err, (code), __VA_ARGS__)
#define NOMEM(m) FAIL(m, TI_E_LIMIT, "pickle builds more metadata than the memory ceiling allows")

/* Moves the window to start at offset, holding at least n bytes (and up to WINDOW). */
static ti_status window_at(vm *m, size_t offset, size_t n)
{
	size_t want = n > WINDOW ? n : WINDOW;
	if (want > m->size - offset)
		want = m->size - offset;
	if (want > m->buf_cap) {
		uint8_t *b = realloc(m->buf, want);
		if (!b)
			return FAIL(m, TI_E_NOMEM, "out of memory reading the pickle");
		m->buf = b;
		m->buf_cap = want;
	}
	if (m->src->read(m->src->ctx, offset, m->buf, want, m->err))
		return m->err->code;
	m->data = m->buf;
	m->base = offset;
	m->avail = want;
	return TI_OK;
}

/*
 * Tells the arena what the rest of the pickle will make, at the rate its
 * part read so far made values (ti_arena_expect): a big state_dict's
 * values then go to huge blocks from early on, and its last block is a
 * small one when little is left to make.
 */
static void expect_values(vm *m)
{
	size_t read = m->pos, made = m->arena->used - m->arena_start;
	if (read < WINDOW || m->arena->used < m->arena_start)
		return;
	ti_arena_expect(m->arena, (size_t)((double)made / (double)read * (double)(m->size - read)));
}

static __attribute__((noinline)) ti_status need_slow(vm *m, size_t n, const uint8_t **p)
{
	if (n > m->size - m->pos)
		return FAIL(m, TI_E_CORRUPT, "pickle truncated: opcode needs %zu bytes, %zu remain", n, m->size - m->pos);
	if (m->src)
		expect_values(m);
	if (window_at(m, m->pos, n))
		return m->err->code;
	*p = m->data;
	m->pos += n;
	return TI_OK;
}

/* The next n bytes, valid until the next read; the window moves when they are not in it. */
static inline ti_status need(vm *m, size_t n, const uint8_t **p)
{
	size_t at = m->pos - m->base;
	if (at > m->avail || n > m->avail - at) /* at wraps past avail when pos is before the window */
		return need_slow(m, n, p);
	*p = m->data + at;
	m->pos += n;
	return TI_OK;
}

/*
 * A read of n bytes at pos that runs past the end of the frame pos is in
 * (see the top of the file): reported, then, where the C unpickler drops
 * the frame's rest, pos moves to the frame's end.
 */
static __attribute__((noinline)) ti_status cross_frame(vm *m, size_t n, bool drops)
{
	size_t left = m->frame_end - m->pos;
	const char *op = ti_pickle_opcode_name(m->op);
	if (m->hooks && m->hooks->diverge) {
		char what[320], read[64];
		if (n)
			snprintf(read, sizeof(read), "%zu bytes", n);
		else
			snprintf(read, sizeof(read), "a line");
		if (drops)
			snprintf(what, sizeof(what),
			         "%s reads %s at offset %zu, past the end of its FRAME: CPython's C unpickler (torch.load) "
			         "skips the frame's last %zu bytes and reads from after it, where pickletools reads on",
			         op, read, m->pos, left);
		else
			snprintf(what, sizeof(what),
			         "%s reads %s at offset %zu, past the end of its FRAME (%zu bytes left in it): the "
			         "pure-Python unpickler refuses it", op, read, m->pos, left);
		ti_status s = m->hooks->diverge(m->hooks->ctx, m->op, what, (int64_t)m->op_pos, m->err);
		if (s)
			return s;
	}
	if (drops)
		m->pos = m->frame_end;
	return TI_OK;
}

/* n bytes as the C unpickler's _Unpickler_Read takes them: from the frame while it holds them all. */
static inline ti_status take(vm *m, size_t n, const uint8_t **p)
{
	if (m->pos < m->frame_end && n > m->frame_end - m->pos && cross_frame(m, n, true))
		return m->err->code;
	return need(m, n, p);
}

/* n bytes as _Unpickler_ReadInto takes them: the frame's rest, then on into the file. */
static inline ti_status take_into(vm *m, size_t n, const uint8_t **p)
{
	if (m->pos < m->frame_end && n > m->frame_end - m->pos && cross_frame(m, n, false))
		return m->err->code;
	return need(m, n, p);
}

/* A little-endian field of n bytes; the widths opcodes use read as one load once inlined. */
static inline uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	switch (n) {
	case 1:
		return p[0];
	case 2:
		return (uint64_t)p[0] | (uint64_t)p[1] << 8;
	case 4:
		return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
	default:
		for (int i = n; i-- > 0;)
			v = (v << 8) | p[i];
		return v;
	}
}

/* The length of the text line that starts at offset, up to its '\n', within the limit. */
static ti_status line_length(vm *m, size_t offset, size_t *len)
{
	size_t at = offset;
	for (;;) {
		if (at < m->base || at >= m->base + m->avail) {
			if (at >= m->size)
				return FAIL(m, TI_E_CORRUPT, "pickle truncated: text argument has no newline");
			if (window_at(m, at, WINDOW))
				return m->err->code;
		}
		const uint8_t *from = m->data + (at - m->base);
		const uint8_t *nl = memchr(from, '\n', m->base + m->avail - at);
		if (nl) {
			*len = at - offset + (size_t)(nl - from);
			break;
		}
		at = m->base + m->avail;
	}
	if (*len > m->limits.string_max)
		return FAIL(m, TI_E_LIMIT, "text argument of %zu bytes exceeds the %zu-byte limit", *len, m->limits.string_max);
	return TI_OK;
}

/*
 * Where the text line the C unpickler reads at *at starts, and its length:
 * from the frame when a newline is left in it, else from after the frame
 * (_Unpickler_Readline drops the rest and reads a line from the file).
 */
static ti_status line_from(vm *m, size_t *at, size_t *len)
{
	ti_status s = line_length(m, *at, len);
	if (*at >= m->frame_end || (!s && *len < m->frame_end - *at))
		return s;
	ti_error_clear(m->err);
	size_t pos = m->pos;
	m->pos = *at;
	s = cross_frame(m, 0, true);
	*at = m->pos;
	m->pos = pos;
	return s ? s : line_length(m, *at, len);
}

/* A text argument up to '\n' (protocol 0/1); *len excludes the newline. */
static ti_status read_line(vm *m, const char **line, size_t *len)
{
	const uint8_t *p = NULL;
	size_t at = m->pos;
	*line = NULL;
	if (line_from(m, &at, len))
		return m->err->code;
	m->pos = at;
	if (need(m, *len + 1, &p))
		return m->err->code;
	*line = (const char *)p;
	return TI_OK;
}

/*
 * Two text arguments (GLOBAL, INST). They are in the window together, but
 * for the first when a frame's rest lies between them: that one is copied.
 */
static ti_status read_two_lines(vm *m, const char **a, size_t *alen, const char **b, size_t *blen)
{
	const uint8_t *p = NULL;
	size_t a_at = m->pos, b_at;
	*a = *b = NULL;
	if (line_from(m, &a_at, alen))
		return m->err->code;
	b_at = a_at + *alen + 1;
	if (line_from(m, &b_at, blen))
		return m->err->code;
	m->pos = a_at;
	if (b_at == a_at + *alen + 1) {
		if (need(m, *alen + 1 + *blen + 1, &p))
			return m->err->code;
		*a = (const char *)p;
		*b = (const char *)p + *alen + 1;
		return TI_OK;
	}
	char *first = NULL;
	if (need(m, *alen + 1, &p) || !(first = ti_arena_alloc(m->arena, *alen + 1)))
		return m->err->code ? m->err->code : NOMEM(m);
	memcpy(first, p, *alen + 1);
	m->pos = b_at;
	if (need(m, *blen + 1, &p))
		return m->err->code;
	*a = first;
	*b = (const char *)p;
	return TI_OK;
}

/* ---- the stack ---- */

static size_t fence(const vm *m) { return m->mark_count ? m->marks[m->mark_count - 1] : 0; }

/* Makes room for one more value on the stack, or says why there is none. */
static __attribute__((noinline)) ti_status grow_stack(vm *m)
{
	if (m->sp >= m->limits.stack_max)
		return FAIL(m, TI_E_LIMIT, "pickle stack deeper than %zu values", m->limits.stack_max);
	size_t cap = m->stack_cap ? m->stack_cap * 2 : 64;
	if (cap > m->limits.stack_max)
		cap = m->limits.stack_max;
	ti_value **s = realloc(m->stack, cap * sizeof(*s));
	if (!s)
		return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle stack");
	m->stack = s;
	m->stack_cap = cap;
	return TI_OK;
}

/* Pushes v, counting the stack's reference to it. Inline: every opcode but a few ends here. */
static inline ti_status push(vm *m, ti_value *v)
{
	if (!v)
		return NOMEM(m);
	if (m->sp == m->stack_cap && grow_stack(m))
		return m->err->code;
	m->stack[m->sp++] = ti_value_ref(v);
	return TI_OK;
}

/* Pops into *v: the stack's reference passes to the caller, who drops or keeps it. */
static ti_status pop(vm *m, ti_value **v)
{
	if (m->sp <= fence(m))
		return FAIL(m, TI_E_CORRUPT, m->sp ? "pickle pops below its MARK" : "pickle stack underflow");
	*v = m->stack[--m->sp];
	return TI_OK;
}

static inline ti_status top(vm *m, ti_value **v)
{
	if (m->sp <= fence(m))
		return FAIL(m, TI_E_CORRUPT, m->sp ? "pickle reads below its MARK" : "pickle stack underflow");
	*v = m->stack[m->sp - 1];
	return TI_OK;
}

/*
 * Pops everything above the last MARK, and the mark: items start at *items,
 * where the next push writes, and their references pass to the caller.
 */
static ti_status pop_mark(vm *m, ti_value ***items, size_t *count)
{
	if (!m->mark_count)
		return FAIL(m, TI_E_CORRUPT, "pickle has no MARK to pop to");
	size_t f = m->marks[--m->mark_count];
	/* A MARK on an empty stack that was never grown: no items, and no pointer arithmetic on NULL. */
	*items = m->stack ? m->stack + f : NULL;
	*count = m->sp - f;
	m->sp = f;
	return TI_OK;
}

static void drop(vm *m, ti_value *v) { ti_value_unref(m->arena, v); }

static void drop_all(vm *m, ti_value **items, size_t n)
{
	for (size_t i = 0; i < n; i++)
		drop(m, items[i]);
}

/* ---- making values ---- */

static ti_value *new_value(vm *m, ti_kind kind) { return ti_value_new(m->arena, kind); }

static inline ti_status push_int(vm *m, int64_t i)
{
	if (i >= 0 && i < 256) {
		if (!m->small_ints[i])
			m->small_ints[i] = ti_value_keep(ti_value_new_int(m->arena, i));
		return push(m, m->small_ints[i]);
	}
	return push(m, ti_value_new_int(m->arena, i));
}

static ti_status push_str(vm *m, ti_kind kind, const void *data, size_t size)
{
	if (size > m->limits.string_max)
		return FAIL(m, TI_E_LIMIT, "%s of %zu bytes exceeds the %zu-byte limit", ti_kind_name(kind), size, m->limits.string_max);
	return push(m, ti_value_new_str(m->arena, kind, data, size));
}

/* A little-endian two's complement integer of n bytes: int64 when it fits. */
static ti_status push_long(vm *m, const uint8_t *p, size_t n)
{
	if (n == 0)
		return push_int(m, 0);
	bool neg = p[n - 1] & 0x80;
	size_t sig = n; /* drop sign-extension bytes */
	while (sig > 1 && p[sig - 1] == (neg ? 0xff : 0x00) && ((p[sig - 2] & 0x80) != 0) == neg)
		sig--;
	if (sig <= 8) {
		uint64_t u = le(p, (int)sig);
		if (neg && sig < 8)
			u |= ~(uint64_t)0 << (8 * sig);
		return push_int(m, (int64_t)u);
	}
	if (n > m->limits.string_max)
		return FAIL(m, TI_E_LIMIT, "integer of %zu bytes exceeds the %zu-byte limit", n, m->limits.string_max);
	return push(m, ti_value_new_str(m->arena, TI_BIGINT, (const char *)p, sig));
}

static bool valid_utf8(const uint8_t *s, size_t n)
{
	/* Python decodes with 'surrogatepass' in pickle, so surrogates are allowed;
	 * overlong forms and code points past U+10FFFF are not. */
	size_t i = 0;
	uint64_t w;
	for (; i + 8 <= n; i += 8) { /* eight bytes at a time while they are ASCII, as names are */
		memcpy(&w, s + i, 8);
		if (w & 0x8080808080808080u)
			break;
	}
	if (i < n && n >= 8 && i + 8 > n) { /* the last few: the string's last eight bytes, read again */
		memcpy(&w, s + n - 8, 8);
		if (!(w & 0x8080808080808080u))
			return true;
	} else if (n < 8) {
		unsigned any = 0;
		for (size_t k = 0; k < n; k++)
			any |= s[k];
		if (!(any & 0x80))
			return true;
	}
	while (i < n) {
		uint8_t c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t len = (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		if (!len || len > n - i || c < 0xc2 || c > 0xf4)
			return false;
		for (size_t k = 1; k < len; k++)
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
		if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] > 0x8f))
			return false;
		i += len;
	}
	return true;
}

/* UTF-8 as Python's strict decoder takes it: valid_utf8, without surrogates (ED A0..BF). */
static bool strict_utf8(const uint8_t *s, size_t n)
{
	if (!valid_utf8(s, n))
		return false;
	for (size_t i = 0; i + 1 < n; i++)
		if (s[i] == 0xed && s[i + 1] >= 0xa0)
			return false;
	return true;
}

static ti_status push_unicode(vm *m, const uint8_t *p, size_t n)
{
	if (!valid_utf8(p, n))
		return FAIL(m, TI_E_CORRUPT, "string is not valid UTF-8");
	return push_str(m, TI_STR, p, n);
}

/* ---- calls (never executed: recorded, or interpreted by the hooks) ---- */

/* Takes a reference to each of callable, args and kwargs: an object keeps them, a hook's result does not. */
static ti_status observe(vm *m, const ti_value *target)
{
	if (!m->hooks || !m->hooks->observe)
		return TI_OK;
	return m->hooks->observe(m->hooks->ctx, m->op, target, (int64_t)m->op_pos, m->err);
}

static ti_status call(vm *m, ti_value *callable, ti_value *args, ti_value *kwargs, ti_call_kind how)
{
	ti_value *out = NULL;
	ti_status seen = m->hooks && m->hooks->observe_call
	                     ? m->hooks->observe_call(m->hooks->ctx, m->op, callable, args, (int64_t)m->op_pos, m->err)
	                     : observe(m, callable);
	if (seen)
		return seen;
	if (m->hooks && m->hooks->call && !kwargs) {
		ti_status s = m->hooks->call(m->hooks->ctx, m->arena, callable, args, how, &out, m->err);
		if (s)
			return s;
	}
	if (out) {
		ti_status s = push(m, out);
		drop(m, callable);
		drop(m, args);
		return s;
	}
	out = new_value(m, TI_OBJECT);
	if (!out)
		return NOMEM(m);
	out->flags = how == TI_CALL_NEWOBJ ? TI_F_NEWOBJ : how == TI_CALL_INST ? TI_F_INST : 0;
	out->as.object->callable = callable;
	out->as.object->args = args;
	out->as.object->kwargs = kwargs;
	return push(m, out);
}

static ti_value *make_global(vm *m, const char *module, size_t mlen, const char *name, size_t nlen)
{
	/* Protocol 2 writes Python 3's builtins as __builtin__ (Lib/_compat_pickle.py). */
	if ((mlen == 11 && !memcmp(module, "__builtin__", 11)) || (mlen == 10 && !memcmp(module, "exceptions", 10))) {
		module = "builtins";
		mlen = 8;
	} else if (mlen == 8 && !memcmp(module, "copy_reg", 8)) {
		module = "copyreg";
		mlen = 7;
	}
	/* torch.save names a storage class per tensor: a global the hooks know is made once. */
	for (size_t i = 0; i < m->globals_count; i++) {
		const ti_global *k = m->globals[i].global->as.global;
		if (m->globals[i].module_len == mlen && m->globals[i].name_len == nlen &&
		    !memcmp(k->module, module, mlen) && !memcmp(k->name, name, nlen))
			return m->globals[i].global;
	}
	ti_value *g = new_value(m, TI_GLOBAL);
	if (!g)
		return NULL;
	g->as.global->module = ti_arena_strndup(m->arena, module, mlen);
	g->as.global->name = ti_arena_strndup(m->arena, name, nlen);
	if (!g->as.global->module || !g->as.global->name)
		return NULL;
	g->as.global->offset = (int64_t)m->op_pos;
	if (m->hooks && m->hooks->lookup)
		g->as.global->known = m->hooks->lookup(m->hooks->ctx, g->as.global->module, g->as.global->name, g->as.global->offset);
	if (g->as.global->known && m->globals_count < GLOBALS_CACHED) {
		m->globals[m->globals_count].global = ti_value_keep(g);
		m->globals[m->globals_count].module_len = mlen;
		m->globals[m->globals_count++].name_len = nlen;
	}
	return g;
}

/* ---- opcodes ---- */

static ti_status op_proto(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	if (need(m, 1, &p))
		return m->err->code;
	if (p[0] > 5)
		return FAIL(m, TI_E_UNSUPPORTED, "unsupported pickle protocol %u", p[0]);
	m->proto = p[0];
	return TI_OK;
}

/*
 * FRAME: the C unpickler reads the frame's bytes into its buffer and reads
 * on from there (load_frame). A frame opened inside another is no writer's:
 * the pure-Python unpickler refuses it; when it is longer than the rest of
 * the other, the C unpickler drops that rest and the frame starts after it.
 */
static ti_status op_frame(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	if (take(m, 8, &p))
		return m->err->code;
	uint64_t len = le(p, 8);
	if (m->pos < m->frame_end) {
		if (len <= m->frame_end - m->pos) {
			if (m->hooks && m->hooks->diverge &&
			    m->hooks->diverge(m->hooks->ctx, m->op, "FRAME opened inside another frame: the pure-Python "
			                      "unpickler refuses it, no pickler writes it", (int64_t)m->op_pos, m->err))
				return m->err->code;
			return TI_OK; /* the bytes are in the buffer already */
		}
		if (cross_frame(m, len, true))
			return m->err->code;
	}
	if (len > m->size - m->pos)
		return FAIL(m, TI_E_CORRUPT, "pickle frame of %" PRIu64 " bytes runs past the end", len);
	m->frame_end = m->pos + (size_t)len;
	return TI_OK;
}

/*
 * STOP: a writer's last frame ends with it. A frame that runs on past STOP
 * leaves where the next pickle in the file starts to the file object: after
 * the frame for an io.BytesIO, after STOP for a file the C unpickler can peek.
 */
static ti_status op_stop(vm *m, uint8_t op)
{
	(void)op;
	if (m->pos < m->frame_end && m->hooks && m->hooks->diverge) {
		char what[200];
		snprintf(what, sizeof(what),
		         "STOP %zu bytes before the end of its FRAME: where a next pickle starts depends on the file "
		         "object (io.BytesIO: after the frame; a real file: after STOP)", m->frame_end - m->pos);
		if (m->hooks->diverge(m->hooks->ctx, m->op, what, (int64_t)m->op_pos, m->err))
			return m->err->code;
	}
	return pop(m, &m->result);
}

static ti_status op_mark(vm *m, uint8_t op)
{
	(void)op;
	if (m->mark_count == m->marks_cap) {
		if (m->mark_count >= m->limits.marks_max)
			return FAIL(m, TI_E_LIMIT, "pickle nests MARKs deeper than %zu", m->limits.marks_max);
		size_t cap = m->marks_cap ? m->marks_cap * 2 : 32;
		if (cap > m->limits.marks_max)
			cap = m->limits.marks_max;
		size_t *mk = realloc(m->marks, cap * sizeof(*mk));
		if (!mk)
			return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle marks");
		m->marks = mk;
		m->marks_cap = cap;
	}
	m->marks[m->mark_count++] = m->sp;
	return TI_OK;
}

static ti_status op_pop(vm *m, uint8_t op)
{
	(void)op;
	ti_value *v = NULL;
	/* _pickle.c: POP with nothing above the mark pops the mark itself. */
	if (m->sp <= fence(m) && m->mark_count) {
		m->mark_count--;
		return TI_OK;
	}
	if (pop(m, &v))
		return m->err->code;
	drop(m, v);
	return TI_OK;
}

static ti_status op_pop_mark(vm *m, uint8_t op)
{
	(void)op;
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	drop_all(m, items, n);
	return TI_OK;
}

static ti_status op_dup(vm *m, uint8_t op)
{
	(void)op;
	ti_value *v = NULL;
	if (top(m, &v))
		return m->err->code;
	return push(m, v);
}

static ti_status op_none(vm *m, uint8_t op)
{
	(void)op;
	if (!m->none)
		m->none = ti_value_keep(new_value(m, TI_NONE));
	return push(m, m->none);
}

static ti_status op_bool(vm *m, uint8_t op)
{
	int b = op == 0x88; /* NEWTRUE */
	if (!m->bools[b] && (m->bools[b] = ti_value_keep(new_value(m, TI_BOOL))))
		m->bools[b]->as.boolean = b;
	return push(m, m->bools[b]);
}

static ti_status op_binint(vm *m, uint8_t op)
{
	const uint8_t *p = NULL;
	if (op == 'K') { /* BININT1, as torch.save writes most sizes and strides: a shared small int */
		if (take(m, 1, &p))
			return m->err->code;
		return push_int(m, p[0]);
	}
	int n = op == 'J' ? 4 : 2;
	if (take(m, (size_t)n, &p))
		return m->err->code;
	uint64_t u = le(p, n);
	return push_int(m, n == 4 ? (int64_t)(int32_t)(uint32_t)u : (int64_t)u);
}

static ti_status op_long_n(vm *m, uint8_t op)
{
	const uint8_t *p = NULL;
	uint64_t n;
	if (op == 0x8a) { /* LONG1 */
		if (take(m, 1, &p))
			return m->err->code;
		n = p[0];
	} else { /* LONG4: signed length */
		if (take(m, 4, &p))
			return m->err->code;
		int32_t len = (int32_t)(uint32_t)le(p, 4);
		if (len < 0)
			return FAIL(m, TI_E_CORRUPT, "LONG4 with negative length %" PRId32, len);
		n = (uint64_t)len;
	}
	if (take(m, (size_t)n, &p))
		return m->err->code;
	return push_long(m, p, (size_t)n);
}

/* Decimal text (protocol 0 INT and LONG) to an integer value. */
static ti_status push_decimal(vm *m, const char *s, size_t n)
{
	bool neg = false;
	size_t i = 0;
	if (n && (s[0] == '-' || s[0] == '+'))
		neg = s[i++] == '-';
	if (n > 0 && s[n - 1] == 'L')
		n--;
	if (i >= n)
		return FAIL(m, TI_E_CORRUPT, "bad integer text in pickle");
	uint8_t mag[256] = {0}; /* little-endian magnitude, up to 2040 bits */
	size_t used = 1;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return FAIL(m, TI_E_CORRUPT, "bad integer text in pickle");
		unsigned carry = (unsigned)(s[i] - '0');
		for (size_t k = 0; k < used; k++) {
			unsigned cur = mag[k] * 10u + carry;
			mag[k] = (uint8_t)cur;
			carry = cur >> 8;
		}
		if (carry) {
			if (used == sizeof(mag) - 1)
				return FAIL(m, TI_E_LIMIT, "integer text longer than we read");
			mag[used++] = (uint8_t)carry;
		}
	}
	used++; /* room for the sign bit */
	if (neg) {
		unsigned carry = 1;
		for (size_t k = 0; k < used; k++) {
			unsigned cur = (uint8_t)~mag[k] + carry;
			mag[k] = (uint8_t)cur;
			carry = cur >> 8;
		}
	}
	return push_long(m, mag, used);
}

static ti_status op_int_text(vm *m, uint8_t op)
{
	const char *s;
	size_t n = 0;
	if (read_line(m, &s, &n))
		return m->err->code;
	if (op == 'I' && n == 2 && s[0] == '0' && (s[1] == '0' || s[1] == '1')) {
		ti_value *v = new_value(m, TI_BOOL); /* protocol 0 spells False/True as I00/I01 */
		if (v)
			v->as.boolean = s[1] == '1';
		return push(m, v);
	}
	return push_decimal(m, s, n);
}

static ti_status op_float_text(vm *m, uint8_t op)
{
	(void)op;
	const char *s;
	size_t n = 0;
	if (read_line(m, &s, &n))
		return m->err->code;
	char buf[64];
	if (n == 0 || n >= sizeof(buf))
		return FAIL(m, TI_E_CORRUPT, "bad float text in pickle");
	memcpy(buf, s, n);
	buf[n] = '\0';
	char *end;
	double d = strtod(buf, &end);
	if (*end)
		return FAIL(m, TI_E_CORRUPT, "bad float text in pickle");
	ti_value *v = new_value(m, TI_FLOAT);
	if (v)
		v->as.real = d;
	return push(m, v);
}

static ti_status op_binfloat(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	if (take(m, 8, &p))
		return m->err->code;
	uint64_t bits = 0;
	for (int i = 0; i < 8; i++) /* big-endian, unlike every other binary field */
		bits = (bits << 8) | p[i];
	ti_value *v = new_value(m, TI_FLOAT);
	if (v)
		memcpy(&v->as.real, &bits, sizeof(bits));
	return push(m, v);
}

/* BINUNICODE8, BINBYTES, BINSTRING and their 1- and 8-byte-length siblings (BINUNICODE and SHORT_BINUNICODE: op_binunicode). */
static ti_status op_counted(vm *m, uint8_t op)
{
	int width;
	ti_kind kind;
	switch (op) {
	case 0x8d: width = 8; kind = TI_STR; break;          /* BINUNICODE8 */
	case 'B': width = 4; kind = TI_BYTES; break;         /* BINBYTES */
	case 'C': width = 1; kind = TI_BYTES; break;         /* SHORT_BINBYTES */
	case 0x8e: case 0x96: width = 8; kind = TI_BYTES; break; /* BINBYTES8, BYTEARRAY8 */
	case 'T': width = 4; kind = TI_BYTES; break;         /* BINSTRING: a Python 2 str */
	default: width = 1; kind = TI_BYTES; break;          /* SHORT_BINSTRING */
	}
	const uint8_t *p = NULL;
	if (take(m, (size_t)width, &p))
		return m->err->code;
	uint64_t n = le(p, width);
	if (op == 'T' && (int32_t)(uint32_t)n < 0)
		return FAIL(m, TI_E_CORRUPT, "BINSTRING with negative length");
	if (n > m->limits.string_max)
		return FAIL(m, TI_E_LIMIT, "string of %" PRIu64 " bytes exceeds the %zu-byte limit", n, m->limits.string_max);
	/* bytes and bytearrays are read into their object: on past a frame's end (load_counted_binbytes) */
	bool into = op == 'B' || op == 'C' || op == 0x8e || op == 0x96;
	if ((into ? take_into : take)(m, (size_t)n, &p))
		return m->err->code;
	if (kind == TI_STR)
		return push_unicode(m, p, (size_t)n);
	/* torch.load decodes Python 2 str with encoding='utf-8'; keep bytes if that fails. */
	if ((op == 'T' || op == 'U') && valid_utf8(p, (size_t)n))
		return push_str(m, TI_STR, p, (size_t)n);
	ti_status s = push_str(m, TI_BYTES, p, (size_t)n);
	if (!s && op == 0x96)
		m->stack[m->sp - 1]->flags |= TI_F_BYTEARRAY;
	return s;
}

/* BINUNICODE and SHORT_BINUNICODE, every name and key of a torch.save pickle: op_counted's str case, on its own. */
static ti_status op_binunicode(vm *m, uint8_t op)
{
	const uint8_t *p = NULL;
	int width = op == 'X' ? 4 : 1;
	if (take(m, (size_t)width, &p))
		return m->err->code;
	uint64_t n = le(p, width);
	if (n > m->limits.string_max)
		return FAIL(m, TI_E_LIMIT, "string of %" PRIu64 " bytes exceeds the %zu-byte limit", n, m->limits.string_max);
	if (take(m, (size_t)n, &p))
		return m->err->code;
	return push_unicode(m, p, (size_t)n);
}

/* Protocol 0 STRING: a quoted Python 2 repr with backslash escapes. */
static ti_status op_string_text(vm *m, uint8_t op)
{
	(void)op;
	const char *s;
	size_t n = 0;
	if (read_line(m, &s, &n))
		return m->err->code;
	if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0])
		return FAIL(m, TI_E_CORRUPT, "STRING argument is not quoted");
	char *buf = ti_arena_alloc(m->arena, n);
	if (!buf)
		return NOMEM(m);
	size_t len = 0;
	for (size_t i = 1; i + 1 < n; i++) {
		char c = s[i];
		if (c != '\\' || i + 2 >= n) {
			buf[len++] = c;
			continue;
		}
		c = s[++i];
		switch (c) {
		case 'n': buf[len++] = '\n'; break;
		case 't': buf[len++] = '\t'; break;
		case 'r': buf[len++] = '\r'; break;
		case 'a': buf[len++] = '\a'; break;
		case 'b': buf[len++] = '\b'; break;
		case 'f': buf[len++] = '\f'; break;
		case 'v': buf[len++] = '\v'; break;
		case 'x':
			if (i + 2 < n - 1) {
				char hex[3] = {s[i + 1], s[i + 2], 0};
				buf[len++] = (char)strtol(hex, NULL, 16);
				i += 2;
			}
			break;
		default:
			if (c >= '0' && c <= '7') {
				int v = 0, k = 0;
				while (k < 3 && i < n - 1 && s[i] >= '0' && s[i] <= '7')
					v = v * 8 + (s[i++] - '0'), k++;
				i--;
				buf[len++] = (char)v;
			} else {
				buf[len++] = c;
			}
		}
	}
	bool text = valid_utf8((const uint8_t *)buf, len);
	return push_str(m, text ? TI_STR : TI_BYTES, buf, len);
}

/* Protocol 0 UNICODE: raw-unicode-escape, i.e. latin-1 plus \uXXXX and \UXXXXXXXX. */
static ti_status op_unicode_text(vm *m, uint8_t op)
{
	(void)op;
	const char *s;
	size_t n = 0;
	if (read_line(m, &s, &n))
		return m->err->code;
	if (n > SIZE_MAX / 4)
		return NOMEM(m);
	char *buf = ti_arena_alloc(m->arena, n * 4 + 1);
	if (!buf)
		return NOMEM(m);
	size_t len = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t cp = (unsigned char)s[i];
		int digits = 0;
		if (cp == '\\' && i + 1 < n && (s[i + 1] == 'u' || s[i + 1] == 'U'))
			digits = s[i + 1] == 'u' ? 4 : 8;
		if (digits && i + 1 + (size_t)digits < n + 0) {
			char hex[9] = {0};
			memcpy(hex, s + i + 2, (size_t)digits);
			char *end;
			unsigned long v = strtoul(hex, &end, 16);
			if (*end == '\0' && v <= 0x10ffff) {
				cp = (uint32_t)v;
				i += 1 + (size_t)digits;
			}
		}
		if (cp < 0x80) {
			buf[len++] = (char)cp;
		} else if (cp < 0x800) {
			buf[len++] = (char)(0xc0 | cp >> 6);
			buf[len++] = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			buf[len++] = (char)(0xe0 | cp >> 12);
			buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			buf[len++] = (char)(0x80 | (cp & 0x3f));
		} else {
			buf[len++] = (char)(0xf0 | cp >> 18);
			buf[len++] = (char)(0x80 | ((cp >> 12) & 0x3f));
			buf[len++] = (char)(0x80 | ((cp >> 6) & 0x3f));
			buf[len++] = (char)(0x80 | (cp & 0x3f));
		}
	}
	return push_str(m, TI_STR, buf, len);
}

static ti_status op_empty(vm *m, uint8_t op)
{
	if (op == ')') { /* every () is the same one, as in Python: a tuple cannot change */
		if (!m->empty_tuple)
			m->empty_tuple = ti_value_keep(new_value(m, TI_TUPLE));
		return push(m, m->empty_tuple);
	}
	ti_kind kind = op == ']' ? TI_LIST : op == '}' ? TI_DICT : TI_SET;
	return push(m, new_value(m, kind));
}

/* Items become a container's: it holds them now, not the stack. */
static ti_status push_seq(vm *m, ti_kind kind, ti_value **items, size_t n)
{
	return push(m, ti_value_new_seq_taking(m->arena, kind, items, n));
}

static ti_status op_tuple_n(vm *m, uint8_t op)
{
	size_t n = (size_t)(op - 0x85 + 1); /* TUPLE1..TUPLE3 */
	if (m->sp - fence(m) < n)
		return FAIL(m, m->sp < n ? TI_E_CORRUPT : TI_E_CORRUPT,
		            m->sp < n ? "pickle stack underflow" : "pickle pops below its MARK");
	m->sp -= n;
	return push_seq(m, TI_TUPLE, m->stack + m->sp, n);
}

/* TUPLE, LIST, FROZENSET: everything above the mark becomes one container. */
static ti_status op_collect(vm *m, uint8_t op)
{
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	if (n > m->limits.items_max)
		return FAIL(m, TI_E_LIMIT, "container holds more than %zu items", m->limits.items_max);
	ti_kind kind = op == 't' ? TI_TUPLE : op == 'l' ? TI_LIST : TI_FROZENSET;
	return push_seq(m, kind, items, n);
}

static ti_status op_dict(vm *m, uint8_t op)
{
	(void)op;
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	if (n % 2)
		return FAIL(m, TI_E_CORRUPT, "DICT with an odd number of items");
	ti_value *d = new_value(m, TI_DICT);
	if (!d)
		return NOMEM(m);
	for (size_t i = 0; i < n; i += 2)
		if (ti_dict_push(m->arena, d, items[i], items[i + 1], m->limits.items_max, m->err))
			return m->err->code;
	drop_all(m, items, n);
	return push(m, d);
}

/*
 * The container that APPEND(S)/SETITEM(S)/ADDITEMS add to: a list, dict,
 * set, or an object's record. The items were popped: it drops the stack's
 * references once the container holds its own.
 */
static ti_status add_items(vm *m, ti_value *target, ti_value **items, size_t n, uint8_t op)
{
	bool to_dict = op == 's' || op == 'u';
	if (to_dict && n % 2)
		return FAIL(m, TI_E_CORRUPT, "SETITEMS with an odd number of items");
	if (target->kind == TI_OBJECT) {
		/* list.extend / __setitem__ on an object we do not run: keep what was added. */
		ti_value **slot = to_dict ? &target->as.object->dict_items : &target->as.object->list_items;
		if (!*slot && !(*slot = ti_value_ref(new_value(m, to_dict ? TI_DICT : TI_LIST))))
			return NOMEM(m);
		target = *slot;
	}
	ti_kind want = to_dict ? TI_DICT : (op == 0x90 ? TI_SET : TI_LIST);
	if (target->kind != want)
		return FAIL(m, TI_E_CORRUPT, "%s adds to a %s, not a %s", ti_pickle_opcode_name(op),
		            ti_kind_name(target->kind), ti_kind_name(want));
	for (size_t i = 0; i < n; i += to_dict ? 2 : 1) {
		ti_status s = to_dict ? ti_dict_push(m->arena, target, items[i], items[i + 1], m->limits.items_max, m->err)
		                      : ti_seq_push(m->arena, &target->as.seq, items[i], m->limits.items_max, m->err);
		if (s)
			return s;
	}
	drop_all(m, items, n);
	return TI_OK;
}

static ti_status op_append(vm *m, uint8_t op)
{
	size_t n = op == 'a' ? 1 : 2; /* APPEND: list item; SETITEM: dict key value */
	if (m->sp - fence(m) < n + 1)
		return FAIL(m, TI_E_CORRUPT, m->sp < n + 1 ? "pickle stack underflow" : "pickle pops below its MARK");
	m->sp -= n;
	return add_items(m, m->stack[m->sp - 1], m->stack + m->sp, n, op);
}

static ti_status op_appends(vm *m, uint8_t op)
{
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	if (m->sp <= fence(m))
		return FAIL(m, TI_E_CORRUPT, "%s has no container below its MARK", ti_pickle_opcode_name(op));
	if (!n) /* nothing to add: _pickle.c returns before it looks at what it would add to */
		return TI_OK;
	return add_items(m, m->stack[m->sp - 1], items, n, op);
}

/* ---- memo ---- */

static inline bool bit_test(const bits *b, uint64_t i) { return i / 64 < b->count && (b->words[i / 64] >> (i % 64) & 1); }

static __attribute__((noinline)) int bit_grow(bits *b, uint64_t i)
{
	size_t count = b->count ? b->count : 16;
	while (count <= i / 64)
		count *= 2;
	uint64_t *w = realloc(b->words, count * sizeof(*w));
	if (!w)
		return -1;
	memset(w + b->count, 0, (count - b->count) * sizeof(*w));
	b->words = w;
	b->count = count;
	return 0;
}

static inline int bit_set(bits *b, uint64_t i)
{
	if (i / 64 >= b->count && bit_grow(b, i))
		return -1;
	b->words[i / 64] |= (uint64_t)1 << (i % 64);
	return 0;
}

/* Where index is in the far list, or -1. */
static int64_t far_find(const vm *m, uint64_t index)
{
	size_t lo = 0, hi = m->far_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->far[mid] < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < m->far_count && m->far[lo] == index ? (int64_t)lo : -1;
}

/* Whether a GET may fetch index (find_fetched). */
static inline bool memo_fetched(const vm *m, uint64_t index)
{
	return index < m->size ? bit_test(&m->memo_fetched, index) : far_find(m, index) >= 0;
}

/* Where a fetched memo entry lives; its chunk is made on first need (NULL when memory runs out). */
static inline ti_value **memo_slot(vm *m, uint64_t index, bool make)
{
	if (index >= m->size) {
		int64_t k = far_find(m, index);
		return k >= 0 ? &m->far_values[k] : NULL;
	}
	size_t c = (size_t)(index / MEMO_CHUNK);
	if (c >= m->memo_chunk_count)
		return NULL;
	if (!m->memo_chunks[c] && (!make || !(m->memo_chunks[c] = calloc(MEMO_CHUNK, sizeof(ti_value *)))))
		return NULL;
	return &m->memo_chunks[c][index % MEMO_CHUNK];
}

static __attribute__((noinline)) ti_status memo_put_slow(vm *m, uint64_t index)
{
	ti_value *v = NULL;
	if (top(m, &v))
		return m->err->code;
	/*
	 * Any index is valid: Python's pickler numbers densely, but BINPUT 200 in a
	 * tiny pickle loads (the C unpickler grows its memo to fit). One past the
	 * indices kept is never fetched (find_fetched marks none), so only
	 * MEMOIZE's count, which needs every index set, cannot go on.
	 */
	if (index >= m->memo_limit) {
		if (!m->memoize)
			return TI_OK;
		return FAIL(m, TI_E_LIMIT, "memo index %" PRIu64 " is beyond the memo limit", index);
	}
	if (m->memoize && !bit_test(&m->memo_set, index)) {
		if (bit_set(&m->memo_set, index))
			return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
		m->memo_len++;
	}
	if (!memo_fetched(m, index))
		return TI_OK; /* never fetched: nothing need remember it */
	ti_value **slot = memo_slot(m, index, true);
	if (!slot)
		return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
	ti_value_ref(v);
	drop(m, *slot);
	*slot = v;
	return TI_OK;
}

/*
 * PUT, first what nearly every one of a torch.save pickle is: a value on
 * the stack, put at an index that no GET fetches. Nothing is kept for it,
 * but that the index is set, when MEMOIZE needs the count (a byte 0x94
 * anywhere in a big pickle says it may: find_fetched cannot tell data from
 * opcodes) and the bit set holds the index already.
 */
static inline ti_status memo_put(vm *m, uint64_t index)
{
	if (m->sp > fence(m) && index < m->size && index < m->memo_limit && !bit_test(&m->memo_fetched, index)) {
		if (!m->memoize)
			return TI_OK;
		if (index / 64 < m->memo_set.count) {
			uint64_t *word = &m->memo_set.words[index / 64], bit = (uint64_t)1 << (index % 64);
			m->memo_len += !(*word & bit);
			*word |= bit;
			return TI_OK;
		}
	}
	return memo_put_slow(m, index);
}

static inline ti_status memo_get(vm *m, uint64_t index)
{
	/* Every GET's index was found fetched, so an entry that was set has a slot. */
	if (index >= m->memo_limit)
		return FAIL(m, TI_E_LIMIT, "memo index %" PRIu64 " is beyond the memo limit", index);
	ti_value **slot = memo_slot(m, index, false);
	if (!slot || !*slot)
		return FAIL(m, TI_E_CORRUPT, "memo index %" PRIu64 " was never stored", index);
	return push(m, *slot);
}

/* BINGET and BINPUT: a one-byte index; LONG_BINGET and LONG_BINPUT: four. A row each, as they are most of a pickle. */
static ti_status op_binget(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	return take(m, 1, &p) ? m->err->code : memo_get(m, p[0]);
}

static ti_status op_binput(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	return take(m, 1, &p) ? m->err->code : memo_put(m, p[0]);
}

static ti_status op_long_binget(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	return take(m, 4, &p) ? m->err->code : memo_get(m, le(p, 4));
}

static ti_status op_long_binput(vm *m, uint8_t op)
{
	(void)op;
	const uint8_t *p = NULL;
	return take(m, 4, &p) ? m->err->code : memo_put(m, le(p, 4));
}

/* A memo index from GET's decimal text, or UINT64_MAX when it is not one (op_memo_text says why). */
static uint64_t memo_index_text(const char *s, size_t n)
{
	uint64_t index = 0;
	if (n == 0 || n > 18)
		return UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return UINT64_MAX;
		index = index * 10 + (uint64_t)(s[i] - '0');
	}
	return index;
}

static ti_status op_memo_text(vm *m, uint8_t op)
{
	const char *s;
	size_t n = 0;
	if (read_line(m, &s, &n))
		return m->err->code;
	uint64_t index = memo_index_text(s, n);
	if (index == UINT64_MAX)
		return FAIL(m, TI_E_CORRUPT, "bad memo index text in pickle");
	return op == 'g' ? memo_get(m, index) : memo_put(m, index);
}

static ti_status op_memoize(vm *m, uint8_t op)
{
	(void)op;
	return memo_put(m, m->memo_len);
}

/* ---- globals, calls, state ---- */

static ti_status op_global(vm *m, uint8_t op)
{
	const char *mod, *name;
	size_t ml, nl;
	if (read_two_lines(m, &mod, &ml, &name, &nl))
		return m->err->code;
	/* load_global and load_inst: an empty line is a bad one, and both decode as strict UTF-8 */
	if (!ml || !nl)
		return FAIL(m, TI_E_CORRUPT, "%s with an empty %s line", ti_pickle_opcode_name(op), ml ? "name" : "module");
	if (!strict_utf8((const uint8_t *)mod, ml) || !strict_utf8((const uint8_t *)name, nl))
		return FAIL(m, TI_E_CORRUPT, "%s names a global that is not UTF-8", ti_pickle_opcode_name(op));
	ti_value *g = make_global(m, mod, ml, name, nl);
	if (!g)
		return NOMEM(m);
	if (op == 'c' && observe(m, g)) /* INST is seen as the call it also is */
		return m->err->code;
	if (op == 'c')
		return push(m, g);
	/* INST: the arguments were pushed above a MARK. */
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	ti_value *args = ti_value_new_seq_taking(m->arena, TI_TUPLE, items, n);
	if (!args)
		return NOMEM(m);
	return call(m, ti_value_ref(g), ti_value_ref(args), NULL, TI_CALL_INST);
}

static ti_status op_stack_global(vm *m, uint8_t op)
{
	(void)op;
	ti_value *mod = NULL, *name = NULL;
	if (pop(m, &name) || pop(m, &mod))
		return m->err->code;
	if ((mod->kind != TI_STR || name->kind != TI_STR) && observe(m, NULL))
		return m->err->code;
	if (mod->kind != TI_STR || name->kind != TI_STR)
		return FAIL(m, TI_E_CORRUPT, "STACK_GLOBAL needs two strings, got %s and %s",
		            ti_kind_name(mod->kind), ti_kind_name(name->kind));
	ti_value *g = make_global(m, mod->as.bytes.data, mod->as.bytes.size, name->as.bytes.data, name->as.bytes.size);
	drop(m, name);
	drop(m, mod);
	if (!g)
		return NOMEM(m);
	if (observe(m, g))
		return m->err->code;
	return push(m, g);
}

static ti_status op_ext(vm *m, uint8_t op)
{
	int width = op == 0x82 ? 1 : op == 0x83 ? 2 : 4;
	const uint8_t *p = NULL;
	if (take(m, (size_t)width, &p))
		return m->err->code;
	/* copyreg's extension registry lives in the writer's process; we can only name the code. */
	char name[32];
	int n = snprintf(name, sizeof(name), "extension_%" PRIu64, le(p, width));
	ti_value *g = make_global(m, "copyreg", 7, name, (size_t)n);
	if (!g)
		return NOMEM(m);
	if (observe(m, g))
		return m->err->code;
	return push(m, g);
}

static ti_status op_reduce(vm *m, uint8_t op)
{
	(void)op;
	ti_value *callable = NULL, *args = NULL;
	if (pop(m, &args) || pop(m, &callable))
		return m->err->code;
	if (args->kind != TI_TUPLE)
		return FAIL(m, TI_E_CORRUPT, "REDUCE arguments are a %s, not a tuple", ti_kind_name(args->kind));
	return call(m, callable, args, NULL, TI_CALL_REDUCE);
}

static ti_status op_newobj(vm *m, uint8_t op)
{
	ti_value *cls = NULL, *args = NULL, *kwargs = NULL;
	if ((op == 0x92 && pop(m, &kwargs)) || pop(m, &args) || pop(m, &cls))
		return m->err->code;
	if (args->kind != TI_TUPLE)
		return FAIL(m, TI_E_CORRUPT, "NEWOBJ arguments are a %s, not a tuple", ti_kind_name(args->kind));
	if (kwargs && kwargs->kind != TI_DICT)
		return FAIL(m, TI_E_CORRUPT, "NEWOBJ_EX keyword arguments are a %s, not a dict", ti_kind_name(kwargs->kind));
	if (kwargs && kwargs->as.dict->count == 0) {
		drop(m, kwargs);
		kwargs = NULL;
	}
	return call(m, cls, args, kwargs, TI_CALL_NEWOBJ);
}

static ti_status op_obj(vm *m, uint8_t op)
{
	(void)op;
	ti_value **items = NULL;
	size_t n = 0;
	if (pop_mark(m, &items, &n))
		return m->err->code;
	if (n == 0)
		return FAIL(m, TI_E_CORRUPT, "OBJ without a class");
	ti_value *cls = items[0], *args = ti_value_new_seq_taking(m->arena, TI_TUPLE, items + 1, n - 1);
	if (!args)
		return NOMEM(m);
	return call(m, cls, ti_value_ref(args), NULL, TI_CALL_INST);
}

static ti_status op_build(vm *m, uint8_t op)
{
	(void)op;
	ti_value *state = NULL, *obj = NULL;
	if (pop(m, &state) || top(m, &obj) || observe(m, obj))
		return m->err->code;
	int handled = 0;
	if (m->hooks && m->hooks->build) {
		ti_status s = m->hooks->build(m->hooks->ctx, m->arena, obj, state, &handled, m->err);
		if (s)
			return s;
	}
	if (handled) {
		drop(m, state);
		return TI_OK;
	}
	switch (obj->kind) {
	case TI_OBJECT:
		drop(m, obj->as.object->state);
		obj->as.object->state = state; /* the stack's reference is the object's now */
		return TI_OK;
	case TI_DICT:
		/* dict subclasses take attributes: OrderedDict's _metadata in a state_dict. */
		if (state->kind == TI_DICT || state->kind == TI_TUPLE) {
			if (ti_dict_set_attributes(m->arena, obj, state, m->err))
				return m->err->code;
			drop(m, state);
			return TI_OK;
		}
		break;
	default:
		break;
	}
	return FAIL(m, TI_E_CORRUPT, "BUILD cannot set the state of a %s", ti_kind_name(obj->kind));
}

static ti_status op_persid(vm *m, uint8_t op)
{
	ti_value *pid;
	if (op == 'P') {
		const char *s;
		size_t n;
		if (read_line(m, &s, &n) || push_str(m, TI_STR, s, n) || pop(m, &pid))
			return m->err->code;
	} else if (pop(m, &pid)) {
		return m->err->code;
	}
	if (observe(m, pid))
		return m->err->code;
	ti_value *out = NULL;
	if (m->hooks && m->hooks->persistent_load) {
		ti_status s = m->hooks->persistent_load(m->hooks->ctx, m->arena, pid, &out, m->err);
		if (s)
			return s;
	}
	if (out) {
		ti_status s = push(m, out);
		drop(m, pid);
		return s;
	}
	out = new_value(m, TI_PERSID);
	if (!out)
		return NOMEM(m);
	out->as.persid = pid; /* the stack's reference is the persistent id's now */
	return push(m, out);
}

static ti_status op_next_buffer(vm *m, uint8_t op)
{
	(void)op;
	return FAIL(m, TI_E_UNSUPPORTED, "pickle needs an out-of-band buffer (protocol 5 NEXT_BUFFER), which a file cannot carry");
}

static ti_status op_readonly_buffer(vm *m, uint8_t op)
{
	(void)op;
	ti_value *v = NULL;
	return top(m, &v); /* makes the buffer on top read-only: nothing to do for metadata */
}

/* ---- the table: one row per opcode, as Lib/pickletools.py lists them ---- */

static const struct opcode_row {
	const char *name;
	op_fn run;
} opcodes[256] = {
	['('] = {"MARK", op_mark},
	['.'] = {"STOP", op_stop},
	['0'] = {"POP", op_pop},
	['1'] = {"POP_MARK", op_pop_mark},
	['2'] = {"DUP", op_dup},
	['F'] = {"FLOAT", op_float_text},
	['I'] = {"INT", op_int_text},
	['J'] = {"BININT", op_binint},
	['K'] = {"BININT1", op_binint},
	['L'] = {"LONG", op_int_text},
	['M'] = {"BININT2", op_binint},
	['N'] = {"NONE", op_none},
	['P'] = {"PERSID", op_persid},
	['Q'] = {"BINPERSID", op_persid},
	['R'] = {"REDUCE", op_reduce},
	['S'] = {"STRING", op_string_text},
	['T'] = {"BINSTRING", op_counted},
	['U'] = {"SHORT_BINSTRING", op_counted},
	['V'] = {"UNICODE", op_unicode_text},
	['X'] = {"BINUNICODE", op_binunicode},
	['a'] = {"APPEND", op_append},
	['b'] = {"BUILD", op_build},
	['c'] = {"GLOBAL", op_global},
	['d'] = {"DICT", op_dict},
	['}'] = {"EMPTY_DICT", op_empty},
	['e'] = {"APPENDS", op_appends},
	['g'] = {"GET", op_memo_text},
	['h'] = {"BINGET", op_binget},
	['i'] = {"INST", op_global},
	['j'] = {"LONG_BINGET", op_long_binget},
	['l'] = {"LIST", op_collect},
	[']'] = {"EMPTY_LIST", op_empty},
	['o'] = {"OBJ", op_obj},
	['p'] = {"PUT", op_memo_text},
	['q'] = {"BINPUT", op_binput},
	['r'] = {"LONG_BINPUT", op_long_binput},
	['s'] = {"SETITEM", op_append},
	['t'] = {"TUPLE", op_collect},
	[')'] = {"EMPTY_TUPLE", op_empty},
	['u'] = {"SETITEMS", op_appends},
	['G'] = {"BINFLOAT", op_binfloat},
	[0x80] = {"PROTO", op_proto},
	[0x81] = {"NEWOBJ", op_newobj},
	[0x82] = {"EXT1", op_ext},
	[0x83] = {"EXT2", op_ext},
	[0x84] = {"EXT4", op_ext},
	[0x85] = {"TUPLE1", op_tuple_n},
	[0x86] = {"TUPLE2", op_tuple_n},
	[0x87] = {"TUPLE3", op_tuple_n},
	[0x88] = {"NEWTRUE", op_bool},
	[0x89] = {"NEWFALSE", op_bool},
	[0x8a] = {"LONG1", op_long_n},
	[0x8b] = {"LONG4", op_long_n},
	['B'] = {"BINBYTES", op_counted},
	['C'] = {"SHORT_BINBYTES", op_counted},
	[0x8c] = {"SHORT_BINUNICODE", op_binunicode},
	[0x8d] = {"BINUNICODE8", op_counted},
	[0x8e] = {"BINBYTES8", op_counted},
	[0x8f] = {"EMPTY_SET", op_empty},
	[0x90] = {"ADDITEMS", op_appends},
	[0x91] = {"FROZENSET", op_collect},
	[0x92] = {"NEWOBJ_EX", op_newobj},
	[0x93] = {"STACK_GLOBAL", op_stack_global},
	[0x94] = {"MEMOIZE", op_memoize},
	[0x95] = {"FRAME", op_frame},
	[0x96] = {"BYTEARRAY8", op_counted},
	[0x97] = {"NEXT_BUFFER", op_next_buffer},
	[0x98] = {"READONLY_BUFFER", op_readonly_buffer},
};

const char *ti_pickle_opcode_name(uint8_t opcode) { return opcodes[opcode].name; }

void ti_pickle_limits_default(ti_pickle_limits *limits)
{
	limits->stack_max = 1u << 20;   /* a million values in flight */
	limits->marks_max = 1u << 16;   /* Python's own recursion stops far sooner */
	limits->memo_max = 1u << 26;
	limits->string_max = 1u << 30;  /* a 1 GiB string is not metadata */
	limits->items_max = 1u << 26;
}

/*
 * The index a GET at p would fetch, if p[0] is BINGET, LONG_BINGET or GET
 * and its argument ends before end; else UINT64_MAX.
 */
static uint64_t get_index(const uint8_t *p, const uint8_t *end)
{
	if (p[0] == 'h')
		return end - p > 1 ? p[1] : UINT64_MAX;
	if (p[0] == 'j')
		return end - p > 4 ? le(p + 1, 4) : UINT64_MAX;
	size_t n = 1;
	while (n <= 18 && p + n < end && p[n] >= '0' && p[n] <= '9')
		n++;
	if (p + n >= end || p[n] != '\n')
		return UINT64_MAX;
	return memo_index_text((const char *)p + 1, n - 1);
}

/*
 * The first pass: which memo entries may ever be fetched. Every byte that
 * reads as a GET opcode counts, wherever it stands: a superset of the GETs
 * the second pass will meet (a byte inside a string only keeps a value
 * that could have gone), found with memchr rather than by decoding 600,000
 * opcodes. A window is cut short of its end by the longest GET, so that no
 * GET straddles two.
 */
static int compare_index(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static ti_status find_fetched(vm *m)
{
	enum { GET_MAX = 20 }; /* 'g', 18 digits, '\n' */
	/*
	 * A byte that reads as LONG_BINGET inside other data names an index of up
	 * to 2^32: the indices kept are those below the pickle's size (Python's
	 * pickler numbers densely) or below MEMO_DENSE, which a hand-made BINPUT
	 * may use in a small pickle, so that such bytes cost no more than that.
	 * Those below the size are a bit each; those above, which only such bytes
	 * and hand-made pickles name, go in a sorted list: as bits, one of them
	 * near 2^20 in a 57 kB pickle cleared 128 KiB (32 page faults).
	 */
	uint64_t dense = m->size > MEMO_DENSE ? m->size : MEMO_DENSE, highest = 0;
	uint64_t limit = m->memo_limit = m->limits.memo_max < dense ? m->limits.memo_max : dense;
	bool any = false;
	for (size_t pos = 0; pos < m->size;) {
		if (m->src && window_at(m, pos, WINDOW))
			return m->err->code;
		const uint8_t *end = m->data + m->avail;
		size_t stop = m->base + m->avail;
		if (stop < m->size)
			stop -= GET_MAX;
		if (memchr(m->data + (pos - m->base), 0x94, stop - pos)) /* MEMOIZE */
			m->memoize = true;
		for (const char *op = "hjg"; *op; op++) {
			const uint8_t *p = m->data + (pos - m->base), *last = m->data + (stop - m->base);
			for (; p < last && (p = memchr(p, *op, (size_t)(last - p))); p++) {
				uint64_t index = get_index(p, end);
				if (index >= limit)
					continue;
				if (index >= m->size) {
					if (m->far_count == m->far_cap) {
						size_t cap = m->far_cap ? 2 * m->far_cap : 16;
						uint64_t *far = realloc(m->far, cap * sizeof(*far));
						if (!far)
							return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
						m->far = far;
						m->far_cap = cap;
					}
					m->far[m->far_count++] = index;
					continue;
				}
				if (bit_set(&m->memo_fetched, index))
					return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
				any = true;
				if (index > highest)
					highest = index;
			}
		}
		pos = stop;
	}
	if (any) {
		m->memo_chunk_count = (size_t)(highest / MEMO_CHUNK) + 1;
		if (!(m->memo_chunks = calloc(m->memo_chunk_count, sizeof(*m->memo_chunks))))
			return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
	}
	if (m->far_count) { /* sorted, each index once */
		qsort(m->far, m->far_count, sizeof(*m->far), compare_index);
		size_t n = 1;
		for (size_t i = 1; i < m->far_count; i++)
			if (m->far[i] != m->far[n - 1])
				m->far[n++] = m->far[i];
		m->far_count = n;
		if (!(m->far_values = calloc(n, sizeof(*m->far_values))))
			return FAIL(m, TI_E_NOMEM, "out of memory growing the pickle memo");
	}
	return TI_OK;
}

static ti_status run(vm *m, ti_value **out, size_t *consumed)
{
	ti_status s = find_fetched(m);
	m->arena_start = m->arena->used;
	while (!s && !m->result) {
		size_t pos = m->pos, at = pos - m->base;
		if (pos >= m->size) {
			s = FAIL(m, TI_E_CORRUPT, "pickle ends without STOP");
			m->op_pos = m->size;
			break;
		}
		m->op_pos = pos;
		uint8_t op;
		if (at < m->avail) { /* the opcode's byte is in the window, as all but one in 64 Ki are */
			op = m->data[at];
			m->pos = pos + 1;
		} else {
			const uint8_t *p;
			if ((s = need(m, 1, &p)))
				break;
			op = *p;
		}
		m->op = op;
		op_fn fn = opcodes[op].run;
		if (!fn) {
			s = FAIL(m, TI_E_CORRUPT, "bad pickle opcode 0x%02x", op);
			break;
		}
		s = fn(m, op);
	}
	if (s)
		ti_error_at(m->err, NULL, (int64_t)m->op_pos);
	else {
		*out = m->result;
		if (consumed)
			*consumed = m->pos;
	}
	free(m->stack);
	free(m->marks);
	free(m->buf);
	free(m->memo_set.words);
	free(m->memo_fetched.words);
	for (size_t i = 0; i < m->memo_chunk_count; i++)
		free(m->memo_chunks[i]);
	free(m->memo_chunks);
	free(m->far);
	free(m->far_values);
	return s;
}

static void vm_init(vm *m, ti_arena *arena, const ti_pickle_hooks *hooks, const ti_pickle_limits *limits,
                    ti_error *err)
{
	memset(m, 0, sizeof(*m));
	m->arena = arena;
	m->hooks = hooks;
	m->err = err;
	ti_error_clear(err);
	if (limits)
		m->limits = *limits;
	else
		ti_pickle_limits_default(&m->limits);
}

ti_status ti_pickle_load(const uint8_t *data, size_t size, ti_arena *arena,
                         const ti_pickle_hooks *hooks, const ti_pickle_limits *limits,
                         ti_value **out, size_t *consumed, ti_error *err)
{
	vm m;
	vm_init(&m, arena, hooks, limits, err);
	m.data = data;
	m.size = m.avail = size;
	return run(&m, out, consumed);
}

ti_status ti_pickle_load_source(const ti_pickle_source *src, ti_arena *arena,
                                const ti_pickle_hooks *hooks, const ti_pickle_limits *limits,
                                ti_value **out, size_t *consumed, ti_error *err)
{
	vm m;
	vm_init(&m, arena, hooks, limits, err);
	if (src->size > SIZE_MAX)
		return TI_FAIL(err, TI_E_LIMIT, "pickle of %" PRIu64 " bytes is too big to read", src->size);
	m.src = src;
	m.size = (size_t)src->size;
	return run(&m, out, consumed);
}
