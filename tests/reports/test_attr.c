/* Attribution engine on hand-built timelines. Every expected number is
 * worked out by hand in the comment above its check (intervals in ns,
 * half-open). */
#include <stdio.h>
#include <string.h>

#include "tl.h"

enum { LAUNCH = 1, SYNC, MEMCPY, MEMCPY_ASYNC, QUERY, MALLOC, FREE, HOSTALLOC,
       FREEHOST, RESET };
enum { S_GEMM = 10, S_NCCL, S_STEP, S_FWD, S_WHY, S_SMALL };

static void base(struct tl *t) {
  tl_init(t);
  static const char *names[] = {
      "",           "cudaLaunchKernel", "cudaDeviceSynchronize",
      "cudaMemcpy", "cudaMemcpyAsync",  "cudaGetDevice",
      "cudaMalloc", "cudaFree",         "cudaHostAlloc",
      "cudaFreeHost", "cudaDeviceReset"};
  static const uint64_t cls[] = {0,
                                 GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC,
                                 GPUPHASE_API_SYNC,
                                 GPUPHASE_API_COPY,
                                 GPUPHASE_API_COPY | GPUPHASE_API_ASYNC,
                                 GPUPHASE_API_QUERY,
                                 GPUPHASE_API_ALLOC,
                                 GPUPHASE_API_FREE,
                                 GPUPHASE_API_ALLOC | GPUPHASE_API_HOSTMEM,
                                 GPUPHASE_API_FREE | GPUPHASE_API_HOSTMEM,
                                 GPUPHASE_API_SYNC | GPUPHASE_API_RESET};
  for (uint64_t i = 1; i <= RESET; i++) {
    tl_str(t, i, names[i]);
    tl_api_def(t, i, i, cls[i]);
  }
  tl_str(t, S_GEMM, "gemm");
  tl_str(t, S_NCCL, "ncclAllReduce_sum_f32");
  tl_str(t, S_STEP, "step");
  tl_str(t, S_FWD, "fwd");
  tl_str(t, S_WHY, "CUPTI unavailable");
  tl_str(t, S_SMALL, "small");
}

/* One thread, one device: every category once.
 *   [100,150) launch call; kernel [140,400); sync call [160,420);
 *   launch [500,520); kernel [600,700); sync memcpy [710,800) with its
 *   H2D copy [720,790).  Window [100,800) = 700:
 *   launch  [100,140) 40 + [500,520) 20            = 60
 *   kernel  [140,400) 260 + [600,700) 100          = 360
 *   sync    [400,420) 20 + [710,720) 10 + [790,800) 10 = 40
 *   host    [420,500) 80 + [520,600) 80 + [700,710) 10 = 170
 *   transfer [720,790) 70 (all H2D)
 * Thread: submit 50+20, blocked 260+90, cpu 700-420. */
static void test_basic(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 100, 150, 0, 0);
  tl_kernel(&t, 0, 140, 400, S_GEMM, 10, 128);
  tl_api(&t, 1, SYNC, 160, 420, 0, 0);
  tl_api(&t, 1, LAUNCH, 500, 520, 0, 0);
  tl_kernel(&t, 0, 600, 700, S_GEMM, 10, 128);
  tl_api(&t, 1, MEMCPY, 710, 800, 0, 0);
  tl_copy(&t, 0, 720, 790, 700, GPUPHASE_COPY_HTOD, TL_PINNED, TL_DEVMEM, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(r->ndev, 1);
  EQ(r->degraded, 0);
  EQ(d->window_ns, 700);
  CATS(d->bd, 360, 70, 60, 40, 170);
  EQ(d->bd.sub[GP_SUB_XFER + GP_XFER_H2D], 70);
  EQ(d->bd.sub[GP_SUB_COMPUTE], 360);
  const struct gp_thread_res *th = tl_thr(r, 1);
  EQ(th->submit, 70);
  EQ(th->blocked, 350);
  EQ(th->cpu, 280);
  EQ(th->calls, 4);
  EQ(tl_apires(r, "cudaLaunchKernel")->count, 2);
  EQ(tl_apires(r, "cudaLaunchKernel")->total, 70);
  EQ(tl_apires(r, "cudaLaunchKernel")->blocked, 0);
  EQ(tl_apires(r, "cudaDeviceSynchronize")->blocked, 260);
  EQ(tl_apires(r, "cudaMemcpy")->blocked, 90);
  const struct gp_kernel_res *k = tl_kern(r, "gemm");
  EQ(k->count, 2);
  EQ(k->total, 360);
  EQ(gp_hist_pct(&k->dur, 50), 100);
  EQ(gp_hist_pct(&k->dur, 95), 260);
  NEAR(d->util.busy_pct, 100.0 * 360 / 700, 1e-9);
  /* 700 bytes in 70 ns = 10 GB/s */
  EQ(d->copies[GP_XFER_H2D].bytes, 700);
  EQ(d->copies[GP_XFER_H2D].ns, 70);
  EQ(d->copies[GP_XFER_H2D].pinned, 1);
  gp_res_free(r);
  tl_free(&t);
}

/* Overlapping kernels on two streams, a copy under them, a memset alone,
 * idle edges at both ends; 100 SMs.
 *   launches [1000,1010) [1010,1020); async copy call [1020,1030) whose pinned
 *   H2D copy runs [1500,1800) (call ends first: not blocking);
 *   kernel A [1100,1600) 50 blocks x 256 threads, 64 regs;
 *   kernel B [1400,2000) 200 blocks x 128 threads, 10000 B static smem;
 *   memset [2100,2200); sync call [2000,2500).  Window [1000,2500) = 1500:
 *   launch [1000,1030) 30; host [1030,1100) 70; kernel [1100,2000) 900;
 *   sync [2000,2100) 100 + [2200,2500) 300 = 400; transfer (memset) 100.
 * Coverage: A covers 0.5, B 1: [1100,1400) 0.5x300 = 150, [1400,1600)
 *   min(1, 1.5) x 200 = 200, [1600,2000) 400: 750 of 1500 = 50%.
 * Occupancy (64 warps/SM): A 8 warps/block, 2048 regs/warp -> 32 warps ->
 *   4 blocks -> 32/64 = 0.5; B 4 warps/block, smem 10112 -> 6 blocks ->
 *   24/64 = 0.375; time-weighted (500x0.5 + 600x0.375)/1100 = 0.431818.
 * Windows of 500: busy 400/500, 500/500, 0/500 -> p5 0, p50 80, p95 100;
 *   one window > 90%, at index 1. Longest idle run [2200,2500) at +1200. */
/* The longest run of busy windows ends with the window: the last window
 * is partial (700 ns of window in 500 ns windows: [0,500) 98% busy,
 * [500,700) 100%), so the run is 700 ns long, not two whole windows. */
static void test_busy_run_partial(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 500;
  tl_device(&t, 0, 100);
  tl_api(&t, 1, LAUNCH, 1000, 1010, 0, 0);
  tl_kernel(&t, 0, 1010, 1700, S_GEMM, 200, 256);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->window_ns, 700);
  EQ(d->nwin, 2);
  EQ(d->busy_run, 2);
  EQ(d->busy_run_at, 0);
  EQ(d->busy_run_ns, 700);
  gp_res_free(r);
  tl_free(&t);
}

