/* softswitch fast path: the native forwarding loop of ``softswitch run``.
 *
 * Appended after rt_tail.c. forward() takes a burst of frames received on one port and
 * does, frame after frame, what EgressScheduler.deliver_batch does with
 * QueuedSwitch._run(pass_through=True) and Device._dispatch, without a trip to Python
 * per frame: ingress (with resubmits, clones, multicast copies, recirculations, all in
 * the C driver), then, for each packet instance the traffic manager would pass through
 * at once, egress and the deparser; do_egress appends each frame out to its port's
 * list of held frames (c->sinkv: the DataPlane's, sent in one call per port after the
 * burst).
 *
 * Whether the traffic manager would pass an instance through is read from ``gate``
 * (TrafficManager.pass_through_gate, computed just before the call; it only says yes
 * when that stays true while time moves on and nothing else changes the traffic
 * manager, and only this call runs): byte ``port`` (0..511) has bit p set when
 * priority p's queue is free to send at once for packets from this ingress port; byte
 * 512 + ``port`` has bit p set when that queue is full, so enqueue would drop the
 * instance, and the loop drops it when nothing may leave the queues before ``quiet``
 * (then the dequeue Python runs after an enqueue would have found nothing).
 * Ports whose queues are native (rt_queues.c, ``queues``) come first: an instance for
 * one passes through, is queued or is dropped here, as EgressPort would, and after a
 * frame that queued one, what may leave at that time leaves (EgressScheduler
 * ._after_frame); when such a packet's egress leaves work (a recirculation, an egress
 * clone), the loop stops after the frame with LOOP_DRAIN and Python finishes it.
 * Anything else stops the burst at that frame and hands it back, so Python finishes it
 * the usual way and the order of everything stays as it is without the loop:
 *   - a MAC control (PFC) frame: the whole frame (it pauses our queues first);
 *   - an instance whose queue is closed (a rate, a pause, packets waiting, a port the
 *     traffic manager has not seen yet, PFC thresholds): that frame's remaining work
 *     items, head first, with the passes used so far;
 *   - a Python exception (a callback, memory): the exception, as the per-frame path
 *     would have raised it.
 * Frames to ports without a held list (the CPU port, the drop port, no interface) are
 * returned in ``outs`` for Device._dispatch, in order.
 */

enum { LOOP_DONE = 0, LOOP_FRAME = 1, LOOP_WORK = 2, LOOP_ERROR = 3, LOOP_DRAIN = 4 };
enum { RUN_DONE = 0, RUN_HANDBACK = 1, RUN_ERROR = 2 };
#define GATE_PORTS 512
#define MAX_PASS_KEYS 64

/* Tallies per (egress port, priority, dropped?): TrafficManager.count_passed applies
 * them as EgressPort.pass_through (or a tail drop in enqueue) would have, one packet
 * at a time. */
typedef struct { int64_t port; uint64_t prio, count, bytes; double last; int drop; } rt_pass;

typedef struct {
    rt_ctx *c;
    int64_t port;              /* the ingress port of the burst */
    const uint8_t *gate;
    PyObject *outs;            /* [(port, bytes)] for Device._dispatch */
    PyObject *sinkv[SINK_PORTS]; /* port -> its list of held frames (borrowed), or NULL */
    rt_pass passed[MAX_PASS_KEYS];
    int npassed;
    double origin;
    double quiet;              /* nothing leaves a queue before this time (µs) */
    ntm_state *S;              /* the native queues (rt_queues.c), or NULL */
    int enq_native;            /* the current frame called a native enqueue */
} rt_loop;

/* Python's (time.monotonic() - origin) * 1e6, computed the way CPython computes
 * time.monotonic(), so the loop and EgressScheduler.now_us read the same clock. */
static double loop_now_us(double origin) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    double secs = (ns % 1000000000LL == 0) ? (double)(ns / 1000000000LL) : (double)ns / 1e9;
    return (secs - origin) * 1e6;
}

/* QueuedSwitch._run's switch.clock.freeze(int(now_us)): the C pipeline and the Python
 * callbacks it makes (meters, logs) read the same frozen time. */
static int loop_freeze(rt_ctx *c, double now) {
    uint64_t us = now > 0 ? (uint64_t)now : 0;
    c->fixed_us = us;
    c->fixed_valid = 1;
    PyObject *v = PyLong_FromUnsignedLongLong(us);
    if (!v) return -1;
    int r = PyObject_SetAttr(c->clock, STR_FIXED, v);
    Py_DECREF(v);
    return r;
}

/* The tally of an egress instance that may pass through (or is certain to be dropped
 * at enqueue), or NULL when Python must queue it (or the tally table is full). */
