// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Tracking: the sharded hash of what the process holds (pointers,
 * handles, mappings, contexts: struct ent), with one spare entry per
 * thread so that a warm allocation/free pair allocates nothing.  Owns the
 * tables and their shard locks; an entry belongs to whoever untracked it.
 *
 * Layer 1: calls nothing of the shim's.
 */
#include "shim.h"

/* ---- the pointer/handle hash ---- */

struct ent *tab[NKIND][1U << HBITS];
pthread_mutex_t shard[NSHARD];
pthread_once_t shard_once = PTHREAD_ONCE_INIT;
long tracked[NSHARD];	/* entries per shard, under its lock (no atomic per pair) */

void shard_init(void)
{
	for (int i = 0; i < NSHARD; i++)
		pthread_mutex_init(&shard[i], NULL);
}

unsigned int hidx(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return (unsigned int)(k & ((1U << HBITS) - 1));
}

/*
 * One entry kept per thread: a warm allocation/free pair reuses it instead
 * of a malloc() and a free() (a thread that ends leaves its one entry).
 */
static __thread struct ent *spare __attribute__((tls_model("initial-exec")));

void ent_free(struct ent *e)
{
	if (!spare)
		spare = e;
	else
		free(e);
}

/*
 * Remember key (h: a mapping's handle entry, else NULL; pend: allocated
 * while no authority answered, not charged): 0, or -ENOMEM.
 */
int track(int kind, uint64_t key, uint64_t bytes, int dev, struct ent *h, int pend)
{
	struct ent *e = spare;
	unsigned int i = hidx(key);

	if (e)
		spare = NULL;
	else
		e = malloc(sizeof(*e));

	if (!e)
		return -ENOMEM;
	e->key = key;
	e->bytes = bytes;
	e->dev = dev;
	e->hst = 0;
	e->pend = pend;
	e->h = h;
	pthread_mutex_lock(&shard[i % NSHARD]);
	e->next = tab[kind][i];
	tab[kind][i] = e;
	tracked[i % NSHARD]++;
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return 0;
}

/* Take key's entry out; NULL if not tracked. */
struct ent *untrack(int kind, uint64_t key)
{
	unsigned int i = hidx(key);
	struct ent **pp, *e = NULL;

	pthread_mutex_lock(&shard[i % NSHARD]);
	for (pp = &tab[kind][i]; *pp; pp = &(*pp)->next)
		if ((*pp)->key == key) {
			e = *pp;
			*pp = e->next;
			tracked[i % NSHARD]--;
			break;
		}
	pthread_mutex_unlock(&shard[i % NSHARD]);
	return e;
}

void retrack(int kind, struct ent *e)
{
	unsigned int i = hidx(e->key);

	pthread_mutex_lock(&shard[i % NSHARD]);
	e->next = tab[kind][i];
	tab[kind][i] = e;
	tracked[i % NSHARD]++;
	pthread_mutex_unlock(&shard[i % NSHARD]);
}