static void test_overlap(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 500;
  tl_device(&t, 0, 100);
  tl_api(&t, 1, LAUNCH, 1000, 1010, 0, 0);
  tl_api(&t, 1, LAUNCH, 1010, 1020, 0, 0);
  tl_api(&t, 1, MEMCPY_ASYNC, 1020, 1030, 0, 7);
  struct gpuphase_kernel *a = tl_kernel(&t, 0, 1100, 1600, S_GEMM, 50, 256);
  a->regs = 64;
  a->stream = 1;
  struct gpuphase_kernel *b = tl_kernel(&t, 0, 1400, 2000, S_SMALL, 200, 128);
  b->smem_static = 10000;
  b->stream = 2;
  tl_copy(&t, 0, 1500, 1800, 3000, GPUPHASE_COPY_HTOD, TL_PINNED, TL_DEVMEM, 7);
  tl_memset(&t, 0, 2100, 2200);
  tl_api(&t, 1, SYNC, 2000, 2500, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->window_ns, 1500);
  CATS(d->bd, 900, 100, 30, 400, 70);
  EQ(d->bd.sub[GP_SUB_XFER + GP_XFER_MEMSET], 100);
  EQ(d->bd.sub[GP_SUB_XFER + GP_XFER_H2D], 0);
  EQ(d->bd.kernel_xfer_overlap, 300);
  EQ(d->bd.kernel_nsum, 1100);
  NEAR(d->util.cov_pct, 50.0, 1e-9);
  NEAR(d->util.small_pct, 0.0, 1e-9);
  NEAR(d->util.occ_pct, 100.0 * 475 / 1100, 1e-6);
  EQ(tl_apires(r, "cudaMemcpyAsync")->blocked, 0);
  EQ(d->nwin, 3);
  EQ(d->win[0].cat[GP_CAT_KERNEL], 400);
  EQ(d->win[2].cat[GP_CAT_SYNC_IDLE], 400);
  NEAR(d->busy_p5, 0, 1e-9);
  NEAR(d->busy_p50, 80, 1e-9);
  NEAR(d->busy_p95, 100, 1e-9);
  NEAR(d->busy_p99, 100, 1e-9);
  EQ(d->busy_run, 1);
  EQ(d->busy_run_at, 1);
  EQ(d->idle_longest, 300);
  EQ(d->idle_longest_at, 1200);
  /* kernel A alone covers 0.5 of the SMs */
  NEAR(tl_kern(r, "gemm")->cov_wsum / tl_kern(r, "gemm")->cov_ns, 0.5, 1e-9);
  gp_res_free(r);
  tl_free(&t);
}

/* Pageable async copy seen while the call is still open:
 *   call [100,500) corr 5, pageable H2D [300,450), launch [600,610).
 *   Window [100,610) = 510: [100,300) sync (undecided until 300, then
 *   blocking) 200; transfer 150; [450,500) sync 50; host [500,600) 100;
 *   launch 10.  Thread: blocked 400, submit 10, cpu 100. */
static void test_pageable_open(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, MEMCPY_ASYNC, 100, 500, 0, 5);
  tl_copy(&t, 0, 300, 450, 4096, GPUPHASE_COPY_HTOD, TL_PAGEABLE, TL_DEVMEM, 5);
  tl_api(&t, 1, LAUNCH, 600, 610, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 0, 150, 10, 250, 100);
  EQ(tl_thr(r, 1)->blocked, 400);
  EQ(tl_thr(r, 1)->submit, 10);
  EQ(tl_thr(r, 1)->cpu, 100);
  EQ(tl_apires(r, "cudaMemcpyAsync")->blocked, 400);
  EQ(d->copies[GP_XFER_H2D].pageable, 1);
  gp_res_free(r);
  tl_free(&t);
}

/* Pageable copy staged: the device copy starts after the call returned.
 *   call [100,200) corr 9, pageable copy [300,350), launch [400,410).
 *   Window [100,410) = 310: [100,200) sync 100 (booked as launch, moved
 *   when the copy showed pageable memory); host [200,300) + [350,400) 150;
 *   transfer 50; launch 10.  Windows of 100: [100,200) sync 100;
 *   [300,400) transfer 50 + host 50; [400,410) launch 10. */
static void test_pageable_late(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 100;
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 50, S_STEP, 0);
  tl_api(&t, 1, MEMCPY_ASYNC, 100, 200, 0, 9);
  tl_copy(&t, 0, 300, 350, 4096, GPUPHASE_COPY_HTOD, TL_PAGEABLE, TL_DEVMEM, 9);
  tl_api(&t, 1, LAUNCH, 400, 410, 0, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 405, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 0, 50, 10, 100, 150);
  EQ(d->nwin, 4);
  CATS(d->win[0], 0, 0, 0, 100, 0);
  CATS(d->win[2], 0, 50, 0, 0, 50);
  CATS(d->win[3], 0, 0, 10, 0, 0);
  EQ(tl_thr(r, 1)->blocked, 100);
  EQ(tl_thr(r, 1)->submit, 10);
  /* the phase (opened before the window) sees the same move:
   * [100,405): sync 100, host 150, transfer 50, launch 5 */
  const struct gp_phase_res *p = tl_phase(r, "step");
  EQ(p->union_ns, 305);
  CATS(p->dev[0].bd, 0, 50, 5, 100, 150);
  EQ(p->count, 1);
  EQ(gp_hist_pct(&p->dur, 95), 355);
  gp_res_free(r);
  tl_free(&t);
}

/* The move of provisional time reaches exactly the phases open when that
 * time passed: call [100,200) corr 9, its pageable copy [300,350) shows it
 * blocking at 300; fwd [150,180) closed before that, step [250,400) opened
 * after the call.  fwd: sync 30.  step: host [250,300) + [350,400) 100,
 * transfer 50, no sync. */
static void test_pageable_epochs(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, MEMCPY_ASYNC, 100, 200, 0, 9);
  tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 150, S_FWD, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_POP, 180, 0, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 250, S_STEP, 0);
  tl_copy(&t, 0, 300, 350, 4096, GPUPHASE_COPY_HTOD, TL_PAGEABLE, TL_DEVMEM, 9);
  tl_range(&t, 2, GPUPHASE_RANGE_POP, 400, 0, 0);
  tl_api(&t, 1, LAUNCH, 400, 410, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  CATS(tl_dev(r, 0)->bd, 0, 50, 10, 100, 150);
  CATS(tl_phase(r, "fwd")->dev[0].bd, 0, 0, 0, 30, 0);
  CATS(tl_phase(r, "step")->dev[0].bd, 0, 50, 0, 0, 100);
  gp_res_free(r);
  tl_free(&t);
}

/* A copy record that comes after the hold (1000 ns here) no longer decides
 * its call: call [100,200) corr 4 stays launch; its pageable copy [3000,3100)
 * is only a transfer.  Window [100,3100): launch 100 + [2000,2010) 10,
 * host [200,2000) 1800 + [2010,3000) 990, transfer 100. */
static void test_hold_expired(void) {
  struct tl t;
  base(&t);
  t.o.hold_ns = 1000;
  tl_api(&t, 1, MEMCPY_ASYNC, 100, 200, 0, 4);
  tl_api(&t, 1, LAUNCH, 2000, 2010, 0, 0);
  tl_copy(&t, 0, 3000, 3100, 4096, GPUPHASE_COPY_HTOD, TL_PAGEABLE, TL_DEVMEM,
          4);
  struct gp_proc_res *r = tl_run(&t);
  CATS(tl_dev(r, 0)->bd, 0, 100, 110, 0, 2790);
  EQ(r->diag.unresolved_copies, 1);
  EQ(tl_apires(r, "cudaMemcpyAsync")->blocked, 0);
  EQ(tl_thr(r, 1)->submit, 110);
  gp_res_free(r);
  tl_free(&t);
}

