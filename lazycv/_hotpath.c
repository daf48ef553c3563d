/* lazycv._hotpath: the per-call steps of a replayed recording in C (lazycv/recipes.py).
 *
 * A replayed cv2.cuda call computes its signature, builds one ir.Node a node and hands each
 * result out as a lazy GpuMat. In Python those three steps are most of a recorded call's
 * host time; here they are the same steps, written against the same classes (their
 * __slots__ are read and written by offset), so either implementation can run and the
 * test suite checks both (LAZYCV_HOTPATH=0 selects the Python one).
 *
 * Each function mirrors one Python function and must stay equal to it:
 *   signature(args, kw)        recipes.signature
 *   node(op, inputs, static, dyn, rows, cols, depth, cn)   ir.Node.__init__ (a new Node)
 *   lazy(cls, node)            facade.gpumat.GpuMat._lazy
 *   call(fn, args, kw)         recipes.call when the call's recipe exists (recipes.replay);
 *                              RUN where the function just runs (arguments recipes do not
 *                              cover, a signature seen the first time — noted, as
 *                              recipes._remember does — or given up on); MISS where the
 *                              Python path decides (a capture, checks, recipes off)
 * bind(...) hands over the classes, modules and objects they use once, at import.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <string.h>
#include <float.h>
#include <math.h>

/* ------------------------------------------------------------------ what bind() hands over */
static PyTypeObject *NodeT, *SourceT, *GpuMatT;
static PyObject *ir_dict, *runtime_dict, *STATE, *THREAD_PENDING_OWNER, *IR_THREAD;
static PyObject *RECORDED, *READERS, *PRUNE_READERS;
static PyObject *PLAIN;                       /* frozenset of the plain types */
static PyObject *ZERO, *NEG_ZERO;            /* ("0.0",), ("-0.0",): recipes._signed_zero */
static PyObject *INT0;
static PyTypeObject *RecipeT, *AllocT, *RecordingT;
static PyTypeObject *SingleT;                  /* program.SingleFlushProgram (run_single) and its slots */
static PyObject *SINGLE_RUN;                   /* program.RUN_IN_C: the run run_single stands in for */
static Py_ssize_t F_backend, F_binds, F_ops_fused, F_compiled, F_rows, F_cols, F_recipe, F_memo, F_shapes,
    F_slab, F_results, F_launcher;
static Py_buffer SINCE_VIEW;                   /* STATE._since, an int64 array of one: since_flush */
static long long *SINCE;
static Py_buffer SHARED_VIEW;                  /* STATE._shared, one int64: any_shared */
static long long *SHARED;

/* What every replayed call reads of the modules' settings, kept until one of their dictionaries
 * changes (settings()). */
typedef struct {
    int valid, enabled, check, multi;      /* recipes.ENABLED and CHECK, ir.MULTI_DEVICE */
    long auto_flush;                       /* runtime.AUTO_FLUSH_OPS */
    PyObject *record_on;                   /* streams.RECORD_ON (a reference) */
} Settings;
static Settings SETTINGS;
static int watch_settings(PyObject *dict);
static uint64_t local_tid;                   /* thread_attr's: the thread, and its dict of ir._THREAD */
static PyObject *local_dict;
static uint64_t pending_tid;                 /* thread_pending's: the thread, and its list */
static PyObject *pending_list;
static PyObject *recipes_dict, *streams_dict, *RECIPES, *NOTED, *MISS, *RUN, *LIMIT_NAME, *TRIES_NAME;
static Py_ssize_t P_nodes, P_results, P_many, P_func;
static Py_ssize_t A_buf, A_writers, A_constant, A_exported, A_foreign, A_cols, A_device;
static PyObject *s_OPEN, *s__GENERATIONS, *s__OPEN_PRUNE, *s_prune_open;
static PyObject *s_data, *s__SPARE, *s_seq_counted, *s_ops_recorded;
static PyObject *s_run, *s_backend, *s_buffers, *s_outputs_for, *s_ACTIVE, *s_select_mats, *s_launch, *s_computed,
    *s_launcher, *s_TAPE, *s___dict__, *s__lazycv_watched, *s_foreign_streams, *s_CURRENT, *s_kernels_launched, *s_ops_fused, *s_flushes, *s_program_hits;
static PyObject *s_ENABLED, *s_CHECK, *s_RECORD_ON, *s_any_shared, *s__value, *s_read_shared_now;
static PyObject *s_written, *s_capture, *s_threads, *s_fuse, *s_plans, *s__replays, *s_program, *s_key,
    *s_move_to_end, *s_new_recording, *s_stats, *s_plan_hits, *s__run_program,
    *s__let_go_of_history, *s__flush_planned, *ONE, *REPLAY_KEY;
static PyObject *s_name, *s_rec, *s_device, *s_pending, *s_since_flush, *s_first_seen, *s_close,
    *s_MULTI_DEVICE, *s_AUTO_FLUSH_OPS, *s_flush, *s_LIMIT;

/* slot offsets */
static Py_ssize_t N_op, N_inputs, N_static, N_dyn, N_rows, N_cols, N_depth, N_cn, N_result, N_height,
    N_seq, N_rgen, N_rpos, N_device;
static Py_ssize_t S_buf, S_rgen, S_rpos, S_y0, S_x0, S_rows, S_cols, S_depth, S_cn;
static Py_ssize_t R_objs, R_tokens, R_open, R_gen, R_bufs, R_nbufs;
static Py_ssize_t G_alloc, G_y0, G_x0, G_rows, G_cols, G_depth, G_cn, G_node, G_src, G_parent, G_views,
    G_stream;

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* every function but bind needs what bind hands over */
#define BOUND(ready) do { if (!(ready)) { PyErr_SetString(PyExc_RuntimeError, \
    "lazycv._hotpath: call bind() (and bind_recipes() for call) first"); return NULL; } } while (0)

static inline void set_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject *old = SLOT(o, off);
    Py_XINCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

/* ------------------------------------------------------------------ the cyclic GC
 * A recorded call makes a Node, its inputs tuple, a weak reference to it, its recording
 * token and a lazy GpuMat with a weak reference in the pending list. Tracked by the cyclic GC,
 * each such object counts toward the next collection, and those still pending when one runs
 * move to older generations, whose growth triggers collections of the whole process's heap
 * (bench/host_scaling.py: recording thousands of frames before a flush cost twice as much
 * per frame as hundreds). None of them can be part of a reference cycle: a Node refers to
 * its op (a registry object), its inputs (earlier Nodes and Sources, which refer only to
 * memory) and, where the replay leaves it untracked, to static and dynamic values that are
 * plain numbers, strings and tuples of them; tokens and the tuples of ints in them refer to
 * the same; weak references without a callback refer to nothing. A lazy GpuMat of such a
 * node refers to it, to plain values, to a Stream (which refers to no GpuMat), and later to
 * its memory (an Allocation, whose pending writes refer to it weakly); its views refer to
 * it, it to them only weakly. Only GpuMat.swap can hand it a parent, and tracks it again
 * (ir.TRACK). So the replay leaves them out of the GC's lists, as CPython does itself for
 * tuples of atomic values; reference counting frees them as before. A subclass of GpuMat
 * (which may have a __dict__) stays tracked. */
static int atomic(PyObject *o, int depth) {
    if (o == Py_None || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyUnicode_CheckExact(o) ||
            PyBytes_CheckExact(o) || PyBool_Check(o))
        return 1;
    if (PyTuple_CheckExact(o) && depth < 4) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(o); i++)
            if (!atomic(PyTuple_GET_ITEM(o, i), depth + 1))
                return 0;
        return 1;
    }
    return 0;
}

static inline void untrack(PyObject *o) {
    if (PyObject_IS_GC(o) && PyObject_GC_IsTracked(o))
        PyObject_GC_UnTrack(o);
}

/* ir.add_reader: ``wr`` (a weak reference to a node) joins READERS[id(buf)]; with ``as_input``
 * as Node.__init__ adds an input's reader: not twice in a row, and the list pruned each time it
 * reaches a power of two from 64 (a frame read every frame, never written) */
static PyObject *deref(PyObject *wr);

/* ir.prune_readers(buf, lst) for a list of weak references to nodes (Python decides anything
 * else): the readers that may still read ``buf`` — pending, or computed into ``buf`` — kept in
 * place of ``lst``, whose entry ``key`` leaves READERS when none is left. 0, or -1 an error. */
static int prune_readers(PyObject *buf, PyObject *lst, PyObject *key) {
    Py_ssize_t n = PyList_GET_SIZE(lst);
    PyObject *live = PyList_New(0);
    if (live == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *wr = PyList_GET_ITEM(lst, i);
        PyObject *nd = PyWeakref_CheckRef(wr) ? deref(wr) : NULL;
        PyObject *res = nd != NULL && Py_TYPE(nd) == NodeT ? SLOT(nd, N_result) : NULL;
        if (!PyWeakref_CheckRef(wr) || (nd != NULL && Py_TYPE(nd) != NodeT) ||
                (res != NULL && res != Py_None && Py_TYPE(res) != SourceT)) {
            Py_XDECREF(nd);
            Py_DECREF(live);
            PyObject *r = PyObject_CallFunctionObjArgs(PRUNE_READERS, buf, lst, NULL);
            Py_XDECREF(r);
            return r == NULL ? -1 : 0;
        }
        int reads = nd != NULL && (res == NULL || res == Py_None || SLOT(res, S_buf) == buf);
        Py_XDECREF(nd);
        if (reads && PyList_Append(live, wr) < 0) {
            Py_DECREF(live);
            return -1;
        }
    }
    int r = PyList_GET_SIZE(live) ? PyList_SetSlice(lst, 0, n, live) : PyDict_DelItem(READERS, key);
    Py_DECREF(live);
    return r;
}

static int add_reader(PyObject *buf, PyObject *wr, int as_input) {
    PyObject *key = PyLong_FromVoidPtr(buf);
    if (key == NULL)
        return -1;
    PyObject *lst = PyDict_GetItemWithError(READERS, key);     /* borrowed */
    if (lst == NULL) {
        PyObject *fresh = PyErr_Occurred() ? NULL : PyList_New(1);
        int r = -1;
        if (fresh != NULL) {
            Py_INCREF(wr);
            PyList_SET_ITEM(fresh, 0, wr);
            r = PyDict_SetItem(READERS, key, fresh);
            Py_DECREF(fresh);
        }
        Py_DECREF(key);
        return r;
    }
    Py_ssize_t len = PyList_GET_SIZE(lst);
    if (as_input && len > 0 && PyList_GET_ITEM(lst, len - 1) == wr) {
        Py_DECREF(key);
        return 0;
    }
    Py_INCREF(lst);
    int r = PyList_Append(lst, wr);
    len += 1;
    if (r == 0 && as_input && len >= 64 && !(len & (len - 1)))
        r = prune_readers(buf, lst, key);
    Py_DECREF(lst);
    Py_DECREF(key);
    return r;
}

/* set_slot taking the reference */
static inline void put_slot(PyObject *o, Py_ssize_t off, PyObject *v) {
    PyObject *old = SLOT(o, off);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

static Py_ssize_t offset_of(PyObject *type, const char *name) {
    PyObject *d = PyObject_GetAttrString(type, name);
    if (d == NULL)
        return -1;
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "lazycv._hotpath: %s is not a slot", name);
        Py_DECREF(d);
        return -1;
    }
    Py_ssize_t off = ((PyMemberDescrObject *)d)->d_member->offset;
    Py_DECREF(d);
    return off;
}

#define OFF(var, type, name) do { if ((var = offset_of((PyObject *)(type), name)) < 0) return NULL; } while (0)

/* STATE.<name>, an int64 array of one, read and written in place through ``*at`` (the view
 * of an earlier bind let go first). 0, or -1 an error. */
static int int64_of(const char *name, Py_buffer *view, long long **at) {
    if (*at != NULL) {
        PyBuffer_Release(view);
        *at = NULL;
    }
    PyObject *arr = PyObject_GetAttrString(STATE, name);
    int bad = arr == NULL || PyObject_GetBuffer(arr, view, PyBUF_WRITABLE | PyBUF_FORMAT) < 0;
    Py_XDECREF(arr);
    if (bad)
        return -1;
    if (view->itemsize != 8 || view->len < 8 || view->format == NULL || strcmp(view->format, "q") != 0) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "lazycv._hotpath.bind: runtime.STATE.%s is not an int64 array", name);
        return -1;
    }
    *at = (long long *)view->buf;
    return 0;
}

static PyObject *bind(PyObject *mod, PyObject *args) {
    PyObject *node_t, *source_t, *gpumat_t, *rec_t, *ir_mod, *runtime_mod, *plain;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &node_t, &source_t, &gpumat_t, &rec_t, &ir_mod, &runtime_mod, &plain))
        return NULL;
    NodeT = (PyTypeObject *)node_t; SourceT = (PyTypeObject *)source_t; GpuMatT = (PyTypeObject *)gpumat_t;
    Py_INCREF(node_t); Py_INCREF(source_t); Py_INCREF(gpumat_t);
    OFF(N_op, node_t, "op"); OFF(N_inputs, node_t, "inputs"); OFF(N_static, node_t, "static");
    OFF(N_dyn, node_t, "dyn"); OFF(N_rows, node_t, "rows"); OFF(N_cols, node_t, "cols");
    OFF(N_depth, node_t, "depth"); OFF(N_cn, node_t, "cn"); OFF(N_result, node_t, "result");
    OFF(N_height, node_t, "height"); OFF(N_seq, node_t, "seq"); OFF(N_rgen, node_t, "rgen");
    OFF(N_rpos, node_t, "rpos"); OFF(N_device, node_t, "device");
    OFF(S_buf, source_t, "buf"); OFF(S_rgen, source_t, "rgen"); OFF(S_rpos, source_t, "rpos");
    OFF(S_y0, source_t, "y0"); OFF(S_x0, source_t, "x0"); OFF(S_rows, source_t, "rows"); OFF(S_cols, source_t, "cols");
    OFF(S_depth, source_t, "depth"); OFF(S_cn, source_t, "cn");
    OFF(R_objs, rec_t, "objs"); OFF(R_tokens, rec_t, "tokens"); OFF(R_open, rec_t, "open"); OFF(R_gen, rec_t, "gen");
    OFF(R_bufs, rec_t, "bufs"); OFF(R_nbufs, rec_t, "nbufs");
    Py_XDECREF(RecordingT);
    RecordingT = (PyTypeObject *)rec_t;
    Py_INCREF(rec_t);
    OFF(G_alloc, gpumat_t, "_alloc"); OFF(G_y0, gpumat_t, "_y0"); OFF(G_x0, gpumat_t, "_x0");
    OFF(G_rows, gpumat_t, "_rows"); OFF(G_cols, gpumat_t, "_cols"); OFF(G_depth, gpumat_t, "_depth");
    OFF(G_cn, gpumat_t, "_cn"); OFF(G_node, gpumat_t, "_node"); OFF(G_src, gpumat_t, "_src");
    OFF(G_parent, gpumat_t, "_parent"); OFF(G_views, gpumat_t, "_views"); OFF(G_stream, gpumat_t, "_stream");
    ir_dict = PyModule_GetDict(ir_mod); Py_INCREF(ir_dict);
    runtime_dict = PyModule_GetDict(runtime_mod); Py_INCREF(runtime_dict);
    if (watch_settings(ir_dict) < 0 || watch_settings(runtime_dict) < 0)
        return NULL;
    STATE = PyDict_GetItemString(runtime_dict, "STATE");
    THREAD_PENDING_OWNER = PyDict_GetItemString(runtime_dict, "THREAD");
    Py_CLEAR(pending_list);                                    /* (another THREAD's lists) */
    IR_THREAD = PyDict_GetItemString(ir_dict, "_THREAD");
    RECORDED = PyDict_GetItemString(ir_dict, "_RECORDED");
    READERS = PyDict_GetItemString(ir_dict, "READERS");
    PRUNE_READERS = PyDict_GetItemString(ir_dict, "prune_readers");
    if (!STATE || !THREAD_PENDING_OWNER || !IR_THREAD || !RECORDED || !READERS || !PRUNE_READERS) {
        PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath.bind: a module attribute is missing");
        return NULL;
    }
    Py_INCREF(STATE); Py_INCREF(THREAD_PENDING_OWNER); Py_INCREF(IR_THREAD); Py_INCREF(RECORDED);
    Py_INCREF(READERS); Py_INCREF(PRUNE_READERS);
    PLAIN = plain; Py_INCREF(plain);
    Py_CLEAR(local_dict);                                      /* (another _THREAD's dicts) */
    if (int64_of("_since", &SINCE_VIEW, &SINCE) < 0 || int64_of("_shared", &SHARED_VIEW, &SHARED) < 0)
        return NULL;
    SETTINGS.valid = 0;
    Py_RETURN_NONE;
}

static void memo_clear(void);

static PyObject *bind_recipes(PyObject *mod, PyObject *args) {
    PyObject *recipe_t, *recipes_mod, *streams_mod, *table, *miss, *run;
    if (!PyArg_ParseTuple(args, "OOOOOO", &recipe_t, &recipes_mod, &streams_mod, &table, &miss, &run))
        return NULL;
    RecipeT = (PyTypeObject *)recipe_t;
    Py_INCREF(recipe_t);
    OFF(P_nodes, recipe_t, "nodes"); OFF(P_results, recipe_t, "results"); OFF(P_many, recipe_t, "many");
    OFF(P_func, recipe_t, "func");
    PyObject *alloc_t = PyDict_GetItemString(ir_dict, "Allocation");
    if (alloc_t == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.Allocation is missing");
        return NULL;
    }
    OFF(A_buf, alloc_t, "buf"); OFF(A_writers, alloc_t, "writers"); OFF(A_constant, alloc_t, "constant");
    OFF(A_exported, alloc_t, "exported"); OFF(A_foreign, alloc_t, "foreign"); OFF(A_cols, alloc_t, "cols");
    OFF(A_device, alloc_t, "device");
    AllocT = (PyTypeObject *)alloc_t;
    Py_INCREF(alloc_t);
    PyObject *plancache = PyImport_ImportModule("lazycv.plancache");
    if (plancache == NULL)
        return NULL;
    Py_XDECREF(REPLAY_KEY);
    REPLAY_KEY = PyObject_GetAttrString(plancache, "ReplayKey");
    Py_DECREF(plancache);
    if (REPLAY_KEY == NULL)
        return NULL;
    PyObject *program = PyImport_ImportModule("lazycv.program");
    PyObject *single_t = program != NULL ? PyObject_GetAttrString(program, "SingleFlushProgram") : NULL;
    if (single_t == NULL) {
        Py_XDECREF(program);
        return NULL;
    }
    Py_XSETREF(SingleT, (PyTypeObject *)single_t);
    Py_XSETREF(SINGLE_RUN, PyObject_GetAttrString(program, "RUN_IN_C"));  /* (a replaced run is Python's) */
    Py_DECREF(program);
    if (SINGLE_RUN == NULL)
        return NULL;
    OFF(F_backend, single_t, "backend"); OFF(F_binds, single_t, "binds"); OFF(F_ops_fused, single_t, "ops_fused");
    OFF(F_compiled, single_t, "compiled"); OFF(F_rows, single_t, "rows"); OFF(F_cols, single_t, "cols");
    OFF(F_recipe, single_t, "recipe"); OFF(F_memo, single_t, "memo"); OFF(F_shapes, single_t, "shapes");
    OFF(F_slab, single_t, "slab"); OFF(F_results, single_t, "results");
    OFF(F_launcher, single_t, "launcher");
    recipes_dict = PyModule_GetDict(recipes_mod); Py_INCREF(recipes_dict);
    streams_dict = PyModule_GetDict(streams_mod); Py_INCREF(streams_dict);
    if (watch_settings(recipes_dict) < 0 || watch_settings(streams_dict) < 0)
        return NULL;
    Py_XDECREF(RECIPES);
    RECIPES = table; Py_INCREF(table);
    memo_clear();                                              /* (recipes of another table) */
    Py_XDECREF(NOTED);
    NOTED = PyDict_GetItemString(recipes_dict, "_NOTED");     /* signatures seen once (a set) */
    if (NOTED == NULL || !PySet_Check(NOTED)) {
        NOTED = NULL;
        PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: recipes._NOTED (a set) is missing");
        return NULL;
    }
    Py_INCREF(NOTED);
    MISS = miss; Py_INCREF(miss);
    RUN = run; Py_INCREF(run);
    if (LIMIT_NAME == NULL && (LIMIT_NAME = PyUnicode_InternFromString("LIMIT")) == NULL)
        return NULL;
    if (TRIES_NAME == NULL && (TRIES_NAME = PyUnicode_InternFromString("_MAX_TRIES")) == NULL)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ signature */
static PyObject *signed_zero(PyObject *v) {
    double d = PyFloat_AS_DOUBLE(v);
    PyObject *z = copysign(1.0, d) < 0 ? NEG_ZERO : ZERO;
    Py_INCREF(z);
    return z;
}

static int append_new(PyObject *list, PyObject *item) {   /* steals item */
    if (item == NULL)
        return -1;
    int r = PyList_Append(list, item);
    Py_DECREF(item);
    return r;
}

/* a new tuple of items[0..n) (new references to them) */
static PyObject *tuple_of(PyObject *const *items, Py_ssize_t n) {
    PyObject *t = PyTuple_New(n);
    for (Py_ssize_t i = 0; t != NULL && i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(t, i, items[i]);
    }
    return t;
}

/* one argument into sig; 1 appended, 0 not covered (signature is None), -1 error */
static int sig_item(PyObject *sig, PyObject *a, PyObject *mats) {
    PyTypeObject *t = Py_TYPE(a);
    if (t == GpuMatT) {
        Py_ssize_t n = PyList_GET_SIZE(mats);
        PyObject *item;
        if (SLOT(a, G_rows) == NULL || SLOT(a, G_cols) == NULL || SLOT(a, G_depth) == NULL || SLOT(a, G_cn) == NULL)
            return 0;
        if (n == 0) {
            item = PyTuple_Pack(4, SLOT(a, G_rows), SLOT(a, G_cols), SLOT(a, G_depth), SLOT(a, G_cn));
        } else {
            Py_ssize_t alias = -1;
            for (Py_ssize_t i = 0; i < n; i++)
                if (PyList_GET_ITEM(mats, i) == a) { alias = i; break; }
            PyObject *al = PyLong_FromSsize_t(alias);
            if (al == NULL)
                return -1;
            item = PyTuple_Pack(5, SLOT(a, G_rows), SLOT(a, G_cols), SLOT(a, G_depth), SLOT(a, G_cn), al);
            Py_DECREF(al);
        }
        if (append_new(sig, item) < 0 || PyList_Append(mats, a) < 0)
            return -1;
        return 1;
    }
    if (t == &PyFloat_Type) {
        if (PyList_Append(sig, (PyObject *)t) < 0)
            return -1;
        if (PyFloat_AS_DOUBLE(a) == 0.0)
            return append_new(sig, signed_zero(a)) < 0 ? -1 : 1;
        return PyList_Append(sig, a) < 0 ? -1 : 1;
    }
    if (t == &PyTuple_Type) {
        Py_ssize_t n = PyTuple_GET_SIZE(a);
        PyObject *types = PyTuple_New(n);
        if (types == NULL)
            return -1;
        int zero = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = PyTuple_GET_ITEM(a, i);
            PyObject *et = (PyObject *)Py_TYPE(e);
            int plain = PySet_Contains(PLAIN, et);
            if (plain <= 0) {
                Py_DECREF(types);
                return plain < 0 ? -1 : 0;
            }
            Py_INCREF(et);
            PyTuple_SET_ITEM(types, i, et);
            if (!zero) {                      /* Python: 0 in a (==, so False, 0 and -0.0 too) */
                int eq = PyObject_RichCompareBool(e, INT0, Py_EQ);
                if (eq < 0) { Py_DECREF(types); return -1; }
                zero = eq;
            }
        }
        if (append_new(sig, types) < 0)
            return -1;
        if (!zero)
            return PyList_Append(sig, a) < 0 ? -1 : 1;
        PyObject *vals = PyTuple_New(n);
        if (vals == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *e = PyTuple_GET_ITEM(a, i);
            PyObject *v;
            if (Py_IS_TYPE(e, &PyFloat_Type) && PyFloat_AS_DOUBLE(e) == 0.0)
                v = signed_zero(e);
            else {
                Py_INCREF(e);
                v = e;
            }
            PyTuple_SET_ITEM(vals, i, v);
        }
        return append_new(sig, vals) < 0 ? -1 : 1;
    }
    int plain = PySet_Contains(PLAIN, (PyObject *)t);   /* int, bool, str, None */
    if (plain <= 0)
        return plain;
    if (PyList_Append(sig, (PyObject *)t) < 0 || PyList_Append(sig, a) < 0)
        return -1;
    return 1;
}

