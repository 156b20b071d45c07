/* pcm_paper.c — pcm._pcm's binding of the paper's explicit calls (Table 1): status, store/load
 * (and their maps), commit, reconfigure, split and merge over NumPy arrays and pcm.Dist maps, and
 * what the last reconfiguration was (PCM_Reconfig_*). The calls that can block release the GIL.
 *
 * Buffers: PCM_Split and PCM_Merge take a malloc'd buffer, free it and give back another. The
 * binding never hands them memory a NumPy array shows: it copies the caller's array into a
 * malloc'd buffer of its own for the call (the caller's array stays valid and unchanged), and
 * returns the new buffer as a new NumPy array whose base is a capsule that frees it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pcm_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>
#include <stdlib.h>
#include <string.h>

#include "pcm_ext.h"

/* pcm.Status's members by code (PCM_NONE .. PCM_STOP), set by _setup_status. */
#define STATUS_CODES 8
static PyObject *status_member[STATUS_CODES];

/* _setup_status(Status): pcm.Status's members, returned by status(). */
PyObject *py_setup_status(PyObject *self, PyObject *cls) {
  (void)self;
  for (int code = 0; code < STATUS_CODES; ++code) {
    PyObject *m = PyObject_CallFunction(cls, "i", code);
    if (!m) { /* not a member (5, 6): status() returns a plain int there */
      PyErr_Clear();
      continue;
    }
    Py_XSETREF(status_member[code], m);
  }
  Py_RETURN_NONE;
}

/* status(comm) -> pcm.Status: PCM_Status. A call inside an agreement window is local
 * (PCM_Status_if_local) and keeps the GIL; one that may broadcast releases it. PCM_ERROR raises
 * pcm.Error with code -1 and PCM_Last_error's message. */
PyObject *py_status(PyObject *self, PyObject *arg) {
  MPI_Comm comm;
  int s;
  (void)self;
  if (!get_comm(arg, &comm)) return NULL;
  s = PCM_Status_if_local(comm);
  if (s == PCM_NOT_LOCAL) {
    PyThreadState *ts = PyEval_SaveThread();
    s = PCM_Status(comm);
    PyEval_RestoreThread(ts);
  }
  if (s == PCM_ERROR) return raise_pcm(s);
  if (s >= 0 && s < STATUS_CODES && status_member[s]) {
    Py_INCREF(status_member[s]);
    return status_member[s];
  }
  return PyLong_FromLong(s);
}

/* ---- dtypes and buffers ---- */

/* The NumPy type number of a PCM element type; -1 if none. */
static int typenum_of(PCM_Datatype t) {
  switch (t) {
    case PCM_CHAR:
      return NPY_INT8;
    case PCM_BYTE:
      return NPY_UINT8;
    case PCM_INT:
      return NPY_INT32;
    case PCM_LONG:
      return NPY_LONG;
    case PCM_LONG_LONG:
      return NPY_LONGLONG;
    case PCM_FLOAT:
      return NPY_FLOAT32;
    case PCM_DOUBLE:
      return NPY_FLOAT64;
  }
  return -1;
}

/* A C-contiguous, aligned array of obj (itself when it is one, else a copy); its PCM type in
 * *type. NULL with an exception set when obj's dtype is not one PCM has. */