/* Pinned async copies: one returns before its copy ends (not blocking), one
 * after (blocking).
 *   call [100,200) copy [150,300): launch 50, transfer 150.
 *   call [400,700) copy [450,600): sync [400,450) 50 + [600,700) 100,
 *   transfer 150; host [300,400) 100.  Window [100,700). */
static void test_pinned_async(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, MEMCPY_ASYNC, 100, 200, 0, 1);
  tl_copy(&t, 0, 150, 300, 64, GPUPHASE_COPY_DTOH, TL_DEVMEM, TL_PINNED, 1);
  tl_api(&t, 1, MEMCPY_ASYNC, 400, 700, 0, 2);
  tl_copy(&t, 0, 450, 600, 64, GPUPHASE_COPY_DTOH, TL_DEVMEM, TL_PINNED, 2);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 0, 300, 50, 150, 100);
  EQ(d->bd.sub[GP_SUB_XFER + GP_XFER_D2H], 300);
  EQ(tl_apires(r, "cudaMemcpyAsync")->blocked, 300);
  EQ(tl_thr(r, 1)->blocked, 300);
  EQ(tl_thr(r, 1)->submit, 100);
  gp_res_free(r);
  tl_free(&t);
}

/* Three threads, three devices; a call with device -1 counts for every
 * device; device 2 is first seen by a kernel at 140.
 *   T1 sync dev0 [0,100); T2 launch dev0 [50,150); T3 launch dev1 [20,80);
 *   kernel dev1 [90,130); T1 query dev -1 [120,125) and [160,170);
 *   kernel dev2 [140,150).  Window [0,170).
 *   The queries neither enqueue nor wait: idle time in them is host_wait
 *   (its host_api part), not launch.
 *   dev0: sync 100 (T2's launch inside is outranked), launch [100,150) 50,
 *         host [150,170) 20 (host_api [160,170) 10).
 *   dev1: host [0,20) 20 + [80,90) 10 + [130,170) 40; launch 60; kernel
 *         40 (the query at 120 falls inside it); host_api [160,170) 10.
 *   dev2: host [0,140) 140 + [150,170) 20; kernel 10; host_api [120,125)
 *         5 + [160,170) 10.
 *   T1 blocked 100, submit 15, cpu 55 (it lives [0,170)); T2 submit 100,
 *   cpu 0 (it lives [50,150), its one call); T3 submit 60. */
static void test_threads_devices(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_device(&t, 1, 10);
  tl_api(&t, 1, SYNC, 0, 100, 0, 0);
  tl_api(&t, 2, LAUNCH, 50, 150, 0, 0);
  tl_api(&t, 3, LAUNCH, 20, 80, 1, 0);
  tl_kernel(&t, 1, 90, 130, S_GEMM, 10, 32);
  tl_api(&t, 1, QUERY, 120, 125, -1, 0);
  tl_kernel(&t, 2, 140, 150, S_GEMM, 10, 32);
  tl_api(&t, 1, QUERY, 160, 170, -1, 0);
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->ndev, 3);
  CATS(tl_dev(r, 0)->bd, 0, 0, 50, 100, 20);
  CATS(tl_dev(r, 1)->bd, 40, 0, 60, 0, 70);
  CATS(tl_dev(r, 2)->bd, 10, 0, 0, 0, 160);
  EQ(tl_dev(r, 0)->bd.sub[GP_SUB_HOST_API], 10);
  EQ(tl_dev(r, 1)->bd.sub[GP_SUB_HOST_API], 10);
  EQ(tl_dev(r, 2)->bd.sub[GP_SUB_HOST_API], 15);
  EQ(tl_thr(r, 1)->blocked, 100);
  EQ(tl_thr(r, 1)->submit, 15);
  EQ(tl_thr(r, 1)->cpu, 55);
  EQ(tl_thr(r, 2)->submit, 100);
  EQ(tl_thr(r, 2)->cpu, 0);
  EQ(tl_thr(r, 2)->life, 100);
  EQ(tl_thr(r, 3)->submit, 60);
  gp_res_free(r);
  tl_free(&t);
}

/* Nested phases: T1 pushes step@0, fwd@10, step@20 (nested, same name),
 * pops @30 (inner step), @40 (fwd), @100 (outer step); T2 step [90,150).
 * Device: launch [0,5), kernel [50,120), sync call [130,160).
 *   step: union [0,150): launch 5, host [5,50) 45 + [120,130) 10, kernel
 *         70, sync [130,150) 20. Instances 100, 10, 60: count 3, p95 100.
 *   fwd:  [10,40): host 30. */
static void test_phases(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 5, 0, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 0, S_STEP, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 10, S_FWD, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 20, S_STEP, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 30, 0, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 40, 0, 0);
  tl_kernel(&t, 0, 50, 120, S_GEMM, 1, 32);
  tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 90, S_STEP, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 100, 0, 0);
  tl_api(&t, 1, SYNC, 130, 160, 0, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_POP, 150, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_phase_res *s = tl_phase(r, "step");
  EQ(s->count, 3);
  EQ(s->inst_ns, 170);
  EQ(s->union_ns, 150);
  CATS(s->dev[0].bd, 70, 0, 5, 20, 55);
  EQ(gp_hist_pct(&s->dur, 95), 100);
  EQ(gp_hist_pct(&s->dur, 50), 60);
  NEAR(s->util.busy_pct, 100.0 * 70 / 150, 1e-9);
  const struct gp_phase_res *f = tl_phase(r, "fwd");
  EQ(f->count, 1);
  EQ(f->union_ns, 30);
  CATS(f->dev[0].bd, 0, 0, 0, 0, 30);
  EQ(r->phases[0].union_ns, 150); /* longest first */
  gp_res_free(r);
  tl_free(&t);
}

/* START/END ranges pair by id across threads; an END without START and a
 * range left open are counted, the open one closed at the window end.
 *   A: START id 7 on T1 @10, END id 7 on T2 @40 -> 30.
 *   B: START id 8 @50, never ended -> closed at the end (100) -> 50.
 *   Device idle, launch call [0,100): the phase is all launch. */
static void test_start_end(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 100, 0, 0);
  tl_range(&t, 1, GPUPHASE_RANGE_START, 10, S_FWD, 7);
  tl_range(&t, 2, GPUPHASE_RANGE_END, 40, 0, 7);
  tl_range(&t, 2, GPUPHASE_RANGE_END, 45, 0, 99);
  tl_range(&t, 1, GPUPHASE_RANGE_START, 50, S_FWD, 8);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_phase_res *f = tl_phase(r, "fwd");
  EQ(f->count, 2);
  EQ(f->inst_ns, 80);
  EQ(f->union_ns, 80);
  CATS(f->dev[0].bd, 0, 0, 80, 0, 0);
  EQ(r->diag.unmatched_end, 1);
  EQ(r->diag.open_at_end, 1);
  gp_res_free(r);
  tl_free(&t);
}