static rt_pass *loop_gate(rt_loop *L, const rt_work *w, double now) {
    uint64_t prio = w->sm.f_priority;
    if (w->port < 0 || w->port >= GATE_PORTS || prio >= 8) return NULL;
    int drop;
    if ((int64_t)w->sm.f_ingress_port == L->port && ((L->gate[w->port] >> prio) & 1))
        drop = 0;
    else if (((L->gate[GATE_PORTS + w->port] >> prio) & 1) && now < L->quiet)
        drop = 1;
    else
        return NULL;
    for (int i = 0; i < L->npassed; i++)
        if (L->passed[i].port == w->port && L->passed[i].prio == prio
            && L->passed[i].drop == drop)
            return &L->passed[i];
    if (L->npassed == MAX_PASS_KEYS) return NULL;
    rt_pass *p = &L->passed[L->npassed++];
    p->port = w->port;
    p->prio = prio;
    p->count = p->bytes = 0;
    p->last = 0.0;
    p->drop = drop;
    return p;
}

/* One frame's work items, QueuedSwitch._run with pass_through and ``passes`` counted
 * the same way; RUN_HANDBACK leaves the first item Python must run at q->head. */
static int loop_frame(rt_loop *L, rt_queue *q, double now, int *passes) {
    rt_ctx *c = L->c;
    while (q->head < q->n && *passes < MAX_PASSES) {
        rt_work *w = q->items[q->head];
        ntm_port *P;
        int st;
        if (w->stage == 0) {
            ++*passes;
            q->items[q->head++] = NULL;
            c->busy = 1;
            st = do_ingress(c, w, q);
            c->busy = 0;
            work_free(w);
        } else if ((P = ntm_native(L->S, w->port)) != NULL) {
            /* a native port: pass through, or enqueue (or drop) here */
            ++*passes;
            q->items[q->head++] = NULL;
            if (!ntm_pass(L->S, P, w, now)) {
                L->enq_native = 1;
                int r = ntm_enqueue(L->S, P, w->port, w, now);
                if (r) work_free(w);
                if (r < 0) return RUN_ERROR;
                continue;
            }
            rt_qinfo qi = {1, ((uint64_t)now) & 0xFFFFFFFFu, 0, 0, 0};
            c->busy = 1;
            st = do_egress(c, w, q, L->outs, &qi);
            c->busy = 0;
            work_free(w);
        } else {
            rt_pass *p = loop_gate(L, w, now);
            if (!p) return RUN_HANDBACK;
            ++*passes;
            q->items[q->head++] = NULL;
            p->count++;
            p->bytes += w->length;
            p->last = now;
            if (p->drop) {       /* tail drop: no egress */
                work_free(w);
                continue;
            }
            /* the qinfo of a pass-through Dequeued: enqueued now, depths 0, no wait */
            rt_qinfo qi = {1, ((uint64_t)now) & 0xFFFFFFFFu, 0, 0, 0};
            c->busy = 1;
            st = do_egress(c, w, q, L->outs, &qi);
            c->busy = 0;
            work_free(w);
        }
        if (st == ST_ABORT) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
            return RUN_ERROR;
        }
    }
    return RUN_DONE;
}

static PyObject *loop_taken_error(void) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    if (v && tb) PyException_SetTraceback(v, tb);
    Py_XDECREF(t);
    Py_XDECREF(tb);
    if (!v) { Py_INCREF(Py_None); v = Py_None; }
    return v;
}

static PyObject *loop_passed(const rt_loop *L) {
    PyObject *lst = PyList_New(L->npassed);
    if (!lst) return NULL;
    for (int i = 0; i < L->npassed; i++) {
        const rt_pass *p = &L->passed[i];
        PyObject *t = Py_BuildValue("(LKKKdi)", (long long)p->port, (unsigned long long)p->prio,
                                    (unsigned long long)p->count, (unsigned long long)p->bytes,
                                    p->last, p->drop);
        if (!t) { Py_DECREF(lst); return NULL; }
        PyList_SET_ITEM(lst, i, t);
    }
    return lst;
}

/* forward(ctx, port, frames, start, gate, sinks, origin, quiet, queues|None)
 *   -> (next, kind, now, rest, passes, outs, passed, emitted)
 * Frames [start, next) are done. kind LOOP_DONE: next == len(frames). LOOP_FRAME: frame
 * ``next`` is Python's, whole. LOOP_WORK: frame ``next`` ran ``passes`` passes at time
 * ``now``; ``rest`` is its remaining work (items as ingress()/egress() return them).
 * LOOP_ERROR: frame ``next`` raised ``rest``. LOOP_DRAIN: frame ``next`` is done, and
 * ``rest`` is the hand-back of the drain after it (rt_queues.c ntm_drain). ``passed``: [(port, priority, packets,
 * bytes, last now, dropped?)]; ``emitted``: frames out (held or in ``outs``). */
