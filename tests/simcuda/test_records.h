/* A minimal CUPTI activity client for the self-tests: copies every record
 * of every completed buffer into an array the test then inspects. */
#ifndef GPUSIM_TEST_RECORDS_H
#define GPUSIM_TEST_RECORDS_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "test_util.h"

typedef struct rec {
  CUpti_ActivityKind kind;
  union {
    CUpti_ActivityKernel10 k;
    CUpti_ActivityMemcpy6 m;
    CUpti_ActivityMemcpyPtoP4 p;
    CUpti_ActivityMemset4 s;
    CUpti_ActivitySynchronization2 y;
  } u;
} rec;

#define MAX_RECS 8192
static rec recs[MAX_RECS];
static int nrecs;
static int buffers_completed;
static size_t rec_buffer_size = 64 * 1024;
static pthread_mutex_t rec_lock = PTHREAD_MUTEX_INITIALIZER;

static void CUPTIAPI rec_request(uint8_t **buf, size_t *size, size_t *max) {
  *buf = (uint8_t *)aligned_alloc(8, rec_buffer_size);
  *size = rec_buffer_size;
  *max = 0;
}

static inline size_t rec_size(CUpti_ActivityKind kind) {
  switch (kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    return sizeof(CUpti_ActivityKernel10);
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    return sizeof(CUpti_ActivityMemcpy6);
  case CUPTI_ACTIVITY_KIND_MEMCPY2:
    return sizeof(CUpti_ActivityMemcpyPtoP4);
  case CUPTI_ACTIVITY_KIND_MEMSET:
    return sizeof(CUpti_ActivityMemset4);
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    return sizeof(CUpti_ActivitySynchronization2);
  default:
    return 0;
  }
}

static void CUPTIAPI rec_complete(CUcontext ctx, uint32_t stream, uint8_t *buf,
                                  size_t size, size_t valid) {
  (void)ctx, (void)stream, (void)size;
  CUpti_Activity *r = NULL;
  pthread_mutex_lock(&rec_lock);
  buffers_completed++;
  while (cuptiActivityGetNextRecord(buf, valid, &r) == CUPTI_SUCCESS) {
    size_t n = rec_size(r->kind);
    if (nrecs < MAX_RECS && n) {
      recs[nrecs].kind = r->kind;
      memcpy(&recs[nrecs].u, r, n);
      nrecs++;
    }
  }
  pthread_mutex_unlock(&rec_lock);
  free(buf);
}

static void rec_start(void) {
  REQUIRE(cuptiActivityRegisterCallbacks(rec_request, rec_complete) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) ==
          CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS);
  REQUIRE(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) ==
          CUPTI_SUCCESS);
}

static void rec_flush(void) {
  REQUIRE(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) ==
          CUPTI_SUCCESS);
}

static inline void rec_clear(void) {
  rec_flush();
  pthread_mutex_lock(&rec_lock);
  nrecs = 0;
  pthread_mutex_unlock(&rec_lock);
}

/* The n-th (0-based) collected record of a kind, or NULL. */
static inline const rec *rec_nth(CUpti_ActivityKind kind, int n) {
  for (int i = 0; i < nrecs; i++)
    if (recs[i].kind == kind && n-- == 0) return &recs[i];
  return NULL;
}

static inline int rec_count(CUpti_ActivityKind kind) {
  int c = 0;
  for (int i = 0; i < nrecs; i++)
    c += recs[i].kind == kind;
  return c;
}

#define KERNEL(n) (&rec_nth(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, n)->u.k)

#endif
