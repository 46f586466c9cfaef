/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/slab.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_SLAB_H
#define _UK_LINUX_SLAB_H
#include <uk/uk.h>
#endif
