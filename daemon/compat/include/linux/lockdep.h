/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/lockdep.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_LOCKDEP_H
#define _UK_LINUX_LOCKDEP_H
#include <uk/uk.h>
#endif
