/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/wait.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_WAIT_H
#define _UK_LINUX_WAIT_H
#include <uk/uk.h>
#endif
