/* gp_writer_intern: ids must depend on the bytes only, whatever address
 * they are passed from. The writer remembers strings by address as a
 * shortcut, so the cases that could fool it are here: another string at
 * a known address (same or other length), a known string at another
 * address, and more strings and addresses than it remembers. The file is
 * read back to check that every id names its string. */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "tt.h"

#define NWORDS 1000
#define WORD_MAX 48
/* More lengths than the writer's address cache has slots, so that some
 * two of them share a slot whatever its hash. */
#define PREFIX_MAX 300

struct model {
  char text[NWORDS + PREFIX_MAX + 8][PREFIX_MAX];
  size_t len[NWORDS + PREFIX_MAX + 8];
  uint64_t n; /* ids 1..n are text[0..n-1] */
};

/* The id a correct writer gives s: the position of its first interning. */
static uint64_t expect_id(struct model *m, const char *s, size_t len) {
  for (uint64_t i = 0; i < m->n; i++)
    if (m->len[i] == len && !memcmp(m->text[i], s, len)) return i + 1;
  memcpy(m->text[m->n], s, len);
  m->len[m->n] = len;
  return ++m->n;
}

static void intern(gp_writer *w, struct model *m, const char *s, size_t len) {
  uint64_t want = expect_id(m, s, len);
  uint64_t got = gp_writer_intern(w, s, len);
  if (got != want)
    fprintf(stderr, "\"%.*s\" at %p: id %llu, expected %llu\n", (int)len, s,
            (const void *)s, (unsigned long long)got, (unsigned long long)want);
  CHECK_EQ_U(got, want);
}

/* One buffer holding one string after another, like a name read into a
 * stack buffer for every event. */
static void reused_buffer(gp_writer *w, struct model *m) {
  char buf[WORD_MAX];
  memcpy(buf, "alpha", 5);
  intern(w, m, buf, 5);
  memcpy(buf, "bravo", 5); /* same address, same length */
  intern(w, m, buf, 5);
  memcpy(buf, "alpha", 5);
  intern(w, m, buf, 5);
  intern(w, m, buf, 4);     /* "alph": a prefix at the same address */
  intern(w, m, "alpha", 5); /* known bytes, other address */
  intern(w, m, "bravo", 5);
  memcpy(buf, "alphz", 5); /* differs in the last byte only */
  intern(w, m, buf, 5);
  buf[4] = 'a';
  intern(w, m, buf, 5);
}

/* Every prefix of one buffer, longest first (a shorter prefix then meets
 * a longer one's bytes at its address), then shortest first. */
static void prefixes(gp_writer *w, struct model *m) {
  static char buf[PREFIX_MAX];
  for (int i = 0; i < PREFIX_MAX; i++)
    buf[i] = (char)('A' + i % 26);
  for (size_t len = PREFIX_MAX; len > 0; len--)
    intern(w, m, buf, len);
  for (size_t len = 1; len <= PREFIX_MAX; len++)
    intern(w, m, buf, len);
}

/* Words written in turn into one buffer and also kept at their own
 * addresses, looked up in random order from both. */
static void many(gp_writer *w, struct model *m) {
  static char own[NWORDS][WORD_MAX];
  size_t len[NWORDS];
  uint64_t rng = 77;
  for (int i = 0; i < NWORDS; i++)
    len[i] = (size_t)snprintf(own[i], WORD_MAX, "%s_kernel_%d",
                              i % 2 ? "void" : "_ZN4gemm", i * 37 % NWORDS);
  char buf[WORD_MAX];
  for (int k = 0; k < 20000; k++) {
    int i = (int)(tt_rand(&rng) % NWORDS);
    if (k % 3) {
      intern(w, m, own[i], len[i]);
    } else {
      memcpy(buf, own[i], len[i]);
      intern(w, m, buf, len[i]);
    }
  }
}

/* Every STRING record in the file names the bytes the model gave its id. */
static void check_file(const char *path, const struct model *m) {
  int err;
  gpuphase_reader *r = gpuphase_reader_open(path, &err);
  CHECK(r != NULL);
  if (!r) return;
  struct gpuphase_record rec;
  uint64_t strings = 0;
  int rc;
  while ((rc = gpuphase_reader_next(r, &rec)) == 1) {
    if (rec.kind != GPUPHASE_REC_STRING) continue;
    uint64_t id = rec.u.string.id;
    CHECK_EQ_U(id, ++strings); /* each string once, in order */
    if (id > m->n) continue;
    CHECK_EQ_U(rec.u.string.text.len, m->len[id - 1]);
    CHECK(!memcmp(rec.u.string.text.data, m->text[id - 1], m->len[id - 1]));
  }
  CHECK(rc == 0);
  CHECK_EQ_U(strings, m->n);
  gpuphase_reader_close(r);
}

int main(void) {
  const char *path = tt_tmpfile("intern");
  int fd = open(path, O_WRONLY | O_TRUNC);
  struct gp_process_info in = tt_info();
  gp_writer *w = gp_writer_open(fd, &in, 4096, NULL);
  CHECK(w != NULL);
  static struct model m;
  CHECK_EQ_U(gp_writer_intern(w, "", 0), 0);
  reused_buffer(w, &m);
  CHECK_EQ_U(m.n, 4); /* alpha, bravo, alph, alphz */
  prefixes(w, &m);
  CHECK_EQ_U(m.n, 4 + PREFIX_MAX);
  many(w, &m);
  CHECK_EQ_U(m.n, 4 + PREFIX_MAX + NWORDS);
  CHECK(gp_writer_close(w, NULL) == GPUPHASE_OK);
  check_file(path, &m);
  return tt_done("test_intern");
}
