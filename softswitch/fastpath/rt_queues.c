/* softswitch fast path: native egress queues for ``softswitch run``.
 *
 * Appended after rt_tail.c, before rt_loop.c. The queues of an egress port the traffic
 * manager (softswitch/tm/manager.py) has handed over ("native" ports: strict priority,
 * packet capacity, pps rate, no link rate, no DWRR weight, no byte capacity, no pause,
 * no PFC thresholds anywhere) live here as packet instances (rt_work) with what egress
 * metadata needs of their stay. Enqueue, pass-through, drop and dequeue follow
 * EgressPort (softswitch/tm/scheduler.py) step for step: BMv2's QueueingLogicPriRL, the
 * departure fixed at enqueue (max(now, last + 1e6/rate)), per-queue depths. The Python
 * traffic manager stays the source of truth for configuration and statistics: it
 * pushes a port's configuration in (ntm_adopt, ntm_config), folds the counters in
 * (ntm_take) and takes a port back, packets and all, whenever Python must touch it
 * (ntm_evict), so nothing here has to know about the extensions.
 */

#define NTM_PORTS 512
#define NTM_PRIOS 8
#define NTM_DEPTH_MAX ((1u << 19) - 1)
static const char *NTM_NAME = "softswitch.fastpath.queues";

typedef struct { rt_work *w; double enq, send; uint64_t enq_depth; } ntm_ent;

typedef struct {
    ntm_ent *ring;             /* FIFO, ring buffer of ``size`` slots */
    uint32_t head, n, size;
    uint64_t capacity;         /* packets */
    double rate;               /* packets/s, 0 = unlimited */
    double last_sent;          /* departure given to the last packet queued */
    uint64_t enq, deq, drop, bytes, maxd;   /* since the last ntm_take */
    int dirty;
} ntm_q;

typedef struct { int native; uint32_t held; double busy; ntm_q q[NTM_PRIOS]; } ntm_port;

typedef struct {
    int nq;                    /* priority queues per port */
    ntm_port *ports[NTM_PORTS];
    int32_t hdelta[NTM_PORTS][NTM_PRIOS];  /* held per (ingress port, priority): change */
    uint8_t htouch[NTM_PORTS][NTM_PRIOS];
    uint16_t hkeys[NTM_PORTS * NTM_PRIOS];  /* the touched (ingress port, priority) keys */
    int nhkeys;
    uint8_t pdirty[NTM_PORTS];
    uint16_t dports[NTM_PORTS];            /* ports whose counters changed since a take */
    int ndports;
    uint16_t holding[NTM_PORTS];           /* ports holding packets, TrafficManager order */
    int nholding;
    uint64_t held_total;
    uint64_t enqueues, dropped;            /* since the last ntm_take */
} ntm_state;

/* a packet popped by a drain, with its egress metadata */
typedef struct { rt_work *w; double enq; uint64_t enq_depth, deq_depth; } ntm_out;

static ntm_state *ntm_get(PyObject *o) {
    return (ntm_state *)PyCapsule_GetPointer(o, NTM_NAME);
}

static void ntm_q_clear(ntm_q *q) {
    for (uint32_t k = 0; k < q->n; k++) work_free(q->ring[(q->head + k) % q->size].w);
    free(q->ring);
    q->ring = NULL;
    q->head = q->n = q->size = 0;
}

static void ntm_destroy(PyObject *cap) {
    ntm_state *S = ntm_get(cap);
    if (!S) return;
    for (int p = 0; p < NTM_PORTS; p++) {
        if (!S->ports[p]) continue;
        for (int k = 0; k < NTM_PRIOS; k++) ntm_q_clear(&S->ports[p]->q[k]);
        free(S->ports[p]);
    }
    free(S);
}

static ntm_port *ntm_native(ntm_state *S, int64_t port) {
    if (!S || port < 0 || port >= NTM_PORTS) return NULL;
    ntm_port *P = S->ports[port];
    return (P && P->native) ? P : NULL;
}

static void ntm_held(ntm_state *S, const rt_work *w, int d) {
    uint64_t ip = w->sm.f_ingress_port, pr = w->sm.f_priority;
    if (ip >= NTM_PORTS || pr >= NTM_PRIOS) return;
    S->hdelta[ip][pr] += d;
    if (!S->htouch[ip][pr]) {
        S->htouch[ip][pr] = 1;
        S->hkeys[S->nhkeys++] = (uint16_t)(ip * NTM_PRIOS + pr);
    }
}

/* queue ``q`` of ``port`` changed its counters */
static void ntm_dirty(ntm_state *S, int64_t port, ntm_q *q) {
    q->dirty = 1;
    if (!S->pdirty[port]) {
        S->pdirty[port] = 1;
        S->dports[S->ndports++] = (uint16_t)port;
    }
}

/* EgressPort.pass_through for a native port: the packet's queue empty, unlimited and
 * its last departure not ahead; no higher queue that may send now. Counts as the round
 * trip would. */
static int ntm_pass(ntm_state *S, ntm_port *P, const rt_work *w, double now) {
    uint64_t prio = w->sm.f_priority;
    if (prio >= (uint64_t)S->nq) return 0;
    ntm_q *q = &P->q[prio];
    if (q->n || q->rate > 0 || q->last_sent > now || now < P->busy) return 0;
    if (P->held)
        for (int h = (int)prio + 1; h < S->nq; h++)
            if (P->q[h].n && now >= P->q[h].ring[P->q[h].head].send) return 0;
    q->last_sent = now;
    P->busy = now;
    q->enq++;
    q->deq++;
    q->bytes += w->length;
    if (!q->maxd) q->maxd = 1;
    ntm_dirty(S, w->port, q);
    return 1;
}

/* EgressPort.enqueue (TrafficManager.enqueue): 0 queued (the queue owns ``w``), 1
 * dropped (the caller frees it), -1 out of memory. */
static int ntm_enqueue(ntm_state *S, ntm_port *P, int64_t port, rt_work *w, double now) {
    uint64_t prio = w->sm.f_priority;
    S->enqueues++;
    if (prio >= (uint64_t)S->nq) { S->dropped++; return 1; }
    ntm_q *q = &P->q[prio];
    ntm_dirty(S, port, q);
    if (q->n >= q->capacity) { q->drop++; S->dropped++; return 1; }
    if (q->n == q->size) {
        uint32_t ns = q->size ? q->size * 2 : 64;
        ntm_ent *r = (ntm_ent *)malloc(ns * sizeof(ntm_ent));
        if (!r) { PyErr_NoMemory(); return -1; }
        for (uint32_t k = 0; k < q->n; k++) r[k] = q->ring[(q->head + k) % q->size];
        free(q->ring);
        q->ring = r;
        q->head = 0;
        q->size = ns;
    }
    double send = q->last_sent + (q->rate > 0 ? 1e6 / q->rate : 0.0);
    if (send < now) send = now;
    q->last_sent = send;
    ntm_ent *e = &q->ring[(q->head + q->n) % q->size];
    e->w = w;
    e->enq = now;
    e->send = send;
    e->enq_depth = q->n;
    q->n++;
    q->enq++;
    q->bytes += w->length;
    if (q->n > q->maxd) q->maxd = q->n;
    if (!P->held++) S->holding[S->nholding++] = (uint16_t)port;
    S->held_total++;
    ntm_held(S, w, 1);
    return 0;
}

/* EgressPort.dequeue without a link rate: the highest queue whose head may leave. */
static int ntm_pop1(ntm_state *S, int port, ntm_port *P, double now, ntm_out *o) {
    if (!P->held || now < P->busy) return 0;
    for (int h = S->nq - 1; h >= 0; h--) {
        ntm_q *q = &P->q[h];
        if (!q->n || now < q->ring[q->head].send) continue;
        ntm_ent *e = &q->ring[q->head];
        q->head = (q->head + 1) % q->size;
        q->n--;
        q->deq++;
        ntm_dirty(S, port, q);
        P->held--;
        S->held_total--;
        P->busy = now;
        o->w = e->w;
        o->enq = e->enq;
        o->enq_depth = e->enq_depth;
        o->deq_depth = q->n;
        ntm_held(S, e->w, -1);
        return 1;
    }
    return 0;
}

/* TrafficManager.dequeue_ready: every packet that may leave at ``now``, port by port in
 * the order the ports got their packets. Returns how many (*outp: malloc'd, NULL when
 * none: a rate-limited queue holds packets that may not leave yet on most calls, and
 * such a call allocates nothing the caller would have to free), -1 on no memory. */
static Py_ssize_t ntm_pop_all(ntm_state *S, double now, ntm_out **outp) {
    *outp = NULL;
    if (!S->held_total) return 0;
    Py_ssize_t n = 0, cap = 0;
    ntm_out *out = NULL;
    int keep = 0;
    for (int k = 0; k < S->nholding; k++) {
        int port = S->holding[k];
        ntm_port *P = S->ports[port];
        for (;;) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                ntm_out *no = (ntm_out *)realloc(out, (size_t)cap * sizeof(ntm_out));
                if (!no) {  /* what was popped already is lost, as an exception would */
                    for (Py_ssize_t j = 0; j < n; j++) work_free(out[j].w);
                    free(out);
                    PyErr_NoMemory();
                    return -1;
                }
                out = no;
            }
            if (!ntm_pop1(S, port, P, now, &out[n])) break;
            n++;
        }
        if (P->held) S->holding[keep++] = (uint16_t)port;
    }
    S->nholding = keep;
    if (!n) {
        free(out);
        out = NULL;
    }
    *outp = out;
    return n;
}

/* A popped packet handed to Python: (stage, port, length, priority, ingress port,
 * capsule, enq_time_us, enq_qdepth, deq_qdepth) */
static PyObject *ntm_out_tuple(const ntm_out *o) {
    PyObject *cap = PyCapsule_New(o->w, WORK_NAME, work_destroy);
    if (!cap) { work_free(o->w); return NULL; }
    return Py_BuildValue("(iLKKKNdKK)", 1, (long long)o->w->port,
                         (unsigned long long)o->w->length,
                         (unsigned long long)o->w->sm.f_priority,
                         (unsigned long long)o->w->sm.f_ingress_port, cap, o->enq,
                         (unsigned long long)o->enq_depth, (unsigned long long)o->deq_depth);
}

