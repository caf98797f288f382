/* Stream capture as the writer sees it in the API records: a successful
 * BeginCapture puts its stream in a capture; an event recorded on a
 * stream in a capture carries it to every stream that then waits on it
 * (fork); EndCapture on the stream that began it ends the capture for
 * all, and so does destroying that stream (destroying a joined stream
 * takes it out of the capture). Calls issued to a stream in a capture ran nothing: their records
 * get GPUPHASE_OP_CAPTURED. The tables are bounded: a capture beyond
 * them is not followed (one line on stderr). Writer thread only. Calls
 * of one thread are seen in order; a capture begun on one thread and fed
 * from another is followed only as far as the rings are drained in time
 * order (docs/interception.md). */
#include <stdlib.h>
#include <string.h>

#include "gp_capture.h"
#include "gp_apitab.h"
#include "gp_settings.h"
#include "gpuphase/trace_records.h"

enum { ROLE_NONE = 1, ROLE_BEGIN, ROLE_END, ROLE_RECORD, ROLE_WAIT, ROLE_DESTROY };
#define ROLE_PT 0x80 /* a _ptsz entry point: stream 0 is per-thread */

#define MAX_STREAMS 256
#define MAX_EVENTS 1024
#define HANDLE_PER_THREAD 0x2 /* cudaStreamPerThread, CU_STREAM_PER_THREAD */
#define HANDLE_LEGACY 0x1     /* cudaStreamLegacy, CU_STREAM_LEGACY */

struct cstream {
  uint64_t handle;
  uint32_t thread; /* per-thread default streams only, else 0 */
  uint64_t capture;
  int origin;
};

struct cevent {
  uint64_t handle, capture;
};

uint32_t gp_capture_streams;
static struct cstream streams[MAX_STREAMS];
static struct cevent events[MAX_EVENTS];
static uint32_t nevents;
static uint64_t captures; /* capture ids, from 1 */
static uint8_t *roles;
static uint32_t nroles;
static int warned;

static int role_of_name(const char *n) {
  size_t len = strlen(n);
  int pt = len > 5 && strcmp(n + len - 5, "_ptsz") == 0 ? ROLE_PT : 0;
  if (!strncmp(n, "cudaStreamBeginCapture", 22) ||
      !strncmp(n, "cuStreamBeginCapture", 20))
    return ROLE_BEGIN | pt;
  if (!strncmp(n, "cudaStreamEndCapture", 20) ||
      !strncmp(n, "cuStreamEndCapture", 18))
    return ROLE_END | pt;
  if (!strncmp(n, "cudaEventRecord", 15) || !strncmp(n, "cuEventRecord", 13))
    return ROLE_RECORD | pt;
  if (!strcmp(n, "cudaStreamWaitEvent") ||
      !strcmp(n, "cudaStreamWaitEvent_ptsz") ||
      !strcmp(n, "cuStreamWaitEvent") || !strcmp(n, "cuStreamWaitEvent_ptsz"))
    return ROLE_WAIT | pt;
  if (!strcmp(n, "cudaStreamDestroy") || !strcmp(n, "cuStreamDestroy_v2"))
    return ROLE_DESTROY;
  return ROLE_NONE | pt;
}

static int role(uint32_t id) {
  if (!roles) {
    nroles = gp_api_count();
    roles = calloc(nroles ? nroles : 1, 1);
    if (!roles) return ROLE_NONE;
  }
  if (id >= nroles) return ROLE_NONE;
  if (!roles[id]) roles[id] = (uint8_t)role_of_name(gp_api_name(id));
  return roles[id];
}

int gp_capture_has_role(uint32_t id) {
  return (role(id) & ~ROLE_PT) != ROLE_NONE;
}

/* The stream a call names: per-thread default streams are one per
 * thread; the legacy stream (which cannot capture) gives 0. */