/* No device record and a STATE 1: degraded. Blocking calls count as kernel.
 *   launch [10,20), sync [20,100), memcpy (sync) [150,200), launch [200,210).
 *   Window [10,210): kernel 80 + 50, launch 20, host [100,150) 50. */
static void test_degraded(void) {
  struct tl t;
  base(&t);
  tl_state(&t, 0, 1, S_WHY);
  tl_api(&t, 1, LAUNCH, 10, 20, 0, 0);
  tl_api(&t, 1, SYNC, 20, 100, 0, 0);
  tl_api(&t, 1, MEMCPY, 150, 200, 0, 0);
  tl_api(&t, 1, LAUNCH, 200, 210, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->degraded, 1);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 130, 0, 20, 0, 50);
  EQ(d->idle_longest, 50);
  EQ(d->idle_longest_at, 90);
  NEAR(d->util.cov_pct, -1, 0);
  EQ(r->nnotes >= 1, 1);
  EQ(strncmp(r->notes[0], "DEGRADED", 8), 0);
  EQ(strstr(r->notes[0], "CUPTI unavailable") != NULL, 1);
  gp_res_free(r);
  /* the same calls with one kernel recorded: not degraded */
  tl_kernel(&t, 0, 150, 160, S_GEMM, 1, 32);
  r = tl_run(&t);
  EQ(r->degraded, 0);
  CATS(tl_dev(r, 0)->bd, 10, 0, 20, 120, 50);
  gp_res_free(r);
  tl_free(&t);
}

/* Records out of order are clipped to the sweep time.
 *   launch [0,10); kernel A [100,200); launch [250,260); then kernel B
 *   [150,300) arrives (late: from 250) and kernel C [120,180) (entirely in
 *   the past: dropped from the timeline, still in the kernel table).
 *   Window [0,300): launch 10, host 90 + 50, kernel 100 + 50. */
static void test_late(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 100, 200, S_GEMM, 1, 32);
  tl_api(&t, 1, LAUNCH, 250, 260, 0, 0);
  tl_kernel(&t, 0, 150, 300, S_GEMM, 1, 32);
  tl_kernel(&t, 0, 120, 180, S_GEMM, 1, 32);
  struct gp_proc_res *r = tl_run_raw(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->window_ns, 300);
  CATS(d->bd, 150, 0, 10, 0, 140);
  EQ(r->diag.late, 2);
  EQ(r->diag.late_dropped, 1);
  EQ(tl_kern(r, "gemm")->count, 3);
  EQ(tl_kern(r, "gemm")->total, 100 + 150 + 60);
  gp_res_free(r);
  tl_free(&t);
}

/* Communication kernels: nccl [0,100), gemm [50,150). Window [0,150):
 * communication alone [0,50) 50, compute 100, both at once [50,100) 50. */
static void test_comm(void) {
  struct tl t;
  base(&t);
  tl_kernel(&t, 0, 0, 100, S_NCCL, 4, 64);
  tl_kernel(&t, 0, 50, 150, S_GEMM, 4, 64);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 150, 0, 0, 0, 0);
  EQ(d->bd.sub[GP_SUB_COMMUNICATION], 50);
  EQ(d->bd.sub[GP_SUB_COMPUTE], 100);
  EQ(d->bd.comm_overlap, 50);
  EQ(tl_kern(r, "ncclAllReduce_sum_f32")->communication, 1);
  EQ(tl_kern(r, "gemm")->communication, 0);
  gp_res_free(r);
  tl_free(&t);
}

/* Device memory from allocation calls (booked at the call's start):
 *   malloc 1000 @0, malloc 3000 @20, free the first @50, pinned host 500
 *   @60, launch [90,100).  Levels: [0,20) 1000, [20,50) 4000, [50,100)
 *   3000: peak 4000, mean (20000 + 120000 + 150000)/100 = 2900; of 10000.
 *   Windows of 40: peaks 4000, 4000, 3000. */
static void test_memory(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 40;
  tl_device(&t, 0, 10)->mem_total = 10000;
  struct gpuphase_api *a = tl_api(&t, 1, MALLOC, 0, 10, 0, 0);
  a->ptr = 0x1000, a->bytes = 1000;
  a = tl_api(&t, 1, MALLOC, 20, 30, 0, 0);
  a->ptr = 0x2000, a->bytes = 3000;
  a = tl_api(&t, 1, FREE, 50, 60, 0, 0);
  a->ptr = 0x1000;
  a = tl_api(&t, 1, HOSTALLOC, 60, 70, 0, 0);
  a->ptr = 0x9000, a->bytes = 500;
  a = tl_api(&t, 1, MALLOC, 70, 80, 0, 0); /* failed: not counted */
  a->ptr = 0x3000, a->bytes = 100000, a->ret = 2;
  tl_api(&t, 1, FREE, 80, 85, 0, 0)->ptr = 0x7777; /* unknown pointer */
  tl_api(&t, 1, LAUNCH, 90, 100, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->mem_peak, 4000);
  NEAR(d->mem_mean, 2900, 1e-6);
  NEAR(d->mem_peak_pct, 40, 1e-9);
  NEAR(d->mem_mean_pct, 29, 1e-9);
  EQ(r->host_pinned_peak, 500);
  EQ(r->diag.unknown_free, 1);
  EQ(d->nwin, 3);
  EQ(d->win[0].mem_peak, 4000);
  EQ(d->win[1].mem_peak, 4000);
  EQ(d->win[2].mem_peak, 3000);
  gp_res_free(r);
  tl_free(&t);
}

/* Two processes added together: windows and categories sum per device. */
static void test_merge(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 30, S_GEMM, 1, 32);
  struct gp_proc_res *a = tl_run(&t), *b = tl_run(&t);
  struct gp_proc_res *sum = gp_res_new_sum();
  EQ(gp_res_merge(sum, a), 0);
  EQ(gp_res_merge(sum, b), 0);
  EQ(gp_res_derive(sum, NULL), 0);
  EQ(sum->nprocs, 2);
  EQ(sum->ndev, 1);
  EQ(sum->dev[0].window_ns, 60);
  CATS(sum->dev[0].bd, 40, 0, 20, 0, 0);
  EQ(tl_kern(sum, "gemm")->count, 2);
  EQ(tl_apires(sum, "cudaLaunchKernel")->total, 20);
  gp_res_free(a);
  gp_res_free(b);
  gp_res_free(sum);
  tl_free(&t);
}

/* Every nanosecond of the window in exactly one category, per device, per
 * window and per phase, on a busier timeline with many overlaps. */
static void test_sums(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 37;
  tl_device(&t, 0, 8);
  uint64_t x = 12345;
  for (int i = 0; i < 400; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t s = (x >> 33) % 5000, len = (x >> 20) % 90;
    int what = (int)((x >> 13) % 6);
    if (what == 0) tl_kernel(&t, 0, s, s + len, S_GEMM, (x >> 7) % 20, 64);
    if (what == 1) tl_copy(&t, 0, s, s + len, 8, 1 + (x >> 9) % 3, 2, 3, 0);
    if (what == 2) tl_api(&t, (x >> 5) % 3, LAUNCH, s, s + len, 0, 0);
    if (what == 3) tl_api(&t, (x >> 5) % 3, SYNC, s, s + len, -1, 0);
    if (what == 4)
      tl_api(&t, 1, MEMCPY_ASYNC, s, s + len, 0, 1000 + (uint64_t)i);
    if (what == 5) tl_range(&t, (x >> 5) % 2, 1 + (x >> 8) % 2, s, S_STEP, 0);
  }
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(gp_breakdown_total(&d->bd), d->window_ns);
  uint64_t w = 0;
  for (size_t i = 0; i < d->nwin; i++) {
    uint64_t n = 0;
    for (int c = 0; c < GP_CAT_N; c++)
      n += d->win[i].cat[c];
    EQ(n, i + 1 < d->nwin ? 37 : d->window_ns - i * 37);
    w += n;
  }
  EQ(w, d->window_ns);
  const struct gp_phase_res *p = tl_phase(r, "step");
  EQ(gp_breakdown_total(&p->dev[0].bd), p->union_ns);
  gp_res_free(r);
  tl_free(&t);
}

