/* Steps on hand-built timelines: how they are found, what each holds, and
 * the statistics over the measured ones. Every expected number is worked
 * out in the comment above its check (ns, half-open intervals). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "pipeline.h"
#include "tl.h"
#include "writer.h"

enum { LAUNCH = 1, SYNC, MEMCPY, MEMCPY_ASYNC };
enum { S_STEP = 10, S_DATA, S_INIT, S_K1, S_K2, S_PS0 };

static void base(struct tl *t) {
  tl_init(t);
  static const char *names[] = {"", "cudaLaunchKernel", "cudaDeviceSynchronize",
                                "cudaMemcpy", "cudaMemcpyAsync"};
  static const uint64_t cls[] = {0, GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC,
                                 GPUPHASE_API_SYNC, GPUPHASE_API_COPY,
                                 GPUPHASE_API_COPY | GPUPHASE_API_ASYNC};
  for (uint64_t i = 1; i <= MEMCPY_ASYNC; i++) {
    tl_str(t, i, names[i]);
    tl_api_def(t, i, i, cls[i]);
  }
  tl_str(t, S_STEP, "step");
  tl_str(t, S_DATA, "data");
  tl_str(t, S_INIT, "init");
  tl_str(t, S_K1, "k1");
  tl_str(t, S_K2, "k2");
  static const char *ps[] = {"ProfilerStep#0", "ProfilerStep#1",
                              "ProfilerStep#2", "ProfilerStep#3",
                              "ProfilerStep#4", "ProfilerStep#5",
                              "ProfilerStep#6", "ProfilerStep#7"};
  for (uint64_t i = 0; i < 8; i++) /* tl_str keeps the pointer */
    tl_str(t, S_PS0 + i, ps[i]);
  tl_device(t, 0, 100);
}

static void items(struct tl *t, uint64_t thread, uint64_t at, uint64_t n) {
  struct gpuphase_record *r = tl_add(t, GPUPHASE_REC_ITEMS);
  r->u.items.thread = thread;
  r->u.items.start = at;
  r->u.items.count = n;
}

/* Step i (i = 0..5) on thread 1 is [1000i, 1000i + 600):
 *   launch call [+10, +20) corr i+1 -> kernel k1 [+50, +250)
 *   sync call [+300, +500)
 * The window starts at 10 (first CUDA call), so step 0 lacks its first
 * 10 ns of host wait; --warmup 1 leaves it out. Steps 1..5, each 600:
 *   host [0,10) 10 + [20,50) 30 + [250,300) 50 + [500,600) 100 = 190
 *   launch [10,20) 10, kernel [50,250) 200, sync idle [300,500) 200.
 * Counters: 1 launch, 1 sync, 200 ns blocked, 1 kernel of 200 ns. */
static void loop_at(struct tl *t, uint64_t name, int n, uint64_t off) {
  for (uint64_t i = 0; i < (uint64_t)n; i++) {
    uint64_t b = off + 1000 * i;
    tl_range(t, 1, GPUPHASE_RANGE_PUSH, b, name, 0);
    tl_api(t, 1, LAUNCH, b + 10, b + 20, 0, i + 1);
    struct gpuphase_kernel *k = tl_kernel(t, 0, b + 50, b + 250, S_K1, 200, 128);
    k->corr = i + 1;
    tl_api(t, 1, SYNC, b + 300, b + 500, 0, 0);
    tl_range(t, 1, GPUPHASE_RANGE_POP, b + 600, 0, 0);
  }
}

static void loop(struct tl *t, uint64_t name, int n) { loop_at(t, name, n, 0); }

static void test_named(void) {
  struct tl t;
  base(&t);
  loop(&t, S_STEP, 6);
  t.o.step = "st*p";
  t.o.warmup = 1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_NAMED);
  EQ(s->n, 6);
  EQ(s->warmup, 1);
  EQ(s->measured, 5);
  EQ(s->median_ns, 600);
  EQ(s->p95_ns, 600);
  EQ(s->max_ns, 600);
  /* span: 1000 .. 5600 */
  EQ(s->span_ns, 4600);
  NEAR(s->per_s, 5 / 4.6e-6, 1e-3);
  CATS(s->v[3], 200, 0, 10, 200, 190);
  EQ(s->cat_med[GP_CAT_HOST_WAIT], 190);
  EQ(s->c_med[GP_SC_launches], 1);
  EQ(s->c_med[GP_SC_syncs], 1);
  EQ(s->c_med[GP_SC_sync_ns], 200);
  EQ(s->c_med[GP_SC_kernels], 1);
  EQ(s->c_med[GP_SC_kernel_ns], 200);
  EQ(s->c_med[GP_SC_distinct_kernels], 1);
  EQ(s->items_known, 0);
  NEAR(s->items_per_s, -1, 0);
  /* busy: 5 x 200 ns of kernel -> 5 steps per microsecond of busy time */
  NEAR(s->per_busy_s, 5 / 1e-6, 1e-3);
  /* step 0 (warm-up) starts before the window: 10 ns less host wait */
  CATS(s->v[0], 200, 0, 10, 200, 180);
  gp_res_free(r);
  /* a glob that matches nothing: named, no steps */
  t.o.step = "nope";
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NAMED);
  EQ(r->steps.n, 0);
  EQ(strstr(r->steps.how, "no range matches --step 'nope'") != NULL, 1);
  gp_res_free(r);
  tl_free(&t);
}

/* Work is counted in the step that launched it. Steps [0,100), [100,200)
 * and [200,300) (and two more, so that 5 repeat). Step 0 launches k2 at
 * [90,95) corr 1; it runs [150,180), inside step 1's interval. Step 1
 * launches nothing. Step 0: kernel_ns 30, kernels 1; its kernel category
 * 0. Step 1: kernel_ns 0, kernel category 30. */
static void test_by_correlation(void) {
  struct tl t;
  base(&t);
  for (uint64_t i = 0; i < 5; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 100 * i, S_STEP, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 100 * i + 100, 0, 0);
  }
  tl_api(&t, 1, LAUNCH, 90, 95, 0, 1);
  struct gpuphase_kernel *k = tl_kernel(&t, 0, 150, 180, S_K2, 200, 128);
  k->corr = 1;
  t.o.warmup = 0;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_REPEATED_RANGE);
  EQ(s->n, 5);
  EQ(s->v[0].c[GP_SC_kernel_ns], 30);
  EQ(s->v[0].c[GP_SC_kernels], 1);
  EQ(s->v[0].c[GP_SC_launches], 1);
  EQ(s->v[0].cat[GP_CAT_KERNEL], 0);
  EQ(s->v[1].c[GP_SC_kernel_ns], 0);
  EQ(s->v[1].cat[GP_CAT_KERNEL], 30);
  EQ(s->v[1].c[GP_SC_launches], 0);
  gp_res_free(r);
  tl_free(&t);
}

/* ProfilerStep#0..#7 (each a different name) are one sequence, found
 * without --step, before a more frequent range; default warm-up
 * max(3, 10% of 8) = 3. */
