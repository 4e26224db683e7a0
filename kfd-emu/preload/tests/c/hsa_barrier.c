/*
 * Drives ROCr through its public API on whatever device it finds (under the kfd-emu preload:
 * the emulated GPUs): hsa_init, agent enumeration with names and ISAs, then on every GPU an AQL
 * queue, a barrier-AND packet with a completion signal written by hand as the HSA spec says
 * (write index, body, header stored last with release, doorbell), a wait on the signal, and
 * teardown; then it pins a malloc'd buffer for the GPUs (hsa_amd_memory_lock: a userptr
 * registration whose GPU address differs from the host one). Prints one line per step and exits non-zero on the first failure.
 *
 * With "--timing" after the round count it also prints the latency of each round trip (from
 * resetting the signal to the wait returning) as percentiles, for examples/rocr_roundtrip.rs;
 * a further number is a pause in microseconds before each round (the device idles meanwhile).
 *
 * Built and run by kfd-emu/preload/tests/rocm.rs; also usable alone:
 *   cc hsa_barrier.c -o hsa_barrier -lhsa-runtime64 && LD_PRELOAD=... ./hsa_barrier [rounds]
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include "hsa_check.h"
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


#define MAX_AGENTS 16

struct agents {
	hsa_agent_t gpu[MAX_AGENTS];
	int gpus;
	int total;
};

static hsa_status_t print_isa(hsa_isa_t isa, void *data)
{
	(void)data;
	uint32_t len = 0;
	CHECK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len));
	char *name = calloc(1, len + 1);
	if (!name)
		return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
	CHECK(hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name));
	printf("  isa %s\n", name);
	free(name);
	return HSA_STATUS_SUCCESS;
}

static hsa_status_t collect(hsa_agent_t agent, void *data)
{
	struct agents *a = data;
	char name[64] = {0};
	hsa_device_type_t type;
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_NAME, name));
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type));
	printf("agent %s (%s)\n", name, type == HSA_DEVICE_TYPE_GPU ? "gpu" : "cpu");
	CHECK(hsa_agent_iterate_isas(agent, print_isa, NULL));
	a->total++;
	if (type == HSA_DEVICE_TYPE_GPU && a->gpus < MAX_AGENTS)
		a->gpu[a->gpus++] = agent;
	return HSA_STATUS_SUCCESS;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void print_timing(uint64_t *ns, int n)
{
	qsort(ns, n, sizeof(*ns), cmp_u64);
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += ns[i];
	printf("roundtrip_ns p50 %llu p99 %llu mean %llu n %d\n",
	       (unsigned long long)ns[(n - 1) / 2], (unsigned long long)ns[(n - 1) * 99 / 100],
	       (unsigned long long)(sum / n), n);
}

static void barrier_round_trip(hsa_agent_t agent, int rounds, int timing, long pause_us)
{
	uint64_t *ns = timing ? calloc(rounds, sizeof(*ns)) : NULL;
	/* After idle: how long the doorbell store itself takes (a trapped store faults). */
	uint64_t *bell = timing && pause_us > 0 ? calloc(rounds, sizeof(*bell)) : NULL;
	if (timing && !ns) {
		fprintf(stderr, "FAIL out of memory\n");
		exit(1);
	}
	uint32_t size = 0;
	CHECK(hsa_agent_get_info(agent, HSA_AGENT_INFO_QUEUE_MIN_SIZE, &size));
	if (size < 64)
		size = 64;
	hsa_queue_t *queue = NULL;
	CHECK(hsa_queue_create(agent, size, HSA_QUEUE_TYPE_SINGLE, NULL, NULL, UINT32_MAX,
			       UINT32_MAX, &queue));
	printf("queue created: %u packets\n", queue->size);
	/* Half the CUs (hsa_amd_queue_cu_set_mask: KFD's SET_CU_MASK). */
	uint32_t cu_mask[4] = {0x55555555u, 0x55555555u, 0x55555555u, 0x55555555u};
	CHECK(hsa_amd_queue_cu_set_mask(queue, 128, cu_mask));
	printf("cu mask set\n");

	hsa_signal_t done;
	CHECK(hsa_signal_create(1, 0, NULL, &done));
	for (int r = 0; r < rounds; r++) {
		if (pause_us > 0) {
			struct timespec p = {pause_us / 1000000, (pause_us % 1000000) * 1000};
			nanosleep(&p, NULL);
		}
		/* The reset belongs to the round trip: a runtime reusing its signal pays it (kfdrt's
		 * figure includes its own). */
		uint64_t t0 = now_ns();
		hsa_signal_store_relaxed(done, 1);
		uint64_t index = hsa_queue_add_write_index_relaxed(queue, 1);
		/* The ring never fills here: one packet in flight at a time. */
		hsa_barrier_and_packet_t *slot =
			(hsa_barrier_and_packet_t *)queue->base_address + (index & (queue->size - 1));
		/* Body first; the header (with the packet type) last, as one release store. */
		memset((char *)slot + 4, 0, sizeof(*slot) - 4);
		slot->completion_signal = done;
		uint16_t header = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) |
				  (1 << HSA_PACKET_HEADER_BARRIER) |
				  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
				  (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
		__atomic_store_n((uint32_t *)slot, (uint32_t)header, __ATOMIC_RELEASE);
		uint64_t rung = now_ns();
		hsa_signal_store_screlease(queue->doorbell_signal, (hsa_signal_value_t)index);
		if (bell)
			bell[r] = now_ns() - rung;
		hsa_signal_value_t v;
		if (pause_us > 0) {
			/* After an idle spell the figure is the device's: how soon the doorbell is
			 * noticed and the packet runs. ROCr's blocking wait would add its own
			 * wake-up path, so this polls the value. */
			while ((v = hsa_signal_load_scacquire(done)) != 0)
				;
		} else {
			v = hsa_signal_wait_scacquire(done, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
						      HSA_WAIT_STATE_BLOCKED);
		}
		if (ns)
			ns[r] = now_ns() - t0;
		if (v != 0) {
			fprintf(stderr, "FAIL barrier %d: signal value %ld\n", r, (long)v);
			exit(1);
		}
	}
	if (ns) {
		print_timing(ns, rounds);
		free(ns);
	}
	if (bell) {
		qsort(bell, rounds, sizeof(*bell), cmp_u64);
		printf("doorbell_store_ns p50 %llu p99 %llu\n", (unsigned long long)bell[(rounds - 1) / 2],
		       (unsigned long long)bell[(rounds - 1) * 99 / 100]);
		free(bell);
	}
	printf("barrier-AND completed %d time(s)\n", rounds);
	CHECK(hsa_signal_destroy(done));
	CHECK(hsa_queue_destroy(queue));
	printf("queue destroyed\n");
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 3;
	int timing = argc > 2 && strcmp(argv[2], "--timing") == 0;
	long pause_us = timing && argc > 3 ? atol(argv[3]) : 0;
	if (rounds < 1) {
		fprintf(stderr, "FAIL rounds must be at least 1\n");
		return 1;
	}
	CHECK(hsa_init());
	printf("hsa_init ok\n");
	struct agents a = {0};
	CHECK(hsa_iterate_agents(collect, &a));
	printf("%d agent(s), %d gpu(s)\n", a.total, a.gpus);
	if (a.gpus == 0) {
		fprintf(stderr, "FAIL no GPU agent\n");
		return 1;
	}
	for (int i = 0; i < a.gpus; i++)
		barrier_round_trip(a.gpu[i], rounds, timing, pause_us);
	/* Pin ordinary heap memory (not page aligned) for every GPU. */
	size_t len = (1 << 20) + 100;
	char *heap = malloc(len);
	if (!heap) {
		fprintf(stderr, "FAIL out of memory\n");
		return 1;
	}
	void *gpu_ptr = NULL;
	CHECK(hsa_amd_memory_lock(heap + 1, len - 1, a.gpu, a.gpus, &gpu_ptr));
	if (!gpu_ptr) {
		fprintf(stderr, "FAIL hsa_amd_memory_lock gave no GPU address\n");
		return 1;
	}
	CHECK(hsa_amd_memory_unlock(heap + 1));
	free(heap);
	printf("memory lock ok\n");
	CHECK(hsa_shut_down());
	printf("hsa_shut_down ok\n");
	return 0;
}