static int key(uint64_t h, int r, uint32_t thread, uint64_t *kh, uint32_t *kt) {
  if (h == 0 && (r & ROLE_PT)) h = HANDLE_PER_THREAD;
  if (h == 0 || h == HANDLE_LEGACY) return 0;
  *kh = h;
  *kt = h == HANDLE_PER_THREAD ? thread : 0;
  return 1;
}

static struct cstream *find(uint64_t h, uint32_t t) {
  for (uint32_t i = 0; i < MAX_STREAMS; i++)
    if (streams[i].capture && streams[i].handle == h && streams[i].thread == t)
      return &streams[i];
  return NULL;
}

static void too_many(void) {
  if (!warned)
    gp_warn("too many capturing streams or events; calls issued to some "
            "captures are not marked");
  warned = 1;
}

static void join(uint64_t h, uint32_t t, uint64_t capture, int origin) {
  for (uint32_t i = 0; i < MAX_STREAMS; i++)
    if (!streams[i].capture) {
      streams[i] = (struct cstream){h, t, capture, origin};
      gp_capture_streams++;
      return;
    }
  too_many();
}

static void end_capture(uint64_t capture) {
  for (uint32_t i = 0; i < MAX_STREAMS; i++)
    if (streams[i].capture == capture) {
      streams[i].capture = 0;
      gp_capture_streams--;
    }
  for (uint32_t i = 0; i < nevents;)
    if (events[i].capture == capture)
      events[i] = events[--nevents];
    else
      i++;
}

static struct cevent *event(uint64_t h) {
  for (uint32_t i = 0; i < nevents; i++)
    if (events[i].handle == h) return &events[i];
  return NULL;
}

uint32_t gp_capture_note(uint32_t id, uint32_t thread, uint64_t stream,
                         uint64_t aux, int32_t ret) {
  int r = role(id);
  uint64_t h;
  uint32_t t;
  if (!key(stream, r, thread, &h, &t)) {
    struct cevent *e =
        (r & ~ROLE_PT) == ROLE_RECORD && nevents ? event(aux) : NULL;
    if (e && ret == 0) *e = events[--nevents]; /* recorded outside again */
    return 0;
  }
  struct cstream *s = gp_capture_streams ? find(h, t) : NULL;
  switch (r & ~ROLE_PT) {
  case ROLE_BEGIN:
    if (ret == 0 && !s) join(h, t, ++captures, 1);
    return 0;
  case ROLE_END:
    /* whatever the result, the capture ends when its origin ends it */
    if (s && s->origin) end_capture(s->capture);
    return 0;
  case ROLE_DESTROY:
    /* a destroyed stream leaves its capture, and the capture ends with the
     * stream that began it (nothing can end it after): a new stream that
     * gets the same handle is not in it */
    if (s && ret == 0) {
      if (s->origin) {
        end_capture(s->capture);
      } else {
        s->capture = 0;
        gp_capture_streams--;
      }
    }
    return 0;
  case ROLE_RECORD: {
    struct cevent *e = event(aux);
    if (ret != 0) return 0;
    if (!s) {
      if (e) *e = events[--nevents];
      return 0;
    }
    if (e)
      e->capture = s->capture;
    else if (nevents < MAX_EVENTS)
      events[nevents++] = (struct cevent){aux, s->capture};
    else
      too_many();
    return GPUPHASE_OP_CAPTURED;
  }
  case ROLE_WAIT: {
    const struct cevent *e = nevents ? event(aux) : NULL;
    if (ret == 0 && !s && e) { /* a fork: the stream joins the capture */
      join(h, t, e->capture, 0);
      return GPUPHASE_OP_CAPTURED;
    }
    return s && ret == 0 ? GPUPHASE_OP_CAPTURED : 0;
  }
  default:
    return s && ret == 0 ? GPUPHASE_OP_CAPTURED : 0;
  }
}

void gp_capture_reset(void) {
  memset(streams, 0, sizeof streams);
  nevents = 0;
  gp_capture_streams = 0;
  free(roles);
  roles = NULL;
  nroles = 0;
}
