/* Budgets (reports/budget.c): the metric table, the grammar of an
 * expression and its units, budgets files with comments, and the one-line
 * errors (FILE:LINE) for every kind of bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "check.h"



static int find(const char *s) {
  return gp_metric_find(s, strlen(s));
}

static void test_table(void) {
  CHECK(find("step_time") == GP_M_STEP_MEDIAN);
  CHECK(find("step_median") == GP_M_STEP_MEDIAN);
  CHECK(find("host_wait") == GP_M_CAT0 + GP_CAT_HOST_WAIT);
  CHECK(find("pageable_copies") == GP_M_SC0 + GP_SC_pageable_copies);
  CHECK(find("hostwait") < 0 && find("") < 0);
  for (int a = 0; a < GP_M_N; a++) {
    CHECK(find(gp_metric_name(a)) == a); /* names are unique */
    CHECK(*gp_metric_doc(a));
  }
  CHECK(gp_metric_kind(GP_M_STEP_P95) == GP_MK_DUR);
  CHECK(gp_metric_kind(GP_M_CAT0) == GP_MK_CAT);
  CHECK(gp_metric_kind(GP_M_SC0 + GP_SC_h2d_bytes) == GP_MK_BYTES);
  CHECK(gp_metric_kind(GP_M_SC0 + GP_SC_sync_ns) == GP_MK_DUR);
  CHECK(gp_metric_kind(GP_M_SC0 + GP_SC_syncs) == GP_MK_COUNT);
  CHECK(gp_metric_higher_better(GP_M_STEPS_PER_S) &&
        gp_metric_higher_better(GP_M_SC0 + GP_SC_items) &&
        !gp_metric_higher_better(GP_M_STEP_MEDIAN));
  CHECK(!gp_counter_exact(GP_SC_kernel_ns) &&
        !gp_counter_exact(GP_SC_sync_ns) && !gp_counter_exact(GP_SC_xfer_ns) &&
        gp_counter_exact(GP_SC_launches));
  CHECK(strstr(gp_metric_list(), "host_wait") &&
        strstr(gp_metric_list(), "busy"));
}

static struct gp_budget one(const char *expr, int *ok, char *err, size_t n) {
  struct gp_budgets bs = {0};
  struct gp_budget b = {0};
  *ok = gp_budgets_add(&bs, expr, "--budget", err, n) == 0;
  if (*ok) b = bs.v[0];
  gp_budgets_free(&bs);
  return b;
}

static void good(const char *expr, int metric, enum gp_op op, double v,
                 int pct) {
  char err[1400] = "";
  int ok;
  struct gp_budget b = one(expr, &ok, err, sizeof err);
  if (!ok || b.metric != metric || b.op != op || b.value != v || b.pct != pct) {
    failures++;
    fprintf(stderr,
            "FAIL '%s': ok %d metric %d op %d value %.17g pct %d (%s)\n", expr,
            ok, b.metric, b.op, b.value, b.pct, err);
  }
}

static void bad(const char *expr, const char *want) {
  char err[1400] = "";
  int ok;
  one(expr, &ok, err, sizeof err);
  if (ok || !strstr(err, want) || strncmp(err, "--budget: ", 10) ||
      strchr(err, '\n')) {
    failures++;
    fprintf(stderr, "FAIL '%s' should fail with '%s', got '%s'\n", expr, want,
            ok ? "(accepted)" : err);
  }
}

static void test_grammar(void) {
  good("host_wait<=20%", GP_M_CAT0 + GP_CAT_HOST_WAIT, GP_OP_LE, 20, 1);
  good("  step_p95 <= 120ms ", GP_M_STEP_P95, GP_OP_LE, 120e6, 0);
  good("mem_peak<=60GiB", GP_M_MEM_PEAK, GP_OP_LE, 60.0 * (1ull << 30), 0);
  good("mem_peak<80%", GP_M_MEM_PEAK, GP_OP_LT, 80, 1);
  good("lost_events==0", GP_M_LOST_EVENTS, GP_OP_EQ, 0, 0);
  good("busy>=80%", GP_M_BUSY, GP_OP_GE, 80, 1);
  good("steps_per_s>50", GP_M_STEPS_PER_S, GP_OP_GT, 50, 0);
  good("items_per_s != 0", GP_M_ITEMS_PER_S, GP_OP_NE, 0, 0);
  good("pageable_copies==0", GP_M_SC0 + GP_SC_pageable_copies, GP_OP_EQ, 0, 0);
  good("h2d_bytes<1MB", GP_M_SC0 + GP_SC_h2d_bytes, GP_OP_LT, 1e6, 0);
  good("h2d_bytes<=4096", GP_M_SC0 + GP_SC_h2d_bytes, GP_OP_LE, 4096, 0);
  good("step_time<1.5 s", GP_M_STEP_MEDIAN, GP_OP_LT, 1.5e9, 0);
  good("host_wait<=2ms", GP_M_CAT0 + GP_CAT_HOST_WAIT, GP_OP_LE, 2e6, 0);
  good("sync_ns<=250us", GP_M_SC0 + GP_SC_sync_ns, GP_OP_LE, 250e3, 0);
  good("sm_coverage>=.5%", GP_M_SM_COVERAGE, GP_OP_GE, 0.5, 1);
}

