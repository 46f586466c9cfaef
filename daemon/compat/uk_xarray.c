// SPDX-License-Identifier: GPL-2.0
/*
 * uk: the xarray, as a sorted array of (index, entry) under a mutex.  See
 * include/uk/uk.h.
 */
#include <uk/uk.h>
#include <uk/internal.h>

/* --------------------------------------------------------------- xarray */

void xa_init(struct xarray *xa)
{
	pthread_mutex_init(&xa->lock, NULL);
	xa->idx = NULL;
	xa->ent = NULL;
	xa->n = 0;
	xa->cap = 0;
}

void xa_destroy(struct xarray *xa)
{
	pthread_mutex_lock(&xa->lock);
	free(xa->idx);
	free(xa->ent);
	xa->idx = NULL;
	xa->ent = NULL;
	xa->n = 0;
	xa->cap = 0;
	pthread_mutex_unlock(&xa->lock);
}

/* The first slot whose index is >= @index (xa->lock held). */
static size_t uk_xa_pos(struct xarray *xa, unsigned long index)
{
	size_t lo = 0, hi = xa->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (xa->idx[mid] < index)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void *xa_load(struct xarray *xa, unsigned long index)
{
	void *e = NULL;
	size_t p;

	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index)
		e = xa->ent[p];
	pthread_mutex_unlock(&xa->lock);
	return e;
}

static int uk_xa_put(struct xarray *xa, unsigned long index, void *entry,
		     gfp_t gfp, bool replace, void **old)
{
	size_t p;

	*old = NULL;
	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index) {
		*old = xa->ent[p];
		if (!replace) {
			pthread_mutex_unlock(&xa->lock);
			return -EBUSY;
		}
		xa->ent[p] = entry;
		pthread_mutex_unlock(&xa->lock);
		return 0;
	}
	if (xa->n == xa->cap) {
		size_t cap = xa->cap ? 2 * xa->cap : 16;
		unsigned long *idx;
		void **ent;

		pthread_mutex_unlock(&xa->lock);
		idx = uk_kmalloc(cap * sizeof(*idx), gfp, __FILE__, __LINE__);
		ent = uk_kmalloc(cap * sizeof(*ent), gfp, __FILE__, __LINE__);
		if (!idx || !ent) {
			free(idx);
			free(ent);
			return -ENOMEM;
		}
		pthread_mutex_lock(&xa->lock);
		if (xa->cap >= cap) {	/* grown meanwhile */
			free(idx);
			free(ent);
		} else {
			if (xa->n) {
				memcpy(idx, xa->idx, xa->n * sizeof(*idx));
				memcpy(ent, xa->ent, xa->n * sizeof(*ent));
			}
			free(xa->idx);
			free(xa->ent);
			xa->idx = idx;
			xa->ent = ent;
			xa->cap = cap;
		}
		pthread_mutex_unlock(&xa->lock);
		return uk_xa_put(xa, index, entry, gfp, replace, old);
	}
	memmove(&xa->idx[p + 1], &xa->idx[p], (xa->n - p) * sizeof(*xa->idx));
	memmove(&xa->ent[p + 1], &xa->ent[p], (xa->n - p) * sizeof(*xa->ent));
	xa->idx[p] = index;
	xa->ent[p] = entry;
	xa->n++;
	pthread_mutex_unlock(&xa->lock);
	return 0;
}

int xa_insert(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	void *old;

	if (!entry)
		return -EINVAL;	/* reserving an index is not modelled */
	return uk_xa_put(xa, index, entry, gfp, false, &old);
}

void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	void *old;
	int err;

	if (!entry)
		return xa_erase(xa, index);
	err = uk_xa_put(xa, index, entry, gfp, true, &old);
	return err ? ERR_PTR(err) : old;	/* xa_err() is not modelled */
}

void *xa_erase(struct xarray *xa, unsigned long index)
{
	void *e = NULL;
	size_t p;

	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, index);
	if (p < xa->n && xa->idx[p] == index) {
		e = xa->ent[p];
		xa->n--;
		memmove(&xa->idx[p], &xa->idx[p + 1],
			(xa->n - p) * sizeof(*xa->idx));
		memmove(&xa->ent[p], &xa->ent[p + 1],
			(xa->n - p) * sizeof(*xa->ent));
	}
	pthread_mutex_unlock(&xa->lock);
	return e;
}

bool xa_empty(struct xarray *xa)
{
	bool e;

	pthread_mutex_lock(&xa->lock);
	e = !xa->n;
	pthread_mutex_unlock(&xa->lock);
	return e;
}

static void *uk_xa_find(struct xarray *xa, unsigned long *index,
			unsigned long max, bool after)
{
	void *e = NULL;
	size_t p;

	if (after && *index == ULONG_MAX)
		return NULL;
	pthread_mutex_lock(&xa->lock);
	p = uk_xa_pos(xa, after ? *index + 1 : *index);
	if (p < xa->n && xa->idx[p] <= max) {
		*index = xa->idx[p];
		e = xa->ent[p];
	}
	pthread_mutex_unlock(&xa->lock);
	return e;
}

void *xa_find(struct xarray *xa, unsigned long *index, unsigned long max,
	      unsigned int filter)
{
	(void)filter;
	return uk_xa_find(xa, index, max, false);
}

void *xa_find_after(struct xarray *xa, unsigned long *index,
		    unsigned long max, unsigned int filter)
{
	(void)filter;
	return uk_xa_find(xa, index, max, true);
}