static void test_profiler_step(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 5, 0, 0);
  for (uint64_t i = 0; i < 8; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 100 * i, S_PS0 + i, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 100 * i + 50 + i, 0, 0);
  }
  for (uint64_t i = 0; i < 20; i++) { /* another thread: more, longer */
    tl_range(&t, 2, GPUPHASE_RANGE_PUSH, 40 * i, S_DATA, 0);
    tl_range(&t, 2, GPUPHASE_RANGE_POP, 40 * i + 39, 0, 0);
  }
  t.o.warmup = -1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_PROFILER_STEP);
  EQ(s->n, 8);
  EQ(s->warmup, 3);
  EQ(s->measured, 5);
  /* measured durations 53..57: median 55, max 57 */
  EQ(s->median_ns, 55);
  EQ(s->max_ns, 57);
  EQ(s->nslow, 5);
  EQ(s->slow[0], 7);
  EQ(strcmp(s->name, "ProfilerStep#*"), 0);
  gp_res_free(r);
  tl_free(&t);
}

/* Top-level "data" [300i, 300i+100) and "step" [300i+100, 300i+300) for
 * i = 0..5, "init" 5 times in [0,50) only (its occurrences stretch over
 * less than half of the window): "step" covers the most (6 x 200). */
static void test_repeated(void) {
  struct tl t;
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 5, 0, 0);
  for (uint64_t i = 0; i < 6; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 300 * i, S_DATA, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 300 * i + 100, 0, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 300 * i + 100, S_STEP, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 300 * i + 300, 0, 0);
  }
  for (uint64_t i = 0; i < 5; i++) {
    tl_range(&t, 3, GPUPHASE_RANGE_PUSH, 10 * i, S_INIT, 0);
    tl_range(&t, 3, GPUPHASE_RANGE_POP, 10 * i + 9, 0, 0);
  }
  t.o.warmup = 1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_REPEATED_RANGE);
  EQ(strcmp(s->name, "step"), 0);
  EQ(s->n, 6);
  EQ(s->median_ns, 200);
  gp_res_free(r);
  tl_free(&t);
  /* a start-up longer than the loop (a launch at 0, five steps from
   * 100000 to the end at 100500): still the steps */
  base(&t);
  tl_api(&t, 1, LAUNCH, 0, 5, 0, 0);
  for (uint64_t i = 0; i < 5; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 100000 + 100 * i, S_STEP, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 100000 + 100 * i + 90, 0, 0);
  }
  tl_api(&t, 1, LAUNCH, 100495, 100500, 0, 0);
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_REPEATED_RANGE);
  EQ(r->steps.n, 5);
  gp_res_free(r);
  tl_free(&t);
}

/* No ranges: a synchronising call returning at 1000i + 900 (i = 0..6)
 * cuts 6 steps of 1000 ns; a blocking copy at irregular times does not
 * (its intervals vary too much). */
static void test_heuristic(void) {
  struct tl t;
  base(&t);
  static const uint64_t at[] = {0, 30, 2000, 2100, 5000, 5100, 6500};
  for (uint64_t i = 0; i < 7; i++) {
    tl_api(&t, 1, SYNC, 1000 * i + 800, 1000 * i + 900, 0, 0);
    tl_api(&t, 1, MEMCPY, at[i], at[i] + 5, 0, 0);
  }
  t.o.warmup = 0;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_HEURISTIC);
  EQ(strcmp(s->name, "cudaDeviceSynchronize"), 0);
  EQ(s->n, 6);
  EQ(s->v[0].start, 900);
  EQ(s->median_ns, 1000);
  /* each step holds one sync call (started at +900 of its interval) */
  EQ(s->c_med[GP_SC_syncs], 1);
  gp_res_free(r);
  /* one interval six times longer (a preempted thread) among 8 of 1000:
   * still regular (quartiles 1000, 1000), a standard deviation would not
   * have said so */
  struct tl w;
  base(&w);
  for (uint64_t i = 0, at = 800; i < 10; i++, at += i == 5 ? 6000 : 1000)
    tl_api(&w, 1, SYNC, at, at + 100, 0, 0);
  r = tl_run(&w);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.n, 9);
  gp_res_free(r);
  tl_free(&w);
  /* only 4 returns: 3 intervals, too few */
  struct tl u;
  base(&u);
  for (uint64_t i = 0; i < 4; i++)
    tl_api(&u, 1, SYNC, 1000 * i + 800, 1000 * i + 900, 0, 0);
  r = tl_run(&u);
  EQ(r->steps.source, GP_STEPS_NONE);
  EQ(r->steps.n, 0);
  EQ(strstr(r->steps.how, "no steps found") != NULL, 1);
  gp_res_free(r);
  tl_free(&u);
  tl_free(&t);
}

/* Items: 3 + 5 per step from the API; a fixed count where a step has
 * none. Steps as in loop(): 5 measured over 4600 ns. */
static void test_items(void) {
  struct tl t;
  base(&t);
  loop(&t, S_STEP, 6);
  for (uint64_t i = 0; i < 6; i++) {
    items(&t, 1, 1000 * i + 100, 3);
    if (i != 4) items(&t, 2, 1000 * i + 200, 5);
  }
  items(&t, 1, 700, 1000); /* between steps: no step's */
  t.o.warmup = 1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->items_known, 1);
  EQ(s->v[3].c[GP_SC_items], 8);
  EQ(s->v[4].c[GP_SC_items], 3);
  /* 8 + 8 + 8 + 3 + 8 = 35 items over 4600 ns */
  NEAR(s->items_per_s, 35 / 4.6e-6, 1e-3);
  NEAR(s->items_per_busy_s, 35 / 1e-6, 1e-3);
  gp_res_free(r);
  tl_free(&t);
  /* GPUPHASE_STEP_ITEMS=64 (the header's), no API items */
  base(&t);
  loop(&t, S_STEP, 6);
  t.o.warmup = 1;
  t.o.step_items = 64;
  r = tl_run(&t);
  EQ(r->steps.items_known, 1);
  EQ(r->steps.items_fixed, 64);
  EQ(r->steps.c_med[GP_SC_items], 64);
  NEAR(r->steps.items_per_s, 5 * 64 / 4.6e-6, 1e-3);
  gp_res_free(r);
  tl_free(&t);
}

/* With steps and warm-up fixed and detail asked for, kernels and API calls
 * of the measured steps are counted: 5 measured steps x one 200 ns k1,
 * one launch and one sync each (the sync blocked 200 ns). */
static void test_detail(void) {
  struct tl t;
  base(&t);
  loop(&t, S_STEP, 6);
  t.o.step = "step";
  t.o.warmup = 1;
  t.o.step_detail = 1;
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->steps.detail, 1);
  const struct gp_kernel_res *k = tl_kern(r, "k1");
  EQ(k->count, 6);
  EQ(k->step_count, 5);
  EQ(k->step_ns, 1000);
  const struct gp_api_res *l = tl_apires(r, "cudaLaunchKernel");
  EQ(l->step_count, 5);
  const struct gp_api_res *y = tl_apires(r, "cudaDeviceSynchronize");
  EQ(y->step_count, 5);
  EQ(y->step_blocked, 1000);
  EQ(y->step_total, 1000);
  gp_res_free(r);
  /* a second pass of steps found alone keeps their source and name */
  t.o.step_exact = 1;
  t.o.step_source = GP_STEPS_REPEATED_RANGE;
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_REPEATED_RANGE);
  EQ(r->steps.name && !strcmp(r->steps.name, "step"), 1);
  EQ(r->steps.n, 6);
  gp_res_free(r);
  tl_free(&t);
}

