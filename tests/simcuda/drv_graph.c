/* Simulated driver: CUDA graphs. Graphs are built explicitly (node by
 * node, with dependencies) or by stream capture, which follows events
 * from the capturing stream into other streams (fork/join). An
 * executable graph holds the nodes flattened (child graphs inlined) in
 * topological order; a launch runs every node as soon as its
 * dependencies have ended, as if each branch had its own stream (see
 * README.md, "CUDA graphs"). */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static sim_graph *graphs; /* user handles: graphs and executable graphs */
static uint32_t graph_ids;
static uint64_t node_ids;
static sim_capture *captures; /* active stream captures */
static unsigned long long capture_ids;

static uint64_t max64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

static sim_graph *graph_new(int dev, bool exec) {
  sim_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->id = ++graph_ids;
  g->dev = dev;
  g->exec = exec;
  return g;
}

static void graph_free(sim_graph *g);

static void node_free(sim_node *n) {
  if (!n) return;
  if (n->kind == NODE_CHILD) graph_free(n->u.child);
  free(n->deps);
  free(n);
}

static void graph_free(sim_graph *g) {
  if (!g) return;
  for (size_t i = 0; i < g->n; i++)
    node_free(g->nodes[i]);
  free(g->nodes);
  free(g);
}

static void graph_link(sim_graph *g) {
  g->listed = true;
  g->next = graphs;
  graphs = g;
}

/* The listed graph h of the wanted flavour, unlinked if `take`. */
static sim_graph *graph_find(const void *h, bool exec, bool take) {
  for (sim_graph **pp = &graphs; *pp; pp = &(*pp)->next) {
    sim_graph *g = *pp;
    if ((const void *)g != h || g->exec != exec) continue;
    if (take) *pp = g->next;
    return g;
  }
  return NULL;
}

/* Node h if it belongs to g. */
static sim_node *node_in(const sim_graph *g, const void *h) {
  for (size_t i = 0; i < g->n; i++)
    if ((const void *)g->nodes[i] == h) return g->nodes[i];
  return NULL;
}

/* Appends a copy of *proto to g, following deps[0..nd) (nodes of g). */
static sim_node *graph_add(sim_graph *g, const sim_node *proto,
                           sim_node *const *deps, size_t nd) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 8;
    sim_node **v = realloc(g->nodes, cap * sizeof *v);
    if (!v) return NULL;
    g->nodes = v;
    g->cap = cap;
  }
  sim_node *n = malloc(sizeof *n);
  sim_node **d = nd ? malloc(nd * sizeof *d) : NULL;
  if (!n || (nd && !d)) {
    free(n);
    free(d);
    return NULL;
  }
  *n = *proto;
  if (nd) memcpy(d, deps, nd * sizeof *d);
  n->deps = d;
  n->ndeps = nd;
  n->graph = g;
  n->index = g->n;
  if (n->kind == NODE_MEM_ALLOC || n->kind == NODE_MEM_FREE) g->has_mem = true;
  g->nodes[g->n++] = n;
  return n;
}

/* Kahn's algorithm: the node indices of g in an order where every node
 * comes after its dependencies; NULL for a cycle or no memory. */
static size_t *topo_order(const sim_graph *g) {
  size_t n = g->n;
  size_t *indeg = calloc(n + 1, sizeof *indeg);
  size_t *start = calloc(n + 1, sizeof *start);
  size_t *succ = NULL, *out = malloc((n + 1) * sizeof *out);
  size_t edges = 0, head = 0, tail = 0;
  bool ok = indeg && start && out;
  for (size_t i = 0; ok && i < n; i++) {
    indeg[i] = g->nodes[i]->ndeps;
    edges += g->nodes[i]->ndeps;
    for (size_t k = 0; k < g->nodes[i]->ndeps; k++)
      start[g->nodes[i]->deps[k]->index]++;
  }
  if (ok && !(succ = malloc((edges + 1) * sizeof *succ))) ok = false;
  if (ok) { /* start[i]: first successor slot of node i */
    size_t sum = 0;
    for (size_t i = 0; i < n; i++) {
      size_t c = start[i];
      start[i] = sum;
      sum += c;
    }
    start[n] = sum;
    size_t *fill = calloc(n + 1, sizeof *fill);
    if (!fill) ok = false;
    for (size_t i = 0; ok && i < n; i++)
      for (size_t k = 0; k < g->nodes[i]->ndeps; k++) {
        size_t d = g->nodes[i]->deps[k]->index;
        succ[start[d] + fill[d]++] = i;
      }
    free(fill);
  }
  for (size_t i = 0; ok && i < n; i++)
    if (!indeg[i]) out[tail++] = i;
  while (ok && head < tail) {
    size_t i = out[head++];
    for (size_t k = start[i]; k < start[i + 1]; k++)
      if (--indeg[succ[k]] == 0) out[tail++] = succ[k];
  }
  if (tail != n) ok = false;
  free(indeg);
  free(start);
  free(succ);
  if (!ok) {
    free(out);
    return NULL;
  }
  return out;
}

/* A copy of g's nodes (same ids) into a new unlisted graph. */
static sim_graph *graph_copy(const sim_graph *g, bool exec) {
  sim_graph *c = graph_new(g->dev, exec);
  size_t *ord = c ? topo_order(g) : NULL;
  sim_node **map = ord ? calloc(g->n + 1, sizeof *map) : NULL;
  sim_node **deps = NULL;
  bool ok = map != NULL;
  for (size_t k = 0; ok && k < g->n; k++) {
    const sim_node *n = g->nodes[ord[k]];
    sim_node **d = realloc(deps, (n->ndeps + 1) * sizeof *d);
    if (!d) {
      ok = false;
      break;
    }
    deps = d;
    for (size_t j = 0; j < n->ndeps; j++)
      deps[j] = map[n->deps[j]->index];
    sim_node proto = *n;
    if (n->kind == NODE_CHILD &&
        !(proto.u.child = graph_copy(n->u.child, false)))
      ok = false;
    if (ok && !(map[n->index] = graph_add(c, &proto, deps, n->ndeps))) {
      if (n->kind == NODE_CHILD) graph_free(proto.u.child);
      ok = false;
    }
  }
  free(deps);
  free(map);
  free(ord);
  if (!ok) {
    graph_free(c);
    return NULL;
  }
  return c;
}

