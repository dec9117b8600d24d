/* Decoding the table-entry updates of a P4Runtime Write batch straight from the wire.
 *
 * Built at first use by softswitch/p4runtime/entrywire.py through the fast path's compiler
 * cache (softswitch/fastpath/build.py, which defines P4_MODNAME_STR and P4_PYINIT).
 *
 * Why: on protobuf's upb runtime, parsing an Update is cheap but every field read from
 * Python is not (a wrapper object per sub-message): reading the ~25 fields of an LPM
 * route costs ~7 us, most of what a batched insert cost. This walks the protobuf wire
 * format of each Update once and returns the fields as plain Python values.
 *
 * It only takes the common shape: an Update (type, entity) whose Entity is a
 * table_entry with a direct action, match fields of the five standard kinds, and no
 * meter/counter data, default-action flag, is_const or unknown field; each field at
 * most once. Anything else -- and anything malformed -- gives None for that update,
 * and the caller parses it with protobuf as before, so every error the server reports
 * still comes from the one general path.
 *
 * decode(data: bytes, spans: list[tuple[int, int]]) -> list[tuple | None], one item
 * per span (an Update's encoding within data):
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
#include <stdint.h>
#include <string.h>

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

static PyObject *K_EXACT, *K_LPM, *K_TERNARY, *K_RANGE, *K_OPTIONAL;

#define NOT_SIMPLE 1        /* return code: fall back to protobuf */