/* A packet the queues let go at ``now``: its standard_metadata queueing fields (BMv2's
 * widths: 32-bit timestamps, depths capped), then the egress pipeline; the packet's work
 * is freed whatever egress did. */
static int egress_dequeued(rt_ctx *c, rt_work **w, double enq, uint64_t enq_depth,
                           uint64_t deq_depth, double now, rt_queue *q, PyObject *out) {
    rt_qinfo qi = {1, ((uint64_t)enq) & 0xFFFFFFFFu,
                   enq_depth < NTM_DEPTH_MAX ? enq_depth : NTM_DEPTH_MAX,
                   deq_depth < NTM_DEPTH_MAX ? deq_depth : NTM_DEPTH_MAX,
                   ((uint64_t)(now - enq)) & 0xFFFFFFFFu};
    c->busy = 1;
    int st = do_egress(c, *w, q, out, &qi);
    c->busy = 0;
    work_free(*w);
    *w = NULL;
    return st;
}

/* QueuedSwitch.transmit_ready for the native ports: pop everything ready at ``now``,
 * then egress and deparser for each in turn (frames to ``out`` or the sinks). 0 when
 * done; 1 when a packet's egress left work (a recirculation, an egress clone): then
 * *handback = (its work items, [the packets popped after it]) for Python, which runs
 * them as transmit_ready does; -1 on an exception. */
static int ntm_drain(rt_ctx *c, ntm_state *S, double now, PyObject *out, PyObject **handback) {
    *handback = NULL;
    ntm_out *popped;
    Py_ssize_t n = ntm_pop_all(S, now, &popped);
    if (n <= 0) return (int)n;
    int res = 0;
    Py_ssize_t k = 0;
    for (; k < n; k++) {
        ntm_out *o = &popped[k];
        rt_queue q = {NULL, 0, 0, 0};
        int st = egress_dequeued(c, &o->w, o->enq, o->enq_depth, o->deq_depth, now, &q, out);
        if (st == ST_ABORT) {
            q_free(&q);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
            res = -1;
            k++;
            break;
        }
        if (q.head < q.n) {
            PyObject *items = items_out(&q);
            q_free(&q);
            PyObject *rest = items ? PyList_New(0) : NULL;
            for (Py_ssize_t j = k + 1; rest && j < n; j++) {
                PyObject *t = ntm_out_tuple(&popped[j]);
                popped[j].w = NULL;
                if (!t || PyList_Append(rest, t)) { Py_XDECREF(t); Py_CLEAR(rest); }
                else Py_DECREF(t);
            }
            k = n;
            if (!rest) { Py_XDECREF(items); res = -1; break; }
            *handback = Py_BuildValue("(NN)", items, rest);
            res = *handback ? 1 : -1;
            break;
        }
        q_free(&q);
    }
    for (; k < n; k++) work_free(popped[k].w);
    free(popped);
    return res;
}

/* ---- the Python methods -------------------------------------------------------- */

static PyObject *lh_functions(void);

/* queues_new(priority_queues) -> capsule; queues_new() -> the lab hop's functions */
static PyObject *m_ntm_new(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n == 0) return lh_functions();
    long nq = n == 1 ? PyLong_AsLong(args[0]) : -1;
    if (nq < 1 || nq > NTM_PRIOS) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "queues_new(1..8)");
        return NULL;
    }
    ntm_state *S = (ntm_state *)calloc(1, sizeof(ntm_state));
    if (!S) return PyErr_NoMemory();
    S->nq = (int)nq;
    PyObject *cap = PyCapsule_New(S, NTM_NAME, ntm_destroy);
    if (!cap) free(S);
    return cap;
}

static ntm_port *ntm_arg_port(ntm_state *S, PyObject *o, long *port) {
    *port = PyLong_AsLong(o);
    if (*port < 0 || *port >= NTM_PORTS) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "native queues: port 0..511");
        return NULL;
    }
    if (!S->ports[*port]) {
        S->ports[*port] = (ntm_port *)calloc(1, sizeof(ntm_port));
        if (!S->ports[*port]) { PyErr_NoMemory(); return NULL; }
    }
    return S->ports[*port];
}

/* queues_adopt(q, port, [(capacity, rate, last_sent)] * nq, busy): the port's queues
 * (empty) are native from now on. */
static PyObject *m_ntm_adopt(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 4 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_adopt(q, port, cfg, busy)");
        return NULL;
    }
    long port;
    ntm_port *P = ntm_arg_port(S, args[1], &port);
    if (!P) return NULL;
    if (P->native) { PyErr_SetString(PyExc_RuntimeError, "native queues: port adopted twice"); return NULL; }
    PyObject *cfg = PySequence_Fast(args[2], "queues_adopt: cfg must be a sequence");
    if (!cfg) return NULL;
    if (PySequence_Fast_GET_SIZE(cfg) != S->nq) {
        Py_DECREF(cfg);
        PyErr_SetString(PyExc_ValueError, "queues_adopt: one (capacity, rate, last) per queue");
        return NULL;
    }
    double busy = PyFloat_AsDouble(args[3]);
    for (int k = 0; k < S->nq && !PyErr_Occurred(); k++) {
        unsigned long long capn;
        double rate, last;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(cfg, k), "Kdd", &capn, &rate, &last)) break;
        ntm_q *q = &P->q[k];
        q->capacity = capn;
        q->rate = rate;
        q->last_sent = last;
    }
    Py_DECREF(cfg);
    if (PyErr_Occurred()) return NULL;
    P->busy = busy;
    P->native = 1;
    Py_RETURN_NONE;
}

/* queues_config(q, port, priority, capacity, rate): a native queue's new configuration
 * (set_queue_depth/set_queue_rate; a rate applies to packets queued after it). */
static PyObject *m_ntm_config(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 5 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_config(q, port, prio, cap, rate)");
        return NULL;
    }
    long port;
    ntm_port *P = ntm_arg_port(S, args[1], &port);
    if (!P) return NULL;
    long prio = PyLong_AsLong(args[2]);
    unsigned long long capn = PyLong_AsUnsignedLongLong(args[3]);
    double rate = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (prio < 0 || prio >= S->nq) { PyErr_SetString(PyExc_ValueError, "queues_config: no such queue"); return NULL; }
    P->q[prio].capacity = capn;
    P->q[prio].rate = rate;
    Py_RETURN_NONE;
}

/* queues_evict(q, port) -> (busy, [(last_sent, [packet])] * nq): the port goes back to
 * Python with its packets, oldest first: (stage, port, length, priority, ingress port,
 * capsule, enq_time_us, enq_qdepth, send_us). */
static PyObject *m_ntm_evict(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 2 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_evict(q, port)");
        return NULL;
    }
    long port = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    ntm_port *P = ntm_native(S, port);
    if (!P) { PyErr_SetString(PyExc_RuntimeError, "queues_evict: port not native"); return NULL; }
    PyObject *queues = PyList_New(S->nq);
    if (!queues) return NULL;
    for (int k = 0; k < S->nq; k++) {
        ntm_q *q = &P->q[k];
        PyObject *pk = PyList_New(0);
        if (!pk) { Py_DECREF(queues); return NULL; }
        while (q->n) {
            ntm_ent *e = &q->ring[q->head];
            rt_work *w = e->w;
            PyObject *cap = PyCapsule_New(w, WORK_NAME, work_destroy);
            if (!cap) { Py_DECREF(pk); Py_DECREF(queues); return NULL; }
            q->head = (q->head + 1) % q->size;
            q->n--;
            P->held--;
            S->held_total--;
            PyObject *t = Py_BuildValue("(iLKKKNdKd)", 1, (long long)w->port,
                                        (unsigned long long)w->length,
                                        (unsigned long long)w->sm.f_priority,
                                        (unsigned long long)w->sm.f_ingress_port, cap, e->enq,
                                        (unsigned long long)e->enq_depth, e->send);
            if (!t || PyList_Append(pk, t)) { Py_XDECREF(t); Py_DECREF(pk); Py_DECREF(queues); return NULL; }
            Py_DECREF(t);
        }
        ntm_q_clear(q);
        PyObject *qt = Py_BuildValue("(dN)", q->last_sent, pk);
        if (!qt) { Py_DECREF(queues); return NULL; }
        PyList_SET_ITEM(queues, k, qt);
    }
    P->native = 0;
    int keep = 0;
    for (int k = 0; k < S->nholding; k++)
        if (S->holding[k] != port) S->holding[keep++] = S->holding[k];
    S->nholding = keep;
    return Py_BuildValue("(dN)", P->busy, queues);
}

/* queues_take(q) -> (enqueues, dropped, [(port, prio, enq, deq, drop, bytes, max_depth)],
 * [(ingress port, prio, held change)]) | None: the counters since the last call (None:
 * none changed), for the traffic manager to fold into its statistics. */