static PyArrayObject *contiguous(PyObject *obj, int *type) {
  int typenum;
  PyObject *a = PyArray_FROM_OF(obj, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
  if (!a) return NULL;
  if (!(*type = pcm_type_of(PyArray_DESCR((PyArrayObject *)a), &typenum))) {
    Py_DECREF(a);
    return NULL;
  }
  return (PyArrayObject *)a;
}

static void capsule_free(PyObject *cap) { free(PyCapsule_GetPointer(cap, "pcm.buffer")); }

/* A 1-D array of n elements over buf (malloc'd), which it frees when the last view of it goes.
 * buf is freed on failure too. NULL buf: a new empty array. */
static PyObject *array_owning(void *buf, long n, int typenum) {
  npy_intp dims = buf ? n : 0;
  if (!buf) return PyArray_ZEROS(1, &dims, typenum, 0);
  PyObject *cap = PyCapsule_New(buf, "pcm.buffer", capsule_free);
  if (!cap) {
    free(buf);
    return NULL;
  }
  PyObject *a = PyArray_SimpleNewFromData(1, &dims, typenum, buf);
  if (!a) {
    Py_DECREF(cap);
    return NULL;
  }
  if (PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) { /* cap is taken even then */
    Py_DECREF(a);
    return NULL;
  }
  return a;
}

/* ---- store, load ---- */

/* store(rank, key, array): PCM_Store of the array's elements (any shape: all of them). */
PyObject *py_store(PyObject *self, PyObject *args) {
  int rank, type, rc;
  const char *key;
  PyObject *obj;
  (void)self;
  if (!PyArg_ParseTuple(args, "isO", &rank, &key, &obj)) return NULL;
  PyArrayObject *a = contiguous(obj, &type);
  if (!a) return NULL;
  const void *buf = PyArray_DATA(a);
  const long count = (long)PyArray_SIZE(a);
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Store(rank, key, buf, (PCM_Datatype)type, count);
  PyEval_RestoreThread(ts);
  Py_DECREF(a);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

/* PCM_Load into count elements at buf, of type; an int64 request also reads what C stored as
 * PCM_LONG where a long is 8 bytes (the two are the same NumPy dtype). */
static int load_into(int rank, const char *key, void *buf, int type, long count) {
  int rc;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Load(rank, key, buf, (PCM_Datatype)type, count);
  if (rc == PCM_ERR_TYPE && type == PCM_LONG_LONG && sizeof(long) == 8)
    rc = PCM_Load(rank, key, buf, PCM_LONG, count);
  PyEval_RestoreThread(ts);
  return rc;
}

/* load(rank, key, out=None) -> array. out: a writable C-contiguous NumPy array the stored
 * elements are read into (and which is returned), or a dtype, or None (the stored type): then a
 * new 1-D array of the stored count (PCM_Load_count first). */
PyObject *py_load(PyObject *self, PyObject *args) {
  int rank, type, typenum, rc;
  const char *key;
  PyObject *out = Py_None;
  (void)self;
  if (!PyArg_ParseTuple(args, "is|O", &rank, &key, &out)) return NULL;
  if (PyArray_Check(out)) {
    PyArrayObject *a = (PyArrayObject *)out;
    if (!PyArray_ISCARRAY(a))
      return PyErr_Format(PyExc_ValueError, "pcm.load: out must be writable and C-contiguous");
    if (!(type = pcm_type_of(PyArray_DESCR(a), &typenum))) return NULL;
    rc = load_into(rank, key, PyArray_DATA(a), type, (long)PyArray_SIZE(a));
    if (rc != PCM_SUCCESS) return raise_pcm(rc);
    Py_INCREF(out);
    return out;
  }
  PCM_Datatype stored;
  long count = 0;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Load_count(rank, key, &stored, &count);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  type = stored;
  typenum = typenum_of(stored);
  if (out != Py_None) { /* a dtype */
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(out, &descr)) return NULL;
    type = pcm_type_of(descr, &typenum);
    Py_DECREF(descr);
    if (!type) return NULL;
  }
  if (typenum < 0) return PyErr_Format(PyExc_TypeError, "pcm.load: stored type %d", (int)stored);
  npy_intp n = count;
  PyObject *a = PyArray_ZEROS(1, &n, typenum, 0);
  if (!a) return NULL;
  rc = load_into(rank, key, PyArray_DATA((PyArrayObject *)a), type, count);
  if (rc != PCM_SUCCESS) {
    Py_DECREF(a);
    return raise_pcm(rc);
  }
  return a;
}

/* load_count(rank, key) -> (dtype, count): PCM_Load_count. */
PyObject *py_load_count(PyObject *self, PyObject *args) {
  int rank, rc;
  const char *key;
  PCM_Datatype type;
  long count = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "is", &rank, &key)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Load_count(rank, key, &type, &count);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  int typenum = typenum_of(type);
  if (typenum < 0) return PyErr_Format(PyExc_TypeError, "pcm.load_count: stored type %d", type);
  return Py_BuildValue("(Nl)", PyArray_DescrFromType(typenum), count);
}