/* One FieldMatch -> (field_id, kind, a, b); NOT_SIMPLE or -1 (Python error). */
static int field_match(rd_t *r, PyObject **out) {
    uint32_t f, wt, fid = 0, kindno = 0;
    int seen_id = 0, st;
    rd_t body = {0, 0};
    while ((st = rd_tag(r, &f, &wt)) == 1) {
        if (f == 1 && wt == 0 && !seen_id) {
            uint64_t v;
            if (rd_varint(r, &v) < 0 || v > 0xffffffffu)
                return NOT_SIMPLE;
            fid = (uint32_t)v;
            seen_id = 1;
        } else if ((f == 2 || f == 3 || f == 4 || f == 6 || f == 7) && wt == 2 && !kindno) {
            if (rd_sub(r, &body) < 0)
                return NOT_SIMPLE;
            kindno = f;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !kindno)
        return NOT_SIMPLE;
    /* The kind's own fields: 1 and 2 (value/mask, value/prefix_len, low/high). */
    const unsigned char *b1 = (const unsigned char *)"", *b2 = (const unsigned char *)"";
    Py_ssize_t n1 = 0, n2 = 0;
    int64_t plen = 0;
    int s1 = 0, s2 = 0;
    while ((st = rd_tag(&body, &f, &wt)) == 1) {
        rd_t v;
        if (f == 1 && wt == 2 && !s1) {
            if (rd_sub(&body, &v) < 0)
                return NOT_SIMPLE;
            b1 = v.p; n1 = v.end - v.p; s1 = 1;
        } else if (f == 2 && !s2 && (kindno == 3 || kindno == 6) && wt == 2) {
            if (rd_sub(&body, &v) < 0)
                return NOT_SIMPLE;
            b2 = v.p; n2 = v.end - v.p; s2 = 1;
        } else if (f == 2 && !s2 && kindno == 4 && wt == 0) {
            uint64_t u;
            if (rd_varint(&body, &u) < 0)
                return NOT_SIMPLE;
            plen = (int32_t)(uint32_t)u;          /* int32 on the wire */
            s2 = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0)
        return NOT_SIMPLE;
    PyObject *kind, *a, *bb;
    switch (kindno) {
    case 2: kind = K_EXACT; break;
    case 3: kind = K_TERNARY; break;
    case 4: kind = K_LPM; break;
    case 6: kind = K_RANGE; break;
    default: kind = K_OPTIONAL; break;
    }
    a = PyBytes_FromStringAndSize((const char *)b1, n1);
    if (!a)
        return -1;
    if (kindno == 3 || kindno == 6)
        bb = PyBytes_FromStringAndSize((const char *)b2, n2);
    else if (kindno == 4)
        bb = PyLong_FromLongLong(plen);
    else {
        bb = Py_None;
        Py_INCREF(bb);
    }
    if (!bb) {
        Py_DECREF(a);
        return -1;
    }
    *out = Py_BuildValue("(IONN)", fid, kind, a, bb);
    return *out ? 0 : -1;
}

/* One Action.Param -> (param_id, value). */
static int param(rd_t *r, PyObject **out) {
    uint32_t f, wt, pid = 0;
    int sp = 0, sv = 0, st;
    rd_t v = {(const unsigned char *)"", (const unsigned char *)""};
    while ((st = rd_tag(r, &f, &wt)) == 1) {
        if (f == 2 && wt == 0 && !sp) {
            uint64_t u;
            if (rd_varint(r, &u) < 0 || u > 0xffffffffu)
                return NOT_SIMPLE;
            pid = (uint32_t)u;
            sp = 1;
        } else if (f == 3 && wt == 2 && !sv) {
            if (rd_sub(r, &v) < 0)
                return NOT_SIMPLE;
            sv = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0)
        return NOT_SIMPLE;
    *out = Py_BuildValue("(Iy#)", pid, (const char *)v.p, (Py_ssize_t)(v.end - v.p));
    return *out ? 0 : -1;
}

/* TableAction holding one direct Action -> action_id and the params tuple. */
static int table_action(rd_t *r, uint32_t *action_id, PyObject *params) {
    uint32_t f, wt;
    int st, seen = 0, sid = 0;
    rd_t act;
    while ((st = rd_tag(r, &f, &wt)) == 1) {
        if (f == 1 && wt == 2 && !seen) {
            if (rd_sub(r, &act) < 0)
                return NOT_SIMPLE;
            seen = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !seen)
        return NOT_SIMPLE;
    while ((st = rd_tag(&act, &f, &wt)) == 1) {
        if (f == 1 && wt == 0 && !sid) {
            uint64_t u;
            if (rd_varint(&act, &u) < 0 || u > 0xffffffffu)
                return NOT_SIMPLE;
            *action_id = (uint32_t)u;
            sid = 1;
        } else if (f == 4 && wt == 2) {
            rd_t sub;
            PyObject *item;
            int rc;
            if (rd_sub(&act, &sub) < 0)
                return NOT_SIMPLE;
            rc = param(&sub, &item);
            if (rc)
                return rc;
            rc = PyList_Append(params, item);
            Py_DECREF(item);
            if (rc < 0)
                return -1;
        } else {
            return NOT_SIMPLE;
        }
    }
    return st < 0 ? NOT_SIMPLE : 0;
}

/* One Update -> the tuple described at the top; NOT_SIMPLE or -1. */
static int update(const unsigned char *start, const unsigned char *end, PyObject **out) {
    rd_t r = {start, end}, entity = {0, 0}, te = {0, 0}, act = {0, 0};
    uint32_t f, wt;
    uint64_t type = 0, u;
    int st, s_type = 0, s_ent = 0;
    while ((st = rd_tag(&r, &f, &wt)) == 1) {
        if (f == 1 && wt == 0 && !s_type) {
            if (rd_varint(&r, &type) < 0)
                return NOT_SIMPLE;
            s_type = 1;
        } else if (f == 2 && wt == 2 && !s_ent) {
            if (rd_sub(&r, &entity) < 0)
                return NOT_SIMPLE;
            s_ent = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !s_ent || type > 0x7fffffff)
        return NOT_SIMPLE;
    int s_te = 0;
    while ((st = rd_tag(&entity, &f, &wt)) == 1) {
        if (f == 2 && wt == 2 && !s_te) {
            if (rd_sub(&entity, &te) < 0)
                return NOT_SIMPLE;
            s_te = 1;
        } else {
            return NOT_SIMPLE;
        }
    }
    if (st < 0 || !s_te)
        return NOT_SIMPLE;
    uint32_t table_id = 0, action_id = 0;
    int64_t priority = 0, idle = 0;
    int s_tid = 0, s_act = 0, s_prio = 0, s_idle = 0, s_cm = 0, s_md = 0;
    PyObject *matches = PyList_New(0), *params = PyList_New(0);
    int rc = NOT_SIMPLE;
    if (!matches || !params) {
        rc = -1;
        goto done;
    }
    rd_t body = te;
    while ((st = rd_tag(&body, &f, &wt)) == 1) {
        if (f == 1 && wt == 0 && !s_tid) {
            if (rd_varint(&body, &u) < 0 || u > 0xffffffffu)
                goto done;
            table_id = (uint32_t)u;
            s_tid = 1;
        } else if (f == 2 && wt == 2) {
            rd_t sub;
            PyObject *item;
            int r2;
            if (rd_sub(&body, &sub) < 0)
                goto done;
            r2 = field_match(&sub, &item);
            if (r2) {
                rc = r2;
                goto done;
            }
            r2 = PyList_Append(matches, item);
            Py_DECREF(item);
            if (r2 < 0) {
                rc = -1;
                goto done;
            }
        } else if (f == 3 && wt == 2 && !s_act) {
            if (rd_sub(&body, &act) < 0)
                goto done;
            s_act = 1;
        } else if (f == 4 && wt == 0 && !s_prio) {
            if (rd_varint(&body, &u) < 0)
                goto done;
            priority = (int32_t)(uint32_t)u;       /* int32 on the wire */
            s_prio = 1;
        } else if (f == 5 && wt == 0 && !s_cm) {   /* controller_metadata: kept as written */
            if (rd_varint(&body, &u) < 0)
                goto done;
            s_cm = 1;
        } else if (f == 9 && wt == 0 && !s_idle) {
            if (rd_varint(&body, &u) < 0)
                goto done;
            idle = (int64_t)u;
            s_idle = 1;
        } else if (f == 11 && wt == 2 && !s_md) {  /* metadata: kept as written */
            rd_t sub;
            if (rd_sub(&body, &sub) < 0)
                goto done;
            s_md = 1;
        } else {
            goto done;      /* meter/counter data, default or const flags, unknown */
        }
    }
    if (st < 0)
        goto done;
    if (s_act) {                /* no action: action_id 0 (a DELETE needs none) */
        rc = table_action(&act, &action_id, params);
        if (rc)
            goto done;
    }
    {
        PyObject *mt = PyList_AsTuple(matches), *pt = PyList_AsTuple(params);
        if (!mt || !pt) {
            Py_XDECREF(mt);
            Py_XDECREF(pt);
            rc = -1;
            goto done;
        }
        *out = Py_BuildValue("(iILLINNy#i)", (int)type, table_id, (long long)priority,
                             (long long)idle, action_id, mt, pt, (const char *)te.p,
                             (Py_ssize_t)(te.end - te.p), s_cm || s_md);
        rc = *out ? 0 : -1;
    }
done:
    Py_XDECREF(matches);
    Py_XDECREF(params);
    return rc;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer buf;
    PyObject *spans;
    if (!PyArg_ParseTuple(args, "y*O!", &buf, &PyList_Type, &spans))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(spans);
    PyObject *out = PyList_New(n);
    if (!out)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t s, e;
        PyObject *item = NULL;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(spans, i), "nn", &s, &e))
            goto fail;
        if (s < 0 || e < s || e > buf.len) {
            PyErr_SetString(PyExc_ValueError, "span outside the data");
            goto fail;
        }
        int rc = update((const unsigned char *)buf.buf + s, (const unsigned char *)buf.buf + e,
                        &item);
        if (rc < 0)
            goto fail;
        if (rc == NOT_SIMPLE) {
            item = Py_None;
            Py_INCREF(item);
        }
        PyList_SET_ITEM(out, i, item);
    }
    PyBuffer_Release(&buf);
    return out;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&buf);
    return NULL;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS,
     "decode(data, spans) -> per span a tuple of a plain table-entry Update, or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT, P4_MODNAME_STR, NULL, -1, methods};

PyMODINIT_FUNC P4_PYINIT(void) {
    K_EXACT = PyUnicode_InternFromString("exact");
    K_LPM = PyUnicode_InternFromString("lpm");
    K_TERNARY = PyUnicode_InternFromString("ternary");
    K_RANGE = PyUnicode_InternFromString("range");
    K_OPTIONAL = PyUnicode_InternFromString("optional");
    if (!K_EXACT || !K_LPM || !K_TERNARY || !K_RANGE || !K_OPTIONAL)
        return NULL;
    return PyModule_Create(&moddef);
}
