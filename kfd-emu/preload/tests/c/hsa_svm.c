/*
 * Shared virtual memory through ROCr's API (libhsakmt's AMDKFD_IOC_SVM, whose request size
 * carries the attributes): ask whether the system has SVM, give a GPU access to mmapped host
 * memory with a preferred location, read the attributes back, prefetch the range to the GPU
 * and wait for it; unmap it, map fresh memory there and see the range gone.
 *
 * Built and run by kfd-emu/preload/tests/rocm.rs.
 */
#define _GNU_SOURCE
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

static hsa_agent_t gpu;
static int found;

static hsa_status_t collect(hsa_agent_t a, void *data)
{
	(void)data;
	hsa_device_type_t t;
	CHECK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
	if (t == HSA_DEVICE_TYPE_GPU && !found) {
		gpu = a;
		found = 1;
	}
	return HSA_STATUS_SUCCESS;
}

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	CHECK(hsa_init());
	CHECK(hsa_iterate_agents(collect, NULL));
	if (!found) {
		fprintf(stderr, "FAIL no GPU\n");
		return 1;
	}
	bool svm = false;
	CHECK(hsa_system_get_info(HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED, &svm));
	printf("svm supported %d\n", (int)svm);
	size_t len = 2 << 20;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		fprintf(stderr, "FAIL mmap\n");
		return 1;
	}
	hsa_amd_svm_attribute_pair_t set[] = {
		{HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu.handle},
		{HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, gpu.handle},
	};
	CHECK(hsa_amd_svm_attributes_set(p, len, set, 2));
	printf("attributes set\n");
	hsa_amd_svm_attribute_pair_t get[] = {
		{HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, 0},
		{HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu.handle},
	};
	CHECK(hsa_amd_svm_attributes_get(p, len, get, 2));
	printf("preferred is the gpu %d\n", get[0].value == gpu.handle);
	printf("access %#llx\n", (unsigned long long)get[1].attribute);
	hsa_signal_t done;
	CHECK(hsa_signal_create(1, 0, NULL, &done));
	CHECK(hsa_amd_svm_prefetch_async(p, len, gpu, 0, NULL, done));
	if (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
				      HSA_WAIT_STATE_BLOCKED) != 0) {
		fprintf(stderr, "FAIL prefetch never completed\n");
		return 1;
	}
	printf("prefetched\n");
	CHECK(hsa_signal_destroy(done));
	/* munmap goes through the driver's MMU notifier: the range is gone, and fresh memory at
	 * the same address starts with no access. */
	munmap(p, len);
	void *q = mmap(p, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (q != p) {
		fprintf(stderr, "FAIL mmap again at %p\n", p);
		return 1;
	}
	hsa_amd_svm_attribute_pair_t again[] = {
		{HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu.handle},
	};
	CHECK(hsa_amd_svm_attributes_get(q, len, again, 1));
	printf("access after remap %#llx\n", (unsigned long long)again[0].attribute);
	munmap(q, len);
	CHECK(hsa_shut_down());
	printf("done\n");
	return 0;
}
