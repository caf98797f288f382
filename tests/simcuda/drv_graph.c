/* Simulated driver: CUDA graphs, the minimal real subset that frameworks
 * use (CUDA graphs in PyTorch, TensorRT): stream capture of kernels,
 * copies and memsets into a linear graph, instantiation, and launches
 * that issue the captured work again, in capture order, on one stream. */
#include <stdlib.h>
#include <string.h>

#include "drv.h"

static sim_graph *graphs; /* captured and instantiated, one list */
static uint32_t graph_ids;
static uint64_t node_ids;

static sim_graph *graph_new(int dev, bool exec) {
  sim_graph *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->id = ++graph_ids;
  g->dev = dev;
  g->exec = exec;
  return g;
}

static void graph_free(sim_graph *g) {
  if (!g) return;
  free(g->nodes);
  free(g);
}

static void graph_link(sim_graph *g) {
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

static bool graph_push(sim_graph *g, const sim_node *n) {
  if (g->n == g->cap) {
    size_t cap = g->cap ? g->cap * 2 : 8;
    sim_node *v = realloc(g->nodes, cap * sizeof *v);
    if (!v) return false;
    g->nodes = v;
    g->cap = cap;
  }
  g->nodes[g->n++] = *n;
  return true;
}

CUresult gp_capture(sim_stream *s, const sim_node *n) {
  if (s->capture_invalid) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  sim_node c = *n;
  c.id = ++node_ids;
  if (graph_push(s->capture, &c)) return CUDA_SUCCESS;
  s->capture_invalid = true;
  return CUDA_ERROR_OUT_OF_MEMORY;
}

void gp_capture_break(sim_stream *s) {
  if (s->capture) s->capture_invalid = true;
}

void gp_capture_drop(sim_stream *s) {
  graph_free(s->capture);
  s->capture = NULL;
  s->capture_invalid = false;
}

/* ---- capture ---- */

/* The legacy stream cannot be captured (it synchronises implicitly with
 * every blocking stream); all three capture modes behave alike here. */
static CUresult begin_capture(CUstream h, bool pt, CUstreamCaptureMode mode) {
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && s->kind == STREAM_LEGACY)
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  else if (r == CUDA_SUCCESS && s->capture)
    r = CUDA_ERROR_ILLEGAL_STATE;
  else if (r == CUDA_SUCCESS && !(s->capture = graph_new(s->dev, false)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
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

/* Ends the capture whatever happened; an invalidated one yields no
 * graph. */
static CUresult end_capture(CUstream h, bool pt, CUgraph *out) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS && !s->capture) r = CUDA_ERROR_ILLEGAL_STATE;
  if (r == CUDA_SUCCESS && s->capture_invalid) {
    gp_capture_drop(s);
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *out = NULL;
  if (r == CUDA_SUCCESS) {
    graph_link(s->capture);
    *out = (CUgraph)s->capture;
    s->capture = NULL;
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

static CUresult is_capturing(CUstream h, bool pt, CUstreamCaptureStatus *st) {
  if (!st) return CUDA_ERROR_INVALID_VALUE;
  sim_stream *s;
  pthread_mutex_lock(&gp_lock);
  CUresult r = gp_stream_get(h, pt, &s);
  if (r == CUDA_SUCCESS)
    *st = !s->capture          ? CU_STREAM_CAPTURE_STATUS_NONE
          : s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                               : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&gp_lock);
  return r;
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

/* ---- graphs and executable graphs ---- */

static CUresult instantiate(CUgraphExec *out, CUgraph h) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  pthread_mutex_lock(&gp_lock);
  const sim_graph *g = graph_find(h, false, false);
  sim_graph *x = g ? graph_new(g->dev, true) : NULL;
  CUresult r = !g   ? CUDA_ERROR_INVALID_VALUE
               : !x ? CUDA_ERROR_OUT_OF_MEMORY
                    : CUDA_SUCCESS;
  if (x && g->n) {
    x->nodes = malloc(g->n * sizeof *x->nodes);
    if (x->nodes) {
      memcpy(x->nodes, g->nodes, g->n * sizeof *x->nodes);
      x->n = x->cap = g->n;
    } else {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  if (r == CUDA_SUCCESS)
    graph_link(x);
  else
    graph_free(x);
  pthread_mutex_unlock(&gp_lock);
  *out = r == CUDA_SUCCESS ? (CUgraphExec)x : NULL;
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

/* ---- launch ---- */

/* One node of a launch, scheduled under gp_lock and recorded after. */
typedef struct planned {
  sim_node n;
  sim_op op;
  int kind; /* copies: CUPTI copy kind; memsets: memory kind */
  sim_where ws, wd;
  int64_t grid_id;
} planned;

static void plan(planned *p, const sim_node *n, sim_stream *s, uint32_t gid) {
  uint64_t dur;
  p->n = *n;
  if (n->kind == NODE_KERNEL) {
    dur = gp_launch_ns(&n->u.k);
    p->grid_id = gp_grid_id();
  } else if (n->kind == NODE_COPY) {
    p->kind = gp_copy_plan(&n->u.c, &p->ws, &p->wd, &dur);
  } else {
    p->kind = gp_where(n->u.m.dst).kind;
    dur = gp_copy_ns(n->u.m.bytes, gp_cfg.hbm_mbps);
  }
  gp_schedule(s, dur, &p->op);
  p->op.graph_id = gid;
  p->op.graph_node_id = n->id;
}

static void record(const planned *p) {
  if (p->n.kind == NODE_KERNEL)
    gp_kernel_record(&p->n.u.k, &p->op, p->grid_id);
  else if (p->n.kind == NODE_COPY)
    gp_copy_record(&p->n.u.c, &p->op, p->kind, p->ws, p->wd);
  else
    gp_set_record(&p->n.u.m, &p->op, p->kind);
}

/* The nodes run one after the other on the launch stream, as if issued
 * there at the launch; the call never blocks. A graph runs on the device
 * it was captured on. */
static CUresult graph_launch(CUgraphExec h, CUstream hs, bool pt) {
  if (!gp_ready()) return CUDA_ERROR_NOT_INITIALIZED;
  sim_stream *s;
  planned *p = NULL;
  size_t n = 0;
  pthread_mutex_lock(&gp_lock);
  const sim_graph *x = graph_find(h, true, false);
  CUresult r = x ? gp_stream_get(hs, pt, &s) : CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && s->capture) {
    gp_capture_break(s); /* child-graph nodes are not simulated */
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  if (r == CUDA_SUCCESS && s->dev != x->dev) r = CUDA_ERROR_INVALID_VALUE;
  if (r == CUDA_SUCCESS && x->n && !(p = calloc(x->n, sizeof *p)))
    r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    n = x->n;
    for (size_t i = 0; i < n; i++)
      plan(&p[i], &x->nodes[i], s, x->id);
  }
  pthread_mutex_unlock(&gp_lock);
  for (size_t i = 0; i < n; i++)
    record(&p[i]);
  free(p);
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