/* store_dist(rank, key, dist): PCM_Store_dist. */
PyObject *py_store_dist(PyObject *self, PyObject *args) {
  int rank, rc;
  const char *key;
  PyObject *d;
  (void)self;
  if (!PyArg_ParseTuple(args, "isO!", &rank, &key, &DistType, &d)) return NULL;
  PCM_Dist h = dist_handle((DistObject *)d);
  if (!h) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Store_dist(rank, key, h);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

/* load_dist(rank, key) -> a new Dist: PCM_Load_dist. */
PyObject *py_load_dist(PyObject *self, PyObject *args) {
  int rank, rc;
  const char *key;
  PCM_Dist h = NULL;
  (void)self;
  if (!PyArg_ParseTuple(args, "is", &rank, &key)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Load_dist(rank, key, &h);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return dist_new_owned(h);
}

/* load_redistribute(key, dtype, from, to, rank, out=None) -> array laid out for rank by `to`
 * (halos zero in a new one): PCM_Load_redistribute. */
PyObject *py_load_redistribute(PyObject *self, PyObject *args) {
  const char *key;
  PyArray_Descr *descr = NULL;
  PyObject *from, *to, *out = Py_None;
  int rank, type, typenum, rc;
  long elements = 0;
  (void)self;
  if (!PyArg_ParseTuple(args, "sO&O!O!i|O", &key, PyArray_DescrConverter, &descr, &DistType, &from,
                        &DistType, &to, &rank, &out))
    return NULL;
  type = pcm_type_of(descr, &typenum);
  Py_DECREF(descr);
  PCM_Dist f = type ? dist_handle((DistObject *)from) : NULL;
  PCM_Dist t = f ? dist_handle((DistObject *)to) : NULL;
  if (!t) return NULL;
  if ((rc = PCM_Dist_local(t, rank, NULL, NULL, &elements)) != PCM_SUCCESS) return raise_pcm(rc);
  if (out == Py_None) {
    npy_intp n = elements;
    if (!(out = PyArray_ZEROS(1, &n, typenum, 0))) return NULL;
  } else if (!PyArray_Check(out) || !PyArray_ISCARRAY((PyArrayObject *)out) ||
             PyArray_TYPE((PyArrayObject *)out) != typenum ||
             PyArray_SIZE((PyArrayObject *)out) != elements) {
    return PyErr_Format(PyExc_ValueError,
                        "pcm.load_redistribute: out must be a writable C-contiguous array of the "
                        "dtype with %ld elements (to.local(rank))",
                        elements);
  } else {
    Py_INCREF(out);
  }
  void *buf = PyArray_DATA((PyArrayObject *)out);
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Load_redistribute(key, (PCM_Datatype)type, f, t, rank, buf);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) {
    Py_DECREF(out);
    return raise_pcm(rc);
  }
  return out;
}

/* commit(comm, iteration): PCM_Commit, collective. */
PyObject *py_commit(PyObject *self, PyObject *args) {
  (void)self;
  return call_comm_int(args, PCM_Commit);
}

/* reconfigure(comm, command=None) -> comm: PCM_Reconfigure (MPI.COMM_NULL in the mover). A
 * command of None spawns this interpreter with the command line given to init. */
PyObject *py_reconfigure(PyObject *self, PyObject *args) {
  PyObject *obj;
  const char *command = NULL;
  MPI_Comm before, comm;
  int rc;
  (void)self;
  if (!PyArg_ParseTuple(args, "O|z", &obj, &command) || !get_comm(obj, &before)) return NULL;
  comm = before;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Reconfigure(&comm, command);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return comm_result(obj, before, comm);
}

/* ---- split, merge ---- */

typedef int (*reshape_fn)(void **, PCM_Datatype, PCM_Dist *, int *, int *, int *, MPI_Comm *,
                          const char *);
static int merge_call(void **buf, PCM_Datatype type, PCM_Dist *dist, int *it, int *rank, int *size,
                      MPI_Comm *comm, const char *command) {
  (void)command;
  return PCM_Merge(buf, type, dist, it, rank, size, comm);
}
static int merge_collective_call(void **buf, PCM_Datatype type, PCM_Dist *dist, int *it, int *rank,
                                 int *size, MPI_Comm *comm, const char *command) {
  (void)command;
  return PCM_Merge_Collective(buf, type, dist, it, rank, size, comm);
}

/* What a split or merge starts from: the element type, the Dist taken over (or NULL) and a
 * malloc'd copy of the caller's array (NULL where it holds none). 0, or -1 with an exception. */
struct reshape_in {
  int type, typenum;
  DistObject *d;
  PCM_Dist map;
  void *buf;
};

static int reshape_prepare(PyObject *comm_obj, PyObject *array, PyObject *dist, PyObject *dtype,
                           struct reshape_in *in) {
  MPI_Comm comm;
  int rank = -1, rc;
  long elements = 0;
  PyArrayObject *a = NULL;
  memset(in, 0, sizeof *in);
  if (!get_comm(comm_obj, &comm)) return -1;
  if (dist != Py_None) {
    if (!PyObject_TypeCheck(dist, &DistType) || !((DistObject *)dist)->own) {
      PyErr_SetString(PyExc_ValueError,
                      "pcm: dist must be None or a pcm.Dist holding a map of the program's own "
                      "(not a registration's .dist, nor one a split or merge took over)");
      return -1;
    }
    in->d = (DistObject *)dist;
  }
  if (array != Py_None) {
    if (!(a = contiguous(array, &in->type))) return -1;
    in->typenum = PyArray_TYPE(a);
  } else if (dtype != Py_None) {
    PyArray_Descr *descr = NULL;
    if (!PyArray_DescrConverter(dtype, &descr)) return -1;
    in->type = pcm_type_of(descr, &in->typenum);
    Py_DECREF(descr);
    if (!in->type) return -1;
  } else {
    PyErr_SetString(PyExc_ValueError, "pcm: without an array, give its dtype");
    return -1;
  }
  if (in->d) {
    if ((rc = PCM_Comm_rank(comm, &rank)) != PCM_SUCCESS ||
        (rc = PCM_Dist_local(in->d->own, rank, NULL, NULL, &elements)) != PCM_SUCCESS) {
      Py_XDECREF(a);
      raise_pcm(rc);
      return -1;
    }
  }
  if ((a ? (long)PyArray_SIZE(a) : 0) != elements) {
    PyErr_Format(PyExc_ValueError, "pcm: the array has %ld elements, its map gives rank %d %ld",
                 a ? (long)PyArray_SIZE(a) : 0L, rank, elements);
    Py_XDECREF(a);
    return -1;
  }
  if (elements > 0) {
    const size_t bytes = (size_t)elements * (size_t)PyArray_ITEMSIZE(a);
    if (!(in->buf = malloc(bytes))) {
      Py_DECREF(a);
      PyErr_NoMemory();
      return -1;
    }
    memcpy(in->buf, PyArray_DATA(a), bytes);
  }
  Py_XDECREF(a);
  return 0;
}

/* In the world being reshaped (a process that passes a map: not one a split spawned, which has
 * none yet and whose comm is not that world), the processes agree on their arguments before the
 * collective call, so that a mistake on one raises on all instead of leaving the others waiting
 * in it: *ok is 0 where this one's prepare failed (its exception set). 0, or -1 with an exception
 * set on every process. */
static int reshape_agree(PyObject *comm_obj, PyObject *dist, int ok, int type) {
  MPI_Comm comm;
  int v[3] = {!ok, ok ? type : 0, ok ? -type : 0}, rc;
  if (dist == Py_None) return ok ? 0 : -1;
  PyObject *type_, *value, *tb; /* get_comm must not replace this process's exception */
  PyErr_Fetch(&type_, &value, &tb);
  const int have_comm = get_comm(comm_obj, &comm);
  if (!have_comm) PyErr_Clear();
  PyErr_Restore(type_, value, tb);
  if (!have_comm) return -1; /* then prepare failed too, on this comm_obj */
  PyThreadState *ts = PyEval_SaveThread();
  rc = MPI_Allreduce(MPI_IN_PLACE, v, 3, MPI_INT, MPI_MAX, comm);
  PyEval_RestoreThread(ts);
  if (!ok) return -1; /* this process's own exception stands */
  if (rc != MPI_SUCCESS) {
    PyErr_SetString(PyExc_RuntimeError, "pcm: MPI_Allreduce failed (agreeing on the arguments)");
    return -1;
  }
  if (v[0]) {
    PyErr_SetString(PyExc_ValueError, "pcm: another process's arguments were refused");
    return -1;
  }
  if (v[1] != -v[2]) {
    PyErr_SetString(PyExc_TypeError, "pcm: the processes give different dtypes");
    return -1;
  }
  return 0;
}

/* The split or merge itself, and its result: (comm, array or None, Dist or None, iteration). */
static PyObject *reshape(reshape_fn fn, PyObject *comm_obj, PyObject *array, PyObject *dist, int it,
                         PyObject *dtype, const char *command) {
  struct reshape_in in;
  MPI_Comm before, comm;
  int rank = -1, size = 0, rc;
  const int ok = reshape_prepare(comm_obj, array, dist, dtype, &in) == 0;
  if (reshape_agree(comm_obj, dist, ok, in.type) != 0) {
    free(in.buf);
    return NULL;
  }
  get_comm(comm_obj, &before);
  comm = before;
  if (in.d) { /* taken over: no other thread may use the map the call frees */
    in.map = in.d->own;
    in.d->own = NULL;
  }
  void *buf = in.buf;
  PyThreadState *ts = PyEval_SaveThread();
  rc = fn(&buf, (PCM_Datatype)in.type, &in.map, &it, &rank, &size, &comm, command);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) { /* everything is as it was */
    free(in.buf);
    if (in.d) in.d->own = in.map;
    return raise_pcm(rc);
  }
  long elements = 0;
  if (in.map && rank >= 0 && (rc = PCM_Dist_local(in.map, rank, NULL, NULL, &elements)) != 0)
    elements = 0;
  PyObject *c = comm_result(comm_obj, before, comm);
  PyObject *d = in.map ? dist_new_owned(in.map) : (Py_INCREF(Py_None), Py_None);
  PyObject *a = comm != MPI_COMM_NULL ? array_owning(buf, elements, in.typenum)
                                      : (free(buf), Py_INCREF(Py_None), Py_None);
  if (!c || !d || !a) {
    Py_XDECREF(c);
    Py_XDECREF(d);
    Py_XDECREF(a);
    return NULL;
  }
  return Py_BuildValue("(NNNi)", c, a, d, it);
}