/* Appends g's nodes to exec graph x, in topological order, child graphs
 * inlined between an entry and an exit empty node carrying the child
 * node's id; g's root nodes follow `entry` when given. map[i] is the
 * node of x that stands for g's node i. */
static bool flatten(sim_graph *x, const sim_graph *g, sim_node *entry,
                    sim_node **map) {
  size_t *ord = topo_order(g);
  sim_node **deps = NULL;
  bool ok = ord != NULL;
  for (size_t k = 0; ok && k < g->n; k++) {
    const sim_node *n = g->nodes[ord[k]];
    size_t nd = n->ndeps ? n->ndeps : entry ? 1 : 0;
    size_t need = nd > 0 ? nd : 1;
    if (n->kind == NODE_CHILD && n->u.child->n > need) need = n->u.child->n;
    sim_node **d = realloc(deps, need * sizeof *d);
    if (!d) {
      ok = false;
      break;
    }
    deps = d;
    for (size_t j = 0; j < n->ndeps; j++)
      deps[j] = map[n->deps[j]->index];
    if (!n->ndeps && entry) deps[0] = entry;
    if (n->kind != NODE_CHILD) {
      ok = (map[n->index] = graph_add(x, n, deps, nd)) != NULL;
      continue;
    }
    const sim_graph *c = n->u.child;
    sim_node proto = {.kind = NODE_EMPTY, .id = n->id};
    sim_node *in = graph_add(x, &proto, deps, nd);
    sim_node **sub = in ? calloc(c->n + 1, sizeof *sub) : NULL;
    ok = sub && flatten(x, c, in, sub);
    if (ok) { /* the exit follows every node of the child */
      for (size_t j = 0; j < c->n; j++)
        deps[j] = sub[j];
      if (!c->n) deps[0] = in;
      ok =
          (map[n->index] = graph_add(x, &proto, deps, c->n ? c->n : 1)) != NULL;
    }
    free(sub);
  }
  free(deps);
  free(ord);
  return ok;
}

/* ---- stream capture ---- */

static bool tails_set(sim_stream *s, sim_node *const *v, size_t n) {
  if (n > s->cap_tails_cap) {
    sim_node **t = realloc(s->cap_tails, n * sizeof *t);
    if (!t) return false;
    s->cap_tails = t;
    s->cap_tails_cap = n;
  }
  if (n) memcpy(s->cap_tails, v, n * sizeof *v);
  s->ncap_tails = n;
  return true;
}

static bool tails_add(sim_stream *s, sim_node *n) {
  for (size_t i = 0; i < s->ncap_tails; i++)
    if (s->cap_tails[i] == n) return true;
  if (s->ncap_tails == s->cap_tails_cap) {
    size_t cap = s->cap_tails_cap ? s->cap_tails_cap * 2 : 4;
    sim_node **t = realloc(s->cap_tails, cap * sizeof *t);
    if (!t) return false;
    s->cap_tails = t;
    s->cap_tails_cap = cap;
  }
  s->cap_tails[s->ncap_tails++] = n;
  return true;
}

static void stream_leave(sim_stream *s) {
  free(s->cap_tails);
  s->cap_tails = NULL;
  s->ncap_tails = s->cap_tails_cap = 0;
  s->capture = NULL;
}

/* Every stream of the capture leaves it; the capture is unlisted and
 * freed, its graph returned (to the caller to keep or free). */
static sim_graph *capture_end(sim_capture *c) {
  for (int d = 0; d < gp_cfg.devices; d++)
    for (sim_stream *x = gp_dev[d].streams; x; x = x->next)
      if (x->capture == c) stream_leave(x);
  for (sim_capture **pp = &captures; *pp; pp = &(*pp)->next)
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  sim_graph *g = c->g;
  free(c);
  return g;
}

static sim_capture *capture_by_id(unsigned long long id) {
  for (sim_capture *c = captures; c; c = c->next)
    if (c->id == id) return c;
  return NULL;
}

