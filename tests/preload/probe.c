// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Two libraries defining probe(): libprobe1 asks dlsym(RTLD_NEXT) for the
 * next one (built without sibling calls: its own call to dlsym must not
 * be a tail call, or glibc would see its caller's caller).
 */
#define _GNU_SOURCE
#include <dlfcn.h>

int probe(void);
int probe(void) { return PROBE; }
#if PROBE == 1
void *next_probe(void);
void *next_probe(void) { return dlsym(RTLD_NEXT, "probe"); }
#endif