static PyObject *signature(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(GpuMatT != NULL);
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "signature(args, kw)");
        return NULL;
    }
    PyObject *pos = args[0], *kw = args[1];
    PyObject *sig = PyList_New(0), *mats = PyList_New(0);
    if (sig == NULL || mats == NULL)
        goto fail;
    Py_ssize_t n = PyTuple_GET_SIZE(pos);
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = sig_item(sig, PyTuple_GET_ITEM(pos, i), mats);
        if (r < 0)
            goto fail;
        if (r == 0)
            goto none;
    }
    if (kw != Py_None && PyDict_GET_SIZE(kw) > 0) {
        PyObject *k, *v;
        Py_ssize_t at = 0;
        while (PyDict_Next(kw, &at, &k, &v)) {
            int r = sig_item(sig, v, mats);
            if (r < 0)
                goto fail;
            if (r == 0)
                goto none;
        }
        PyObject *keys = PyTuple_New(PyDict_GET_SIZE(kw));
        if (keys == NULL)
            goto fail;
        at = 0;
        Py_ssize_t j = 0;
        while (PyDict_Next(kw, &at, &k, &v)) {
            Py_INCREF(k);
            PyTuple_SET_ITEM(keys, j++, k);
        }
        if (append_new(sig, keys) < 0)
            goto fail;
    }
    PyObject *out = PyList_AsTuple(sig);
    Py_DECREF(sig);
    Py_DECREF(mats);
    return out;
none:
    Py_DECREF(sig);
    Py_DECREF(mats);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(sig);
    Py_XDECREF(mats);
    return NULL;
}

/* ------------------------------------------------------------------ the last call's recipe
 * A loop calls each function with the same kinds of arguments every time. hot_call keeps the
 * signature and recipe of each function's last replayed call (MEMO, a small table by the
 * function's address) and first asks whether this call's arguments give that signature again:
 * sig_matches walks them as signature() does, comparing each item in place instead of building
 * the signature, its key and their hash for the recipe table (a third of a call's recording).
 * recipes.forget() empties it (_hotpath.forget_calls), as it empties the table. */
#define MEMO_SIZE 256
#define MEMO_MATS 16
typedef struct { PyObject *fn, *sig, *recipe; unsigned long used; } Memo;
static Memo MEMO[MEMO_SIZE];
static unsigned long MEMO_TICK = 0;

/* A function's entry: one of two neighbouring slots by its address (two functions of a loop
 * whose addresses share a slot would otherwise take each other's place every call: W3's loop on
 * the H200 host lost 100 of its 300 kept recipes a frame that way), else the one of the two
 * used longer ago, for the caller to fill. */
static inline Memo *memo_of(PyObject *fn) {
    uintptr_t h = (uintptr_t)fn >> 4;
    Memo *a = &MEMO[(h ^ (h >> 8)) & (MEMO_SIZE - 2)], *b = a + 1;
    if (a->fn == fn)
        return a;
    if (b->fn == fn)
        return b;
    return a->used <= b->used ? a : b;
}

/* A loop whose calls change signature within a frame (W3: each crop of a frame its own size,
 * so resize's last recipe never fits) repeats them at the same places of each frame's
 * recording. PLACES keeps the recipe each function's call took at each position of the
 * recording (the number of values recorded before it), by (function, position); hot_call
 * tries it when the last recipe does not fit, checking the signature the same way. */
#define PLACES_SIZE 1024
typedef struct { PyObject *fn, *sig, *recipe; Py_ssize_t at; } Place;
static Place PLACES[PLACES_SIZE];
static Py_ssize_t HITS_LAST = 0, HITS_PLACE = 0, HITS_TABLE = 0;   /* (_hotpath.recipe_hits) */

static inline Place *place_of(PyObject *fn, Py_ssize_t at) {
    uintptr_t h = ((uintptr_t)fn >> 4) ^ ((uintptr_t)at * 0x9E3779B1u);
    return &PLACES[(h ^ (h >> 10)) & (PLACES_SIZE - 1)];
}

/* a recording position's int (new ref): those below INTS_KEPT made once. A frame records a few
 * hundred values, each numbered, and its flush's key numbers its results (4 a position). */
#define INTS_KEPT 8192
static PyObject *INTS[INTS_KEPT];

static PyObject *position(Py_ssize_t p) {
    if (p < 0 || p >= INTS_KEPT)
        return PyLong_FromSsize_t(p);
    if (INTS[p] == NULL && (INTS[p] = PyLong_FromSsize_t(p)) == NULL)
        return NULL;
    Py_INCREF(INTS[p]);
    return INTS[p];
}

#define TOKENS_SIZE 2048
static PyObject *TOKENS[TOKENS_SIZE];
static Py_hash_t TOKENS_HASH[TOKENS_SIZE];      /* each kept token's hash once asked (0: not yet) */

static void plain_clear(void);

static void memo_clear(void) {
    plain_clear();
    for (int i = 0; i < MEMO_SIZE; i++) {
        Py_CLEAR(MEMO[i].fn);
        Py_CLEAR(MEMO[i].sig);
        Py_CLEAR(MEMO[i].recipe);
        MEMO[i].used = 0;
    }
    for (int i = 0; i < TOKENS_SIZE; i++) {
        Py_CLEAR(TOKENS[i]);
        TOKENS_HASH[i] = 0;
    }
    for (int i = 0; i < PLACES_SIZE; i++) {
        Py_CLEAR(PLACES[i].fn);
        Py_CLEAR(PLACES[i].sig);
        Py_CLEAR(PLACES[i].recipe);
    }
}

static PyObject *recipe_hits(PyObject *mod, PyObject *unused) {
    return Py_BuildValue("{snsnsn}", "last", HITS_LAST, "place", HITS_PLACE, "table", HITS_TABLE);
}

static int sig_matches(PyObject *sig, PyObject *pos, PyObject *kw);

static PyObject *signature_matches(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(GpuMatT != NULL);
    if (nargs != 3 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1]) ||
            (args[2] != Py_None && !PyDict_Check(args[2]))) {
        PyErr_SetString(PyExc_TypeError, "signature_matches(sig: tuple, args: tuple, kw: dict or None)");
        return NULL;
    }
    int r = sig_matches(args[0], args[1], args[2]);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *forget_calls(PyObject *mod, PyObject *unused) {
    memo_clear();
    Py_RETURN_NONE;
}

/* a value as a signature holds it: a float zero as its sign's marker (signed_zero), borrowed */
static inline PyObject *zero_marked(PyObject *v) {
    if (Py_IS_TYPE(v, &PyFloat_Type) && PyFloat_AS_DOUBLE(v) == 0.0)
        return copysign(1.0, PyFloat_AS_DOUBLE(v)) < 0 ? NEG_ZERO : ZERO;
    return v;
}

/* sig_item's check of one argument against the signature's items from ``*j``: 1 when they are
 * the items sig_item would append (``*j`` moved past them), 0 when not, -1 an error. ``mats``
 * (``*nm`` of them) are the GpuMat arguments so far, for the alias sig_item numbers. Items
 * compare as the recipe table's keys do (PyObject_RichCompareBool: identity, then ==). */
static int sig_item_matches(PyObject *sig, Py_ssize_t *j, PyObject *a, PyObject **mats, Py_ssize_t *nm) {
    Py_ssize_t n = PyTuple_GET_SIZE(sig), at = *j;
    PyTypeObject *t = Py_TYPE(a);
    if (at >= n)
        return 0;
    PyObject *item = PyTuple_GET_ITEM(sig, at);
    if (t == GpuMatT) {
        PyObject *f[4] = {SLOT(a, G_rows), SLOT(a, G_cols), SLOT(a, G_depth), SLOT(a, G_cn)};
        Py_ssize_t len = *nm == 0 ? 4 : 5;
        if (*nm >= MEMO_MATS || !PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != len)
            return 0;
        for (int k = 0; k < 4; k++) {
            if (f[k] == NULL)
                return 0;
            int eq = PyObject_RichCompareBool(f[k], PyTuple_GET_ITEM(item, k), Py_EQ);
            if (eq <= 0)
                return eq;
        }
        if (len == 5) {
            Py_ssize_t alias = -1;
            for (Py_ssize_t i = 0; i < *nm; i++)
                if (mats[i] == a) { alias = i; break; }
            PyObject *al = PyTuple_GET_ITEM(item, 4);
            if (!PyLong_CheckExact(al) || PyLong_AsSsize_t(al) != alias)
                return 0;
        }
        mats[(*nm)++] = a;
        *j = at + 1;
        return 1;
    }
    if (at + 1 >= n)
        return 0;
    PyObject *val = PyTuple_GET_ITEM(sig, at + 1);
    if (t == &PyTuple_Type) {
        Py_ssize_t len = PyTuple_GET_SIZE(a);
        if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != len || !PyTuple_CheckExact(val) ||
                PyTuple_GET_SIZE(val) != len)
            return 0;
        for (Py_ssize_t i = 0; i < len; i++) {
            PyObject *e = PyTuple_GET_ITEM(a, i), *v = PyTuple_GET_ITEM(val, i);
            if ((PyObject *)Py_TYPE(e) != PyTuple_GET_ITEM(item, i))
                return 0;                  /* (the types were plain: the signature holds them) */
            int eq = PyObject_RichCompareBool(zero_marked(e), v, Py_EQ);
            if (eq <= 0)
                return eq;
        }
        *j = at + 2;
        return 1;
    }
    if (item != (PyObject *)t)           /* float, or a plain type (int, bool, str, None) */
        return 0;
    int eq = PyObject_RichCompareBool(zero_marked(a), val, Py_EQ);
    if (eq <= 0)
        return eq;
    *j = at + 2;
    return 1;
}

/* 1 when signature(pos, kw) would equal ``sig`` (a signature it made), 0 when not, -1 an error */
static int sig_matches(PyObject *sig, PyObject *pos, PyObject *kw) {
    PyObject *mats[MEMO_MATS];
    Py_ssize_t j = 0, nm = 0, n = PyTuple_GET_SIZE(pos);
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = sig_item_matches(sig, &j, PyTuple_GET_ITEM(pos, i), mats, &nm);
        if (r <= 0)
            return r;
    }
    if (kw != Py_None && PyDict_GET_SIZE(kw) > 0) {
        PyObject *k, *v;
        Py_ssize_t at = 0;
        while (PyDict_Next(kw, &at, &k, &v)) {
            int r = sig_item_matches(sig, &j, v, mats, &nm);
            if (r <= 0)
                return r;
        }
        if (j >= PyTuple_GET_SIZE(sig))
            return 0;
        PyObject *keys = PyTuple_GET_ITEM(sig, j++);
        if (!PyTuple_CheckExact(keys) || PyTuple_GET_SIZE(keys) != PyDict_GET_SIZE(kw))
            return 0;
        at = 0;
        Py_ssize_t i = 0;
        while (PyDict_Next(kw, &at, &k, &v)) {
            int eq = PyObject_RichCompareBool(k, PyTuple_GET_ITEM(keys, i++), Py_EQ);
            if (eq <= 0)
                return eq;
        }
    }
    return j == PyTuple_GET_SIZE(sig);
}

/* ir._THREAD.<name> (new ref): read from the calling thread's dict of the thread-local, kept by
 * the thread's id as thread_pending keeps its list. The thread-local's own look-up (finding the
 * thread's dict, then the type's attributes) cost about 4 % of a W3 frame, once per node. */
static PyObject *thread_attr(PyObject *name) {
    uint64_t tid = PyThreadState_GetID(PyThreadState_Get());
    if (local_dict == NULL || local_tid != tid) {
        PyObject *d = PyObject_GetAttr(IR_THREAD, s___dict__);
        if (d == NULL)
            return NULL;
        if (!PyDict_CheckExact(d)) {
            Py_DECREF(d);
            return PyObject_GetAttr(IR_THREAD, name);
        }
        Py_XSETREF(local_dict, d);
        local_tid = tid;
    }
    PyObject *v = PyDict_GetItemWithError(local_dict, name);
    if (v == NULL)
        return PyErr_Occurred() ? NULL : PyObject_GetAttr(IR_THREAD, name);
    Py_INCREF(v);
    return v;
}

/* The token last recorded at each position of a recording (by position, direct-mapped). A loop
 * records the same tokens at the same positions frame after frame: a token equal to the one
 * kept is reused instead of made, so the flush's replay key compares this frame's tokens with
 * the remembered key's by identity (W3: 450 tokens a frame, their comparison and their tuples
 * about 5 % of a frame). recipes.forget() empties it with the recipe tables (TOKENS, above
 * memo_clear). */

/* a token's item equal to another's: the same object, equal exact ints, or tuples of those */
static int same_item(PyObject *a, PyObject *b, int depth) {
    if (a == b)
        return 1;
    if (PyLong_CheckExact(a) && PyLong_CheckExact(b))
        return PyObject_RichCompareBool(a, b, Py_EQ) == 1;
    if (depth == 0 && PyTuple_CheckExact(a) && PyTuple_CheckExact(b) && PyTuple_GET_SIZE(a) == PyTuple_GET_SIZE(b)) {
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++)
            if (!same_item(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i), 1))
                return 0;
        return 1;
    }
    return 0;
}

/* the token (items[0..n)) recorded at position ``pos``: the kept one where equal, else a new
 * tuple, kept. New ref. (An error from a comparison leaves the items unequal: cleared.) */
static PyObject *token_at(Py_ssize_t pos, PyObject *const *items, Py_ssize_t n) {
    PyObject **kept = &TOKENS[pos & (TOKENS_SIZE - 1)];
    PyObject *t = *kept;
    if (t != NULL && PyTuple_GET_SIZE(t) == n) {
        Py_ssize_t i = 0;
        while (i < n && same_item(PyTuple_GET_ITEM(t, i), items[i], 0))
            i++;
        if (PyErr_Occurred())
            PyErr_Clear();
        else if (i == n) {
            Py_INCREF(t);
            return t;
        }
    }
    if ((t = tuple_of(items, n)) == NULL)
        return NULL;
    Py_INCREF(t);
    Py_XSETREF(*kept, t);
    TOKENS_HASH[pos & (TOKENS_SIZE - 1)] = 0;
    return t;
}

/* A node's token, (op, static, depth, cn, rows, cols, height, refs), at position ``pos``: the
 * kept one where its first seven items and its refs (the inputs' positions, ``refs[0..nref)``)
 * are equal, else a new one, kept. New ref. */
static PyObject *node_token(Py_ssize_t pos, PyObject *const items[7], PyObject *const *refs, Py_ssize_t nref) {
    PyObject *t = TOKENS[pos & (TOKENS_SIZE - 1)];
    if (t != NULL && PyTuple_GET_SIZE(t) == 8) {
        PyObject *kept = PyTuple_GET_ITEM(t, 7);
        int same = PyTuple_CheckExact(kept) && PyTuple_GET_SIZE(kept) == nref;
        for (Py_ssize_t i = 0; same && i < 7; i++)
            same = same_item(PyTuple_GET_ITEM(t, i), items[i], 0);
        for (Py_ssize_t i = 0; same && i < nref; i++)
            same = same_item(PyTuple_GET_ITEM(kept, i), refs[i], 1);
        if (PyErr_Occurred())
            PyErr_Clear();
        else if (same) {
            Py_INCREF(t);
            return t;
        }
    }
    PyObject *rt = tuple_of(refs, nref);
    if (rt == NULL)
        return NULL;
    untrack(rt);                                               /* (ints) */
    PyObject *const all[8] = {items[0], items[1], items[2], items[3], items[4], items[5], items[6], rt};
    t = token_at(pos, all, 8);                                 /* (kept: its slot holds another) */
    Py_DECREF(rt);
    return t;
}

static void free_refs(PyObject **refs, Py_ssize_t n, PyObject **here) {
    for (Py_ssize_t i = 0; i < n; i++)
        Py_DECREF(refs[i]);
    if (refs != here)
        PyMem_Free(refs);
}

/* ------------------------------------------------------------------ node */
static PyObject *deref(PyObject *wr);

