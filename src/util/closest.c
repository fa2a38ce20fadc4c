/*
 * closest.c - the edit distance behind "did you mean" suggestions
 * (optimal string alignment: Levenshtein plus swapped neighbours, as git's
 * help.c weighs typos).
 */
#include <ctype.h>
#include <string.h>

#include "util/closest.h"

#define CLOSEST_MAX 64 /* longer names are never suggested for */

static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t rows[3][CLOSEST_MAX + 1];
	size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
	for (size_t j = 0; j <= nb; j++)
		prev[j] = j;
	for (size_t i = 1; i <= na; i++) {
		cur[0] = i;
		for (size_t j = 1; j <= nb; j++) {
			int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
			size_t best = prev[j - 1] + !same;
			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && prev2[j - 2] + 1 < best)
				best = prev2[j - 2] + 1;
			cur[j] = best;
		}
		size_t *t = prev2;
		prev2 = prev;
		prev = cur;
		cur = t;
	}
	return prev[nb];
}

void ti_closest_init(ti_closest *c, const char *name)
{
	memset(c, 0, sizeof(*c));
	c->name = name;
}

void ti_closest_offer(ti_closest *c, const char *text, size_t len)
{
	size_t n = strlen(c->name);
	if (!len || n > CLOSEST_MAX || len > CLOSEST_MAX)
		return;
	size_t limit = n / 3 > 2 ? n / 3 : 2;
	size_t d = distance(c->name, n, text, len);
	if (d > limit || (c->best && d >= c->best_distance))
		return;
	c->best = text;
	c->best_len = len;
	c->best_distance = d;
}

void ti_closest_offer_signature(ti_closest *c, const char *signature)
{
	ti_closest_offer(c, signature, strcspn(signature, "("));
}

const char *ti_closest_copy(const ti_closest *c, char *buf, size_t size)
{
	if (!c->best || c->best_len >= size)
		return NULL;
	memcpy(buf, c->best, c->best_len);
	buf[c->best_len] = '\0';
	return buf;
}