/* One record of random kind with noise in every field, times near s. */
static void garbage(struct tl *t, uint64_t x) {
  uint64_t s = (x >> 30) % 20000, e = s + (x >> 12) % 400 - 50;
  uint32_t kind = 5 + (uint32_t)((x >> 8) % 8); /* API .. STATE */
  struct gpuphase_record *r = tl_add(t, kind);
  uint64_t *f = (uint64_t *)&r->u;
  for (size_t k = 0; k < sizeof r->u / 8; k++)
    f[k] = (x >> (k % 40)) % (k % 3 ? 7 : 3);
  switch (kind) {
  case GPUPHASE_REC_API:
    r->u.api.start = s, r->u.api.end = e, r->u.api.api = (x >> 3) % 10;
    r->u.api.device = (int64_t)((x >> 5) % 4) - 1;
    r->u.api.corr = (x >> 7) % 20, r->u.api.ptr = (x >> 9) % 16;
    r->u.api.bytes = (x >> 11) % 1000;
    break;
  case GPUPHASE_REC_KERNEL:
    r->u.kernel.start = s, r->u.kernel.end = e;
    r->u.kernel.name = (x >> 4) % 20, r->u.kernel.device = (x >> 6) % 3;
    break;
  case GPUPHASE_REC_MEMCPY:
    r->u.memcpy.start = s, r->u.memcpy.end = e;
    r->u.memcpy.corr = (x >> 7) % 20, r->u.memcpy.device = (x >> 6) % 3;
    break;
  case GPUPHASE_REC_MEMSET:
    r->u.memset.start = s, r->u.memset.end = e;
    break;
  case GPUPHASE_REC_SYNC:
    r->u.sync.start = s, r->u.sync.end = e;
    break;
  case GPUPHASE_REC_RANGE:
    r->u.range.start = s, r->u.range.op = (x >> 3) % 6;
    r->u.range.name = (x >> 5) % 16, r->u.range.id = (x >> 7) % 4;
    break;
  case GPUPHASE_REC_LOST:
    r->u.lost.start = s;
    break;
  case GPUPHASE_REC_STATE:
    r->u.state.start = s;
    break;
  }
}

/* Malformed and out-of-order input never breaks the invariants: every
 * category of every device stays within its window and they sum to it. */
static void test_garbage(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 50;
  t.o.hold_ns = 200;
  tl_device(&t, 1, 4);
  uint64_t x = 99;
  for (int i = 0; i < 3000; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    garbage(&t, x);
  }
  for (int sorted = 0; sorted < 2; sorted++) {
    struct gp_proc_res *r = sorted ? tl_run(&t) : tl_run_raw(&t);
    for (size_t d = 0; d < r->ndev; d++) {
      EQ(gp_breakdown_total(&r->dev[d].bd), r->dev[d].window_ns);
      for (int c = 0; c < GP_CAT_N; c++)
        EQ(r->dev[d].bd.cat[c] <= r->dev[d].window_ns, 1);
    }
    for (size_t p = 0; p < r->nphases; p++)
      for (size_t d = 0; d < r->ndev; d++)
        EQ(gp_breakdown_total(&r->phases[p].dev[d].bd), r->phases[p].union_ns);
    gp_res_free(r);
  }
  tl_free(&t);
}

static const char *finding(const struct gp_proc_res *r, const char *rule) {
  for (size_t i = 0; i < r->nfindings; i++)
    if (strcmp(r->findings[i].rule, rule) == 0) return r->findings[i].text;
  return "";
}

/* The findings table on cases small enough to compute by hand. */
static void test_findings(void) {
  struct tl t;
  /* 100 SMs; launch [0,10), a 10-block kernel [10,100): busy 90%, coverage
   * 0.1 x 90 / 100 = 9%, all kernel time in kernels of < 50 blocks; a
   * share below 10% with one decimal, as the GPU block prints it. */
  base(&t);
  tl_device(&t, 0, 100);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 100, S_GEMM, 10, 64);
  struct gp_proc_res *r = tl_run(&t);
  EQ(strcmp(finding(r, "low_sm_coverage"),
            "busy 90% but SM coverage 9.0%: most kernel time (100%) is in "
            "kernels of < 50 blocks on 100 SMs"),
     0);
  EQ(r->nfindings, 1);
  gp_res_free(r);
  tl_free(&t);
  /* the same kernel [10,30) on a GPU idle to 100 (launch [90,100)): busy
   * 20%, coverage 0.1 x 20 / 100 = 2%: the two part, the rule says why */
  base(&t);
  tl_device(&t, 0, 100);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 30, S_GEMM, 10, 64);
  tl_api(&t, 1, LAUNCH, 90, 100, 0, 0);
  r = tl_run(&t);
  EQ(strcmp(finding(r, "low_sm_coverage"),
            "busy 20% but SM coverage 2.0%: most kernel time (100%) is in "
            "kernels of < 50 blocks on 100 SMs"),
     0);
  gp_res_free(r);
  tl_free(&t);
  /* launch [0,10), kernel [10,20), launch [90,100): host wait 70%. */
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 20, S_GEMM, 1, 64);
  tl_api(&t, 1, LAUNCH, 90, 100, 0, 0);
  r = tl_run(&t);
  EQ(strcmp(finding(r, "host_bound"), "the GPU waits for the host 70% of "
                                      "the time: data loading or CPU work"),
     0);
  gp_res_free(r);
  tl_free(&t);
  /* launch [0,50), kernel [50,60): idle while submitting 50 of 60. */
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 50, 0, 0);
  tl_kernel(&t, 0, 50, 60, S_GEMM, 1, 64);
  r = tl_run(&t);
  EQ(strcmp(finding(r, "launch_bound"),
            "launch-bound: kernels are shorter than their submission (idle "
            "while submitting 83% vs kernel 17%)"),
     0);
  gp_res_free(r);
  tl_free(&t);
}

/* GPU idle time inside a call is named by the call's class: enqueue ->
 * launch, synchronising (explicit, or implicit as a free) -> sync_idle,
 * other (allocation, creation, queries) -> host_wait, in its host_api part.
 *   launch [0,10), kernel [10,100); cudaFreeHost [200,6600) (it waits for
 *   the device); cudaMalloc [7000,7100); launch [8000,8010), kernel
 *   [8010,8100). Window [0,8100): kernel 180, launch 20, sync_idle 6400,
 *   host_wait [100,200) + [6600,8000) = 1500 of which host_api 100. */