/* Recording.add's end: a recording that reached its LIMIT of values closes. 0, or -1 an error. */
static int close_at_limit(PyObject *rec, PyObject *pos) {
    int over;
#if PY_VERSION_HEX < 0x030E0000
    PyObject *limit = _PyType_Lookup(Py_TYPE(rec), s_LIMIT);   /* (a class attribute: borrowed) */
    if (limit != NULL && PyLong_CheckExact(limit) && PyLong_CheckExact(pos)) {
        Py_ssize_t p = PyLong_AsSsize_t(pos), lim = PyLong_AsSsize_t(limit);
        if ((p == -1 || lim == -1) && PyErr_Occurred())
            return -1;
        over = p >= lim;
    } else
#endif
    {
        PyObject *lim = PyObject_GetAttr(rec, s_LIMIT);
        if (lim == NULL)
            return -1;
        over = PyObject_RichCompareBool(pos, lim, Py_GE);
        Py_DECREF(lim);
    }
    if (over <= 0)
        return over;
    PyObject *r = PyObject_CallMethodNoArgs(rec, s_close);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* Recording.first_seen(v) for a Source ``v`` of an open recording: its memory numbered in the
 * recording (a new number for a buffer not seen yet, or whose id came back for another), then
 * Recording.add. Anything else (memory that takes no weak reference, a recording at its
 * LIMIT) through the Python method. New ref: the position. */
static PyObject *first_seen(PyObject *rec, PyObject *v) {
    PyObject *bufs = SLOT(rec, R_bufs), *buf = SLOT(v, S_buf);
    if (SLOT(rec, R_open) != Py_True || bufs == NULL || !PyDict_CheckExact(bufs) || buf == NULL ||
            !PyType_SUPPORTS_WEAKREFS(Py_TYPE(buf)))
        return PyObject_CallMethodOneArg(rec, s_first_seen, v);
    PyObject *key = PyLong_FromVoidPtr(buf), *number = NULL, *token = NULL, *wv = NULL, *pos = NULL;
    if (key == NULL)
        return NULL;
    PyObject *known = PyDict_GetItemWithError(bufs, key);      /* (number, weakref(buf)) */
    if (known == NULL && PyErr_Occurred())
        goto done;
    PyObject *was = known != NULL && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 2 ?
        deref(PyTuple_GET_ITEM(known, 1)) : NULL;
    Py_XDECREF(was);                                           /* (compared by identity only) */
    if (was == buf) {
        number = PyTuple_GET_ITEM(known, 0);
        Py_INCREF(number);
    } else {
        PyObject *n = SLOT(rec, R_nbufs);
        if (n == NULL || !PyLong_CheckExact(n)) {
            Py_DECREF(key);
            return PyObject_CallMethodOneArg(rec, s_first_seen, v);
        }
        PyObject *wb = PyWeakref_NewRef(buf, NULL);
        if (wb == NULL)
            goto done;
        PyObject *entry = PyTuple_Pack(2, n, wb);
        Py_DECREF(wb);
        if (entry == NULL)
            goto done;
        int r = PyDict_SetItem(bufs, key, entry);
        Py_DECREF(entry);
        if (r < 0)
            goto done;
        number = n;
        Py_INCREF(number);
        PyObject *next = PyNumber_Add(n, ONE);
        if (next == NULL)
            goto done;
        put_slot(rec, R_nbufs, next);
    }
    /* Recording.add(v, (number, depth, cn, rows, cols)) */
    PyObject *objs = SLOT(rec, R_objs), *tokens = SLOT(rec, R_tokens);
    PyObject *const items[5] = {number, SLOT(v, S_depth), SLOT(v, S_cn), SLOT(v, S_rows), SLOT(v, S_cols)};
    token = token_at(PyList_GET_SIZE(objs), items, 5);
    if (token == NULL)
        goto done;
    untrack(token);                                            /* (ints) */
    if ((pos = position(PyList_GET_SIZE(objs))) == NULL)
        goto done;
    if ((wv = PyWeakref_NewRef(v, NULL)) == NULL)
        goto fail;
    untrack(wv);
    set_slot(v, S_rpos, pos);
    set_slot(v, S_rgen, SLOT(rec, R_gen));
    if (PyList_Append(objs, wv) < 0 || PyList_Append(tokens, token) < 0)
        goto fail;
    if (close_at_limit(rec, pos) < 0)
        goto fail;
    goto done;
fail:
    Py_CLEAR(pos);
done:
    Py_XDECREF(wv);
    Py_XDECREF(token);
    Py_XDECREF(number);
    Py_DECREF(key);
    return pos;
}


/* a module's flag (a missing one is False); 1, 0, -1 an error */
static int flag(PyObject *dict, PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(dict, name);
    if (v == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return PyObject_IsTrue(v);
}

/* The settings a replayed call reads (SETTINGS), read again only after one of the four modules'
 * dictionaries changed: five look-ups a call were about 5 % of a W3 frame. Python 3.12 on, a
 * dict watcher says so; before it, each dictionary's version tag. NULL with an error. */
#if PY_VERSION_HEX >= 0x030C0000
static int WATCHER = -1;

static int settings_changed(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *value) {
    SETTINGS.valid = 0;                                   /* (called before the change) */
    return 0;
}
#else
static uint64_t SETTINGS_TAGS[4];
#endif

/* the dictionaries settings() watches: 0, or -1 an error */
static int watch_settings(PyObject *dict) {
    SETTINGS.valid = 0;
#if PY_VERSION_HEX >= 0x030C0000
    if (WATCHER == -1 && (WATCHER = PyDict_AddWatcher(settings_changed)) < 0) {
        PyErr_Clear();                                    /* (all watchers taken: read every call) */
        WATCHER = -2;
    }
    return WATCHER < 0 ? 0 : PyDict_Watch(WATCHER, dict);
#else
    return 0;
#endif
}

/* runtime.AUTO_FLUSH_OPS into ``*lim``: 0, or -1 an error */
static int auto_flush_ops(long *lim) {
    PyObject *limit = PyDict_GetItemWithError(runtime_dict, s_AUTO_FLUSH_OPS);
    if (limit == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "runtime.AUTO_FLUSH_OPS is missing");
        return -1;
    }
    *lim = PyLong_AsLong(limit);
    return *lim == -1 && PyErr_Occurred() ? -1 : 0;
}

static Settings *settings(void) {
#if PY_VERSION_HEX < 0x030C0000
    PyObject *const dicts[4] = {recipes_dict, ir_dict, streams_dict, runtime_dict};
    for (int i = 0; i < 4; i++)
        if (((PyDictObject *)dicts[i])->ma_version_tag != SETTINGS_TAGS[i])
            SETTINGS.valid = 0;
#endif
    if (SETTINGS.valid)
        return &SETTINGS;
    Settings now = {1};
    if ((now.enabled = flag(recipes_dict, s_ENABLED)) < 0 || (now.check = flag(recipes_dict, s_CHECK)) < 0 ||
            (now.multi = flag(ir_dict, s_MULTI_DEVICE)) < 0 || auto_flush_ops(&now.auto_flush) < 0)
        return NULL;
    if ((now.record_on = PyDict_GetItemWithError(streams_dict, s_RECORD_ON)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "streams.RECORD_ON is missing");
        return NULL;
    }
    Py_INCREF(now.record_on);
    PyObject *was = SETTINGS.record_on;
#if PY_VERSION_HEX >= 0x030C0000
    now.valid = WATCHER >= 0;                             /* (no watcher: read again next call) */
#endif
    SETTINGS = now;
#if PY_VERSION_HEX < 0x030C0000
    for (int i = 0; i < 4; i++)
        SETTINGS_TAGS[i] = ((PyDictObject *)dicts[i])->ma_version_tag;
#endif
    Py_XDECREF(was);                                      /* (last: may run code that changes them) */
    return &SETTINGS;
}

static PyObject *make_node(PyObject *const *args, int multi, int plain);

static PyObject *node(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL);
    if (nargs != 8 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "node(op, inputs: tuple, static, dyn, rows, cols, depth, cn)");
        return NULL;
    }
    int multi = flag(ir_dict, s_MULTI_DEVICE);
    return multi < 0 ? NULL : make_node(args, multi, -1);
}

/* A replayed node's static and dynamic values are its recipe's own objects, the same every call:
 * whether they are plain values (atomic) is kept for the last pairs seen, each entry holding
 * its objects (so an address is never another object's while it is kept; recipes.forget lets
 * go of them). */
#define PLAIN_SLOTS 64
static struct { PyObject *stat, *dyn; int plain; } KEPT_PLAIN[PLAIN_SLOTS];

static int plain_values(PyObject *stat, PyObject *dyn) {
    size_t h = (((size_t)stat >> 4) ^ ((size_t)dyn >> 7)) & (PLAIN_SLOTS - 1);
    if (KEPT_PLAIN[h].stat == stat && KEPT_PLAIN[h].dyn == dyn)
        return KEPT_PLAIN[h].plain;
    int plain = atomic(stat, 0) && atomic(dyn, 0);
    PyObject *old_stat = KEPT_PLAIN[h].stat, *old_dyn = KEPT_PLAIN[h].dyn;
    Py_INCREF(stat);
    Py_INCREF(dyn);
    KEPT_PLAIN[h].stat = stat;
    KEPT_PLAIN[h].dyn = dyn;
    KEPT_PLAIN[h].plain = plain;
    Py_XDECREF(old_stat);
    Py_XDECREF(old_dyn);
    return plain;
}

static void plain_clear(void) {
    for (int h = 0; h < PLAIN_SLOTS; h++) {
        PyObject *stat = KEPT_PLAIN[h].stat, *dyn = KEPT_PLAIN[h].dyn;
        KEPT_PLAIN[h].stat = KEPT_PLAIN[h].dyn = NULL;
        Py_XDECREF(stat);
        Py_XDECREF(dyn);
    }
}

/* node's work; ``multi``: ir.MULTI_DEVICE, read once by the caller (a replayed call makes
 * several nodes); ``plain``: whether the static and dynamic values are plain (-1: find out) */
static PyObject *make_node(PyObject *const *args, int multi, int plain) {
    PyObject *op = args[0], *inputs = args[1], *stat = args[2], *dyn = args[3];
    PyObject *rows = args[4], *cols = args[5], *depth = args[6], *cn = args[7];
    PyObject *self = NULL, *rec = NULL, *me = NULL, *gen = NULL, *token = NULL;
    PyObject *refs_here[8], **refs = refs_here;           /* (each input's position: the token's refs) */
    Py_ssize_t nref = 0;
    /* a node of plain values is left out of the cyclic GC (see untrack) */
    if (plain < 0)
        plain = atomic(stat, 0) && atomic(dyn, 0);
    PyObject *seq = PyIter_Next(RECORDED);
    if (seq == NULL)
        return NULL;
    self = NodeT->tp_alloc(NodeT, 0);
    if (self == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    put_slot(self, N_seq, seq);
    set_slot(self, N_op, op); set_slot(self, N_inputs, inputs); set_slot(self, N_static, stat);
    set_slot(self, N_dyn, dyn); set_slot(self, N_rows, rows); set_slot(self, N_cols, cols);
    set_slot(self, N_depth, depth); set_slot(self, N_cn, cn); set_slot(self, N_result, Py_None);
    set_slot(self, N_rgen, INT0);
    if (multi) {
        PyObject *dev = thread_attr(s_device);
        if (dev == NULL)
            goto fail;
        put_slot(self, N_device, dev);
    }
    long h = 0;
    rec = thread_attr(s_rec);
    if (rec == NULL)
        goto fail;
    int recording = SLOT(rec, R_open) != NULL && PyObject_IsTrue(SLOT(rec, R_open));
    gen = SLOT(rec, R_gen);
    Py_XINCREF(gen);
    Py_ssize_t n = PyTuple_GET_SIZE(inputs);
    if (recording && n > 8 && (refs = PyMem_Malloc(n * sizeof(PyObject *))) == NULL) {
        refs = refs_here;
        PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = PyTuple_GET_ITEM(inputs, i);
        if (Py_TYPE(v) == NodeT) {
            PyObject *res = SLOT(v, N_result);
            if (res != NULL && res != Py_None)
                v = res;                                   /* computed earlier: read from memory */
            else {
                long hv = PyLong_AsLong(SLOT(v, N_height));
                if (hv == -1 && PyErr_Occurred())
                    goto fail;
                if (hv >= h)
                    h = hv + 1;
            }
        }
        int is_source = Py_TYPE(v) == SourceT;
        if (!is_source && Py_TYPE(v) != NodeT) {
            PyErr_Format(PyExc_TypeError, "lazycv._hotpath.node: an input is a %s", Py_TYPE(v)->tp_name);
            goto fail;
        }
        if (is_source) {                                   /* READERS: a read of memory */
            if (me == NULL && (me = PyWeakref_NewRef(self, NULL)) == NULL)
                goto fail;
            if (add_reader(SLOT(v, S_buf), me, 1) < 0)
                goto fail;
        }
        if (recording) {
            PyObject *ref;
            PyObject *vg = SLOT(v, is_source ? S_rgen : N_rgen);
            int same = vg != NULL && gen != NULL ? PyObject_RichCompareBool(vg, gen, Py_EQ) : 0;
            if (same < 0)
                goto fail;
            if (same) {
                ref = SLOT(v, is_source ? S_rpos : N_rpos);
                if (ref == NULL) {
                    PyErr_SetString(PyExc_AttributeError, "rpos");
                    goto fail;
                }
                Py_INCREF(ref);
            } else {
                ref = is_source ? first_seen(rec, v) : PyObject_CallMethodOneArg(rec, s_first_seen, v);
                if (ref == NULL)
                    goto fail;
            }
            refs[nref++] = ref;
        }
    }
    PyObject *hobj = PyLong_FromLong(h);
    if (hobj == NULL)
        goto fail;
    put_slot(self, N_height, hobj);
    if (recording && SLOT(rec, R_open) != NULL && PyObject_IsTrue(SLOT(rec, R_open))) {
        /* Recording.add, as Node.__init__ does it inline */
        PyObject *objs = SLOT(rec, R_objs), *tokens = SLOT(rec, R_tokens);
        Py_ssize_t p = PyList_GET_SIZE(objs);
        PyObject *pos = position(p);
        if (pos == NULL)
            goto fail;
        put_slot(self, N_rpos, pos);
        set_slot(self, N_rgen, gen);
        if (me == NULL && (me = PyWeakref_NewRef(self, NULL)) == NULL)
            goto fail;
        if (PyList_Append(objs, me) < 0)
            goto fail;
        PyObject *const items[7] = {op, stat, depth, cn, rows, cols, hobj};
        token = node_token(p, items, refs, nref);
        if (token == NULL || PyList_Append(tokens, token) < 0)
            goto fail;
        if (plain)
            untrack(token);
        if (close_at_limit(rec, pos) < 0)
            goto fail;
    }
    if (me != NULL)
        untrack(me);
    if (plain) {
        untrack(inputs);
        untrack(self);
    }
    Py_XDECREF(token);
    Py_XDECREF(me);
    Py_XDECREF(gen);
    free_refs(refs, nref, refs_here);
    Py_DECREF(rec);
    return self;
fail:
    Py_XDECREF(token);
    Py_XDECREF(me);
    Py_XDECREF(gen);
    free_refs(refs, nref, refs_here);
    Py_XDECREF(rec);
    Py_DECREF(self);
    return NULL;
}

/* runtime.THREAD.pending, the calling thread's list of pending results (new ref): kept by the
 * thread's id (unique while the interpreter lives), since each thread's list is made once and
 * only ever changed in place, and a thread-local attribute costs a look-up every call. */
static PyObject *thread_pending(void) {
    uint64_t tid = PyThreadState_GetID(PyThreadState_Get());
    if (pending_list == NULL || pending_tid != tid) {
        PyObject *p = PyObject_GetAttr(THREAD_PENDING_OWNER, s_pending);
        if (p == NULL)
            return NULL;
        Py_XSETREF(pending_list, p);
        pending_tid = tid;
    }
    Py_INCREF(pending_list);
    return pending_list;
}

/* ------------------------------------------------------------------ lazy */
static PyObject *lazy_of(PyTypeObject *cls, PyObject *nd, long lim);

static PyObject *lazy(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL);
    if (nargs != 2 || !PyType_Check(args[0]) || Py_TYPE(args[1]) != NodeT) {
        PyErr_SetString(PyExc_TypeError, "lazy(GpuMat class, node)");
        return NULL;
    }
    long lim;
    return auto_flush_ops(&lim) < 0 ? NULL : lazy_of((PyTypeObject *)args[0], args[1], lim);
}

/* lazy's work; ``lim``: runtime.AUTO_FLUSH_OPS, read once by the caller (a replayed call may
 * make several results) */
static PyObject *lazy_of(PyTypeObject *cls, PyObject *nd, long lim) {
    PyObject *m = cls->tp_alloc(cls, 0);
    if (m == NULL)
        return NULL;
    set_slot(m, G_alloc, Py_None);
    set_slot(m, G_y0, INT0); set_slot(m, G_x0, INT0);
    set_slot(m, G_rows, SLOT(nd, N_rows)); set_slot(m, G_cols, SLOT(nd, N_cols));
    set_slot(m, G_depth, SLOT(nd, N_depth)); set_slot(m, G_cn, SLOT(nd, N_cn));
    set_slot(m, G_node, nd);
    set_slot(m, G_src, Py_None); set_slot(m, G_parent, Py_None); set_slot(m, G_views, Py_None);
    set_slot(m, G_stream, Py_None);
    /* a lazy result of a plain node is left out of the cyclic GC too (see untrack) */
    if (cls == GpuMatT && !PyObject_GC_IsTracked(nd))
        untrack(m);
    /* runtime.register_pending, inline */
    PyObject *pending = thread_pending();
    if (pending == NULL)
        goto fail;
    PyObject *wr = PyWeakref_NewRef(m, NULL);
    if (wr == NULL) { Py_DECREF(pending); goto fail; }
    untrack(wr);                                           /* (no callback: refers to nothing) */
    int r = PyList_Append(pending, wr);
    Py_DECREF(wr);
    Py_DECREF(pending);
    if (r < 0)
        goto fail;
    long long count = ++*SINCE;                            /* (STATE.since_flush) */
    if (count > lim) {
        PyObject *fl = PyDict_GetItemWithError(runtime_dict, s_flush);
        if (fl == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "runtime.flush is missing");
            goto fail;
        }
        PyObject *res = PyObject_CallNoArgs(fl);
        if (res == NULL)
            goto fail;
        Py_DECREF(res);
    }
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}


/* ------------------------------------------------------------------ call */

/* an Allocation's writers hold no pending write: () as made, or a list emptied by a flush */
static inline int no_writers(PyObject *w) {
    return w != NULL && ((PyList_CheckExact(w) && PyList_GET_SIZE(w) == 0) ||
                         (PyTuple_CheckExact(w) && PyTuple_GET_SIZE(w) == 0));
}

static PyObject *node(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);

static inline int long_of(PyObject *o, long *out) {
    if (o == NULL || !PyLong_CheckExact(o))
        return 0;
    *out = PyLong_AsLong(o);
    return !(*out == -1 && PyErr_Occurred());
}

/* GpuMat._constant()'s answer where it is the node this recording already made for the fill
 * (64 frames dividing by one std GpuMat): New ref; NULL without an error where the Python
 * method decides (the first read of a recording, anything unusual). */
static PyObject *constant_node(PyObject *m, PyObject *alloc) {
    PyObject *c = SLOT(alloc, A_constant), *writers = SLOT(alloc, A_writers);
    if (c == NULL || !PyTuple_CheckExact(c) || PyTuple_GET_SIZE(c) != 5 || !no_writers(writers) ||
            SLOT(alloc, A_exported) != Py_False)
        return NULL;
    PyObject *buf = PyTuple_GET_ITEM(c, 0), *n = PyTuple_GET_ITEM(c, 3), *last = PyTuple_GET_ITEM(c, 4);
    if (buf != SLOT(alloc, A_buf) || Py_TYPE(n) != NodeT || (last != Py_None && Py_TYPE(last) != NodeT))
        return NULL;
    PyObject *fuse = PyObject_GetAttr(STATE, s_fuse);
    if (fuse == NULL)
        return NULL;
    int on = PyObject_IsTrue(fuse);
    Py_DECREF(fuse);
    if (on <= 0)
        return NULL;
    long y0, x0, ny, nx, my, mx, mr, mc, nd, ncn, md, mcn;
    if (!long_of(PyTuple_GET_ITEM(c, 1), &y0) || !long_of(PyTuple_GET_ITEM(c, 2), &x0) ||
            !long_of(SLOT(n, N_rows), &ny) || !long_of(SLOT(n, N_cols), &nx) ||
            !long_of(SLOT(n, N_depth), &nd) || !long_of(SLOT(n, N_cn), &ncn) ||
            !long_of(SLOT(m, G_y0), &my) || !long_of(SLOT(m, G_x0), &mx) ||
            !long_of(SLOT(m, G_rows), &mr) || !long_of(SLOT(m, G_cols), &mc) ||
            !long_of(SLOT(m, G_depth), &md) || !long_of(SLOT(m, G_cn), &mcn))
        return NULL;
    if (nd != md || ncn != mcn || !(y0 <= my && my + mr <= y0 + ny && x0 <= mx && mx + mc <= x0 + nx))
        return NULL;                                   /* (not the fill's region: its memory) */
    if (last != Py_None && SLOT(last, N_result) == Py_None) {
        PyObject *rec = thread_attr(s_rec);
        if (rec == NULL)
            return NULL;
        int same = SLOT(last, N_rgen) != NULL && SLOT(rec, R_gen) != NULL ?
            PyObject_RichCompareBool(SLOT(last, N_rgen), SLOT(rec, R_gen), Py_EQ) : 0;
        Py_DECREF(rec);
        long lr, lc;
        if (same < 0)
            return NULL;
        if (same && long_of(SLOT(last, N_rows), &lr) && long_of(SLOT(last, N_cols), &lc) && lr == mr && lc == mc) {
            Py_INCREF(last);
            return last;                               /* the node this recording made */
        }
        if (PyErr_Occurred())
            return NULL;
    }
    /* the recording's first read: a new fill node of this region, remembered as the last */
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL)
        return NULL;
    PyObject *const args8[8] = {SLOT(n, N_op), empty, SLOT(n, N_static), SLOT(n, N_dyn), SLOT(m, G_rows),
                                SLOT(m, G_cols), SLOT(n, N_depth), SLOT(n, N_cn)};
    PyObject *fresh = node(NULL, args8, 8);
    Py_DECREF(empty);
    if (fresh == NULL)
        return NULL;
    PyObject *remembered = PyTuple_Pack(5, buf, PyTuple_GET_ITEM(c, 1), PyTuple_GET_ITEM(c, 2), n, fresh);
    if (remembered == NULL) {
        Py_DECREF(fresh);
        return NULL;
    }
    put_slot(alloc, A_constant, remembered);
    return fresh;
}

/* GpuMat._value(func) where it is a field read: a pending result that is not also a write
 * into memory, or memory nothing is writing whose snapshot (Source) is current and holds no
 * setTo fill; everything else (and several devices) through the Python method. New ref. */
static PyObject *value_of(PyObject *m, PyObject *func, int multi) {
    if (!multi && Py_TYPE(m) == GpuMatT) {
        PyObject *nd = SLOT(m, G_node), *alloc = SLOT(m, G_alloc);
        if (nd != NULL && nd != Py_None && alloc == Py_None) {
            Py_INCREF(nd);
            return nd;
        }
        PyObject *src = SLOT(m, G_src);
        if (nd == Py_None && alloc != NULL && alloc != Py_None && SLOT(alloc, A_constant) != Py_None) {
            PyObject *last = constant_node(m, alloc);
            if (last != NULL || PyErr_Occurred())
                return last;
        }
        if (nd == Py_None && alloc != NULL && alloc != Py_None && src != NULL &&
                SLOT(alloc, A_constant) == Py_None && no_writers(SLOT(alloc, A_writers))) {
            if (src != Py_None && Py_TYPE(src) == SourceT && SLOT(src, S_buf) == SLOT(alloc, A_buf)) {
                Py_INCREF(src);
                return src;
            }
            /* a new snapshot, as Source(buf, y0, x0, rows, cols, depth, cn) makes it */
            PyObject *fresh = SourceT->tp_alloc(SourceT, 0);
            if (fresh == NULL)
                return NULL;
            set_slot(fresh, S_buf, SLOT(alloc, A_buf)); set_slot(fresh, S_y0, SLOT(m, G_y0));
            set_slot(fresh, S_x0, SLOT(m, G_x0)); set_slot(fresh, S_rows, SLOT(m, G_rows));
            set_slot(fresh, S_cols, SLOT(m, G_cols)); set_slot(fresh, S_depth, SLOT(m, G_depth));
            set_slot(fresh, S_cn, SLOT(m, G_cn)); set_slot(fresh, S_rgen, INT0);
            untrack(fresh);                                /* (refers to memory and ints only) */
            set_slot(m, G_src, fresh);
            return fresh;
        }
    }
    return PyObject_CallMethodOneArg(m, s__value, func);
}

