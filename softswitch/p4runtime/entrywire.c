/* Decoding the table-entry updates of a P4Runtime Write batch straight from the wire.
 *
 * Built at first use by softswitch/p4runtime/entrywire.py through the fast path's compiler
 * cache (softswitch/fastpath/build.py, which defines P4_MODNAME_STR and P4_PYINIT).
 *
 * Why: on protobuf's upb runtime, parsing an Update is cheap but every field read from
 * Python is not (a wrapper object per sub-message): reading the fields of an LPM route
 * from Python is most of what a batched insert costs. This walks the protobuf wire
 * format of each Update once and returns the fields as plain Python values.
 *
 * It only takes the common shape: an Update (type, entity) whose Entity is a
 * table_entry with a direct action, match fields of the five standard kinds, and no
 * meter/counter data, default-action flag, is_const or unknown field; each field at
 * most once. Anything else -- and anything malformed -- gives None for that update,
 * and the caller parses it with protobuf, so every error the server reports
 * still comes from the one general path.
 *
 * decode(data: bytes, spans: list[tuple[int, int]], plans=None) -> list[tuple | None],
 * one item per span (an Update's encoding within data). With ``plans`` (table id ->
 * native plan, see "checked updates" below) an update of a planned table that passes
 * every check comes back checked:
 *     (type, table_id, key, idle_timeout_ns, action_id, match, args or None,
 *      table_entry_bytes, has_metadata, True)
 * (table_entry_bytes empty for a DELETE, which names its entry by key: its bytes would
 * only be allocated to be freed)
 * (idle_timeout_ns, action_id, table_entry_bytes and has_metadata where the plain
 * form has them; key is the server's canonical key; match the switch's normalised
 * match, for an INSERT only (else None); args the action's arguments, None for a
 * DELETE or without an action)
 * and any other plain update as:
 *     (type, table_id, priority, idle_timeout_ns, action_id,
 *      ((field_id, kind, a, b), ...), ((param_id, value), ...), table_entry_bytes,
 *      has_metadata)
 * has_metadata is 1 when the entry carries controller_metadata or metadata (kept as
 * written: Read then re-encodes the entry through protobuf);
 * kind is "exact", "lpm", "ternary", "range" or "optional" (protobuf's oneof names);
 * action_id is 0 when the entry has no action (as a DELETE may);
 * a, b are bytes (lpm: b is the prefix length; exact/optional: b is None).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdarg.h>

/* A tuple of ``n`` new references, which it takes over (and releases, all of them, when
 * one is NULL or the tuple cannot be made). What Py_BuildValue("(NN...)") does without
 * parsing a format string per call: the per-entry tuples of a batch are built here. */
static PyObject *tuple_of(Py_ssize_t n, ...) {
    va_list ap;
    PyObject *t = PyTuple_New(n);
    int ok = t != NULL;
    va_start(ap, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = va_arg(ap, PyObject *);
        ok = ok && o != NULL;
        if (t && o)
            PyTuple_SET_ITEM(t, i, o);
        else if (o)
            Py_DECREF(o);
    }
    va_end(ap);
    if (!ok) {
        Py_XDECREF(t);    /* its set items with it; unset ones are NULL */
        return NULL;
    }
    return t;
}

/* Dict operations given the key's hash: a batched insert looks a key up, then stores
 * it, and a key is a nested tuple whose hash is computed anew each time (tuples do not
 * cache it). CPython's own helpers where it has them, else the plain calls. */
#if PY_VERSION_HEX < 0x030D0000
#define dict_get_h(d, k, h) _PyDict_GetItem_KnownHash((d), (k), (h))
#define dict_set_h(d, k, v, h) _PyDict_SetItem_KnownHash((d), (k), (v), (h))
#define dict_del_h(d, k, h) _PyDict_DelItem_KnownHash((d), (k), (h))
#else
#define dict_get_h(d, k, h) ((void)(h), PyDict_GetItemWithError((d), (k)))
#define dict_set_h(d, k, v, h) ((void)(h), PyDict_SetItem((d), (k), (v)))
#define dict_del_h(d, k, h) ((void)(h), PyDict_DelItem((d), (k)))
#endif

typedef struct {
    const unsigned char *p, *end;
} rd_t;

/* 0 on success; -1 on a truncated or overlong varint. */
static int rd_varint(rd_t *r, uint64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    while (r->p < r->end) {
        unsigned char b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
        shift += 7;
        if (shift > 63)
            return -1;
    }
    return -1;
}

/* Reads a tag; 0 at the end, 1 with a tag, -1 on malformed input. */
static int rd_tag(rd_t *r, uint32_t *field, uint32_t *wt) {
    uint64_t t;
    if (r->p >= r->end)
        return 0;
    if (rd_varint(r, &t) < 0 || (t >> 3) == 0 || (t >> 3) > 0x1fffffff)
        return -1;
    *field = (uint32_t)(t >> 3);
    *wt = (uint32_t)(t & 7);
    return 1;
}

/* A length-delimited payload as a sub-reader. */
static int rd_sub(rd_t *r, rd_t *sub) {
    uint64_t n;
    if (rd_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p))
        return -1;
    sub->p = r->p;
    sub->end = r->p + n;
    r->p += n;
    return 0;
}

static PyObject *K_EXACT, *K_LPM, *K_TERNARY, *K_RANGE, *K_OPTIONAL, *K_R;

#define NOT_SIMPLE 1        /* return code: fall back to protobuf */
#define MAXF 64             /* more match fields or parameters: fall back */

typedef struct {
    uint32_t fid, kind;                 /* kind: FieldMatch's field number (2,3,4,6,7) */
    const unsigned char *a, *b;         /* value/low; mask/high */
    Py_ssize_t na, nb;
    int64_t plen;
} fm_t;

typedef struct {
    uint32_t pid;
    const unsigned char *v;
    Py_ssize_t n;
} prm_t;

typedef struct {
    uint64_t type;
    uint32_t table_id, action_id;
    int64_t priority, idle;
    int has_action, has_md, nf, np;
    fm_t f[MAXF];
    prm_t p[MAXF];
    const unsigned char *te;
    Py_ssize_t nte;
} upd_t;

static const unsigned char EMPTY[1] = {0};