/* A node captured on s follows s's last nodes and becomes its last. */
CUresult gp_capture(sim_stream *s, const sim_node *n) {
  sim_capture *c = s->capture;
  if (c->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  sim_node proto = *n;
  proto.id = ++node_ids;
  sim_node *x = graph_add(c->g, &proto, s->cap_tails, s->ncap_tails);
  if (x && tails_set(s, &x, 1)) return CUDA_SUCCESS;
  c->invalid = true;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void gp_capture_break(sim_stream *s) {
  if (s->capture) s->capture->invalid = true;
}

/* s is destroyed: a capture it started is discarded; one it was pulled
 * into is invalidated. */
void gp_capture_drop(sim_stream *s) {
  sim_capture *c = s->capture;
  if (!c) return;
  stream_leave(s); /* s may be out of its device's list already */
  if (c->origin == s) {
    graph_free(capture_end(c));
  } else {
    c->invalid = true;
  }
}

/* An event recorded on a capturing stream remembers the stream's last
 * nodes: a stream waiting on it continues from there. */
CUresult gp_capture_record(sim_stream *s, sim_event *e) {
  sim_capture *c = s->capture;
  if (c->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  sim_node **d = NULL;
  if (s->ncap_tails && !(d = malloc(s->ncap_tails * sizeof *d))) {
    c->invalid = true;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (s->ncap_tails) memcpy(d, s->cap_tails, s->ncap_tails * sizeof *d);
  free(e->cap_deps);
  e->cap_deps = d;
  e->ncap_deps = s->ncap_tails;
  e->cap_id = c->id;
  return CUDA_SUCCESS;
}

void gp_event_forget(sim_event *e) {
  free(e->cap_deps);
  e->cap_deps = NULL;
  e->ncap_deps = 0;
  e->cap_id = 0;
}

/* A wait that involves a capture: s is capturing, or e was recorded in
 * an active capture. *done is false when neither holds (a plain wait). */
CUresult gp_capture_wait(sim_stream *s, sim_event *e, bool *done) {
  sim_capture *ec = e->cap_id ? capture_by_id(e->cap_id) : NULL;
  *done = true;
  if (s->capture) {
    sim_capture *c = s->capture;
    if (c->invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (ec != c) { /* an event of outside work, or of another capture */
      c->invalid = true;
      if (ec) ec->invalid = true;
      return CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
    }
    for (size_t i = 0; i < e->ncap_deps; i++)
      if (!tails_add(s, e->cap_deps[i])) {
        c->invalid = true;
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
    return CUDA_SUCCESS;
  }
  if (!ec) {
    *done = false;
    return CUDA_SUCCESS;
  }
  if (s->kind == STREAM_LEGACY || s->dev != ec->origin->dev) {
    ec->invalid = true;
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  /* fork: s joins the capture, its next node follows the event's */
  if (!tails_set(s, e->cap_deps, e->ncap_deps)) {
    ec->invalid = true;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  s->capture = ec;
  return CUDA_SUCCESS;
}

/* The calls a capture forbids (synchronous copies, synchronisation of
 * the device, of an event or of a stream not capturing): while this
 * thread captures in global or thread-local mode, or any thread in
 * global mode, they fail and invalidate those captures. */
CUresult gp_capture_unsafe(void) {
  CUresult r = CUDA_SUCCESS;
  pthread_t self = pthread_self();
  for (sim_capture *c = captures; c; c = c->next) {
    bool mine = pthread_equal(c->thread, self);
    if (c->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
        (mine && c->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)) {
      c->invalid = true;
      r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
  }
  return r;
}

/* The legacy stream cannot be captured (it synchronises implicitly with
 * every blocking stream). */
static CUresult begin_capture(CUstream h, bool pt, CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  sim_capture *c = NULL;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && s->kind == STREAM_LEGACY)
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  else if (r == CUDA_SUCCESS && s->capture)
    r = CUDA_ERROR_ILLEGAL_STATE;
  else if (r == CUDA_SUCCESS && (!(c = calloc(1, sizeof *c)) ||
                                 !(c->g = graph_new(s->dev, false)))) {
    free(c);
    r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (r == CUDA_SUCCESS) {
    c->origin = s;
    c->id = ++capture_ids;
    c->mode = mode;
    c->thread = pthread_self();
    c->next = captures;
    captures = c;
    s->capture = c;
    s->ncap_tails = 0;
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream,
                                                       CUstreamCaptureMode m) {
  DRV_ENTER(cuStreamBeginCapture_v2, hStream, m);
  DRV_RETURN(begin_capture(hStream, false, m));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode m) {
  DRV_ENTER(cuStreamBeginCapture_v2_ptsz, hStream, m);
  DRV_RETURN(begin_capture(hStream, true, m));
}

/* Whether every last node of every other stream in the capture is one
 * of the origin's last nodes or an ancestor of one (joined back). */
static bool all_joined(const sim_capture *c) {
  const sim_graph *g = c->g;
  bool *seen = calloc(g->n + 1, sizeof *seen);
  sim_node **stack = malloc((g->n + 1) * sizeof *stack);
  size_t sp = 0;
  bool ok = seen && stack;
  for (size_t i = 0; ok && i < c->origin->ncap_tails; i++)
    stack[sp++] = c->origin->cap_tails[i], seen[stack[sp - 1]->index] = true;
  while (ok && sp) {
    const sim_node *n = stack[--sp];
    for (size_t k = 0; k < n->ndeps; k++)
      if (!seen[n->deps[k]->index]) {
        seen[n->deps[k]->index] = true;
        stack[sp++] = n->deps[k];
      }
  }
  for (int d = 0; ok && d < gp_cfg.devices; d++)
    for (const sim_stream *x = gp_dev[d].streams; ok && x; x = x->next)
      if (x->capture == c && x != c->origin)
        for (size_t i = 0; ok && i < x->ncap_tails; i++)
          ok = seen[x->cap_tails[i]->index];
  free(seen);
  free(stack);
  return ok;
}

/* Ends the capture whatever happened; an invalidated or unjoined one
 * yields no graph. */
static CUresult end_capture(CUstream h, bool pt, CUgraph *out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  *out = NULL;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  sim_capture *c = r == CUDA_SUCCESS ? s->capture : NULL;
  if (r == CUDA_SUCCESS && !c) r = CUDA_ERROR_ILLEGAL_STATE;
  if (r == CUDA_SUCCESS && c->origin != s) {
    c->invalid = true;
    r = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  } else if (r == CUDA_SUCCESS) {
    if (c->invalid)
      r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    else if (!all_joined(c))
      r = CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
    sim_graph *g = capture_end(c);
    if (r == CUDA_SUCCESS) {
      graph_link(g);
      *out = (CUgraph)g;
    } else {
      graph_free(g);
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream,
                                                  CUgraph *phGraph) {
  DRV_ENTER(cuStreamEndCapture, hStream, phGraph);
  DRV_RETURN(end_capture(hStream, false, phGraph));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream,
                                                       CUgraph *phGraph) {
  DRV_ENTER(cuStreamEndCapture_ptsz, hStream, phGraph);
  DRV_RETURN(end_capture(hStream, true, phGraph));
}

static CUresult capture_info(CUstream h, bool pt, CUstreamCaptureStatus *st,
                             cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *nd) {
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS) {
    const sim_capture *c = s->capture;
    *st = !c           ? CU_STREAM_CAPTURE_STATUS_NONE
          : c->invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                       : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    bool act = c && !c->invalid;
    if (id && c) *id = c->id;
    if (graph) *graph = act ? (CUgraph)c->g : NULL;
    if (deps) *deps = act ? (const CUgraphNode *)s->cap_tails : NULL;
    if (edges) *edges = NULL; /* every edge is a default one */
    if (nd) *nd = act ? s->ncap_tails : 0;
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3(
    CUstream hStream, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
    const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *nd) {
  DRV_ENTER(cuStreamGetCaptureInfo_v3, hStream, st, id, g, deps, edges, nd);
  DRV_RETURN(capture_info(hStream, false, st, id, g, deps, edges, nd));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(
    CUstream hStream, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
    const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *nd) {
  DRV_ENTER(cuStreamGetCaptureInfo_v3_ptsz, hStream, st, id, g, deps, edges,
            nd);
  DRV_RETURN(capture_info(hStream, true, st, id, g, deps, edges, nd));
}

static CUresult is_capturing(CUstream h, bool pt, CUstreamCaptureStatus *st) {
  return capture_info(h, pt, st, NULL, NULL, NULL, NULL, NULL);
}

GPUSIM_EXPORT CUresult CUDAAPI
cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  DRV_ENTER(cuStreamIsCapturing, hStream, captureStatus);
  DRV_RETURN(is_capturing(hStream, false, captureStatus));
}

GPUSIM_EXPORT CUresult CUDAAPI cuStreamIsCapturing_ptsz(
    CUstream hStream, CUstreamCaptureStatus *captureStatus) {
  DRV_ENTER(cuStreamIsCapturing_ptsz, hStream, captureStatus);
  DRV_RETURN(is_capturing(hStream, true, captureStatus));
}

/* ---- explicit construction ---- */

GPUSIM_EXPORT CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph,
                                             unsigned int flags) {
  DRV_ENTER(cuGraphCreate, phGraph, flags);
  sim_ctx *c;
  CUresult r = gp_need_ctx(&c);
  if (r == CUDA_SUCCESS && (!phGraph || flags)) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&gp_lock);
    sim_graph *g = graph_new(c->dev, false);
    if (g)
      graph_link(g);
    else
      r = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&gp_lock);
    *phGraph = (CUgraph)g;
  }
  DRV_RETURN(r);
}

/* Adds *proto to graph h after the listed dependencies (all nodes of h,
 * no duplicates). Under gp_lock. */
static CUresult add_locked(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
                           size_t nd, sim_node *proto) {
  sim_graph *g = graph_find(h, false, false);
  if (!g || !out || (nd && !deps)) return CUDA_ERROR_INVALID_VALUE;
  sim_node **d = nd ? malloc(nd * sizeof *d) : NULL;
  if (nd && !d) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = CUDA_SUCCESS;
  for (size_t i = 0; r == CUDA_SUCCESS && i < nd; i++) {
    if (!(d[i] = node_in(g, deps[i]))) r = CUDA_ERROR_INVALID_VALUE;
    for (size_t j = 0; r == CUDA_SUCCESS && j < i; j++)
      if (d[j] == d[i]) r = CUDA_ERROR_INVALID_VALUE;
  }
  sim_node *n = NULL;
  if (r == CUDA_SUCCESS) {
    proto->id = ++node_ids;
    if (!(n = graph_add(g, proto, d, nd))) r = CUDA_ERROR_OUT_OF_MEMORY;
  }
  free(d);
  *out = (CUgraphNode)n;
  return r;
}

static CUresult add_node(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
                         size_t nd, sim_node *proto) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  CUresult r = add_locked(out, h, deps, nd, proto);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

static CUresult kernel_params(const CUDA_KERNEL_NODE_PARAMS *p, sim_launch *l) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  CUfunction f = p->func ? p->func : (CUfunction)p->kern;
  if (!f || !gpusim_function_name(f)) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t blocks = (uint64_t)p->gridDimX * p->gridDimY * p->gridDimZ;
  uint64_t threads = (uint64_t)p->blockDimX * p->blockDimY * p->blockDimZ;
  if (blocks == 0 || threads == 0 || threads > 1024)
    return CUDA_ERROR_INVALID_VALUE;
  *l = (sim_launch){.grid = {p->gridDimX, p->gridDimY, p->gridDimZ},
                    .block = {p->blockDimX, p->blockDimY, p->blockDimZ},
                    .shmem = p->sharedMemBytes,
                    .type = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR};
  pthread_mutex_lock(&gp_lock);
  gp_launch_bind(l, f); /* the name and attributes its records carry */
  pthread_mutex_unlock(&gp_lock);
  return CUDA_SUCCESS;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddKernelNode_v2(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  DRV_ENTER(cuGraphAddKernelNode_v2, phGraphNode, hGraph, dependencies,
            numDependencies, nodeParams);
  sim_node n = {.kind = NODE_KERNEL};
  CUresult r = kernel_params(nodeParams, &n.u.k);
  if (r == CUDA_SUCCESS)
    r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &n);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddMemcpyNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx) {
  DRV_ENTER(cuGraphAddMemcpyNode, phGraphNode, hGraph, dependencies,
            numDependencies, copyParams, ctx);
  sim_node n = {.kind = NODE_COPY};
  CUresult r = gp_copy3d_params(copyParams, &n.u.c);
  if (r == CUDA_SUCCESS && n.u.c.bytes == 0) n.kind = NODE_EMPTY;
  if (r == CUDA_SUCCESS)
    r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &n);
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddMemsetNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *p, CUcontext ctx) {
  DRV_ENTER(cuGraphAddMemsetNode, phGraphNode, hGraph, dependencies,
            numDependencies, p, ctx);
  CUresult r = CUDA_SUCCESS;
  if (!p || !p->dst ||
      (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4) ||
      (p->height > 1 && p->pitch < (uint64_t)p->width * p->elementSize))
    r = CUDA_ERROR_INVALID_VALUE;
  sim_node n = {.kind = NODE_MEMSET};
  if (r == CUDA_SUCCESS) {
    uint64_t row = (uint64_t)p->width * p->elementSize;
    n.u.m =
        (sim_set){.dst = (uintptr_t)p->dst,
                  .value = p->value,
                  .bytes = row * p->height,
                  .extent = p->height ? (p->height - 1) * p->pitch + row : 0,
                  .async = true};
    if (!n.u.m.bytes) n.kind = NODE_EMPTY;
    r = add_node(phGraphNode, hGraph, dependencies, numDependencies, &n);
  }
  DRV_RETURN(r);
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddHostNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams) {
  DRV_ENTER(cuGraphAddHostNode, phGraphNode, hGraph, dependencies,
            numDependencies, nodeParams);
  if (!nodeParams || !nodeParams->fn) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  sim_node n = {.kind = NODE_HOST,
                .u.h = {nodeParams->fn, nodeParams->userData}};
  DRV_RETURN(add_node(phGraphNode, hGraph, dependencies, numDependencies, &n));
}

static CUresult add_event_node(CUgraphNode *out, CUgraph h,
                               const CUgraphNode *deps, size_t nd, CUevent ev,
                               int kind) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_event *e;
  sim_node n = {.kind = kind, .u.ev = ev};
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_event_get(ev, &e);
  if (r == CUDA_SUCCESS) r = add_locked(out, h, deps, nd, &n);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddEventRecordNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, CUevent event) {
  DRV_ENTER(cuGraphAddEventRecordNode, phGraphNode, hGraph, dependencies,
            numDependencies, event);
  DRV_RETURN(add_event_node(phGraphNode, hGraph, dependencies, numDependencies,
                            event, NODE_EVENT_RECORD));
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddEventWaitNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, CUevent event) {
  DRV_ENTER(cuGraphAddEventWaitNode, phGraphNode, hGraph, dependencies,
            numDependencies, event);
  DRV_RETURN(add_event_node(phGraphNode, hGraph, dependencies, numDependencies,
                            event, NODE_EVENT_WAIT));
}

/* The child graph is copied at the call (later changes to it do not
 * reach the node); graphs with memory nodes cannot be children. */
static CUresult add_child(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
                          size_t nd, CUgraph child) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  const sim_graph *c = graph_find(child, false, false);
  sim_node n = {.kind = NODE_CHILD};
  CUresult r = !c || c == (const sim_graph *)h ? CUDA_ERROR_INVALID_VALUE
               : c->has_mem                    ? CUDA_ERROR_NOT_SUPPORTED
                                               : CUDA_SUCCESS;
  if (r == CUDA_SUCCESS && !(n.u.child = graph_copy(c, false)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) r = add_locked(out, h, deps, nd, &n);
  if (r != CUDA_SUCCESS) graph_free(n.u.child);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddChildGraphNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, CUgraph childGraph) {
  DRV_ENTER(cuGraphAddChildGraphNode, phGraphNode, hGraph, dependencies,
            numDependencies, childGraph);
  DRV_RETURN(add_child(phGraphNode, hGraph, dependencies, numDependencies,
                       childGraph));
}

GPUSIM_EXPORT CUresult CUDAAPI
cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                    const CUgraphNode *dependencies, size_t numDependencies) {
  DRV_ENTER(cuGraphAddEmptyNode, phGraphNode, hGraph, dependencies,
            numDependencies);
  sim_node n = {.kind = NODE_EMPTY};
  DRV_RETURN(add_node(phGraphNode, hGraph, dependencies, numDependencies, &n));
}

/* The address is reserved here and returned in dptr; the memory counts
 * against the device from the node's run to its free (README). */
static CUresult add_alloc(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
                          size_t nd, CUDA_MEM_ALLOC_NODE_PARAMS *p) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!p || !p->bytesize) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&gp_lock);
  const sim_graph *g = graph_find(h, false, false);
  int dev = g ? g->dev : 0;
  if (p->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE)
    dev = p->poolProps.location.id;
  CUresult r = !g || dev < 0 || dev >= gp_cfg.devices ? CUDA_ERROR_INVALID_VALUE
                                                      : CUDA_SUCCESS;
  uintptr_t ptr = 0;
  if (r == CUDA_SUCCESS) r = gp_graph_mem_reserve(dev, p->bytesize, &ptr);
  sim_node n = {.kind = NODE_MEM_ALLOC};
  if (r == CUDA_SUCCESS) {
    n.u.mem.ptr = ptr;
    n.u.mem.bytes = gp_find_alloc(ptr)->size;
    r = add_locked(out, h, deps, nd, &n);
  }
  pthread_mutex_unlock(&gp_lock);
  if (r == CUDA_SUCCESS) p->dptr = (CUdeviceptr)ptr;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddMemAllocNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams) {
  DRV_ENTER(cuGraphAddMemAllocNode, phGraphNode, hGraph, dependencies,
            numDependencies, nodeParams);
  DRV_RETURN(add_alloc(phGraphNode, hGraph, dependencies, numDependencies,
                       nodeParams));
}

static CUresult add_free(CUgraphNode *out, CUgraph h, const CUgraphNode *deps,
                         size_t nd, CUdeviceptr dptr) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_graph_mem_is((uintptr_t)dptr) ? CUDA_SUCCESS
                                                : CUDA_ERROR_INVALID_VALUE;
  sim_node n = {.kind = NODE_MEM_FREE};
  if (r == CUDA_SUCCESS) {
    n.u.mem.ptr = (uintptr_t)dptr;
    n.u.mem.bytes = gp_find_alloc((uintptr_t)dptr)->size;
    r = add_locked(out, h, deps, nd, &n);
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddMemFreeNode(
    CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
    size_t numDependencies, CUdeviceptr dptr) {
  DRV_ENTER(cuGraphAddMemFreeNode, phGraphNode, hGraph, dependencies,
            numDependencies, dptr);
  DRV_RETURN(
      add_free(phGraphNode, hGraph, dependencies, numDependencies, dptr));
}

/* to[i] follows from[i]; an existing edge is an error. Cycles are found
 * at instantiation. */
static CUresult add_deps(CUgraph h, const CUgraphNode *from,
                         const CUgraphNode *to, size_t n) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (n && (!from || !to)) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&gp_lock);
  sim_graph *g = graph_find(h, false, false);
  CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
    sim_node *a = node_in(g, from[i]), *b = node_in(g, to[i]);
    if (!a || !b || a == b) {
      r = CUDA_ERROR_INVALID_VALUE;
      break;
    }
    for (size_t k = 0; k < b->ndeps; k++)
      if (b->deps[k] == a) r = CUDA_ERROR_INVALID_VALUE;
    sim_node **d =
        r == CUDA_SUCCESS ? realloc(b->deps, (b->ndeps + 1) * sizeof *d) : NULL;
    if (r == CUDA_SUCCESS && !d) r = CUDA_ERROR_OUT_OF_MEMORY;
    if (r == CUDA_SUCCESS) {
      b->deps = d;
      b->deps[b->ndeps++] = a;
    }
  }
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphAddDependencies_v2(
    CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
    const CUgraphEdgeData *edgeData, size_t numDependencies) {
  DRV_ENTER(cuGraphAddDependencies_v2, hGraph, from, to, edgeData,
            numDependencies);
  DRV_RETURN(add_deps(hGraph, from, to, numDependencies));
}

/* nodes NULL: *num = the count; else up to *num nodes in creation
 * order, the rest of the array NULL, and *num = the count. */
GPUSIM_EXPORT CUresult CUDAAPI cuGraphGetNodes(CUgraph hGraph,
                                               CUgraphNode *nodes,
                                               size_t *numNodes) {
  DRV_ENTER(cuGraphGetNodes, hGraph, nodes, numNodes);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!numNodes) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  const sim_graph *g = graph_find(hGraph, false, false);
  if (g && nodes) {
    for (size_t i = 0; i < *numNodes; i++)
      nodes[i] = i < g->n ? (CUgraphNode)g->nodes[i] : NULL;
    if (*numNodes > g->n) *numNodes = g->n;
  } else if (g) {
    *numNodes = g->n;
  }
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
}