/* The detail of steps found alone, or of --step without --warmup, in one
 * pass: gathered by step set version while the trace is read, and summed
 * over the chosen steps once they are known. 40 steps of loop() on thread
 * 1 ([1000i, 1000i + 600)), and a range "data" [1000i - 100, 1000i +
 * 500) on thread 2 for i = 1..39 (another candidate, open at once, and
 * first in each version, with the step before's index; "step" covers
 * more and is chosen). The warm-up by default is max(3, 40 / 10) = 4
 * steps: 36 measured, each with one launch, one 200 ns k1 and one sync
 * blocked 200 ns. Asked for with --step and --warmup (fixed steps) or
 * gathered, the detail is the same. */
static void gathered_loop(struct tl *t) {
  base(t);
  loop(t, S_STEP, 40);
  for (uint64_t i = 1; i < 40; i++) {
    tl_range(t, 2, GPUPHASE_RANGE_PUSH, 1000 * i - 100, S_DATA, 0);
    tl_range(t, 2, GPUPHASE_RANGE_POP, 1000 * i + 500, 0, 0);
  }
  t->o.step_detail = 1;
}

static void check_loop_detail(struct gp_proc_res *r, uint64_t measured) {
  EQ(r->steps.source != GP_STEPS_NONE, 1);
  EQ(r->steps.name && !strcmp(r->steps.name, "step"), 1);
  EQ(r->steps.n, 40);
  EQ(r->steps.warmup, 40 - measured);
  EQ(r->steps.detail, 1);
  const struct gp_kernel_res *k = tl_kern(r, "k1");
  EQ(k->count, 40);
  EQ(k->step_count, measured);
  EQ(k->step_ns, 200 * measured);
  const struct gp_api_res *l = tl_apires(r, "cudaLaunchKernel");
  EQ(l->step_count, measured);
  EQ(l->step_total, 10 * measured);
  EQ(l->step_blocked, 0);
  const struct gp_api_res *y = tl_apires(r, "cudaDeviceSynchronize");
  EQ(y->step_count, measured);
  EQ(y->step_total, 200 * measured);
  EQ(y->step_blocked, 200 * measured);
}

static void test_detail_gathered(void) {
  static const struct {
    const char *step;
    long warmup;
    int source;
    uint64_t measured;
  } cases[] = {
      {"step", 4, GP_STEPS_NAMED, 36},            /* fixed steps */
      {NULL, -1, GP_STEPS_REPEATED_RANGE, 36},    /* found alone */
      {"step", -1, GP_STEPS_NAMED, 36},           /* --step, no --warmup */
      {NULL, 10, GP_STEPS_REPEATED_RANGE, 30},    /* found, --warmup 10 */
  };
  struct tl t;
  struct gp_proc_res *r;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    gathered_loop(&t);
    t.o.step = cases[i].step;
    t.o.warmup = cases[i].warmup;
    r = tl_run(&t);
    EQ(r->steps.source, cases[i].source);
    check_loop_detail(r, cases[i].measured);
    gp_res_free(r);
    tl_free(&t);
  }
  /* a log with room for 3 entries (each holds a version's launches, k1s
   * or syncs): given up, no detail from this pass (the pipeline reads
   * the trace again with the steps fixed) */
  gathered_loop(&t);
  t.o.warmup = -1;
  gp_steps_glog_cap(3);
  r = tl_run(&t);
  gp_steps_glog_cap(0);
  EQ(r->steps.detail, 0);
  EQ(tl_kern(r, "k1")->step_count, 0);
  EQ(r->steps.n, 40);
  gp_res_free(r);
  tl_free(&t);
}

/* Launches at iteration i (b = 1000i, thread 1, no range, no
 * synchronising call) of `iters`: function 0xA0 [b+10, b+20) when
 * i % a_every == 0, its kernel k1 [b+50, b+250); 0xB0 [b+30, b+40), its
 * k2 [b+250, b+400); 0xC0 twice, [b+500, b+505) and [b+700, b+705), no
 * kernel (its intervals alternate 200 and 800: not regular). */
static void launch_loop_at(struct tl *t, uint64_t iters, uint64_t a_every,
                           int jitter) {
  base(t);
  for (uint64_t i = 0, corr = 1, b = 0; i < iters;
       b += jitter && i % 2 ? 3000 : 1000, i++) {
    if (i % a_every == 0) {
      tl_api(t, 1, LAUNCH, b + 10, b + 20, 0, corr)->func = 0xA0;
      tl_kernel(t, 0, b + 50, b + 250, S_K1, 200, 128)->corr = corr++;
    }
    tl_api(t, 1, LAUNCH, b + 30, b + 40, 0, corr)->func = 0xB0;
    tl_kernel(t, 0, b + 250, b + 400, S_K2, 200, 128)->corr = corr++;
    tl_api(t, 1, LAUNCH, b + 500, b + 505, 0, corr++)->func = 0xC0;
    tl_api(t, 1, LAUNCH, b + 700, b + 705, 0, corr++)->func = 0xC0;
  }
}

static void launch_loop(struct tl *t, uint64_t iters, uint64_t a_every) {
  launch_loop_at(t, iters, a_every, 0);
}

/* No step range and no synchronising call: a repeating sequence of
 * launches. 0xA0 and 0xB0 are both launched every 4 launches, 9 times in a
 * row (10 iterations; 0xC0's 1 and 3 alternate); 0xA0 is launched first,
 * so a step starts at each launch of it: 9 whole
 * steps [1000i + 10, 1000(i + 1) + 10), the last one still open at the
 * end. The first pass keeps none of them (incomplete); the second, with
 * the function fixed, does, and names the kernel from its device record.
 * Each step holds 4 launches (0xA0, 0xB0, 0xC0 twice) and the 2 kernels
 * they ran: 200 + 150 = 350 ns. */