static PyObject *m_ntm_take(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 1 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_take(q)");
        return NULL;
    }
    if (!S->ndports && !S->nhkeys && !S->enqueues) Py_RETURN_NONE;
    PyObject *qs = PyList_New(0), *hs = PyList_New(0);
    if (!qs || !hs) { Py_XDECREF(qs); Py_XDECREF(hs); return NULL; }
    for (int i = 0; i < S->ndports; i++) {
        int p = S->dports[i];
        ntm_port *P = S->ports[p];
        S->pdirty[p] = 0;
        for (int k = 0; P && k < S->nq; k++) {
            ntm_q *q = &P->q[k];
            if (!q->dirty) continue;
            PyObject *t = Py_BuildValue("(iiKKKKK)", p, k, (unsigned long long)q->enq,
                                        (unsigned long long)q->deq, (unsigned long long)q->drop,
                                        (unsigned long long)q->bytes, (unsigned long long)q->maxd);
            if (!t || PyList_Append(qs, t)) { Py_XDECREF(t); Py_DECREF(qs); Py_DECREF(hs); return NULL; }
            Py_DECREF(t);
            q->enq = q->deq = q->drop = q->bytes = q->maxd = 0;
            q->dirty = 0;
        }
    }
    S->ndports = 0;
    for (int i = 0; i < S->nhkeys; i++) {
        int p = S->hkeys[i] / NTM_PRIOS, k = S->hkeys[i] % NTM_PRIOS;
        PyObject *t = Py_BuildValue("(iii)", p, k, (int)S->hdelta[p][k]);
        if (!t || PyList_Append(hs, t)) { Py_XDECREF(t); Py_DECREF(qs); Py_DECREF(hs); return NULL; }
        Py_DECREF(t);
        S->hdelta[p][k] = 0;
        S->htouch[p][k] = 0;
    }
    S->nhkeys = 0;
    PyObject *r = Py_BuildValue("(KKNN)", (unsigned long long)S->enqueues,
                                (unsigned long long)S->dropped, qs, hs);
    S->enqueues = S->dropped = 0;
    return r;
}

/* queues_next(q, now) -> the earliest time a native queue may send (EgressPort
 * .next_event_us over the ports holding packets), or None. Also: how many are held. */
static PyObject *m_ntm_next(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 2 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_next(q, now)");
        return NULL;
    }
    double now = PyFloat_AsDouble(args[1]);
    if (PyErr_Occurred()) return NULL;
    int found = 0;
    double best = 0.0;
    for (int k = 0; k < S->nholding; k++) {
        ntm_port *P = S->ports[S->holding[k]];
        int any = 0;
        double t = 0.0;
        for (int h = 0; h < S->nq; h++) {
            ntm_q *q = &P->q[h];
            if (!q->n) continue;
            double s = q->ring[q->head].send;
            if (!any || s < t) t = s;
            any = 1;
        }
        if (!any) continue;
        if (P->busy > t) t = P->busy;
        if (now > t) t = now;
        if (!found || t < best) best = t;
        found = 1;
    }
    if (!found) Py_RETURN_NONE;
    return PyFloat_FromDouble(best);
}

/* queues_depth(q, port|-1, prio|-1) -> packets held (one queue, the port, or all) */
static PyObject *m_ntm_depth(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    ntm_state *S = n == 3 ? ntm_get(args[0]) : NULL;
    if (!S) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "queues_depth(q, port, prio)");
        return NULL;
    }
    long port = PyLong_AsLong(args[1]), prio = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (port < 0) return PyLong_FromUnsignedLongLong(S->held_total);
    ntm_port *P = ntm_native(S, port);
    if (!P) return PyLong_FromLong(0);
    if (prio < 0) return PyLong_FromUnsignedLong(P->held);
    return PyLong_FromUnsignedLong(prio < S->nq ? P->q[prio].n : 0);
}

/* queues_drain(ctx, q, now) -> ([(port, bytes)], handback|None): what the native
 * queues send at ``now`` (ntm_drain). */