/* split(comm, array, dist, iteration, dtype=None, command=None) -> (comm, array, dist, it). */
static PyObject *split_with(reshape_fn fn, PyObject *args, PyObject *kw) {
  static char *names[] = {"comm", "array", "dist", "iteration", "dtype", "command", NULL};
  PyObject *comm, *array, *dist, *dtype = Py_None;
  int it;
  const char *command = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOi|Oz", names, &comm, &array, &dist, &it, &dtype,
                                   &command))
    return NULL;
  return reshape(fn, comm, array, dist, it, dtype, command);
}

PyObject *py_split(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  return split_with(PCM_Split, args, kw);
}
PyObject *py_split_collective(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  return split_with(PCM_Split_Collective, args, kw);
}

/* merge(comm, array, dist, iteration, dtype=None) -> (comm, array, dist, it). */
static PyObject *merge_with(reshape_fn fn, PyObject *args, PyObject *kw) {
  static char *names[] = {"comm", "array", "dist", "iteration", "dtype", NULL};
  PyObject *comm, *array, *dist, *dtype = Py_None;
  int it;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOOi|O", names, &comm, &array, &dist, &it, &dtype))
    return NULL;
  return reshape(fn, comm, array, dist, it, dtype, NULL);
}

PyObject *py_merge(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  return merge_with(merge_call, args, kw);
}
PyObject *py_merge_collective(PyObject *self, PyObject *args, PyObject *kw) {
  (void)self;
  return merge_with(merge_collective_call, args, kw);
}

