/* softswitch fast path: the pipeline driver and the module's Python methods.
 *
 * Included after the generated program, which defines P4_H/P4_M/P4_SM, p4_parser,
 * p4_verify, p4_ingress, p4_egress, p4_compute, p4_deparser, p4_fl_apply, p4_ctx_init,
 * P4_MODNAME and P4_REJECT. The driver is softswitch.v1model.switch.Switch's inject /
 * _ingress / _egress step by step (BMv2 simple_switch order): the interpreter is the
 * oracle and tests/test_fastpath_differential.py holds both to the same bytes.
 */

#define DROP_PORT 511
enum { I_NORMAL = 0, I_INGRESS_CLONE = 1, I_EGRESS_CLONE = 2, I_RECIRC = 4, I_REPLICATION = 5,
       I_RESUBMIT = 6 };
#define MAX_PASSES 256
#define MASK48 ((((uint64_t)1) << 48) - 1)

typedef struct rt_work {
    int stage;                 /* 0 ingress, 1 egress */
    int64_t port;
    uint64_t instance_type;
    uint8_t *data;             /* ingress: the packet (owned, PAD zero bytes after) */
    size_t len, data_cap;
    int has_pres;
    int64_t pres_fl;
    uint8_t *payload;          /* egress: owned */
    size_t plen, payload_cap;
    uint64_t length;
    int has_recirc;
    int64_t recirc_fl;
    int has_trunc;
    uint64_t trunc;
    struct rt_work *next_free;
    /* work_new zeroes everything above; what follows is set where it is read */
    P4_M pres_meta;            /* preserved metadata: field list pres_fl of it */
    P4_SM sm;                  /* ingress: zero; egress: */
    P4_H hdr;
    P4_M meta;
} rt_work;

typedef struct { rt_work **items; size_t head, n, cap; } rt_queue;

/* Freed work items (with their buffers) are kept for the next packets: a packet takes
 * two or more of them, and allocating and clearing them is a noticeable part of the
 * native loop's time. Only touched with the GIL held. */
#define WORK_KEEP 64
#define BUF_KEEP 16384
static rt_work *FREE_WORK;
static unsigned NFREE_WORK;

static void work_free(rt_work *w) {
    if (!w) return;
    if (NFREE_WORK < WORK_KEEP) {
        if (w->data_cap > BUF_KEEP) { free(w->data); w->data = NULL; w->data_cap = 0; }
        if (w->payload_cap > BUF_KEEP) {
            free(w->payload);
            w->payload = NULL;
            w->payload_cap = 0;
        }
        w->next_free = FREE_WORK;
        FREE_WORK = w;
        NFREE_WORK++;
        return;
    }
    free(w->data);
    free(w->payload);
    free(w);
}

/* *buf (of capacity *cap) := d[0..n) followed by PAD zero bytes */
static int buf_set(uint8_t **buf, size_t *cap, const uint8_t *d, size_t n) {
    if (n + PAD > *cap) {
        uint8_t *p = (uint8_t *)malloc(n + PAD);
        if (!p) return -1;
        free(*buf);
        *buf = p;
        *cap = n + PAD;
    }
    if (n) memcpy(*buf, d, n);
    memset(*buf + n, 0, PAD);
    return 0;
}

static rt_work *work_new(int stage, int64_t port) {
    rt_work *w = FREE_WORK;
    if (w) {
        FREE_WORK = w->next_free;
        NFREE_WORK--;
        uint8_t *data = w->data, *payload = w->payload;
        size_t dcap = w->data_cap, pcap = w->payload_cap;
        memset(w, 0, offsetof(rt_work, pres_meta));
        w->data = data;
        w->data_cap = dcap;
        w->payload = payload;
        w->payload_cap = pcap;
    } else {
        w = (rt_work *)calloc(1, sizeof(rt_work));
        if (!w) return NULL;
    }
    w->stage = stage;
    w->port = port;
    return w;
}

static int q_push(rt_queue *q, rt_work *w) {
    if (!w) { PyErr_NoMemory(); return -1; }
    if (q->n == q->cap) {
        size_t nc = q->cap ? q->cap * 2 : 8;
        rt_work **ni = (rt_work **)realloc(q->items, nc * sizeof(rt_work *));
        if (!ni) { work_free(w); PyErr_NoMemory(); return -1; }
        q->items = ni;
        q->cap = nc;
    }
    q->items[q->n++] = w;
    return 0;
}

static void q_free(rt_queue *q) {
    for (size_t i = q->head; i < q->n; i++) work_free(q->items[i]);
    free(q->items);
    q->items = NULL;
    q->head = q->n = q->cap = 0;
}

static rt_work *ingress_work(const uint8_t *data, size_t len, int64_t port, uint64_t itype,
                             const P4_M *meta, int has_fl, int64_t fl) {
    rt_work *w = work_new(0, port);
    if (!w) return NULL;
    if (buf_set(&w->data, &w->data_cap, data, len)) { work_free(w); return NULL; }
    memset(&w->sm, 0, sizeof w->sm);
    w->len = len;
    w->instance_type = itype;
    if (has_fl) {
        w->has_pres = 1;
        w->pres_fl = fl;
        w->pres_meta = *meta;
    }
    return w;
}

static rt_work *egress_work(int64_t port, const P4_H *h, const P4_M *m, const P4_SM *sm,
                            const uint8_t *payload, size_t plen, uint64_t length) {
    rt_work *w = work_new(1, port);
    if (!w) return NULL;
    w->hdr = *h;
    w->meta = *m;
    w->sm = *sm;
    if (buf_set(&w->payload, &w->payload_cap, payload, plen)) { work_free(w); return NULL; }
    w->plen = plen;
    w->length = length;
    return w;
}

static int run_parse(rt_ctx *c, const uint8_t *data, size_t len, int64_t port, P4_H *h,
                     P4_M *m, P4_SM *sm, uint64_t *consumed) {
    rt_reader r = {data, 0, (uint64_t)len * 8};
    sm->f_ingress_port = (uint64_t)port;
    c->perr = 0;
    int st = p4_parser(c, &r, h, m, sm);
    if (st == ST_PERR) {
        if (c->perr != P4_REJECT) sm->f_parser_error = (uint32_t)c->perr;
        st = ST_OK;
    } else if (st == ST_EXIT) {
        st = ST_OK;
    }
    *consumed = r.pos >> 3;
    if (*consumed > len) *consumed = len;
    return st;
}

static rt_mirror *find_mirror(rt_ctx *c, uint64_t session) {
    for (uint32_t i = 0; i < c->nmirror; i++)
        if (c->mirror[i].session == session) return &c->mirror[i];
    return NULL;
}