static PyObject *m_ntm_drain(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "queues_drain(ctx, q, now)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    ntm_state *S = c ? ntm_get(args[1]) : NULL;
    if (!S) return NULL;
    double now = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (c->busy) { PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered"); return NULL; }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    if (!S->held_total) return Py_BuildValue("(NO)", out, Py_None);
    uint64_t us = now > 0 ? (uint64_t)now : 0;
    c->fixed_us = us;
    c->fixed_valid = 1;
    PyObject *v = PyLong_FromUnsignedLongLong(us);
    if (!v || PyObject_SetAttr(c->clock, STR_FIXED, v)) { Py_XDECREF(v); Py_DECREF(out); return NULL; }
    Py_DECREF(v);
    PyObject **saved = c->sinkv;
    c->sinkv = NULL;
    PyObject *hb;
    int r = ntm_drain(c, S, now, out, &hb);
    c->sinkv = saved;
    if (r < 0) { Py_DECREF(out); return NULL; }
    if (!hb) { Py_INCREF(Py_None); hb = Py_None; }
    return Py_BuildValue("(NN)", out, hb);
}

/* ---- the lab's switch hop ------------------------------------------------------
 *
 * The tail-latency lab's fabric switch (taillab/switch_node.py) in one call per event:
 * ingress (with its clones and recirculations) -> traffic manager -> egress of every
 * packet whose turn has come, with the whole of softswitch/tm's EgressPort and
 * PfcMonitor as the lab configures them: per-port link rate, per-queue packet and byte
 * capacity, pps rate, strict priority above DWRR (weighted queues, 1500-byte quanta),
 * PFC XOFF/XON per (ingress port, priority) and pauses from downstream. Every decision
 * is EgressPort's, in the same order and with the same float arithmetic (departure,
 * transmission and pause times), so a cell is the same figure for figure; the
 * difference tests hold it to the Python traffic manager. Virtual time only (no
 * catch-up). Reached through queues_new() without arguments: {name: function}.
 */

#define LH_PORTS 512
#define LH_PRIOS 8
#define LH_QUANTUM 1500
static const char *LH_NAME = "softswitch.fastpath.hop";

typedef struct { rt_work *w; double enq, send; uint64_t enq_depth, size; } lh_ent;

typedef struct {
    lh_ent *ring;
    uint32_t head, n, size;
    uint64_t cap_pkts, cap_bytes, bytes;
    double rate, last_sent, paused_until;
    int64_t weight, deficit;
} lh_q;

typedef struct {
    uint32_t held;
    double busy, link_rate;
    uint64_t dwrr_pos;
    int dwrr_fresh;
    lh_q q[LH_PRIOS];
} lh_port;

typedef struct { uint64_t cap_pkts, cap_bytes; double rate; int64_t weight; } lh_cfg;

typedef struct {
    int nq;
    lh_cfg defaults;
    double default_link_rate;
    lh_port *ports[LH_PORTS];
    uint16_t holding[LH_PORTS];            /* ports holding packets, in TrafficManager order */
    int nholding;
    uint64_t queued;
    int64_t held[LH_PORTS][LH_PRIOS];      /* PfcMonitor.held per (ingress port, priority) */
    uint32_t xoff[LH_PORTS][LH_PRIOS], xon[LH_PORTS][LH_PRIOS];
    uint8_t has_th[LH_PORTS][LH_PRIOS], paused[LH_PORTS][LH_PRIOS];
    PyObject *events;                      /* [(port, priority, pause)] of this call, or NULL */
} lh_state;

static lh_state *lh_get(PyObject *o) { return (lh_state *)PyCapsule_GetPointer(o, LH_NAME); }

static void lh_destroy(PyObject *cap) {
    lh_state *S = lh_get(cap);
    if (!S) return;
    for (int p = 0; p < LH_PORTS; p++) {
        lh_port *P = S->ports[p];
        if (!P) continue;
        for (int k = 0; k < LH_PRIOS; k++) {
            lh_q *q = &P->q[k];
            for (uint32_t j = 0; j < q->n; j++) work_free(q->ring[(q->head + j) % q->size].w);
            free(q->ring);
        }
        free(P);
    }
    Py_XDECREF(S->events);
    free(S);
}

/* TrafficManager.port: created on first use with the switch-wide defaults, its queues'
 * rate origin at time 0 (the lab's traffic manager has no clock) */
static lh_port *lh_port_of(lh_state *S, int64_t port) {
    if (port < 0 || port >= LH_PORTS) {
        PyErr_Format(PyExc_ValueError, "lab hop: egress port %lld out of 0..511", (long long)port);
        return NULL;
    }
    lh_port *P = S->ports[port];
    if (P) return P;
    P = (lh_port *)calloc(1, sizeof(lh_port));
    if (!P) { PyErr_NoMemory(); return NULL; }
    P->link_rate = S->default_link_rate;
    P->dwrr_fresh = 1;
    for (int k = 0; k < LH_PRIOS; k++) {
        lh_q *q = &P->q[k];
        q->cap_pkts = S->defaults.cap_pkts;
        q->cap_bytes = S->defaults.cap_bytes;
        q->rate = S->defaults.rate;
        q->weight = S->defaults.weight;
    }
    S->ports[port] = P;
    return P;
}

static int lh_event(lh_state *S, uint64_t port, uint64_t prio, int pause) {
    if (!S->events && !(S->events = PyList_New(0))) return -1;
    PyObject *t = Py_BuildValue("(KKO)", (unsigned long long)port, (unsigned long long)prio,
                                pause ? Py_True : Py_False);
    if (!t) return -1;
    int bad = PyList_Append(S->events, t);
    Py_DECREF(t);
    return bad;
}

/* TrafficManager.enqueue -> EgressPort.enqueue and PfcMonitor.on_enqueue: takes ``w``
 * (queued or freed); -1 on an exception. */
static int lh_enqueue(lh_state *S, rt_work *w, double now) {
    lh_port *P = lh_port_of(S, w->port);
    if (!P) { work_free(w); return -1; }
    uint64_t prio = w->sm.f_priority, size = w->length;
    if (prio >= (uint64_t)S->nq) { work_free(w); return 0; }
    lh_q *q = &P->q[prio];
    if (q->n >= q->cap_pkts || (q->cap_bytes && q->bytes + size > q->cap_bytes)) {
        work_free(w);
        return 0;
    }
    if (q->n == q->size) {
        uint32_t ns = q->size ? q->size * 2 : 64;
        lh_ent *r = (lh_ent *)malloc(ns * sizeof(lh_ent));
        if (!r) { work_free(w); PyErr_NoMemory(); return -1; }
        for (uint32_t k = 0; k < q->n; k++) r[k] = q->ring[(q->head + k) % q->size];
        free(q->ring);
        q->ring = r;
        q->head = 0;
        q->size = ns;
    }
    double send = q->last_sent + (q->rate > 0 ? 1e6 / q->rate : 0.0);
    if (!(send > now)) send = now;           /* max(now, ...): now unless the other is larger */
    q->last_sent = send;
    lh_ent *e = &q->ring[(q->head + q->n) % q->size];
    e->w = w;
    e->enq = now;
    e->send = send;
    e->enq_depth = q->n;
    e->size = size;
    q->n++;
    q->bytes += size;
    if (!P->held++) S->holding[S->nholding++] = (uint16_t)w->port;
    S->queued++;
    uint64_t ip = w->sm.f_ingress_port;
    if (ip < LH_PORTS) {
        int64_t count = ++S->held[ip][prio];
        if (S->has_th[ip][prio] && !S->paused[ip][prio] && count >= (int64_t)S->xoff[ip][prio]) {
            S->paused[ip][prio] = 1;
            if (lh_event(S, ip, prio, 1)) return -1;
        }
    }
    return 0;
}

static inline int lh_eligible(const lh_q *q, double now) {
    return q->n && now >= q->ring[q->head].send && now >= q->paused_until;
}

/* EgressPort._ready: max(the earliest head ready time, busy); 0 when none */
static int lh_ready(const lh_state *S, const lh_port *P, double *out) {
    int any = 0;
    double best = 0.0;
    for (int k = 0; k < S->nq; k++) {
        const lh_q *q = &P->q[k];
        if (!q->n) continue;
        double s = q->ring[q->head].send, t = q->paused_until > s ? q->paused_until : s;
        if (!any || t < best) best = t;
        any = 1;
    }
    if (!any) return 0;
    *out = P->busy > best ? P->busy : best;
    return 1;
}

/* EgressPort._pick_dwrr */
static lh_q *lh_pick_dwrr(lh_state *S, lh_port *P, double now) {
    lh_q *weighted[LH_PRIOS];
    int n = 0, eligible = 0;
    for (int k = 0; k < S->nq; k++) {
        lh_q *q = &P->q[k];
        if (q->weight > 0) {
            weighted[n++] = q;
            if (!q->n) q->deficit = 0;
            else if (!eligible) eligible = lh_eligible(q, now);
        }
    }
    if (!eligible) return NULL;
    for (int i = 0; i < n * 65; i++) {
        lh_q *q = weighted[P->dwrr_pos % (uint64_t)n];
        if (lh_eligible(q, now)) {
            if (P->dwrr_fresh) {
                q->deficit += q->weight * LH_QUANTUM;
                P->dwrr_fresh = 0;
            }
            int64_t head = (int64_t)q->ring[q->head].size;
            if (head <= q->deficit) {
                q->deficit -= head;
                return q;
            }
        }
        P->dwrr_pos++;
        P->dwrr_fresh = 1;
    }
    lh_q *best = NULL;
    for (int i = 0; i < n; i++)
        if (lh_eligible(weighted[i], now) && (!best || weighted[i]->deficit > best->deficit))
            best = weighted[i];
    return best;
}

/* EgressPort.dequeue (catch-up 0) with PfcMonitor.on_dequeue: 1 and *o, or 0 */
typedef struct { rt_work *w; double enq, done; uint64_t enq_depth, deq_depth; } lh_out;

static int lh_dequeue(lh_state *S, lh_port *P, double now, lh_out *o) {
    if (!P->held || now < P->busy) return 0;
    double ready;
    if (!lh_ready(S, P, &ready) || ready > now) {
        for (int k = 0; k < S->nq; k++)   /* _pick_dwrr's idle reset */
            if (P->q[k].weight > 0 && !P->q[k].n) P->q[k].deficit = 0;
        return 0;
    }
    lh_q *q = NULL;
    for (int k = S->nq - 1; k >= 0 && !q; k--)
        if (P->q[k].weight == 0 && lh_eligible(&P->q[k], now)) q = &P->q[k];
    if (!q) q = lh_pick_dwrr(S, P, now);
    if (!q) return 0;
    lh_ent *e = &q->ring[q->head];
    q->head = (q->head + 1) % q->size;
    q->n--;
    P->held--;
    q->bytes -= e->size;
    double tx = P->link_rate ? (double)(e->size * 8) * 1e6 / P->link_rate : 0.0;
    P->busy = now + tx;
    o->w = e->w;
    o->enq = e->enq;
    o->done = P->busy;
    o->enq_depth = e->enq_depth;
    o->deq_depth = q->n;
    uint64_t ip = e->w->sm.f_ingress_port, prio = e->w->sm.f_priority;
    if (ip < LH_PORTS) {
        int64_t count = S->held[ip][prio] - 1;
        if (count < 0) count = 0;
        S->held[ip][prio] = count;
        if (S->paused[ip][prio] && S->has_th[ip][prio] && count <= (int64_t)S->xon[ip][prio]) {
            S->paused[ip][prio] = 0;
            if (lh_event(S, ip, prio, 0)) { work_free(o->w); return -1; }
        }
    }
    return 1;
}

/* TrafficManager.dequeue_ready; *outp malloc'd (NULL when none), -1 on an exception */
static Py_ssize_t lh_dequeue_ready(lh_state *S, double now, lh_out **outp) {
    *outp = NULL;
    if (!S->queued) return 0;
    Py_ssize_t n = 0, cap = 0;
    lh_out *out = NULL;
    int keep = 0, failed = 0;
    for (int k = 0; k < S->nholding; k++) {
        int port = S->holding[k];
        lh_port *P = S->ports[port];
        while (!failed && now >= P->busy) {
            if (n == cap) {
                cap = cap ? cap * 2 : 8;
                lh_out *no = (lh_out *)realloc(out, (size_t)cap * sizeof(lh_out));
                if (!no) { PyErr_NoMemory(); failed = 1; break; }
                out = no;
            }
            int got = lh_dequeue(S, P, now, &out[n]);
            if (got < 0) { failed = 1; break; }
            if (!got) break;
            n++;
            if (P->link_rate && P->busy > now) break;
        }
        if (P->held) S->holding[keep++] = (uint16_t)port;
    }
    S->nholding = keep;
    S->queued -= (uint64_t)n;
    if (failed) {
        for (Py_ssize_t j = 0; j < n; j++) work_free(out[j].w);
        free(out);
        return -1;
    }
    *outp = out;
    return n;
}

/* QueuedSwitch._run for work without a queue: ingress runs, egress items are queued;
 * at most MAX_PASSES items from ``passes`` on. Frees what it does not queue. */
static int lh_run(rt_ctx *c, lh_state *S, rt_queue *q, double now, int passes) {
    int res = 0;
    while (q->head < q->n && passes < MAX_PASSES) {
        passes++;
        rt_work *w = q->items[q->head];
        q->items[q->head++] = NULL;
        if (w->stage == 0) {
            c->busy = 1;
            int st = do_ingress(c, w, q);
            c->busy = 0;
            work_free(w);
            if (st == ST_ABORT) { res = -1; break; }
        } else if (lh_enqueue(S, w, now)) {
            res = -1;
            break;
        }
    }
    for (size_t i = q->head; i < q->n; i++) work_free(q->items[i]);
    q->head = q->n = 0;
    return res;
}

/* FabricSwitch.service: every packet due leaves through egress; the frames out as
 * (port, bytes, time its last bit is on the wire) in ``outs`` */
typedef int (*lh_frame_fn)(void *arg, PyObject *port, PyObject *data, double done);

/* a frame out as (port, bytes, done) into the list ``arg`` */
static int lh_frame_list(void *arg, PyObject *port, PyObject *data, double done) {
    PyObject *t = Py_BuildValue("(OOd)", port, data, done);
    int bad = !t || PyList_Append((PyObject *)arg, t);
    Py_XDECREF(t);
    return bad ? -1 : 0;
}

static int lh_service(rt_ctx *c, lh_state *S, double now, lh_frame_fn frame, void *arg) {
    lh_out *popped;
    Py_ssize_t n = lh_dequeue_ready(S, now, &popped);
    if (n < 0) return -1;
    int res = 0;
    Py_ssize_t k = 0;
    PyObject *frames = n ? PyList_New(0) : NULL;
    if (n && !frames) res = -1;
    for (; k < n && !res; k++) {
        lh_out *o = &popped[k];
        rt_queue q = {NULL, 0, 0, 0};
        int st = egress_dequeued(c, &o->w, o->enq, o->enq_depth, o->deq_depth, now, &q,
                                 frames);
        if (st == ST_ABORT) { q_free(&q); res = -1; break; }
        Py_ssize_t got = PyList_GET_SIZE(frames);
        for (Py_ssize_t j = 0; j < got && !res; j++) {
            PyObject *f = PyList_GET_ITEM(frames, j);
            res = frame(arg, PyTuple_GET_ITEM(f, 0), PyTuple_GET_ITEM(f, 1), o->done);
        }
        if (got && PyList_SetSlice(frames, 0, got, NULL)) res = -1;
        if (!res) res = lh_run(c, S, &q, now, 1);
        q_free(&q);
    }
    for (; k < n; k++) work_free(popped[k].w);
    free(popped);
    Py_XDECREF(frames);
    return res;
}

/* TrafficManager.next_event_us: 1 and *out, or 0 when no packet waits */
static int lh_next_t(lh_state *S, double now, double *out) {
    int found = 0;
    double best = 0.0;
    for (int k = 0; k < S->nholding; k++) {
        double t;
        if (!lh_ready(S, S->ports[S->holding[k]], &t)) continue;
        if (now > t) t = now;
        if (!found || t < best) best = t;
        found = 1;
    }
    *out = best;
    return found;
}

/* the clock egress reads: now, as QueuedSwitch freezes it */
static int lh_clock(rt_ctx *c, double now) {
    uint64_t us = now > 0 ? (uint64_t)now : 0;
    c->fixed_us = us;
    c->fixed_valid = 1;
    PyObject *v = PyLong_FromUnsignedLongLong(us);
    if (!v || PyObject_SetAttr(c->clock, STR_FIXED, v)) { Py_XDECREF(v); return -1; }
    Py_DECREF(v);
    return 0;
}

/* one step: (optionally) a packet in, then the service, each frame out to ``frame``;
 * *events: the PFC events of the step (a list, or NULL), *has_next and *next: the next
 * wake-up. -1 on an exception. Takes ``in``. */
static int lh_run_step(rt_ctx *c, lh_state *S, double now, rt_work *in, lh_frame_fn frame,
                       void *arg, PyObject **events, int *has_next, double *next) {
    *events = NULL;
    if (c->busy) {
        work_free(in);
        PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered");
        return -1;
    }
    PyObject **saved = c->sinkv;
    c->sinkv = NULL;
    int res = lh_clock(c, now);
    if (in && res) work_free(in);
    else if (in) {
        rt_queue q = {NULL, 0, 0, 0};
        res = q_push(&q, in) ? -1 : lh_run(c, S, &q, now, 0);
        q_free(&q);
    }
    if (!res) res = lh_service(c, S, now, frame, arg);
    c->sinkv = saved;
    *events = S->events;
    S->events = NULL;
    if (res) {
        Py_CLEAR(*events);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
        return -1;
    }
    *has_next = lh_next_t(S, now, next);
    return 0;
}

/* one step as (outs, events|None, next|None) */
static PyObject *lh_step(rt_ctx *c, lh_state *S, double now, rt_work *in) {
    PyObject *outs = PyList_New(0), *events;
    if (!outs) { work_free(in); return NULL; }
    int has_next;
    double next;
    if (lh_run_step(c, S, now, in, lh_frame_list, outs, &events, &has_next, &next)) {
        Py_DECREF(outs);
        return NULL;
    }
    if (!events) { events = Py_None; Py_INCREF(events); }
    PyObject *nxt = has_next ? PyFloat_FromDouble(next) : (Py_INCREF(Py_None), Py_None);
    return Py_BuildValue("(NNN)", outs, events, nxt);
}

static int lh_args(PyObject *const *args, Py_ssize_t n, Py_ssize_t want, const char *usage,
                   lh_state **S) {
    *S = n == want ? lh_get(args[0]) : NULL;
    if (!*S && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, usage);
    return *S ? 0 : -1;
}

/* hop_new(priority_queues, (capacity, capacity_bytes, rate, weight), link_rate) */
static PyObject *m_lh_new(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    unsigned long long cap, capb;
    double rate, link;
    long long weight;
    long nq = n == 3 ? PyLong_AsLong(args[0]) : -1;
    if (nq < 1 || nq > LH_PRIOS) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "hop_new(1..8 queues, defaults, link rate)");
        return NULL;
    }
    if (!PyArg_ParseTuple(args[1], "KKdL", &cap, &capb, &rate, &weight)) return NULL;
    link = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    lh_state *S = (lh_state *)calloc(1, sizeof(lh_state));
    if (!S) return PyErr_NoMemory();
    S->nq = (int)nq;
    S->defaults = (lh_cfg){cap, capb, rate, weight};
    S->default_link_rate = link;
    PyObject *capsule = PyCapsule_New(S, LH_NAME, lh_destroy);
    if (!capsule) free(S);
    return capsule;
}

