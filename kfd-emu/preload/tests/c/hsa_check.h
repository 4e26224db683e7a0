/* Shared by the ROCr test programs: CHECK(call) ends the program with the HSA status string
 * when an HSA call fails. */
#ifndef KFD_EMU_HSA_CHECK_H
#define KFD_EMU_HSA_CHECK_H

#include <hsa/hsa.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                        \
	do {                                                                               \
		hsa_status_t s_ = (call);                                                  \
		if (s_ != HSA_STATUS_SUCCESS) {                                            \
			const char *msg_ = NULL;                                           \
			hsa_status_string(s_, &msg_);                                      \
			fprintf(stderr, "FAIL %s: %#x %s\n", #call, s_, msg_ ? msg_ : ""); \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

#endif
