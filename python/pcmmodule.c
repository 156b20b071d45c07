/* pcmmodule.c — pcm._pcm, the CPython extension under the Python package pcm: the register-once
 * calls of pcm.h over mpi4py communicators and NumPy arrays (python/pcm/__init__.py wraps it). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pcm_ARRAY_API
#include <limits.h>
#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pcm.h"
#include "pcm_ext.h"

/* Set once by pcm/__init__.py: the exception class pcm.Error and the members of pcm.Adapt. */
static PyObject *error_class;
static PyObject *adapt_none, *adapt_reshaped, *adapt_retired;
/* The PCM world as of the last call that changed it, for the rank that sizes arrays. */
static MPI_Comm current_world = MPI_COMM_NULL;
/* Registrations and registered value arrays: libpcm keeps their addresses until the end. */
static PyObject *kept;

/* Raises pcm.Error(code, message) with PCM_Last_error's message; returns NULL. */
PyObject *raise_pcm(int code) {
  const char *msg = PCM_Last_error();
  if (!error_class) {
    PyErr_Format(PyExc_RuntimeError, "PCM error %d: %s", code, msg);
    return NULL;
  }
  PyObject *e = PyObject_CallFunction(error_class, "is", code, msg ? msg : "");
  if (e) {
    PyErr_SetObject(error_class, e);
    Py_DECREF(e);
  }
  return NULL;
}

/* The PCM element type, NumPy type number and size of a dtype; 0 and a TypeError if unsupported. */
int pcm_type_of(PyArray_Descr *d, int *typenum) {
  static const struct {
    char kind;
    int size;
    int pcm;
  } table[] = {{'i', 1, PCM_CHAR},      {'u', 1, PCM_BYTE},  {'i', 4, PCM_INT},
               {'i', 8, PCM_LONG_LONG}, {'f', 4, PCM_FLOAT}, {'f', 8, PCM_DOUBLE}};
  if (!PyArray_ISNBO(d->byteorder)) { /* the bytes would be read as this machine's order */
    PyErr_Format(PyExc_TypeError, "pcm: a dtype of this machine's byte order expected");
    return 0;
  }
  for (size_t k = 0; k < sizeof table / sizeof table[0]; ++k) {
    if (d->kind == table[k].kind && d->elsize == table[k].size) {
      *typenum = d->type_num;
      return table[k].pcm;
    }
  }
  PyErr_Format(PyExc_TypeError,
               "pcm: unsupported dtype (int8, uint8, int32, int64, float32 or float64)");
  return 0;
}

/* A Python int as an int; -1 with an exception set on failure. */
int as_int(PyObject *o) {
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < INT_MIN || v > INT_MAX) {
    PyErr_SetString(PyExc_OverflowError, "pcm: the value does not fit an int");
    return -1;
  }
  return (int)v;
}

static int current_rank(void) {
  int rank = -1;
  if (current_world == MPI_COMM_NULL || PCM_Comm_rank(current_world, &rank) != PCM_SUCCESS)
    return -1;
  return rank;
}

/* ---- DistArray: a registered distributed array ---- */

/* .array: a NumPy view of the library's current buffer (re-created when the buffer changed). */
static PyObject *reg_array(RegObject *r, void *unused) {
  long elements = 0;
  int rank = current_rank();
  (void)unused;
  if (r->dist && rank >= 0 && PCM_Dist_local(r->dist, rank, NULL, NULL, &elements) != PCM_SUCCESS)
    elements = 0;
  if (!r->buf) elements = 0;
  if (r->view && r->view_buf == r->buf && r->view_len == elements) {
    Py_INCREF(r->view);
    return r->view;
  }
  npy_intp n = elements;
  PyObject *v;
  if (r->buf) {
    v = PyArray_SimpleNewFromData(1, &n, r->typenum, r->buf);
    if (!v) return NULL;
    Py_INCREF(r);
    if (PyArray_SetBaseObject((PyArrayObject *)v, (PyObject *)r) < 0) {
      Py_DECREF(v);
      return NULL;
    }
  } else {
    v = PyArray_ZEROS(1, &n, r->typenum, 0);
    if (!v) return NULL;
  }
  Py_XSETREF(r->view, v);
  r->view_buf = r->buf;
  r->view_len = elements;
  Py_INCREF(v);
  return v;
}