/* hop_port(hop, port, link_rate, busy, [(capacity, capacity_bytes, rate, weight,
 * last_sent, paused_until)] * nq): an empty port's configuration and state */
static PyObject *m_lh_port(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lh_state *S;
    if (lh_args(args, n, 5, "hop_port(hop, port, link_rate, busy, queues)", &S)) return NULL;
    long long port = PyLong_AsLongLong(args[1]);
    double link = PyFloat_AsDouble(args[2]), busy = PyFloat_AsDouble(args[3]);
    if (PyErr_Occurred()) return NULL;
    lh_port *P = lh_port_of(S, port);
    if (!P) return NULL;
    if (P->held) { PyErr_SetString(PyExc_RuntimeError, "hop_port: the port holds packets"); return NULL; }
    PyObject *cfg = PySequence_Fast(args[4], "hop_port: queues must be a sequence");
    if (!cfg) return NULL;
    if (PySequence_Fast_GET_SIZE(cfg) != S->nq) {
        Py_DECREF(cfg);
        PyErr_SetString(PyExc_ValueError, "hop_port: one configuration per queue");
        return NULL;
    }
    for (int k = 0; k < S->nq; k++) {
        unsigned long long cap, capb;
        double rate, last, paused;
        long long weight;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(cfg, k), "KKdLdd", &cap, &capb, &rate,
                              &weight, &last, &paused)) {
            Py_DECREF(cfg);
            return NULL;
        }
        lh_q *q = &P->q[k];
        q->cap_pkts = cap;
        q->cap_bytes = capb;
        q->rate = rate;
        q->weight = weight;
        q->last_sent = last;
        q->paused_until = paused;
    }
    Py_DECREF(cfg);
    P->link_rate = link;
    P->busy = busy;
    Py_RETURN_NONE;
}

/* hop_pfc(hop, ingress port, priority, xoff, xon) */
static PyObject *m_lh_pfc(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lh_state *S;
    if (lh_args(args, n, 5, "hop_pfc(hop, port, priority, xoff, xon)", &S)) return NULL;
    long port = PyLong_AsLong(args[1]), prio = PyLong_AsLong(args[2]);
    long xoff = PyLong_AsLong(args[3]), xon = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (port < 0 || port >= LH_PORTS || prio < 0 || prio >= LH_PRIOS || xon < 0 || xoff <= xon) {
        PyErr_SetString(PyExc_ValueError, "hop_pfc: port 0..511, priority 0..7, 0 <= xon < xoff");
        return NULL;
    }
    S->has_th[port][prio] = 1;
    S->xoff[port][prio] = (uint32_t)xoff;
    S->xon[port][prio] = (uint32_t)xon;
    Py_RETURN_NONE;
}

/* hop_receive(ctx, hop, port, data, now) -> (outs, events|None, next|None) */
static PyObject *m_lh_receive(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 5) { PyErr_SetString(PyExc_TypeError, "hop_receive(ctx, hop, port, data, now)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    lh_state *S = c ? lh_get(args[1]) : NULL;
    if (!S) return NULL;
    long long port = PyLong_AsLongLong(args[2]);
    double now = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    const uint8_t *d;
    Py_ssize_t len;
    if (get_bytes(args[3], &d, &len)) return NULL;
    rt_work *w = ingress_work(d, (size_t)len, port, I_NORMAL, NULL, 0, 0);
    if (!w) return PyErr_NoMemory();
    return lh_step(c, S, now, w);
}

/* hop_service(ctx, hop, now) -> (outs, events|None, next|None) */
static PyObject *m_lh_service(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "hop_service(ctx, hop, now)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    lh_state *S = c ? lh_get(args[1]) : NULL;
    if (!S) return NULL;
    double now = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred()) return NULL;
    return lh_step(c, S, now, NULL);
}

/* hop_pause(hop, port, priority, quanta, now): EgressPort.pause */
static PyObject *m_lh_pause(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lh_state *S;
    if (lh_args(args, n, 5, "hop_pause(hop, port, priority, quanta, now)", &S)) return NULL;
    long long port = PyLong_AsLongLong(args[1]);
    long prio = PyLong_AsLong(args[2]);
    long long quanta = PyLong_AsLongLong(args[3]);
    double now = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    lh_port *P = lh_port_of(S, port);
    if (!P) return NULL;
    if (prio < 0 || prio >= S->nq) {
        PyErr_Format(PyExc_ValueError, "port %lld: no queue %ld (the port has %d)", port, prio, S->nq);
        return NULL;
    }
    double rate = P->link_rate ? P->link_rate : 1e9;
    P->q[prio].paused_until = quanta ? now + (double)(quanta * 512) * 1e6 / rate : now;
    Py_RETURN_NONE;
}

/* hop_paused(hop, ingress port, priority) -> whether this switch has it paused (XOFF sent) */
static PyObject *m_lh_paused(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lh_state *S;
    if (lh_args(args, n, 3, "hop_paused(hop, port, priority)", &S)) return NULL;
    long port = PyLong_AsLong(args[1]), prio = PyLong_AsLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (port < 0 || port >= LH_PORTS || prio < 0 || prio >= LH_PRIOS) Py_RETURN_FALSE;
    return PyBool_FromLong(S->paused[port][prio]);
}

/* hop_depth(hop, port|-1) -> packets held by the port (-1: the switch) */
static PyObject *m_lh_depth(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lh_state *S;
    if (lh_args(args, n, 2, "hop_depth(hop, port)", &S)) return NULL;
    long port = PyLong_AsLong(args[1]);
    if (PyErr_Occurred()) return NULL;
    if (port < 0) return PyLong_FromUnsignedLongLong(S->queued);
    if (port >= LH_PORTS || !S->ports[port]) return PyLong_FromLong(0);
    return PyLong_FromUnsignedLong(S->ports[port]->held);
}

/* ---- the lab's fabric: switch events without Python frames ------------------------
 *
 * taillab's Network schedules every event on one heap of (time, seq, callable)
 * (taillab/events.py). For the switches of a fabric whose hops are all C hops, the
 * events of a switch (a packet arriving, its wake-up) are partials of fab_receive and
 * fab_tick: they do here what FabricSwitch.receive, service, _tick and
 * Network.switch_sent do, with the same Python objects (the switch's arrivals and
 * forwarded-CNP dictionaries, the loop's heap and sequence), pushing the same events
 * in the same order (a flow caught in a paused queue joins the same paused flows);
 * what only Python knows is a call back (a Fast CNP's origin, a CE mark, the PFC frames
 * to send). fab_close drops the references (the heap holds events bound to the fabric:
 * a cycle otherwise).
 */

typedef struct {
    PyObject *ctx, *hop, *sw, *name, *arrivals, *cnps, *send_pfc;
    uint64_t received, token;
    double scheduled;
    int has_scheduled;
    PyObject *deliver[LH_PORTS];   /* a host's receiver (peer_sw -1), else NULL */
    int peer_sw[LH_PORTS];
    int64_t peer_port[LH_PORTS];
} lf_switch;

/* an event of the loop's heap: (time, seq, callable), ordered by (time, seq) as
 * EventLoop's tuples are (seq is unique: the callable is never compared) */
typedef struct { double t; uint64_t seq; PyObject *tobj, *fn; } lf_ev;