/* One FieldMatch into f; NOT_SIMPLE on anything else. */
static int field_match(rd_t *r, fm_t *f) {
    uint32_t fld, wt;
    int seen_id = 0, st;
    rd_t body = {0, 0};
    f->fid = 0; f->kind = 0; f->a = f->b = EMPTY; f->na = f->nb = 0; f->plen = 0;
    while ((st = rd_tag(r, &fld, &wt)) == 1) {
        if (fld == 1 && wt == 0 && !seen_id) {
            uint64_t v;
            if (rd_varint(r, &v) < 0 || v > 0xffffffffu)
                return NOT_SIMPLE;
            f->fid = (uint32_t)v;
            seen_id = 1;
        } else if ((fld == 2 || fld == 3 || fld == 4 || fld == 6 || fld == 7) && wt == 2
                   && !f->kind) {
            if (rd_sub(r, &body) < 0)
                return NOT_SIMPLE;
            f->kind = fld;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !f->kind)
        return NOT_SIMPLE;
    /* The kind's own fields: 1 and 2 (value/mask, value/prefix_len, low/high). */
    int s1 = 0, s2 = 0;
    while ((st = rd_tag(&body, &fld, &wt)) == 1) {
        rd_t v;
        if (fld == 1 && wt == 2 && !s1) {
            if (rd_sub(&body, &v) < 0)
                return NOT_SIMPLE;
            f->a = v.p; f->na = v.end - v.p; s1 = 1;
        } else if (fld == 2 && !s2 && (f->kind == 3 || f->kind == 6) && wt == 2) {
            if (rd_sub(&body, &v) < 0)
                return NOT_SIMPLE;
            f->b = v.p; f->nb = v.end - v.p; s2 = 1;
        } else if (fld == 2 && !s2 && f->kind == 4 && wt == 0) {
            uint64_t u;
            if (rd_varint(&body, &u) < 0)
                return NOT_SIMPLE;
            f->plen = (int32_t)(uint32_t)u;       /* int32 on the wire */
            s2 = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    return st < 0 ? NOT_SIMPLE : 0;
}

/* One Action.Param into p. */
static int param(rd_t *r, prm_t *p) {
    uint32_t fld, wt;
    int sp = 0, sv = 0, st;
    p->pid = 0; p->v = EMPTY; p->n = 0;
    while ((st = rd_tag(r, &fld, &wt)) == 1) {
        if (fld == 2 && wt == 0 && !sp) {
            uint64_t u;
            if (rd_varint(r, &u) < 0 || u > 0xffffffffu)
                return NOT_SIMPLE;
            p->pid = (uint32_t)u;
            sp = 1;
        } else if (fld == 3 && wt == 2 && !sv) {
            rd_t v;
            if (rd_sub(r, &v) < 0)
                return NOT_SIMPLE;
            p->v = v.p; p->n = v.end - v.p;
            sv = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    return st < 0 ? NOT_SIMPLE : 0;
}

/* TableAction holding one direct Action. */
static int table_action(rd_t *r, upd_t *u) {
    uint32_t fld, wt;
    int st, seen = 0, sid = 0;
    rd_t act;
    while ((st = rd_tag(r, &fld, &wt)) == 1) {
        if (fld == 1 && wt == 2 && !seen) {
            if (rd_sub(r, &act) < 0)
                return NOT_SIMPLE;
            seen = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !seen)
        return NOT_SIMPLE;
    while ((st = rd_tag(&act, &fld, &wt)) == 1) {
        if (fld == 1 && wt == 0 && !sid) {
            uint64_t v;
            if (rd_varint(&act, &v) < 0 || v > 0xffffffffu)
                return NOT_SIMPLE;
            u->action_id = (uint32_t)v;
            sid = 1;
        } else if (fld == 4 && wt == 2) {
            rd_t sub;
            if (u->np >= MAXF || rd_sub(&act, &sub) < 0 || param(&sub, &u->p[u->np]))
                return NOT_SIMPLE;
            u->np++;
        } else {
            return NOT_SIMPLE;
        }
    }
    return st < 0 ? NOT_SIMPLE : 0;
}

/* One Update into u; NOT_SIMPLE unless it has the plain shape. */
static int parse_update(const unsigned char *start, const unsigned char *end, upd_t *u) {
    rd_t r = {start, end}, entity = {0, 0}, te = {0, 0}, act = {0, 0};
    uint32_t fld, wt;
    uint64_t v;
    int st, s_type = 0, s_ent = 0, s_te = 0;
    memset(u, 0, offsetof(upd_t, f));
    while ((st = rd_tag(&r, &fld, &wt)) == 1) {
        if (fld == 1 && wt == 0 && !s_type) {
            if (rd_varint(&r, &u->type) < 0)
                return NOT_SIMPLE;
            s_type = 1;
        } else if (fld == 2 && wt == 2 && !s_ent) {
            if (rd_sub(&r, &entity) < 0)
                return NOT_SIMPLE;
            s_ent = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !s_ent || u->type > 0x7fffffff)
        return NOT_SIMPLE;
    while ((st = rd_tag(&entity, &fld, &wt)) == 1) {
        if (fld == 2 && wt == 2 && !s_te) {
            if (rd_sub(&entity, &te) < 0)
                return NOT_SIMPLE;
            s_te = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !s_te)
        return NOT_SIMPLE;
    u->te = te.p;
    u->nte = te.end - te.p;
    int s_tid = 0, s_prio = 0, s_idle = 0, s_cm = 0, s_md = 0;
    while ((st = rd_tag(&te, &fld, &wt)) == 1) {
        if (fld == 1 && wt == 0 && !s_tid) {
            if (rd_varint(&te, &v) < 0 || v > 0xffffffffu)
                return NOT_SIMPLE;
            u->table_id = (uint32_t)v;
            s_tid = 1;
        } else if (fld == 2 && wt == 2) {
            rd_t sub;
            if (u->nf >= MAXF || rd_sub(&te, &sub) < 0 || field_match(&sub, &u->f[u->nf]))
                return NOT_SIMPLE;
            u->nf++;
        } else if (fld == 3 && wt == 2 && !u->has_action) {
            if (rd_sub(&te, &act) < 0)
                return NOT_SIMPLE;
            u->has_action = 1;
        } else if (fld == 4 && wt == 0 && !s_prio) {
            if (rd_varint(&te, &v) < 0)
                return NOT_SIMPLE;
            u->priority = (int32_t)(uint32_t)v;    /* int32 on the wire */
            s_prio = 1;
        } else if (fld == 5 && wt == 0 && !s_cm) {  /* controller_metadata: kept as written */
            if (rd_varint(&te, &v) < 0)
                return NOT_SIMPLE;
            s_cm = 1;
        } else if (fld == 9 && wt == 0 && !s_idle) {
            if (rd_varint(&te, &v) < 0)
                return NOT_SIMPLE;
            u->idle = (int64_t)v;
            s_idle = 1;
        } else if (fld == 11 && wt == 2 && !s_md) {  /* metadata: kept as written */
            rd_t sub;
            if (rd_sub(&te, &sub) < 0)
                return NOT_SIMPLE;
            s_md = 1;
        } else {
            return NOT_SIMPLE;   /* meter/counter data, default or const flags, unknown */
        }
    }
    if (st < 0)
        return NOT_SIMPLE;
    u->has_md = s_cm || s_md;
    if (u->has_action && table_action(&act, u))    /* no action: id 0 (a DELETE needs none) */
        return NOT_SIMPLE;
    return 0;
}

/* The plain decoding (see the top of the file). */
static PyObject *generic(const upd_t *u) {
    PyObject *mt = PyTuple_New(u->nf), *pt = PyTuple_New(u->np);
    if (!mt || !pt)
        goto fail;
    for (int i = 0; i < u->nf; i++) {
        const fm_t *f = &u->f[i];
        PyObject *kind, *bb;
        switch (f->kind) {
        case 2: kind = K_EXACT; break;
        case 3: kind = K_TERNARY; break;
        case 4: kind = K_LPM; break;
        case 6: kind = K_RANGE; break;
        default: kind = K_OPTIONAL; break;
        }
        if (f->kind == 3 || f->kind == 6)
            bb = PyBytes_FromStringAndSize((const char *)f->b, f->nb);
        else if (f->kind == 4)
            bb = PyLong_FromLongLong(f->plen);
        else {
            bb = Py_None;
            Py_INCREF(bb);
        }
        PyObject *item = bb ? Py_BuildValue("(IOy#N)", f->fid, kind, (const char *)f->a,
                                            f->na, bb) : NULL;
        if (!item)
            goto fail;
        PyTuple_SET_ITEM(mt, i, item);
    }
    for (int i = 0; i < u->np; i++) {
        PyObject *item = Py_BuildValue("(Iy#)", u->p[i].pid, (const char *)u->p[i].v,
                                       u->p[i].n);
        if (!item)
            goto fail;
        PyTuple_SET_ITEM(pt, i, item);
    }
    return Py_BuildValue("(iILLINNy#i)", (int)u->type, u->table_id, (long long)u->priority,
                         (long long)u->idle, u->action_id, mt, pt, (const char *)u->te,
                         u->nte, u->has_md);
fail:
    Py_XDECREF(mt);
    Py_XDECREF(pt);
    return NULL;
}

/* ------------------------------------------------------------------ checked updates
 * A plan (entryplan.TablePlan.native_plan) is the tuple
 *     (needs_priority, idle_ok, {field_id: (kind, width, position)}, exact_count,
 *      blank_match, {action_id: ((param_id, ...), (width, ...))})
 * with every width in 1..64 (a table or action with wider values has no native plan,
 * and its updates are checked in Python). check() accepts exactly what
 * matches.parse and actions.parse accept; anything else gives NOT_SIMPLE and the
 * update goes on to the Python plan (then, if need be, the general path). */

/* A byte string as a value of at most 64 bits: 0, or NOT_SIMPLE when empty or wider. */
static int u64_of(const unsigned char *p, Py_ssize_t n, int width, uint64_t *out) {
    if (n == 0)
        return NOT_SIMPLE;
    while (n > 0 && *p == 0) {
        p++;
        n--;
    }
    if (n > 8)
        return NOT_SIMPLE;
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        v = (v << 8) | p[i];
    if (width < 64 && (v >> width))
        return NOT_SIMPLE;
    *out = v;
    return 0;
}

/* The int object of a mask: masks repeat (every /24 of a table, every exact field of a
 * width), so the last few are kept and shared: one object less per stored entry.
 * Ints are immutable, so sharing one is invisible (but for ``is``). */
#define MASKS 4
static PyObject *mask_obj[MASKS];
static uint64_t mask_val[MASKS];
static int mask_next;

static PyObject *mask_int(uint64_t v) {
    for (int i = 0; i < MASKS; i++)
        if (mask_obj[i] && mask_val[i] == v) {
            Py_INCREF(mask_obj[i]);
            return mask_obj[i];
        }
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    if (!o)
        return NULL;
    Py_XSETREF(mask_obj[mask_next], o);
    Py_INCREF(o);
    mask_val[mask_next] = v;
    mask_next = (mask_next + 1) % MASKS;
    return o;
}

static long as_long(PyObject *tuple, Py_ssize_t i) {
    return PyLong_AsLong(PyTuple_GET_ITEM(tuple, i));
}

/* (kind, a, b) of a canonical key field and the switch's normalised match, or
 * NOT_SIMPLE; -1 on a Python error. */
static int check_field(const fm_t *f, int width, PyObject **norm, PyObject **sw) {
    uint64_t full = width == 64 ? UINT64_MAX : ((uint64_t)1 << width) - 1, a, b = 0;
    if (u64_of(f->a, f->na, width, &a))
        return NOT_SIMPLE;
    /* The value is one int object shared by the key and the switch's match (ints are
     * immutable): one object less to allocate, and to free when the entry goes. */
    PyObject *va = NULL;
    *norm = *sw = NULL;
    if (f->kind == 3 || f->kind == 6) {     /* the checks below may refuse the field */
        if (u64_of(f->b, f->nb, width, &b))
            return NOT_SIMPLE;
        if (f->kind == 3 ? (b == 0 || (a & ~b)) : (a > b || (a == 0 && b == full)))
            return NOT_SIMPLE;
    }
    if (f->kind == 4 && (f->plen <= 0 || f->plen > width))
        return NOT_SIMPLE;
    uint64_t host = 0;
    if (f->kind == 4) {
        host = (width - f->plen) >= 64 ? UINT64_MAX : ((uint64_t)1 << (width - f->plen)) - 1;
        if (a & host)
            return NOT_SIMPLE;
    }
    va = PyLong_FromUnsignedLongLong(a);
    PyObject *vm = NULL;
    if (va && (f->kind == 2 || f->kind == 7 || f->kind == 4)) {
        vm = mask_int(f->kind == 4 ? (full ^ host) : full);
        if (!vm)
            Py_CLEAR(va);
    }
    if (!va)
        return -1;
    switch (f->kind) {
    case 2:         /* exact */
    case 7:         /* optional */
        *norm = tuple_of(3, Py_NewRef(f->kind == 2 ? K_EXACT : K_OPTIONAL), Py_NewRef(va),
                         PyLong_FromLong(0));
        *sw = tuple_of(2, Py_NewRef(va), Py_NewRef(vm));
        break;
    case 4:         /* lpm */
        *norm = tuple_of(3, Py_NewRef(K_LPM), Py_NewRef(va), PyLong_FromLongLong(f->plen));
        *sw = tuple_of(3, Py_NewRef(va), Py_NewRef(vm), PyLong_FromLongLong(f->plen));
        break;
    case 3: {       /* ternary: the mask too is shared */
        PyObject *vb = PyLong_FromUnsignedLongLong(b);
        if (vb) {
            *norm = tuple_of(3, Py_NewRef(K_TERNARY), Py_NewRef(va), Py_NewRef(vb));
            *sw = tuple_of(2, Py_NewRef(va), Py_NewRef(vb));
            Py_DECREF(vb);
        }
        break;
    }
    default: {      /* range */
        PyObject *vb = PyLong_FromUnsignedLongLong(b);
        if (vb) {
            *norm = tuple_of(3, Py_NewRef(K_RANGE), Py_NewRef(va), Py_NewRef(vb));
            *sw = tuple_of(3, Py_NewRef(K_R), Py_NewRef(va), Py_NewRef(vb));
            Py_DECREF(vb);
        }
        break;
    }
    }
    Py_DECREF(va);
    Py_XDECREF(vm);
    if (!*norm || !*sw) {
        Py_XDECREF(*norm);
        Py_XDECREF(*sw);
        return -1;
    }
    return 0;
}

/* The action's arguments in parameter order, None without an action; NOT_SIMPLE when
 * they are not valid (or the action is not in the plan). aid: the action id's int. */
static int check_args(const upd_t *u, PyObject *aid, PyObject *actions, PyObject **out) {
    if (!u->has_action) {
        Py_INCREF(Py_None);
        *out = Py_None;
        return 0;
    }
    PyObject *spec = PyDict_GetItemWithError(actions, aid);
    if (!spec)
        return PyErr_Occurred() ? -1 : NOT_SIMPLE;
    PyObject *ids = PyTuple_GET_ITEM(spec, 0), *widths = PyTuple_GET_ITEM(spec, 1);
    Py_ssize_t n = PyTuple_GET_SIZE(ids);
    if (n != u->np)
        return NOT_SIMPLE;
    PyObject *args = PyList_New(n);
    if (!args)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long pid = as_long(ids, i);
        int found = -1;
        for (int j = 0; j < u->np; j++) {
            if ((long)u->p[j].pid == pid) {
                if (found >= 0) {           /* given twice */
                    found = -2;
                    break;
                }
                found = j;
            }
        }
        uint64_t v;
        if (found < 0 || u64_of(u->p[found].v, u->p[found].n, (int)as_long(widths, i), &v)) {
            Py_DECREF(args);
            return PyErr_Occurred() ? -1 : NOT_SIMPLE;
        }
        PyObject *value = PyLong_FromUnsignedLongLong(v);
        if (!value) {
            Py_DECREF(args);
            return -1;
        }
        PyList_SET_ITEM(args, i, value);
    }
    *out = args;
    return 0;
}

/* The checked form (see the top of the file), or NOT_SIMPLE / -1. */
static int check(upd_t *u, PyObject *tid, PyObject *plan, PyObject **out) {
    int needs_priority = (int)as_long(plan, 0), idle_ok = (int)as_long(plan, 1);
    PyObject *fields = PyTuple_GET_ITEM(plan, 2), *blank = PyTuple_GET_ITEM(plan, 4);
    long exact_count = as_long(plan, 3);
    if (PyErr_Occurred())
        return -1;
    if (u->idle < 0 || (u->idle && !idle_ok))     /* refused by the general path */
        return NOT_SIMPLE;
    if (needs_priority ? (u->priority <= 0 || u->priority > 0x7fffffff) : u->priority != 0)
        return NOT_SIMPLE;
    /* fields in id order (insertion sort: a handful); an id given twice is refused */
    for (int i = 1; i < u->nf; i++) {
        fm_t x = u->f[i];
        int j = i - 1;
        while (j >= 0 && u->f[j].fid > x.fid) {
            u->f[j + 1] = u->f[j];
            j--;
        }
        u->f[j + 1] = x;
    }
    for (int i = 1; i < u->nf; i++)
        if (u->f[i].fid == u->f[i - 1].fid)
            return NOT_SIMPLE;
    /* An INSERT needs the switch's match, an INSERT or MODIFY the arguments; a DELETE
     * only the key (its action, if any, is not looked at, as matches.parse does not) */
    int need_match = u->type == 1, need_args = u->type != 3;
    Py_ssize_t nk = PyTuple_GET_SIZE(blank);
    PyObject *items = PyTuple_New(u->nf), *match = need_match ? PyTuple_New(nk) : NULL;
    /* the action id's int: the key of the plan's actions, then the checked form's */
    PyObject *args = NULL, *aid = PyLong_FromUnsignedLong(u->action_id);
    int rc = -1;
    long exact = 0;
    if (!items || (need_match && !match) || !aid)
        goto done;
    for (Py_ssize_t i = 0; need_match && i < nk; i++) {
        PyObject *b = PyTuple_GET_ITEM(blank, i);
        Py_INCREF(b);
        PyTuple_SET_ITEM(match, i, b);
    }
    for (int i = 0; i < u->nf; i++) {
        const fm_t *f = &u->f[i];
        PyObject *fid = PyLong_FromUnsignedLong(f->fid), *spec, *norm, *sw;
        if (!fid)
            goto done;
        spec = PyDict_GetItemWithError(fields, fid);
        if (!spec) {
            Py_DECREF(fid);
            rc = PyErr_Occurred() ? -1 : NOT_SIMPLE;
            goto done;
        }
        long kind = as_long(spec, 0), width = as_long(spec, 1), pos = as_long(spec, 2);
        if ((uint32_t)kind != f->kind) {
            Py_DECREF(fid);
            rc = NOT_SIMPLE;
            goto done;
        }
        int r = check_field(f, (int)width, &norm, &sw);
        if (r) {
            Py_DECREF(fid);
            rc = r;
            goto done;
        }
        exact += kind == 2;
        PyObject *item = PyTuple_Pack(2, fid, norm);
        Py_DECREF(fid);
        Py_DECREF(norm);
        if (!item) {
            Py_DECREF(sw);
            goto done;
        }
        PyTuple_SET_ITEM(items, i, item);
        if (need_match)
            Py_SETREF(((PyTupleObject *)match)->ob_item[pos], sw);
        else
            Py_DECREF(sw);
    }
    if (exact != exact_count) {
        rc = NOT_SIMPLE;
        goto done;
    }
    if (need_args) {
        rc = check_args(u, aid, PyTuple_GET_ITEM(plan, 5), &args);
        if (rc)
            goto done;
    } else {
        Py_INCREF(Py_None);
        args = Py_None;
    }
    if (!need_match) {
        Py_INCREF(Py_None);
        match = Py_None;
    }
    PyObject *key = tuple_of(2, Py_NewRef(items), PyLong_FromLongLong(u->priority));
    if (!key) {
        rc = -1;
        goto done;
    }
    /* tuple_of takes key, aid, match and args over (also when building fails) */
    *out = tuple_of(10, PyLong_FromLong(u->type), Py_NewRef(tid), key,
                    PyLong_FromLongLong(u->idle), aid, match, args,
                    PyBytes_FromStringAndSize((const char *)u->te,
                                              u->type == 3 ? (Py_ssize_t)0 : u->nte),
                    PyLong_FromLong(u->has_md), Py_NewRef(Py_True));
    match = NULL;
    args = NULL;
    aid = NULL;
    rc = *out ? 0 : -1;
done:
    Py_XDECREF(items);
    Py_XDECREF(match);
    Py_XDECREF(args);
    Py_XDECREF(aid);
    return rc;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *spans, *plans = Py_None;
    upd_t *u = NULL;
    PyObject *tid = NULL;
    uint32_t tid_v = 0;
    if (!PyArg_ParseTuple(args, "y*O!|O", &buf, &PyList_Type, &spans, &plans))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(spans);
    PyObject *out = PyList_New(n);
    u = (upd_t *)PyMem_Malloc(sizeof(upd_t));
    if (!out || !u)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t s, e;
        PyObject *item = NULL, *span = PyList_GET_ITEM(spans, i);
        if (!PyTuple_Check(span) || PyTuple_GET_SIZE(span) != 2) {
            PyErr_SetString(PyExc_TypeError, "a span is a (start, end) tuple");
            goto fail;
        }
        s = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 0));
        e = PyLong_AsSsize_t(PyTuple_GET_ITEM(span, 1));
        if ((s == -1 || e == -1) && PyErr_Occurred())
            goto fail;
        if (s < 0 || e < s || e > buf.len) {
            PyErr_SetString(PyExc_ValueError, "span outside the data");
            goto fail;
        }
        if (parse_update((const unsigned char *)buf.buf + s,
                         (const unsigned char *)buf.buf + e, u) == 0) {
            int rc = NOT_SIMPLE;
            if (plans != Py_None) {
                /* one table id object for a run of updates of one table */
                if (!tid || tid_v != u->table_id) {
                    Py_XSETREF(tid, PyLong_FromUnsignedLong(u->table_id));
                    tid_v = u->table_id;
                }
                PyObject *plan = tid ? PyDict_GetItemWithError(plans, tid) : NULL;
                if (plan)
                    rc = check(u, tid, plan, &item);
                if (PyErr_Occurred() || !tid)
                    goto fail;
            }
            if (rc == NOT_SIMPLE && !(item = generic(u)))
                goto fail;
        } else {
            item = Py_None;
            Py_INCREF(item);
        }
        PyList_SET_ITEM(out, i, item);
    }
    PyMem_Free(u);
    Py_XDECREF(tid);
    PyBuffer_Release(&buf);
    return out;
fail:
    PyMem_Free(u);
    Py_XDECREF(tid);
    Py_XDECREF(out);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- split
 * wire.split in C (see there): the encoding of every field but ``lazy`` and the
 * (start, end) spans of ``lazy``'s length-delimited occurrences. Malformed bytes raise
 * ValueError with wire.split's message (wire.py turns it into a WireError). A varint
 * is kept to 64 bits; ``big`` says higher bits were set (such a tag is neither field 0
 * nor ``lazy``, such a length runs past the end), as Python's ints would have it. */
static int sp_varint(const uint8_t *d, Py_ssize_t end, Py_ssize_t *pos, uint64_t *value,
                     int *big) {
    uint64_t v = 0;
    int shift = 0;
    *big = 0;
    for (;;) {
        if (*pos >= end || shift > 63) {
            PyErr_SetString(PyExc_ValueError, "truncated or overlong varint");
            return -1;
        }
        uint8_t byte = d[(*pos)++];
        uint64_t bits = byte & 0x7F;
        if (shift < 64) {
            v |= bits << shift;
            if (shift > 57 && (bits >> (64 - shift))) *big = 1;
        }
        if (!(byte & 0x80)) { *value = v; return 0; }
        shift += 7;
    }
}

static PyObject *split(PyObject *self, PyObject *args) {
    Py_buffer buf;
    long long lazy;
    if (!PyArg_ParseTuple(args, "y*L", &buf, &lazy)) return NULL;
    const uint8_t *d = (const uint8_t *)buf.buf;
    Py_ssize_t end = buf.len, pos = 0;
    PyObject *spans = PyList_New(0), *head = NULL;
    char *out = PyMem_Malloc(end ? (size_t)end : 1);
    Py_ssize_t olen = 0;
    if (!spans || !out) { if (!out) PyErr_NoMemory(); goto fail; }
    while (pos < end) {
        Py_ssize_t start = pos;
        uint64_t tag, skip;
        int big;
        if (d[pos] < 0x80) { tag = d[pos++]; big = 0; }
        else if (sp_varint(d, end, &pos, &tag, &big)) goto fail;
        unsigned wt = (unsigned)(tag & 7);
        if (!big && (tag >> 3) == 0) {
            PyErr_SetString(PyExc_ValueError, "field number 0");
            goto fail;
        }
        int is_lazy = !big && (long long)(tag >> 3) == lazy;
        if (wt == 0) {
            if (sp_varint(d, end, &pos, &skip, &big)) goto fail;
        } else if (wt == 1) {
            pos += 8;
        } else if (wt == 5) {
            pos += 4;
        } else if (wt == 2) {
            uint64_t length;
            if (pos < end && d[pos] < 0x80) { length = d[pos++]; big = 0; }
            else if (sp_varint(d, end, &pos, &length, &big)) goto fail;
            if (big || length > (uint64_t)(end - pos)) {
                PyErr_SetString(PyExc_ValueError, "truncated field");
                goto fail;
            }
            if (is_lazy) {
                PyObject *span = tuple_of(2, PyLong_FromSsize_t(pos),
                                          PyLong_FromSsize_t(pos + (Py_ssize_t)length));
                if (!span || PyList_Append(spans, span)) { Py_XDECREF(span); goto fail; }
                Py_DECREF(span);
                pos += (Py_ssize_t)length;
                continue;
            }
            pos += (Py_ssize_t)length;
        } else {
            PyErr_Format(PyExc_ValueError, "unsupported wire type %u", wt);
            goto fail;
        }
        if (pos > end) {
            PyErr_SetString(PyExc_ValueError, "truncated field");
            goto fail;
        }
        memcpy(out + olen, d + start, (size_t)(pos - start));
        olen += pos - start;
    }
    head = PyBytes_FromStringAndSize(out, olen);
    if (!head) goto fail;
    PyMem_Free(out);
    PyBuffer_Release(&buf);
    PyObject *r = PyTuple_Pack(2, head, spans);
    Py_DECREF(head);
    Py_DECREF(spans);
    return r;
fail:
    PyMem_Free(out);
    Py_XDECREF(spans);
    PyBuffer_Release(&buf);
    return NULL;
}

/* ---------------------------------------------------------------- primary_spans
 * primary_spans(data, device_id, election_high, election_low, max_updates) -> the
 * (start, end) spans of a WriteRequest's updates when the request is the common one
 * (small_writes.py): every field well formed, none repeated but ``updates``, none
 * unknown; device_id equal to ``device_id``; election_id present and equal to
 * (election_high, election_low); no role, role_id 0, atomicity CONTINUE_ON_ERROR; 1 to
 * ``max_updates`` updates. Anything else -> None (the general path parses the request
 * and reports what it finds), never an exception for bad bytes. Varints are read as
 * protobuf reads them (rd_varint: bits past 64 dropped). */

/* The Uint128 election_id {high = 1, low = 2}: 0 and its halves, or -1. */
static int pw_election(rd_t r, uint64_t *high, uint64_t *low) {
    uint32_t field, wt;
    int seen = 0, got;
    *high = *low = 0;
    while ((got = rd_tag(&r, &field, &wt)) == 1) {
        if (wt != 0 || field > 2 || (seen & (int)field))
            return -1;
        seen |= (int)field;
        if (rd_varint(&r, field == 1 ? high : low) < 0)
            return -1;
    }
    return got;
}

static PyObject *primary_spans(PyObject *self, PyObject *args) {
    Py_buffer buf;
    unsigned long long want_device, want_high, want_low;
    Py_ssize_t max_updates;
    if (!PyArg_ParseTuple(args, "y*KKKn", &buf, &want_device, &want_high, &want_low,
                          &max_updates))
        return NULL;
    const unsigned char *base = (const unsigned char *)buf.buf;
    rd_t r = {base, base + buf.len}, sub;
    uint64_t device = 0, high = 0, low = 0, v;
    uint32_t field, wt;
    int seen = 0, common = 1, got;
    PyObject *spans = PyList_New(0);
    if (!spans) { PyBuffer_Release(&buf); return NULL; }
    while (common && (got = rd_tag(&r, &field, &wt)) != 0) {
        if (got < 0 || field > 6 || (field != 4 && (seen & (1 << field)))) {
            common = 0;
            break;
        }
        seen |= 1 << field;
        if (field == 1 || field == 2 || field == 5) {       /* device_id, role_id, atomicity */
            if (wt != 0 || rd_varint(&r, &v) < 0) { common = 0; break; }
            if (field == 1) device = v;
            else if (v != 0) common = 0;
            continue;
        }
        if (wt != 2 || rd_sub(&r, &sub) < 0) { common = 0; break; }
        if (field == 3) {                                    /* election_id */
            if (pw_election(sub, &high, &low) < 0) common = 0;
        } else if (field == 6) {                             /* role */
            if (sub.p != sub.end) common = 0;
        } else {                                             /* updates */
            if (PyList_GET_SIZE(spans) >= max_updates) { common = 0; break; }
            PyObject *span = tuple_of(2, PyLong_FromSsize_t(sub.p - base),
                                      PyLong_FromSsize_t(sub.end - base));
            if (!span || PyList_Append(spans, span)) {
                Py_XDECREF(span);
                Py_DECREF(spans);
                PyBuffer_Release(&buf);
                return NULL;
            }
            Py_DECREF(span);
        }
    }
    PyBuffer_Release(&buf);
    if (!common || !(seen & (1 << 3)) || device != want_device || high != want_high
        || low != want_low || PyList_GET_SIZE(spans) == 0) {
        Py_DECREF(spans);
        Py_RETURN_NONE;
    }
    return spans;
}

/* ---------------------------------------------------------------- apply
 * apply(items, start, ctx) -> index: applies the checked updates items[start:] of one
 * table to the server's entry store and to the switch's deferred rows, in order, as
 * TableEntries._insert_checked / _modify_checked / the plain DELETE and
 * TableState.add_checked / modify_checked / delete do them one by one in Python
 * (tables.TableEntries.apply_run is the caller; tests/test_apply_run.py compares both
 * on random sequences). It stops at the first item it does not take -- not a checked
 * update of ctx's table, or one whose Python path would refuse it or do more (an
 * existing key, an unknown action, a full table, a built entry...) --
 * and returns its index: the caller runs that one the Python way, which reports any
 * error. Nothing can fail half-way through an item: every check comes before the
 * first change. ctx is the tuple
 *     (tid, records, timed, routes, size, state, rows, mode, lpm_index,
 *      put, deleted, Record, ActionCall, now_us, state_size, dead)
 * The rows' identities are not kept (TableState.bulk_rows): the records' keys, checked
 * here first, are as unique.
 * routes: {action_id: (name, info, plan, switch_action)}; mode 0 exact, 1 lpm,
 * 2 ternary (TableState.mode); put/deleted: the switch's lists of handles whose C
 * entry is due at the end of the batch (FastSwitch._Pending); dead: a list that keeps
 * what a DELETE or MODIFY drops (the record and row, the old action call, row and
 * stored bytes) until the caller lets it go -- after the reply is on its way
 * (unary_lane.held) -- or None to free it at once.
 * A row shares its argument list with the record's ActionCall (nothing changes either
 * in place), and its insertion order with its handle while both count alike: fewer
 * objects per entry to allocate and, costlier on glibc's allocator, to free. */
static PyObject *S_NEXT, *S_ORDER, *S_CALL, *S_STORED, *S_IDLE, *S_PLAIN, *S_WIRE,
                *S_HANDLE, *S_MEMBER, *S_GROUP, *S_KEY;

/* The priority of a row: the prefix length in an lpm table, else the key's. */
static PyObject *row_prio(PyObject *match, PyObject *key, long mode, Py_ssize_t lpm_index) {
    if (mode == 1) {
        if (!PyTuple_Check(match) || lpm_index >= PyTuple_GET_SIZE(match))
            return NULL;
        PyObject *m = PyTuple_GET_ITEM(match, lpm_index);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) < 3)
            return NULL;
        Py_INCREF(PyTuple_GET_ITEM(m, 2));
        return PyTuple_GET_ITEM(m, 2);
    }
    Py_INCREF(PyTuple_GET_ITEM(key, 1));
    return PyTuple_GET_ITEM(key, 1);
}

/* Record and ActionCall are slotted dataclasses. Their generated __init__ is bytecode
 * that stores each argument through its member descriptor, a noticeable part of a
 * batched insert. Where a type's __init__ is the generated
 * one (its code's co_qualname says so) and takes exactly its fields, in order, into
 * plain object slots, the object is allocated and its slots filled here instead; the
 * layout is looked up once per type (and the type kept alive with it). Any other type
 * -- a __post_init__, an __init__ of its own, an InitVar or a field without a slot --
 * is called as any other type is. */
#define SLOT_TYPES 4
#define SLOT_FIELDS 24
typedef struct {
    PyObject *type;
    int ok;
    Py_ssize_t n, off[SLOT_FIELDS];
} slot_layout_t;
static slot_layout_t slot_layouts[SLOT_TYPES];
static int slot_layouts_n;

/* Whether ``type`` qualifies; fills l->n and l->off. Never leaves an exception set. */
static int slot_layout_of(PyObject *type, slot_layout_t *l) {
    PyTypeObject *t = (PyTypeObject *)type;
    int ok = t->tp_new == PyBaseObject_Type.tp_new && t->tp_dictoffset == 0
             && !PyObject_HasAttrString(type, "__post_init__");
    PyObject *init = ok ? PyObject_GetAttrString(type, "__init__") : NULL;
    PyObject *code = init ? PyObject_GetAttrString(init, "__code__") : NULL;
    PyObject *qual = code ? PyObject_GetAttrString(code, "co_qualname") : NULL;
    ok = qual && PyUnicode_Check(qual)
         && PyUnicode_CompareWithASCIIString(qual, "__create_fn__.<locals>.__init__") == 0;
    Py_XDECREF(init);
    Py_XDECREF(code);
    Py_XDECREF(qual);
    PyObject *fields = ok ? PyObject_GetAttrString(type, "__dataclass_fields__") : NULL;
    ok = fields && PyDict_Check(fields);
    Py_ssize_t pos = 0;
    PyObject *name, *field;
    while (ok && PyDict_Next(fields, &pos, &name, &field)) {
        PyObject *in_init = PyObject_GetAttrString(field, "init");
        PyObject *descr = in_init == Py_True ? PyObject_GetAttr(type, name) : NULL;
        ok = descr && Py_IS_TYPE(descr, &PyMemberDescr_Type) && l->n < SLOT_FIELDS;
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
            ok = m->type == T_OBJECT_EX && !(m->flags & READONLY);
            if (ok)
                l->off[l->n++] = m->offset;
        }
        Py_XDECREF(in_init);
        Py_XDECREF(descr);
    }
    Py_XDECREF(fields);
    PyErr_Clear();
    return ok;
}

static PyObject *new_slotted(PyObject *type, PyObject *const *argv, Py_ssize_t n) {
    slot_layout_t *l = NULL;
    for (int i = 0; i < slot_layouts_n; i++)
        if (slot_layouts[i].type == type) l = &slot_layouts[i];
    if (!l && slot_layouts_n < SLOT_TYPES && PyType_Check(type)) {
        l = &slot_layouts[slot_layouts_n++];
        memset(l, 0, sizeof *l);
        Py_INCREF(type);
        l->type = type;
        l->ok = slot_layout_of(type, l);
    }
    if (!l || !l->ok || l->n != n)
        return PyObject_Vectorcall(type, argv, n, NULL);
    PyTypeObject *t = (PyTypeObject *)type;
    PyObject *o = t->tp_alloc(t, 0);
    if (!o)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(argv[i]);
        *(PyObject **)((char *)o + l->off[i]) = argv[i];
    }
    return o;
}

static PyObject *new_call(PyObject *ActionCall, PyObject *route, PyObject *args) {
    PyObject *argv[5] = {PyTuple_GET_ITEM(route, 0), args, Py_None,
                         PyTuple_GET_ITEM(route, 1), PyTuple_GET_ITEM(route, 2)};
    return new_slotted(ActionCall, argv, 5);
}

#define TAKE(x) do { if (!(x)) goto error; } while (0)

static PyObject *apply(PyObject *self, PyObject *args) {
    PyObject *items, *ctx;
    Py_ssize_t start;
    if (!PyArg_ParseTuple(args, "O!nO!", &PyList_Type, &items, &start, &PyTuple_Type, &ctx))
        return NULL;
    if (PyTuple_GET_SIZE(ctx) != 16) {
        PyErr_SetString(PyExc_TypeError, "apply: ctx is a 16-tuple");
        return NULL;
    }
    PyObject *tid = PyTuple_GET_ITEM(ctx, 0), *records = PyTuple_GET_ITEM(ctx, 1),
             *timed = PyTuple_GET_ITEM(ctx, 2), *routes = PyTuple_GET_ITEM(ctx, 3),
             *state = PyTuple_GET_ITEM(ctx, 5), *rows = PyTuple_GET_ITEM(ctx, 6),
             *put = PyTuple_GET_ITEM(ctx, 9), *deleted = PyTuple_GET_ITEM(ctx, 10),
             *Record = PyTuple_GET_ITEM(ctx, 11), *ActionCall = PyTuple_GET_ITEM(ctx, 12),
             *now = PyTuple_GET_ITEM(ctx, 13), *dead = PyTuple_GET_ITEM(ctx, 15);
    long long size = PyLong_AsLongLong(PyTuple_GET_ITEM(ctx, 4));
    long mode = PyLong_AsLong(PyTuple_GET_ITEM(ctx, 7));
    Py_ssize_t lpm_index = PyLong_AsSsize_t(PyTuple_GET_ITEM(ctx, 8));
    Py_ssize_t state_size = PyLong_AsSsize_t(PyTuple_GET_ITEM(ctx, 14));
    if (PyErr_Occurred())
        return NULL;
    if (!PyDict_Check(records) || !PyDict_Check(timed) || !PyDict_Check(routes)
        || !PyDict_Check(rows) || !PyList_Check(put)
        || !PyList_Check(deleted) || (dead != Py_None && !PyList_Check(dead))) {
        PyErr_SetString(PyExc_TypeError, "apply: ctx holds dicts and lists");
        return NULL;
    }
    PyObject *o_next = PyObject_GetAttr(state, S_NEXT), *o_order = NULL;
    if (!o_next)
        return NULL;
    o_order = PyObject_GetAttr(state, S_ORDER);
    long long next = PyLong_AsLongLong(o_next), order = o_order ? PyLong_AsLongLong(o_order) : -1;
    Py_DECREF(o_next);
    Py_XDECREF(o_order);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t i = start, n = PyList_GET_SIZE(items);
    for (; i < n; i++) {
        PyObject *d = PyList_GET_ITEM(items, i);
        if (!PyTuple_Check(d) || PyTuple_GET_SIZE(d) != 10 || PyTuple_GET_ITEM(d, 9) != Py_True)
            break;
        int eq = PyObject_RichCompareBool(PyTuple_GET_ITEM(d, 1), tid, Py_EQ);
        if (eq < 0)
            goto error;
        if (!eq)
            break;
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(d, 0));
        PyObject *key = PyTuple_GET_ITEM(d, 2);
        if (kind == 3) {                                       /* DELETE */
            Py_hash_t hkey = PyObject_Hash(key);
            if (hkey == -1) goto error;
            PyObject *record = dict_get_h(records, key, hkey);
            if (!record) {
                if (PyErr_Occurred()) goto error;
                break;
            }
            Py_INCREF(record);
            PyObject *member = PyObject_GetAttr(record, S_MEMBER);
            PyObject *group = member ? PyObject_GetAttr(record, S_GROUP) : NULL;
            PyObject *handle = group ? PyObject_GetAttr(record, S_HANDLE) : NULL;
            int plain = handle && member == Py_None && group == Py_None;
            Py_XDECREF(member);
            Py_XDECREF(group);
            PyObject *row = plain ? PyDict_GetItemWithError(rows, handle) : NULL;
            if (!row) {
                Py_DECREF(record);
                Py_XDECREF(handle);
                if (PyErr_Occurred()) goto error;
                break;                       /* a built entry (or not plain): Python */
            }
            /* the timed dict (by the record's id) is looked at only when it has any */
            int any_timed = PyDict_GET_SIZE(timed) > 0;
            PyObject *rid = any_timed ? PyLong_FromVoidPtr(record) : NULL;
            int bad = (any_timed && !rid)
                      || (dead != Py_None && (PyList_Append(dead, record) < 0
                                              || PyList_Append(dead, row) < 0))
                      || PyDict_DelItem(rows, handle) < 0
                      || dict_del_h(records, key, hkey) < 0
                      || PyList_Append(deleted, handle) < 0;
            if (!bad && rid) {
                PyObject *was = PyDict_GetItemWithError(timed, rid);
                if (was ? PyDict_DelItem(timed, rid) < 0 : PyErr_Occurred() != NULL)
                    bad = 1;
            }
            Py_XDECREF(rid);
            Py_DECREF(handle);
            Py_DECREF(record);
            if (bad) goto error;
            continue;
        }
        if (kind != 1 && kind != 2)
            break;
        PyObject *args_ = PyTuple_GET_ITEM(d, 6);
        if (args_ == Py_None || !PyList_Check(args_))
            break;
        PyObject *aid = PyTuple_GET_ITEM(d, 4);
        PyObject *route = PyDict_GetItemWithError(routes, aid);
        if (!route) {
            if (PyErr_Occurred()) goto error;
            break;
        }
        PyObject *idle = PyTuple_GET_ITEM(d, 3);
        int timed_now = PyObject_IsTrue(idle);
        PyObject *plain_flag = PyObject_IsTrue(PyTuple_GET_ITEM(d, 8)) ? Py_False : Py_True;
        PyObject *sw_action = PyTuple_GET_ITEM(route, 3);
        if (kind == 1) {                                       /* INSERT */
            Py_hash_t hkey = PyObject_Hash(key);
            if (hkey == -1) goto error;
            int has = dict_get_h(records, key, hkey) != NULL;
            if (!has && PyErr_Occurred()) goto error;
            if (has || (size && PyDict_GET_SIZE(records) >= size)
                || PyDict_GET_SIZE(rows) >= state_size)
                break;                       /* ALREADY_EXISTS / full: Python reports */
            PyObject *match = PyTuple_GET_ITEM(d, 5);
            PyObject *prio = row_prio(match, key, mode, lpm_index);
            if (!prio) {
                if (PyErr_Occurred()) goto error;
                break;
            }
            PyObject *handle = PyLong_FromLongLong(next), *o = NULL;
            if (handle && order == next) {
                o = handle;
                Py_INCREF(o);
            } else if (handle) {
                o = PyLong_FromLongLong(order);
            }
            PyObject *row = handle && o
                ? PyTuple_Pack(7, handle, match, sw_action, args_, prio, o, now) : NULL;
            Py_XDECREF(o);
            Py_DECREF(prio);
            PyObject *call = row ? new_call(ActionCall, route, args_) : NULL;
            PyObject *record = NULL;
            if (call) {
                PyObject *argv[15] = {handle, PyTuple_GET_ITEM(d, 7), Py_None, call, Py_False,
                                      key, Py_None, Py_False, Py_None, Py_None, Py_None,
                                      Py_None, idle, match, plain_flag};
                record = new_slotted(Record, argv, 15);
            }
            /* the timed dict's key (the record's id) only for an entry with a timeout */
            PyObject *rid = record && timed_now ? PyLong_FromVoidPtr(record) : NULL;
            int bad = !record || (timed_now && !rid)
                      || PyDict_SetItem(rows, handle, row) < 0
                      || PyList_Append(put, handle) < 0
                      || dict_set_h(records, key, record, hkey) < 0
                      || (timed_now && PyDict_SetItem(timed, rid, record) < 0);
            Py_XDECREF(handle);
            Py_XDECREF(row);
            Py_XDECREF(call);
            Py_XDECREF(record);
            Py_XDECREF(rid);
            if (bad) goto error;
            next++;
            order++;
            continue;
        }
        /* MODIFY */
        PyObject *record = PyDict_GetItemWithError(records, key);
        if (!record) {
            if (PyErr_Occurred()) goto error;
            break;
        }
        Py_INCREF(record);
        PyObject *handle = PyObject_GetAttr(record, S_HANDLE);
        PyObject *row = handle ? PyDict_GetItemWithError(rows, handle) : NULL;
        PyObject *old_idle = row ? PyObject_GetAttr(record, S_IDLE) : NULL;
        if (!old_idle) {
            Py_DECREF(record);
            Py_XDECREF(handle);
            if (PyErr_Occurred()) goto error;
            break;                           /* a built entry: Python */
        }
        int was_timed = PyObject_IsTrue(old_idle);
        Py_DECREF(old_idle);
        PyObject *nrow = PyTuple_Pack(7, handle, PyTuple_GET_ITEM(row, 1), sw_action, args_,
                                      PyTuple_GET_ITEM(row, 4), PyTuple_GET_ITEM(row, 5),
                                      PyTuple_GET_ITEM(row, 6));
        PyObject *call = nrow ? new_call(ActionCall, route, args_) : NULL;
        if (call && dead != Py_None) {       /* what the MODIFY drops: kept for later */
            PyObject *old_call = PyObject_GetAttr(record, S_CALL);
            PyObject *old_stored = old_call ? PyObject_GetAttr(record, S_STORED) : NULL;
            int held = old_stored && PyList_Append(dead, row) == 0
                       && PyList_Append(dead, old_call) == 0
                       && PyList_Append(dead, old_stored) == 0;
            Py_XDECREF(old_call);
            Py_XDECREF(old_stored);
            if (!held)
                Py_CLEAR(call);
        }
        PyObject *rid = call ? PyLong_FromVoidPtr(record) : NULL;
        int bad = !rid || PyDict_SetItem(rows, handle, nrow) < 0
                  || PyList_Append(put, handle) < 0
                  || PyObject_SetAttr(record, S_CALL, call) < 0
                  || PyObject_SetAttr(record, S_STORED, PyTuple_GET_ITEM(d, 7)) < 0
                  || PyObject_SetAttr(record, S_IDLE, idle) < 0
                  || PyObject_SetAttr(record, S_PLAIN, plain_flag) < 0
                  || PyObject_SetAttr(record, S_WIRE, Py_None) < 0;
        if (!bad && timed_now)
            bad = PyDict_SetItem(timed, rid, record) < 0;
        else if (!bad && was_timed && PyDict_DelItem(timed, rid) < 0) {
            if (PyErr_ExceptionMatches(PyExc_KeyError)) PyErr_Clear();
            else bad = 1;
        }
        Py_XDECREF(nrow);
        Py_XDECREF(call);
        Py_XDECREF(rid);
        Py_DECREF(handle);
        Py_DECREF(record);
        if (bad) goto error;
    }
    {
        PyObject *a = PyLong_FromLongLong(next), *b = PyLong_FromLongLong(order);
        int bad = !a || !b || PyObject_SetAttr(state, S_NEXT, a) < 0
                  || PyObject_SetAttr(state, S_ORDER, b) < 0;
        Py_XDECREF(a);
        Py_XDECREF(b);
        if (bad) return NULL;
    }
    return PyLong_FromSsize_t(i);
error:
    {   /* keep the counters in step with the rows already added */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *a = PyLong_FromLongLong(next), *b = PyLong_FromLongLong(order);
        if (a && b) {
            PyObject_SetAttr(state, S_NEXT, a);
            PyObject_SetAttr(state, S_ORDER, b);
        }
        Py_XDECREF(a);
        Py_XDECREF(b);
        PyErr_Restore(et, ev, tb);
    }
    return NULL;
}