static int multicast(rt_ctx *c, uint64_t mgrp, const P4_H *h, const P4_M *m, const P4_SM *sm,
                     const uint8_t *payload, size_t plen, uint64_t length, rt_queue *q) {
    for (uint32_t g = 0; g < c->nmc; g++) {
        rt_mcgroup *grp = &c->mc[g];
        if (grp->mgrp != mgrp) continue;
        for (uint32_t i = 0; i < grp->n; i++) {
            P4_SM sm2 = *sm;
            sm2.f_egress_rid = grp->rid[i];
            if (q_push(q, egress_work((int64_t)grp->port[i], h, m, &sm2, payload, plen, length)))
                return ST_ABORT;
        }
        break;
    }
    return ST_OK;
}

static int to_session(rt_ctx *c, rt_mirror *s, const P4_H *h, const P4_M *m, const P4_SM *sm,
                      const uint8_t *payload, size_t plen, uint64_t length, rt_queue *q) {
    if (s->kind == 1) return multicast(c, s->target, h, m, sm, payload, plen, length, q);
    if (q_push(q, egress_work((int64_t)s->target, h, m, sm, payload, plen, length)))
        return ST_ABORT;
    return ST_OK;
}

/* Switch._ingress */
static int do_ingress(rt_ctx *c, rt_work *w, rt_queue *q) {
    P4_H hdr;
    P4_M meta;
    P4_SM sm;
    memset(&hdr, 0, sizeof hdr);
    memset(&meta, 0, sizeof meta);
    memset(&sm, 0, sizeof sm);
    sm.f_instance_type = w->instance_type;
    sm.f_packet_length = (uint64_t)w->len;
    sm.f_ingress_global_timestamp = rt_now(c) & MASK48;
    if (w->has_pres) p4_fl_apply(w->pres_fl, &meta, &w->pres_meta);
    memset(&c->pkt, 0, sizeof c->pkt);
    c->pkt.length = w->len;
    uint64_t consumed;
    int st = run_parse(c, w->data, w->len, w->port, &hdr, &meta, &sm, &consumed);
    if (st) return st;
    const uint8_t *payload = w->data + consumed;
    size_t plen = w->len - consumed;
    c->payload = payload;
    c->payload_len = plen;
    st = p4_verify(c, &hdr, &meta);
    if (st && st != ST_EXIT) return st;
    sm.f_checksum_error = c->pkt.checksum_error;
    st = p4_ingress(c, &hdr, &meta, &sm);
    if (st && st != ST_EXIT) return st;
    if (c->pkt.clone_type) {
        rt_mirror *s = find_mirror(c, c->pkt.clone_session);
        if (s) {
            P4_H h2;
            P4_M m2;
            P4_SM sm2;
            memset(&h2, 0, sizeof h2);
            memset(&m2, 0, sizeof m2);
            memset(&sm2, 0, sizeof sm2);
            uint64_t cons2;
            st = run_parse(c, w->data, w->len, w->port, &h2, &m2, &sm2, &cons2);
            if (st) return st;
            memset(&m2, 0, sizeof m2);
            memset(&sm2, 0, sizeof sm2);
            if (c->pkt.has_clone_fl) p4_fl_apply(c->pkt.clone_fl, &m2, &meta);
            sm2.f_instance_type = I_INGRESS_CLONE;
            sm2.f_priority = s->cos;
            st = to_session(c, s, &h2, &m2, &sm2, w->data + cons2, w->len - cons2, w->len, q);
            if (st) return st;
        }
    }
    if (c->pkt.has_resubmit) {
        if (q_push(q, ingress_work(w->data, w->len, 0, I_RESUBMIT, &meta, 1,
                                   c->pkt.resubmit_fl)))
            return ST_ABORT;
        return ST_OK;
    }
    uint64_t length = w->len;
    if (sm.f_mcast_grp) {
        sm.f_instance_type = I_REPLICATION;
        return multicast(c, sm.f_mcast_grp, &hdr, &meta, &sm, payload, plen, length, q);
    }
    if (sm.f_egress_spec == DROP_PORT) return ST_OK;
    sm.f_instance_type = I_NORMAL;
    rt_work *e = egress_work((int64_t)sm.f_egress_spec, &hdr, &meta, &sm, payload, plen, length);
    if (e) {
        e->has_recirc = c->pkt.has_recirc;
        e->recirc_fl = c->pkt.recirc_fl;
        e->has_trunc = c->pkt.has_trunc;
        e->trunc = c->pkt.trunc;
    }
    if (q_push(q, e)) return ST_ABORT;
    return ST_OK;
}

typedef struct { int valid; uint64_t enq_ts, enq_qdepth, deq_qdepth, deq_timedelta; } rt_qinfo;

/* Switch._egress: appends (port, bytes) to out */
static int do_egress(rt_ctx *c, rt_work *w, rt_queue *q, PyObject *out, const rt_qinfo *qi) {
    P4_H *hdr = &w->hdr;
    P4_M *meta = &w->meta;
    P4_SM *sm = &w->sm;
    uint64_t now = rt_now(c);
    sm->f_egress_port = (uint64_t)w->port;
    sm->f_egress_spec = 0;
    sm->f_packet_length = w->length;
    sm->f_egress_global_timestamp = now & MASK48;
    if (!qi || !qi->valid) {
        sm->f_enq_timestamp = now & 0xFFFFFFFFu;
        sm->f_deq_timedelta = 0;
    } else {
        sm->f_enq_timestamp = qi->enq_ts;
        sm->f_enq_qdepth = qi->enq_qdepth;
        sm->f_deq_qdepth = qi->deq_qdepth;
        sm->f_deq_timedelta = qi->deq_timedelta;
    }
    memset(&c->pkt, 0, sizeof c->pkt);
    c->pkt.length = w->length;
    c->pkt.has_recirc = w->has_recirc;
    c->pkt.recirc_fl = w->recirc_fl;
    c->pkt.has_trunc = w->has_trunc;
    c->pkt.trunc = w->trunc;
    c->payload = w->payload;
    c->payload_len = w->plen;
    int st = p4_egress(c, hdr, meta, sm);
    if (st && st != ST_EXIT) return st;
    if (c->pkt.clone_type) {
        rt_mirror *s = find_mirror(c, c->pkt.clone_session);
        if (s) {
            P4_M m2;
            P4_SM sm2;
            memset(&m2, 0, sizeof m2);
            memset(&sm2, 0, sizeof sm2);
            if (c->pkt.has_clone_fl) p4_fl_apply(c->pkt.clone_fl, &m2, meta);
            sm2.f_instance_type = I_EGRESS_CLONE;
            sm2.f_priority = s->cos;
            st = to_session(c, s, hdr, &m2, &sm2, w->payload, w->plen, w->length, q);
            if (st) return st;
        }
    }
    if (sm->f_egress_spec == DROP_PORT) return ST_OK;
    st = p4_compute(c, hdr, meta);
    if (st && st != ST_EXIT) return st;
    /* the context's writer: its buffer is all zero between packets */
    rt_writer *wr = &c->wr;
    wr->nbits = 0;
    if (wr_ensure(wr, 0)) { PyErr_NoMemory(); return ST_ABORT; }
    st = p4_deparser(c, wr, hdr);
    size_t hlen = (size_t)((wr->nbits + 7) >> 3);
    if (st && st != ST_EXIT) { wr_clear(wr, wr->cap); return st; }
    size_t total = hlen + w->plen;
    if (wr_ensure(wr, (uint64_t)w->plen * 8 + 8)) {
        wr_clear(wr, wr->cap);
        PyErr_NoMemory();
        return ST_ABORT;
    }
    if (w->plen) memcpy(wr->buf + hlen, w->payload, w->plen);
    if (c->pkt.has_recirc) {
        rt_work *r = ingress_work(wr->buf, total, 0, I_RECIRC, meta, 1, c->pkt.recirc_fl);
        wr_clear(wr, hlen + w->plen);
        if (q_push(q, r)) return ST_ABORT;
        return ST_OK;
    }
    size_t used = total;
    if (c->pkt.has_trunc && c->pkt.trunc < total) total = (size_t)c->pkt.trunc;
    int bad;
    PyObject *sink = (c->sinkv && w->port >= 0 && w->port < SINK_PORTS) ? c->sinkv[w->port] : NULL;
    if (sink) {
        /* the native loop: straight into the port's list of frames held for sending */
        PyObject *b = PyBytes_FromStringAndSize((const char *)wr->buf, (Py_ssize_t)total);
        wr_clear(wr, used);
        if (!b) return ST_ABORT;
        bad = PyList_Append(sink, b);
        Py_DECREF(b);
        c->sunk += !bad;
    } else {
        PyObject *item = Py_BuildValue("(Ly#)", (long long)w->port, (const char *)wr->buf,
                                       (Py_ssize_t)total);
        wr_clear(wr, used);
        if (!item) return ST_ABORT;
        bad = PyList_Append(out, item);
        Py_DECREF(item);
    }
    return bad ? ST_ABORT : ST_OK;
}

