/*
 * pickle_writer.c - protocol-2 opcodes with CPython's choice of encodings.
 *
 * Opcode bytes and argument layouts are those of CPython Lib/pickle.py
 * (and pickletools): GLOBAL 'c', BINUNICODE 'X' + u32 length, BININT1 'K',
 * BININT2 'M', BININT 'J', LONG1 0x8a + u8 length, BINPUT 'q', LONG_BINPUT
 * 'r', BINGET 'h', LONG_BINGET 'j', PROTO 0x80. All integers little-endian.
 */
#include "format/pickle_writer.h"

#include <stdlib.h>
#include <string.h>

enum {
	OP_PROTO = 0x80,
	OP_GLOBAL = 'c',
	OP_BINUNICODE = 'X',
	OP_BININT1 = 'K',
	OP_BININT2 = 'M',
	OP_BININT = 'J',
	OP_LONG1 = 0x8a,
	OP_BINPUT = 'q',
	OP_LONG_BINPUT = 'r',
	OP_BINGET = 'h',
	OP_LONG_BINGET = 'j'
};

void ti_pickler_init(ti_pickler *p, size_t max, ti_error *err)
{
	memset(p, 0, sizeof(*p));
	p->max = max;
	p->err = err;
}

void ti_pickler_release(ti_pickler *p)
{
	free(p->data);
	p->data = NULL;
	p->size = p->capacity = 0;
}

uint8_t *ti_pickler_take(ti_pickler *p, size_t *size)
{
	if (p->status)
		return NULL;
	uint8_t *data = p->data;
	*size = p->size;
	p->data = NULL;
	p->size = p->capacity = 0;
	return data;
}

ti_status ti_pickler_status(const ti_pickler *p) { return p->status; }

/* Room for n more bytes, or a sticky failure. */
static bool reserve(ti_pickler *p, size_t n)
{
	if (p->status)
		return false;
	if (n > p->max || p->size > p->max - n) {
		p->status = TI_FAIL(p->err, TI_E_LIMIT, "data.pkl would pass its ceiling of %zu bytes", p->max);
		return false;
	}
	if (p->size + n <= p->capacity)
		return true;
	size_t cap = p->capacity ? p->capacity : 4096;
	while (cap < p->size + n)
		cap = cap > p->max / 2 ? p->max : cap * 2;
	uint8_t *data = realloc(p->data, cap);
	if (!data) {
		p->status = TI_FAIL(p->err, TI_E_NOMEM, "out of memory building data.pkl (%zu bytes)", cap);
		return false;
	}
	p->data = data;
	p->capacity = cap;
	return true;
}

static void put_bytes(ti_pickler *p, const void *bytes, size_t n)
{
	if (reserve(p, n)) {
		memcpy(p->data + p->size, bytes, n);
		p->size += n;
	}
}

static void put_le(ti_pickler *p, uint64_t v, int n)
{
	uint8_t b[8];
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put_bytes(p, b, (size_t)n);
}

void ti_pickler_op(ti_pickler *p, uint8_t opcode) { put_bytes(p, &opcode, 1); }

void ti_pickler_proto(ti_pickler *p, int protocol)
{
	ti_pickler_op(p, OP_PROTO);
	ti_pickler_op(p, (uint8_t)protocol);
}

void ti_pickler_global(ti_pickler *p, const char *module, const char *name)
{
	ti_pickler_op(p, OP_GLOBAL);
	put_bytes(p, module, strlen(module));
	ti_pickler_op(p, '\n');
	put_bytes(p, name, strlen(name));
	ti_pickler_op(p, '\n');
}

void ti_pickler_str(ti_pickler *p, const char *s, size_t len)
{
	if (p->status)
		return;
	/* Protocol 2 has only BINUNICODE, whose length is a u32. */
	if (len > UINT32_MAX) {
		p->status = TI_FAIL(p->err, TI_E_LIMIT, "a string of %zu bytes does not fit a protocol-2 pickle", len);
		return;
	}
	ti_pickler_op(p, OP_BINUNICODE);
	put_le(p, len, 4);
	put_bytes(p, s, len);
}

void ti_pickler_int(ti_pickler *p, int64_t v)
{
	if (v >= 0 && v <= 0xff) {
		ti_pickler_op(p, OP_BININT1);
		put_le(p, (uint64_t)v, 1);
	} else if (v >= 0 && v <= 0xffff) {
		ti_pickler_op(p, OP_BININT2);
		put_le(p, (uint64_t)v, 2);
	} else if (v >= INT32_MIN && v <= INT32_MAX) {
		ti_pickler_op(p, OP_BININT);
		put_le(p, (uint64_t)v, 4);
	} else {
		/* encode_long(): little-endian two's complement in as few bytes as keep the sign. */
		uint64_t u = (uint64_t)v;
		int n = 8;
		while (n > 1) {
			uint8_t top = (uint8_t)(u >> (8 * (n - 1))), next = (uint8_t)(u >> (8 * (n - 2)));
			if (!((top == 0x00 && !(next & 0x80)) || (top == 0xff && (next & 0x80))))
				break;
			n--;
		}
		ti_pickler_op(p, OP_LONG1);
		ti_pickler_op(p, (uint8_t)n);
		put_le(p, u, n);
	}
}

void ti_pickler_bool(ti_pickler *p, bool v) { ti_pickler_op(p, v ? TI_PICKLER_NEWTRUE : TI_PICKLER_NEWFALSE); }

/* A memo index in one byte when it fits (BINPUT, BINGET), else in four. */
static void memo_op(ti_pickler *p, uint8_t short_op, uint8_t long_op, uint32_t index)
{
	ti_pickler_op(p, index < 256 ? short_op : long_op);
	put_le(p, index, index < 256 ? 1 : 4);
}

uint32_t ti_pickler_put(ti_pickler *p)
{
	if (p->status)
		return 0;
	if (p->memo_count == UINT32_MAX) {
		p->status = TI_FAIL(p->err, TI_E_LIMIT, "data.pkl needs more memo entries than a pickle can index");
		return 0;
	}
	uint32_t index = p->memo_count++;
	memo_op(p, OP_BINPUT, OP_LONG_BINPUT, index);
	return index;
}

void ti_pickler_get(ti_pickler *p, uint32_t index) { memo_op(p, OP_BINGET, OP_LONG_BINGET, index); }
