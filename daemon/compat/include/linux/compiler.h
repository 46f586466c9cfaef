/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/compiler.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_COMPILER_H
#define _UK_LINUX_COMPILER_H
#include <uk/uk.h>
#endif
