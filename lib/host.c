// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The host backend: the CUDA VMM shape over one memfd per arena.
 *
 *  reserve     mmap(PROT_NONE, MAP_NORESERVE) of the whole VA range
 *  create      an extent of the memfd (any multiple of the granule),
 *              fallocate()d so the pages exist (and are charged to the
 *              memory cgroup) now
 *  map         mmap(MAP_SHARED|MAP_FIXED) of that extent, still PROT_NONE
 *  set_access  mprotect(PROT_READ|PROT_WRITE)
 *  unmap       mmap(PROT_NONE, MAP_FIXED|MAP_NORESERVE) back over it
 *  release     fallocate(PUNCH_HOLE) and the extent goes to a free list
 *              (reused by a create of the same size)
 *
 * Every mapping of the range is madvise(MADV_DONTFORK): a child process
 * does not inherit the arena's memory (the fork policy: a child never
 * uses its parent's arenas), as liburing's io_uring_ring_dontfork().
 * Handles are memfd offsets.  Host work is synchronous, so every stream
 * fence is complete when recorded.  The backend object is used under its
 * arena's lock only.
 *
 * Layer 1 (a backend, reached through nxq__host_be_ops): calls only err.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

#define HOST_DEFAULT_GRANULE	(2ULL << 20)

struct extent {
	uint64_t off, size;
};

struct host_be {
	int fd;
	uint64_t granule;
	uint64_t next_off;	/* end of the extents handed out so far */
	struct extent *ext;	/* all extents handed out, live or free */
	uint64_t next, ext_alloc;
	struct extent *free_ext;
	uint64_t nfree, free_alloc;
};

static struct extent *ext_find(struct host_be *h, uint64_t off)
{
	for (uint64_t i = 0; i < h->next; i++)
		if (h->ext[i].off == off)
			return &h->ext[i];
	return NULL;
}

static int host_open(const struct nxq_be_cfg *cfg, void **bep, uint64_t *granule,
		     char key[NXQ_DEVICE_KEY_MAX])
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t g = cfg->granule ? cfg->granule : HOST_DEFAULT_GRANULE;
	struct host_be *h;

	if (g % (uint64_t)page)
		return nxq__err(-EINVAL, "nxquota: host granule %llu is not a multiple of the "
				"page size %ld", (unsigned long long)g, page);
	h = calloc(1, sizeof(*h));
	if (!h)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	h->fd = memfd_create("nxquota-arena", MFD_CLOEXEC);
	if (h->fd < 0) {
		int r = -errno;

		free(h);
		return nxq__err(r, "nxquota: memfd_create: %s", strerror(-r));
	}
	h->granule = g;
	*bep = h;
	*granule = g;
	strcpy(key, "host0");
	return 0;
}

static void host_close(void *be)
{
	struct host_be *h = be;

	close(h->fd);
	free(h->free_ext);
	free(h->ext);
	free(h);
}

static int host_reserve(void *be, uint64_t size, uint64_t align, uint64_t *base)
{
	uint64_t over = size + align;
	char *p, *a;

	(void)be;
	p = mmap(NULL, over, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	a = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	if (a > p)
		munmap(p, a - p);
	if (a + size < p + over)
		munmap(a + size, p + over - (a + size));
	madvise(a, size, MADV_DONTFORK);
	*base = (uintptr_t)a;
	return 0;
}

static int host_unreserve(void *be, uint64_t base, uint64_t size)
{
	(void)be;
	return munmap((void *)(uintptr_t)base, size) ? -errno : 0;
}

static int host_create(void *be, uint64_t size, uint64_t *handle)
{
	struct host_be *h = be;
	uint64_t off, i;

	if (!size || size % h->granule)
		return -EINVAL;
	for (i = 0; i < h->nfree; i++)
		if (h->free_ext[i].size == size)
			break;
	if (i == h->nfree && h->next == h->ext_alloc) {
		uint64_t n = h->ext_alloc ? h->ext_alloc * 2 : 64;
		struct extent *p = realloc(h->ext, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->ext = p;
		h->ext_alloc = n;
	}
	if (i < h->nfree) {
		off = h->free_ext[i].off;
	} else {
		off = h->next_off;
		if (ftruncate(h->fd, (off_t)(off + size)))
			return -errno;
	}
	if (fallocate(h->fd, 0, (off_t)off, (off_t)size))
		return -errno;
	if (i < h->nfree) {
		h->free_ext[i] = h->free_ext[--h->nfree];
	} else {
		h->ext[h->next].off = off;
		h->ext[h->next].size = size;
		h->next++;
		h->next_off += size;
	}
	*handle = off;
	return 0;
}

static int host_release(void *be, uint64_t handle)
{
	struct host_be *h = be;
	struct extent *e = ext_find(h, handle);

	if (!e)
		return -EINVAL;
	if (h->nfree == h->free_alloc) {
		uint64_t n = h->free_alloc ? h->free_alloc * 2 : 64;
		struct extent *p = realloc(h->free_ext, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->free_ext = p;
		h->free_alloc = n;
	}
	if (fallocate(h->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)handle,
		      (off_t)e->size))
		return -errno;
	h->free_ext[h->nfree++] = *e;
	return 0;
}

static int host_map(void *be, uint64_t va, uint64_t size, uint64_t handle)
{
	struct host_be *h = be;
	void *p = mmap((void *)(uintptr_t)va, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
		       (off_t)handle);

	if (p == MAP_FAILED)
		return -errno;
	madvise(p, size, MADV_DONTFORK);
	return 0;
}

static int host_set_access(void *be, uint64_t va, uint64_t size)
{
	(void)be;
	return mprotect((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE) ? -errno : 0;
}

static int host_unmap(void *be, uint64_t va, uint64_t size)
{
	void *p;

	(void)be;
	p = mmap((void *)(uintptr_t)va, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	madvise(p, size, MADV_DONTFORK);
	return 0;
}

static int host_quiesce(void *be)
{
	(void)be;
	return 0;	/* host work is synchronous */
}

static int host_fence_record(void *be, void *stream, void **fence)
{
	(void)be; (void)stream;
	*fence = NULL;
	return 0;
}

static int host_fence_query(void *be, void *fence)
{
	(void)be; (void)fence;
	return 1;
}

static int host_fence_wait(void *be, void *fence)
{
	(void)be; (void)fence;
	return 0;
}

static void host_fence_free(void *be, void *fence)
{
	(void)be; (void)fence;
}

const struct nxq_be_ops nxq__host_be_ops = {
	.name = "host",
	.open = host_open,
	.close = host_close,
	.reserve = host_reserve,
	.unreserve = host_unreserve,
	.create = host_create,
	.release = host_release,
	.map = host_map,
	.set_access = host_set_access,
	.unmap = host_unmap,
	.quiesce = host_quiesce,
	.fence_record = host_fence_record,
	.fence_query = host_fence_query,
	.fence_wait = host_fence_wait,
	.fence_free = host_fence_free,
};
