/* lazycv.backends._bands: the CPU backend's bands of rows on native threads.
 *
 * The CPU backend runs a big kernel (or copy) as bands of rows, one per core. On Python
 * threads each band's start must take the GIL to call into the compiled kernel, so on a
 * many-core host the bands start one after another (about 35 µs apart on the H200 host's 16
 * cores: the last one 0.5 ms after the first, bench/RESULTS.md run 62). Here the bands run on a
 * pool of native threads that never touch Python: the caller releases the GIL, hands the job
 * over, takes bands itself and waits for the rest.
 *
 * A job is a C function of the form ``void band(int64 y0, int64 y1, int64 *P, double *F)``: a
 * numba ``cfunc`` wrapper of a generated kernel (backends/cpu_native.py), or this module's row
 * copy. ``P`` and ``F`` hold the kernel's arguments, packed here from Python objects by kind.
 *
 *   run(address, rows, bands, codes: bytes, formats: tuple, args: tuple) -> True, or None
 *       where an argument is not what the wrapper was built for (nothing run); formats: an
 *       array's buffer format, or the types a scalar may have
 *   copy(dst, src, bands) -> True, or None where the copy is not two 2-D buffers of one shape
 *       and type with contiguous rows (nothing copied)
 *
 * One job runs at a time; a caller that finds the pool busy (another thread's flush) runs its
 * bands on its own thread. A forked child starts a new pool.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

typedef void (*band_fn)(int64_t y0, int64_t y1, int64_t *P, double *F);

#define MAX_THREADS 256
#define MAX_SLOTS 512

typedef struct {
    band_fn fn;
    int64_t *P;
    double *F;
    int64_t rows, step;
    long bands, gen;
    long next, finished, active;         /* next and finished: atomics; active: under POOL.m */
} Job;

static struct {
    pthread_mutex_t busy;                 /* held by the job's caller */
    pthread_mutex_t m;
    pthread_cond_t go, done;
    Job *job;
    long gen;
    int threads;
    pid_t pid;
} POOL = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
          PTHREAD_COND_INITIALIZER, NULL, 0, 0, 0};

/* Take bands of ``j`` until none is left. */
static void work_on(Job *j) {
    long b;
    while ((b = __atomic_fetch_add(&j->next, 1, __ATOMIC_ACQ_REL)) < j->bands) {
        int64_t y0 = b * j->step, y1 = y0 + j->step < j->rows ? y0 + j->step : j->rows;
        j->fn(y0, y1, j->P, j->F);
        __atomic_fetch_add(&j->finished, 1, __ATOMIC_ACQ_REL);
    }
}

static void *worker(void *unused) {
    long seen = 0;
    pthread_mutex_lock(&POOL.m);
    for (;;) {
        while (POOL.job == NULL || POOL.job->gen == seen)
            pthread_cond_wait(&POOL.go, &POOL.m);
        Job *j = POOL.job;
        seen = j->gen;
        j->active++;
        pthread_mutex_unlock(&POOL.m);
        work_on(j);
        pthread_mutex_lock(&POOL.m);
        j->active--;
        pthread_cond_broadcast(&POOL.done);
    }
    return NULL;
}

/* The pool has at least ``want`` workers (fewer where threads cannot be made); a forked child
 * forgets its parent's. Called with POOL.busy held. */
static void grow(int want) {
    pid_t pid = getpid();
    if (POOL.pid != pid) {
        pthread_mutex_init(&POOL.m, NULL);
        pthread_cond_init(&POOL.go, NULL);
        pthread_cond_init(&POOL.done, NULL);
        POOL.job = NULL;
        POOL.threads = 0;
        POOL.pid = pid;
    }
    if (want > MAX_THREADS)
        want = MAX_THREADS;
    while (POOL.threads < want) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int err = pthread_create(&t, &attr, worker, NULL);
        pthread_attr_destroy(&attr);
        if (err)
            break;
        POOL.threads++;
    }
}

