// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The PyTorch peer of bench_gpu's warm pairs: c10::cuda::CUDACachingAllocator
 * raw_alloc/raw_delete (PyTorch's caching allocator, on the current stream
 * of device 0) over the same size mix and window of live allocations as
 * bench_gpu, timed the same way (host time per pair, median of reps).
 * Built by build-torch-peer.sh against the installed PyTorch; run by
 * bench_gpu.  Usage: torch_peer OPS REPS WINDOW.  Prints
 * "torch_peer median_ns_per_pair N", or "torch_peer: reason" and exits 1.
 */
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <vector>

#define NSIZES 4096

static size_t mix[NSIZES];

/* The same mix as bench_gpu.c's make_mix(). */
static void make_mix()
{
	unsigned long long x = 88172645463325252ULL;

	for (int i = 0; i < NSIZES; i++) {
		double lo, hi, u;
		int c;

		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		c = (int)(x % 10);
		u = (double)((x >> 16) % 1000000) / 1e6;
		if (c < 6) { lo = 8; hi = 16; } else if (c < 9) { lo = 16; hi = 21; }
		else { lo = 21; hi = 25; }
		mix[i] = (size_t)std::exp2(lo + (hi - lo) * u);
	}
}

static void loop(long ops, int window)
{
	namespace A = c10::cuda::CUDACachingAllocator;
	std::vector<void *> live(window, nullptr);

	for (long i = 0; i < ops + window; i++) {
		int k = (int)(i % window);

		if (live[k])
			A::raw_delete(live[k]);
		live[k] = i < ops ? A::raw_alloc(mix[i % NSIZES]) : nullptr;
	}
}

int main(int argc, char **argv)
{
	long ops = argc > 1 ? atol(argv[1]) : 200000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	int window = argc > 3 ? atoi(argv[3]) : 32;

	if (ops < 1 || reps < 1 || reps > 64 || window < 1) {
		printf("torch_peer: bad arguments\n");
		return 1;
	}
	make_mix();
	try {
		int n = c10::cuda::device_count();
		std::vector<double> v;

		if (n < 1) {
			printf("torch_peer: no CUDA device\n");
			return 1;
		}
		c10::cuda::CUDACachingAllocator::init(n);
		c10::cuda::set_device(0);
		loop(ops / 4 + 1000, window);		/* warm up: the cache filled */
		for (int r = 0; r < reps; r++) {
			auto t = std::chrono::steady_clock::now();

			loop(ops, window);
			std::chrono::duration<double> d = std::chrono::steady_clock::now() - t;
			v.push_back(d.count() / (double)ops);
		}
		std::sort(v.begin(), v.end());
		printf("torch_peer median_ns_per_pair %.1f\n",
		       (reps % 2 ? v[reps / 2] : (v[reps / 2 - 1] + v[reps / 2]) / 2) * 1e9);
	} catch (const std::exception &e) {
		printf("torch_peer: %s\n", e.what());
		return 1;
	}
	return 0;
}