/* ------------------------------------------------------------------ module methods */
static const char *CTX_NAME = "softswitch.fastpath.ctx";
static const char *WORK_NAME = "softswitch.fastpath.work";

static void ctx_destroy(PyObject *cap) {
    rt_ctx *c = (rt_ctx *)PyCapsule_GetPointer(cap, CTX_NAME);
    if (!c) return;
    for (uint32_t i = 0; i < c->ntables; i++) table_free(&c->tables[i]);
    free(c->tables);
    for (uint32_t i = 0; i < c->ncounters; i++) { free(c->counters[i].pk); free(c->counters[i].by); }
    free(c->counters);
    for (uint32_t i = 0; i < c->nregisters; i++) free(c->registers[i].cells);
    free(c->registers);
    free(c->mirror);
    for (uint32_t i = 0; i < c->nmc; i++) { free(c->mc[i].rid); free(c->mc[i].port); }
    free(c->mc);
    free(c->scratch);
    free(c->wr.buf);
    Py_XDECREF(c->objs);
    Py_XDECREF(c->clock);
    free(c);
}

static rt_ctx *get_ctx(PyObject *o) {
    return (rt_ctx *)PyCapsule_GetPointer(o, CTX_NAME);
}

static void work_destroy(PyObject *cap) {
    work_free((rt_work *)PyCapsule_GetPointer(cap, WORK_NAME));
}

/* new(objs: tuple, clock, origin: float) */
static PyObject *m_new(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3 || !PyTuple_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "new(objs, clock, origin)");
        return NULL;
    }
    hashes_init();
    if (!STR_FIXED) STR_FIXED = PyUnicode_InternFromString("_fixed");
    rt_ctx *c = (rt_ctx *)calloc(1, sizeof(rt_ctx));
    if (!c) return PyErr_NoMemory();
    Py_INCREF(args[0]);
    c->objs = args[0];
    Py_INCREF(args[1]);
    c->clock = args[1];
    c->origin = PyFloat_AsDouble(args[2]);
    c->priority_queues = -1;
    PyObject *cap = PyCapsule_New(c, CTX_NAME, ctx_destroy);
    if (!cap) {
        Py_DECREF(c->objs);
        Py_DECREF(c->clock);
        free(c);
        return NULL;
    }
    if (p4_ctx_init(c)) {
        Py_DECREF(cap);
        return PyErr_NoMemory();
    }
    return cap;
}

static int get_bytes(PyObject *o, const uint8_t **d, Py_ssize_t *n) {
    if (PyBytes_Check(o)) {
        *d = (const uint8_t *)PyBytes_AS_STRING(o);
        *n = PyBytes_GET_SIZE(o);
        return 0;
    }
    if (PyByteArray_Check(o)) {
        *d = (const uint8_t *)PyByteArray_AS_STRING(o);
        *n = PyByteArray_GET_SIZE(o);
        return 0;
    }
    PyErr_SetString(PyExc_TypeError, "bytes expected");
    return -1;
}