/* runtime.read_shared_now(out): memory shared with foreign code is read at the call */
static int read_shared_now(PyObject *out) {
    PyObject *f = PyDict_GetItemWithError(runtime_dict, s_read_shared_now);
    if (f == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "runtime.read_shared_now is missing");
        return -1;
    }
    PyObject *r = PyObject_CallOneArg(f, out);
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* recipes.call's replay in one C call: the recipe's result; RUN where the function just
 * runs; MISS where the Python path decides (a capture, recipes off or checked). */
static PyObject *hot_call(PyObject *mod, PyObject *fn, PyObject *pos, PyObject *kw);

static PyObject *call(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL && RecipeT != NULL);
    if (nargs != 3 || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "call(fn, args: tuple, kw)");
        return NULL;
    }
    return hot_call(mod, args[0], args[1], args[2]);
}

static PyObject *hot_call(PyObject *mod, PyObject *fn, PyObject *pos, PyObject *kw) {
    Settings *now = settings();
    if (now == NULL)
        return NULL;
    int any_shared = *SHARED != 0;                          /* (STATE.any_shared) */
    int multi = now->multi;
    if (!now->enabled || now->check)
        goto miss;
    Memo *memo = memo_of(fn);
    Place *place = NULL;
    Py_ssize_t at = -1;
    PyObject *recipe;                                           /* borrowed */
    if (memo->fn == fn) {                    /* the function's last recipe, if the call fits it */
        int fits = sig_matches(memo->sig, pos, kw);
        if (fits < 0)
            return NULL;
        if (fits) {
            recipe = memo->recipe;
            memo->used = ++MEMO_TICK;
            HITS_LAST++;
            goto replay;
        }
        /* else the recipe this function's call took at this place of the last recording */
        PyObject *rec = thread_attr(s_rec);
        if (rec == NULL)
            return NULL;
        PyObject *objs = SLOT(rec, R_objs);
        if (SLOT(rec, R_open) == Py_True && objs != NULL && PyList_Check(objs))
            at = PyList_GET_SIZE(objs);
        Py_DECREF(rec);
        if (at >= 0) {
            place = place_of(fn, at);
            if (place->fn == fn && place->at == at) {
                fits = sig_matches(place->sig, pos, kw);
                if (fits < 0)
                    return NULL;
                if (fits) {
                    recipe = place->recipe;
                    HITS_PLACE++;
                    goto replay;
                }
            }
        }
    }
    PyObject *const sigargs[2] = {pos, kw};
    PyObject *sig = signature(mod, sigargs, 2);
    if (sig == NULL)
        return NULL;
    if (sig == Py_None) {                    /* arguments recipes do not cover */
        Py_DECREF(sig);
        goto run;
    }
    PyObject *key = PyTuple_Pack(2, fn, sig);
    if (key == NULL) {
        Py_DECREF(sig);
        return NULL;
    }
    recipe = PyDict_GetItemWithError(RECIPES, key);
    if (recipe != NULL && Py_TYPE(recipe) == RecipeT) {      /* kept as this function's last */
        HITS_TABLE++;
        if (place != NULL) {                                  /* (and as the one at this place) */
            Py_INCREF(fn);
            Py_INCREF(sig);
            Py_INCREF(recipe);
            Py_XSETREF(place->fn, fn);
            Py_XSETREF(place->sig, sig);
            Py_XSETREF(place->recipe, recipe);
            place->at = at;
        }
        Py_INCREF(fn);
        Py_INCREF(recipe);
        Py_XSETREF(memo->fn, fn);
        Py_XSETREF(memo->sig, sig);                             /* (takes the reference) */
        Py_XSETREF(memo->recipe, recipe);
        memo->used = ++MEMO_TICK;
    } else
        Py_DECREF(sig);
    if (recipe == NULL) {
        if (PyErr_Occurred()) {
            Py_DECREF(key);
            if (!PyErr_ExceptionMatches(PyExc_TypeError))
                return NULL;
            PyErr_Clear();                   /* an unhashable value: the Python path says so */
            goto miss;
        }
        /* seen once: noted apart (recipes._note), and the caller runs the function; seen
         * before: the Python path captures it (a table of recipes only, which signatures that
         * never repeat — a crop of a new size every frame — cannot flush) */
        int seen = PySet_Contains(NOTED, key);
        if (seen != 0) {
            Py_DECREF(key);
            if (seen < 0)
                return NULL;
            goto miss;
        }
        PyObject *lim = PyDict_GetItemWithError(recipes_dict, LIMIT_NAME);
        if (lim == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "recipes.LIMIT is missing");
            Py_DECREF(key);
            return NULL;
        }
        Py_ssize_t limit = PyLong_AsSsize_t(lim);
        if (limit == -1 && PyErr_Occurred()) {
            Py_DECREF(key);
            return NULL;
        }
        if (PySet_GET_SIZE(NOTED) >= limit && PySet_Clear(NOTED) < 0) {
            Py_DECREF(key);
            return NULL;
        }
        int r = PySet_Add(NOTED, key);
        Py_DECREF(key);
        if (r < 0)
            return NULL;
        goto run;
    }
    Py_DECREF(key);
    if (Py_TYPE(recipe) != RecipeT) {
        /* a count of failed captures: given up on at recipes._MAX_TRIES, else capture again */
        PyObject *tries = PyDict_GetItemWithError(recipes_dict, TRIES_NAME);
        if (tries == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "recipes._MAX_TRIES is missing");
            return NULL;
        }
        int over = PyObject_RichCompareBool(recipe, tries, Py_GE);
        if (over < 0)
            return NULL;
        if (over)
            goto run;
        goto miss;
    }
replay:
    Py_INCREF(recipe);
    PyObject *values = pos, *outs = NULL, *result = NULL;
    PyObject *made_here[16], **made = made_here;            /* the nodes made, by the recipe's order */
    Py_ssize_t nmade = 0;
    Py_INCREF(values);
    if (kw != Py_None && PyDict_GET_SIZE(kw) > 0) {
        PyObject *kv = PyDict_Values(kw), *joined = NULL;
        if (kv != NULL) {
            PyObject *kt = PyList_AsTuple(kv);
            Py_DECREF(kv);
            if (kt != NULL) {
                joined = PySequence_Concat(pos, kt);
                Py_DECREF(kt);
            }
        }
        Py_DECREF(values);
        values = joined;
        if (values == NULL)
            goto done;
    }
    PyObject *nodes = SLOT(recipe, P_nodes), *func = SLOT(recipe, P_func);
    Py_ssize_t nn = PyTuple_GET_SIZE(nodes), nv = PyTuple_GET_SIZE(values);
    if (nn > 16 && (made = PyMem_Malloc(nn * sizeof(PyObject *))) == NULL) {
        made = made_here;
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j < nn; j++) {
        PyObject *t = PyTuple_GET_ITEM(nodes, j);            /* (op, static, dyn, rows, cols, depth, cn, refs) */
        PyObject *refs = PyTuple_GET_ITEM(t, 7);
        Py_ssize_t nr = PyTuple_GET_SIZE(refs);
        PyObject *inputs = PyTuple_New(nr);
        if (inputs == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < nr; k++) {
            Py_ssize_t r = PyLong_AsSsize_t(PyTuple_GET_ITEM(refs, k));
            PyObject *v;
            if (r >= 0) {
                if (r >= nmade) {
                    PyErr_SetString(PyExc_IndexError, "lazycv._hotpath.call: a recipe reads a node not made yet");
                    Py_DECREF(inputs);
                    goto done;
                }
                v = made[r];
                Py_INCREF(v);
            } else {
                Py_ssize_t at = ~r;
                if (at >= nv) {
                    PyErr_SetString(PyExc_IndexError, "lazycv._hotpath.call: a recipe reads a missing argument");
                    Py_DECREF(inputs);
                    goto done;
                }
                v = value_of(PyTuple_GET_ITEM(values, at), func, multi);
            }
            if (v == NULL) {
                Py_DECREF(inputs);
                goto done;
            }
            PyTuple_SET_ITEM(inputs, k, v);
        }
        PyObject *const nargs8[8] = {PyTuple_GET_ITEM(t, 0), inputs, PyTuple_GET_ITEM(t, 1), PyTuple_GET_ITEM(t, 2),
                                     PyTuple_GET_ITEM(t, 3), PyTuple_GET_ITEM(t, 4), PyTuple_GET_ITEM(t, 5),
                                     PyTuple_GET_ITEM(t, 6)};
        PyObject *nd = make_node(nargs8, multi, plain_values(nargs8[2], nargs8[3]));
        Py_DECREF(inputs);
        if (nd == NULL)
            goto done;
        made[nmade++] = nd;
    }
    if ((now = settings()) == NULL)              /* (again: making the nodes may run Python) */
        goto done;
    PyObject *record_on = now->record_on;
    long lim = now->auto_flush;
    Py_INCREF(record_on);
    PyObject *many = SLOT(recipe, P_many), *results = SLOT(recipe, P_results);
    if (many == Py_None) {
        result = lazy_of(GpuMatT, made[PyLong_AsSsize_t(results)], lim);
        if (result != NULL) {
            set_slot(result, G_stream, record_on);
            if (any_shared && read_shared_now(result) < 0)
                Py_CLEAR(result);
        }
    } else {
        Py_ssize_t n = PyTuple_GET_SIZE(results);
        outs = PyList_New(n);
        if (outs != NULL) {
            for (Py_ssize_t i = 0; i < n; i++) {
                PyObject *e = PyTuple_GET_ITEM(results, i), *o;
                if (PyLong_Check(e)) {
                    o = lazy_of(GpuMatT, made[PyLong_AsSsize_t(e)], lim);
                    if (o == NULL) { Py_CLEAR(outs); break; }
                    set_slot(o, G_stream, record_on);
                    if (any_shared && read_shared_now(o) < 0) { Py_DECREF(o); Py_CLEAR(outs); break; }
                } else {
                    o = PyTuple_GET_ITEM(e, 0);      /* a plain value the call returned */
                    Py_INCREF(o);
                }
                PyList_SET_ITEM(outs, i, o);
            }
            if (outs != NULL)
                result = many == (PyObject *)&PyList_Type ? (Py_INCREF(outs), outs)
                                                          : PyObject_CallOneArg(many, outs);
        }
    }
    Py_DECREF(record_on);
done:
    Py_XDECREF(outs);
    for (Py_ssize_t j = 0; j < nmade; j++)
        Py_DECREF(made[j]);
    if (made != made_here)
        PyMem_Free(made);
    Py_XDECREF(values);
    Py_DECREF(recipe);
    return result;
miss:
    Py_INCREF(MISS);
    return MISS;
run:
    Py_INCREF(RUN);
    return RUN;
}

/* ------------------------------------------------------------------ a flush's end */
/* A new Allocation(buf), as ir.Allocation.__init__ makes it, left out of the cyclic GC: it refers
 * to its memory and to plain values only, until a pending write joins it (Allocation.add_writer
 * tracks it again: a write's stand-in GpuMat refers back to it). New ref. */
static PyObject *new_allocation(PyObject *buf, PyObject *device) {
    PyObject *a = AllocT->tp_alloc(AllocT, 0);
    if (a == NULL)
        return NULL;
    PyObject *writers = PyTuple_New(0);
    if (writers == NULL) {
        Py_DECREF(a);
        return NULL;
    }
    set_slot(a, A_buf, buf); set_slot(a, A_device, device); set_slot(a, A_cols, Py_None);
    set_slot(a, A_exported, Py_False); put_slot(a, A_writers, writers); set_slot(a, A_foreign, Py_None);
    set_slot(a, A_constant, Py_None);
    untrack(a);
    return a;
}

/* compose's GpuMat results of a batch program (GpuMat._over over a new Allocation, each): one
 * GpuMat a buffer of ``bufs``, all ``rows`` x ``cols`` of ``depth`` and ``cn``; with ``group`` > 0
 * a list of lists of ``group`` (an item's planes). */
static PyObject *over(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(GpuMatT != NULL && AllocT != NULL);
    if (nargs != 6 || !PyList_Check(args[0]) || !PyLong_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "over(bufs: list, rows, cols, depth, cn, group: int)");
        return NULL;
    }
    PyObject *bufs = args[0];
    Py_ssize_t n = PyList_GET_SIZE(bufs), group = PyLong_AsSsize_t(args[5]);
    if (group < 0 || (group > 0 && n % group)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "over: the buffers are not whole groups");
        return NULL;
    }
    PyObject *device = thread_attr(s_device);
    if (device == NULL)
        return NULL;
    PyObject *mats = PyList_New(n), *out = NULL;
    if (mats == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = new_allocation(PyList_GET_ITEM(bufs, i), device);
        if (a == NULL)
            goto done;
        PyObject *m = GpuMatT->tp_alloc(GpuMatT, 0);
        if (m == NULL) {
            Py_DECREF(a);
            goto done;
        }
        put_slot(m, G_alloc, a);
        set_slot(m, G_y0, INT0); set_slot(m, G_x0, INT0);
        set_slot(m, G_rows, args[1]); set_slot(m, G_cols, args[2]);
        set_slot(m, G_depth, args[3]); set_slot(m, G_cn, args[4]);
        set_slot(m, G_node, Py_None); set_slot(m, G_src, Py_None); set_slot(m, G_parent, Py_None);
        set_slot(m, G_views, Py_None); set_slot(m, G_stream, Py_None);
        PyList_SET_ITEM(mats, i, m);
    }
    if (group == 0) {
        out = mats;
        mats = NULL;
        goto done;
    }
    if ((out = PyList_New(n / group)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n / group; i++) {
        PyObject *item = PyList_GetSlice(mats, i * group, (i + 1) * group);
        if (item == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    Py_XDECREF(mats);
    Py_DECREF(device);
    return out;
}

/* FlushProgram.run's gathers: ``[values[i] for i in at]`` (None where one of them is None: a
 * value is gone), and with ``items`` ``[values[s][1][b] for s, b in at]`` (a slab item of the
 * outputs (slab, items) each). */
static PyObject *pick(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyList_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "pick(values: list, at: tuple, items: bool)");
        return NULL;
    }
    PyObject *values = args[0], *at = args[1];
    int items = PyObject_IsTrue(args[2]);
    if (items < 0)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(at), nv = PyList_GET_SIZE(values);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = PyTuple_GET_ITEM(at, k), *v;
        if (items && (!PyTuple_Check(a) || PyTuple_GET_SIZE(a) != 2)) {
            PyErr_SetString(PyExc_TypeError, "pick: an item's place is not (slab, index)");
            goto fail;
        }
        Py_ssize_t i = PyLong_AsSsize_t(items ? PyTuple_GET_ITEM(a, 0) : a);
        if (i == -1 && PyErr_Occurred())
            goto fail;
        if (i < 0 || i >= nv) {
            PyErr_SetString(PyExc_IndexError, "pick: a position out of range");
            goto fail;
        }
        v = PyList_GET_ITEM(values, i);
        if (items) {
            Py_ssize_t b = PyLong_AsSsize_t(PyTuple_GET_ITEM(a, 1));
            PyObject *its = b == -1 && PyErr_Occurred() ? NULL : PySequence_GetItem(v, 1);
            if (its == NULL)
                goto fail;
            v = PySequence_GetItem(its, b);
            Py_DECREF(its);
            if (v == NULL)
                goto fail;
        } else {
            if (v == Py_None) {
                Py_DECREF(out);
                Py_RETURN_NONE;
            }
            Py_INCREF(v);
        }
        PyList_SET_ITEM(out, k, v);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ir.Recording.values: the objects weak references refer to, None where one is gone */
static PyObject *values_of(PyObject *mod, PyObject *refs) {
    if (!PyList_Check(refs)) {
        PyErr_SetString(PyExc_TypeError, "values_of(refs: list of weak references)");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(refs);
    PyObject *out = PyList_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = deref(PyList_GET_ITEM(refs, i));
        if (o == NULL) {
            o = Py_None;
            Py_INCREF(o);
        }
        PyList_SET_ITEM(out, i, o);
    }
    return out;
}

/* gc tracking again for an object the hot path left out (ir.Allocation.add_writer) */
static PyObject *track(PyObject *mod, PyObject *o) {
    if (PyObject_IS_GC(o) && !PyObject_GC_IsTracked(o))
        PyObject_GC_Track(o);
    Py_RETURN_NONE;
}

/* whether ``op`` is the fill op (its name "fill"): asked once a result a flush binds; the answer
 * for the last op asked is kept (a frame's results are mostly of a few ops). 1, 0, -1 an error. */
static PyObject *fill_asked;                      /* (that op, held) */
static int fill_answer;

static int is_fill(PyObject *op) {
    if (op == fill_asked)
        return fill_answer;
    PyObject *name = PyObject_GetAttr(op, s_name);
    if (name == NULL)
        return -1;
    int fill = PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, "fill") == 0;
    Py_DECREF(name);
    Py_INCREF(op);
    Py_XSETREF(fill_asked, op);
    fill_answer = fill;
    return fill;
}

/* program._FlushProgramBase._finish's loops: each computed node reads its buffer from now on
 * (a Source over it), the nodes join ``computed``, and each sink (binds: (position in mats,
 * output index)) holds its output's memory — through GpuMat._bind_result where that does more
 * than set fields (views to move along, a fill to remember). */
static PyObject *finish(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL && AllocT != NULL);
    if (nargs != 5 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2]) ||
            !PyList_Check(args[3]) || !PyList_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "finish(nodes, bufs, binds, mats, computed: lists)");
        return NULL;
    }
    PyObject *nodes = args[0], *bufs = args[1], *binds = args[2], *mats = args[3], *computed = args[4];
    Py_ssize_t n = PyList_GET_SIZE(nodes);
    if (PyList_GET_SIZE(bufs) != n) {
        PyErr_SetString(PyExc_ValueError, "finish: as many buffers as nodes");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *nd = PyList_GET_ITEM(nodes, i), *buf = PyList_GET_ITEM(bufs, i);
        if (Py_TYPE(nd) != NodeT) {
            PyErr_SetString(PyExc_TypeError, "finish: a node is not an ir.Node");
            return NULL;
        }
        PyObject *src = SourceT->tp_alloc(SourceT, 0);
        if (src == NULL)
            return NULL;
        set_slot(src, S_buf, buf); set_slot(src, S_y0, INT0); set_slot(src, S_x0, INT0);
        set_slot(src, S_rows, SLOT(nd, N_rows)); set_slot(src, S_cols, SLOT(nd, N_cols));
        set_slot(src, S_depth, SLOT(nd, N_depth)); set_slot(src, S_cn, SLOT(nd, N_cn));
        set_slot(src, S_rgen, INT0);
        untrack(src);                                      /* (refers to memory and ints only) */
        put_slot(nd, N_result, src);
    }
    Py_ssize_t have = PyList_GET_SIZE(computed);
    if (PyList_SetSlice(computed, have, have, nodes) < 0)
        return NULL;
    PyObject *device = thread_attr(s_device);
    if (device == NULL)
        return NULL;
    PyObject *allocs = PyDict_New();                       /* output index -> its Allocation */
    if (allocs == NULL) {
        Py_DECREF(device);
        return NULL;
    }
    PyObject *result = NULL;
    Py_ssize_t nb = PyList_GET_SIZE(binds), nm = PyList_GET_SIZE(mats);
    for (Py_ssize_t j = 0; j < nb; j++) {
        PyObject *b = PyList_GET_ITEM(binds, j);
        if (!PyTuple_Check(b) || PyTuple_GET_SIZE(b) != 2) {
            PyErr_SetString(PyExc_TypeError, "finish: a bind is not (position, output)");
            goto done;
        }
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(b, 0)), r = PyLong_AsSsize_t(PyTuple_GET_ITEM(b, 1));
        if (PyErr_Occurred())
            goto done;
        if (at < 0 || at >= nm || r < 0 || r >= n) {
            PyErr_SetString(PyExc_IndexError, "finish: a bind out of range");
            goto done;
        }
        PyObject *a = PyDict_GetItemWithError(allocs, PyTuple_GET_ITEM(b, 1));   /* borrowed */
        if (a == NULL) {
            if (PyErr_Occurred())
                goto done;
            a = new_allocation(PyList_GET_ITEM(bufs, r), device);
            if (a == NULL)
                goto done;
            int bad = PyDict_SetItem(allocs, PyTuple_GET_ITEM(b, 1), a);
            Py_DECREF(a);                                  /* (allocs holds it) */
            if (bad < 0)
                goto done;
        }
        PyObject *m = PyList_GET_ITEM(mats, at);
        PyObject *nd = Py_TYPE(m) == GpuMatT ? SLOT(m, G_node) : NULL;
        PyObject *views = nd != NULL ? SLOT(m, G_views) : NULL;
        int plain = nd != NULL && (views == NULL || views == Py_None ||
                                   (PyList_Check(views) && PyList_GET_SIZE(views) == 0));
        if (plain && nd != Py_None && Py_TYPE(nd) == NodeT) {
            /* a fill remembers its value (GpuMat._bind_result): only through Python */
            int fill = is_fill(SLOT(nd, N_op));
            if (fill < 0)
                goto done;
            plain = !fill;
        }
        if (plain) {                                       /* GpuMat._bind_result, the fields */
            set_slot(m, G_alloc, a); set_slot(m, G_y0, INT0); set_slot(m, G_x0, INT0);
            set_slot(m, G_node, Py_None); set_slot(m, G_src, Py_None); set_slot(m, G_parent, Py_None);
        } else {
            PyObject *res = PyObject_CallMethod(m, "_bind_result", "OOO", a, INT0, INT0);
            if (res == NULL)
                goto done;
            Py_DECREF(res);
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_DECREF(allocs);
    Py_DECREF(device);
    return result;
}