static void test_launch_heuristic(void) {
  struct tl t;
  launch_loop(&t, 10, 1);
  t.o.step_detail = 1;
  t.o.warmup = -1;
  struct gp_proc_res *r = tl_run(&t);
  struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_HEURISTIC);
  EQ(s->func, 0xA0);
  EQ(s->incomplete, 1);
  EQ(s->n, 9);
  EQ(s->warmup, 3);
  EQ(s->by_seq, 1);
  t.o.step_func = s->func; /* what the pipeline's second pass is given */
  t.o.step_by_seq = s->by_seq;
  t.o.warmup = (long)s->warmup;
  gp_res_free(r);
  r = tl_run(&t);
  s = &r->steps;
  EQ(s->source, GP_STEPS_HEURISTIC);
  EQ(s->incomplete, 0);
  EQ(s->func, 0xA0);
  EQ(s->name && !strcmp(s->name, "k1"), 1);
  EQ(strstr(s->how, "each launch of the kernel 'k1' (launched every 4 "
                    "launches, 9 times in a row)") != NULL,
     1);
  EQ(s->n, 9);
  for (size_t i = 0; i < s->n; i++) {
    EQ(s->v[i].start, 1000 * i + 10);
    EQ(s->v[i].end, 1000 * i + 1010);
  }
  EQ(s->median_ns, 1000);
  EQ(s->c_med[GP_SC_launches], 4);
  EQ(s->c_med[GP_SC_kernels], 2);
  EQ(s->c_med[GP_SC_kernel_ns], 350);
  EQ(s->c_med[GP_SC_syncs], 0);
  /* the steps from 3 on (the open one at the end too, as with every
   * source) launched k1 seven times */
  EQ(tl_kern(r, "k1")->step_count, 7);
  gp_res_free(r);
  tl_free(&t);
  /* 0xA0 every other iteration of 12: the sequence repeats every two
   * iterations, 0xA0 every 7 launches 5 times in a row (0xB0's 4 and 3
   * alternate), so 5 steps of two iterations */
  launch_loop(&t, 12, 2);
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.func, 0xA0);
  EQ(r->steps.n, 5);
  gp_res_free(r);
  tl_free(&t);
  /* a layer's kernel: 0xD0 launched 8 times an iteration, 100 ns apart
   * from +100, then 0xE0 at +900, iterations 2000 ns apart (12). 0xD0's
   * intervals are regular (7 of 8 are 100 ns: quartiles 100, 100) and it
   * is the most launched, but its launches are 1 apart, then 2: 0xE0,
   * every 9 launches, is the loop */
  base(&t);
  for (uint64_t i = 0, corr = 1; i < 12; i++) {
    uint64_t b = 2000 * i;
    for (uint64_t k = 0; k < 8; k++, corr++) {
      tl_api(&t, 1, LAUNCH, b + 100 + 100 * k, b + 105 + 100 * k, 0, corr)
          ->func = 0xD0;
      tl_kernel(&t, 0, b + 150 + 100 * k, b + 190 + 100 * k, S_K1, 200,
                128)->corr = corr;
    }
    tl_api(&t, 1, LAUNCH, b + 900, b + 905, 0, corr)->func = 0xE0;
    tl_kernel(&t, 0, b + 950, b + 990, S_K2, 200, 128)->corr = corr++;
  }
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.func, 0xE0);
  EQ(r->steps.n, 11);
  gp_res_free(r);
  tl_free(&t);
  /* one function launched twice an iteration, nothing else: its launches
   * are 1 apart (which tells nothing) and alternate 100 and 900 ns: no
   * steps */
  base(&t);
  for (uint64_t i = 0, corr = 1; i < 12; i++) {
    tl_api(&t, 1, LAUNCH, 1000 * i, 1000 * i + 5, 0, corr++)->func = 0xF0;
    tl_api(&t, 1, LAUNCH, 1000 * i + 100, 1000 * i + 105, 0, corr++)->func =
        0xF0;
  }
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NONE);
  gp_res_free(r);
  tl_free(&t);
  /* iterations alternately 1000 and 3000 ns long (jitter of a loop of
   * microseconds): the intervals are not regular (quartiles 1000 and
   * 3000), but 0xA0 and 0xB0 are launched every 4 launches, 9 times in a
   * row over the whole loop: 0xA0, launched first, starts the steps */
  launch_loop_at(&t, 10, 1, 1);
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.func, 0xA0);
  EQ(r->steps.n, 9);
  EQ(strstr(r->steps.how, "launched every 4 launches, 9 times in a row") !=
         NULL,
     1);
  gp_res_free(r);
  tl_free(&t);
  /* 5 iterations: 4 intervals, too few */
  launch_loop(&t, 5, 1);
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NONE);
  gp_res_free(r);
  tl_free(&t);
  /* a synchronising call that repeats regularly comes first */
  launch_loop(&t, 10, 1);
  for (uint64_t i = 0; i < 10; i++)
    tl_api(&t, 1, SYNC, 1000 * i + 800, 1000 * i + 900, 0, 0);
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.func, 0);
  EQ(r->steps.name && !strcmp(r->steps.name, "cudaDeviceSynchronize"), 1);
  gp_res_free(r);
  tl_free(&t);
  /* a range that repeats 6 times early, [600 + 30i, 620 + 30i), stops
   * the launches being followed at its fifth end (740), and then does not
   * stretch over half of the window: no choice, but a pass following the
   * launches alone (step_launches) makes the steps of 0xA0 */
  launch_loop(&t, 10, 1);
  for (uint64_t i = 0; i < 6; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 600 + 30 * i, S_INIT, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 620 + 30 * i, 0, 0);
  }
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NONE);
  EQ(r->steps.relaunch, 1);
  gp_res_free(r);
  t.o.step_launches = 1;
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.relaunch, 0);
  EQ(r->steps.func, 0xA0);
  EQ(r->steps.n, 9);
  gp_res_free(r);
  tl_free(&t);
  /* a range around the launch alone, but for the first of 10 iterations,
   * which waits for its kernel inside it: [0, 600) holds k1 [25, 525),
   * the others [1000i, 1000i + 50) launch k1 [+100, +300) after them.
   * Over all ten, 500 of 2300 ns run inside (held); over the measured
   * ones (warm-up max(3, 1) = 3), 0 of 1400: not the step. The launches,
   * regular, make the steps, and the reason is said. */
  base(&t);
  for (uint64_t i = 0; i < 10; i++) {
    uint64_t b = 1000 * i;
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
    tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, i + 1)->func = 0xA0;
    tl_kernel(&t, 0, i ? b + 100 : 25, i ? b + 300 : 525, S_K1, 200, 128)
        ->corr = i + 1;
    if (!i) tl_api(&t, 1, SYNC, 530, 590, 0, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, i ? b + 50 : 600, 0, 0);
  }
  t.o.warmup = -1;
  r = tl_run(&t);
  /* the range repeated, so the launches stopped being followed: a pass of
   * their own (pipeline.c), told why the range is not the step */
  EQ(r->steps.source, GP_STEPS_NONE);
  EQ(r->steps.relaunch, 1);
  EQ(r->steps.why != NULL, 1);
  char *why = r->steps.why ? strdup(r->steps.why) : NULL;
  gp_res_free(r);
  t.o.step_launches = 1;
  t.o.step_why = why;
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_HEURISTIC);
  EQ(r->steps.func, 0xA0);
  EQ(strstr(r->steps.how, "the top-level range 'step' repeats 10 times") !=
         NULL,
     1);
  gp_res_free(r);
  free(why);
  tl_free(&t);
  /* a repeated range comes first too */
  launch_loop(&t, 10, 1);
  for (uint64_t i = 0; i < 10; i++) {
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 1000 * i + 5, S_STEP, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, 1000 * i + 900, 0, 0);
  }
  r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_REPEATED_RANGE);
  gp_res_free(r);
  tl_free(&t);
}

/* The file: gathered_loop's 40 steps (without "data"), written by the
 * trace writer (thread 1's calls and ranges in source 1, the kernels in
 * source 2). gp_report_file with per-step detail and the steps found
 * alone reads it once (the progress callback's last call, done == size,
 * comes once a pass), and twice when the log has no room, with the same
 * detail. */
static gp_writer *fw;

static void fadd(uint32_t src, const struct gpuphase_record *r) {
  if (gp_writer_add(fw, src, r) != GPUPHASE_OK) {
    fprintf(stderr, "test_steps: write failed\n");
    exit(1);
  }
}

static uint64_t fstr(const char *s) {
  return gp_writer_intern(fw, s, strlen(s));
}

static void frange(uint64_t op, uint64_t at, uint64_t name) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_RANGE};
  r.u.range.thread = 1;
  r.u.range.op = op;
  r.u.range.start = at;
  r.u.range.name = name;
  fadd(1, &r);
}

static void fapi(uint64_t api, uint64_t start, uint64_t end, uint64_t corr) {
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API};
  r.u.api = (struct gpuphase_api){.thread = 1, .api = api, .start = start,
                                  .end = end, .corr = corr, .device = 0};
  fadd(1, &r);
}

