// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * vmm_pages: does memory mapped through the VMM API in small physical
 * handles cost the GPU time against cudaMalloc or one big handle?  (Issue
 * 12: PyTorch runs on VMM mappings -- expandable segments, libnxquota's
 * tensor route with 2-4 MiB handles -- read a few percent under native in
 * steps/s, inside the H200's noise; if the GPU's TLB reach were the cause,
 * it would show here, without a training loop's noise.)
 *
 *   bash bench/vmm-pages.sh      (builds with nvcc; "skipped" without one)
 *
 * One buffer of --gib GiB (default 4) is reached in five ways:
 * cudaMalloc, one cuMemCreate handle, and handles of 2, 4 and 64 MiB mapped
 * side by side in one reserved range.  Two kernels run over each: a
 * random gather (4-byte loads at random offsets over the whole buffer:
 * the worst case for a TLB) and a streaming copy of the first half to the
 * second (what training mostly does).  Rounds visit the five in turn; each
 * figure is the median over rounds, and each ratio the median of the
 * per-round ratios to cudaMalloc.
 */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <algorithm>
#include <vector>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
	exit(1); } } while (0)
#define CD(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = "?"; \
	cuGetErrorName(r_, &s_); fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_); \
	exit(1); } } while (0)

__global__ void gather(const unsigned *buf, size_t nwords, unsigned long long seed, int iters,
		       unsigned *out)
{
	unsigned long long x = seed ^ (0x9E3779B97F4A7C15ULL * (blockIdx.x * blockDim.x +
								 threadIdx.x + 1));
	unsigned acc = 0;

	for (int i = 0; i < iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		acc += buf[x % nwords];
	}
	if (acc == 0x12345678u)
		*out = acc;	/* keeps the loads */
}

__global__ void copy(const uint4 *src, uint4 *dst, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		dst[i] = src[i];
}

struct mapping {
	const char *name;
	void *p;
	CUdeviceptr va;
	size_t size;
	std::vector<CUmemGenericAllocationHandle> h;
};

static void map_handles(struct mapping *m, size_t size, size_t handle, int dev)
{
	CUmemAllocationProp prop;
	CUmemAccessDesc acc;

	memset(&prop, 0, sizeof(prop));
	memset(&acc, 0, sizeof(acc));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	acc.location = prop.location;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	CD(cuMemAddressReserve(&m->va, size, 0, 0, 0));
	for (size_t off = 0; off < size; off += handle) {
		CUmemGenericAllocationHandle h;

		CD(cuMemCreate(&h, handle, &prop, 0));
		CD(cuMemMap(m->va + off, handle, 0, h, 0));
		m->h.push_back(h);
	}
	CD(cuMemSetAccess(m->va, size, &acc, 1));
	m->p = (void *)m->va;
	m->size = size;
}

static void unmap(struct mapping *m)
{
	if (!m->va) {
		CK(cudaFree(m->p));
		return;
	}
	size_t handle = m->size / m->h.size();

	for (size_t i = 0; i < m->h.size(); i++) {
		CD(cuMemUnmap(m->va + i * handle, handle));
		CD(cuMemRelease(m->h[i]));
	}
	CD(cuMemAddressFree(m->va, m->size));
}

static double med(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	size_t gib = 4, size;
	int rounds = 7, dev = 0;
	size_t free_b = 0, total_b = 0;
	unsigned *out;
	cudaEvent_t e0, e1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--gib") && i + 1 < argc)
			gib = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = atoi(argv[++i]);
	}
	size = gib << 30;
	CK(cudaSetDevice(dev));
	CK(cudaFree(0));
	CK(cudaMemGetInfo(&free_b, &total_b));
	if (size * 2 > free_b / 2) {
		printf("skipped: %zu GiB free, this needs %zu GiB at a time with room to spare\n",
		       free_b >> 30, (size * 2) >> 30);
		return 0;
	}
	CK(cudaMalloc(&out, 4));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));

	const char *names[] = { "cudaMalloc", "one handle", "2 MiB handles", "4 MiB handles",
				"64 MiB handles" };
	const size_t hs[] = { 0, size, 2ULL << 20, 4ULL << 20, 64ULL << 20 };
	const int nk = 5;
	std::vector<double> tg[nk], tc[nk], rg[nk], rc[nk];

	for (int r = 0; r < rounds + 1; r++) {
		double g[nk], c[nk];

		for (int k = 0; k < nk; k++) {
			mapping m = mapping();
			float ms;

			m.name = names[k];
			if (!hs[k]) {
				CK(cudaMalloc(&m.p, size));
				m.size = size;
			} else {
				map_handles(&m, size, hs[k], dev);
			}
			CK(cudaMemset(m.p, 1, size));
			CK(cudaDeviceSynchronize());
			CK(cudaEventRecord(e0));
			gather<<<1056, 256>>>((const unsigned *)m.p, size / 4, 12345 + r, 256, out);
			CK(cudaEventRecord(e1));
			CK(cudaEventSynchronize(e1));
			CK(cudaEventElapsedTime(&ms, e0, e1));
			g[k] = ms;
			CK(cudaEventRecord(e0));
			copy<<<1056, 512>>>((const uint4 *)m.p, (uint4 *)((char *)m.p + size / 2),
					    size / 2 / sizeof(uint4));
			CK(cudaEventRecord(e1));
			CK(cudaEventSynchronize(e1));
			CK(cudaEventElapsedTime(&ms, e0, e1));
			c[k] = ms;
			CK(cudaGetLastError());
			unmap(&m);
		}
		if (!r)
			continue;	/* warm-up round */
		for (int k = 0; k < nk; k++) {
			tg[k].push_back(g[k]);
			tc[k].push_back(c[k]);
			rg[k].push_back(g[k] / g[0]);
			rc[k].push_back(c[k] / c[0]);
		}
	}
	printf("vmm_pages: %zu GiB buffer, %d rounds (medians; ratios: medians of per-round "
	       "ratios to cudaMalloc)\n", gib, rounds);
	printf("  %-16s %14s %8s %14s %8s\n", "mapping", "random gather", "x", "stream copy",
	       "x");
	for (int k = 0; k < nk; k++)
		printf("  %-16s %11.3f ms %8.3f %11.3f ms %8.3f\n", names[k], med(tg[k]),
		       med(rg[k]), med(tc[k]), med(rc[k]));
	return 0;
}