/* runtime._let_go_of_history's loop: each node a flush computed lets go of its inputs; one
 * that a recording still open numbered closes it (ir.closed_by_flush); one that another node
 * holds (a consumer reads its memory) is registered as a reader of its buffer (ir.READERS);
 * then ``computed`` is emptied. */
static PyObject *let_go(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL);
    if (nargs != 1 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "let_go(computed: list)");
        return NULL;
    }
    PyObject *computed = args[0];
    PyObject *empty = PyTuple_New(0);
    if (empty == NULL)
        return NULL;
    PyObject *opened = PyDict_GetItemString(ir_dict, "OPEN");     /* borrowed */
    if (opened == NULL || !PyDict_Check(opened)) {
        Py_DECREF(empty);
        PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.OPEN is missing");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(computed); i++) {
        PyObject *nd = PyList_GET_ITEM(computed, i);
        Py_INCREF(nd);                                     /* (ours while the inputs go) */
        if (Py_TYPE(nd) != NodeT) {
            Py_DECREF(nd);
            Py_DECREF(empty);
            PyErr_SetString(PyExc_TypeError, "let_go: a computed value is not an ir.Node");
            return NULL;
        }
        set_slot(nd, N_inputs, empty);
        PyObject *gen = SLOT(nd, N_rgen);
        int numbered = gen != NULL ? PyObject_IsTrue(gen) : 0;
        int open = numbered > 0 ? PyDict_Contains(opened, gen) : numbered;
        if (open < 0) {
            Py_DECREF(nd);
            Py_DECREF(empty);
            return NULL;
        }
        if (open) {
            PyObject *fn = PyDict_GetItemString(ir_dict, "closed_by_flush");
            PyObject *r = fn != NULL ? PyObject_CallOneArg(fn, nd) : NULL;
            if (r == NULL) {
                if (fn == NULL)
                    PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.closed_by_flush is missing");
                Py_DECREF(nd);
                Py_DECREF(empty);
                return NULL;
            }
            Py_DECREF(r);
        }
        /* held by more than the list and this loop: another node took it as an input */
        PyObject *res = SLOT(nd, N_result);
        if (Py_REFCNT(nd) > 2 && res != NULL && Py_TYPE(res) == SourceT) {
            PyObject *wr = PyWeakref_NewRef(nd, NULL);
            int bad = wr == NULL;
            if (!bad) {
                untrack(wr);
                bad = add_reader(SLOT(res, S_buf), wr, 0) < 0;
                Py_DECREF(wr);
            }
            if (bad) {
                Py_DECREF(nd);
                Py_DECREF(empty);
                return NULL;
            }
        }
        Py_DECREF(nd);
    }
    Py_DECREF(empty);
    if (PyList_SetSlice(computed, 0, PyList_GET_SIZE(computed), NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ a replayed flush */
/* The object a weak reference refers to (new ref), or NULL without an error when it is gone. */
static PyObject *deref(PyObject *wr) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *o = NULL;
    if (PyWeakref_GetRef(wr, &o) < 0)
        PyErr_Clear();
    return o;
#else
    PyObject *o = PyWeakref_GetObject(wr);
    if (o == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (o == Py_None)
        return NULL;
    Py_INCREF(o);
    return o;
#endif
}

static PyObject *runtime_fn(PyObject *name) {            /* borrowed */
    PyObject *f = PyDict_GetItemWithError(runtime_dict, name);
    if (f == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "lazycv._hotpath: runtime.%U is missing", name);
    return f;
}

/* ir.new_recording in C (bound as it by recipes.bind): the calling thread's recording ends and
 * a fresh one starts, made as Recording.__init__ makes it; returns the one that ended. Every
 * flush does this once (a W2 frame's flush: 1.5 µs here in Python). */
static PyObject *new_recording(PyObject *mod, PyObject *unused) {
    BOUND(RecordingT != NULL);
    PyObject *open = PyDict_GetItemWithError(ir_dict, s_OPEN);             /* borrowed */
    PyObject *gens = open != NULL ? PyDict_GetItemWithError(ir_dict, s__GENERATIONS) : NULL;
    PyObject *prune_at = gens != NULL ? PyDict_GetItemWithError(ir_dict, s__OPEN_PRUNE) : NULL;
    if (prune_at == NULL || !PyDict_CheckExact(open) || !PyList_Check(prune_at) || PyList_GET_SIZE(prune_at) < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.OPEN, _GENERATIONS or _OPEN_PRUNE is missing");
        return NULL;
    }
    PyObject *done = thread_attr(s_rec);
    if (done == NULL)
        return NULL;
    PyObject *rec = RecordingT->tp_alloc(RecordingT, 0), *gen = NULL, *wr = NULL;
    if (rec == NULL)
        goto fail;
    put_slot(rec, R_objs, PyList_New(0));
    put_slot(rec, R_tokens, PyList_New(0));
    put_slot(rec, R_bufs, PyDict_New());
    set_slot(rec, R_nbufs, INT0);
    set_slot(rec, R_open, Py_True);
    if (SLOT(rec, R_objs) == NULL || SLOT(rec, R_tokens) == NULL || SLOT(rec, R_bufs) == NULL ||
            (gen = PyIter_Next(gens)) == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir._GENERATIONS ended");
        goto fail;
    }
    set_slot(rec, R_gen, gen);
    if ((wr = PyWeakref_NewRef(rec, NULL)) == NULL || PyDict_SetItem(open, gen, wr) < 0)
        goto fail;
    Py_ssize_t at = PyLong_AsSsize_t(PyList_GET_ITEM(prune_at, 0));
    if (at == -1 && PyErr_Occurred())
        goto fail;
    if (PyDict_GET_SIZE(open) >= at) {                     /* (recordings of threads that ended) */
        PyObject *fn = PyDict_GetItemWithError(ir_dict, s_prune_open), *r;
        if (fn == NULL || (r = PyObject_CallNoArgs(fn)) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.prune_open is missing");
            goto fail;
        }
        Py_DECREF(r);
    }
    if (PyObject_SetAttr(IR_THREAD, s_rec, rec) < 0)
        goto fail;
    PyObject *old = Py_TYPE(done) == RecordingT ? SLOT(done, R_gen) : NULL;    /* OPEN.pop(done.gen, None) */
    if (old != NULL && PyDict_DelItem(open, old) < 0) {
        if (!PyErr_ExceptionMatches(PyExc_KeyError))
            goto fail;
        PyErr_Clear();
    }
    Py_DECREF(wr);
    Py_DECREF(gen);
    Py_DECREF(rec);
    return done;
fail:
    Py_XDECREF(wr);
    Py_XDECREF(gen);
    Py_XDECREF(rec);
    Py_DECREF(done);
    return NULL;
}

/* plancache.ReplayKey in C: a flush's replay key, its hash computed once. The Python class's
 * __hash__ and __eq__ are Python calls on every look-up of the replay table (a W2 frame's flush
 * made a key and looked it up: about a µs of Python); this type answers both in C, the same
 * way (identity, then the hash, then the parts). recipes.bind makes it plancache.ReplayKey. */
typedef struct {
    PyObject_HEAD
    PyObject *parts;
    Py_hash_t hash;
} KeyObject;

static PyTypeObject KeyType;

/* hash(t) of a tuple, as CPython's tuple hash computes it (xxHash's mixing of the items' hashes),
 * where the items of the recording's tokens (``tokens``: t is (fuse, tokens, live)) take a
 * kept token's hash from TOKENS_HASH: a loop's key is hashed once a token, not once a frame. */
#if SIZEOF_PY_UHASH_T > 4
#define XXPRIME_1 ((Py_uhash_t)11400714785074694791ULL)
#define XXPRIME_2 ((Py_uhash_t)14029467366897019727ULL)
#define XXPRIME_5 ((Py_uhash_t)2870177450012600261ULL)
#define XXROTATE(x) ((x << 31) | (x >> 33))
#else
#define XXPRIME_1 ((Py_uhash_t)2654435761UL)
#define XXPRIME_2 ((Py_uhash_t)2246822519UL)
#define XXPRIME_5 ((Py_uhash_t)374761393UL)
#define XXROTATE(x) ((x << 13) | (x >> 19))
#endif

static Py_hash_t tuple_hash(PyObject *t, int tokens) {
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    Py_uhash_t acc = XXPRIME_5;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(t, i);
        Py_hash_t lane;
        if (tokens && item == TOKENS[i & (TOKENS_SIZE - 1)]) {
            Py_hash_t *kept = &TOKENS_HASH[i & (TOKENS_SIZE - 1)];
            lane = *kept != 0 ? *kept : PyObject_Hash(item);
            if (lane != -1)
                *kept = lane;                               /* (a hash of 0 is asked again) */
        } else
            lane = i == 1 && !tokens && PyTuple_CheckExact(item) ? tuple_hash(item, 1) : PyObject_Hash(item);
        if (lane == -1)
            return -1;
        acc += (Py_uhash_t)lane * XXPRIME_2;
        acc = XXROTATE(acc);
        acc *= XXPRIME_1;
    }
    acc += n ^ (XXPRIME_5 ^ 3527539UL);
    return acc == (Py_uhash_t)-1 ? 1546275796 : (Py_hash_t)acc;
}

static PyObject *key_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *parts;
    if ((kw != NULL && PyDict_GET_SIZE(kw) > 0) || !PyArg_UnpackTuple(args, "ReplayKey", 1, 1, &parts))
        return NULL;
    Py_hash_t h = PyTuple_CheckExact(parts) && PyTuple_GET_SIZE(parts) == 3 ? tuple_hash(parts, 0) : PyObject_Hash(parts);
    if (h == -1)
        return NULL;
    KeyObject *self = (KeyObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(parts);
    self->parts = parts;
    self->hash = h;
    return (PyObject *)self;
}

static int key_traverse(KeyObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->parts);
    return 0;
}

static int key_clear(KeyObject *self) {
    Py_CLEAR(self->parts);
    return 0;
}

static void key_dealloc(KeyObject *self) {
    PyObject_GC_UnTrack(self);
    key_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_hash_t key_hash(KeyObject *self) {
    return self->hash;
}

static PyObject *key_richcompare(PyObject *a, PyObject *b, int op) {
    if ((op != Py_EQ && op != Py_NE) || Py_TYPE(b) != Py_TYPE(a))
        Py_RETURN_NOTIMPLEMENTED;
    KeyObject *x = (KeyObject *)a, *y = (KeyObject *)b;
    int eq = a == b;
    if (!eq && x->hash == y->hash && x->parts != NULL && y->parts != NULL) {
        eq = PyObject_RichCompareBool(x->parts, y->parts, Py_EQ);
        if (eq < 0)
            return NULL;
    }
    return PyBool_FromLong(op == Py_EQ ? eq : !eq);
}

static PyMemberDef key_members[] = {
    {"parts", T_OBJECT, offsetof(KeyObject, parts), READONLY, "(fuse, the recording's tokens, the live mats)"},
    {NULL},
};

static PyTypeObject KeyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazycv._hotpath.ReplayKey",
    .tp_basicsize = sizeof(KeyObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "plancache.ReplayKey in C: a replay key with its hash computed once",
    .tp_new = key_new,
    .tp_dealloc = (destructor)key_dealloc,
    .tp_traverse = (traverseproc)key_traverse,
    .tp_clear = (inquiry)key_clear,
    .tp_hash = (hashfunc)key_hash,
    .tp_richcompare = key_richcompare,
    .tp_members = key_members,
};

/* ------------------------------------------------------------------ a one-kernel program's run
 * program.SingleFlushProgram.run with runtime._run_program's counts, in C: the run of a flush
 * that replays one kernel of one item (a frame at a time: W2). The same steps in the same
 * order: the backend check, the nodes, the outputs (BufferPool.outputs_for), the arguments
 * (single_args), the stream, the launch (the backend's), the counts and the results' binding
 * (finish); ``stats`` is STATE.stats. 1 done, 0 declined (a value gone, another backend: the
 * general path decides), -1 an error, after runtime._program_failed's bookkeeping, as
 * _run_program does it. */
static PyObject *single_args(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);

static int bump(PyObject *stats, PyObject *name, PyObject *by) {
    PyObject *was = PyDict_GetItemWithError(stats, name);
    if (was == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, name);
        return -1;
    }
    PyObject *now = PyNumber_Add(was, by);
    if (now == NULL)
        return -1;
    int r = PyDict_SetItem(stats, name, now);
    Py_DECREF(now);
    return r;
}

static PyTypeObject LauncherType;
static PyObject *launcher_run(PyObject *o, PyObject *args, void *stream);

static int run_single(PyObject *mod, PyObject *replay, PyObject *prog, PyObject *rec, PyObject *mats,
                      PyObject *stats) {
    PyObject *be = NULL, *values = NULL, *nodes = NULL, *bufs = NULL, *args = NULL, *r = NULL;
    int done = -1;
    if ((be = PyObject_GetAttr(STATE, s_backend)) == NULL)
        goto fail;
    if (be != SLOT(prog, F_backend)) {
        done = 0;
        goto out;
    }
    PyObject *objs = SLOT(rec, R_objs), *results = SLOT(prog, F_results);
    if (objs == NULL || !PyList_Check(objs) || results == NULL || !PyList_Check(results)) {
        PyErr_SetString(PyExc_TypeError, "lazycv._hotpath.run_single: a recording or program of another shape");
        goto fail;
    }
    if ((values = values_of(mod, objs)) == NULL)
        goto fail;
    Py_ssize_t nr = PyList_GET_SIZE(results), nv = PyList_GET_SIZE(values);
    if ((nodes = PyList_New(nr)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < nr; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PyList_GET_ITEM(results, i));
        if (p == -1 && PyErr_Occurred())
            goto fail;
        PyObject *v = p >= 0 && p < nv ? PyList_GET_ITEM(values, p) : Py_None;
        if (v == Py_None) {                               /* a value is gone */
            done = 0;
            goto out;
        }
        Py_INCREF(v);
        PyList_SET_ITEM(nodes, i, v);
    }
    PyObject *pool = PyObject_GetAttr(be, s_buffers);
    if (pool == NULL)
        goto fail;
    bufs = PyObject_CallMethodObjArgs(pool, s_outputs_for, prog, SLOT(prog, F_shapes), NULL);
    Py_DECREF(pool);
    if (bufs == NULL)
        goto fail;
    if (SLOT(prog, F_slab) == Py_True) {                  /* one slab's items: bufs[0][1] */
        PyObject *first = PySequence_GetItem(bufs, 0), *items = first != NULL ? PySequence_GetItem(first, 1) : NULL;
        Py_XDECREF(first);
        if (items == NULL)
            goto fail;
        Py_SETREF(bufs, items);
    }
    if (!PyList_Check(bufs)) {
        PyObject *lst = PySequence_List(bufs);
        if (lst == NULL)
            goto fail;
        Py_SETREF(bufs, lst);
    }
    PyObject *memo = SLOT(prog, F_memo), *recipe = SLOT(prog, F_recipe);
    PyObject *const sa[4] = {values, recipe != NULL ? recipe : Py_None, bufs, memo != NULL ? memo : Py_None};
    if ((args = single_args(mod, sa, 4)) == NULL)
        goto fail;
    if (args == Py_None) {                                 /* a value is gone: the general path decides */
        done = 0;
        goto out;
    }
    PyObject *binds = SLOT(prog, F_binds);
    if (binds == NULL || !PyList_Check(binds)) {
        PyErr_SetString(PyExc_TypeError, "lazycv._hotpath.run_single: the program's binds are not a list");
        goto fail;
    }
    int active = flag(streams_dict, s_ACTIVE);
    if (active < 0)
        goto fail;
    if (active) {                                          /* streams.select_mats(the results' mats) */
        Py_ssize_t nb = PyList_GET_SIZE(binds);
        PyObject *sel = PyList_New(nb), *fn = PyDict_GetItemWithError(streams_dict, s_select_mats);
        if (sel == NULL || fn == NULL) {
            Py_XDECREF(sel);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: streams.select_mats is missing");
            goto fail;
        }
        for (Py_ssize_t i = 0; i < nb; i++) {
            PyObject *b = PyList_GET_ITEM(binds, i);
            PyObject *m = PyTuple_Check(b) && PyTuple_GET_SIZE(b) == 2 ?
                PyObject_GetItem(mats, PyTuple_GET_ITEM(b, 0)) : NULL;
            if (m == NULL) {
                Py_DECREF(sel);
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "lazycv._hotpath.run_single: a bind is not (position, output)");
                goto fail;
            }
            PyList_SET_ITEM(sel, i, m);
        }
        r = PyObject_CallOneArg(fn, sel);
        Py_DECREF(sel);
        if (r == NULL)
            goto fail;
        Py_CLEAR(r);
    }
    /* the launch: through the program's launcher where the backend gave one and nothing stands
     * between (no streams in use, no capture, no launch replaced on the instance but the
     * stream watch, idle without streams), else be.launch */
    PyObject *lau = SLOT(prog, F_launcher);
    int direct = lau != NULL && Py_TYPE(lau) == &LauncherType && !active;
    if (direct) {
        PyObject *tape = PyDict_GetItemWithError(streams_dict, s_TAPE), *own = PyObject_GetAttr(be, s___dict__);
        direct = tape == Py_None && own != NULL && PyDict_Check(own);
        if (direct) {
            PyObject *mine = PyDict_GetItemWithError(own, s_launch);
            direct = mine == NULL ? !PyErr_Occurred() : mine == PyDict_GetItemWithError(own, s__lazycv_watched);
        }
        Py_XDECREF(own);
        if (PyErr_Occurred())
            goto fail;
    }
    if (direct) {
        if ((r = launcher_run(lau, args, NULL)) == NULL)
            goto fail;
        if (r == Py_None)                                  /* an argument Python writes */
            direct = 0;
        else {
            long err = PyLong_AsLong(r);
            if (err == -1 && PyErr_Occurred())
                goto fail;
            if (err) {
                PyErr_Format(PyExc_RuntimeError, "lazycv: cuLaunchKernel failed: CUresult %ld", err);
                goto fail;
            }
        }
        Py_CLEAR(r);
    }
    if (!direct) {
        PyObject *const la[5] = {be, SLOT(prog, F_compiled), SLOT(prog, F_rows), SLOT(prog, F_cols), args};
        if ((r = PyObject_VectorcallMethod(s_launch, la, 5 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL)) == NULL)
            goto fail;
        Py_CLEAR(r);
        if (lau == NULL || lau == Py_None) {               /* asked once, after the first launch */
            PyObject *const qa[4] = {be, SLOT(prog, F_compiled), SLOT(prog, F_rows), SLOT(prog, F_cols)};
            if ((r = PyObject_VectorcallMethod(s_launcher, qa, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL)) == NULL)
                goto fail;
            set_slot(prog, F_launcher, r == Py_None ? Py_False : r);
            Py_CLEAR(r);
        }
    }
    /* _FlushProgramBase._finish: the counts, then the results bound */
    PyObject *computed = PyObject_GetAttr(STATE, s_computed);
    if (computed == NULL || bump(stats, s_kernels_launched, ONE) < 0 ||
            bump(stats, s_ops_fused, SLOT(prog, F_ops_fused)) < 0) {
        Py_XDECREF(computed);
        goto fail;
    }
    PyObject *const fa[5] = {nodes, bufs, binds, mats, computed};
    r = finish(mod, fa, 5);
    Py_DECREF(computed);
    if (r == NULL)
        goto fail;
    Py_CLEAR(r);
    /* runtime._run_program's counts */
    if (bump(stats, s_flushes, ONE) < 0 || bump(stats, s_program_hits, ONE) < 0)
        goto fail;
    done = 1;
    goto out;
fail:
    {                                                      /* runtime._program_failed, the error kept */
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyObject *fn = PyDict_GetItemString(runtime_dict, "_program_failed");
        PyObject *res = fn != NULL ? PyObject_CallFunctionObjArgs(fn, replay, mats, NULL) : NULL;
        if (res == NULL)
            PyErr_Clear();
        Py_XDECREF(res);
        PyErr_Restore(type, value, tb);
        done = -1;
    }
out:
    Py_XDECREF(be);
    Py_XDECREF(values);
    Py_XDECREF(nodes);
    Py_XDECREF(bufs);
    Py_XDECREF(args);
    return done;
}

/* Whether STATE.written (a WeakSet of memory with pending writes) holds anything: its set of
 * references is read first, since WeakSet.__len__ is a Python call (the usual answer, empty,
 * costs no call). 1, 0, or -1 an error. */
static int any_written(void) {
    PyObject *ws = PyObject_GetAttr(STATE, s_written);
    if (ws == NULL)
        return -1;
    PyObject *data = PyObject_GetAttr(ws, s_data);
    int r;
    if (data != NULL && PyAnySet_Check(data) && PySet_GET_SIZE(data) == 0)
        r = 0;
    else {
        PyErr_Clear();
        r = PyObject_IsTrue(ws);
    }
    Py_XDECREF(data);
    Py_DECREF(ws);
    return r;
}