/* Opens fw on path as process pid, with the launch and synchronising
 * calls' definitions and device 0 (100 SMs). */
static void fopen_trace(const char *path, uint64_t pid, const char *cmd) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), err = 0;
  struct gp_process_info info = {.host = "h", .pid = pid, .ppid = 1,
                                 .rank = -1, .local_rank = -1,
                                 .cmdline = cmd, .clock = "clock_gettime"};
  if (fd < 0 || !(fw = gp_writer_open(fd, &info, 512, &err))) {
    perror(path);
    exit(1);
  }
  struct gpuphase_record r = {.kind = GPUPHASE_REC_API_DEF};
  r.u.api_def = (struct gpuphase_api_def){
      LAUNCH, fstr("cudaLaunchKernel"),
      GPUPHASE_API_LAUNCH | GPUPHASE_API_ASYNC, 0};
  fadd(0, &r);
  r.u.api_def = (struct gpuphase_api_def){SYNC, fstr("cudaDeviceSynchronize"),
                                          GPUPHASE_API_SYNC, 0};
  fadd(0, &r);
  r = (struct gpuphase_record){.kind = GPUPHASE_REC_DEVICE};
  r.u.device.device = 0;
  r.u.device.name = fstr("Test GPU");
  r.u.device.sms = 100;
  fadd(0, &r);
}

static void write_loop(const char *path) {
  struct gpuphase_record r;
  fopen_trace(path, 7, "./loop");
  uint64_t step = fstr("step"), k1 = fstr("k1");
  for (uint64_t i = 0; i < 40; i++) {
    uint64_t b = 1000000 + 1000 * i;
    frange(GPUPHASE_RANGE_PUSH, b, step);
    fapi(LAUNCH, b + 10, b + 20, i + 1);
    fapi(SYNC, b + 300, b + 500, 0);
    frange(GPUPHASE_RANGE_POP, b + 600, 0);
    r = (struct gpuphase_record){.kind = GPUPHASE_REC_KERNEL};
    r.u.kernel = (struct gpuphase_kernel){
        .device = 0, .stream = 7, .corr = i + 1, .start = b + 50,
        .end = b + 250, .name = k1, .grid_x = 200, .grid_y = 1, .grid_z = 1,
        .block_x = 128, .block_y = 1, .block_z = 1};
    fadd(2, &r);
  }
  if (gp_writer_close(fw, NULL) != GPUPHASE_OK) {
    fprintf(stderr, "test_steps: close failed\n");
    exit(1);
  }
}

static void count_pass(void *ctx, const char *path, uint64_t done,
                       uint64_t size, uint64_t records) {
  (void)path;
  (void)records;
  if (size && done == size) ++*(int *)ctx;
}

static void test_one_pass(void) {
  char dir[] = "/tmp/gp-steps-XXXXXX", path[64];
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  snprintf(path, sizeof path, "%s/loop.gph", dir);
  write_loop(path);
  for (int cap = 0; cap < 2; cap++) {
    struct gp_report_opts o = {.warmup = -1, .step_detail = 1};
    int passes = 0, status = 0;
    char err[512] = "";
    gp_steps_glog_cap(cap ? 3 : 0);
    struct gp_proc_res *r =
        gp_report_file(path, &o, count_pass, &passes, &status, err, sizeof err);
    gp_steps_glog_cap(0);
    if (!r) {
      fprintf(stderr, "test_steps: %s\n", err);
      exit(1);
    }
    EQ(passes, cap ? 2 : 1);
    EQ(r->steps.source, GP_STEPS_REPEATED_RANGE);
    check_loop_detail(r, 36);
    gp_res_free(r);
  }
  unlink(path);
  rmdir(dir);
}

/* The passes over a file of launch_loop(12, 1) (times + 1 ms) whose
 * range "init" repeats 6 times early ([710 + 30i, 730 + 30i) past the
 * start, then never): the first pass chooses nothing and stopped
 * following launches, a second follows them alone and chooses 0xA0,
 * whose steps it did not keep, and a third keeps them: 11 steps of
 * 1000 ns, named after the kernel k1, 3 of warm-up. */
static void test_launch_passes(void) {
  char dir[] = "/tmp/gp-steps-XXXXXX", path[64];
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    exit(1);
  }
  snprintf(path, sizeof path, "%s/launches.gph", dir);
  struct gpuphase_record r;
  fopen_trace(path, 8, "./launches");
  uint64_t init = fstr("init"), kn[2] = {fstr("k1"), fstr("k2")};
  const uint64_t t0 = 1000000;
  for (uint64_t i = 0, corr = 1; i < 12; i++) {
    uint64_t b = t0 + 1000 * i;
    static const uint64_t func[4] = {0xA0, 0xB0, 0xC0, 0xC0};
    static const uint64_t at[4] = {10, 30, 500, 700};
    for (int j = 0; j < 4; j++, corr++) {
      r = (struct gpuphase_record){.kind = GPUPHASE_REC_API};
      r.u.api = (struct gpuphase_api){.thread = 1, .api = LAUNCH,
                                      .start = b + at[j], .end = b + at[j] + 5,
                                      .corr = corr, .device = 0,
                                      .func = func[j]};
      fadd(1, &r);
      /* a thread's records in time order, as the recorder writes them */
      for (uint64_t k = 0; k < 6 && i == 0 && j == 3; k++) {
        frange(GPUPHASE_RANGE_PUSH, t0 + 710 + 30 * k, init);
        frange(GPUPHASE_RANGE_POP, t0 + 730 + 30 * k, 0);
      }
      if (j > 1) continue;
      r = (struct gpuphase_record){.kind = GPUPHASE_REC_KERNEL};
      r.u.kernel = (struct gpuphase_kernel){
          .device = 0, .stream = 7, .corr = corr,
          .start = b + (j ? 250 : 50), .end = b + (j ? 400 : 250),
          .name = kn[j], .grid_x = 200, .grid_y = 1, .grid_z = 1,
          .block_x = 128, .block_y = 1, .block_z = 1};
      fadd(2, &r);
    }
  }
  if (gp_writer_close(fw, NULL) != GPUPHASE_OK) {
    fprintf(stderr, "test_steps: close failed\n");
    exit(1);
  }
  struct gp_report_opts o = {.warmup = -1, .step_detail = 1};
  int passes = 0, status = 0;
  char e[512] = "";
  struct gp_proc_res *res =
      gp_report_file(path, &o, count_pass, &passes, &status, e, sizeof e);
  if (!res) {
    fprintf(stderr, "test_steps: %s\n", e);
    exit(1);
  }
  EQ(passes, 3);
  const struct gp_steps_res *s = &res->steps;
  EQ(s->source, GP_STEPS_HEURISTIC);
  EQ(s->name && !strcmp(s->name, "k1"), 1);
  EQ(s->n, 11);
  EQ(s->warmup, 3);
  EQ(s->median_ns, 1000);
  EQ(s->v[0].start, t0 + 10);
  EQ(s->detail, 1);
  gp_res_free(res);
  unlink(path);
  rmdir(dir);
}