/* Clones have new node ids; graphs with memory nodes cannot be cloned. */
GPUSIM_EXPORT CUresult CUDAAPI cuGraphClone(CUgraph *phGraphClone,
                                            CUgraph originalGraph) {
  DRV_ENTER(cuGraphClone, phGraphClone, originalGraph);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  if (!phGraphClone) DRV_RETURN(CUDA_ERROR_INVALID_VALUE);
  pthread_mutex_lock(&gp_lock);
  const sim_graph *g = graph_find(originalGraph, false, false);
  sim_graph *c = g && !g->has_mem ? graph_copy(g, false) : NULL;
  CUresult r = !g           ? CUDA_ERROR_INVALID_VALUE
               : g->has_mem ? CUDA_ERROR_NOT_SUPPORTED
               : !c         ? CUDA_ERROR_OUT_OF_MEMORY
                            : CUDA_SUCCESS;
  if (c) {
    for (size_t i = 0; i < c->n; i++)
      c->nodes[i]->id = ++node_ids;
    graph_link(c);
  }
  *phGraphClone = (CUgraph)c;
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* ---- executable graphs ---- */

static CUresult instantiate(CUgraphExec *out, CUgraph h) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  sim_graph *g = graph_find(h, false, false);
  CUresult r = g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  /* a graph with memory nodes has at most one executable graph */
  for (const sim_graph *x = graphs; r == CUDA_SUCCESS && g->has_mem && x;
       x = x->next)
    if (x->exec && x->src == g) r = CUDA_ERROR_NOT_SUPPORTED;
  sim_graph *x = r == CUDA_SUCCESS ? graph_new(g->dev, true) : NULL;
  sim_node **map = x ? calloc(g->n + 1, sizeof *map) : NULL;
  if (r == CUDA_SUCCESS && !map) r = CUDA_ERROR_OUT_OF_MEMORY;
  size_t *ord = map ? topo_order(g) : NULL;
  if (map && !ord) r = CUDA_ERROR_INVALID_VALUE; /* a cycle */
  if (ord && !flatten(x, g, NULL, map)) r = CUDA_ERROR_OUT_OF_MEMORY;
  free(ord);
  free(map);
  if (r == CUDA_SUCCESS) {
    x->src = g;
    graph_link(x);
  } else {
    graph_free(x);
    x = NULL;
  }
  pthread_mutex_unlock(&gp_lock);
  *out = (CUgraphExec)x;
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphInstantiateWithFlags(
    CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags) {
  DRV_ENTER(cuGraphInstantiateWithFlags, phGraphExec, hGraph, flags);
  DRV_RETURN(instantiate(phGraphExec, hGraph));
}

static CUresult destroy(const void *h, bool exec) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  sim_graph *g = graph_find(h, exec, true);
  for (sim_graph *x = graphs; g && !exec && x; x = x->next)
    if (x->src == g) x->src = NULL;
  pthread_mutex_unlock(&gp_lock);
  graph_free(g);
  return g ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec) {
  DRV_ENTER(cuGraphExecDestroy, hGraphExec);
  DRV_RETURN(destroy(hGraphExec, true));
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph) {
  DRV_ENTER(cuGraphDestroy, hGraph);
  DRV_RETURN(destroy(hGraph, false));
}