/* inject(ctx, port, data) -> [(port, bytes)]: Switch.inject */
static PyObject *m_inject(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "inject(ctx, port, data)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    long long port = PyLong_AsLongLong(args[1]);
    if (port == -1 && PyErr_Occurred()) return NULL;
    const uint8_t *d;
    Py_ssize_t len;
    if (get_bytes(args[2], &d, &len)) return NULL;
    if (c->busy) { PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered"); return NULL; }
    clock_snapshot(c);
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    rt_queue q = {NULL, 0, 0, 0};
    if (q_push(&q, ingress_work(d, (size_t)len, port, I_NORMAL, NULL, 0, 0))) {
        Py_DECREF(out);
        return NULL;
    }
    c->busy = 1;
    int passes = 0;
    while (q.head < q.n) {
        if (++passes > MAX_PASSES) break;
        rt_work *w = q.items[q.head];
        q.items[q.head++] = NULL;
        int st;
        if (w->stage == 0) {
            st = do_ingress(c, w, &q);
        } else if (c->priority_queues >= 0 && (int64_t)w->sm.f_priority >= c->priority_queues) {
            c->priority_drops++;
            st = ST_OK;
        } else {
            st = do_egress(c, w, &q, out, NULL);
        }
        work_free(w);
        if (st == ST_ABORT) {
            c->busy = 0;
            q_free(&q);
            Py_DECREF(out);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
            return NULL;
        }
    }
    c->busy = 0;
    q_free(&q);
    return out;
}

/* Work items handed to Python (QueuedSwitch): (stage, port, length, priority,
 * ingress_port, capsule) */
static PyObject *items_out(rt_queue *q) {
    PyObject *lst = PyList_New(0);
    if (!lst) return NULL;
    for (size_t i = q->head; i < q->n; i++) {
        rt_work *w = q->items[i];
        PyObject *cap = PyCapsule_New(w, WORK_NAME, work_destroy);
        if (!cap) { Py_DECREF(lst); return NULL; }
        q->items[i] = NULL;
        PyObject *t = Py_BuildValue("(iLKKKN)", w->stage, (long long)w->port,
                                    (unsigned long long)(w->stage ? w->length : w->len),
                                    (unsigned long long)w->sm.f_priority,
                                    (unsigned long long)w->sm.f_ingress_port, cap);
        if (!t || PyList_Append(lst, t)) { Py_XDECREF(t); Py_DECREF(lst); return NULL; }
        Py_DECREF(t);
    }
    q->head = q->n;
    return lst;
}

static rt_work *take_work(PyObject *cap) {
    rt_work *w = (rt_work *)PyCapsule_GetPointer(cap, WORK_NAME);
    if (!w) return NULL;
    /* the capsule gives up ownership: a work item runs once */
    if (PyCapsule_SetDestructor(cap, NULL)) return NULL;
    if (PyCapsule_SetName(cap, "softswitch.fastpath.used")) return NULL;
    return w;
}

/* ingress(ctx, port, data, item|None) -> [items] */
static PyObject *m_ingress(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 4) { PyErr_SetString(PyExc_TypeError, "ingress(ctx, port, data, item)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_work *w;
    if (args[3] != Py_None) {
        w = take_work(args[3]);
        if (!w) return NULL;
    } else {
        long long port = PyLong_AsLongLong(args[1]);
        if (port == -1 && PyErr_Occurred()) return NULL;
        const uint8_t *d;
        Py_ssize_t len;
        if (get_bytes(args[2], &d, &len)) return NULL;
        w = ingress_work(d, (size_t)len, port, I_NORMAL, NULL, 0, 0);
        if (!w) return PyErr_NoMemory();
    }
    if (c->busy) { work_free(w); PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered"); return NULL; }
    clock_snapshot(c);
    rt_queue q = {NULL, 0, 0, 0};
    c->busy = 1;
    int st = do_ingress(c, w, &q);
    c->busy = 0;
    work_free(w);
    if (st == ST_ABORT) {
        q_free(&q);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
        return NULL;
    }
    PyObject *r = items_out(&q);
    q_free(&q);
    return r;
}

/* egress(ctx, item, qinfo|None) -> ([(port, bytes)], [items]) */
static PyObject *m_egress(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "egress(ctx, item, qinfo)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_qinfo qi = {0, 0, 0, 0, 0};
    if (args[2] != Py_None) {
        unsigned long long a, b, cc, d;
        if (!PyArg_ParseTuple(args[2], "KKKK", &a, &b, &cc, &d)) return NULL;
        qi.valid = 1;
        qi.enq_ts = a; qi.enq_qdepth = b; qi.deq_qdepth = cc; qi.deq_timedelta = d;
    }
    rt_work *w = take_work(args[1]);
    if (!w) return NULL;
    if (c->busy) { work_free(w); PyErr_SetString(PyExc_RuntimeError, "fast path: re-entered"); return NULL; }
    clock_snapshot(c);
    PyObject *out = PyList_New(0);
    if (!out) { work_free(w); return NULL; }
    rt_queue q = {NULL, 0, 0, 0};
    c->busy = 1;
    int st = do_egress(c, w, &q, out, &qi);
    c->busy = 0;
    work_free(w);
    if (st == ST_ABORT) {
        q_free(&q);
        Py_DECREF(out);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "fast path aborted");
        return NULL;
    }
    PyObject *items = items_out(&q);
    q_free(&q);
    if (!items) { Py_DECREF(out); return NULL; }
    return Py_BuildValue("(NN)", out, items);
}

/* Tables must not change under a packet: a Python callback (digest, meter, log) could
 * let another thread in, and the packet still uses the entry it matched. */
static rt_table *get_table_w(rt_ctx *c, PyObject *o);

static rt_table *get_table(rt_ctx *c, PyObject *o) {
    long i = PyLong_AsLong(o);
    if (i < 0 || (uint32_t)i >= c->ntables) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such table");
        return NULL;
    }
    return &c->tables[i];
}

static rt_table *get_table_w(rt_ctx *c, PyObject *o) {
    if (c->busy) {
        PyErr_SetString(PyExc_RuntimeError,
                        "fast path: table write while a packet is in the pipeline");
        return NULL;
    }
    return get_table(c, o);
}

static int u128_list(PyObject *seq, uint32_t want, u128 *out) {
    PyObject *f = PySequence_Fast(seq, "sequence expected");
    if (!f) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(f);
    if (want != (uint32_t)-1 && (uint32_t)n != want) {
        Py_DECREF(f);
        PyErr_SetString(PyExc_ValueError, "wrong number of values");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (py_to_u128(PySequence_Fast_GET_ITEM(f, i), &out[i])) { Py_DECREF(f); return -1; }
    Py_DECREF(f);
    return 0;
}

/* (action, args) -> member; args malloc'd */
static int member_from(PyObject *act, PyObject *args, int32_t *action, uint32_t *nargs, u128 **out) {
    long a = PyLong_AsLong(act);
    if (a == -1 && PyErr_Occurred()) return -1;
    Py_ssize_t n = PySequence_Size(args);
    if (n < 0) return -1;
    u128 *v = (u128 *)calloc(n ? (size_t)n : 1, sizeof(u128));
    if (!v) { PyErr_NoMemory(); return -1; }
    if (u128_list(args, (uint32_t)n, v)) { free(v); return -1; }
    *action = (int32_t)a;
    *nargs = (uint32_t)n;
    *out = v;
    return 0;
}

static int set_group(rt_entry *e, PyObject *group) {
    for (uint32_t i = 0; i < e->ngroup; i++) free(e->group[i].args);
    free(e->group);
    e->group = NULL;
    e->ngroup = 0;
    if (group == Py_None) return 0;
    Py_ssize_t n = PySequence_Size(group);
    if (n < 0) return -1;
    e->group = (rt_member *)calloc(n ? (size_t)n : 1, sizeof(rt_member));
    if (!e->group) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PySequence_GetItem(group, i);
        if (!m) return -1;
        PyObject *a = PySequence_GetItem(m, 0), *b = PySequence_GetItem(m, 1);
        int bad = (!a || !b) ? -1 : member_from(a, b, &e->group[i].action, &e->group[i].nargs,
                                                  &e->group[i].args);
        Py_XDECREF(a); Py_XDECREF(b); Py_DECREF(m);
        if (bad) return -1;
        e->ngroup = (uint32_t)(i + 1);
    }
    return 0;
}

/* tbl_put(ctx, tid, handle, vals, masks, plen, priority, order, action, args, group,
 *         packets, bytes, last_hit, pyentry, has_meter): insert, or update the action
 * of an existing handle (counters kept) */
static PyObject *m_tbl_put(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 16) { PyErr_SetString(PyExc_TypeError, "tbl_put: 16 arguments"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t) return NULL;
    long long handle = PyLong_AsLongLong(args[2]);
    if (handle == -1 && PyErr_Occurred()) return NULL;
    rt_entry *e = table_get(t, handle);
    int32_t action;
    uint32_t nargs;
    u128 *av;
    if (member_from(args[8], args[9], &action, &nargs, &av)) return NULL;
    if (e) {
        free(e->args);
        e->action = action;
        e->nargs = nargs;
        e->args = av;
        if (set_group(e, args[10])) return NULL;
        Py_RETURN_NONE;
    }
    e = entry_new(t, handle, action, nargs, av);
    if (!e) return NULL;
    if (u128_list(args[3], t->nk, e->v) || u128_list(args[4], t->nk, e->m)) { entry_free(e); return NULL; }
    e->plen = (int)PyLong_AsLong(args[5]);
    e->priority = PyLong_AsLongLong(args[6]);
    e->order = PyLong_AsUnsignedLongLongMask(args[7]);
    e->packets = PyLong_AsUnsignedLongLongMask(args[11]);
    e->bytes = PyLong_AsUnsignedLongLongMask(args[12]);
    e->last_hit = PyLong_AsUnsignedLongLongMask(args[13]);
    if (PyErr_Occurred()) { entry_free(e); return NULL; }
    Py_INCREF(args[14]);
    e->py = args[14];
    e->has_meter = PyObject_IsTrue(args[15]);
    if (set_group(e, args[10])) { entry_free(e); return NULL; }
    int r = table_insert(t, e);
    if (r) {
        entry_free(e);
        if (r == -2) PyErr_SetString(PyExc_ValueError, "prefix length out of range");
        else PyErr_NoMemory();
        return NULL;
    }
    Py_RETURN_NONE;
}

/* tbl_put_entries(ctx, tid, entries, actions, has_meter): tbl_put of interpreter Entry
 * objects (softswitch.v1model.tables.Entry) read directly, for a batch of P4Runtime
 * writes in one call (FastSwitch.synced_batch) instead of one tbl_put, and its argument
 * lists built in Python, per entry. ``actions`` maps id(ActionDef) to the action's
 * index. Entries with an action-selector group are the caller's (tbl_put). */
static PyObject *S_HANDLE, *S_ACTION, *S_ARGS, *S_PRIORITY, *S_ORDER, *S_MATCH, *S_PACKETS,
    *S_BYTES, *S_LAST_HIT;

static int entry_attrs_init(void) {
    if (S_HANDLE) return 0;
    S_HANDLE = PyUnicode_InternFromString("handle");
    S_ACTION = PyUnicode_InternFromString("action");
    S_ARGS = PyUnicode_InternFromString("args");
    S_PRIORITY = PyUnicode_InternFromString("priority");
    S_ORDER = PyUnicode_InternFromString("order");
    S_MATCH = PyUnicode_InternFromString("match");
    S_PACKETS = PyUnicode_InternFromString("packets");
    S_BYTES = PyUnicode_InternFromString("bytes");
    S_LAST_HIT = PyUnicode_InternFromString("last_hit");
    return (S_HANDLE && S_ACTION && S_ARGS && S_PRIORITY && S_ORDER && S_MATCH && S_PACKETS
            && S_BYTES && S_LAST_HIT) ? 0 : -1;
}

static long long attr_ll(PyObject *o, PyObject *name) {
    PyObject *v = PyObject_GetAttr(o, name);
    if (!v) return -1;
    long long r = (long long)PyLong_AsUnsignedLongLongMask(v);
    Py_DECREF(v);
    return r;
}

/* The C index of an ActionDef (``actions``: id(ActionDef) -> index), -1 for one the
 * program does not know; borrowed (the dict's, or the interned -1); NULL on error. */
static PyObject *action_index(PyObject *act, PyObject *actions) {
    static PyObject *unknown;
    if (!unknown && !(unknown = PyLong_FromLong(-1))) return NULL;
    PyObject *key = PyLong_FromVoidPtr(act);
    if (!key) return NULL;
    PyObject *idx = PyDict_GetItemWithError(actions, key);
    Py_DECREF(key);
    if (!idx && PyErr_Occurred()) return NULL;
    return idx ? idx : unknown;
}

/* The action index (``actions`` maps id(ActionDef) to it; -1 when absent) and the
 * argument values of an ActionDef and its control-plane arguments. */
static int action_of(PyObject *act, PyObject *args, PyObject *actions, int32_t *action,
                     uint32_t *nargs, u128 **av) {
    PyObject *index = action_index(act, actions);
    return index ? member_from(index, args, action, nargs, av) : -1;
}

/* The action index and argument values of an Entry. */
static int entry_action(PyObject *e, PyObject *actions, int32_t *action, uint32_t *nargs,
                        u128 **av) {
    PyObject *act = PyObject_GetAttr(e, S_ACTION);
    if (!act) return -1;
    PyObject *args = PyObject_GetAttr(e, S_ARGS);
    if (!args) { Py_DECREF(act); return -1; }
    int r = action_of(act, args, actions, action, nargs, av);
    Py_DECREF(act);
    Py_DECREF(args);
    return r;
}

/* An Entry's normalised match into the key arrays: (value, mask[, plen]) per key, or
 * ("r", low, high). */
static int match_into(PyObject *match, rt_table *t, rt_entry *out) {
    if (!PyTuple_Check(match) || PyTuple_GET_SIZE(match) != (Py_ssize_t)t->nk) {
        PyErr_SetString(PyExc_ValueError, "entry match does not fit the table");
        return -1;
    }
    out->plen = 0;
    for (uint32_t i = 0; i < t->nk; i++) {
        PyObject *m = PyTuple_GET_ITEM(match, i);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) < 2) {
            PyErr_SetString(PyExc_ValueError, "malformed entry match");
            return -1;
        }
        int range = PyUnicode_Check(PyTuple_GET_ITEM(m, 0));
        Py_ssize_t first = range ? 1 : 0;
        if (PyTuple_GET_SIZE(m) < first + 2
            || py_to_u128(PyTuple_GET_ITEM(m, first), &out->v[i])
            || py_to_u128(PyTuple_GET_ITEM(m, first + 1), &out->m[i])) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "malformed entry match");
            return -1;
        }
        if (!range && PyTuple_GET_SIZE(m) > 2)
            out->plen = (int)PyLong_AsLong(PyTuple_GET_ITEM(m, 2));
    }
    return PyErr_Occurred() ? -1 : 0;
}