/* ---------------------------------------------------------------- encoding for Read
 *
 * encode_plain(table_id, fields, priority, idle_timeout_ns, head, prefixes, args)
 *     -> bytes, or None
 * The canonical TableEntry of a plain record, as tables.py's _plain_wire builds it in
 * Python (the same bytes: protobuf's field order, defaults omitted): a Read's first pass
 * over a big table encodes every entry, and in Python that is most of the Read.
 * fields: ((field_id, (kind, a, b)), ...) as the record's key holds them; head and
 * prefixes: the action's ActionPlan.wire_prefixes; args: its argument values.
 * None (no error) for what it does not take -- a value over 64 bits or negative, a
 * parameter whose Param would need a two-byte length -- so the caller encodes that
 * entry in Python. */
typedef struct {
    unsigned char *buf;
    Py_ssize_t len, cap;
} wb_t;

static int wb_grow(wb_t *w, Py_ssize_t n) {
    if (w->len + n <= w->cap)
        return 0;
    Py_ssize_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n)
        cap *= 2;
    unsigned char *buf = PyMem_Realloc(w->buf, (size_t)cap);
    if (!buf) {
        PyErr_NoMemory();
        return -1;
    }
    w->buf = buf;
    w->cap = cap;
    return 0;
}

static int wb_put(wb_t *w, const void *data, Py_ssize_t n) {
    if (wb_grow(w, n) < 0)
        return -1;
    memcpy(w->buf + w->len, data, (size_t)n);
    w->len += n;
    return 0;
}