/* The node of a listed graph (not executable) that h is, or NULL. */
static const sim_node *any_node(const void *h) {
  for (const sim_graph *g = graphs; g; g = g->next) {
    if (g->exec) continue;
    const sim_node *n = node_in(g, h);
    if (n) return n;
  }
  return NULL;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                  const CUDA_KERNEL_NODE_PARAMS *nodeParams) {
  DRV_ENTER(cuGraphExecKernelNodeSetParams_v2, hGraphExec, hNode, nodeParams);
  if (!gp_ready()) DRV_RETURN(CUDA_ERROR_NOT_INITIALIZED);
  sim_launch l;
  CUresult r = kernel_params(nodeParams, &l);
  if (r != CUDA_SUCCESS) DRV_RETURN(r);
  pthread_mutex_lock(&gp_lock);
  sim_graph *x = graph_find(hGraphExec, true, false);
  const sim_node *n = x ? any_node(hNode) : NULL;
  r = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; n && n->kind == NODE_KERNEL && i < x->n; i++)
    if (x->nodes[i]->id == n->id && x->nodes[i]->kind == NODE_KERNEL) {
      x->nodes[i]->u.k = l;
      r = CUDA_SUCCESS;
    }
  pthread_mutex_unlock(&gp_lock);
  DRV_RETURN(r);
}