/* Runs ``fn`` over rows [0, rows) in ``bands`` bands, the GIL released. */
static void run_job(band_fn fn, int64_t *P, double *F, int64_t rows, long bands) {
    if (bands < 1)
        bands = 1;
    Job j = {fn, P, F, rows, (rows + bands - 1) / bands, bands, 0, 0, 0, 0};
    Py_BEGIN_ALLOW_THREADS
    if (bands == 1 || pthread_mutex_trylock(&POOL.busy) != 0) {
        work_on(&j);                              /* (one band, or the pool is another's now) */
    } else {
        grow((int)bands - 1);
        pthread_mutex_lock(&POOL.m);
        j.gen = ++POOL.gen;
        POOL.job = &j;
        pthread_cond_broadcast(&POOL.go);
        pthread_mutex_unlock(&POOL.m);
        work_on(&j);
        pthread_mutex_lock(&POOL.m);
        while (__atomic_load_n(&j.finished, __ATOMIC_ACQUIRE) < j.bands || j.active > 0)
            pthread_cond_wait(&POOL.done, &POOL.m);
        POOL.job = NULL;
        pthread_mutex_unlock(&POOL.m);
        pthread_mutex_unlock(&POOL.busy);
    }
    Py_END_ALLOW_THREADS
}

/* ------------------------------------------------------------------ a kernel's bands */
/* Whether ``v``'s type is one of the tuple ``types`` (exactly: a subclass would type otherwise). */
static int one_of(PyObject *v, PyObject *types) {
    if (!PyTuple_Check(types))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(types); i++)
        if ((PyObject *)Py_TYPE(v) == PyTuple_GET_ITEM(types, i))
            return 1;
    return 0;
}

/* An argument by its code: 'i' an integer into P, 'f' a float into F, each of one of the types
 * in formats[k] (those numba types as the kernel's parameter); '1'..'3' a C-contiguous array of
 * that many dimensions whose buffer format is formats[k]: its address, then its shape, into P.
 * 0 when an argument is not that (the caller's other path runs it). */
static int pack(PyObject *codes, PyObject *formats, PyObject *args, int64_t *P, double *F,
                Py_ssize_t *np_, Py_ssize_t *nf_) {
    Py_ssize_t n = PyBytes_GET_SIZE(codes), np = 0, nf = 0;
    const char *code = PyBytes_AS_STRING(codes);
    if (PyTuple_GET_SIZE(args) != n || PyTuple_GET_SIZE(formats) != n)
        return 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *v = PyTuple_GET_ITEM(args, k);
        if (code[k] == 'i') {
            if (!one_of(v, PyTuple_GET_ITEM(formats, k)) || np >= MAX_SLOTS)
                return 0;
            PyObject *index = PyNumber_Index(v);
            long long q = index != NULL ? PyLong_AsLongLong(index) : -1;
            Py_XDECREF(index);
            if (q == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            P[np++] = q;
        } else if (code[k] == 'f') {
            if (!one_of(v, PyTuple_GET_ITEM(formats, k)) || nf >= MAX_SLOTS)
                return 0;
            double d = PyFloat_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                return 0;
            }
            F[nf++] = d;
        } else {
            int nd = code[k] - '0';
            Py_buffer view;
            if (nd < 1 || nd > 3 || np + 1 + nd > MAX_SLOTS)
                return 0;
            if (PyObject_GetBuffer(v, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
                PyErr_Clear();
                return 0;
            }
            const char *want = PyUnicode_AsUTF8(PyTuple_GET_ITEM(formats, k));
            int ok = view.ndim == nd && view.format != NULL && want != NULL && strcmp(view.format, want) == 0;
            if (want == NULL)
                PyErr_Clear();
            if (ok) {
                P[np++] = (int64_t)(intptr_t)view.buf;
                for (int d = 0; d < nd; d++)
                    P[np++] = view.shape[d];
            }
            PyBuffer_Release(&view);
            if (!ok)
                return 0;
        }
    }
    *np_ = np;
    *nf_ = nf;
    return 1;
}