static int wb_varint(wb_t *w, uint64_t v) {
    unsigned char tmp[10];
    int n = 0;
    do {
        unsigned char byte = v & 0x7F;
        v >>= 7;
        tmp[n++] = v ? (byte | 0x80) : byte;
    } while (v);
    return wb_put(w, tmp, n);
}

/* A non-negative int of at most 64 bits as its canonical bytes (big-endian, no leading
 * zero byte, at least one byte): 1; 0 when it is not one (no error set); -1 on error. */
static int canon_u64(PyObject *v, unsigned char out[8], int *n) {
    if (!PyLong_Check(v))
        return 0;
    int overflow = 0;
    long long s = PyLong_AsLongLongAndOverflow(v, &overflow);
    uint64_t u;
    if (overflow > 0) {
        u = PyLong_AsUnsignedLongLong(v);
        if (u == (uint64_t)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;                       /* over 64 bits */
        }
    } else if (overflow < 0 || s < 0) {
        if (s == -1 && PyErr_Occurred())
            return -1;
        return 0;                           /* negative */
    } else {
        u = (uint64_t)s;
    }
    int len = 1;
    while (len < 8 && (u >> (8 * len)))
        len++;
    for (int i = 0; i < len; i++)
        out[i] = (unsigned char)(u >> (8 * (len - 1 - i)));
    *n = len;
    return 1;
}