/* Gathered detail of a synchronising call's steps. Iteration i (0..11)
 * at b = 1000i: launch [b+10, b+20) corr i+1, its k2 [b+50, b+250), and
 * cudaDeviceSynchronize [b+300, b+500). Step j (0..10) runs from the
 * return of iteration j to that of j + 1, and holds iteration j + 1's
 * calls and kernel; the step opened at the last return is not a whole one
 * (11 steps). Warm-up max(3, 11 / 10) = 3: steps 3..10, iterations 4..11,
 * 8 of each. */
static void test_detail_gathered_sync(void) {
  for (int fixed = 0; fixed < 2; fixed++) {
    struct tl t;
    base(&t);
    for (uint64_t i = 0; i < 12; i++) {
      uint64_t b = 1000 * i;
      tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, i + 1);
      tl_kernel(&t, 0, b + 50, b + 250, S_K2, 200, 128)->corr = i + 1;
      tl_api(&t, 1, SYNC, b + 300, b + 500, 0, 0);
    }
    t.o.step_detail = 1;
    t.o.warmup = fixed ? 3 : -1;
    t.o.step_api = fixed ? "cudaDeviceSynchronize" : NULL;
    struct gp_proc_res *r = tl_run(&t);
    EQ(r->steps.source, GP_STEPS_HEURISTIC);
    EQ(r->steps.n, 11);
    EQ(r->steps.warmup, 3);
    EQ(r->steps.detail, 1);
    EQ(tl_kern(r, "k2")->step_count, 8);
    EQ(tl_kern(r, "k2")->step_ns, 1600);
    EQ(tl_apires(r, "cudaLaunchKernel")->step_count, 8);
    const struct gp_api_res *y = tl_apires(r, "cudaDeviceSynchronize");
    EQ(y->step_count, 8);
    EQ(y->step_blocked, 1600);
    gp_res_free(r);
    tl_free(&t);
  }
}

/* Pageable async copies: decided blocking when their device record comes,
 * counted as pageable and blocked in the step that made them. Steps
 * [0,1000) x 6 (repeated range), each with cudaMemcpyAsync [+100, +400)
 * corr 10+i whose pageable H2D copy runs [+150, +390). */
static void pageable_steps(struct tl *t) {
  base(t);
  for (uint64_t i = 0; i < 6; i++) {
    uint64_t b = 1000 * i;
    tl_range(t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
    struct gpuphase_api *a = tl_api(t, 1, MEMCPY_ASYNC, b + 100, b + 400, 0, 10 + i);
    a->copy_kind = GPUPHASE_COPY_HTOD;
    a->bytes = 4096;
    tl_copy(t, 0, b + 150, b + 390, 4096, GPUPHASE_COPY_HTOD, TL_PAGEABLE,
            TL_DEVMEM, 10 + i);
    tl_range(t, 1, GPUPHASE_RANGE_POP, b + 1000, 0, 0);
  }
  t->o.warmup = 1;
}

static void test_pageable(void) {
  struct tl t;
  pageable_steps(&t);
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->n, 6);
  EQ(s->c_med[GP_SC_h2d_copies], 1);
  EQ(s->c_med[GP_SC_h2d_bytes], 4096);
  EQ(s->c_med[GP_SC_pageable_copies], 1);
  EQ(s->c_med[GP_SC_xfer_ns], 240);
  EQ(s->c_med[GP_SC_sync_ns], 300);
  /* [100,150) and [390,400): idle in a call that blocked -> sync idle */
  CATS(s->v[2], 0, 240, 0, 60, 700);
  gp_res_free(r);
  tl_free(&t);
  /* per-step detail, fixed (--step) and gathered (found alone): the 5
   * measured copies' calls, each 300 ns, blocking once their device
   * record decided it */
  for (int fixed = 0; fixed < 2; fixed++) {
    pageable_steps(&t);
    t.o.step_detail = 1;
    t.o.step = fixed ? "step" : NULL;
    r = tl_run(&t);
    EQ(r->steps.detail, 1);
    const struct gp_api_res *c = tl_apires(r, "cudaMemcpyAsync");
    EQ(c->step_count, 5);
    EQ(c->step_total, 1500);
    EQ(c->step_blocked, 1500);
    gp_res_free(r);
    tl_free(&t);
  }
}

/* Copies of the default kind (cudaMemcpyDefault) and of an unknown one
 * (the driver's cuMemcpy): the call does not say the direction, the
 * device record does (from the memory on either side). Steps [0,1000) x 6,
 * each with a D2H copy of 2048 bytes made with the default kind and an H2D
 * of 512 bytes of an unknown kind; before, neither was counted. A
 * host-to-host copy has no counter. */
static void test_default_kind_copies(void) {
  for (int fixed = 0; fixed < 2; fixed++) {
    struct tl t;
    base(&t);
    for (uint64_t i = 0; i < 6; i++) {
      uint64_t b = 1000 * i;
      tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
      struct gpuphase_api *a =
          tl_api(&t, 1, MEMCPY_ASYNC, b + 100, b + 120, 0, 10 + 3 * i);
      a->copy_kind = GPUPHASE_COPY_DEFAULT;
      a->bytes = 2048;
      tl_copy(&t, 0, b + 150, b + 200, 2048, GPUPHASE_COPY_UNKNOWN,
              TL_DEVMEM, TL_PINNED, 10 + 3 * i);
      a = tl_api(&t, 1, MEMCPY_ASYNC, b + 300, b + 320, 0, 11 + 3 * i);
      a->copy_kind = GPUPHASE_COPY_UNKNOWN;
      a->bytes = 512;
      tl_copy(&t, 0, b + 350, b + 400, 512, GPUPHASE_COPY_HTOD, TL_PINNED,
              TL_DEVMEM, 11 + 3 * i);
      a = tl_api(&t, 1, MEMCPY_ASYNC, b + 500, b + 520, 0, 12 + 3 * i);
      a->copy_kind = GPUPHASE_COPY_HTOH;
      a->bytes = 64;
      tl_copy(&t, 0, b + 550, b + 560, 64, GPUPHASE_COPY_HTOH, TL_PINNED,
              TL_PINNED, 12 + 3 * i);
      tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 1000, 0, 0);
    }
    t.o.warmup = 1;
    t.o.step = fixed ? "step" : NULL;
    struct gp_proc_res *r = tl_run(&t);
    const struct gp_steps_res *s = &r->steps;
    EQ(s->n, 6);
    EQ(s->c_med[GP_SC_d2h_copies], 1);
    EQ(s->c_med[GP_SC_d2h_bytes], 2048);
    EQ(s->c_med[GP_SC_h2d_copies], 1);
    EQ(s->c_med[GP_SC_h2d_bytes], 512);
    EQ(s->c_med[GP_SC_d2d_copies], 0);
    EQ(s->c_med[GP_SC_p2p_copies], 0);
    gp_res_free(r);
    tl_free(&t);
  }
}

/* The per-step medians of gp_steps_derive, straight from a hand-made step
 * list: odd and even counts, repeated values, reversed order, and the
 * warm-up left out. Each expected value is the middle of the sorted list
 * (the two middle ones averaged, rounded down, when the count is even). */
static uint64_t derive_med(const uint64_t *x, size_t n, size_t warmup) {
  struct gp_steps_res s;
  memset(&s, 0, sizeof s);
  s.n = n;
  s.warmup = warmup;
  s.ndev = 1;
  s.v = calloc(n, sizeof *s.v);
  for (size_t i = 0; i < n; i++) {
    s.v[i].start = 1000 * i;
    s.v[i].end = 1000 * i + 10;
    s.v[i].c[GP_SC_kernel_ns] = x[i];
    s.v[i].cat[GP_CAT_KERNEL] = x[n - 1 - i];
  }
  EQ(gp_steps_derive(&s), 0);
  uint64_t m = s.c_med[GP_SC_kernel_ns];
  free(s.v);
  return m;
}