typedef struct {
    int n;
    lf_switch *sw;
    lf_ev *ev;                 /* the heap of every event of the loop (fab_at, fab_run) */
    size_t nev, capev;
    uint64_t seq;
    double now;                /* the loop's now, and its object */
    PyObject *now_obj;
    PyObject *loop, *partial, *intervals, *now_name;
    PyObject *on_cnp, *on_ce, *f_receive, *f_tick;
    PyObject *prio_of_rqp, *paused_flows;   /* Network._prio_of_rqp, PfcLedger.paused_flows */
    PyObject *hosts;           /* {host: {port: (switch, port)}}: where a NIC's packets go */
    double prop;
    Py_ssize_t bth;
    int cnp_opcode, ecn_ce;
} lf_state;

static const char *LF_NAME = "softswitch.fastpath.fabric";

static lf_state *lf_get(PyObject *o) { return (lf_state *)PyCapsule_GetPointer(o, LF_NAME); }

static void lf_clear(lf_state *F) {
    for (int i = 0; F->sw && i < F->n; i++) {
        lf_switch *S = &F->sw[i];
        Py_CLEAR(S->ctx); Py_CLEAR(S->hop); Py_CLEAR(S->sw); Py_CLEAR(S->name);
        Py_CLEAR(S->arrivals);
        Py_CLEAR(S->cnps); Py_CLEAR(S->send_pfc);
        for (int p = 0; p < LH_PORTS; p++) Py_CLEAR(S->deliver[p]);
    }
    for (size_t k = 0; k < F->nev; k++) { Py_CLEAR(F->ev[k].tobj); Py_CLEAR(F->ev[k].fn); }
    F->nev = 0;
    Py_CLEAR(F->now_obj);
    Py_CLEAR(F->loop); Py_CLEAR(F->partial); Py_CLEAR(F->intervals); Py_CLEAR(F->now_name);
    Py_CLEAR(F->on_cnp); Py_CLEAR(F->on_ce); Py_CLEAR(F->prio_of_rqp);
    Py_CLEAR(F->paused_flows);
    Py_CLEAR(F->f_receive); Py_CLEAR(F->f_tick); Py_CLEAR(F->hosts);
}

static void lf_destroy(PyObject *cap) {
    lf_state *F = lf_get(cap);
    if (!F) return;
    lf_clear(F);
    free(F->ev);
    free(F->sw);
    free(F);
}

static inline int lf_before(const lf_ev *a, const lf_ev *b) {
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* EventLoop.at: (max(t, now), next seq, fn) onto the heap; the time's object is now's
 * when now is later, else ``tobj`` (NULL: a new float of ``t``). Steals ``fn``. */
static int lf_push_obj(lf_state *F, PyObject *tobj, double t, PyObject *fn) {
    if (!fn) return -1;
    if (F->now > t) {
        t = F->now;
        tobj = F->now_obj;
        Py_INCREF(tobj);
    } else if (tobj) {
        Py_INCREF(tobj);
    } else if (!(tobj = PyFloat_FromDouble(t))) {
        Py_DECREF(fn);
        return -1;
    }
    if (F->nev == F->capev) {
        size_t nc = F->capev ? F->capev * 2 : 1024;
        lf_ev *ne = (lf_ev *)realloc(F->ev, nc * sizeof(lf_ev));
        if (!ne) { Py_DECREF(tobj); Py_DECREF(fn); PyErr_NoMemory(); return -1; }
        F->ev = ne;
        F->capev = nc;
    }
    lf_ev e = {t, F->seq++, tobj, fn};
    size_t k = F->nev++;
    while (k > 0) {
        size_t up = (k - 1) / 2;
        if (!lf_before(&e, &F->ev[up])) break;
        F->ev[k] = F->ev[up];
        k = up;
    }
    F->ev[k] = e;
    return 0;
}

static int lf_push(lf_state *F, double t, double now, PyObject *fn) {
    (void)now;                 /* the loop's (F->now) */
    return lf_push_obj(F, NULL, t, fn);
}

/* the earliest event off the heap (the heap is not empty) */
static lf_ev lf_pop(lf_state *F) {
    lf_ev top = F->ev[0];
    lf_ev last = F->ev[--F->nev];
    size_t n = F->nev, k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && lf_before(&F->ev[c + 1], &F->ev[c])) c++;
        if (!lf_before(&F->ev[c], &last)) break;
        F->ev[k] = F->ev[c];
        k = c;
    }
    if (n) F->ev[k] = last;
    return top;
}

static PyObject *lf_bytes_key(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb) {
    PyObject *k = PyBytes_FromStringAndSize(NULL, na + nb);
    if (!k) return NULL;
    memcpy(PyBytes_AS_STRING(k), a, (size_t)na);
    memcpy(PyBytes_AS_STRING(k) + na, b, (size_t)nb);
    return k;
}

/* the (data[30:34], data[46:50]) key of a CNP (FabricSwitch._forwarding_cnps) */
static PyObject *lf_cnp_key(const char *d) {
    return Py_BuildValue("(y#y#)", d + 30, (Py_ssize_t)4, d + 46, (Py_ssize_t)4);
}

static PyMethodDef LF_DELIVER_DEF;

/* Network._check_victim: a data packet leaving (switch, port), there since ``arrived``:
 * if its queue (the priority its receiver QP's class gets) was paused while it waited,
 * its flow (source IP, destination IP, QP) joins the paused flows */
static int lf_victim(lf_state *F, lf_switch *S, int64_t port, const char *d,
                     PyObject *arrived, double now) {
    const unsigned char *u = (const unsigned char *)d + F->bth;
    PyObject *rqp = PyLong_FromLong(((long)u[5] << 16) | ((long)u[6] << 8) | (long)u[7]);
    if (!rqp) return -1;
    PyObject *prio = PyDict_GetItemWithError(F->prio_of_rqp, rqp);
    if (!prio && PyErr_Occurred()) { Py_DECREF(rqp); return -1; }
    PyObject *zero = prio ? NULL : PyLong_FromLong(0);
    PyObject *key = Py_BuildValue("(OLO)", S->name, (long long)port, prio ? prio : zero);
    Py_XDECREF(zero);
    PyObject *spans = key ? PyDict_GetItemWithError(F->intervals, key) : NULL;
    Py_XDECREF(key);
    if (!spans && PyErr_Occurred()) { Py_DECREF(rqp); return -1; }
    double t0 = PyFloat_AsDouble(arrived);
    int hit = 0;
    for (Py_ssize_t i = spans ? PySequence_Size(spans) - 1 : -1; i >= 0; i--) {
        PyObject *span = PySequence_GetItem(spans, i);
        PyObject *a = span ? PySequence_GetItem(span, 0) : NULL;
        PyObject *b = span ? PySequence_GetItem(span, 1) : NULL;
        double start = a ? PyFloat_AsDouble(a) : -1.0, end = b ? PyFloat_AsDouble(b) : -1.0;
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(span);
        if (PyErr_Occurred()) { Py_DECREF(rqp); return -1; }
        if (end < t0) break;
        if (start <= now) { hit = 1; break; }
    }
    int bad = 0;
    if (hit) {
        PyObject *flow = Py_BuildValue("(y#y#O)", d + 26, (Py_ssize_t)4, d + 30, (Py_ssize_t)4, rqp);
        bad = !flow || PySet_Add(F->paused_flows, flow);
        Py_XDECREF(flow);
    }
    Py_DECREF(rqp);
    return bad ? -1 : 0;
}

/* Network.switch_sent for one frame of switch ``si`` */
static int lf_sent(PyObject *cap, lf_state *F, lf_switch *S, int64_t port, PyObject *data,
                   double done, double now, PyObject *nowobj) {
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    const char *d = PyBytes_AS_STRING(data);
    if (len > F->bth) {
        if ((unsigned char)d[F->bth] == F->cnp_opcode) {
            PyObject *key = lf_cnp_key(d);
            if (!key) return -1;
            PyObject *v = PyDict_GetItemWithError(S->cnps, key);
            long long count = v ? PyLong_AsLongLong(v) : 0;
            if (count == -1 && PyErr_Occurred()) { Py_DECREF(key); return -1; }
            int bad = 0;
            if (count > 0) {
                PyObject *nv = PyLong_FromLongLong(count - 1);
                bad = !nv || PyDict_SetItem(S->cnps, key, nv);
                Py_XDECREF(nv);
            } else {
                PyObject *r = PyObject_CallFunctionObjArgs(F->on_cnp, data, nowobj, NULL);
                bad = !r;
                Py_XDECREF(r);
            }
            Py_DECREF(key);
            if (bad) return -1;
        } else {
            PyObject *key = lf_bytes_key(d + 26, 8, d + F->bth + 4, 8);
            if (!key) return -1;
            PyObject *arrived = PyDict_GetItemWithError(S->arrivals, key);
            if (arrived) {
                Py_INCREF(arrived);
                if (PyDict_DelItem(S->arrivals, key)) { Py_DECREF(arrived); Py_DECREF(key); return -1; }
            }
            Py_DECREF(key);
            if (!arrived && PyErr_Occurred()) return -1;
            if (arrived && PyDict_Size(F->intervals)) {
                int bad = lf_victim(F, S, port, d, arrived, now);
                Py_DECREF(arrived);
                if (bad) return -1;
            } else {
                Py_XDECREF(arrived);
            }
            if ((d[15] & 3) == F->ecn_ce) {
                PyObject *r = PyObject_CallFunctionObjArgs(F->on_ce, data, nowobj, NULL);
                if (!r) return -1;
                Py_DECREF(r);
            }
        }
    }
    if (port < 0 || port >= LH_PORTS || (S->peer_sw[port] < 0 && !S->deliver[port])) {
        PyErr_Format(PyExc_KeyError, "fabric: no link on port %lld", (long long)port);
        return -1;
    }
    PyObject *fn;
    if (S->peer_sw[port] >= 0) {
        PyObject *self = Py_BuildValue("(OiLO)", cap, S->peer_sw[port],
                                       (long long)S->peer_port[port], data);
        fn = self ? PyCFunction_NewEx(&LF_DELIVER_DEF, self, NULL) : NULL;
        Py_XDECREF(self);
    } else {
        PyObject *a = PyTuple_Pack(2, S->deliver[port], data);
        fn = a ? PyObject_Call(F->partial, a, NULL) : NULL;
        Py_XDECREF(a);
    }
    return lf_push(F, done + F->prop, now, fn);
}