/* tag, length, bytes of one length-delimited field */
static int wb_field(wb_t *w, unsigned char tag, const unsigned char *data, Py_ssize_t n) {
    if (wb_put(w, &tag, 1) < 0 || wb_varint(w, (uint64_t)n) < 0)
        return -1;
    return wb_put(w, data, n);
}

/* The FieldMatch field tag of a kind name, 0 for another name. */
static unsigned char kind_tag(PyObject *kind) {
    static const struct { const char *name; unsigned char tag; } TAGS[] = {
        {"exact", 0x12}, {"ternary", 0x1a}, {"lpm", 0x22}, {"range", 0x32},
        {"optional", 0x3a}};
    for (size_t i = 0; i < sizeof TAGS / sizeof TAGS[0]; i++)
        if (PyUnicode_CompareWithASCIIString(kind, TAGS[i].name) == 0)
            return TAGS[i].tag;
    return 0;
}

/* One (kind, a, b) FieldMatch into w: 1 done, 0 not taken, -1 error. Its body holds
 * the value (field 1), then lpm's prefix length (field 2, varint) or ternary's mask /
 * range's high (field 2, bytes). */
static int encode_match(wb_t *w, long fid, PyObject *kab) {
    if (!PyTuple_Check(kab) || PyTuple_GET_SIZE(kab) != 3
        || !PyUnicode_Check(PyTuple_GET_ITEM(kab, 0)))
        return 0;
    unsigned char tag = kind_tag(PyTuple_GET_ITEM(kab, 0));
    unsigned char a[8], b[8], body[40];
    int na, nb, rc, blen = 0;
    if (!tag || (rc = canon_u64(PyTuple_GET_ITEM(kab, 1), a, &na)) <= 0)
        return tag ? rc : 0;
    body[blen++] = 0x0a;
    body[blen++] = (unsigned char)na;
    memcpy(body + blen, a, (size_t)na);
    blen += na;
    if (tag == 0x22) {                                  /* lpm */
        long long plen = PyLong_AsLongLong(PyTuple_GET_ITEM(kab, 2));
        if (plen == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
        if (plen < 0 || plen > 127)
            return 0;
        body[blen++] = 0x10;
        body[blen++] = (unsigned char)plen;
    } else if (tag == 0x1a || tag == 0x32) {            /* ternary, range */
        if ((rc = canon_u64(PyTuple_GET_ITEM(kab, 2), b, &nb)) <= 0)
            return rc;
        body[blen++] = 0x12;
        body[blen++] = (unsigned char)nb;
        memcpy(body + blen, b, (size_t)nb);
        blen += nb;
    }
    wb_t fm = {0};
    int ok = wb_put(&fm, "\x08", 1) == 0 && wb_varint(&fm, (uint64_t)fid) == 0
             && wb_field(&fm, tag, body, blen) == 0 && wb_field(w, 0x12, fm.buf, fm.len) == 0;
    PyMem_Free(fm.buf);
    return ok ? 1 : -1;
}

/* The canonical Action (head, then per parameter: 0x22, size, prefix, len, value). */
static int encode_action(wb_t *w, PyObject *head, PyObject *prefixes, PyObject *args) {
    if (!PyBytes_Check(head) || !PyTuple_Check(prefixes))
        return 0;
    PyObject *seq = PySequence_Fast(args, "args");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    int rc = 1;
    if (n != PyTuple_GET_SIZE(prefixes)) {
        rc = 0;
        goto done;
    }
    if (wb_put(w, PyBytes_AS_STRING(head), PyBytes_GET_SIZE(head)) < 0) {
        rc = -1;
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *prefix = PyTuple_GET_ITEM(prefixes, i);
        unsigned char v[8];
        int nv;
        if (!PyBytes_Check(prefix)) {
            rc = 0;
            goto done;
        }
        if ((rc = canon_u64(PySequence_Fast_GET_ITEM(seq, i), v, &nv)) <= 0)
            goto done;
        Py_ssize_t np = PyBytes_GET_SIZE(prefix), size = np + 1 + nv;
        unsigned char hdr[2] = {0x22, (unsigned char)size}, vlen = (unsigned char)nv;
        if (size >= 128) {
            rc = 0;
            goto done;
        }
        if (wb_put(w, hdr, 2) < 0 || wb_put(w, PyBytes_AS_STRING(prefix), np) < 0
            || wb_put(w, &vlen, 1) < 0 || wb_put(w, v, nv) < 0) {
            rc = -1;
            goto done;
        }
    }
done:
    Py_DECREF(seq);
    return rc;
}

static PyObject *encode_plain(PyObject *self, PyObject *a) {
    long long table_id, priority;
    unsigned long long idle;
    PyObject *fields, *head, *prefixes, *args;
    if (!PyArg_ParseTuple(a, "LOLKOOO", &table_id, &fields, &priority, &idle, &head,
                          &prefixes, &args))
        return NULL;
    if (table_id < 0 || priority < 0 || !PyTuple_Check(fields))
        Py_RETURN_NONE;
    wb_t w = {0}, act = {0}, ta = {0};
    int rc = 1;
    unsigned char tag = 0x08;
    if (wb_put(&w, &tag, 1) < 0 || wb_varint(&w, (uint64_t)table_id) < 0) {
        rc = -1;
        goto done;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields) && rc == 1; i++) {
        PyObject *item = PyTuple_GET_ITEM(fields, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            rc = 0;
            break;
        }
        long fid = PyLong_AsLong(PyTuple_GET_ITEM(item, 0));
        if (fid == -1 && PyErr_Occurred()) {
            rc = -1;
            break;
        }
        if (fid < 0) {
            rc = 0;
            break;
        }
        rc = encode_match(&w, fid, PyTuple_GET_ITEM(item, 1));
    }
    if (rc == 1)
        rc = encode_action(&act, head, prefixes, args);
    if (rc == 1 && (wb_field(&ta, 0x0a, act.buf, act.len) < 0
                    || wb_field(&w, 0x1a, ta.buf, ta.len) < 0))
        rc = -1;
    if (rc == 1 && priority) {
        tag = 0x20;
        if (wb_put(&w, &tag, 1) < 0 || wb_varint(&w, (uint64_t)priority) < 0)
            rc = -1;
    }
    if (rc == 1 && idle) {
        tag = 0x48;
        if (wb_put(&w, &tag, 1) < 0 || wb_varint(&w, (uint64_t)idle) < 0)
            rc = -1;
    }
done:;
    PyObject *out = NULL;
    if (rc == 1)
        out = PyBytes_FromStringAndSize((const char *)w.buf, w.len);
    else if (rc == 0 && !PyErr_Occurred())
        out = Py_NewRef(Py_None);
    PyMem_Free(w.buf);
    PyMem_Free(act.buf);
    PyMem_Free(ta.buf);
    return out;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(data, spans[, plans]) -> per span a plain or checked tuple, or None"},
    {"apply", apply, METH_VARARGS,
     "apply(items, start, ctx) -> index of the first checked update not applied"},
    {"split", split, METH_VARARGS,
     "split(data, lazy_field) -> (encoding of the other fields, spans of lazy_field)"},
    {"primary_spans", primary_spans, METH_VARARGS,
     "primary_spans(data, device_id, election_high, election_low, max_updates) -> the "
     "updates' spans of a common WriteRequest from that primary, or None"},
    {"encode_plain", encode_plain, METH_VARARGS,
     "encode_plain(table_id, fields, priority, idle_timeout_ns, head, prefixes, args) "
     "-> a plain record's canonical TableEntry encoding, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, P4_MODNAME_STR, NULL, -1, methods};

PyMODINIT_FUNC P4_PYINIT(void) {
    K_EXACT = PyUnicode_InternFromString("exact");
    K_LPM = PyUnicode_InternFromString("lpm");
    K_TERNARY = PyUnicode_InternFromString("ternary");
    K_RANGE = PyUnicode_InternFromString("range");
    K_OPTIONAL = PyUnicode_InternFromString("optional");
    K_R = PyUnicode_InternFromString("r");
    if (!K_EXACT || !K_LPM || !K_TERNARY || !K_RANGE || !K_OPTIONAL || !K_R)
        return NULL;
    S_NEXT = PyUnicode_InternFromString("_next_handle");
    S_ORDER = PyUnicode_InternFromString("_order");
    S_CALL = PyUnicode_InternFromString("call");
    S_STORED = PyUnicode_InternFromString("stored");
    S_IDLE = PyUnicode_InternFromString("idle_timeout_ns");
    S_PLAIN = PyUnicode_InternFromString("plain");
    S_WIRE = PyUnicode_InternFromString("wire");
    S_HANDLE = PyUnicode_InternFromString("handle");
    S_MEMBER = PyUnicode_InternFromString("member");
    S_GROUP = PyUnicode_InternFromString("group");
    S_KEY = PyUnicode_InternFromString("key");
    if (!S_NEXT || !S_ORDER || !S_CALL || !S_STORED || !S_IDLE || !S_PLAIN || !S_WIRE
        || !S_HANDLE || !S_MEMBER || !S_GROUP || !S_KEY)
        return NULL;
    return PyModule_Create(&moddef);
}