static void test_medians(void) {
  /* 1 1 3 4 5 -> 3 */
  EQ(derive_med((const uint64_t[]){5, 1, 4, 1, 3}, 5, 0), 3);
  /* 2 2 3 7 8 9 -> (3 + 7) / 2 */
  EQ(derive_med((const uint64_t[]){7, 2, 9, 2, 8, 3}, 6, 0), 5);
  /* 1 2 3 4 -> 2.5 rounded down */
  EQ(derive_med((const uint64_t[]){4, 3, 2, 1}, 4, 0), 2);
  /* the warm-up's 100 left out: 6 7 -> 6.5 rounded down */
  EQ(derive_med((const uint64_t[]){100, 7, 6}, 3, 1), 6);
  EQ(derive_med((const uint64_t[]){9, 9, 9, 9}, 4, 0), 9);
  /* one value: itself */
  EQ(derive_med((const uint64_t[]){42}, 1, 0), 42);
  /* 1001 .. 1 reversed and 1 .. 1000 with every value twice */
  uint64_t big[2000];
  for (size_t i = 0; i < 1001; i++)
    big[i] = 1001 - i;
  EQ(derive_med(big, 1001, 0), 501);
  for (size_t i = 0; i < 2000; i++)
    big[i] = 1 + (i * 7919 % 2000) / 2;
  /* sorted: 1 1 2 2 ... 1000 1000; the middle two are both 500 */
  EQ(derive_med(big, 2000, 0), 500);
}

/* distinct_kernels with more step candidates open at once than a kernel
 * name had slots for: four synchronising calls of other APIs (ids 20..23)
 * on thread 2 at [1,2), [3,4), [5,6), [7,8) are candidates 0..3, each
 * with a step open from its return to the end; cudaDeviceSynchronize on
 * thread 1 is the fifth (4). Iteration i (0..7) at b = 1000(i+1) launches
 * k1 twice ([b+10,b+20) and [b+30,b+40), corr 2i+1 and 2i+2; kernels
 * [b+50,b+150) and [b+200,b+300)) and synchronises [b+400,b+500). The
 * steps are the seven intervals between the eight returns of
 * cudaDeviceSynchronize, [b+500, b+1500): each holds the two launches of
 * the next iteration, so 2 kernels of 200 ns in all, 1 distinct (the name
 * is counted once per step of each candidate). */
static void test_distinct_many(void) {
  struct tl t;
  base(&t);
  static const char *sn[] = {"cudaStreamSynchronize", "cudaEventSynchronize",
                             "cudaCtxSynchronize", "cudaThreadSynchronize"};
  for (uint64_t i = 0; i < 4; i++) {
    tl_str(&t, 30 + i, sn[i]);
    tl_api_def(&t, 20 + i, 30 + i, GPUPHASE_API_SYNC);
  }
  for (uint64_t i = 0; i < 4; i++)
    tl_api(&t, 2, 20 + i, 1 + 2 * i, 2 + 2 * i, 0, 0);
  for (uint64_t i = 0; i < 8; i++) {
    uint64_t b = 1000 * (i + 1);
    tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, 2 * i + 1);
    tl_api(&t, 1, LAUNCH, b + 30, b + 40, 0, 2 * i + 2);
    tl_kernel(&t, 0, b + 50, b + 150, S_K1, 200, 128)->corr = 2 * i + 1;
    tl_kernel(&t, 0, b + 200, b + 300, S_K1, 200, 128)->corr = 2 * i + 2;
    tl_api(&t, 1, SYNC, b + 400, b + 500, 0, 0);
  }
  t.o.warmup = 1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_HEURISTIC);
  EQ(s->n, 7);
  EQ(s->median_ns, 1000);
  EQ(s->c_med[GP_SC_kernels], 2);
  EQ(s->c_med[GP_SC_kernel_ns], 200);
  EQ(s->c_med[GP_SC_distinct_kernels], 1);
  gp_res_free(r);
  tl_free(&t);
}

/* Device work whose records arrive long after their steps closed, in an
 * order that mixes the steps. Steps i = 0..7 are "step" ranges [1000i,
 * 1000i + 600) on thread 1; each launches k1 (corr 2i + 1) at [+10, +20)
 * and k2 (corr 2i + 2) at [+30, +40). The kernels run after the last step,
 * from 9000 on, 50 ns apart, k1 of steps 0 4 1 5 2 6 3 7 and then k2 of
 * the same, and each lasts 10 + i (k1) or 20 + i (k2) ns. So step i holds
 * 2 kernels, 2 distinct, 30 + 2i ns of kernel time, 2 launches. Found
 * alone, "step" would not be the step: no kernel runs inside it (0% of
 * the 296 ns launched from it), it times the launch calls; so --step. */
static void test_late_mixed(void) {
  struct tl t;
  base(&t);
  for (uint64_t i = 0; i < 8; i++) {
    uint64_t b = 1000 * i;
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
    tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, 2 * i + 1);
    tl_api(&t, 1, LAUNCH, b + 30, b + 40, 0, 2 * i + 2);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 600, 0, 0);
  }
  static const uint64_t order[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (uint64_t j = 0; j < 16; j++) {
    uint64_t i = order[j % 8], k2 = j >= 8, at = 9000 + 50 * j;
    uint64_t dur = (k2 ? 20 : 10) + i;
    tl_kernel(&t, 0, at, at + dur, k2 ? S_K2 : S_K1, 200, 128)->corr =
        2 * i + 1 + k2;
  }
  t.o.warmup = 0;
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NONE);
  EQ(strstr(r->steps.how, "the top-level range 'step' repeats 8 times, but "
                          "the kernels run inside it for 0.0% of the time "
                          "of those it launches") != NULL,
     1);
  gp_res_free(r);
  t.o.step = "step";
  r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_NAMED);
  EQ(s->n, 8);
  for (uint64_t i = 0; i < 8 && i < s->n; i++) {
    EQ(s->v[i].c[GP_SC_kernels], 2);
    EQ(s->v[i].c[GP_SC_distinct_kernels], 2);
    EQ(s->v[i].c[GP_SC_kernel_ns], 30 + 2 * i);
    EQ(s->v[i].c[GP_SC_launches], 2);
  }
  gp_res_free(r);
  tl_free(&t);
}

/* More steps than the 65,536 the other candidates may keep. Thread 1 runs
 * 70,000 top-level "step" ranges [1000i, 1000i + 600) and, between them,
 * 70,000 top-level "data" ranges [1000i + 700, 1000i + 800): "step"
 * covers most time (600 against 100 each) and keeps all of its steps, so
 * one pass has them all; "data" is dropped once past the cap. Before the
 * lead was kept, the largest candidate was the one dropped: "step" was
 * chosen with its steps missing (incomplete, a second pass needed). */
