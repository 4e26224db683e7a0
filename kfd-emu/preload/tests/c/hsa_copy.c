/*
 * Moves memory through ROCr on whatever device it finds (under the kfd-emu preload: the
 * emulated GPUs), and checks every byte: hsa_memory_copy host -> VRAM -> host, aligned and
 * misaligned, hsa_amd_memory_fill, hsa_amd_memory_async_copy with a completion signal, and with
 * two GPUs a copy from one GPU's VRAM to the other's. On gfx90a ROCr 5.2.3 runs these as its own
 * blit kernels, which kfd-emu recognises and runs on the host.
 *
 * Built and run by kfd-emu/preload/tests/rocm.rs.
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_check.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MAX_GPUS 8
static hsa_agent_t gpus[MAX_GPUS];
static int ngpus;
static hsa_amd_memory_pool_t vram[MAX_GPUS];

static hsa_status_t collect(hsa_agent_t a, void *data)
{
	(void)data;
	hsa_device_type_t t;
	CHECK(hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t));
	if (t == HSA_DEVICE_TYPE_GPU && ngpus < MAX_GPUS)
		gpus[ngpus++] = a;
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void *data)
{
	hsa_amd_segment_t seg;
	CHECK(hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg));
	if (seg == HSA_AMD_SEGMENT_GLOBAL) {
		*(hsa_amd_memory_pool_t *)data = p;
		return HSA_STATUS_INFO_BREAK;
	}
	return HSA_STATUS_SUCCESS;
}

static void expect_same(const char *what, const unsigned char *a, const unsigned char *b,
			size_t n)
{
	if (memcmp(a, b, n) != 0) {
		fprintf(stderr, "FAIL %s: bytes differ\n", what);
		exit(1);
	}
	printf("%s ok\n", what);
}

/* Waits for an asynchronous copy's completion signal to reach 0. */
static void wait_done(hsa_signal_t done, const char *what)
{
	if (hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
				      HSA_WAIT_STATE_BLOCKED) != 0) {
		fprintf(stderr, "FAIL %s: signal not 0\n", what);
		exit(1);
	}
}

int main(void)
{
	const size_t n = (3 << 20) + 12345;
	CHECK(hsa_init());
	CHECK(hsa_iterate_agents(collect, NULL));
	for (int i = 0; i < ngpus; i++) {
		hsa_status_t s = hsa_amd_agent_iterate_memory_pools(gpus[i], pick_pool, &vram[i]);
		if (s != HSA_STATUS_INFO_BREAK && s != HSA_STATUS_SUCCESS)
			CHECK(s);
	}
	printf("%d gpu(s)\n", ngpus);
	unsigned char *src = malloc(n), *back = malloc(n);
	if (!src || !back)
		return 1;
	for (size_t i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 131 + 7);

	unsigned char *dev;
	CHECK(hsa_amd_memory_pool_allocate(vram[0], n, 0, (void **)&dev));
	CHECK(hsa_memory_copy(dev, src, n));
	memset(back, 0, n);
	CHECK(hsa_memory_copy(back, dev, n));
	expect_same("copy host-vram-host", src, back, n);

	/* Source and destination misaligned differently: ROCr's byte-copy kernel. */
	memset(back, 0, n);
	CHECK(hsa_memory_copy(dev + 3, src + 1, n - 100));
	CHECK(hsa_memory_copy(back, dev + 3, n - 100));
	expect_same("misaligned copy", src + 1, back, n - 100);

	CHECK(hsa_amd_memory_fill(dev, 0xC0FFEE11u, n / 4));
	CHECK(hsa_memory_copy(back, dev, n));
	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t v;
		memcpy(&v, back + i, 4);
		if (v != 0xC0FFEE11u) {
			fprintf(stderr, "FAIL fill: word %zu is %#x\n", i / 4, v);
			return 1;
		}
	}
	printf("fill ok\n");

	/* Asynchronous copy from pinned host memory, completion through a signal. */
	void *pinned;
	CHECK(hsa_amd_memory_lock(src, n, &gpus[0], 1, &pinned));
	hsa_signal_t done;
	CHECK(hsa_signal_create(1, 0, NULL, &done));
	CHECK(hsa_amd_memory_async_copy(dev, gpus[0], pinned, gpus[0], n, 0, NULL, done));
	wait_done(done, "async copy");
	memset(back, 0, n);
	CHECK(hsa_memory_copy(back, dev, n));
	expect_same("async copy", src, back, n);

	if (ngpus > 1) {
		unsigned char *dev1;
		CHECK(hsa_amd_memory_pool_allocate(vram[1], n, 0, (void **)&dev1));
		CHECK(hsa_amd_agents_allow_access(1, &gpus[0], NULL, dev1));
		CHECK(hsa_amd_agents_allow_access(1, &gpus[1], NULL, dev));
		hsa_signal_store_relaxed(done, 1);
		CHECK(hsa_amd_memory_async_copy(dev1, gpus[1], dev, gpus[0], n, 0, NULL, done));
		wait_done(done, "peer copy");
		memset(back, 0, n);
		CHECK(hsa_memory_copy(back, dev1, n));
		expect_same("peer copy", src, back, n);
		CHECK(hsa_amd_memory_pool_free(dev1));
	}

	CHECK(hsa_signal_destroy(done));
	CHECK(hsa_amd_memory_unlock(src));
	CHECK(hsa_amd_memory_pool_free(dev));
	CHECK(hsa_shut_down());
	printf("hsa_shut_down ok\n");
	return 0;
}
