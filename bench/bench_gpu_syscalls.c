// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * bench_gpu, figure 3: system calls per warm alloc+free pair, counted with
 * ptrace on the calling thread (PTRACE_SYSCALL entry stops between two
 * marker syscalls) in a child that warmed everything untraced first:
 * nxq_alloc + nxq_free and nxq_alloc_async + nxq_free_async, against the
 * baselines cuMemAllocAsync + cuMemFreeAsync on the default pool (release
 * threshold raised, as cudaMallocAsync does) and cuMemAlloc + cuMemFree
 * (200 pairs).  Counts only, no verdict; x86-64 (orig_rax, rdi).
 */
#include <signal.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "bench_gpu.h"

#define MARK_NR	 10000		/* an unused syscall number: ENOSYS, our marker */

static void syscalls_child(void)
{
	struct nxq_ctx *c;
	struct nxq_arena *a;
	CUdevice dev;
	const long n = short_run ? 2000 : 20000;

	setup_cuda(&dev);
	raise_pool_threshold(dev);
	c = unmanaged();
	a = cuda_arena(c, 0, 1ULL << 34, 0);
	warm_loop(M_NXQ, a, n);			/* warm everything untraced */
	warm_loop(M_NXQ_ASYNC, a, n);
	CU(cu->cuStreamSynchronize(st));
	warm_loop(M_CUMEM_ASYNC, NULL, n);
	warm_loop(M_CUMEM, NULL, 200);
	CU(cu->cuStreamSynchronize(st));
	if (ptrace(PTRACE_TRACEME, 0, 0, 0))
		_exit(3);
	raise(SIGSTOP);
	syscall(MARK_NR, 1);
	warm_loop(M_NXQ, a, n);
	syscall(MARK_NR, 2);
	warm_loop(M_NXQ_ASYNC, a, n);
	syscall(MARK_NR, 3);
	warm_loop(M_CUMEM_ASYNC, NULL, n);
	syscall(MARK_NR, 4);
	warm_loop(M_CUMEM, NULL, 200);
	syscall(MARK_NR, 5);
	_exit(0);
}

/*
 * Figure 3: forks the traced child (before the parent touches CUDA) and
 * prints its counts, or "not measured" and why.
 */
void count_syscalls(void)
{
	long counts[8] = { 0 }, phase = 0;
	int status, entering = 1, sig = 0;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid == 0)
		syscalls_child();
	if (waitpid(pid, &status, 0) < 0 || !WIFSTOPPED(status)) {
		printf("  syscalls: not measured (child did not stop: ptrace unavailable?)\n");
		return;
	}
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, sig))
			break;
		sig = 0;
		if (waitpid(pid, &status, 0) < 0 || WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == (SIGTRAP | 0x80)) {
			if (entering) {
				struct user_regs_struct r;

				ptrace(PTRACE_GETREGS, pid, 0, &r);
				if (r.orig_rax == MARK_NR)
					phase = (long)r.rdi;
				else if (phase > 0 && phase < 8)
					counts[phase]++;
			}
			entering = !entering;
		} else {
			sig = WSTOPSIG(status);
			if (sig == SIGSTOP)
				sig = 0;
		}
	}
	if (phase != 5) {
		printf("  syscalls: not measured (tracing ended in phase %ld)\n", phase);
		return;
	}
	printf("  3. system calls per warm alloc+free pair (ptrace, calling thread, size mix):\n");
	{
		double n = short_run ? 2000.0 : 20000.0;

		printf("     nxq_alloc+nxq_free              %8.4f  (%ld in %.0f pairs)\n",
		       counts[1] / n, counts[1], n);
		printf("     nxq_alloc_async+nxq_free_async  %8.4f  (%ld in %.0f pairs)\n",
		       counts[2] / n, counts[2], n);
		printf("     cuMemAllocAsync+cuMemFreeAsync  %8.4f  (%ld in %.0f pairs)\n",
		       counts[3] / n, counts[3], n);
	}
	printf("     cuMemAlloc+cuMemFree            %8.4f  (%ld in 200 pairs)\n",
	       counts[4] / 200.0, counts[4]);
}