/* merge_datacnts(dist, comm) -> (elements, rank) this process will have (0, -1: it leaves). */
PyObject *py_merge_datacnts(PyObject *self, PyObject *args) {
  PyObject *d, *comm_obj;
  MPI_Comm comm;
  long count = 0;
  int rank = -1, rc;
  (void)self;
  if (!PyArg_ParseTuple(args, "O!O", &DistType, &d, &comm_obj) || !get_comm(comm_obj, &comm))
    return NULL;
  PCM_Dist h = dist_handle((DistObject *)d);
  if (!h) return NULL;
  if ((rc = PCM_Merge_datacnts(h, &count, &rank, comm)) != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(li)", count, rank);
}

/* ---- the last reconfiguration ---- */

PyObject *py_reconfig_last(PyObject *self, PyObject *unused) {
  int kind = 0, size = 0, rc;
  double started = 0;
  (void)self;
  (void)unused;
  if ((rc = PCM_Reconfig_last(&kind, &size, &started)) != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(iid)", kind, size, started);
}

PyObject *py_reconfig_reason(PyObject *self, PyObject *unused) {
  char reason[512];
  int rc;
  (void)self;
  (void)unused;
  if ((rc = PCM_Reconfig_reason(reason, (int)sizeof reason)) != PCM_SUCCESS) return raise_pcm(rc);
  return PyUnicode_DecodeUTF8(reason, (Py_ssize_t)strlen(reason), "replace");
}

PyObject *py_reconfig_times(PyObject *self, PyObject *unused) {
  double spawn = 0, data = 0, rebuild = 0;
  int rc;
  (void)self;
  (void)unused;
  if ((rc = PCM_Reconfig_times(&spawn, &data, &rebuild)) != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(ddd)", spawn, data, rebuild);
}