/* .dist: a view of the registration's current map (None where the process holds none). */
static PyObject *reg_dist(RegObject *r, void *unused) {
  (void)unused;
  if (!r->dist) Py_RETURN_NONE;
  DistObject *d = PyObject_New(DistObject, &DistType);
  if (!d) return NULL;
  d->own = NULL;
  d->slot = &r->dist;
  Py_INCREF(r);
  d->keep = (PyObject *)r;
  return (PyObject *)d;
}

static PyGetSetDef reg_getset[] = {
    {"array", (getter)reg_array, NULL,
     "NumPy view of this process's buffer (halos included); read it again after adapt() "
     "returns RESHAPED: the old view's memory is freed",
     NULL},
    {"dist", (getter)reg_dist, NULL, "the current map (a pcm.Dist), or None", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject RegType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pcm.DistArray",
    .tp_basicsize = sizeof(RegObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A registered distributed array (pcm.register_dist).",
    .tp_getset = reg_getset,
};

/* register_dist(name, dtype, dist or None, array or None) -> DistArray. dist is taken over: the
 * registration owns the map from now on and the Dist object shows the current one. */
static PyObject *py_register_dist(PyObject *self, PyObject *args) {
  const char *name;
  PyArray_Descr *descr = NULL;
  PyObject *dist_obj, *data;
  int typenum = 0, rank = current_rank(), type, rc;
  (void)self;
  if (!PyArg_ParseTuple(args, "sO&OO", &name, PyArray_DescrConverter, &descr, &dist_obj, &data))
    return NULL;
  type = pcm_type_of(descr, &typenum);
  const int itemsize = descr->elsize;
  Py_DECREF(descr);
  if (!type) return NULL;
  DistObject *d = NULL;
  if (dist_obj != Py_None) {
    if (!PyObject_TypeCheck(dist_obj, &DistType) || !((DistObject *)dist_obj)->own)
      return PyErr_Format(PyExc_ValueError, "register_dist: dist must be a new pcm.Dist or None");
    d = (DistObject *)dist_obj;
  } else if (data != Py_None) {
    return PyErr_Format(PyExc_ValueError, "register_dist: an array needs its map (dist)");
  }
  long elements = 0;
  if (d && (rc = PCM_Dist_local(d->own, rank, NULL, NULL, &elements)) != PCM_SUCCESS)
    return raise_pcm(rc);
  RegObject *r = PyObject_New(RegObject, &RegType);
  if (!r) return NULL;
  r->buf = d && elements > 0 ? calloc((size_t)elements, (size_t)itemsize) : NULL;
  r->dist = NULL;
  r->typenum = typenum;
  r->itemsize = itemsize;
  r->view = NULL;
  r->view_buf = NULL;
  r->view_len = 0;
  if (d && elements > 0 && !r->buf) {
    Py_DECREF(r);
    return PyErr_NoMemory();
  }
  if (data != Py_None) {
    PyObject *a = PyArray_FROMANY(data, typenum, 0, 0, NPY_ARRAY_C_CONTIGUOUS);
    if (!a || PyArray_SIZE((PyArrayObject *)a) != elements) {
      if (a)
        PyErr_Format(PyExc_ValueError, "register_dist: the array has %zd elements, not %ld",
                     (Py_ssize_t)PyArray_SIZE((PyArrayObject *)a), elements);
      Py_XDECREF(a);
      free(r->buf);
      Py_DECREF(r);
      return NULL;
    }
    if (elements > 0) memcpy(r->buf, PyArray_DATA((PyArrayObject *)a), (size_t)elements * itemsize);
    Py_DECREF(a);
  }
  if (d) r->dist = d->own;
  rc = PCM_Register_dist(name, &r->buf, type, &r->dist);
  if (rc != PCM_SUCCESS) {
    free(r->buf);
    Py_DECREF(r); /* the map stays with the Dist object */
    return raise_pcm(rc);
  }
  if (d) { /* the Dist object now shows the registration's map */
    d->own = NULL;
    d->slot = &r->dist;
    Py_INCREF(r);
    d->keep = (PyObject *)r;
  }
  if (PyList_Append(kept, (PyObject *)r) < 0) {
    Py_DECREF(r);
    return NULL;
  }
  return (PyObject *)r;
}

/* register_value(name, array, local): the array's memory is registered in place and kept. */
static PyObject *py_register_value(PyObject *self, PyObject *args) {
  const char *name;
  PyObject *obj;
  int local, typenum, type, rc;
  (void)self;
  if (!PyArg_ParseTuple(args, "sOp", &name, &obj, &local)) return NULL;
  if (!PyArray_Check(obj) || !PyArray_ISCARRAY((PyArrayObject *)obj))
    return PyErr_Format(PyExc_TypeError, "register_value: a C-contiguous writeable NumPy array");
  PyArrayObject *a = (PyArrayObject *)obj;
  if (!(type = pcm_type_of(PyArray_DESCR(a), &typenum))) return NULL;
  rc = (local ? PCM_Register_local : PCM_Register_value)(name, PyArray_DATA(a), type,
                                                         (long)PyArray_SIZE(a));
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  if (PyList_Append(kept, obj) < 0) return NULL;
  Py_RETURN_NONE;
}

static PyObject *py_unregister(PyObject *self, PyObject *arg) {
  const char *name = PyUnicode_AsUTF8(arg);
  int rc;
  (void)self;
  if (!name) return NULL;
  if ((rc = PCM_Unregister(name)) != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

/* ---- the world: init, resume, adapt, checkpoint, finalize, exit ---- */

int get_comm(PyObject *obj, MPI_Comm *comm) {
  MPI_Comm *p = PyMPIComm_Get(obj);
  if (!p) return 0;
  *comm = *p;
  return 1;
}

PyObject *comm_new(MPI_Comm comm) { return PyMPIComm_New(comm); }

/* The same Python object when the call left the communicator as it was, else a new one. */
PyObject *comm_result(PyObject *old, MPI_Comm before, MPI_Comm after) {
  current_world = after;
  if (after == before) {
    Py_INCREF(old);
    return old;
  }
  return PyMPIComm_New(after);
}

/* init(argv) -> the PCM world: MPI_PCM_Init with argv (what spawned processes are given), then
 * PCM_Init on MPI_COMM_WORLD. On failure MPI is finalized before pcm.Error is raised. */
static PyObject *py_init(PyObject *self, PyObject *arg) {
  static int argc;
  static char **argv;
  int rc;
  (void)self;
  if (!PyList_Check(arg)) return PyErr_Format(PyExc_TypeError, "init: argv must be a list");
  if (!argv) {
    Py_ssize_t n = PyList_GET_SIZE(arg);
    argv = calloc((size_t)n + 1, sizeof *argv);
    if (!argv) return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; ++i) {
      const char *s = PyUnicode_AsUTF8(PyList_GET_ITEM(arg, i));
      if (!s || !(argv[i] = strdup(s))) return s ? PyErr_NoMemory() : NULL;
    }
    argc = (int)n;
  }
  MPI_Comm world = MPI_COMM_WORLD;
  PyThreadState *ts = PyEval_SaveThread();
  rc = MPI_PCM_Init(&argc, &argv);
  if (rc == PCM_SUCCESS) rc = PCM_Init(&world);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) {
    raise_pcm(rc);
    PCM_Finalize(MPI_COMM_NULL);
    return NULL;
  }
  current_world = world;
  return PyMPIComm_New(world);
}

/* Calls fn (PCM_Resume, PCM_Adapt) on arg's communicator without the GIL: 0 and *rc, or -1 with
 * an exception set where arg is no communicator. */
static int call_on_comm(PyObject *arg, int (*fn)(MPI_Comm *), MPI_Comm *before, MPI_Comm *comm,
                        int *rc) {
  if (!get_comm(arg, before)) return -1;
  *comm = *before;
  PyThreadState *ts = PyEval_SaveThread();
  *rc = fn(comm);
  PyEval_RestoreThread(ts);
  return 0;
}

static PyObject *py_resume(PyObject *self, PyObject *arg) {
  MPI_Comm before, comm;
  int rc;
  (void)self;
  if (call_on_comm(arg, PCM_Resume, &before, &comm, &rc) != 0) return NULL;
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return comm_result(arg, before, comm);
}

/* adapt(comm) -> (pcm.Adapt, comm). The common case, inside an agreement window with nothing
 * pending (PCM_Adapt_if_local does it), keeps the GIL (the call neither blocks nor communicates:
 * releasing and taking the GIL back cost more than the call) and allocates nothing: the (NONE,
 * comm) tuple of the last such call is returned again while comm is the same object. */
static PyObject *none_result; /* (adapt_none, comm) */
static PyObject *py_adapt(PyObject *self, PyObject *arg) {
  MPI_Comm before, comm;
  int rc;
  (void)self;
  if (!get_comm(arg, &before)) return NULL;
  comm = before;
  rc = PCM_Adapt_if_local(&comm);
  if (rc == PCM_NOT_LOCAL) {
    PyThreadState *ts = PyEval_SaveThread();
    rc = PCM_Adapt(&comm);
    PyEval_RestoreThread(ts);
  }
  if (rc < 0) return raise_pcm(rc);
  if (rc == PCM_NONE && comm == before) {
    current_world = comm;
    if (!none_result || PyTuple_GET_ITEM(none_result, 1) != arg) {
      PyObject *t = PyTuple_Pack(2, adapt_none ? adapt_none : Py_None, arg);
      if (!t) return NULL;
      Py_XSETREF(none_result, t);
    }
    Py_INCREF(none_result);
    return none_result;
  }
  PyObject *s = rc == PCM_RESHAPED  ? adapt_reshaped
                : rc == PCM_RETIRED ? adapt_retired
                                    : adapt_none;
  PyObject *c = comm_result(arg, before, comm);
  if (!c) return NULL;
  return Py_BuildValue("(ON)", s ? s : Py_None, c);
}

PyObject *call_comm_int(PyObject *args, int (*fn)(MPI_Comm, int)) {
  PyObject *obj;
  MPI_Comm comm;
  int it, rc;
  if (!PyArg_ParseTuple(args, "Oi", &obj, &it) || !get_comm(obj, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = fn(comm, it);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

static PyObject *py_checkpoint(PyObject *self, PyObject *args) {
  (void)self;
  return call_comm_int(args, PCM_Checkpoint);
}

static PyObject *py_checkpoint_wait(PyObject *self, PyObject *arg) {
  MPI_Comm comm;
  int rc;
  (void)self;
  if (!get_comm(arg, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Checkpoint_wait(comm);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

static PyObject *py_finalize(PyObject *self, PyObject *arg) {
  MPI_Comm comm = MPI_COMM_NULL;
  int rc;
  (void)self;
  if (arg != Py_None && !get_comm(arg, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Finalize(comm);
  PyEval_RestoreThread(ts);
  current_world = MPI_COMM_NULL;
  Py_CLEAR(none_result);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

static PyObject *py_exit(PyObject *self, PyObject *unused) {
  int rc;
  (void)self;
  (void)unused;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Exit();
  PyEval_RestoreThread(ts);
  if (rc == PCM_EXIT_STOPPED) return PyLong_FromLong(rc); /* a stop: the exit status to use */
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

static PyObject *py_process_status(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyLong_FromLong(PCM_Process_Status());
}

static PyObject *py_restart_info(PyObject *self, PyObject *unused) {
  int it = 0, np = 0, rc = PCM_Restart_info(&it, &np);
  (void)self;
  (void)unused;
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(ii)", it, np);
}

static PyObject *py_error_string(PyObject *self, PyObject *arg) {
  int code = as_int(arg);
  (void)self;
  if (code == -1 && PyErr_Occurred()) return NULL;
  return PyUnicode_FromString(PCM_Error_string(code));
}

static PyObject *py_last_error(PyObject *self, PyObject *unused) {
  (void)self;
  (void)unused;
  return PyUnicode_FromString(PCM_Last_error());
}

/* _adapt_loop(comm, calls) -> seconds: PCM_Adapt called `calls` times from C, for
 * bench/adapt_cost.py (the same calls without Python around them). Stops at anything but NONE. */
static PyObject *py_adapt_loop(PyObject *self, PyObject *args) {
  PyObject *obj;
  MPI_Comm comm;
  long calls, i;
  int rc = PCM_NONE;
  double t0, t;
  (void)self;
  if (!PyArg_ParseTuple(args, "Ol", &obj, &calls) || !get_comm(obj, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  t0 = MPI_Wtime();
  for (i = 0; i < calls && rc == PCM_NONE; ++i) rc = PCM_Adapt(&comm);
  t = MPI_Wtime() - t0;
  PyEval_RestoreThread(ts);
  if (rc < 0) return raise_pcm(rc);
  if (rc != PCM_NONE) return PyErr_Format(PyExc_RuntimeError, "_adapt_loop: PCM_Adapt gave %d", rc);
  return PyFloat_FromDouble(t);
}

/* _setup(Error, Adapt.NONE, Adapt.RESHAPED, Adapt.RETIRED), from pcm/__init__.py. */
static PyObject *py_setup(PyObject *self, PyObject *args) {
  (void)self;
  if (!PyArg_ParseTuple(args, "OOOO", &error_class, &adapt_none, &adapt_reshaped, &adapt_retired))
    return NULL;
  Py_INCREF(error_class);
  Py_INCREF(adapt_none);
  Py_INCREF(adapt_reshaped);
  Py_INCREF(adapt_retired);
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"init", py_init, METH_O, NULL},
    {"resume", py_resume, METH_O, NULL},
    {"adapt", py_adapt, METH_O, NULL},
    {"checkpoint", py_checkpoint, METH_VARARGS, NULL},
    {"checkpoint_wait", py_checkpoint_wait, METH_O, NULL},
    {"finalize", py_finalize, METH_O, NULL},
    {"exit", py_exit, METH_NOARGS, NULL},
    {"process_status", py_process_status, METH_NOARGS, NULL},
    {"restart_info", py_restart_info, METH_NOARGS, NULL},
    {"register_dist", py_register_dist, METH_VARARGS, NULL},
    {"register_value", py_register_value, METH_VARARGS, NULL},
    {"unregister", py_unregister, METH_O, NULL},
    {"error_string", py_error_string, METH_O, NULL},
    {"last_error", py_last_error, METH_NOARGS, NULL},
    {"gather", py_gather, METH_VARARGS, NULL},
    {"topology", py_topology, METH_O, NULL},
    {"host_comm", py_host_comm, METH_O, NULL},
    {"status", py_status, METH_O, NULL},
    {"store", py_store, METH_VARARGS, NULL},
    {"load", py_load, METH_VARARGS, NULL},
    {"load_count", py_load_count, METH_VARARGS, NULL},
    {"store_dist", py_store_dist, METH_VARARGS, NULL},
    {"load_dist", py_load_dist, METH_VARARGS, NULL},
    {"load_redistribute", py_load_redistribute, METH_VARARGS, NULL},
    {"commit", py_commit, METH_VARARGS, NULL},
    {"reconfigure", py_reconfigure, METH_VARARGS, NULL},
    {"split", (PyCFunction)(void (*)(void))py_split, METH_VARARGS | METH_KEYWORDS, NULL},
    {"split_collective", (PyCFunction)(void (*)(void))py_split_collective,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"merge", (PyCFunction)(void (*)(void))py_merge, METH_VARARGS | METH_KEYWORDS, NULL},
    {"merge_collective", (PyCFunction)(void (*)(void))py_merge_collective,
     METH_VARARGS | METH_KEYWORDS, NULL},
    {"merge_datacnts", py_merge_datacnts, METH_VARARGS, NULL},
    {"reconfig_last", py_reconfig_last, METH_NOARGS, NULL},
    {"reconfig_reason", py_reconfig_reason, METH_NOARGS, NULL},
    {"reconfig_times", py_reconfig_times, METH_NOARGS, NULL},
    {"_setup_status", py_setup_status, METH_O, NULL},
    {"_setup", py_setup, METH_VARARGS, NULL},
    {"_adapt_loop", py_adapt_loop, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pcm._pcm",
    .m_doc = "The C part of the pcm package (use pcm).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__pcm(void) {
  import_array();
  if (import_mpi4py() < 0) return NULL;
  if (PyType_Ready(&DistType) < 0 || PyType_Ready(&RegType) < 0 || PyType_Ready(&HaloType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  kept = PyList_New(0);
  if (!kept || PyModule_AddObject(m, "_kept", kept) < 0) return NULL;
  Py_INCREF(kept);
  Py_INCREF(&DistType);
  Py_INCREF(&RegType);
  Py_INCREF(&HaloType);
  if (PyModule_AddObject(m, "Dist", (PyObject *)&DistType) < 0 ||
      PyModule_AddObject(m, "DistArray", (PyObject *)&RegType) < 0 ||
      PyModule_AddObject(m, "Halo", (PyObject *)&HaloType) < 0)
    return NULL;
  return m;
}
