/* gp_cpu_quota (job_par.h) on directories made to look like a machine's
 * /proc/self and /sys/fs/cgroup: cgroup v2 with the quota on the cgroup
 * or an ancestor, v1's cpu controller (alone or with cpuacct), a mount
 * whose root is a cgroup (a cgroup namespace's view), escaped mount
 * points, no quota, damaged files. The expected counts are the quotas
 * divided by their periods, rounded up, worked out by hand. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "job_par.h"

static char base[256];
static int serial;
static char root[512];

/* A fresh fake root for one case. */
static const char *fresh(void) {
  snprintf(root, sizeof root, "%s/c%d", base, ++serial);
  CHECK(mkdir(root, 0755) == 0);
  return root;
}

/* mkdir -p of root + rel, then the file's contents. */
static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s%s", root, rel);
  for (char *p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(path, 0755) != 0 && errno != EEXIST) CHECK(0);
      *p = '/';
    }
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(text, f);
  fclose(f);
}

static const char v2_mounts[] =
    "22 1 0:21 / /sys rw - sysfs sysfs rw\n"
    "31 22 0:28 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate\n";

int main(void) {
  snprintf(base, sizeof base, "/tmp/gp-cpuq-XXXXXX");
  if (!mkdtemp(base)) {
    perror("mkdtemp");
    return 1;
  }

  /* v2, the quota two levels up: 150000/100000 = 1.5 CPUs, so 2 */
  fresh();
  put("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/kubepods/cpu.max", "150000 100000\n");
  put("/sys/fs/cgroup/kubepods/pod1/cpu.max", "max 100000\n");
  put("/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "max 100000\n");
  CHECK(gp_cpu_quota(root) == 2);

  /* v2, the smallest of the chain: the cgroup's own 4, its parent's 8 */
  fresh();
  put("/proc/self/cgroup", "0::/a/b\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/a/cpu.max", "800000 100000\n");
  put("/sys/fs/cgroup/a/b/cpu.max", "400000 100000\n");
  CHECK(gp_cpu_quota(root) == 4);

  /* v2, a quota below one CPU still leaves one thread */
  fresh();
  put("/proc/self/cgroup", "0::/slow\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/slow/cpu.max", "20000 100000\n");
  CHECK(gp_cpu_quota(root) == 1);

  /* v2 inside a container: the cgroup is "/", the limit on the mount */
  fresh();
  put("/proc/self/cgroup", "0::/\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/cpu.max", "300000 100000\n");
  CHECK(gp_cpu_quota(root) == 3);

  /* v2, no limit anywhere */
  fresh();
  put("/proc/self/cgroup", "0::/user.slice\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  CHECK(gp_cpu_quota(root) == 0);

  /* v1, cpu and cpuacct together, as systemd mounts them: 250000/100000
   * = 2.5, so 3; the memory controller's path is not the cpu one */
  fresh();
  put("/proc/self/cgroup", "4:memory:/other\n3:cpu,cpuacct:/docker/abc\n"
                           "0::/\n");
  put("/proc/self/mountinfo",
      "31 22 0:28 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
      "35 31 0:30 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup "
      "rw,cpu,cpuacct\n"
      "36 31 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
  put("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_quota_us", "-1\n");
  put("/sys/fs/cgroup/cpu,cpuacct/docker/cpu.cfs_period_us", "100000\n");
  put("/sys/fs/cgroup/memory/other/cpu.cfs_quota_us", "100000\n");
  put("/sys/fs/cgroup/memory/other/cpu.cfs_period_us", "100000\n");
  CHECK(gp_cpu_quota(root) == 3);

  /* v1 with no quota (-1), as on many hosts: no limit */
  fresh();
  put("/proc/self/cgroup", "1:cpu:/\n");
  put("/proc/self/mountinfo",
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n");
  put("/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
  put("/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
  CHECK(gp_cpu_quota(root) == 0);

  /* a mount whose root is the cgroup itself (a cgroup namespace seen from
   * outside), at an escaped mount point: /proc/self/cgroup says
   * /job/step, the mount shows /job at "/mnt/cg v2" */
  fresh();
  put("/proc/self/cgroup", "0::/job/step\n");
  put("/proc/self/mountinfo",
      "40 1 0:40 /job /mnt/cg\\040v2 rw - cgroup2 cgroup2 rw\n"
      "41 1 0:41 /elsewhere /mnt/other rw - cgroup2 cgroup2 rw\n");
  put("/mnt/cg v2/step/cpu.max", "max 100000\n");
  put("/mnt/cg v2/cpu.max", "600000 100000\n");
  put("/mnt/other/cpu.max", "100000 100000\n");
  CHECK(gp_cpu_quota(root) == 6);

  /* v1 and v2 both limit (a hybrid host): the smaller one counts */
  fresh();
  put("/proc/self/cgroup", "1:cpu:/g\n0::/g\n");
  put("/proc/self/mountinfo",
      "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
      "33 31 0:30 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n");
  put("/sys/fs/cgroup/cpu/g/cpu.cfs_quota_us", "500000\n");
  put("/sys/fs/cgroup/cpu/g/cpu.cfs_period_us", "100000\n");
  put("/sys/fs/cgroup/unified/g/cpu.max", "700000 100000\n");
  CHECK(gp_cpu_quota(root) == 5);

  /* damaged files: nothing trusted, no limit */
  fresh();
  put("/proc/self/cgroup", "0::/x\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/x/cpu.max", "lots 100000\n");
  CHECK(gp_cpu_quota(root) == 0);
  fresh();
  put("/proc/self/cgroup", "0::/x\n");
  put("/proc/self/mountinfo", v2_mounts);
  put("/sys/fs/cgroup/x/cpu.max", "100000 0\n");
  CHECK(gp_cpu_quota(root) == 0);
  fresh();
  put("/proc/self/cgroup", "garbage without colons\n");
  put("/proc/self/mountinfo", "short line\n- - -\n");
  CHECK(gp_cpu_quota(root) == 0);

  /* nothing there at all */
  fresh();
  CHECK(gp_cpu_quota(root) == 0);

  /* the real machine: a default of at least one thread, and no more than
   * the quota where there is one */
  int q = gp_cpu_quota(""), d = gp_par_default();
  CHECK(d >= 1);
  if (q > 0) CHECK(d <= q);
  printf("this machine: quota %d, default threads %d\n", q, d);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", base);
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures != 0;
}