/* Whether node a (of the new graph, flattened) can replace b's
 * parameters in place; *why says what changed if not. */
static bool same_shape(const sim_node *a, const sim_node *b,
                       CUgraphExecUpdateResult *why) {
  if (a->kind != b->kind) {
    *why = CU_GRAPH_EXEC_UPDATE_ERROR_NODE_TYPE_CHANGED;
    return false;
  }
  if (a->ndeps != b->ndeps) {
    *why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return false;
  }
  for (size_t k = 0; k < a->ndeps; k++)
    if (a->deps[k]->index != b->deps[k]->index) {
      *why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
      return false;
    }
  if ((a->kind == NODE_MEM_ALLOC || a->kind == NODE_MEM_FREE) &&
      (a->u.mem.ptr != b->u.mem.ptr || a->u.mem.bytes != b->u.mem.bytes)) {
    *why = CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED;
    return false;
  }
  return true;
}

/* Same topology (node for node, in the flattened order): every node's
 * parameters are replaced by the new graph's, node ids kept. Otherwise
 * CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE and nothing changes. */
static CUresult exec_update(CUgraphExec hx, CUgraph h,
                            CUgraphExecUpdateResultInfo *info) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!info) return CUDA_ERROR_INVALID_VALUE;
  *info = (CUgraphExecUpdateResultInfo){CU_GRAPH_EXEC_UPDATE_ERROR, NULL, NULL};
  pthread_mutex_lock(&gp_lock);
  sim_graph *x = graph_find(hx, true, false);
  const sim_graph *g = graph_find(h, false, false);
  sim_graph *y = x && g ? graph_new(g->dev, true) : NULL;
  sim_node **map = y ? calloc(g->n + 1, sizeof *map) : NULL;
  CUresult r = !x || !g ? CUDA_ERROR_INVALID_VALUE
               : !map || !flatten(y, g, NULL, map)
                   ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
                   : CUDA_SUCCESS;
  CUgraphExecUpdateResult why = CU_GRAPH_EXEC_UPDATE_SUCCESS;
  if (r == CUDA_SUCCESS && y->n != x->n) {
    why = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
  }
  for (size_t i = 0; r == CUDA_SUCCESS && i < y->n; i++)
    if (!same_shape(y->nodes[i], x->nodes[i], &why)) {
      r = CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
    }
  if (r == CUDA_SUCCESS) {
    for (size_t i = 0; i < y->n; i++)
      x->nodes[i]->u = y->nodes[i]->u; /* child nodes are flattened away */
  }
  if (x && g) info->result = why;
  free(map);
  graph_free(y);
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI
cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph,
                     CUgraphExecUpdateResultInfo *resultInfo) {
  DRV_ENTER(cuGraphExecUpdate_v2, hGraphExec, hGraph, resultInfo);
  DRV_RETURN(exec_update(hGraphExec, hGraph, resultInfo));
}