static void test_errors(void) {
  bad("window<=10KiB", "expected a duration");
  bad("hostwait<=20%", "unknown metric 'hostwait'");
  bad("host_wait=20%", "expected one of <= < >= > == !=");
  bad("host_wait 20%", "expected one of");
  bad("host_wait<=", "expected a value");
  bad("<=20%", "expected METRIC OP VALUE");
  bad("", "expected METRIC OP VALUE");
  bad("host_wait<=20", "expected a percentage of the step (%) or a duration");
  bad("busy>=80", "expected a percentage");
  bad("step_p95<=120", "expected a duration");
  bad("step_p95<=120MB", "expected a duration");
  bad("lost_events==1ms", "expected a plain number");
  bad("lost_events==0.5", "not a whole number of events");
  bad("host_wait<=120%", "cannot exceed 100%");
  bad("mem_peak<=60Gib", "unknown unit 'Gib'");
  bad("step_p95<=-5ms", "is not a number");
  bad("step_p95<=1e400ms", "is not a number");
  bad("step_p95<=nanms", "is not a number");
  bad("step_p95<=5ms extra", "unknown unit");
  /* decimal only, and no value past what a run measures (1e20 s was
   * accepted and then printed as 0 ns) */
  bad("step_p95<=0x10ms", "is not a number");
  bad("step_p95<=0X1p4ms", "is not a number");
  bad("step_p95<=99999999999999999999s", "too large");
  bad("mem_peak<=2000000TiB", "too large");
}

static void test_file(void) {
  char path[] = "/tmp/gp-budgets-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  FILE *f = fdopen(fd, "w");
  fputs("# budgets of the nightly job\n"
        "host_wait<=20%   # the data loader keeps up\n"
        "\n"
        "   \t\n"
        "step_p95<=120ms\n"
        "lost_events==0",
        f);
  fclose(f);
  struct gp_budgets bs = {0};
  char err[1400] = "";
  CHECK(gp_budgets_load(&bs, path, err, sizeof err) == 0);
  CHECK(bs.n == 3);
  if (bs.n == 3) {
    char where[200];
    snprintf(where, sizeof where, "%s:2", path);
    CHECK(!strcmp(bs.v[0].where, where));
    CHECK(!strcmp(bs.v[0].text, "host_wait<=20%"));
    snprintf(where, sizeof where, "%s:6", path);
    CHECK(!strcmp(bs.v[2].where, where));
  }
  /* --budget adds to a file's budgets */
  CHECK(gp_budgets_add(&bs, "busy>=50%", "--budget", err, sizeof err) == 0 &&
        bs.n == 4);
  gp_budgets_free(&bs);
  f = fopen(path, "w");
  fputs("host_wait<=20%\nstep_p95<=120ms\n\nbusy>=80\n", f);
  fclose(f);
  CHECK(gp_budgets_load(&bs, path, err, sizeof err) < 0);
  char want[200];
  snprintf(want, sizeof want, "%s:4: busy: ", path);
  CHECK(!strncmp(err, want, strlen(want)) && !strchr(err, '\n'));
  gp_budgets_free(&bs);
  unlink(path);
  CHECK(gp_budgets_load(&bs, path, err, sizeof err) < 0 &&
        strstr(err, "No such file"));
}

static void test_holds(void) {
  struct gp_budget b = {.value = 5};
  double v[3] = {4, 5, 6};
  const int want[6][3] = {{1, 1, 0}, {1, 0, 0}, {0, 1, 1},
                          {0, 0, 1}, {0, 1, 0}, {1, 0, 1}};
  for (int op = GP_OP_LE; op <= GP_OP_NE; op++) {
    b.op = (enum gp_op)op;
    for (int i = 0; i < 3; i++)
      CHECK(gp_budget_holds(&b, v[i]) == want[op][i]);
  }
  CHECK(!strcmp(gp_op_str(GP_OP_NE), "!="));
}

int main(void) {
  test_table();
  test_grammar();
  test_errors();
  test_file();
  test_holds();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
