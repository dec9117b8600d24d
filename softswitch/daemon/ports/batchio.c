/* Batched AF_PACKET I/O for softswitch's port loop: recvmmsg/sendmmsg, one system call
 * and one trip from Python to C per burst instead of per frame; the switch's own
 * sockets read through a receive ring instead (ring_open/ring_recv, below).
 *
 * Built at first use by softswitch/daemon/ports/batchio.py through the fast path's compiler
 * cache (softswitch/fastpath/build.py), which defines P4_MODNAME_STR and P4_PYINIT.
 * The receive side does what afpacket.RawPort.receive does frame by frame: frames the
 * socket sees leaving the interface (PACKET_OUTGOING) are skipped, and an 802.1Q tag the
 * kernel moved into PACKET_AUXDATA is put back, so the pipeline sees the wire frame.
 * The GIL is held throughout: the sockets are non-blocking, and the static buffers are
 * only touched by the port loop's thread (receive) or under the device lock (send).
 * Only wait_ready blocks, and it lets the GIL go while it does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <linux/if_packet.h>

#define BATCH 32
#define SLOT (65536 + 4 + 4)          /* MAX_FRAME, room to re-insert a VLAN tag */
#define CTRL 256

static unsigned char rx_buf[BATCH][SLOT];
static unsigned char rx_ctrl[BATCH][CTRL];
static struct mmsghdr rx_msgs[BATCH];
static struct iovec rx_iov[BATCH];
static struct sockaddr_ll rx_addr[BATCH];

/* The wire frame of ``len`` bytes at ``data`` whose 802.1Q tag the kernel took out
 * (``status``: its TP_STATUS_VLAN_* bits say whether there was one, and its TPID). */
static PyObject *wire_frame(const unsigned char *data, size_t len, unsigned status,
                            unsigned tpid, unsigned tci) {
    if (!(status & TP_STATUS_VLAN_VALID) || len < 12)
        return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)len);
    if (!(status & TP_STATUS_VLAN_TPID_VALID))
        tpid = 0x8100;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(len + 4));
    if (!out)
        return NULL;
    unsigned char *o = (unsigned char *)PyBytes_AS_STRING(out);
    memcpy(o, data, 12);
    o[12] = tpid >> 8; o[13] = tpid & 0xff;
    o[14] = tci >> 8; o[15] = tci & 0xff;
    memcpy(o + 16, data + 12, len - 12);
    return out;
}

static PyObject *frame_of(int i, size_t len) {
    struct msghdr *mh = &rx_msgs[i].msg_hdr;
    struct cmsghdr *c;
    for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_PACKET || c->cmsg_type != PACKET_AUXDATA
            || c->cmsg_len < CMSG_LEN(sizeof(struct tpacket_auxdata)))
            continue;
        struct tpacket_auxdata aux;
        memcpy(&aux, CMSG_DATA(c), sizeof aux);
        return wire_frame(rx_buf[i], len, aux.tp_status, aux.tp_vlan_tpid, aux.tp_vlan_tci);
    }
    return wire_frame(rx_buf[i], len, 0, 0, 0);
}

/* Message i's buffers, ready for recvmsg/recvmmsg. */
static void rx_prepare(int i) {
    rx_iov[i].iov_base = rx_buf[i];
    rx_iov[i].iov_len = SLOT - 4;
    memset(&rx_msgs[i].msg_hdr, 0, sizeof(struct msghdr));
    rx_msgs[i].msg_hdr.msg_iov = &rx_iov[i];
    rx_msgs[i].msg_hdr.msg_iovlen = 1;
    rx_msgs[i].msg_hdr.msg_name = &rx_addr[i];
    rx_msgs[i].msg_hdr.msg_namelen = sizeof(struct sockaddr_ll);
    rx_msgs[i].msg_hdr.msg_control = rx_ctrl[i];
    rx_msgs[i].msg_hdr.msg_controllen = CTRL;
}

/* The kernel's receive time (SO_TIMESTAMPNS) of message i, in ns; 0 when absent. */
static long long stamp_of(int i) {
    struct msghdr *mh = &rx_msgs[i].msg_hdr;
    struct cmsghdr *c;
    for (c = CMSG_FIRSTHDR(mh); c != NULL; c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS
            && c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(c), sizeof ts);
            return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        }
    }
    return 0;
}

/* recv_batch(fd, max[, stamps]) -> list of frames (empty when nothing is pending);
 * with stamps true, (frame, receive time in ns) pairs, for a socket with SO_TIMESTAMPNS
 * on (benchmarks measuring latency) */