static void test_call_classes(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 100, S_GEMM, 10, 128);
  tl_api(&t, 1, FREEHOST, 200, 6600, 0, 0)->ptr = 0x1000;
  tl_api(&t, 1, MALLOC, 7000, 7100, 0, 0)->bytes = 4096;
  tl_api(&t, 1, LAUNCH, 8000, 8010, 0, 0);
  tl_kernel(&t, 0, 8010, 8100, S_GEMM, 10, 128);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  CATS(d->bd, 180, 0, 20, 6400, 1500);
  EQ(d->bd.sub[GP_SUB_HOST_API], 100);
  EQ(tl_apires(r, "cudaFreeHost")->blocked, 6400);
  EQ(tl_apires(r, "cudaMalloc")->blocked, 0);
  const struct gp_thread_res *th = tl_thr(r, 1);
  EQ(th->blocked, 6400);
  EQ(th->submit, 120);
  gp_res_free(r);
  tl_free(&t);
}

/* A thread's shares are of its own lifetime (first call to last), not of
 * the process window. Window [0,1000): thread 1 launch [0,10), kernel
 * [10,990), sync [10,1000): life 1000, submit 10, blocked 990, cpu 0.
 * Thread 2 lives for one launch [400,402): life 2, submit 2, cpu 0 (it
 * was 998 of 1000 "CPU work" when measured over the window). Thread 3
 * launches [200,210) and [290,300): life 100, submit 20, cpu 80. */
static void test_thread_lifetime(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 990, S_GEMM, 10, 128);
  tl_api(&t, 1, SYNC, 10, 1000, 0, 0);
  tl_api(&t, 2, LAUNCH, 400, 402, 0, 0);
  tl_api(&t, 3, LAUNCH, 200, 210, 0, 0);
  tl_api(&t, 3, LAUNCH, 290, 300, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_thread_res *a = tl_thr(r, 1), *b = tl_thr(r, 2),
                             *c = tl_thr(r, 3);
  EQ(a->life, 1000);
  EQ(a->cpu, 0);
  EQ(b->life, 2);
  EQ(b->submit, 2);
  EQ(b->cpu, 0);
  EQ(c->life, 100);
  EQ(c->submit, 20);
  EQ(c->cpu, 80);
  gp_res_free(r);
  tl_free(&t);
}

/* The pageable-copy finding counts copies, not memsets: two pageable H2D
 * copies, one pinned D2H copy and three memsets are "2 of 3 copies". */
static void test_finding_pageable(void) {
  struct tl t;
  base(&t);
  tl_copy(&t, 0, 0, 10, 4096, GPUPHASE_COPY_HTOD, GPUPHASE_MEM_PAGEABLE,
          GPUPHASE_MEM_DEVICE, 0);
  tl_copy(&t, 0, 20, 30, 4096, GPUPHASE_COPY_HTOD, GPUPHASE_MEM_PAGEABLE,
          GPUPHASE_MEM_DEVICE, 0);
  tl_copy(&t, 0, 40, 50, 4096, GPUPHASE_COPY_DTOH, GPUPHASE_MEM_DEVICE,
          GPUPHASE_MEM_PINNED, 0);
  for (uint64_t i = 0; i < 3; i++) tl_memset(&t, 0, 60 + 10 * i, 65 + 10 * i);
  struct gp_proc_res *r = tl_run(&t);
  EQ(strcmp(finding(r, "pageable_copies"),
            "2 of 3 copies used pageable host memory: they block the "
            "calling thread and cannot overlap; pin the buffers"),
     0);
  gp_res_free(r);
  tl_free(&t);
}

/* A device reset waits (sync_idle) and frees every allocation of its
 * device: malloc 1000 on device 0 @0 and 3000 on device 1 @0, launch
 * [10,20) on device 0, reset of device 0 [40,60), launch [90,100) on
 * device 0. Device 0: levels [0,40) 1000, then 0: peak 1000, mean
 * 40000/100 = 400; sync_idle 20. Device 1 keeps its 3000. */
static void test_reset(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_device(&t, 1, 10);
  struct gpuphase_api *a = tl_api(&t, 1, MALLOC, 0, 0, 0, 0);
  a->ptr = 0x1000, a->bytes = 1000;
  a = tl_api(&t, 2, MALLOC, 0, 0, 1, 0);
  a->ptr = 0x2000, a->bytes = 3000;
  tl_api(&t, 1, LAUNCH, 10, 20, 0, 0);
  tl_api(&t, 1, RESET, 40, 60, 0, 0);
  tl_api(&t, 1, LAUNCH, 90, 100, 0, 0);
  tl_api(&t, 2, LAUNCH, 90, 100, 1, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d0 = tl_dev(r, 0), *d1 = tl_dev(r, 1);
  EQ(d0->mem_peak, 1000);
  NEAR(d0->mem_mean, 400, 1e-6);
  EQ(d0->bd.cat[GP_CAT_SYNC_IDLE], 20);
  EQ(d1->mem_peak, 3000);
  NEAR(d1->mem_mean, 3000, 1e-6);
  gp_res_free(r);
  tl_free(&t);
}

/* Long runs get longer windows: at most GP_MAX_WINDOWS (65536) per device,
 * and 2^18 windows over all device slots (the engine's "any device" slot
 * counts).
 * One device, window 1 ns: kernel [0,200000) then a launch [200000,200010):
 *   window [0,200010) = 200010 ns. 1 ns gives 200010 windows, 2 ns 100005,
 *   4 ns 50003 <= 65536: windows of 4 ns; the last one, [200008,200010),
 *   holds the rest of the launch. Windows 0..49999 are all kernel (4 ns),
 *   window 50000 = [200000,200004) and 50001 launch; 50002 holds 2 ns.
 * Seven devices (8 slots, 2^18 / 8 = 32768 windows each), kernel [0,70000)
 *   on each: 70000 > 32768 at 1 ns, 35000 > 32768 at 2 ns, 17500 at 4 ns. */
static void test_window_cap(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 1;
  tl_kernel(&t, 0, 0, 200000, S_GEMM, 10, 128);
  tl_api(&t, 1, LAUNCH, 200000, 200010, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->window_ns, 200010);
  EQ(d->win_ns, 4);
  EQ(d->nwin, 50003);
  int ok = 1;
  for (size_t w = 0; w < 50000 && ok; w++)
    ok = d->win[w].cat[GP_CAT_KERNEL] == 4 &&
         d->win[w].cat[GP_CAT_HOST_WAIT] == 0;
  EQ(ok, 1);
  EQ(d->win[50000].cat[GP_CAT_LAUNCH], 4);
  EQ(d->win[50001].cat[GP_CAT_LAUNCH], 4);
  EQ(d->win[50002].cat[GP_CAT_LAUNCH], 2);
  CATS(d->bd, 200000, 0, 10, 0, 0);
  int noted = 0;
  for (size_t i = 0; i < r->nnotes; i++)
    noted |= strstr(r->notes[i], "fixed windows of 4 ns instead of 1 ns") != 0;
  EQ(noted, 1);
  gp_res_free(r);
  tl_free(&t);

  base(&t);
  t.o.window_ns = 1;
  for (uint64_t dev = 0; dev < 7; dev++)
    tl_kernel(&t, dev, 0, 70000, S_GEMM, 10, 128);
  r = tl_run(&t);
  EQ(r->ndev, 7);
  for (int64_t dev = 0; dev < 7; dev++) {
    d = tl_dev(r, dev);
    EQ(d->win_ns, 4);
    EQ(d->nwin, 17500);
    EQ(d->win[17499].cat[GP_CAT_KERNEL], 4);
    EQ(d->bd.cat[GP_CAT_KERNEL], 70000);
  }
  gp_res_free(r);
  tl_free(&t);
}

/* A phase on a process with two GPUs, the second first seen inside it:
 *   phase "step" [0,1000); a launch on device 0 [0,10) (the window starts
 *   at 0); kernel on device 0 [100,200); kernel on device 1 [300,400)
 *   (device 1 first appears at 300); the phase pops at 1000, the window's
 *   end. Every device's phase breakdown covers the phase's union (1000):
 *   device 0: launch 10, kernel 100, host wait 890;
 *   device 1: the launch was a call on device 0, so kernel 100, host wait
 *   900. */
static void test_phase_devices(void) {
  struct tl t;
  base(&t);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 0, S_STEP, 0);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 100, 200, S_GEMM, 10, 128);
  tl_kernel(&t, 1, 300, 400, S_GEMM, 10, 128);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 1000, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_phase_res *s = tl_phase(r, "step");
  EQ(r->ndev, 2);
  EQ(s->union_ns, 1000);
  for (size_t d = 0; d < r->ndev; d++)
    EQ(gp_breakdown_total(&s->dev[d].bd), 1000);
  CATS(tl_dev(r, 0)->bd, 100, 0, 10, 0, 890);
  CATS(tl_dev(r, 1)->bd, 100, 0, 0, 0, 900);
  gp_res_free(r);
  tl_free(&t);
}