static PyObject *m_forward(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 9 || !PyList_Check(args[2]) || !PyByteArray_Check(args[4])
        || PyByteArray_GET_SIZE(args[4]) != 2 * GATE_PORTS || !PyDict_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError,
                        "forward(ctx, port, frames: list, start, gate: bytearray(1024), "
                        "sinks: dict, origin, quiet, queues|None)");
        return NULL;
    }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    if (c->busy) { PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered"); return NULL; }
    PyObject *frames = args[2];
    long long port = PyLong_AsLongLong(args[1]);
    Py_ssize_t i = PyLong_AsSsize_t(args[3]);
    double origin = PyFloat_AsDouble(args[6]);
    double quiet = PyFloat_AsDouble(args[7]);
    if (PyErr_Occurred()) return NULL;
    ntm_state *S = NULL;
    if (args[8] != Py_None && !(S = ntm_get(args[8]))) return NULL;
    for (Py_ssize_t k = i < 0 ? 0 : i; k < PyList_GET_SIZE(frames); k++) {
        PyObject *f = PyList_GET_ITEM(frames, k);
        if (!PyBytes_Check(f) && !PyByteArray_Check(f)) {
            PyErr_SetString(PyExc_TypeError, "forward: frames must be bytes");
            return NULL;
        }
    }
    rt_loop *L = (rt_loop *)calloc(1, sizeof(rt_loop));
    if (!L) return PyErr_NoMemory();
    L->c = c;
    L->port = port;
    L->origin = origin;
    L->quiet = quiet;
    L->S = S;
    L->gate = (const uint8_t *)PyByteArray_AS_STRING(args[4]);  /* not resized meanwhile */
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(args[5], &pos, &key, &value)) {
        long p = PyLong_Check(key) ? PyLong_AsLong(key) : -1;
        if (p == -1 && PyErr_Occurred()) PyErr_Clear();
        if (p < 0 || p >= SINK_PORTS || !PyList_Check(value)) {
            free(L);
            PyErr_SetString(PyExc_TypeError, "forward: sinks maps ports 0..511 to lists");
            return NULL;
        }
        L->sinkv[p] = value;
    }
    L->outs = PyList_New(0);
    if (!L->outs) { free(L); return NULL; }
    PyObject *rest = NULL;
    int kind = LOOP_DONE, passes = 0;
    double now = 0.0;
    long long sunk0 = c->sunk;
    c->sinkv = L->sinkv;
    for (i = i < 0 ? 0 : i; i < PyList_GET_SIZE(frames); i++) {
        const uint8_t *d;
        Py_ssize_t len;
        get_bytes(PyList_GET_ITEM(frames, i), &d, &len);    /* checked above */
        if (len >= 14 && d[12] == 0x88 && d[13] == 0x08) { kind = LOOP_FRAME; break; }
        now = loop_now_us(L->origin);
        passes = 0;
        if (loop_freeze(c, now)) { kind = LOOP_ERROR; rest = loop_taken_error(); break; }
        rt_queue q = {NULL, 0, 0, 0};
        if (q_push(&q, ingress_work(d, (size_t)len, L->port, I_NORMAL, NULL, 0, 0))) {
            kind = LOOP_ERROR;
            rest = loop_taken_error();
            break;
        }
        int r = loop_frame(L, &q, now, &passes);
        if (r == RUN_HANDBACK) {
            rest = items_out(&q);
            q_free(&q);
            if (!rest) { kind = LOOP_ERROR; rest = loop_taken_error(); break; }
            kind = LOOP_WORK;
            break;
        }
        q_free(&q);
        if (r == RUN_ERROR) { kind = LOOP_ERROR; rest = loop_taken_error(); break; }
        if (L->enq_native) {
            /* EgressScheduler._after_frame: what may leave now does */
            L->enq_native = 0;
            PyObject *hb = NULL;
            int d = S->held_total ? ntm_drain(c, S, now, L->outs, &hb) : 0;
            if (d < 0) { kind = LOOP_ERROR; rest = loop_taken_error(); break; }
            if (d > 0) { kind = LOOP_DRAIN; rest = hb; break; }
        }
    }
    c->sinkv = NULL;
    long long emitted = (c->sunk - sunk0) + PyList_GET_SIZE(L->outs);
    PyObject *passed = loop_passed(L);
    PyObject *res = NULL;
    if (passed) {
        if (!rest) { Py_INCREF(Py_None); rest = Py_None; }
        res = Py_BuildValue("(nidNiONL)", i, kind, now, rest, passes, L->outs, passed,
                            emitted);
        rest = NULL;
    }
    Py_XDECREF(rest);
    Py_DECREF(L->outs);
    free(L);
    return res;
}
