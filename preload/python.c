// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Python: whether this process is a PyTorch one (py_torch_locked(),
 * decided once under S.lock) and Python's C API found with
 * dlsym(RTLD_DEFAULT) on the way (P), for torch.c.
 *
 * Layer 1: calls resolve.c and state.c.
 */
#include "shim.h"

struct nxqp_py P;

/* With S.lock held: 1 when this is a PyTorch process (decided once). */
int py_torch_locked(void)
{
	const char *env = getenv("NXQ_PRELOAD_TORCH");
	void *h;

	if (S.py_torch >= 0)
		return S.py_torch;
	S.py_torch = 0;
	if ((env && !strcmp(env, "off")) || !R(R_cuCtxGetDevice) || !real_dlsym)
		return 0;
#define PYSYM(f, n) (*(void **)&P.f = real_dlsym(RTLD_DEFAULT, n))
	if (!PYSYM(is_init, "Py_IsInitialized") || !PYSYM(add_pending, "Py_AddPendingCall") ||
	    !PYSYM(moddict, "PyImport_GetModuleDict") ||
	    !PYSYM(dict_get, "PyDict_GetItemString") ||
	    !PYSYM(call_method, "PyObject_CallMethod") || !PYSYM(is_true, "PyObject_IsTrue") ||
	    !PYSYM(decref, "Py_DecRef") || !PYSYM(err_clear, "PyErr_Clear"))
		return 0;	/* not Python */
#undef PYSYM
	if (!P.is_init())
		return 0;
	h = dlopen("libc10_cuda.so", RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;	/* Python without PyTorch's CUDA allocator */
	dlclose(h);
	S.py_torch = 1;
	return 1;
}