/* Times at the end of the clock: a kernel ending at UINT64_MAX moves the
 * sweep there, so a later phase push (late, at 9) opens at the sweep time,
 * UINT64_MAX, and lasts nothing. It was mistaken for "before the window"
 * (timed()'s sentinel is UINT64_MAX) and opened at 9 on some timelines
 * only: device 5's phase breakdown came out as 2^64 - 44.
 *   kernel device 5 [1,43); kernel device 1 at UINT64_MAX (zero length);
 *   push "step" at 9. Window [1, UINT64_MAX). */
static void test_clock_end(void) {
  struct tl t;
  base(&t);
  tl_kernel(&t, 5, 1, 43, S_GEMM, 10, 128);
  tl_kernel(&t, 1, UINT64_MAX, UINT64_MAX, S_GEMM, 10, 128);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 9, S_STEP, 0);
  struct gp_proc_res *r = tl_run_raw(&t);
  const struct gp_phase_res *s = tl_phase(r, "step");
  EQ(r->window_ns, UINT64_MAX - 1);
  EQ(s->union_ns, 0);
  for (size_t d = 0; d < r->ndev; d++)
    EQ(gp_breakdown_total(&s->dev[d].bd), 0);
  CATS(tl_dev(r, 5)->bd, 42, 0, 0, 0, UINT64_MAX - 1 - 42);
  gp_res_free(r);
  tl_free(&t);
}

/* Sync idle wins over launch: the device is idle while one thread blocks
 * and another submits (attribution.md section 2, rule 3 before rule 4).
 * Device 0, fixed windows of 100; T1 sync [100,400); T2 launches
 * [200,300) (inside it) and [350,450) (ending after it); T3 launch
 * [50,150) (starting before it); kernel [500,600). Window [50,600) = 550:
 *   launch [50,100) 50 (T3 alone) + [400,450) 50 (T2 alone)       = 100
 *   sync idle [100,400) 300 (T1 blocks; the launches under it too)
 *   host [450,500) 50; kernel [500,600) 100
 * Windows from 50: [50,150) launch 50 sync 50; [150,250) and [250,350)
 *   sync 100; [350,450) sync 50 launch 50; [450,550) host 50 kernel 50.
 * Phase on T2 [200,450): sync [200,400) 200, launch [400,450) 50.
 * Threads: T1 blocked 300; T2 submitting 200 (its own calls block
 *   nothing); T3 submitting 100. */
static void test_sync_over_launch(void) {
  struct tl t;
  base(&t);
  t.o.window_ns = 100;
  tl_device(&t, 0, 10);
  tl_api(&t, 1, SYNC, 100, 400, 0, 0);
  tl_api(&t, 2, LAUNCH, 200, 300, 0, 0);
  tl_api(&t, 2, LAUNCH, 350, 450, 0, 0);
  tl_api(&t, 3, LAUNCH, 50, 150, 0, 0);
  tl_kernel(&t, 0, 500, 600, S_GEMM, 10, 128);
  tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 200, S_STEP, 0);
  tl_range(&t, 2, GPUPHASE_RANGE_POP, 450, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->window_ns, 550);
  CATS(d->bd, 100, 0, 100, 300, 50);
  EQ(d->nwin, 6);
  if (d->nwin == 6) {
    EQ(d->win[0].cat[GP_CAT_LAUNCH], 50);
    EQ(d->win[0].cat[GP_CAT_SYNC_IDLE], 50);
    EQ(d->win[1].cat[GP_CAT_SYNC_IDLE], 100);
    EQ(d->win[2].cat[GP_CAT_SYNC_IDLE], 100);
    EQ(d->win[3].cat[GP_CAT_SYNC_IDLE], 50);
    EQ(d->win[3].cat[GP_CAT_LAUNCH], 50);
    EQ(d->win[4].cat[GP_CAT_LAUNCH], 0);
  }
  const struct gp_phase_res *p = tl_phase(r, "step");
  EQ(p->union_ns, 250);
  CATS(p->dev[0].bd, 0, 0, 50, 200, 0);
  EQ(tl_thr(r, 1)->blocked, 300);
  EQ(tl_thr(r, 2)->submit, 200);
  EQ(tl_thr(r, 3)->submit, 100);
  gp_res_free(r);
  tl_free(&t);
}

/* One thread: a blocking call nested in a non-blocking one (the runtime's
 * launch calling a synchronising driver call) blocks for its length.
 *   launch [100,300) with a sync [150,250) inside; device idle.
 *   Window [100,300): launch 50 + 50, sync idle 100. */
static void test_sync_nested_in_launch(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 100, 300, 0, 0);
  tl_api(&t, 1, SYNC, 150, 250, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  CATS(tl_dev(r, 0)->bd, 0, 0, 100, 100, 0);
  gp_res_free(r);
  tl_free(&t);
}

/* Which device a blocking call holds: its own, or every one when unknown.
 * Devices 0 and 1. T1 sync [0,100) on device -1 (unknown), T2 launch
 * [0,100) on 0; T1 sync [200,300) on device 1, T2 launch [200,300) on 0.
 *   dev0: [0,100) sync idle (unknown device blocks) 100; [100,200) host
 *         100; [200,300) launch 100 (the blocked thread waits on dev1).
 *   dev1: sync idle [0,100) 100 + [200,300) 100; host [100,200) 100. */
static void test_sync_devices(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_device(&t, 1, 10);
  tl_api(&t, 1, SYNC, 0, 100, -1, 0);
  tl_api(&t, 2, LAUNCH, 0, 100, 0, 0);
  tl_api(&t, 1, SYNC, 200, 300, 1, 0);
  tl_api(&t, 2, LAUNCH, 200, 300, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->ndev, 2);
  CATS(tl_dev(r, 0)->bd, 0, 0, 100, 100, 100);
  CATS(tl_dev(r, 1)->bd, 0, 0, 0, 200, 100);
  gp_res_free(r);
  tl_free(&t);
}