static PyObject *run(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6 || !PyBytes_Check(args[3]) || !PyTuple_Check(args[4]) || !PyTuple_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "run(address, rows, bands, codes: bytes, formats: tuple, args: tuple)");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]);
    long long rows = PyLong_AsLongLong(args[1]);
    long bands = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (fn == NULL || rows < 0) {
        PyErr_SetString(PyExc_ValueError, "run: no function, or rows < 0");
        return NULL;
    }
    int64_t P[MAX_SLOTS];
    double F[MAX_SLOTS];
    Py_ssize_t np, nf;
    if (!pack(args[3], args[4], args[5], P, F, &np, &nf))
        Py_RETURN_NONE;
    if (rows > 0)
        run_job((band_fn)fn, P, F, rows, bands);
    Py_RETURN_TRUE;
}

/* ------------------------------------------------------------------ a copy's bands */
/* P: dst, dst row pitch, src, src row pitch, bytes a row */
static void copy_band(int64_t y0, int64_t y1, int64_t *P, double *F) {
    char *dst = (char *)(intptr_t)P[0], *src = (char *)(intptr_t)P[2];
    for (int64_t y = y0; y < y1; y++)
        memcpy(dst + y * P[1], src + y * P[3], (size_t)P[4]);
}

static PyObject *copy(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "copy(dst, src, bands)");
        return NULL;
    }
    long bands = PyLong_AsLong(args[2]);
    if (bands == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer d, s;
    if (PyObject_GetBuffer(args[0], &d, PyBUF_RECORDS) < 0) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (PyObject_GetBuffer(args[1], &s, PyBUF_RECORDS_RO) < 0) {
        PyErr_Clear();
        PyBuffer_Release(&d);
        Py_RETURN_NONE;
    }
    int ok = d.ndim == 2 && s.ndim == 2 && d.shape[0] == s.shape[0] && d.shape[1] == s.shape[1] &&
        d.itemsize == s.itemsize && d.format != NULL && s.format != NULL && strcmp(d.format, s.format) == 0 &&
        d.strides[1] == d.itemsize && s.strides[1] == s.itemsize && d.strides[0] > 0 && s.strides[0] > 0;
    if (ok) {                             /* (rows that overlap in memory: numpy's copy handles them) */
        char *d0 = (char *)d.buf, *d1 = d0 + (d.shape[0] - 1) * d.strides[0] + d.shape[1] * d.itemsize;
        char *s0 = (char *)s.buf, *s1 = s0 + (s.shape[0] - 1) * s.strides[0] + s.shape[1] * s.itemsize;
        ok = d1 <= s0 || s1 <= d0;
    }
    if (ok) {
        int64_t P[5] = {(int64_t)(intptr_t)d.buf, d.strides[0], (int64_t)(intptr_t)s.buf, s.strides[0],
                        d.shape[1] * d.itemsize};
        run_job(copy_band, P, NULL, d.shape[0], bands);
    }
    PyBuffer_Release(&d);
    PyBuffer_Release(&s);
    if (!ok)
        Py_RETURN_NONE;
    Py_RETURN_TRUE;
}

static PyObject *threads(PyObject *mod, PyObject *unused) {
    return PyLong_FromLong(POOL.pid == getpid() ? POOL.threads : 0);
}

static PyMethodDef methods[] = {
    {"run", (PyCFunction)(void (*)(void))run, METH_FASTCALL,
     "a band function over rows on the native pool, its arguments packed by kind; None where one does not fit"},
    {"copy", (PyCFunction)(void (*)(void))copy, METH_FASTCALL,
     "dst[...] = src for two 2-D buffers in bands on the native pool; None where the copy is not one it makes"},
    {"threads", threads, METH_NOARGS, "how many native worker threads this process has started"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "lazycv.backends._bands", NULL, -1, methods,
                                       NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__bands(void) {
    return PyModule_Create(&moduledef);
}