static void test_many_steps(void) {
  struct tl t;
  base(&t);
  enum { N = 70000 };
  for (uint64_t i = 0; i < N; i++) {
    uint64_t b = 1000 * i;
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
    tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, i + 1);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 600, 0, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b + 700, S_DATA, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 800, 0, 0);
  }
  t.o.warmup = -1; /* the default */
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_REPEATED_RANGE);
  EQ(s->name && !strcmp(s->name, "step"), 1);
  EQ(s->incomplete, 0);
  EQ(s->n, N);
  /* warm-up max(3, 10%) = 7,000; every measured step is 600 ns */
  EQ(s->warmup, N / 10);
  EQ(s->median_ns, 600);
  EQ(s->max_ns, 600);
  gp_res_free(r);
  tl_free(&t);
}

/* gp_job_step_of against a scan of every step: 200 steps with gaps
 * between them (step i is [100i + g_i, 100i + 60 + g_i), g_i in 0..29),
 * asked about times that mostly increase by a little, sometimes jump back
 * or far ahead (another stream's kernels), and about the range's edges. */
static void test_step_of(void) {
  enum { NS = 200 };
  struct gp_step v[NS];
  memset(v, 0, sizeof v);
  uint64_t seed = 12345;
  for (size_t i = 0; i < NS; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    v[i].start = 100 * i + (seed >> 33) % 30;
    v[i].end = v[i].start + 60;
  }
  struct gp_steps_res s;
  memset(&s, 0, sizeof s);
  s.v = v;
  s.n = NS;
  static const size_t ranges[][2] = {{0, NS}, {20, NS}, {20, 150}, {7, 7}};
  for (size_t r = 0; r < 4; r++) {
    size_t from = ranges[r][0], to = ranges[r][1], hint = 0, bad = 0;
    uint64_t t = 0;
    for (int q = 0; q < 20000; q++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t x = seed >> 33;
      if (x % 50 == 0)
        t = x % (100 * NS + 200); /* a jump anywhere, back or ahead */
      else
        t += x % 40;
      if (t > 100 * NS + 200) t = x % 100;
      long want = -1;
      for (size_t i = from; i < to; i++)
        if (v[i].start <= t && t < v[i].end) want = (long)i;
      bad += gp_job_step_of(&s, from, to, t, &hint) != want;
    }
    EQ(bad, 0);
  }
}

/* The loop of test_named inside an outer range "init" [0, 6600) that
 * opens once: --step's ranges and ProfilerStep#N are steps at their
 * outermost occurrence on the thread, whatever encloses them. Steps at
 * 100 + 1000i; the window starts at 110, so steps 1..5 are those of
 * test_named. A "step" inside a "step" is part of the outer one. */
static void test_nested_named(void) {
  struct tl t;
  base(&t);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 0, S_INIT, 0);
  loop_at(&t, S_STEP, 6, 100);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 6600, 0, 0);
  t.o.step = "step";
  t.o.warmup = 1;
  struct gp_proc_res *r = tl_run(&t);
  const struct gp_steps_res *s = &r->steps;
  EQ(s->source, GP_STEPS_NAMED);
  EQ(s->n, 6);
  EQ(s->median_ns, 600);
  CATS(s->v[3], 200, 0, 10, 200, 190);
  EQ(strstr(s->how, "each outermost 'step' range is a step") != NULL, 1);
  gp_res_free(r);
  /* without --step: "init" opens once and "step" is not top-level */
  t.o.step = NULL;
  r = tl_run(&t);
  EQ(r->steps.source != GP_STEPS_NAMED, 1);
  EQ(r->steps.source != GP_STEPS_REPEATED_RANGE, 1);
  gp_res_free(r);
  tl_free(&t);

  /* ProfilerStep#i inside "init": found without --step */
  base(&t);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 0, S_INIT, 0);
  for (uint64_t i = 0; i < 6; i++)
    loop_at(&t, S_PS0 + i, 1, 100 + 1000 * i);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 6600, 0, 0);
  t.o.warmup = 1;
  r = tl_run(&t);
  s = &r->steps;
  EQ(s->source, GP_STEPS_PROFILER_STEP);
  EQ(s->n, 6);
  EQ(s->median_ns, 600);
  CATS(s->v[3], 200, 0, 10, 200, 190);
  gp_res_free(r);
  tl_free(&t);

  /* "step" [b, b+600) holding a "step" [b+5, b+595): six steps of 600,
   * and no note of ranges left out */
  base(&t);
  for (uint64_t i = 0; i < 6; i++) {
    uint64_t b = 1000 * i;
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b, S_STEP, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_PUSH, b + 5, S_STEP, 0);
    tl_api(&t, 1, LAUNCH, b + 10, b + 20, 0, i + 1);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 595, 0, 0);
    tl_range(&t, 1, GPUPHASE_RANGE_POP, b + 600, 0, 0);
  }
  t.o.step = "step";
  t.o.warmup = 1;
  r = tl_run(&t);
  EQ(r->steps.n, 6);
  EQ(r->steps.median_ns, 600);
  EQ(r->steps.max_ns, 600);
  EQ(r->nnotes, 0);
  gp_res_free(r);
  tl_free(&t);

  /* 6 top-level "step" ranges, then 6 more inside "init": --step takes
   * all 12; the pass fixed on the repeated range a first pass chose
   * (step_exact) keeps the 6 top-level ones that pass counted */
  base(&t);
  loop(&t, S_STEP, 6);
  tl_range(&t, 1, GPUPHASE_RANGE_PUSH, 7000, S_INIT, 0);
  loop_at(&t, S_STEP, 6, 7100);
  tl_range(&t, 1, GPUPHASE_RANGE_POP, 13000, 0, 0);
  t.o.step = "step";
  t.o.warmup = 1;
  r = tl_run(&t);
  EQ(r->steps.n, 12);
  gp_res_free(r);
  t.o.step_exact = 1;
  r = tl_run(&t);
  EQ(r->steps.n, 6);
  gp_res_free(r);
  tl_free(&t);
}

/* The loop of test_named without --step, then a kernel running until
 * 20000: "step" repeats 6 times over [0, 5600), 28% of the window from
 * its first occurrence on (20000 ns), so it is not the step, and neither
 * the synchronising call nor the launches (over the same stretch): no
 * steps, and the report says why the range was not taken. */
static void test_range_short(void) {
  struct tl t;
  base(&t);
  loop(&t, S_STEP, 6);
  tl_api(&t, 1, LAUNCH, 5700, 5710, 0, 99);
  struct gpuphase_kernel *k = tl_kernel(&t, 0, 5800, 20000, S_K2, 200, 128);
  k->corr = 99;
  struct gp_proc_res *r = tl_run(&t);
  EQ(r->steps.source, GP_STEPS_NONE);
  EQ(r->steps.n, 0);
  EQ(strstr(r->steps.how, "the top-level range 'step' repeats 6 times, but "
                          "its occurrences stretch over only 28% of the "
                          "window") != NULL,
     1);
  gp_res_free(r);
  tl_free(&t);
}

int main(void) {
  test_step_of();
  test_many_steps();
  test_named();
  test_nested_named();
  test_range_short();
  test_distinct_many();
  test_late_mixed();
  test_by_correlation();
  test_profiler_step();
  test_repeated();
  test_heuristic();
  test_launch_heuristic();
  test_items();
  test_detail();
  test_detail_gathered();
  test_detail_gathered_sync();
  test_one_pass();
  test_launch_passes();
  test_pageable();
  test_default_kind_copies();
  test_medians();
  if (tl_failures) fprintf(stderr, "%d check(s) failed\n", tl_failures);
  return tl_failures ? 1 : 0;
}
