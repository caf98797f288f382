/* Runs a fuzz target's LLVMFuzzerTestOneInput on files, and on the files
 * of directories, as libFuzzer would run a corpus: the seed corpus and the
 * crashes found (tests/fuzz/README.md) are regression tests in every
 * build, with any compiler.
 *   replay FILE|DIR...
 * A failing input aborts (the target's own checks) or trips a sanitizer;
 * the name of each input is printed first, so the log says which. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return -1;
  }
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0, n;
  do {
    if (len == cap) {
      cap = cap ? cap * 2 : 65536;
      uint8_t *p = realloc(buf, cap);
      if (!p) exit(1);
      buf = p;
    }
    n = fread(buf + len, 1, cap - len, f);
    len += n;
  } while (n);
  fclose(f);
  printf("%s (%zu bytes)\n", path, len);
  fflush(stdout);
  /* an exact-size copy, so that a sanitizer sees reads past the input */
  uint8_t *in = malloc(len ? len : 1);
  if (!in) exit(1);
  memcpy(in, buf, len);
  free(buf);
  LLVMFuzzerTestOneInput(in, len);
  free(in);
  return 0;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    perror(dir);
    return -1;
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    names = realloc(names, (n + 1) * sizeof *names);
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    snprintf(names[n++], len, "%s/%s", dir, e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, by_name);
  int rc = n ? 0 : -1; /* an empty corpus is a mistake */
  if (!n) fprintf(stderr, "%s: no inputs\n", dir);
  for (size_t i = 0; i < n; i++) {
    if (run_file(names[i])) rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv) {
  int rc = 0, inputs = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st)) {
      perror(argv[i]);
      rc = 1;
      continue;
    }
    if ((S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i])) < 0)
      rc = 1;
    inputs++;
  }
  if (!inputs) {
    fprintf(stderr, "usage: replay FILE|DIR...\n");
    return 2;
  }
  printf("replay: %s\n", rc ? "failed" : "ok");
  return rc;
}