/* Degraded (no device records): time in a blocking call is kernel time,
 * also while another thread submits. T1 sync [0,100), T2 launch [50,150).
 *   Window [0,150): kernel 100, launch [100,150) 50. */
static void test_sync_over_launch_degraded(void) {
  struct tl t;
  base(&t);
  tl_state(&t, 0, 1, S_WHY);
  tl_api(&t, 1, SYNC, 0, 100, 0, 0);
  tl_api(&t, 2, LAUNCH, 50, 150, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->degraded, 1);
  CATS(tl_dev(r, 0)->bd, 100, 0, 50, 0, 0);
  gp_res_free(r);
  tl_free(&t);
}

/* Calls while their device runs a kernel past their end (their end is kept
 * on the thread, out of the sweep's heap), nested in one another, and
 * past the kernel's end. Device 0: T1 launch [0,10), kernel [10,1000);
 * T1 launch [100,150), launch [200,400) with a sync [250,300) inside it,
 * launch [900,1100); T2 launch [950,990), its last call.
 *   dev0: launch [0,10) 10 + [1000,1100) 100 = 110, kernel 990; the sync
 *         inside the kernel is kernel time.
 *   T1: submit 10 + 50 + 150 + 200 = 410, blocked 50, cpu [10,100) 90 +
 *       [150,200) 50 + [400,900) 500 = 640, life 1100.
 *   T2: submit 40, cpu 0, life 40.
 * Device 1: kernels [0,50), [50,80) (queued on the device, in order) and
 * [60,70) (ending before the last queued one: the heap); window [0,1100):
 *   kernel 80, host 1020; kernel_nsum 50 + 30 + 10 = 90. */
static void test_busy_device_calls(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_device(&t, 1, 10);
  tl_api(&t, 1, LAUNCH, 0, 10, 0, 0);
  tl_kernel(&t, 0, 10, 1000, S_GEMM, 10, 128);
  tl_api(&t, 1, LAUNCH, 100, 150, 0, 0);
  tl_api(&t, 1, LAUNCH, 200, 400, 0, 0);
  tl_api(&t, 1, SYNC, 250, 300, 0, 0);
  tl_api(&t, 1, LAUNCH, 900, 1100, 0, 0);
  tl_api(&t, 2, LAUNCH, 950, 990, 0, 0);
  tl_kernel(&t, 1, 0, 50, S_GEMM, 10, 128);
  tl_kernel(&t, 1, 50, 80, S_GEMM, 10, 128);
  tl_kernel(&t, 1, 60, 70, S_GEMM, 10, 128);
  struct gp_proc_res *r = tl_run(&t);
  CATS(tl_dev(r, 0)->bd, 990, 0, 110, 0, 0);
  CATS(tl_dev(r, 1)->bd, 80, 0, 0, 0, 1020);
  EQ(tl_dev(r, 1)->bd.kernel_nsum, 90);
  EQ(tl_thr(r, 1)->submit, 410);
  EQ(tl_thr(r, 1)->blocked, 50);
  EQ(tl_thr(r, 1)->cpu, 640);
  EQ(tl_thr(r, 1)->life, 1100);
  EQ(tl_thr(r, 2)->submit, 40);
  EQ(tl_thr(r, 2)->cpu, 0);
  EQ(tl_thr(r, 2)->life, 40);
  gp_res_free(r);
  tl_free(&t);
}

/* A call-site frame record arriving while kernel ends wait on their
 * device: what ended is booked, the rest moves to the sweep's heap. Fed
 * as added: kernels [0,100), [100,300) (launch [90,100) on T1), the frame
 * record, then a kernel [300,400) and a sync [320,450) on T1.
 *   dev0: kernel 400, sync idle [400,450) 50, launch [90,100) is kernel
 *         time; window [0,450). */
static void test_frame_midway(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_kernel(&t, 0, 0, 100, S_GEMM, 10, 128);
  tl_api(&t, 1, LAUNCH, 90, 100, 0, 0);
  tl_kernel(&t, 0, 100, 300, S_GEMM, 10, 128);
  struct gpuphase_record *f = tl_add(&t, GPUPHASE_REC_FRAME);
  f->u.frame.node = 1;
  f->u.frame.kind = GPUPHASE_FRAME_NATIVE;
  f->u.frame.pc = 0x1000;
  tl_kernel(&t, 0, 300, 400, S_GEMM, 10, 128);
  tl_api(&t, 1, SYNC, 320, 450, 0, 0);
  struct gp_proc_res *r = tl_run_raw(&t);
  CATS(tl_dev(r, 0)->bd, 400, 0, 0, 50, 0);
  EQ(tl_dev(r, 0)->bd.kernel_nsum, 400);
  gp_res_free(r);
  tl_free(&t);
}

/* Times up to UINT64_MAX (a hostile trace): the sweep reaches the last
 * possible time with nothing queued on the device or pending on the
 * threads. Device 0: T1 launch [0,40), kernel [50,1000), T1 launch
 * [100,200) (its end kept on the thread: the kernel runs past it); T2 a
 * query [MAX-10, MAX). Window [0, MAX):
 *   dev0: launch 40, kernel 950, host the rest, 10 of it in the query;
 *   T1: submit 140, life 200, cpu 60; T2: submit 10, life 10, cpu 0. */
static void test_end_of_time(void) {
  struct tl t;
  base(&t);
  tl_device(&t, 0, 10);
  tl_api(&t, 1, LAUNCH, 0, 40, 0, 0);
  tl_kernel(&t, 0, 50, 1000, S_GEMM, 10, 128);
  tl_api(&t, 1, LAUNCH, 100, 200, 0, 0);
  tl_api(&t, 2, QUERY, UINT64_MAX - 10, UINT64_MAX, 0, 0);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_device_res *d = tl_dev(r, 0);
  EQ(d->bd.cat[GP_CAT_KERNEL], 950);
  EQ(d->bd.cat[GP_CAT_LAUNCH], 40);
  EQ(d->bd.cat[GP_CAT_SYNC_IDLE], 0);
  EQ(d->bd.cat[GP_CAT_HOST_WAIT], UINT64_MAX - 990);
  EQ(d->bd.sub[GP_SUB_HOST_API], 10);
  EQ(tl_thr(r, 1)->submit, 140);
  EQ(tl_thr(r, 1)->life, 200);
  EQ(tl_thr(r, 1)->cpu, 60);
  EQ(tl_thr(r, 2)->submit, 10);
  EQ(tl_thr(r, 2)->life, 10);
  EQ(tl_thr(r, 2)->cpu, 0);
  gp_res_free(r);
  tl_free(&t);
}

int main(void) {
  test_basic();
  test_overlap();
  test_busy_run_partial();
  test_pageable_open();
  test_pageable_late();
  test_pageable_epochs();
  test_pinned_async();
  test_hold_expired();
  test_threads_devices();
  test_phases();
  test_start_end();
  test_degraded();
  test_late();
  test_comm();
  test_memory();
  test_merge();
  test_sums();
  test_garbage();
  test_findings();
  test_finding_pageable();
  test_thread_lifetime();
  test_call_classes();
  test_reset();
  test_window_cap();
  test_phase_devices();
  test_clock_end();
  test_sync_over_launch();
  test_sync_nested_in_launch();
  test_sync_devices();
  test_sync_over_launch_degraded();
  test_busy_device_calls();
  test_frame_midway();
  test_end_of_time();
  if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
  return tl_failures ? 1 : 0;
}