/* runtime.count_recorded in C (its twin): the ops recorded since the last count, read off the
 * node numbers (ir._RECORDED) less the numbers taken for other uses (ir._SPARE), into
 * ``stats`` (STATE.stats, a dict)["ops_recorded"]. 0, or -1 an error. */
static int count_recorded(PyObject *stats) {
    PyObject *spare = PyDict_GetItemWithError(ir_dict, s__SPARE);
    if (spare == NULL || !PyList_Check(spare) || PyList_GET_SIZE(spare) < 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir._SPARE is missing");
        return -1;
    }
    PyObject *now = PyIter_Next(RECORDED);          /* (takes a number itself: the numbers only grow) */
    if (now == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir._RECORDED ended");
        return -1;
    }
    PyObject *seen = PyObject_GetAttr(STATE, s_seq_counted), *ops = NULL;
    long long n = PyLong_AsLongLong(now), was = seen != NULL ? PyLong_AsLongLong(seen) : -1;
    long long taken = PyLong_AsLongLong(PyList_GET_ITEM(spare, 0));
    int r = -1;
    if (seen == NULL || PyErr_Occurred())
        goto done;
    if ((ops = PyLong_FromLongLong(n - was - 1 - taken)) == NULL)
        goto done;
    if (bump(stats, s_ops_recorded, ops) < 0 || PyList_SetItem(spare, 0, (Py_INCREF(INT0), INT0)) < 0 ||
            PyObject_SetAttr(STATE, s_seq_counted, now) < 0)
        goto done;
    r = 0;
done:
    Py_XDECREF(ops);
    Py_XDECREF(seen);
    Py_DECREF(now);
    return r;
}

/* A set of objects by identity, for a flush's bookkeeping: open addressing over a power-of-two
 * table (on the stack up to PTRSET_STACK slots). runtime._flush keeps sets of ids; one made
 * of Python ints cost about 3 % of a W3 frame (150 results). */
#define PTRSET_STACK 512
typedef struct { void **slots; Py_ssize_t mask, used; void *stack[PTRSET_STACK]; } PtrSet;

/* ``most``: how many it will hold, or a first guess (it grows past half full) */
static int ptrset_init(PtrSet *s, Py_ssize_t most) {
    Py_ssize_t cap = 16;
    while (cap < 2 * most + 2)
        cap *= 2;
    s->mask = cap - 1;
    s->used = 0;
    s->slots = cap <= PTRSET_STACK ? s->stack : PyMem_Calloc(cap, sizeof(void *));
    if (s->slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (s->slots == s->stack)
        memset(s->stack, 0, cap * sizeof(void *));
    return 0;
}

static void ptrset_free(PtrSet *s) {
    if (s->slots != NULL && s->slots != s->stack)
        PyMem_Free(s->slots);
    s->slots = NULL;
}

static int ptrset_add(PtrSet *s, void *p, int add);

/* twice the slots, the same members (-1: no memory, the set unchanged) */
static int ptrset_grow(PtrSet *s) {
    void **old = s->slots;
    Py_ssize_t n = s->mask + 1;
    void **slots = PyMem_Calloc(2 * n, sizeof(void *));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    s->slots = slots;
    s->mask = 2 * n - 1;
    s->used = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (old[i] != NULL)
            ptrset_add(s, old[i], 1);
    if (old != s->stack)
        PyMem_Free(old);
    return 0;
}

/* 1 where ``p`` was (or with ``add``, is now) not a member, 0 where it is one, -1 no memory to grow */
static int ptrset_add(PtrSet *s, void *p, int add) {
    if (add && 2 * (s->used + 1) > s->mask + 1 && ptrset_grow(s) < 0)
        return -1;
    uintptr_t h = (uintptr_t)p >> 4;
    for (Py_ssize_t i = (h ^ (h >> 9)) & s->mask;; i = (i + 1) & s->mask) {
        if (s->slots[i] == p)
            return 0;
        if (s->slots[i] == NULL) {
            if (add) {
                s->slots[i] = p;
                s->used++;
            }
            return 1;
        }
    }
}

/* the set's objects as Python's set of their ids (runtime._flush's ``requested``). New ref. */
static PyObject *ptrset_ids(PtrSet *s) {
    PyObject *ids = PySet_New(NULL);
    for (Py_ssize_t i = 0; ids != NULL && i <= s->mask; i++) {
        if (s->slots[i] == NULL)
            continue;
        PyObject *id = PyLong_FromVoidPtr(s->slots[i]);
        if (id == NULL || PySet_Add(ids, id) < 0)
            Py_CLEAR(ids);
        Py_XDECREF(id);
    }
    return ids;
}

/* runtime.flush(requested)'s work (runtime._flush) when the calling thread's results are all
 * there is: its live pending results, their owners, the replay key (plancache.PlanCache.
 * replay_key) and the remembered flush; then a new recording, the counts, and the remembered
 * program's run with the letting go of history — or runtime._flush_planned for the rest (no
 * program, or one that declines, or nothing remembered). Returns False, having changed nothing
 * but dropping the thread's dead pending references, where the Python path decides: other
 * threads' results, pending writes into memory, several devices, a batch program being
 * captured. (Streams are the program's business: streams.select_mats.) */
static PyObject *flush_alone(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL && RecipeT != NULL);
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "flush_alone(requested)");
        return NULL;
    }
    PyObject *requested = PySequence_Fast(args[0], "flush_alone: requested must be a sequence");
    if (requested == NULL)
        return NULL;
    PyObject *result = NULL, *pending = NULL, *mats = NULL, *req = NULL, *rec = NULL;
    PtrSet have, asked_for;                                /* (the owners taken; the requested ones) */
    have.slots = asked_for.slots = NULL;
    PyObject *live = NULL, *key = NULL, *replay = NULL, *program = NULL, *ended = NULL, *r = NULL, *stats = NULL;
    /* what the Python path handles */
    int multi = flag(ir_dict, s_MULTI_DEVICE);
    if (multi != 0)
        goto python;
    int written = any_written();
    if (written != 0)
        goto python;
    PyObject *capture = PyObject_GetAttr(STATE, s_capture);
    if (capture == NULL)
        goto fail;
    Py_DECREF(capture);
    if (capture != Py_None)
        goto python;
    pending = thread_pending();
    PyObject *threads = pending != NULL ? PyObject_GetAttr(STATE, s_threads) : NULL;
    if (threads == NULL)
        goto fail;
    int alone = PyDict_Check(threads) && PyDict_GET_SIZE(threads) == 1;
    if (alone) {                                           /* (the one entry is this thread's) */
        Py_ssize_t pos = 0;
        PyObject *k, *v;
        PyDict_Next(threads, &pos, &k, &v);
        alone = PyTuple_Check(v) && PyTuple_GET_SIZE(v) == 2 && PyTuple_GET_ITEM(v, 0) == pending;
    }
    Py_DECREF(threads);
    if (!alone || !PyList_Check(pending))
        goto python;
    rec = thread_attr(s_rec);
    if (rec == NULL)
        goto fail;
    /* runtime.live_pending(everyone=False), for one thread: the live mats, dead references dropped */
    mats = PyList_New(0);
    if (mats == NULL)
        goto fail;
    Py_ssize_t n = PyList_GET_SIZE(pending);
    PyObject *alive = PyList_New(0), *refs = PyList_New(0);
    if (alive == NULL || refs == NULL) {
        Py_XDECREF(alive);
        Py_XDECREF(refs);
        goto fail;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *wr = PyList_GET_ITEM(pending, i);
        PyObject *m = PyWeakref_Check(wr) ? deref(wr) : NULL;
        if (m == NULL)
            continue;
        PyObject *nd = Py_TYPE(m) == GpuMatT ? SLOT(m, G_node) : NULL;
        int bad = 0;
        if (nd == NULL)                                    /* (not lazycv's GpuMat: Python) */
            bad = 1;
        else if (nd != Py_None)
            bad = PyList_Append(alive, m) < 0 || PyList_Append(refs, wr) < 0 ? -1 : 0;
        Py_DECREF(m);
        if (bad) {
            Py_DECREF(alive);
            Py_DECREF(refs);
            if (bad < 0)
                goto fail;
            goto python;
        }
    }
    int cut = PyList_SetSlice(pending, 0, n, refs);       /* (lst[:] = refs) */
    Py_DECREF(refs);
    if (cut < 0) {
        Py_DECREF(alive);
        goto fail;
    }
    /* owners, deduplicated: the live mats, then the requested ones (runtime._flush) */
    Py_ssize_t nreq = PySequence_Fast_GET_SIZE(requested);
    if (ptrset_init(&have, PyList_GET_SIZE(alive) + nreq) < 0 || ptrset_init(&asked_for, nreq) < 0) {
        Py_DECREF(alive);
        goto fail;
    }
    for (int group = 0; group < 2; group++) {
        Py_ssize_t count = group == 0 ? PyList_GET_SIZE(alive) : nreq;
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *m = group == 0 ? PyList_GET_ITEM(alive, i) : PySequence_Fast_GET_ITEM(requested, i);
            if (Py_TYPE(m) != GpuMatT) {
                Py_DECREF(alive);
                goto python;
            }
            PyObject *parent = SLOT(m, G_parent), *nd = SLOT(m, G_node);
            if (parent != NULL && parent != Py_None && nd != NULL && nd != Py_None) {
                if (!PyTuple_Check(parent) || PyTuple_GET_SIZE(parent) < 1) {
                    Py_DECREF(alive);
                    goto python;
                }
                m = PyTuple_GET_ITEM(parent, 0);
                if (Py_TYPE(m) != GpuMatT) {
                    Py_DECREF(alive);
                    goto python;
                }
                nd = SLOT(m, G_node);
            }
            if (group == 1)
                ptrset_add(&asked_for, m, 1);
            int bad = nd != NULL && nd != Py_None && ptrset_add(&have, m, 1) && PyList_Append(mats, m) < 0;
            if (bad) {
                Py_DECREF(alive);
                goto fail;
            }
        }
    }
    Py_DECREF(alive);
    Py_ssize_t nm = PyList_GET_SIZE(mats);
    /* plancache.PlanCache.replay_key: None for a closed recording or a result pending since an
     * earlier flush (which a position cannot name) */
    int keyed = nm > 0 && SLOT(rec, R_open) == Py_True;
    PyObject *gen = SLOT(rec, R_gen);
    if (keyed && (live = PyTuple_New(nm)) == NULL)
        goto fail;
    for (Py_ssize_t i = 0; keyed && i < nm; i++) {
        PyObject *m = PyList_GET_ITEM(mats, i), *nd = SLOT(m, G_node);
        if (Py_TYPE(nd) != NodeT)
            goto python;
        PyObject *g = SLOT(nd, N_rgen), *p = SLOT(nd, N_rpos);
        int same = g != NULL && gen != NULL ? PyObject_RichCompareBool(g, gen, Py_EQ) : 0;
        if (same < 0)
            goto fail;
        if (!same || p == NULL) {
            keyed = 0;
            break;
        }
        Py_ssize_t rpos = PyLong_AsSsize_t(p);
        if (rpos == -1 && PyErr_Occurred())
            goto fail;
        int asked = !ptrset_add(&asked_for, m, 0);
        PyObject *alloc = SLOT(m, G_alloc);
        PyObject *v = position(rpos * 4 + (alloc != NULL && alloc != Py_None) * 2 + asked);
        if (v == NULL)
            goto fail;
        PyTuple_SET_ITEM(live, i, v);
    }
    PyObject *replays = NULL;
    if (keyed) {
        PyObject *fuse = PyObject_GetAttr(STATE, s_fuse), *tokens = PyList_AsTuple(SLOT(rec, R_tokens));
        PyObject *parts = fuse != NULL && tokens != NULL ? PyTuple_Pack(3, fuse, tokens, live) : NULL;
        Py_XDECREF(fuse);
        Py_XDECREF(tokens);
        if (parts == NULL)
            goto fail;
        key = PyObject_CallOneArg(REPLAY_KEY, parts);
        Py_DECREF(parts);
        if (key == NULL)
            goto fail;
        /* plancache.PlanCache.replay's look-up */
        PyObject *plans = PyObject_GetAttr(STATE, s_plans);
        replays = plans != NULL ? PyObject_GetAttr(plans, s__replays) : NULL;
        Py_XDECREF(plans);
        if (replays == NULL)
            goto fail;
        replay = PyObject_GetItem(replays, key);
        if (replay == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_KeyError)) {
                Py_DECREF(replays);
                goto fail;
            }
            PyErr_Clear();
        }
    }
    /* runtime._flush's steps: the recording ends, the counts */
    PyObject *fn = PyDict_GetItemWithError(ir_dict, s_new_recording);
    if (fn == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "lazycv._hotpath: ir.new_recording is missing");
        Py_XDECREF(replays);
        goto fail;
    }
    ended = PyObject_CallNoArgs(fn);                      /* (the recording that ends: rec) */
    stats = ended != NULL ? PyObject_GetAttr(STATE, s_stats) : NULL;     /* (read once a flush) */
    if (stats != NULL && !PyDict_Check(stats)) {
        PyErr_SetString(PyExc_TypeError, "lazycv._hotpath.flush_alone: STATE.stats is not a dict");
        Py_CLEAR(stats);
    }
    if (stats == NULL || count_recorded(stats) < 0) {
        Py_XDECREF(replays);
        goto fail;
    }
    *SINCE = 0;                                            /* (STATE.since_flush) */
    Py_CLEAR(r);
    if (nm == 0) {
        Py_XDECREF(replays);
        goto served;
    }
    if (replay != NULL) {                                  /* a hit: moved by its stored key, counted */
        PyObject *stored = PyObject_GetAttr(replay, s_key);
        r = stored != NULL ? PyObject_CallMethodOneArg(replays, s_move_to_end, stored) : NULL;
        Py_XDECREF(stored);
        if (r == NULL) {
            Py_XDECREF(replays);
            goto fail;
        }
        Py_CLEAR(r);
        if (bump(stats, s_plan_hits, ONE) < 0) {
            Py_XDECREF(replays);
            goto fail;
        }
        program = PyObject_GetAttr(replay, s_program);
        if (program == NULL) {
            Py_XDECREF(replays);
            goto fail;
        }
    }
    Py_XDECREF(replays);
    int usable = program != NULL ? PyObject_IsTrue(program) : 0;
    if (usable < 0)
        goto fail;
    if (usable) {                                          /* the remembered program's run */
        int done;
        PyObject *run = SingleT != NULL && Py_TYPE(program) == SingleT ?
            PyDict_GetItemWithError(SingleT->tp_dict, s_run) : NULL;
        if (run == NULL && PyErr_Occurred())
            goto fail;
        if (run != NULL && run == SINGLE_RUN && Py_TYPE(ended) == RecordingT) {
            done = run_single(mod, replay, program, ended, mats, stats);
        } else {
            if ((fn = runtime_fn(s__run_program)) == NULL)
                goto fail;
            PyObject *const run_args[3] = {replay, ended, mats};
            r = PyObject_Vectorcall(fn, run_args, 3, NULL);
            if (r == NULL)
                goto fail;
            done = PyObject_IsTrue(r);
            Py_CLEAR(r);
        }
        if (done < 0)
            goto fail;
        if (done) {
            if ((fn = runtime_fn(s__let_go_of_history)) == NULL || (r = PyObject_CallNoArgs(fn)) == NULL)
                goto fail;
            Py_CLEAR(r);
            goto served;
        }
    }
    if ((fn = runtime_fn(s__flush_planned)) == NULL)
        goto fail;
    if ((req = ptrset_ids(&asked_for)) == NULL)
        goto fail;
    PyObject *const rest[5] = {ended, mats, req, key != NULL ? key : Py_None, replay != NULL ? replay : Py_None};
    if ((r = PyObject_Vectorcall(fn, rest, 5, NULL)) == NULL)
        goto fail;
    Py_CLEAR(r);
served:
    result = Py_True;
    Py_INCREF(result);
    goto done;
python:
    if (!PyErr_Occurred()) {
        result = Py_False;
        Py_INCREF(result);
    }
    goto done;
fail:
    result = NULL;
done:
    Py_XDECREF(requested);
    Py_XDECREF(pending);
    Py_XDECREF(mats);
    ptrset_free(&have);
    ptrset_free(&asked_for);
    Py_XDECREF(req);
    Py_XDECREF(rec);
    Py_XDECREF(live);
    Py_XDECREF(key);
    Py_XDECREF(replay);
    Py_XDECREF(program);
    Py_XDECREF(ended);
    Py_XDECREF(stats);
    Py_XDECREF(r);
    return result;
}

/* ------------------------------------------------------------------ the runtime lock */
/* runtime.STATE.lock where this extension was built: a re-entrant lock, as threading.RLock, that
 * a cv2.cuda call (Api) takes and gives back in C. threading.RLock's acquire is a call through
 * argument parsing each time (about a twentieth of a replayed call); here an uncontended or
 * re-entered acquire is a few field reads under the GIL, as CPython's own RLock does it. A
 * waiting thread lets the GIL go; a signal handler runs while it waits, and one that raises
 * ends the wait with its exception (the wait then starts again with the whole timeout). */
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    unsigned long owner, count;
    PyObject *weakrefs;
} RLockObject;

static PyTypeObject RLockType;

/* 1 taken, 0 not (timed out, or busy with ``wait_us`` 0), -1 an error; ``wait_us`` -1: as long as
 * it takes */
static int rlock_take(RLockObject *self, long long wait_us) {
    unsigned long me = PyThread_get_thread_ident();
    if (self->count > 0 && self->owner == me) {
        if (self->count == ULONG_MAX) {
            PyErr_SetString(PyExc_OverflowError, "lazycv's runtime lock: too many re-entries");
            return -1;
        }
        self->count++;
        return 1;
    }
    PyLockStatus r = PyThread_acquire_lock_timed(self->lock, 0, 0);
    while (r == PY_LOCK_FAILURE && wait_us != 0) {
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, wait_us, 1);
        Py_END_ALLOW_THREADS
        if (r != PY_LOCK_INTR)
            break;
        if (Py_MakePendingCalls() < 0)                       /* a signal handler raised */
            return -1;
        r = PY_LOCK_FAILURE;
    }
    if (r != PY_LOCK_ACQUIRED)
        return 0;
    self->owner = me;
    self->count = 1;
    return 1;
}

/* 0, or -1 (not held by this thread) */
static int rlock_give(RLockObject *self) {
    if (self->count == 0 || self->owner != PyThread_get_thread_ident()) {
        PyErr_SetString(PyExc_RuntimeError, "cannot release un-acquired lock");
        return -1;
    }
    if (--self->count == 0) {
        self->owner = 0;
        PyThread_release_lock(self->lock);
    }
    return 0;
}

