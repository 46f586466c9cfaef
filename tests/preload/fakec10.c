// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * fakec10/libc10_cuda.so: only its name matters.  The shim treats a Python
 * process as a PyTorch process when a library with PyTorch's CUDA
 * allocator's soname (libc10_cuda.so) is loaded; faketorch/torch/cuda
 * loads this one, as importing torch loads the real one.
 */
__attribute__((visibility("default"))) int fakec10_loaded(void) { return 1; }
