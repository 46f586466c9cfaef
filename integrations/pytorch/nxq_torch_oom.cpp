// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The allocator entry point that makes PyTorch raise torch.OutOfMemoryError.
 *
 * PyTorch's CUDAPluggableAllocator does not check what the allocation
 * function returns: a NULL becomes a tensor at address 0 and the first
 * kernel that touches it faults.  PyTorch turns a c10::OutOfMemoryError
 * thrown inside an allocation into torch.OutOfMemoryError (the same class
 * as torch.cuda.OutOfMemoryError), as its own caching allocator does.
 * This file is built only where PyTorch's headers and libc10 are (the
 * Makefile asks python3), into libnxq_torch_oom.so together with
 * nxq_torch.c; the Python module prefers it.
 */
#include <c10/util/Exception.h>

#include "nxq_torch.h"

#define API extern "C" __attribute__((visibility("default")))

API void *nxq_torch_malloc_oom(size_t size, int device, void *stream)
{
	void *p = nxq_torch_malloc(size, device, stream);

	if (!p && size)
		TORCH_CHECK_WITH(OutOfMemoryError, false, "nxquota: ",
				 nxq_torch_thread_error());
	return p;
}
