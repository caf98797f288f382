/* One rank of a simulated data-parallel job, for the job tests
 * (test_job.py): RANK and WORLD_SIZE from the environment, as torchrun
 * sets them, and a barrier shared by the ranks in the file BARRIER (which
 * the test creates: 4096 zero bytes).
 *
 *   e2e-prog-job BARRIER STEPS SLOW EXTRA_WAVES kernel|host
 *
 * Each step: every rank waits at the barrier (so the ranks start the step
 * together, within the barrier's wake-up jitter), opens the range "step",
 * launches k_compute of 100 waves (1 ms with the default model), then
 * ncclDevKernel_AllReduce_Sum_f32 on the same stream, then
 * cudaStreamSynchronize, and closes the range. Rank SLOW (-1: none) is
 * late by EXTRA_WAVES waves: its k_compute runs that much longer
 * ("kernel"), or its host sleeps that long before launching ("host").
 * The simulated GPU runs a kernel for ceil(blocks / SMs) waves and knows
 * nothing of other processes, so the collective's duration is set by its
 * grid from the known schedule, as NCCL's would come out: it starts when
 * this rank's compute ends and spins until the last rank's compute ends,
 * then transfers for 10 waves: EXTRA_WAVES + 10 waves on every rank but
 * the slow one, 10 on the slow one. */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "gpuphase/gpuphase.h"

#define SMS 132 /* GPUSIM_SMS, the test's setting */
#define COMPUTE_WAVES 100
#define TRANSFER_WAVES 10

/* Named by their dynamic symbols; distinct bodies keep them apart. */
volatile int job_sink;
void k_compute(void) {
  job_sink = 1;
}
void ncclDevKernel_AllReduce_Sum_f32(void) {
  job_sink = 2;
}

struct barrier {
  uint32_t count, gen;
};

static void nap(long ns) {
  struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
  nanosleep(&ts, NULL);
}

/* A sense-reversing barrier among the processes mapping b. */
static void barrier_wait(struct barrier *b, uint32_t world) {
  uint32_t gen = __atomic_load_n(&b->gen, __ATOMIC_ACQUIRE);
  if (__atomic_add_fetch(&b->count, 1, __ATOMIC_ACQ_REL) == world) {
    __atomic_store_n(&b->count, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&b->gen, gen + 1, __ATOMIC_RELEASE);
    return;
  }
  while (__atomic_load_n(&b->gen, __ATOMIC_ACQUIRE) == gen)
    nap(20000);
}

static int launch(void (*k)(void), unsigned waves, cudaStream_t s) {
  dim3 grid = {waves * SMS, 1, 1}, block = {128, 1, 1};
  cudaError_t e = cudaLaunchKernel((const void *)k, grid, block, NULL, 0, s);
  if (e != cudaSuccess) fprintf(stderr, "prog_job: launch failed: %d\n", e);
  return e == cudaSuccess;
}

int main(int argc, char **argv) {
  const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
  if (argc != 6 || !rs || !ws) {
    fprintf(stderr, "usage: RANK=r WORLD_SIZE=n e2e-prog-job BARRIER STEPS "
                    "SLOW EXTRA_WAVES kernel|host\n");
    return 2;
  }
  int rank = atoi(rs), world = atoi(ws), steps = atoi(argv[2]);
  int slow = atoi(argv[3]), host = !strcmp(argv[5], "host");
  unsigned extra = (unsigned)atoi(argv[4]);
  int fd = open(argv[1], O_RDWR);
  struct barrier *b =
      fd < 0 ? MAP_FAILED
             : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (b == MAP_FAILED) return perror(argv[1]), 1;
  cudaStream_t s;
  if (cudaStreamCreate(&s) != cudaSuccess) return 1;
  int late = rank == slow;
  for (int i = 0; i < steps; i++) {
    barrier_wait(b, (uint32_t)world);
    gpuphase_range_push("step");
    if (late && host) nap((long)extra * 10000L); /* GPUSIM_WAVE_NS */
    unsigned cw = COMPUTE_WAVES + (late && !host ? extra : 0);
    unsigned nw = TRANSFER_WAVES + (slow >= 0 && !late ? extra : 0);
    if (!launch(k_compute, cw, s) ||
        !launch(ncclDevKernel_AllReduce_Sum_f32, nw, s) ||
        cudaStreamSynchronize(s) != cudaSuccess)
      return 1;
    gpuphase_range_pop();
  }
  cudaStreamDestroy(s);
  printf("rank=%d steps=%d\n", rank, steps);
  return 0;
}