typedef struct { PyObject *cap; lf_state *F; lf_switch *S; double now; PyObject *nowobj; } lf_at;

static int lf_frame(void *arg, PyObject *port, PyObject *data, double done) {
    lf_at *x = (lf_at *)arg;
    long long p = PyLong_AsLongLong(port);
    if (p == -1 && PyErr_Occurred()) return -1;
    return lf_sent(x->cap, x->F, x->S, p, data, done, x->now, x->nowobj);
}

static PyMethodDef LF_TICK_DEF;

/* FabricSwitch.receive (``in``) or service (``in`` NULL) of switch ``si`` at ``now``:
 * the hop's step with each frame out carried at once (Network.switch_sent), then the
 * PFC frames, then the wake-up. Takes ``in``. */
static int lf_step(PyObject *cap, lf_state *F, int si, double now, PyObject *nowobj,
                   rt_work *in) {
    lf_switch *S = &F->sw[si];
    lh_state *H = lh_get(S->hop);
    rt_ctx *c = H ? get_ctx(S->ctx) : NULL;
    if (!c) { work_free(in); return -1; }
    lf_at at = {cap, F, S, now, nowobj};
    PyObject *events;
    int has_next;
    double next;
    if (lh_run_step(c, H, now, in, lf_frame, &at, &events, &has_next, &next)) return -1;
    if (events) {
        PyObject *r = PyObject_CallOneArg(S->send_pfc, events);
        Py_DECREF(events);
        if (!r) return -1;
        Py_DECREF(r);
    }
    if (has_next && (!S->has_scheduled || next < S->scheduled)) {
        S->scheduled = next;
        S->has_scheduled = 1;
        S->token++;
        PyObject *self = Py_BuildValue("(OiK)", cap, si, (unsigned long long)S->token);
        PyObject *fn = self ? PyCFunction_NewEx(&LF_TICK_DEF, self, NULL) : NULL;
        Py_XDECREF(self);
        return lf_push(F, next, now, fn);
    }
    return 0;
}

static int lf_args(PyObject *const *args, Py_ssize_t n, Py_ssize_t want, lf_state **F,
                   int *si) {
    if (n != want) { PyErr_SetString(PyExc_TypeError, "fabric: wrong number of arguments"); return -1; }
    *F = lf_get(args[0]);
    if (!*F) return -1;
    if (!(*F)->loop) { PyErr_SetString(PyExc_RuntimeError, "fabric: closed"); return -1; }
    long i = PyLong_AsLong(args[1]);
    if (i < 0 || i >= (*F)->n) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "fabric: no such switch");
        return -1;
    }
    *si = (int)i;
    return 0;
}

static PyObject *lf_now(lf_state *F, double *now) {
    *now = F->now;
    Py_INCREF(F->now_obj);
    return F->now_obj;
}

/* fab_receive(fabric, switch, port, data): FabricSwitch.receive */
static PyObject *m_lf_receive(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F;
    int si;
    if (lf_args(args, n, 4, &F, &si)) return NULL;
    lf_switch *S = &F->sw[si];
    long long port = PyLong_AsLongLong(args[2]);
    if (port == -1 && PyErr_Occurred()) return NULL;
    PyObject *data = args[3];
    if (!PyBytes_Check(data)) { PyErr_SetString(PyExc_TypeError, "fab_receive: data must be bytes"); return NULL; }
    double now;
    PyObject *nowobj = lf_now(F, &now);
    if (!nowobj) return NULL;
    S->received++;
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    const char *d = PyBytes_AS_STRING(data);
    int bad = 0;
    if (len > F->bth && (unsigned char)d[F->bth] == F->cnp_opcode) {
        PyObject *key = lf_cnp_key(d);
        PyObject *v = key ? PyDict_GetItemWithError(S->cnps, key) : NULL;
        long long count = v ? PyLong_AsLongLong(v) : 0;
        PyObject *nv = key && !PyErr_Occurred() ? PyLong_FromLongLong(count + 1) : NULL;
        bad = !nv || PyDict_SetItem(S->cnps, key, nv);
        Py_XDECREF(nv);
        Py_XDECREF(key);
    } else if (len > F->bth + 12) {
        PyObject *key = lf_bytes_key(d + 26, 8, d + F->bth + 4, 8);
        bad = !key || PyDict_SetItem(S->arrivals, key, nowobj);
        Py_XDECREF(key);
    }
    if (bad) { Py_DECREF(nowobj); return NULL; }
    rt_work *w = ingress_work((const uint8_t *)d, (size_t)len, port, I_NORMAL, NULL, 0, 0);
    if (!w) { Py_DECREF(nowobj); return PyErr_NoMemory(); }
    int res = lf_step(args[0], F, si, now, nowobj, w);
    Py_DECREF(nowobj);
    if (res) return NULL;
    Py_RETURN_NONE;
}

/* fab_service(fabric, switch): FabricSwitch.service */
static PyObject *m_lf_service(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F;
    int si;
    if (lf_args(args, n, 2, &F, &si)) return NULL;
    double now;
    PyObject *nowobj = lf_now(F, &now);
    if (!nowobj) return NULL;
    int res = lf_step(args[0], F, si, now, nowobj, NULL);
    Py_DECREF(nowobj);
    if (res) return NULL;
    Py_RETURN_NONE;
}

/* fab_tick(fabric, switch, token): FabricSwitch._tick */
static PyObject *m_lf_tick(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F;
    int si;
    if (lf_args(args, n, 3, &F, &si)) return NULL;
    lf_switch *S = &F->sw[si];
    unsigned long long token = PyLong_AsUnsignedLongLong(args[2]);
    if (token == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    if (token != S->token) Py_RETURN_NONE;
    S->has_scheduled = 0;
    return m_lf_service(self, args, 2);
}

/* the events C schedules: a packet reaching a switch (self: (fabric, switch, port,
 * data)) and a switch's wake-up (self: (fabric, switch, token)), called by the loop */
static PyObject *m_lf_deliver(PyObject *self, PyObject *unused) {
    return m_lf_receive(NULL, &PyTuple_GET_ITEM(self, 0), PyTuple_GET_SIZE(self));
}

static PyObject *m_lf_wake(PyObject *self, PyObject *unused) {
    return m_lf_tick(NULL, &PyTuple_GET_ITEM(self, 0), PyTuple_GET_SIZE(self));
}

static PyMethodDef LF_DELIVER_DEF = {"fab_deliver", m_lf_deliver, METH_NOARGS, NULL};
static PyMethodDef LF_TICK_DEF = {"fab_wake", m_lf_wake, METH_NOARGS, NULL};

/* fab_carry(fabric, host, port, data, last_bit_us): Network.carry for a NIC's packet
 * to its switch: it arrives one propagation delay after its last bit leaves */
static PyObject *m_lf_carry(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F = n == 5 ? lf_get(args[0]) : NULL;
    if (!F) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fab_carry(fabric, host, port, data, t)");
        return NULL;
    }
    if (!F->hosts) { PyErr_SetString(PyExc_RuntimeError, "fabric: closed"); return NULL; }
    PyObject *ports = PyDict_GetItemWithError(F->hosts, args[1]);
    PyObject *peer = ports ? PyDict_GetItemWithError(ports, args[2]) : NULL;
    if (!peer) {
        if (!PyErr_Occurred()) PyErr_Format(PyExc_KeyError, "fabric: no link at %R port %R", args[1], args[2]);
        return NULL;
    }
    double last = PyFloat_AsDouble(args[4]), now;
    if (last == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *nowobj = lf_now(F, &now);
    if (!nowobj) return NULL;
    Py_DECREF(nowobj);
    PyObject *bound = Py_BuildValue("(OOOO)", args[0], PyTuple_GET_ITEM(peer, 0),
                                    PyTuple_GET_ITEM(peer, 1), args[3]);
    PyObject *fn = bound ? PyCFunction_NewEx(&LF_DELIVER_DEF, bound, NULL) : NULL;
    Py_XDECREF(bound);
    if (lf_push(F, last + F->prop, now, fn)) return NULL;
    Py_RETURN_NONE;
}

/* fab_received(fabric, switch) -> packets the switch received */
static PyObject *m_lf_received(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F;
    int si;
    if (n != 2 || !(F = lf_get(args[0]))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fab_received(fabric, switch)");
        return NULL;
    }
    si = (int)PyLong_AsLong(args[1]);
    if (si < 0 || si >= F->n) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "fabric: no such switch");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(F->sw[si].received);
}

/* fab_close(fabric): drop every reference (the run is over) */
static PyObject *m_lf_close(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F = n == 1 ? lf_get(args[0]) : NULL;
    if (!F) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fab_close(fabric)");
        return NULL;
    }
    lf_clear(F);
    Py_RETURN_NONE;
}

/* fab_at(fabric, t, fn): EventLoop.at on the fabric's heap */
static PyObject *m_lf_at(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F = n == 3 ? lf_get(args[0]) : NULL;
    if (!F) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fab_at(fabric, t, fn)");
        return NULL;
    }
    if (!F->loop) { PyErr_SetString(PyExc_RuntimeError, "fabric: closed"); return NULL; }
    double t = PyFloat_AsDouble(args[1]);
    if (t == -1.0 && PyErr_Occurred()) return NULL;
    Py_INCREF(args[2]);
    if (lf_push_obj(F, args[1], t, args[2])) return NULL;
    Py_RETURN_NONE;
}

/* fab_run(fabric, until): EventLoop.run on the fabric's heap: every event due by
 * ``until`` in (time, seq) order, ``loop.now`` its time, ``loop.executed`` counting
 * them; then ``loop.now`` = until */