/* Uploading takes no simulated time; it checks its arguments. */
static CUresult upload(CUgraphExec h, CUstream hs, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  const sim_graph *x = graph_find(h, true, false);
  CUresult r = x ? gp_stream_get(hs, pt, &s) : CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->capture) {
    gp_capture_break(s);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (r == CUDA_SUCCESS && s->dev != x->dev) r = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_unlock(&gp_lock);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec,
                                             CUstream hStream) {
  DRV_ENTER(cuGraphUpload, hGraphExec, hStream);
  DRV_RETURN(upload(hGraphExec, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec,
                                                  CUstream hStream) {
  DRV_ENTER(cuGraphUpload_ptsz, hGraphExec, hStream);
  DRV_RETURN(upload(hGraphExec, hStream, true));
}

/* ---- launch ---- */

/* One node of a launch, scheduled under gp_lock and recorded (or, for
 * host nodes, run) after. */
typedef struct planned {
  sim_node copy; /* its parameters at the launch */
  sim_op op;
  int kind; /* copies: CUPTI copy kind; memsets: memory kind */
  sim_where ws, wd;
  int64_t grid_id;
} planned;

/* Peak device memory the launch's alloc and free nodes reach, in order,
 * over what is used now; false if an allocation is still live. */
static bool mem_fits(const sim_graph *x) {
  uint64_t used = gp_dev[x->dev].used, peak = used;
  for (size_t i = 0; i < x->n; i++) {
    const sim_node *n = x->nodes[i];
    if (n->kind == NODE_MEM_ALLOC) {
      if (gp_graph_mem_live(n->u.mem.ptr)) return false;
      used += n->u.mem.bytes;
      peak = max64(peak, used);
    } else if (n->kind == NODE_MEM_FREE && used >= n->u.mem.bytes) {
      used -= n->u.mem.bytes;
    }
  }
  return peak <= gp_cfg.mem_bytes;
}

/* Every node starts when its dependencies have ended (roots: when the
 * launch stream is ready), as if on a stream of its own; the launch
 * stream's later work follows the whole graph. Returns how many nodes
 * have something to record or run. */
static size_t plan(planned *p, sim_graph *x, sim_stream *s, uint64_t *ends) {
  uint64_t base = max64(gp_now(), gp_stream_ready(s)), last = base;
  size_t np = 0;
  for (size_t i = 0; i < x->n; i++) {
    sim_node *n = x->nodes[i];
    uint64_t t = base, dur = 0;
    for (size_t k = 0; k < n->ndeps; k++)
      t = max64(t, ends[n->deps[k]->index]);
    sim_event *e = NULL;
    if ((n->kind == NODE_EVENT_WAIT || n->kind == NODE_EVENT_RECORD) &&
        gp_event_get(n->u.ev, &e) != CUDA_SUCCESS)
      e = NULL; /* destroyed since: nothing to wait for or record */
    planned *q = &p[np];
    q->copy = *n;
    switch (n->kind) {
    case NODE_KERNEL:
      dur = gp_launch_ns(&n->u.k);
      q->grid_id = gp_grid_id();
      break;
    case NODE_COPY:
      q->kind = gp_copy_plan(&n->u.c, &q->ws, &q->wd, &dur);
      break;
    case NODE_MEMSET:
      q->kind = gp_where(n->u.m.dst).kind;
      dur = gp_copy_ns(n->u.m.bytes, gp_cfg.hbm_mbps);
      break;
    case NODE_EVENT_WAIT:
      if (e && e->recorded) t = max64(t, e->time);
      break;
    case NODE_EVENT_RECORD:
      if (e) {
        gp_event_forget(e);
        e->time = t;
        e->recorded = true;
      }
      break;
    case NODE_MEM_ALLOC:
      gp_graph_mem_map(n->u.mem.ptr);
      break;
    case NODE_MEM_FREE:
      gp_graph_mem_unmap(n->u.mem.ptr);
      break;
    default:
      break;
    }
    ends[i] = t + dur;
    last = max64(last, ends[i]);
    if (n->kind == NODE_KERNEL || n->kind == NODE_COPY ||
        n->kind == NODE_MEMSET || n->kind == NODE_HOST) {
      q->op = (sim_op){.start = t,
                       .end = t + dur,
                       .dev = s->dev,
                       .ctx_id = gp_dev[s->dev].ctx.id,
                       .stream_id = s->id,
                       .graph_id = x->id,
                       .graph_node_id = n->id};
      np++;
    }
  }
  s->tail = max64(s->tail, last);
  return np;
}

static void record(const planned *p) {
  const sim_node *n = &p->copy;
  if (n->kind == NODE_KERNEL)
    gp_kernel_record(&n->u.k, &p->op, p->grid_id);
  else if (n->kind == NODE_COPY)
    gp_copy_record(&n->u.c, &p->op, p->kind, p->ws, p->wd);
  else if (n->kind == NODE_MEMSET)
    gp_set_record(&n->u.m, &p->op, p->kind);
  else if (n->kind == NODE_HOST)
    n->u.h.fn(n->u.h.data); /* on the launching thread, as host functions */
}

/* A graph launched into a capturing stream becomes a child graph node. */
static CUresult launch_captured(sim_stream *s, const sim_graph *x) {
  if (x->has_mem) {
    gp_capture_break(s);
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  sim_node n = {.kind = NODE_CHILD, .u.child = graph_copy(x, false)};
  if (!n.u.child) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = gp_capture(s, &n);
  if (r != CUDA_SUCCESS) graph_free(n.u.child);
  return r;
}

/* The call never blocks; host nodes run on the calling thread before it
 * returns. A graph runs on the device it was made on. */
static CUresult graph_launch(CUgraphExec h, CUstream hs, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_stream *s;
  planned *p = NULL;
  uint64_t *ends = NULL;
  size_t n = 0;
  pthread_mutex_lock(&gp_lock);
  sim_graph *x = graph_find(h, true, false);
  CUresult r = x ? gp_stream_get(hs, pt, &s) : CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->dev != x->dev) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->capture) {
    r = launch_captured(s, x);
    x = NULL;
  }
  if (r == CUDA_SUCCESS && x && !mem_fits(x))
    r = CUDA_ERROR_INVALID_VALUE; /* an allocation of the last run is live */
  if (r == CUDA_SUCCESS && x && x->n &&
      (!(p = calloc(x->n, sizeof *p)) || !(ends = calloc(x->n, sizeof *ends))))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS && x && x->n) n = plan(p, x, s, ends);
  pthread_mutex_unlock(&gp_lock);
  for (size_t i = 0; i < n; i++)
    record(&p[i]);
  free(p);
  free(ends);
  return r;
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec,
                                             CUstream hStream) {
  DRV_ENTER(cuGraphLaunch, hGraphExec, hStream);
  DRV_RETURN(graph_launch(hGraphExec, hStream, false));
}

GPUSIM_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec,
                                                  CUstream hStream) {
  DRV_ENTER(cuGraphLaunch_ptsz, hGraphExec, hStream);
  DRV_RETURN(graph_launch(hGraphExec, hStream, true));
}