static PyObject *rlock_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (PyTuple_GET_SIZE(args) || (kwds != NULL && PyDict_GET_SIZE(kwds))) {
        PyErr_SetString(PyExc_TypeError, "RLock() takes no arguments");
        return NULL;
    }
    RLockObject *self = (RLockObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    if ((self->lock = PyThread_allocate_lock()) == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void rlock_dealloc(RLockObject *self) {
    if (self->weakrefs != NULL)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->lock != NULL) {
        if (self->count > 0)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *rlock_acquire(RLockObject *self, PyObject *args, PyObject *kwds) {
    static char *names[] = {"blocking", "timeout", NULL};
    int blocking = 1;
    double timeout = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|pd:acquire", names, &blocking, &timeout))
        return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    if (timeout * 1e6 > (double)PY_TIMEOUT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
        return NULL;
    }
    long long wait_us = !blocking ? 0 : timeout < 0 ? -1 : (long long)(timeout * 1e6);
    int r = rlock_take(self, wait_us);
    return r < 0 ? NULL : PyBool_FromLong(r);
}

static PyObject *rlock_release(RLockObject *self, PyObject *unused) {
    if (rlock_give(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *rlock_exit(RLockObject *self, PyObject *args) {
    return rlock_release(self, NULL);
}

static PyObject *rlock_is_owned(RLockObject *self, PyObject *unused) {
    return PyBool_FromLong(self->count > 0 && self->owner == PyThread_get_thread_ident());
}

static PyObject *rlock_repr(RLockObject *self) {
    return PyUnicode_FromFormat("<lazycv._hotpath.RLock %s owner=%lu count=%lu>",
                                self->count ? "locked" : "unlocked", self->owner, self->count);
}

static PyMethodDef rlock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))rlock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1): as threading.RLock's"},
    {"release", (PyCFunction)rlock_release, METH_NOARGS, "release(): as threading.RLock's"},
    {"__enter__", (PyCFunction)(void (*)(void))rlock_acquire, METH_VARARGS | METH_KEYWORDS, "acquire()"},
    {"__exit__", (PyCFunction)rlock_exit, METH_VARARGS, "release()"},
    {"_is_owned", (PyCFunction)rlock_is_owned, METH_NOARGS, "held by the calling thread"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject RLockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazycv._hotpath.RLock",
    .tp_basicsize = sizeof(RLockObject),
    .tp_dealloc = (destructor)rlock_dealloc,
    .tp_repr = (reprfunc)rlock_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The runtime lock: a re-entrant lock (threading.RLock's methods) that cv2.cuda calls take in C",
    .tp_weaklistoffset = offsetof(RLockObject, weakrefs),
    .tp_methods = rlock_methods,
    .tp_new = rlock_new,
};

/* ------------------------------------------------------------------ cv2.cuda functions */
/* A cv2.cuda function as ops.common.cuda_api makes it: ``Api(fn, slow, lock)`` called takes the
 * runtime lock, replays the call's recipe (hot_call) and answers; where the replay says RUN or
 * MISS (or before bind()), ``slow(args, kw, answer)`` — the Python wrapper's body — runs the
 * call, with the lock still held. The Python wrapper (a frame, a ``with``, recipes.call's
 * frame) cost about a third of a replayed call. Attributes (__name__, __doc__, __wrapped__)
 * live in the object's __dict__. */
typedef struct {
    PyObject_HEAD
    PyObject *fn, *slow, *acquire, *release, *dict;
    RLockObject *lock;                           /* the lock where it is an RLock of ours, else NULL */
    vectorcallfunc vectorcall;
} ApiObject;

static PyObject *api_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    ApiObject *self = (ApiObject *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *pos = tuple_of(args, nargs), *kw = Py_None, *out = NULL, *answer = NULL;
    if (pos == NULL)
        return NULL;
    Py_INCREF(kw);
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) > 0) {
        Py_DECREF(kw);
        if ((kw = PyDict_New()) == NULL) {
            Py_DECREF(pos);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(kwnames); i++)
            if (PyDict_SetItem(kw, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
                Py_DECREF(pos);
                Py_DECREF(kw);
                return NULL;
            }
    }
    if (self->lock != NULL) {
        if (rlock_take(self->lock, -1) < 0) {
            Py_DECREF(pos);
            Py_DECREF(kw);
            return NULL;
        }
    } else {
        PyObject *r = PyObject_CallNoArgs(self->acquire);
        if (r == NULL) {
            Py_DECREF(pos);
            Py_DECREF(kw);
            return NULL;
        }
        Py_DECREF(r);
    }
    if (NodeT != NULL && RecipeT != NULL) {
        answer = hot_call(NULL, self->fn, pos, kw);       /* (kw: a dict or None) */
        if (answer == NULL)
            goto release;
        if (answer != RUN && answer != MISS) {
            out = answer;
            answer = NULL;
            goto release;
        }
    }
    out = PyObject_CallFunctionObjArgs(self->slow, pos, kw, answer != NULL ? answer : Py_None, NULL);
release:
    {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *rr = self->lock != NULL ? (rlock_give(self->lock) < 0 ? NULL : Py_NewRef(Py_None)) :
            PyObject_CallNoArgs(self->release);
        if (rr == NULL) {                                  /* (a release that fails wins) */
            Py_XDECREF(et); Py_XDECREF(ev); Py_XDECREF(tb);
            Py_CLEAR(out);
        } else {
            Py_DECREF(rr);
            PyErr_Restore(et, ev, tb);
        }
    }
    Py_XDECREF(answer);
    Py_DECREF(pos);
    Py_DECREF(kw);
    return out;
}

static PyObject *api_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *fn, *slow, *lock;
    if (!PyArg_ParseTuple(args, "OOO:Api", &fn, &slow, &lock))
        return NULL;
    ApiObject *self = (ApiObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(fn); self->fn = fn;
    Py_INCREF(slow); self->slow = slow;
    self->acquire = PyObject_GetAttrString(lock, "acquire");
    self->release = PyObject_GetAttrString(lock, "release");
    if (Py_TYPE(lock) == &RLockType) {
        Py_INCREF(lock);
        self->lock = (RLockObject *)lock;
    }
    self->dict = PyDict_New();
    self->vectorcall = api_vectorcall;
    if (self->acquire == NULL || self->release == NULL || self->dict == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int api_traverse(ApiObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->fn); Py_VISIT(self->slow); Py_VISIT(self->acquire); Py_VISIT(self->release);
    Py_VISIT(self->dict); Py_VISIT(self->lock);
    return 0;
}

static int api_clear(ApiObject *self) {
    Py_CLEAR(self->fn); Py_CLEAR(self->slow); Py_CLEAR(self->acquire); Py_CLEAR(self->release);
    Py_CLEAR(self->dict); Py_CLEAR(self->lock);
    return 0;
}

static void api_dealloc(ApiObject *self) {
    PyObject_GC_UnTrack(self);
    api_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *api_get_fn(ApiObject *self, void *closure) {
    Py_INCREF(self->fn);
    return self->fn;
}

static PyObject *api_repr(ApiObject *self) {
    PyObject *name = PyDict_GetItemString(self->dict, "__name__");
    return name != NULL ? PyUnicode_FromFormat("<cv2.cuda function %S (lazycv)>", name)
                        : PyUnicode_FromString("<cv2.cuda function (lazycv)>");
}

/* bound as a Python function is: a method when it is a class's attribute (GpuMat.convertTo) */
static PyObject *api_get(PyObject *self, PyObject *obj, PyObject *type) {
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyGetSetDef api_getset[] = {
    {"fn", (getter)api_get_fn, NULL, "the op function the recipes are keyed by", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ApiType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazycv._hotpath.Api",
    .tp_basicsize = sizeof(ApiObject),
    .tp_dealloc = (destructor)api_dealloc,
    .tp_vectorcall_offset = offsetof(ApiObject, vectorcall),
    .tp_repr = (reprfunc)api_repr,
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A cv2.cuda function: the recipe replay in C, the rest through its Python wrapper",
    .tp_traverse = (traverseproc)api_traverse,
    .tp_clear = (inquiry)api_clear,
    .tp_getset = api_getset,
    .tp_descr_get = api_get,
    .tp_dictoffset = offsetof(ApiObject, dict),
    .tp_new = api_new,
};

/* ------------------------------------------------------------------ materialize */
/* lazycv.materialize's gathering: the pending GpuMats among ``mats`` (nested lists and tuples
 * flattened, other objects skipped, each once) — runtime.pending_for of them, where none has
 * pending writes into its memory; None where one has (the Python function then decides). */
static int pending_walk(PyObject *o, PyObject *out, PtrSet *seen, int depth) {
    if (PyList_Check(o) || PyTuple_Check(o)) {
        if (depth > 64) {
            PyErr_SetString(PyExc_RecursionError, "lazycv.materialize: lists nested too deep");
            return -1;
        }
        PyObject *seq = PySequence_Fast(o, "");                /* (a list can change meanwhile) */
        if (seq == NULL)
            return -1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            int r = pending_walk(PySequence_Fast_GET_ITEM(seq, i), out, seen, depth + 1);
            if (r != 1) {
                Py_DECREF(seq);
                return r;
            }
        }
        Py_DECREF(seq);
        return 1;
    }
    if (!PyObject_TypeCheck(o, GpuMatT))
        return 1;
    PyObject *alloc = SLOT(o, G_alloc);
    if (alloc != NULL && alloc != Py_None) {
        if (!no_writers(SLOT(alloc, A_writers)))
            return 0;
    }
    PyObject *nd = SLOT(o, G_node);
    if (nd == NULL || nd == Py_None)
        return 1;
    int fresh = ptrset_add(seen, o, 1);                     /* (out holds it: the address stays its) */
    if (fresh < 0)
        return -1;
    if (fresh && PyList_Append(out, o) < 0)
        return -1;
    return 1;
}

static PyObject *pending_of(PyObject *mod, PyObject *mats) {
    BOUND(GpuMatT != NULL && AllocT != NULL);
    PtrSet seen;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t guess = PyList_Check(mats) ? PyList_GET_SIZE(mats) :
                       PyTuple_Check(mats) ? PyTuple_GET_SIZE(mats) : 16;
    if (ptrset_init(&seen, guess) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    int r = pending_walk(mats, out, &seen, 0);
    ptrset_free(&seen);
    if (r != 1) {
        Py_DECREF(out);
        if (r < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    return out;
}

/* lazycv.materialize's step in C where nothing needs Python's flush (lazycv.materialize
 * calls it unless NVTX ranges are on): the pending mats of ``mats`` (pending_of), flushed
 * through flush_alone as runtime.flush would, then streams.CURRENT reset as flush's ``finally``
 * does. Returns None where Python decides (pending_of's None), an empty list when nothing is
 * left to do, else the pending mats for runtime.flush (flush_alone declined, or a stream of
 * other code must be ordered after the flush). */
static PyObject *flush_mats(PyObject *mod, PyObject *mats) {
    PyObject *pend = pending_of(mod, mats);
    if (pend == NULL || pend == Py_None || PyList_GET_SIZE(pend) == 0)
        return pend;
    PyObject *foreign = PyObject_GetAttr(STATE, s_foreign_streams);
    int ordered = foreign != NULL ? PyObject_IsTrue(foreign) : -1;
    Py_XDECREF(foreign);
    if (ordered != 0) {
        if (ordered < 0)
            Py_CLEAR(pend);
        return pend;
    }
    PyObject *r = flush_alone(mod, &pend, 1);
    if (PyDict_SetItem(streams_dict, s_CURRENT, Py_None) < 0)
        Py_CLEAR(r);
    if (r == NULL) {
        Py_DECREF(pend);
        return NULL;
    }
    int served = r == Py_True;
    Py_DECREF(r);
    if (served) {
        Py_DECREF(pend);
        return PyList_New(0);
    }
    return pend;
}

/* ------------------------------------------------------------------ a program's tables */
static PyObject *s_fill_y0 = NULL, *s_fill_x0 = NULL, *s_fill_dyn = NULL;

/* A Node's dyn[kk] (borrowed), or NULL without an error where ``v`` is not a Node with a tuple
 * of dyn values that long (the callers decide what then). */
static PyObject *node_dyn(PyObject *v, Py_ssize_t kk) {
    PyObject *dyn = Py_TYPE(v) == NodeT ? SLOT(v, N_dyn) : NULL;
    if (dyn == NULL || !PyTuple_CheckExact(dyn) || kk < 0 || kk >= PyTuple_GET_SIZE(dyn))
        return NULL;
    return PyTuple_GET_ITEM(dyn, kk);
}

/* program.FlushProgram._fills(values) in C: per src fill the items' y0 and x0 lists, per int
 * fill the ints, per float fill the values' bytes as little-endian doubles (struct.pack's
 * "<Nd"). A gone value (None) raises AttributeError, as the Python function does. */
static PyObject *fills_of(PyObject *values, PyObject *poss, PyObject *name, Py_ssize_t kk, int how) {
    /* how 0: getattr(values[p], name) each; 1: int(values[p].dyn[kk]); 2: bytes of doubles */
    PyObject *seq = PySequence_Fast(poss, "fills: positions are a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), nv = PyList_GET_SIZE(values);
    PyObject *out = how == 2 ? PyBytes_FromStringAndSize(NULL, n * 8) : PyList_New(n);
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t p = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, i));
        if (p == -1 && PyErr_Occurred())
            goto fail;
        if (p < 0 || p >= nv) {
            PyErr_SetString(PyExc_IndexError, "fills: a position past the recording");
            goto fail;
        }
        PyObject *v = PyList_GET_ITEM(values, p), *x;
        if (how == 0) {
            Py_ssize_t off = name == s_fill_y0 ? S_y0 : S_x0;
            if (Py_TYPE(v) == SourceT && SLOT(v, off) != NULL) {
                x = SLOT(v, off);                  /* (a Source's field, by its slot) */
                Py_INCREF(x);
            } else
                x = PyObject_GetAttr(v, name);
        } else {
            if ((x = node_dyn(v, kk)) != NULL) {
                Py_INCREF(x);
            } else {
                PyObject *dyn = PyObject_GetAttr(v, name);
                if (dyn == NULL)
                    goto fail;
                x = PySequence_GetItem(dyn, kk);
                Py_DECREF(dyn);
            }
        }
        if (x == NULL)
            goto fail;
        if (how == 0) {
            PyList_SET_ITEM(out, i, x);
        } else if (how == 1) {
            PyObject *as_int = PyNumber_Long(x);
            Py_DECREF(x);
            if (as_int == NULL)
                goto fail;
            PyList_SET_ITEM(out, i, as_int);
        } else {
            double d = PyFloat_AsDouble(x);
            Py_DECREF(x);
            if (d == -1.0 && PyErr_Occurred())
                goto fail;
#if PY_VERSION_HEX >= 0x030B0000
            if (PyFloat_Pack8(d, PyBytes_AS_STRING(out) + 8 * i, 1) < 0)
#else
            if (_PyFloat_Pack8(d, (unsigned char *)PyBytes_AS_STRING(out) + 8 * i, 1) < 0)
#endif
                goto fail;
        }
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_DECREF(seq);
    Py_DECREF(out);
    return NULL;
}

static PyObject *fills(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL);
    if (s_fill_y0 == NULL && ((s_fill_y0 = PyUnicode_InternFromString("y0")) == NULL ||
                              (s_fill_x0 = PyUnicode_InternFromString("x0")) == NULL ||
                              (s_fill_dyn = PyUnicode_InternFromString("dyn")) == NULL))
        return NULL;
    if (nargs != 4 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "fills(values: list, src_fills, int_fills, float_fills)");
        return NULL;
    }
    PyObject *values = args[0], *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (int kind = 0; kind < 3; kind++) {
        PyObject *specs = PySequence_Fast(args[1 + kind], "fills: a sequence of fills");
        if (specs == NULL)
            goto fail;
        for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(specs); j++) {
            PyObject *spec = PySequence_Fast_GET_ITEM(specs, j);
            if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) < 5) {
                PyErr_SetString(PyExc_TypeError, "fills: a fill is a tuple (b0, b1, ..., positions[, f32])");
                Py_DECREF(specs);
                goto fail;
            }
            PyObject *poss = PyTuple_GET_ITEM(spec, 4);
            if (kind == 0) {                            /* (b0, b1, cy, cx, poss) */
                PyObject *ys = fills_of(values, poss, s_fill_y0, 0, 0);
                if (ys == NULL || append_new(out, ys) < 0 ||
                        append_new(out, fills_of(values, poss, s_fill_x0, 0, 0)) < 0) {
                    Py_DECREF(specs);
                    goto fail;
                }
                continue;
            }
            Py_ssize_t kk = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 3));   /* (b0, b1, col, kk, poss[, f32]) */
            if ((kk == -1 && PyErr_Occurred()) || append_new(out, fills_of(values, poss, s_fill_dyn, kk, kind)) < 0) {
                Py_DECREF(specs);
                goto fail;
            }
        }
        Py_DECREF(specs);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------ a one-kernel program */
/* program.SingleFlushProgram's launch arguments in C (_py_single_args's twin). Per recipe entry
 * (True, p, None, None), a source: values[p]'s buffer, y0 and x0; per (False, p, kk, conv), a
 * scalar: conv(values[p].dyn[kk]) (int and float converted inline); then (buf, 0, 0) per output
 * buffer. None where a value is gone or is not what its entry reads (the general path decides).
 * ``memo`` (the program's, or None) spares conversions of scalars that did not change. */
/* The converted scalar of entry ``i`` from ``memo`` (a list, an item per recipe entry: the last
 * (x, conv(x)) or None) when ``x`` is the same float as last time (same bits: -0.0 is not 0.0),
 * else conv(x), remembered. (np.float32(x) costs a numpy scalar's construction, and a loop's
 * scalars rarely change.) New reference. */
static PyObject *converted(PyObject *memo, Py_ssize_t i, PyObject *x, PyObject *conv) {
    PyObject *last = memo != NULL && i < PyList_GET_SIZE(memo) ? PyList_GET_ITEM(memo, i) : NULL;
    if (last != NULL && PyTuple_Check(last) && PyTuple_GET_SIZE(last) == 2) {
        PyObject *x0 = PyTuple_GET_ITEM(last, 0);
        int same = x0 == x;
        if (!same && PyFloat_CheckExact(x0) && PyFloat_CheckExact(x)) {
            double a = PyFloat_AS_DOUBLE(x0), b = PyFloat_AS_DOUBLE(x);
            same = memcmp(&a, &b, sizeof a) == 0;
        }
        if (same) {
            PyObject *y = PyTuple_GET_ITEM(last, 1);
            Py_INCREF(y);
            return y;
        }
    }
    PyObject *y = PyObject_CallOneArg(conv, x);
    if (y != NULL && memo != NULL && i < PyList_GET_SIZE(memo) && PyFloat_CheckExact(x)) {
        PyObject *pair = PyTuple_Pack(2, x, y);
        if (pair == NULL || PyList_SetItem(memo, i, pair) < 0) {
            Py_DECREF(y);
            return NULL;
        }
    }
    return y;
}

static PyObject *single_args(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    BOUND(NodeT != NULL);
    if (nargs != 4 || !PyList_Check(args[0]) || !PyTuple_Check(args[1]) || !PyList_Check(args[2]) ||
            (args[3] != Py_None && !PyList_Check(args[3]))) {
        PyErr_SetString(PyExc_TypeError, "single_args(values: list, recipe: tuple, bufs: list, memo: list | None)");
        return NULL;
    }
    PyObject *values = args[0], *recipe = args[1], *bufs = args[2], *memo = args[3] == Py_None ? NULL : args[3];
    Py_ssize_t nr = PyTuple_GET_SIZE(recipe), nb = PyList_GET_SIZE(bufs), nv = PyList_GET_SIZE(values);
    Py_ssize_t count = 3 * nb;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *e = PyTuple_GET_ITEM(recipe, i);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 4) {
            PyErr_SetString(PyExc_TypeError, "single_args: an entry is (is_source, position, kk, conv)");
            return NULL;
        }
        count += PyTuple_GET_ITEM(e, 0) == Py_True ? 3 : 1;
    }
    PyObject *out = PyTuple_New(count);
    if (out == NULL)
        return NULL;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < nr; i++) {
        PyObject *e = PyTuple_GET_ITEM(recipe, i);
        Py_ssize_t p = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 1));
        if (p == -1 && PyErr_Occurred())
            goto fail;
        if (p < 0 || p >= nv) {
            PyErr_SetString(PyExc_IndexError, "single_args: a position past the recording");
            goto fail;
        }
        PyObject *v = PyList_GET_ITEM(values, p);
        if (PyTuple_GET_ITEM(e, 0) == Py_True) {
            if (Py_TYPE(v) != SourceT)
                goto gone;
            PyObject *f[3] = {SLOT(v, S_buf), SLOT(v, S_y0), SLOT(v, S_x0)};
            for (int j = 0; j < 3; j++) {
                if (f[j] == NULL)
                    goto gone;
                Py_INCREF(f[j]);
                PyTuple_SET_ITEM(out, k++, f[j]);
            }
            continue;
        }
        Py_ssize_t kk = PyLong_AsSsize_t(PyTuple_GET_ITEM(e, 2));
        if (kk == -1 && PyErr_Occurred())
            goto fail;
        PyObject *x = node_dyn(v, kk), *conv = PyTuple_GET_ITEM(e, 3), *y;
        if (x == NULL)
            goto gone;
        if (conv == (PyObject *)&PyLong_Type)
            y = PyNumber_Long(x);
        else if (conv == (PyObject *)&PyFloat_Type)
            y = PyNumber_Float(x);
        else
            y = converted(memo, i, x, conv);
        if (y == NULL)
            goto fail;
        PyTuple_SET_ITEM(out, k++, y);
    }
    for (Py_ssize_t i = 0; i < nb; i++) {
        PyObject *buf = PyList_GET_ITEM(bufs, i);
        Py_INCREF(buf);
        PyTuple_SET_ITEM(out, k++, buf);
        Py_INCREF(INT0);
        PyTuple_SET_ITEM(out, k++, INT0);
        Py_INCREF(INT0);
        PyTuple_SET_ITEM(out, k++, INT0);
    }
    return out;
gone:
    Py_DECREF(out);
    Py_RETURN_NONE;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ------------------------------------------------------------------ a kernel's launch */
/* backends.cuda._DirectLaunch's driver launch in C (twin: ParamSlots.write, then
 * cuLaunchKernel through cuda.bindings): each argument written into its 8-byte slots of
 * ``slots`` (a writable int64 buffer) by its kind in ``kinds`` (a byte an argument: 1 an int,
 * 2 a float64, 3 a float32 in the slot's low half, 5 or more an array: that many slots from its
 * cached ``_lazycv_params``), then ``cuLaunchKernel`` called through the address ``fn`` (0:
 * only written, for the tests) with the GIL released. Returns the driver's result as an int,
 * or None with nothing launched where an argument is not what the slots take as they are (an
 * array without cached parameters, an int past int64, a float past float32's range): the
 * Python path then writes it as it does. */
typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                         unsigned bz, unsigned shmem, void *stream, void **params, void **extra);
static PyObject *s_lazycv_params = NULL;

/* The dims of a launch from a 6-tuple of ints (grid, then block); -1 an error. */
static int launch_dims(PyObject *t, unsigned dims[6]) {
    for (int j = 0; j < 6; j++) {
        PyObject *o = PyNumber_Index(PyTuple_GET_ITEM(t, j));
        unsigned long d = o != NULL ? PyLong_AsUnsignedLong(o) : (unsigned long)-1;
        Py_XDECREF(o);
        if (d == (unsigned long)-1 && PyErr_Occurred())
            return -1;
        if (d > 0xFFFFFFFFul) {
            PyErr_SetString(PyExc_OverflowError, "launch: a grid or block size past 32 bits");
            return -1;
        }
        dims[j] = (unsigned)d;
    }
    return 0;
}

/* launch's work once its arguments are read: the values ``pre`` then ``vals`` (``n`` in all, a
 * kind each) written into ``slots`` (``cap`` slots), then the driver called. */