static PyObject *recv_batch(PyObject *self, PyObject *args) {
    int fd, max, stamps = 0;
    if (!PyArg_ParseTuple(args, "ii|p", &fd, &max, &stamps))
        return NULL;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    while (max > 0) {
        int want = max < BATCH ? max : BATCH;
        for (int i = 0; i < want; i++)
            rx_prepare(i);
        int n = recvmmsg(fd, rx_msgs, (unsigned)want, MSG_DONTWAIT, NULL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                break;
            Py_DECREF(out);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        for (int i = 0; i < n; i++) {
            if (rx_addr[i].sll_pkttype == PACKET_OUTGOING)
                continue;
            PyObject *f = frame_of(i, rx_msgs[i].msg_len);
            if (f && stamps)
                f = Py_BuildValue("(NL)", f, stamp_of(i));
            if (!f || PyList_Append(out, f) < 0) {
                Py_XDECREF(f);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(f);
        }
        max -= n;
        if (n < want)
            break;
    }
    return out;
}

/* ---- the receive ring: PACKET_RX_RING, TPACKET_V2 -----------------------------------
 * recvmmsg costs the port loop a system call per burst and, per frame, the socket
 * queue's lock, a copy out of the skb, the address and the ancillary data: more than
 * the compiled pipeline costs for a simple program. With a ring the kernel copies each
 * frame into a slot of memory shared with us as it delivers it (on the sender's CPU),
 * and reading a burst is a walk over the slots. TPACKET_V2, not V3:
 * V3 hands frames over a block at a time (when it fills, or after a timeout of a
 * millisecond or more), which would delay urgent frames; V2 hands each frame over at
 * once. A frame bigger than a slot (the MTU raised after the port was opened) keeps
 * its slot truncated and marked TP_STATUS_COPY, and a full copy goes to the socket's
 * ordinary queue (PACKET_COPY_THRESH): it is read from there, whole. */
#define RING_CAPSULE "softswitch.batchio.ring"
#define RING_BLOCK (64 * 1024)

typedef struct {
    int fd;
    unsigned char *map;
    size_t len;
    unsigned frame_size, frame_nr, head;
    unsigned long long truncated;   /* frames cut to a slot with no copy to read */
} rx_ring;

static void ring_free(PyObject *cap) {
    rx_ring *r = (rx_ring *)PyCapsule_GetPointer(cap, RING_CAPSULE);
    if (r) {
        if (r->map)
            munmap(r->map, r->len);
        free(r);
    }
}

/* ring_open(fd, frame_size, frames) -> ring: fd's receive ring of ``frames`` slots of
 * ``frame_size`` bytes (a power of two >= 2048), set up before fd is bound so no frame
 * lands in the ordinary queue first. The ring is unmapped when the object goes. */
static PyObject *ring_open(PyObject *self, PyObject *args) {
    int fd;
    unsigned frame_size, frames;
    if (!PyArg_ParseTuple(args, "iII", &fd, &frame_size, &frames))
        return NULL;
    if (frame_size < 2048 || (frame_size & (frame_size - 1)) || frames == 0) {
        PyErr_SetString(PyExc_ValueError,
                        "ring_open: frame_size must be a power of two >= 2048, frames > 0");
        return NULL;
    }
    unsigned per_block = frame_size >= RING_BLOCK ? 1 : RING_BLOCK / frame_size;
    unsigned blocks = (frames + per_block - 1) / per_block;
    struct tpacket_req req = {
        .tp_block_size = per_block * frame_size, .tp_block_nr = blocks,
        .tp_frame_size = frame_size, .tp_frame_nr = blocks * per_block};
    int version = TPACKET_V2, copy = 1;
    if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0
        || setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    size_t len = (size_t)req.tp_block_size * req.tp_block_nr;
    void *map = MAP_FAILED;
    rx_ring *r = NULL;
    if (setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &copy, sizeof copy) < 0
        || (map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED
        || (r = (rx_ring *)calloc(1, sizeof *r)) == NULL) {
        /* the ring goes again: frames must not land where nobody reads them (the
         * caller then reads the socket with recvmmsg) */
        int err = r == NULL && map != MAP_FAILED ? ENOMEM : errno;
        if (map != MAP_FAILED)
            munmap(map, len);
        struct tpacket_req none = {0, 0, 0, 0};
        setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &none, sizeof none);
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    r->fd = fd;
    r->map = (unsigned char *)map;
    r->len = len;
    r->frame_size = frame_size;
    r->frame_nr = req.tp_frame_nr;
    PyObject *cap = PyCapsule_New(r, RING_CAPSULE, ring_free);
    if (!cap) {
        munmap(map, len);
        free(r);
    }
    return cap;
}

/* The whole frame behind a TP_STATUS_COPY slot, from the socket's ordinary queue;
 * NULL with no exception when it is not there (the copy could not be queued). */
static PyObject *ring_copied(int fd) {
    rx_prepare(0);
    ssize_t n = recvmsg(fd, &rx_msgs[0].msg_hdr, MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return NULL;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return frame_of(0, (size_t)n);
}

/* One slot's frame (NULL with no exception: none to deliver). */
static PyObject *ring_frame(rx_ring *r, struct tpacket2_hdr *h, unsigned status) {
    const struct sockaddr_ll *sll = (const struct sockaddr_ll *)
        ((const unsigned char *)h + TPACKET_ALIGN(sizeof(struct tpacket2_hdr)));
    if (status & TP_STATUS_COPY)
        return ring_copied(r->fd);
    if (sll->sll_pkttype == PACKET_OUTGOING)
        return NULL;
    if (h->tp_len > h->tp_snaplen) {
        r->truncated++;
        return NULL;
    }
    return wire_frame((const unsigned char *)h + h->tp_mac, h->tp_snaplen, status,
                      h->tp_vlan_tpid, h->tp_vlan_tci);
}

/* ring_recv(ring, max) -> list of frames: what recv_batch gives, from the ring. */
static PyObject *ring_recv(PyObject *self, PyObject *args) {
    PyObject *cap;
    int max;
    if (!PyArg_ParseTuple(args, "Oi", &cap, &max))
        return NULL;
    rx_ring *r = (rx_ring *)PyCapsule_GetPointer(cap, RING_CAPSULE);
    if (!r)
        return NULL;
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    while (PyList_GET_SIZE(out) < max) {
        struct tpacket2_hdr *h = (struct tpacket2_hdr *)(r->map + (size_t)r->head * r->frame_size);
        unsigned status = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);
        if (!(status & TP_STATUS_USER))
            break;
        PyObject *f = ring_frame(r, h, status);
        __atomic_store_n(&h->tp_status, TP_STATUS_KERNEL, __ATOMIC_RELEASE);
        r->head = r->head + 1 == r->frame_nr ? 0 : r->head + 1;
        if (f == NULL) {
            if (PyErr_Occurred()) {
                Py_DECREF(out);
                return NULL;
            }
            continue;
        }
        int bad = PyList_Append(out, f);
        Py_DECREF(f);
        if (bad) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

/* ring_truncated(ring) -> frames dropped because they did not fit a slot */
static PyObject *ring_truncated(PyObject *self, PyObject *cap) {
    rx_ring *r = (rx_ring *)PyCapsule_GetPointer(cap, RING_CAPSULE);
    return r ? PyLong_FromUnsignedLongLong(r->truncated) : NULL;
}

/* send_batch(fd, frames) -> number the kernel accepted; a frame it refuses (too short,
 * link down, buffer full) is skipped, as RawPort.send reports False for it */
static PyObject *send_batch(PyObject *self, PyObject *args) {
    int fd;
    PyObject *seq;
    if (!PyArg_ParseTuple(args, "iO", &fd, &seq))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "send_batch needs a sequence of bytes");
    if (!fast)
        return NULL;
    Py_ssize_t total = PySequence_Fast_GET_SIZE(fast);
    PyObject **items = PySequence_Fast_ITEMS(fast);
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    Py_ssize_t sent = 0, at = 0;
    while (at < total) {
        int k = 0;
        for (; k < BATCH && at + k < total; k++) {
            PyObject *b = items[at + k];
            if (!PyBytes_Check(b)) {
                Py_DECREF(fast);
                PyErr_SetString(PyExc_TypeError, "send_batch: frames must be bytes");
                return NULL;
            }
            iov[k].iov_base = PyBytes_AS_STRING(b);
            iov[k].iov_len = (size_t)PyBytes_GET_SIZE(b);
            memset(&msgs[k].msg_hdr, 0, sizeof(struct msghdr));
            msgs[k].msg_hdr.msg_iov = &iov[k];
            msgs[k].msg_hdr.msg_iovlen = 1;
        }
        int n = sendmmsg(fd, msgs, (unsigned)k, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            n = 0;
            at += 1;                   /* the first frame was refused: skip it */
        }
        sent += n;
        at += n;
    }
    Py_DECREF(fast);
    return PyLong_FromSsize_t(sent);
}

/* wait_ready(fds, timeout_s[, spin_s]) -> indexes of the fds ready to read ([] at the
 * timeout; timeout_s < 0: no timeout). ppoll counts in nanoseconds where epoll counts in
 * milliseconds: the port loop times departures with it (a link rate's frames are
 * tens of microseconds apart). spin_s > 0: poll without sleeping for up to that long
 * (or the timeout, if sooner) before sleeping: a sleeping CPU takes a while to wake (a
 * virtual machine's longer still), a polling one none, which is worth a CPU the caller
 * has alone (the port loop's --dataplane-cpu). */
#define MAX_WAIT_FDS 1024
static double monotonic_s(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* ppoll without sleeping until an fd is ready (its result) or spin_s has passed (0). */
static int poll_spinning(struct pollfd *fds, nfds_t n, double spin_s) {
    struct timespec zero = {0, 0};
    double until = monotonic_s() + spin_s;
    int rc;
    while ((rc = ppoll(fds, n, &zero, NULL)) == 0 && monotonic_s() < until)
        ;
    return rc;
}

static PyObject *wait_ready(PyObject *self, PyObject *args) {
    PyObject *seq;
    double timeout_s, spin_s = 0.0;
    if (!PyArg_ParseTuple(args, "Od|d", &seq, &timeout_s, &spin_s))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "wait_ready needs a sequence of file descriptors");
    if (!fast)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
    if (n > MAX_WAIT_FDS) {
        Py_DECREF(fast);
        PyErr_SetString(PyExc_ValueError, "wait_ready: more than 1024 file descriptors");
        return NULL;
    }
    struct pollfd fds[MAX_WAIT_FDS];
    for (Py_ssize_t i = 0; i < n; i++) {
        long fd = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (fd == -1 && PyErr_Occurred()) {
            Py_DECREF(fast);
            return NULL;
        }
        fds[i].fd = (int)fd;
        fds[i].events = POLLIN;
        fds[i].revents = 0;
    }
    Py_DECREF(fast);
    if (spin_s > 0 && timeout_s >= 0 && spin_s > timeout_s)
        spin_s = timeout_s;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = spin_s > 0 ? poll_spinning(fds, (nfds_t)n, spin_s) : 0;
    if (rc == 0) {               /* the rest of the timeout, asleep (or one last look) */
        if (timeout_s > 0 && (timeout_s -= spin_s) < 0)
            timeout_s = 0;
        struct timespec ts, *tsp = NULL;
        if (timeout_s >= 0) {
            ts.tv_sec = (time_t)timeout_s;
            ts.tv_nsec = (long)((timeout_s - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        rc = ppoll(fds, (nfds_t)n, tsp, NULL);
    }
    Py_END_ALLOW_THREADS
    if (rc < 0 && errno != EINTR)
        return PyErr_SetFromErrno(PyExc_OSError);
    PyObject *ready = PyList_New(0);
    if (!ready)
        return NULL;
    for (Py_ssize_t i = 0; rc > 0 && i < n; i++) {
        if (!fds[i].revents)
            continue;
        PyObject *index = PyLong_FromSsize_t(i);
        if (!index || PyList_Append(ready, index) < 0) {
            Py_XDECREF(index);
            Py_DECREF(ready);
            return NULL;
        }
        Py_DECREF(index);
    }
    return ready;
}

static PyMethodDef methods[] = {
    {"recv_batch", recv_batch, METH_VARARGS,
     "recv_batch(fd, max[, stamps]) -> [frame, ...] or [(frame, ns), ...]"},
    {"send_batch", send_batch, METH_VARARGS, "send_batch(fd, frames) -> frames accepted"},
    {"ring_open", ring_open, METH_VARARGS,
     "ring_open(fd, frame_size, frames) -> a receive ring on fd (TPACKET_V2)"},
    {"ring_recv", ring_recv, METH_VARARGS, "ring_recv(ring, max) -> [frame, ...]"},
    {"ring_truncated", ring_truncated, METH_O,
     "ring_truncated(ring) -> frames dropped for not fitting a slot"},
    {"wait_ready", wait_ready, METH_VARARGS,
     "wait_ready(fds, timeout_s[, spin_s]) -> indexes ready to read (timeout_s < 0: none)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, P4_MODNAME_STR, NULL, -1, methods};

PyMODINIT_FUNC P4_PYINIT(void) { return PyModule_Create(&module); }