static PyObject *m_lf_run(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    lf_state *F = n == 2 ? lf_get(args[0]) : NULL;
    if (!F) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "fab_run(fabric, until)");
        return NULL;
    }
    if (!F->loop) { PyErr_SetString(PyExc_RuntimeError, "fabric: closed"); return NULL; }
    PyObject *loop = F->loop, *until = args[1];
    double end = PyFloat_AsDouble(until);
    if (end == -1.0 && PyErr_Occurred()) return NULL;
    PyObject *ename = PyUnicode_InternFromString("executed");
    PyObject *ex = ename ? PyObject_GetAttr(loop, ename) : NULL;
    long long executed = ex ? PyLong_AsLongLong(ex) : -1;
    Py_XDECREF(ex);
    int bad = executed == -1 && PyErr_Occurred();
    while (!bad && F->nev > 0 && F->ev[0].t <= end) {
        lf_ev e = lf_pop(F);
        Py_SETREF(F->now_obj, e.tobj);
        F->now = e.t;
        if (PyObject_SetAttr(loop, F->now_name, e.tobj)) { Py_DECREF(e.fn); bad = 1; break; }
        executed++;
        PyObject *r = PyObject_CallNoArgs(e.fn);
        Py_DECREF(e.fn);
        if (!r) { bad = 1; break; }
        Py_DECREF(r);
        if (!F->loop) {
            PyErr_SetString(PyExc_RuntimeError, "fabric: closed while running");
            bad = 1;
            break;
        }
    }
    if (ename && executed >= 0) {
        PyObject *err_t, *err_v, *err_tb;
        PyErr_Fetch(&err_t, &err_v, &err_tb);
        PyObject *v = PyLong_FromLongLong(executed);
        if (!v || PyObject_SetAttr(loop, ename, v)) bad = 1;
        Py_XDECREF(v);
        if (err_t) PyErr_Restore(err_t, err_v, err_tb);
    }
    if (!bad) {
        Py_INCREF(until);
        Py_SETREF(F->now_obj, until);
        F->now = end;
        if (PyObject_SetAttr(loop, F->now_name, until)) bad = 1;
    }
    Py_XDECREF(ename);
    if (bad) return NULL;
    Py_RETURN_NONE;
}

#define LF_SET(dst, src) do { Py_INCREF(src); (dst) = (src); } while (0)

/* fab_new(loop, partial, intervals, (on_cnp, on_ce, QP priorities, paused flows),
 *         (fab_receive, fab_tick), prop_us, (bth offset, CNP opcode, ECN CE),
 *         [(ctx, hop, switch, arrivals, cnps, send_pfc, {port: (receiver, peer switch,
 *           peer port)})], {host: {port: (switch, port)}}) -> fabric; the loop's events
 * are the fabric's from then on (fab_at, fab_run): it must hold none yet */
static PyObject *m_lf_new(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 9) { PyErr_SetString(PyExc_TypeError, "fab_new: 9 arguments"); return NULL; }
    PyObject *cb = args[3], *fns = args[4], *consts = args[6], *specs = args[7];
    if (!PyTuple_Check(cb) || PyTuple_GET_SIZE(cb) != 4 || !PyTuple_Check(fns) ||
        PyTuple_GET_SIZE(fns) != 2 || !PyList_Check(specs) || !PyDict_Check(args[2]) ||
        !PyDict_Check(args[8])) {
        PyErr_SetString(PyExc_TypeError, "fab_new: bad arguments");
        return NULL;
    }
    long bth, opc, ce;
    if (!PyArg_ParseTuple(consts, "lll", &bth, &opc, &ce)) return NULL;
    double prop = PyFloat_AsDouble(args[5]);
    if (PyErr_Occurred()) return NULL;
    PyObject *now_obj = PyObject_GetAttrString(args[0], "now");
    double now = now_obj ? PyFloat_AsDouble(now_obj) : -1.0;
    if (!now_obj || (now == -1.0 && PyErr_Occurred())) { Py_XDECREF(now_obj); return NULL; }
    Py_ssize_t ns = PyList_GET_SIZE(specs);
    lf_state *F = (lf_state *)calloc(1, sizeof(lf_state));
    if (!F) return PyErr_NoMemory();
    F->sw = (lf_switch *)calloc((size_t)(ns ? ns : 1), sizeof(lf_switch));
    if (!F->sw) { free(F); return PyErr_NoMemory(); }
    F->n = (int)ns;
    PyObject *cap = PyCapsule_New(F, LF_NAME, lf_destroy);
    if (!cap) { free(F->sw); free(F); Py_DECREF(now_obj); return NULL; }
    F->now_obj = now_obj;
    F->now = now;
    LF_SET(F->loop, args[0]); LF_SET(F->partial, args[1]); LF_SET(F->intervals, args[2]);
    LF_SET(F->on_cnp, PyTuple_GET_ITEM(cb, 0)); LF_SET(F->on_ce, PyTuple_GET_ITEM(cb, 1));
    LF_SET(F->prio_of_rqp, PyTuple_GET_ITEM(cb, 2));
    LF_SET(F->paused_flows, PyTuple_GET_ITEM(cb, 3));
    if (!PyDict_Check(F->prio_of_rqp) || !PySet_Check(F->paused_flows)) {
        PyErr_SetString(PyExc_TypeError, "fab_new: QP priorities must be a dict, paused flows a set");
        Py_DECREF(cap);
        return NULL;
    }
    LF_SET(F->f_receive, PyTuple_GET_ITEM(fns, 0)); LF_SET(F->f_tick, PyTuple_GET_ITEM(fns, 1));
    LF_SET(F->hosts, args[8]);
    F->now_name = PyUnicode_InternFromString("now");
    F->prop = prop;
    F->bth = bth;
    F->cnp_opcode = (int)opc;
    F->ecn_ce = (int)ce;
    if (!F->now_name) { Py_DECREF(cap); return NULL; }
    for (Py_ssize_t i = 0; i < ns; i++) {
        lf_switch *S = &F->sw[i];
        for (int p = 0; p < LH_PORTS; p++) S->peer_sw[p] = -1;
        PyObject *ctx, *hop, *sw, *arr, *cnps, *pfc, *links;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(specs, i), "OOOO!O!OO!", &ctx, &hop, &sw,
                              &PyDict_Type, &arr, &PyDict_Type, &cnps, &pfc, &PyDict_Type,
                              &links)) {
            Py_DECREF(cap);
            return NULL;
        }
        if (!get_ctx(ctx) || !lh_get(hop)) { Py_DECREF(cap); return NULL; }
        LF_SET(S->ctx, ctx); LF_SET(S->hop, hop); LF_SET(S->sw, sw); LF_SET(S->arrivals, arr);
        S->name = PyObject_GetAttrString(sw, "name");
        if (!S->name) { Py_DECREF(cap); return NULL; }
        LF_SET(S->cnps, cnps); LF_SET(S->send_pfc, pfc);
        PyObject *k, *v;
        Py_ssize_t pos = 0;
        while (PyDict_Next(links, &pos, &k, &v)) {
            long port = PyLong_AsLong(k);
            PyObject *recv;
            int peer;
            long long pport;
            if ((port == -1 && PyErr_Occurred()) || !PyArg_ParseTuple(v, "OiL", &recv, &peer, &pport)) {
                Py_DECREF(cap);
                return NULL;
            }
            if (port < 0 || port >= LH_PORTS || peer >= ns) {
                PyErr_SetString(PyExc_ValueError, "fab_new: link out of range");
                Py_DECREF(cap);
                return NULL;
            }
            S->peer_sw[port] = peer;
            S->peer_port[port] = pport;
            if (peer < 0) LF_SET(S->deliver[port], recv);
        }
    }
    return cap;
}

static PyMethodDef LH_METHODS[] = {
    {"hop_new", (PyCFunction)(void (*)(void))m_lh_new, METH_FASTCALL, NULL},
    {"hop_port", (PyCFunction)(void (*)(void))m_lh_port, METH_FASTCALL, NULL},
    {"hop_pfc", (PyCFunction)(void (*)(void))m_lh_pfc, METH_FASTCALL, NULL},
    {"hop_receive", (PyCFunction)(void (*)(void))m_lh_receive, METH_FASTCALL, NULL},
    {"hop_service", (PyCFunction)(void (*)(void))m_lh_service, METH_FASTCALL, NULL},
    {"hop_pause", (PyCFunction)(void (*)(void))m_lh_pause, METH_FASTCALL, NULL},
    {"hop_paused", (PyCFunction)(void (*)(void))m_lh_paused, METH_FASTCALL, NULL},
    {"hop_depth", (PyCFunction)(void (*)(void))m_lh_depth, METH_FASTCALL, NULL},
    {"fab_new", (PyCFunction)(void (*)(void))m_lf_new, METH_FASTCALL, NULL},
    {"fab_receive", (PyCFunction)(void (*)(void))m_lf_receive, METH_FASTCALL, NULL},
    {"fab_service", (PyCFunction)(void (*)(void))m_lf_service, METH_FASTCALL, NULL},
    {"fab_tick", (PyCFunction)(void (*)(void))m_lf_tick, METH_FASTCALL, NULL},
    {"fab_received", (PyCFunction)(void (*)(void))m_lf_received, METH_FASTCALL, NULL},
    {"fab_close", (PyCFunction)(void (*)(void))m_lf_close, METH_FASTCALL, NULL},
    {"fab_run", (PyCFunction)(void (*)(void))m_lf_run, METH_FASTCALL, NULL},
    {"fab_at", (PyCFunction)(void (*)(void))m_lf_at, METH_FASTCALL, NULL},
    {"fab_carry", (PyCFunction)(void (*)(void))m_lf_carry, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

/* queues_new() -> {name: function} of the lab hop */
static PyObject *lh_functions(void) {
    PyObject *d = PyDict_New();
    for (PyMethodDef *m = LH_METHODS; d && m->ml_name; m++) {
        PyObject *f = PyCFunction_NewEx(m, NULL, NULL);
        if (!f || PyDict_SetItemString(d, m->ml_name, f)) Py_CLEAR(d);
        Py_XDECREF(f);
    }
    return d;
}
