/* closest.h - "did you mean": the known name nearest to a misspelt one. */
#ifndef TINSPECT_UTIL_CLOSEST_H
#define TINSPECT_UTIL_CLOSEST_H

#include <stddef.h>

/*
 * Keeps the best candidate offered so far: the smallest edit distance
 * (insert, delete, substitute, swap neighbours; letter case costs nothing),
 * ties to the first offered. Names farther than a third of their length
 * (at least 2 edits) are no suggestion.
 */
typedef struct ti_closest {
	const char *name;    /* what was asked for */
	const char *best;    /* NULL while nothing is close */
	size_t best_distance;
	size_t best_len;     /* length of best up to '(' (signatures) */
} ti_closest;

void ti_closest_init(ti_closest *c, const char *name);
/* Offers a candidate: the first len bytes of text. */
void ti_closest_offer(ti_closest *c, const char *text, size_t len);
/* Offers a signature's name: "conv2d(Tensor input, ...)" offers "conv2d". */
void ti_closest_offer_signature(ti_closest *c, const char *signature);
/* The best candidate copied into buf, or NULL when none is close or it does not fit. */
const char *ti_closest_copy(const ti_closest *c, char *buf, size_t size);

#endif