static int entry_match(PyObject *e, rt_table *t, rt_entry *out) {
    PyObject *match = PyObject_GetAttr(e, S_MATCH);
    if (!match) return -1;
    int r = match_into(match, t, out);
    Py_DECREF(match);
    return r;
}

static PyObject *m_tbl_put_entries(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 5) {
        PyErr_SetString(PyExc_TypeError, "tbl_put_entries(ctx, tid, entries, actions, has_meter)");
        return NULL;
    }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t || entry_attrs_init()) return NULL;
    PyObject *entries = args[2], *actions = args[3];
    if (!PyList_Check(entries) || !PyDict_Check(actions)) {
        PyErr_SetString(PyExc_TypeError, "tbl_put_entries: a list of entries and a dict");
        return NULL;
    }
    int has_meter = PyObject_IsTrue(args[4]);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *pe = PyList_GET_ITEM(entries, i);
        long long handle = attr_ll(pe, S_HANDLE);
        if (PyErr_Occurred()) return NULL;
        int32_t action;
        uint32_t nargs;
        u128 *av;
        if (entry_action(pe, actions, &action, &nargs, &av)) return NULL;
        rt_entry *e = table_get(t, handle);
        if (e) {                          /* already there: a new action (counters kept) */
            free(e->args);
            e->action = action;
            e->nargs = nargs;
            e->args = av;
            if (set_group(e, Py_None)) return NULL;
            continue;
        }
        e = entry_new(t, handle, action, nargs, av);
        if (!e) return NULL;
        if (entry_match(pe, t, e)) { entry_free(e); return NULL; }
        e->priority = attr_ll(pe, S_PRIORITY);
        e->order = (uint64_t)attr_ll(pe, S_ORDER);
        e->packets = (uint64_t)attr_ll(pe, S_PACKETS);
        e->bytes = (uint64_t)attr_ll(pe, S_BYTES);
        e->last_hit = (uint64_t)attr_ll(pe, S_LAST_HIT);
        if (PyErr_Occurred()) { entry_free(e); return NULL; }
        Py_INCREF(pe);
        e->py = pe;
        e->has_meter = has_meter;
        int r = table_insert(t, e);
        if (r) {
            entry_free(e);
            if (r == -2) PyErr_SetString(PyExc_ValueError, "prefix length out of range");
            else PyErr_NoMemory();
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

/* tbl_put_rows(ctx, tid, rows, actions): tbl_put_entries of entries the interpreter
 * has not built (TableState's deferred rows: softswitch.core.tables.Row), each a tuple
 * (handle, match, ActionDef, args, priority, order, last_hit). Such an entry has no
 * Python Entry (e->py NULL), so no direct meter: TableState defers only tables without
 * one. An existing handle gets the new action (counters kept). */
static PyObject *m_tbl_put_rows(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 4) {
        PyErr_SetString(PyExc_TypeError, "tbl_put_rows(ctx, tid, rows, actions)");
        return NULL;
    }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t) return NULL;
    PyObject *rows = args[2], *actions = args[3];
    if (!PyList_Check(rows) || !PyDict_Check(actions)) {
        PyErr_SetString(PyExc_TypeError, "tbl_put_rows: a list of rows and a dict");
        return NULL;
    }
    /* a batch's rows mostly share their action: its index is looked up once per run */
    PyObject *last_act = NULL, *index = NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 7) {
            PyErr_SetString(PyExc_TypeError, "tbl_put_rows: a row is a 7-tuple");
            return NULL;
        }
        long long handle = PyLong_AsLongLong(PyTuple_GET_ITEM(row, 0));
        if (handle == -1 && PyErr_Occurred()) return NULL;
        int32_t action;
        uint32_t nargs;
        u128 *av;
        if (PyTuple_GET_ITEM(row, 2) != last_act) {
            last_act = PyTuple_GET_ITEM(row, 2);
            if (!(index = action_index(last_act, actions))) return NULL;
        }
        if (member_from(index, PyTuple_GET_ITEM(row, 3), &action, &nargs, &av))
            return NULL;
        rt_entry *e = table_get(t, handle);
        if (e) {                          /* already there: a new action (counters kept) */
            free(e->args);
            e->action = action;
            e->nargs = nargs;
            e->args = av;
            if (set_group(e, Py_None)) return NULL;
            continue;
        }
        e = entry_new(t, handle, action, nargs, av);
        if (!e) return NULL;
        if (match_into(PyTuple_GET_ITEM(row, 1), t, e)) { entry_free(e); return NULL; }
        e->priority = PyLong_AsLongLong(PyTuple_GET_ITEM(row, 4));
        e->order = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(row, 5));
        e->last_hit = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(row, 6));
        if (PyErr_Occurred()) { entry_free(e); return NULL; }
        int r = table_insert(t, e);
        if (r) {
            entry_free(e);
            if (r == -2) PyErr_SetString(PyExc_ValueError, "prefix length out of range");
            else PyErr_NoMemory();
            return NULL;
        }
    }
    Py_RETURN_NONE;
}