static PyObject *write_and_launch(void *fn, void *cufunc, void *stream, const unsigned dims[6], char *slots,
                                  Py_ssize_t cap, void *pointers, const unsigned char *kind, Py_ssize_t n,
                                  PyObject *const *pre, Py_ssize_t npre, PyObject *const *vals) {
    if (s_lazycv_params == NULL && (s_lazycv_params = PyUnicode_InternFromString("_lazycv_params")) == NULL)
        return NULL;
    Py_ssize_t at = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = i < npre ? pre[i] : vals[i - npre];
        unsigned k = kind[i];
        if (at + (k >= 5 ? (Py_ssize_t)k : 1) > cap) {
            PyErr_SetString(PyExc_ValueError, "launch: more parameters than slots");
            return NULL;
        }
        if (k >= 5) {                                       /* an array: its cached parameters */
            PyObject *params = PyObject_GetAttr(v, s_lazycv_params);
            if (params == NULL) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (!PyTuple_Check(params) || PyTuple_GET_SIZE(params) != (Py_ssize_t)k) {
                Py_DECREF(params);
                Py_RETURN_NONE;
            }
            for (unsigned j = 0; j < k; j++) {
                long long q = PyLong_AsLongLong(PyTuple_GET_ITEM(params, j));
                if (q == -1 && PyErr_Occurred()) {
                    PyErr_Clear();
                    Py_DECREF(params);
                    Py_RETURN_NONE;
                }
                memcpy(slots + 8 * at++, &q, 8);
            }
            Py_DECREF(params);
        } else if (k == 1) {
            long long q = PyLong_AsLongLong(v);
            if (q == -1 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            memcpy(slots + 8 * at++, &q, 8);
        } else if (k == 2 || k == 3) {
            double d = PyFloat_AsDouble(v);
            if (d == -1.0 && PyErr_Occurred()) {
                PyErr_Clear();
                Py_RETURN_NONE;
            }
            if (k == 2) {
                memcpy(slots + 8 * at++, &d, 8);
            } else {
                if (isfinite(d) && fabs(d) > FLT_MAX)
                    Py_RETURN_NONE;                       /* (rounded to inf by the Python path) */
                float f = (float)d;
                memset(slots + 8 * at, 0, 8);
                memcpy(slots + 8 * at++, &f, 4);
            }
        } else {
            PyErr_SetString(PyExc_ValueError, "launch: an unknown kind");
            return NULL;
        }
    }
    int err = 0;
    if (fn != NULL) {
        Py_BEGIN_ALLOW_THREADS
        err = ((launch_fn)fn)(cufunc, dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], 0, stream,
                              (void **)pointers, NULL);
        Py_END_ALLOW_THREADS
    }
    return PyLong_FromLong(err);
}

static PyObject *launch(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 8 || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != 6 || !PyBytes_Check(args[6]) ||
            !PyTuple_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "launch(fn, cufunc, stream, (gx, gy, gz, bx, by, bz), slots, pointers, kinds: bytes, args: tuple)");
        return NULL;
    }
    void *fn = PyLong_AsVoidPtr(args[0]), *cufunc = PyLong_AsVoidPtr(args[1]), *stream = PyLong_AsVoidPtr(args[2]);
    void *pointers = PyLong_AsVoidPtr(args[5]);
    if (PyErr_Occurred())
        return NULL;
    unsigned dims[6];
    if (launch_dims(args[3], dims) < 0)
        return NULL;
    PyObject *kinds = args[6], *values = args[7];
    Py_ssize_t n = PyBytes_GET_SIZE(kinds);
    if (PyTuple_GET_SIZE(values) != n) {
        PyErr_SetString(PyExc_ValueError, "launch: an argument per kind");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[4], &view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    PyObject *r = write_and_launch(fn, cufunc, stream, dims, (char *)view.buf, view.len / 8, pointers,
                                   (const unsigned char *)PyBytes_AS_STRING(kinds), n, NULL, 0,
                                   &PyTuple_GET_ITEM(values, 0));
    PyBuffer_Release(&view);
    return r;
}

/* One kernel's launch over one grid, its fixed parts read once: ``launch`` without re-reading
 * the driver's and the kernel's addresses, the dims and the slots buffer every call, and with
 * the values that lead every launch (``pre``: the output's size) held here. A one-kernel
 * program keeps one (SingleFlushProgram.launcher) and run_single calls it without the backend's
 * Python launch chain. Called from Python (the tests): launcher(args: tuple, stream=0). */
typedef struct {
    PyObject_HEAD
    void *fn, *cufunc, *pointers;
    unsigned dims[6];
    PyObject *kinds, *pre;
    Py_buffer view;                              /* the slots, held while the launcher lives */
    int has_view;
} LauncherObject;

static PyObject *launcher_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    PyObject *fn, *cufunc, *dims, *slots, *pointers, *kinds, *pre;
    if ((kw != NULL && PyDict_GET_SIZE(kw) > 0) ||
            !PyArg_ParseTuple(args, "OOO!OOO!O!:Launcher", &fn, &cufunc, &PyTuple_Type, &dims, &slots, &pointers,
                              &PyBytes_Type, &kinds, &PyTuple_Type, &pre))
        return NULL;
    if (PyTuple_GET_SIZE(dims) != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "Launcher(fn, cufunc, (gx, gy, gz, bx, by, bz), slots, pointers, kinds: bytes, pre: tuple)");
        return NULL;
    }
    LauncherObject *self = (LauncherObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->fn = PyLong_AsVoidPtr(fn);
    self->cufunc = PyLong_AsVoidPtr(cufunc);
    self->pointers = PyLong_AsVoidPtr(pointers);
    if (PyErr_Occurred() || launch_dims(dims, self->dims) < 0 ||
            PyObject_GetBuffer(slots, &self->view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    self->has_view = 1;
    Py_INCREF(kinds);
    self->kinds = kinds;
    Py_INCREF(pre);
    self->pre = pre;
    return (PyObject *)self;
}

static void launcher_dealloc(LauncherObject *self) {
    if (self->has_view)
        PyBuffer_Release(&self->view);
    Py_XDECREF(self->kinds);
    Py_XDECREF(self->pre);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The launch of ``args`` (a tuple, after ``pre``) on ``stream``: the driver's result as an int,
 * None where the Python path must write an argument, NULL an error. */
static PyObject *launcher_run(PyObject *o, PyObject *args, void *stream) {
    LauncherObject *self = (LauncherObject *)o;
    Py_ssize_t npre = PyTuple_GET_SIZE(self->pre), n = PyBytes_GET_SIZE(self->kinds);
    if (!PyTuple_Check(args) || npre + PyTuple_GET_SIZE(args) != n) {
        PyErr_SetString(PyExc_ValueError, "Launcher: an argument per kind");
        return NULL;
    }
    return write_and_launch(self->fn, self->cufunc, stream, self->dims, (char *)self->view.buf, self->view.len / 8,
                            self->pointers, (const unsigned char *)PyBytes_AS_STRING(self->kinds), n,
                            &PyTuple_GET_ITEM(self->pre, 0), npre, &PyTuple_GET_ITEM(args, 0));
}

static PyObject *launcher_call(PyObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"args", "stream", NULL};
    PyObject *values, *stream = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|O:Launcher", names, &PyTuple_Type, &values, &stream))
        return NULL;
    void *s = stream != NULL ? PyLong_AsVoidPtr(stream) : NULL;
    if (PyErr_Occurred())
        return NULL;
    return launcher_run(self, values, s);
}

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazycv._hotpath.Launcher",
    .tp_basicsize = sizeof(LauncherObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "one kernel's driver launch over one grid, its fixed parts read once",
    .tp_new = launcher_new,
    .tp_dealloc = (destructor)launcher_dealloc,
    .tp_call = launcher_call,
};

/* ------------------------------------------------------------------ loose keys */
/* plancache.loose_tokens(tokens) in C: a recording's tokens with (buffer, depth, cn) for each
 * memory token whose every reader reads it through an input in its op's ``size_in_dyn``; None
 * where there is none. */
static PyObject *loose_tokens(PyObject *mod, PyObject *tokens) {
    static PyObject *s_size_in_dyn = NULL;
    if (s_size_in_dyn == NULL && (s_size_in_dyn = PyUnicode_InternFromString("size_in_dyn")) == NULL)
        return NULL;
    PyObject *seq = PySequence_Fast(tokens, "loose_tokens(tokens): a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char *sized = PyMem_Calloc(n ? n : 1, 1);
    PyObject *out = NULL;
    if (sized == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 8)
            continue;                                  /* memory, (buffer, depth, cn, rows, cols) */
        PyObject *refs = PyTuple_GET_ITEM(t, 7);
        PyObject *free = PyObject_GetAttr(PyTuple_GET_ITEM(t, 0), s_size_in_dyn);
        if (free == NULL)
            goto done;
        if (!PyTuple_Check(refs) || !PyTuple_Check(free)) {
            Py_DECREF(free);
            PyErr_SetString(PyExc_TypeError, "loose_tokens: a node token's refs and size_in_dyn are tuples");
            goto done;
        }
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(refs); k++) {
            int through_dyn = 0;
            for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(free) && !through_dyn; j++) {
                Py_ssize_t f = PyLong_AsSsize_t(PyTuple_GET_ITEM(free, j));
                if (f == -1 && PyErr_Occurred()) {
                    Py_DECREF(free);
                    goto done;
                }
                through_dyn = f == k;
            }
            Py_ssize_t r = PyLong_AsSsize_t(PyTuple_GET_ITEM(refs, k));
            if (r == -1 && PyErr_Occurred()) {
                Py_DECREF(free);
                goto done;
            }
            if (!through_dyn && r >= 0 && r < n)
                sized[r] = 1;
        }
        Py_DECREF(free);
    }
    int changed = 0;
    for (Py_ssize_t i = 0; i < n && !changed; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        changed = !sized[i] && !(PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 8);
    }
    if (!changed) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    if ((out = PyTuple_New(n)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i), *v;
        if (!sized[i] && !(PyTuple_Check(t) && PyTuple_GET_SIZE(t) == 8))
            v = PySequence_GetSlice(t, 0, 3);
        else {
            Py_INCREF(t);
            v = t;
        }
        if (v == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyTuple_SET_ITEM(out, i, v);
    }
done:
    PyMem_Free(sized);
    Py_DECREF(seq);
    return out;
}

/* ------------------------------------------------------------------ GpuMat(m, roi) */
/* GpuMat.__init__ as ``Init(slow)``: ``GpuMat(m, (x, y, w, h))`` of memory with nothing pending
 * (a frame loop's crop of an uploaded frame) sets the view's fields here, as
 * GpuMat._init_from does (no Python frame, no lock: nothing else runs meanwhile); every other
 * argument list, and before bind(), runs ``slow`` — the Python __init__. */
typedef struct {
    PyObject_HEAD
    PyObject *slow, *dict;
    vectorcallfunc vectorcall;
} InitObject;

/* 1 the view was set, 0 the Python __init__ decides, -1 an error */
static int view_init(PyObject *self, PyObject *m, PyObject *roi) {
    if (GpuMatT == NULL || !PyObject_TypeCheck(self, GpuMatT) || Py_TYPE(m) != GpuMatT ||
            !PyTuple_CheckExact(roi) || PyTuple_GET_SIZE(roi) != 4)
        return 0;
    PyObject *alloc = SLOT(m, G_alloc);
    if (SLOT(m, G_node) != Py_None || alloc == NULL || alloc == Py_None)
        return 0;
    long r[4], my, mx, rows, cols;
    for (int i = 0; i < 4; i++)
        if (!long_of(PyTuple_GET_ITEM(roi, i), &r[i]))
            return PyErr_Occurred() ? -1 : 0;
    if (!long_of(SLOT(m, G_y0), &my) || !long_of(SLOT(m, G_x0), &mx) ||
            !long_of(SLOT(m, G_rows), &rows) || !long_of(SLOT(m, G_cols), &cols))
        return PyErr_Occurred() ? -1 : 0;
    long x = r[0], y = r[1], w = r[2], h = r[3];
    if (!(rows > 0 && cols > 0 && x >= 0 && y >= 0 && w > 0 && h > 0 && x <= cols - w && y <= rows - h))
        return 0;                                  /* (an empty view, or the error: Python's) */
    PyObject *y0 = PyLong_FromLong(my + y), *x0 = PyLong_FromLong(mx + x);
    if (y0 == NULL || x0 == NULL) {
        Py_XDECREF(y0);
        Py_XDECREF(x0);
        return -1;
    }
    set_slot(self, G_alloc, alloc);
    put_slot(self, G_y0, y0);
    put_slot(self, G_x0, x0);
    set_slot(self, G_rows, PyTuple_GET_ITEM(roi, 3));
    set_slot(self, G_cols, PyTuple_GET_ITEM(roi, 2));
    set_slot(self, G_depth, SLOT(m, G_depth));
    set_slot(self, G_cn, SLOT(m, G_cn));
    set_slot(self, G_node, Py_None); set_slot(self, G_src, Py_None); set_slot(self, G_parent, Py_None);
    set_slot(self, G_views, Py_None); set_slot(self, G_stream, Py_None);
    return 1;
}

static PyObject *init_vectorcall(PyObject *self_, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    InitObject *self = (InitObject *)self_;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs == 3 && (kwnames == NULL || PyTuple_GET_SIZE(kwnames) == 0)) {
        int done = view_init(args[0], args[1], args[2]);
        if (done < 0)
            return NULL;
        if (done)
            Py_RETURN_NONE;
    }
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *init_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    PyObject *slow;
    if (!PyArg_ParseTuple(args, "O:Init", &slow))
        return NULL;
    InitObject *self = (InitObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(slow); self->slow = slow;
    self->vectorcall = init_vectorcall;
    if ((self->dict = PyDict_New()) == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int init_traverse(InitObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->slow); Py_VISIT(self->dict);
    return 0;
}

static int init_clear(InitObject *self) {
    Py_CLEAR(self->slow); Py_CLEAR(self->dict);
    return 0;
}

static void init_dealloc(InitObject *self) {
    PyObject_GC_UnTrack(self);
    init_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyGetSetDef init_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject InitType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazycv._hotpath.Init",
    .tp_basicsize = sizeof(InitObject),
    .tp_dealloc = (destructor)init_dealloc,
    .tp_vectorcall_offset = offsetof(InitObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "GpuMat.__init__: a crop of memory in C, everything else through the Python __init__",
    .tp_traverse = (traverseproc)init_traverse,
    .tp_clear = (inquiry)init_clear,
    .tp_getset = init_getset,
    .tp_descr_get = api_get,
    .tp_dictoffset = offsetof(InitObject, dict),
    .tp_new = init_new,
};

/* ------------------------------------------------------------------ module */
static PyMethodDef methods[] = {
    {"bind", bind, METH_VARARGS, "bind(Node, Source, GpuMat, Recording, ir, runtime, plain types)"},
    {"signature", (PyCFunction)(void (*)(void))signature, METH_FASTCALL, "recipes.signature(args, kw) in C"},
    {"node", (PyCFunction)(void (*)(void))node, METH_FASTCALL, "a new ir.Node, as Node.__init__ makes it"},
    {"lazy", (PyCFunction)(void (*)(void))lazy, METH_FASTCALL, "GpuMat._lazy(node) in C"},
    {"bind_recipes", bind_recipes, METH_VARARGS, "bind_recipes(Recipe, recipes, streams, table, MISS, RUN)"},
    {"new_recording", new_recording, METH_NOARGS, "ir.new_recording in C"},
    {"forget_calls", forget_calls, METH_NOARGS, "recipes.forget's part in C: each function's last recipe dropped"},
    {"recipe_hits", recipe_hits, METH_NOARGS,
     "how many replayed calls found their recipe as the function's last, by place, in the table (since import)"},
    {"signature_matches", (PyCFunction)(void (*)(void))signature_matches, METH_FASTCALL,
     "whether signature(args, kw) would equal sig (hot_call's check of a function's last recipe)"},
    {"call", (PyCFunction)(void (*)(void))call, METH_FASTCALL, "recipes.call's replay, or RUN or MISS"},
    {"finish", (PyCFunction)(void (*)(void))finish, METH_FASTCALL, "program._FlushProgramBase._finish's loops"},
    {"pick", (PyCFunction)(void (*)(void))pick, METH_FASTCALL, "FlushProgram.run's gathers of values and slab items"},
    {"over", (PyCFunction)(void (*)(void))over, METH_FASTCALL, "compose's GpuMats over a batch program's buffers"},
    {"let_go", (PyCFunction)(void (*)(void))let_go, METH_FASTCALL, "runtime._let_go_of_history's loop"},
    {"values_of", values_of, METH_O, "ir.Recording.values's loop: weak references dereferenced"},
    {"track", track, METH_O, "the cyclic GC tracks the object again (an Allocation a write joins)"},
    {"fills", (PyCFunction)(void (*)(void))fills, METH_FASTCALL, "program.FlushProgram._fills in C"},
    {"launch", (PyCFunction)(void (*)(void))launch, METH_FASTCALL,
     "a kernel's parameters written into its slots and cuLaunchKernel called, or None where Python writes them"},
    {"single_args", (PyCFunction)(void (*)(void))single_args, METH_FASTCALL,
     "program.SingleFlushProgram's launch arguments, or None where a value is gone"},
    {"loose_tokens", loose_tokens, METH_O, "plancache.loose_tokens(tokens) in C"},
    {"pending_of", pending_of, METH_O, "lazycv.materialize's pending GpuMats, or None where Python decides"},
    {"flush_mats", flush_mats, METH_O,
     "lazycv.materialize's pending GpuMats flushed where flush_alone serves them: None, [] or what Python flushes"},
    {"flush_alone", (PyCFunction)(void (*)(void))flush_alone, METH_FASTCALL,
     "runtime.flush(requested) for the calling thread's results alone, or False where Python decides"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "lazycv._hotpath", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__hotpath(void) {
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    INT0 = PyLong_FromLong(0);
    ZERO = Py_BuildValue("(s)", "0.0");
    NEG_ZERO = Py_BuildValue("(s)", "-0.0");
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(s_name, "name"); INTERN(s_rec, "rec"); INTERN(s_device, "device"); INTERN(s_pending, "pending");
    INTERN(s_since_flush, "since_flush"); INTERN(s_first_seen, "first_seen"); INTERN(s_close, "close");
    INTERN(s_MULTI_DEVICE, "MULTI_DEVICE"); INTERN(s_AUTO_FLUSH_OPS, "AUTO_FLUSH_OPS"); INTERN(s_flush, "flush");
    INTERN(s_LIMIT, "LIMIT"); INTERN(s_ENABLED, "ENABLED"); INTERN(s_CHECK, "CHECK");
    INTERN(s_RECORD_ON, "RECORD_ON"); INTERN(s_any_shared, "any_shared"); INTERN(s__value, "_value");
    INTERN(s_read_shared_now, "read_shared_now");
    INTERN(s_OPEN, "OPEN"); INTERN(s__GENERATIONS, "_GENERATIONS"); INTERN(s__OPEN_PRUNE, "_OPEN_PRUNE");
    INTERN(s_prune_open, "prune_open");
    INTERN(s_data, "data"); INTERN(s__SPARE, "_SPARE"); INTERN(s_seq_counted, "seq_counted");
    INTERN(s_ops_recorded, "ops_recorded");
    INTERN(s_run, "run"); INTERN(s_backend, "backend"); INTERN(s_buffers, "buffers"); INTERN(s_outputs_for, "outputs_for");
    INTERN(s_ACTIVE, "ACTIVE"); INTERN(s_select_mats, "select_mats"); INTERN(s_launch, "launch");
    INTERN(s_launcher, "launcher"); INTERN(s_TAPE, "TAPE"); INTERN(s___dict__, "__dict__");
    INTERN(s__lazycv_watched, "_lazycv_watched"); INTERN(s_foreign_streams, "foreign_streams");
    INTERN(s_CURRENT, "CURRENT");
    INTERN(s_computed, "computed"); INTERN(s_kernels_launched, "kernels_launched"); INTERN(s_ops_fused, "ops_fused");
    INTERN(s_flushes, "flushes"); INTERN(s_program_hits, "program_hits");
    INTERN(s_written, "written"); INTERN(s_capture, "capture");
    INTERN(s_threads, "threads"); INTERN(s_fuse, "fuse"); INTERN(s_plans, "plans"); INTERN(s__replays, "_replays");
    INTERN(s_program, "program"); INTERN(s_key, "key"); INTERN(s_move_to_end, "move_to_end");
    INTERN(s_new_recording, "new_recording"); INTERN(s_stats, "stats");
    INTERN(s_plan_hits, "plan_hits"); INTERN(s__run_program, "_run_program");
    INTERN(s__let_go_of_history, "_let_go_of_history"); INTERN(s__flush_planned, "_flush_planned");
    if ((ONE = PyLong_FromLong(1)) == NULL)
        return NULL;
    if (PyType_Ready(&ApiType) < 0 || PyType_Ready(&InitType) < 0 || PyType_Ready(&KeyType) < 0 ||
            PyType_Ready(&LauncherType) < 0 || PyType_Ready(&RLockType) < 0)
        return NULL;
    Py_INCREF(&LauncherType);
    if (PyModule_AddObject(m, "Launcher", (PyObject *)&LauncherType) < 0)
        return NULL;
    Py_INCREF(&KeyType);
    if (PyModule_AddObject(m, "ReplayKey", (PyObject *)&KeyType) < 0)
        return NULL;
    Py_INCREF(&InitType);
    if (PyModule_AddObject(m, "Init", (PyObject *)&InitType) < 0)
        return NULL;
    Py_INCREF(&ApiType);
    if (PyModule_AddObject(m, "Api", (PyObject *)&ApiType) < 0)
        return NULL;
    Py_INCREF(&RLockType);
    if (PyModule_AddObject(m, "RLock", (PyObject *)&RLockType) < 0)
        return NULL;
    if (INT0 == NULL || ZERO == NULL || NEG_ZERO == NULL)
        return NULL;
    return m;
}
