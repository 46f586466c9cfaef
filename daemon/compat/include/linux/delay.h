/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/delay.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_DELAY_H
#define _UK_LINUX_DELAY_H
#include <uk/uk.h>
#endif