static int del_one(rt_table *t, PyObject *h) {
    long long handle = PyLong_AsLongLong(h);
    if (handle == -1 && PyErr_Occurred()) return -1;
    rt_entry *e = table_get(t, handle);
    if (e) {
        table_remove(t, e);
        entry_free(e);
    }
    return 0;
}

/* tbl_del(ctx, tid, handle or list of handles): remove entries (unknown handles are
 * skipped: an entry deleted before it reached C). A list is a batch's deferred
 * deletes (FastSwitch.checked_ops), in one call. */
static PyObject *m_tbl_del(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "tbl_del(ctx, tid, handle)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t) return NULL;
    if (PyList_Check(args[2])) {
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(args[2]); i++)
            if (del_one(t, PyList_GET_ITEM(args[2], i))) return NULL;
        Py_RETURN_NONE;
    }
    if (del_one(t, args[2])) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_tbl_clear(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) { PyErr_SetString(PyExc_TypeError, "tbl_clear(ctx, tid)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t) return NULL;
    table_clear(t);
    Py_RETURN_NONE;
}

static PyObject *m_tbl_default(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 4) { PyErr_SetString(PyExc_TypeError, "tbl_default(ctx, tid, action, args)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table_w(c, args[1]);
    if (!t) return NULL;
    int32_t action;
    uint32_t nargs;
    u128 *av;
    if (member_from(args[2], args[3], &action, &nargs, &av)) return NULL;
    free(t->def_args);
    t->def_action = action;
    t->def_nargs = nargs;
    t->def_args = av;
    Py_RETURN_NONE;
}

/* tbl_stats(ctx, tid, handle) -> (packets, bytes, last_hit) or None */
static PyObject *m_tbl_stats(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "tbl_stats(ctx, tid, handle)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table(c, args[1]);
    if (!t) return NULL;
    long long handle = PyLong_AsLongLong(args[2]);
    if (handle == -1 && PyErr_Occurred()) return NULL;
    rt_entry *e = table_get(t, handle);
    if (!e) Py_RETURN_NONE;
    return Py_BuildValue("(KKK)", (unsigned long long)e->packets, (unsigned long long)e->bytes,
                         (unsigned long long)e->last_hit);
}

/* idle_real_time(ctx): stamp table hits on the wall clock from now on; a last hit
 * later than the wall clock now (a packet's time on another origin) becomes now */
static PyObject *m_idle_real_time(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 1) { PyErr_SetString(PyExc_TypeError, "idle_real_time(ctx)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    c->idle_real_time = 1;
    uint64_t now = rt_wall_us(c);
    for (uint32_t i = 0; i < c->ntables; i++) {
        MAP_EACH(&c->tables[i].by_handle, v, {
            rt_entry *e = (rt_entry *)v;
            if (e->last_hit > now) e->last_hit = now;
        });
    }
    Py_RETURN_NONE;
}

static PyObject *m_tbl_set_stats(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 5) { PyErr_SetString(PyExc_TypeError, "tbl_set_stats(ctx, tid, handle, p, b)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table(c, args[1]);
    if (!t) return NULL;
    long long handle = PyLong_AsLongLong(args[2]);
    if (handle == -1 && PyErr_Occurred()) return NULL;
    rt_entry *e = table_get(t, handle);
    if (e) {
        e->packets = PyLong_AsUnsignedLongLongMask(args[3]);
        e->bytes = PyLong_AsUnsignedLongLongMask(args[4]);
        if (PyErr_Occurred()) return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *m_tbl_size(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) { PyErr_SetString(PyExc_TypeError, "tbl_size(ctx, tid)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table(c, args[1]);
    if (!t) return NULL;
    return PyLong_FromUnsignedLongLong(t->n);
}

/* lookup_bench(ctx, tid, keys: list of key tuples, rounds) -> ns per lookup, hits */
static PyObject *m_lookup_bench(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 4) { PyErr_SetString(PyExc_TypeError, "lookup_bench(ctx, tid, keys, rounds)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_table *t = get_table(c, args[1]);
    if (!t) return NULL;
    long rounds = PyLong_AsLong(args[3]);
    Py_ssize_t nkeys = PySequence_Size(args[2]);
    if (nkeys <= 0 || rounds <= 0) { PyErr_SetString(PyExc_ValueError, "keys and rounds"); return NULL; }
    uint32_t nk = t->nk ? t->nk : 1;
    u128 *keys = (u128 *)calloc((size_t)nkeys * nk, sizeof(u128));
    if (!keys) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < nkeys; i++) {
        PyObject *k = PySequence_GetItem(args[2], i);
        int bad = !k || u128_list(k, t->nk, &keys[(size_t)i * nk]);
        Py_XDECREF(k);
        if (bad) { free(keys); return NULL; }
    }
    struct timespec a, b;
    uint64_t hits = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (long r = 0; r < rounds; r++)
        for (Py_ssize_t i = 0; i < nkeys; i++)
            hits += table_lookup(t, &keys[(size_t)i * nk]) != NULL;
    clock_gettime(CLOCK_MONOTONIC, &b);
    free(keys);
    double ns = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec))
                / ((double)rounds * (double)nkeys);
    return Py_BuildValue("(dK)", ns, (unsigned long long)hits);
}

static rt_counter *get_counter(rt_ctx *c, PyObject *o) {
    long i = PyLong_AsLong(o);
    if (i < 0 || (uint32_t)i >= c->ncounters) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such counter");
        return NULL;
    }
    return &c->counters[i];
}

static PyObject *m_cnt_read(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "cnt_read(ctx, cid, index)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_counter *k = get_counter(c, args[1]);
    if (!k) return NULL;
    unsigned long long i = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred() || i >= k->size) {
        PyErr_Clear();
        PyErr_SetString(PyExc_IndexError, "counter index out of range");
        return NULL;
    }
    return Py_BuildValue("(KK)", (unsigned long long)k->pk[i], (unsigned long long)k->by[i]);
}

static PyObject *m_cnt_write(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 5) { PyErr_SetString(PyExc_TypeError, "cnt_write(ctx, cid, index, p, b)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_counter *k = get_counter(c, args[1]);
    if (!k) return NULL;
    unsigned long long i = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred() || i >= k->size) {
        PyErr_Clear();
        PyErr_SetString(PyExc_IndexError, "counter index out of range");
        return NULL;
    }
    k->pk[i] = PyLong_AsUnsignedLongLongMask(args[3]);
    k->by[i] = PyLong_AsUnsignedLongLongMask(args[4]);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *m_cnt_reset(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) { PyErr_SetString(PyExc_TypeError, "cnt_reset(ctx, cid)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_counter *k = get_counter(c, args[1]);
    if (!k) return NULL;
    memset(k->pk, 0, sizeof(uint64_t) * (k->size ? k->size : 1));
    memset(k->by, 0, sizeof(uint64_t) * (k->size ? k->size : 1));
    Py_RETURN_NONE;
}

static rt_register *get_register(rt_ctx *c, PyObject *o) {
    long i = PyLong_AsLong(o);
    if (i < 0 || (uint32_t)i >= c->nregisters) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_IndexError, "no such register");
        return NULL;
    }
    return &c->registers[i];
}

static inline u128 reg_mask(const rt_register *r) {
    return r->width >= 128 ? ~(u128)0 : (((u128)1 << r->width) - 1);
}

static PyObject *m_reg_read(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "reg_read(ctx, rid, index)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_register *r = get_register(c, args[1]);
    if (!r) return NULL;
    unsigned long long i = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred() || i >= r->size) {
        PyErr_Clear();
        PyErr_SetString(PyExc_IndexError, "register index out of range");
        return NULL;
    }
    u128 v = r->cells[i];
    if (r->sign) return i128_to_py(sext128(v, (unsigned)r->width));
    return u128_to_py(v);
}

static PyObject *m_reg_write(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 4) { PyErr_SetString(PyExc_TypeError, "reg_write(ctx, rid, index, value)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_register *r = get_register(c, args[1]);
    if (!r) return NULL;
    unsigned long long i = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred() || i >= r->size) {
        PyErr_Clear();
        PyErr_SetString(PyExc_IndexError, "register index out of range");
        return NULL;
    }
    u128 v;
    if (py_to_u128(args[3], &v)) return NULL;
    r->cells[i] = v & reg_mask(r);
    Py_RETURN_NONE;
}

static PyObject *m_reg_reset(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 2) { PyErr_SetString(PyExc_TypeError, "reg_reset(ctx, rid)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    rt_register *r = get_register(c, args[1]);
    if (!r) return NULL;
    memset(r->cells, 0, sizeof(u128) * (r->size ? r->size : 1));
    Py_RETURN_NONE;
}

/* set_repl(ctx, mirrors: [(session, kind, target, cos)], mc: [(mgrp, [(rid, port)])]) */
static PyObject *m_set_repl(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "set_repl(ctx, mirrors, groups)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    Py_ssize_t nm = PySequence_Size(args[1]), ng = PySequence_Size(args[2]);
    if (nm < 0 || ng < 0) return NULL;
    rt_mirror *mir = (rt_mirror *)calloc(nm ? (size_t)nm : 1, sizeof(rt_mirror));
    rt_mcgroup *mc = (rt_mcgroup *)calloc(ng ? (size_t)ng : 1, sizeof(rt_mcgroup));
    if (!mir || !mc) { free(mir); free(mc); return PyErr_NoMemory(); }
    int bad = 0;
    for (Py_ssize_t i = 0; i < nm && !bad; i++) {
        PyObject *t = PySequence_GetItem(args[1], i);
        unsigned long long s, tg, cos;
        int kind;
        if (!t || !PyArg_ParseTuple(t, "KiKK", &s, &kind, &tg, &cos)) bad = 1;
        else { mir[i].session = s; mir[i].kind = kind; mir[i].target = tg; mir[i].cos = cos; }
        Py_XDECREF(t);
    }
    Py_ssize_t built = 0;
    for (Py_ssize_t i = 0; i < ng && !bad; i++) {
        PyObject *t = PySequence_GetItem(args[2], i);
        unsigned long long g;
        PyObject *lst;
        if (!t || !PyArg_ParseTuple(t, "KO", &g, &lst)) { Py_XDECREF(t); bad = 1; break; }
        Py_ssize_t k = PySequence_Size(lst);
        mc[i].mgrp = g;
        mc[i].n = (uint32_t)(k > 0 ? k : 0);
        mc[i].rid = (uint64_t *)calloc(k > 0 ? (size_t)k : 1, sizeof(uint64_t));
        mc[i].port = (uint64_t *)calloc(k > 0 ? (size_t)k : 1, sizeof(uint64_t));
        built = i + 1;
        for (Py_ssize_t j = 0; j < k && !bad; j++) {
            PyObject *p = PySequence_GetItem(lst, j);
            unsigned long long rid, port;
            if (!p || !PyArg_ParseTuple(p, "KK", &rid, &port)) bad = 1;
            else { mc[i].rid[j] = rid; mc[i].port[j] = port; }
            Py_XDECREF(p);
        }
        Py_DECREF(t);
    }
    if (bad) {
        for (Py_ssize_t i = 0; i < built; i++) { free(mc[i].rid); free(mc[i].port); }
        free(mir); free(mc);
        return NULL;
    }
    free(c->mirror);
    for (uint32_t i = 0; i < c->nmc; i++) { free(c->mc[i].rid); free(c->mc[i].port); }
    free(c->mc);
    c->mirror = mir; c->nmirror = (uint32_t)nm;
    c->mc = mc; c->nmc = (uint32_t)ng;
    Py_RETURN_NONE;
}

/* queues(ctx, priority_queues or -1, drops or -1) -> drops */
static PyObject *m_queues(PyObject *self, PyObject *const *args, Py_ssize_t n) {
    if (n != 3) { PyErr_SetString(PyExc_TypeError, "queues(ctx, pq, drops)"); return NULL; }
    rt_ctx *c = get_ctx(args[0]);
    if (!c) return NULL;
    long long pq = PyLong_AsLongLong(args[1]);
    long long dr = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (pq >= -1) c->priority_queues = pq;
    if (dr >= 0) c->priority_drops = (uint64_t)dr;
    return PyLong_FromUnsignedLongLong(c->priority_drops);
}

/* rt_loop.c, appended after this file */
static PyObject *m_forward(PyObject *self, PyObject *const *args, Py_ssize_t n);
/* rt_queues.c, appended after this file */
static PyObject *m_ntm_new(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_adopt(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_config(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_evict(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_take(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_next(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_depth(PyObject *self, PyObject *const *args, Py_ssize_t n);
static PyObject *m_ntm_drain(PyObject *self, PyObject *const *args, Py_ssize_t n);

static PyMethodDef METHODS[] = {
    {"new", (PyCFunction)(void (*)(void))m_new, METH_FASTCALL, NULL},
    {"inject", (PyCFunction)(void (*)(void))m_inject, METH_FASTCALL, NULL},
    {"ingress", (PyCFunction)(void (*)(void))m_ingress, METH_FASTCALL, NULL},
    {"egress", (PyCFunction)(void (*)(void))m_egress, METH_FASTCALL, NULL},
    {"tbl_put", (PyCFunction)(void (*)(void))m_tbl_put, METH_FASTCALL, NULL},
    {"tbl_put_entries", (PyCFunction)(void (*)(void))m_tbl_put_entries, METH_FASTCALL, NULL},
    {"tbl_put_rows", (PyCFunction)(void (*)(void))m_tbl_put_rows, METH_FASTCALL, NULL},
    {"tbl_del", (PyCFunction)(void (*)(void))m_tbl_del, METH_FASTCALL, NULL},
    {"tbl_clear", (PyCFunction)(void (*)(void))m_tbl_clear, METH_FASTCALL, NULL},
    {"tbl_default", (PyCFunction)(void (*)(void))m_tbl_default, METH_FASTCALL, NULL},
    {"tbl_stats", (PyCFunction)(void (*)(void))m_tbl_stats, METH_FASTCALL, NULL},
    {"tbl_set_stats", (PyCFunction)(void (*)(void))m_tbl_set_stats, METH_FASTCALL, NULL},
    {"idle_real_time", (PyCFunction)(void (*)(void))m_idle_real_time, METH_FASTCALL, NULL},
    {"tbl_size", (PyCFunction)(void (*)(void))m_tbl_size, METH_FASTCALL, NULL},
    {"lookup_bench", (PyCFunction)(void (*)(void))m_lookup_bench, METH_FASTCALL, NULL},
    {"cnt_read", (PyCFunction)(void (*)(void))m_cnt_read, METH_FASTCALL, NULL},
    {"cnt_write", (PyCFunction)(void (*)(void))m_cnt_write, METH_FASTCALL, NULL},
    {"cnt_reset", (PyCFunction)(void (*)(void))m_cnt_reset, METH_FASTCALL, NULL},
    {"reg_read", (PyCFunction)(void (*)(void))m_reg_read, METH_FASTCALL, NULL},
    {"reg_write", (PyCFunction)(void (*)(void))m_reg_write, METH_FASTCALL, NULL},
    {"reg_reset", (PyCFunction)(void (*)(void))m_reg_reset, METH_FASTCALL, NULL},
    {"set_repl", (PyCFunction)(void (*)(void))m_set_repl, METH_FASTCALL, NULL},
    {"queues", (PyCFunction)(void (*)(void))m_queues, METH_FASTCALL, NULL},
    {"forward", (PyCFunction)(void (*)(void))m_forward, METH_FASTCALL, NULL},
    {"queues_new", (PyCFunction)(void (*)(void))m_ntm_new, METH_FASTCALL, NULL},
    {"queues_adopt", (PyCFunction)(void (*)(void))m_ntm_adopt, METH_FASTCALL, NULL},
    {"queues_config", (PyCFunction)(void (*)(void))m_ntm_config, METH_FASTCALL, NULL},
    {"queues_evict", (PyCFunction)(void (*)(void))m_ntm_evict, METH_FASTCALL, NULL},
    {"queues_take", (PyCFunction)(void (*)(void))m_ntm_take, METH_FASTCALL, NULL},
    {"queues_next", (PyCFunction)(void (*)(void))m_ntm_next, METH_FASTCALL, NULL},
    {"queues_depth", (PyCFunction)(void (*)(void))m_ntm_depth, METH_FASTCALL, NULL},
    {"queues_drain", (PyCFunction)(void (*)(void))m_ntm_drain, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, P4_MODNAME_STR, NULL, -1, METHODS};

PyMODINIT_FUNC P4_PYINIT(void) {
    return PyModule_Create(&MODULE);
}
