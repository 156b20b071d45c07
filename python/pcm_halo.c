/* pcm_halo.c — pcm._pcm's halo plans (pcm.Halo: PCM_Halo_create, _exchange, _free), the gather
 * of a registered array (pcm.gather: PCM_Dist_gather) and the topology (pcm.topology,
 * pcm.host_comm: PCM_Topology, PCM_Host_comm). The blocking calls release the GIL. Halo.entries
 * lists a plan's receives (PCM_Halo_entries, PCM_Halo_entry). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pcm_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "pcm_ext.h"

/* ---- Halo: a PCM_Halo it owns, for one map, rank, width and element type ---- */

typedef struct {
  PyObject_HEAD PCM_Halo h;
  int typenum;
} HaloObject;

static void halo_dealloc(HaloObject *o) {
  if (o->h) PCM_Halo_free(&o->h);
  Py_TYPE(o)->tp_free((PyObject *)o);
}

/* Halo(dist, rank, width, dtype) */
static PyObject *halo_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *names[] = {"dist", "rank", "width", "dtype", NULL};
  PyObject *dist;
  PyArray_Descr *descr = NULL;
  int rank, typenum, pcm_type, rc;
  long width;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O!ilO&", names, &DistType, &dist, &rank, &width,
                                   PyArray_DescrConverter, &descr))
    return NULL;
  pcm_type = pcm_type_of(descr, &typenum);
  Py_DECREF(descr);
  if (!pcm_type) return NULL;
  PCM_Dist d = dist_handle((DistObject *)dist);
  if (!d) return NULL;
  HaloObject *o = (HaloObject *)type->tp_alloc(type, 0);
  if (!o) return NULL;
  rc = PCM_Halo_create(d, rank, width, (PCM_Datatype)pcm_type, &o->h);
  if (rc != PCM_SUCCESS) {
    Py_DECREF(o);
    return raise_pcm(rc);
  }
  o->typenum = typenum;
  return (PyObject *)o;
}

/* The buffer of a registered array, or of a writable C-contiguous NumPy array, of the plan's
 * type; NULL and an exception otherwise. */
static void *buffer_of(PyObject *obj, int typenum) {
  if (PyObject_TypeCheck(obj, &RegType)) {
    RegObject *r = (RegObject *)obj;
    if (r->typenum != typenum) {
      PyErr_SetString(PyExc_TypeError, "pcm: the array's dtype is not the plan's");
      return NULL;
    }
    if (!r->buf) PyErr_SetString(PyExc_ValueError, "pcm: this process holds no part of the array");
    return r->buf;
  }
  if (!PyArray_Check(obj)) {
    PyErr_SetString(PyExc_TypeError, "pcm: a pcm.DistArray or a NumPy array expected");
    return NULL;
  }
  PyArrayObject *a = (PyArrayObject *)obj;
  if (PyArray_TYPE(a) != typenum || !PyArray_ISCARRAY(a)) {
    PyErr_SetString(PyExc_TypeError,
                    "pcm: a writable C-contiguous NumPy array of the plan's dtype expected");
    return NULL;
  }
  return PyArray_DATA(a);
}

/* plan.exchange(array, comm): fills array's ghost units from their owners. Collective. */
static PyObject *halo_exchange(HaloObject *o, PyObject *args) {
  PyObject *array, *comm_obj;
  MPI_Comm comm;
  int rc;
  if (!PyArg_ParseTuple(args, "OO", &array, &comm_obj) || !get_comm(comm_obj, &comm)) return NULL;
  void *buf = buffer_of(array, o->typenum);
  if (!buf) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Halo_exchange(o->h, buf, comm);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  Py_RETURN_NONE;
}

/* plan.entries() -> [(peer, ghost_offset, source_offset, units), ...]: the plan's receives
 * (PCM_Halo_entries, PCM_Halo_entry), in this rank's buffer order. Local. */
static PyObject *halo_entries(HaloObject *o, PyObject *unused) {
  long count = 0;
  int rc;
  (void)unused;
  if ((rc = PCM_Halo_entries(o->h, &count)) != PCM_SUCCESS) return raise_pcm(rc);
  PyObject *list = PyList_New((Py_ssize_t)count);
  for (long i = 0; list && i < count; ++i) {
    int peer = -1;
    long ghost = 0, source = 0, units = 0;
    PyObject *t = NULL;
    if ((rc = PCM_Halo_entry(o->h, i, &peer, &ghost, &source, &units)) != PCM_SUCCESS)
      raise_pcm(rc);
    else
      t = Py_BuildValue("(illl)", peer, ghost, source, units);
    if (!t) {
      Py_CLEAR(list);
      break;
    }
    PyList_SET_ITEM(list, (Py_ssize_t)i, t);
  }
  return list;
}

static PyMethodDef halo_methods[] = {
    {"entries", (PyCFunction)halo_entries, METH_NOARGS,
     "entries() -> [(peer, ghost_offset, source_offset, units), ...]: the plan's receives, for "
     "moving ghost data yourself: `units` ghost units at element offset ghost_offset of this "
     "rank's buffer come from peer's buffer at source_offset (PCM_Halo_entries, _entry)"},
    {"exchange", (PyCFunction)halo_exchange, METH_VARARGS,
     "exchange(array, comm): fill the ghost units of array (a pcm.DistArray or NumPy array laid "
     "out by the plan's map) from their owners; collective"},
    {NULL, NULL, 0, NULL}};

PyTypeObject HaloType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pcm.Halo",
    .tp_basicsize = sizeof(HaloObject),
    .tp_dealloc = (destructor)halo_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc =
        "Halo(dist, rank, width, dtype): the ghost units of rank's part of dist, width "
        "units deep, and where they come from (PCM_Halo_create). Build it again after "
        "adapt() returns RESHAPED.",
    .tp_methods = halo_methods,
    .tp_new = halo_new,
};

/* ---- gather and topology ---- */

/* gather(array, root, comm) -> the whole array on root (global order, no ghosts), else None. */
PyObject *py_gather(PyObject *self, PyObject *args) {
  PyObject *reg, *comm_obj, *out = Py_None;
  MPI_Comm comm;
  int root, rank, size, layout, pcm_type, typenum, rc;
  long units, unit_len, block, halo;
  (void)self;
  if (!PyArg_ParseTuple(args, "O!iO", &RegType, &reg, &root, &comm_obj) ||
      !get_comm(comm_obj, &comm))
    return NULL;
  RegObject *r = (RegObject *)reg;
  if (!r->dist) return PyErr_Format(PyExc_ValueError, "pcm.gather: the array has no map");
  PyArray_Descr *descr = PyArray_DescrFromType(r->typenum); /* a new reference */
  if (!descr) return NULL;
  pcm_type = pcm_type_of(descr, &typenum);
  Py_DECREF(descr);
  if (!pcm_type) return NULL;
  if ((rc = PCM_Dist_info(r->dist, &size, &layout, &units, &unit_len, &block, &halo)) !=
      PCM_SUCCESS)
    return raise_pcm(rc);
  if (MPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
    return PyErr_Format(PyExc_RuntimeError, "pcm.gather: MPI_Comm_rank failed");
  void *global = NULL;
  if (rank == root) {
    npy_intp n = (npy_intp)units * (npy_intp)unit_len;
    out = PyArray_ZEROS(1, &n, typenum, 0);
    if (!out) return NULL;
    global = PyArray_DATA((PyArrayObject *)out);
  } else {
    Py_INCREF(out);
  }
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Dist_gather(r->dist, r->buf, (PCM_Datatype)pcm_type, root, comm, global);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) {
    Py_DECREF(out);
    return raise_pcm(rc);
  }
  return out;
}

/* topology(comm) -> this process's colour at each level (site, host). Collective. */
PyObject *py_topology(PyObject *self, PyObject *arg) {
  MPI_Comm comm;
  int colors[PCM_TOPO_LEVELS] = {0}, n = 0, rc;
  (void)self;
  if (!get_comm(arg, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Topology(comm, &n, colors);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  PyObject *t = PyTuple_New(n);
  for (int k = 0; t && k < n; ++k) PyTuple_SET_ITEM(t, k, PyLong_FromLong(colors[k]));
  return t;
}

/* host_comm(comm) -> the processes of comm on this host (a new Comm: free it). Collective. */
PyObject *py_host_comm(PyObject *self, PyObject *arg) {
  MPI_Comm comm, host = MPI_COMM_NULL;
  int rc;
  (void)self;
  if (!get_comm(arg, &comm)) return NULL;
  PyThreadState *ts = PyEval_SaveThread();
  rc = PCM_Host_comm(comm, &host);
  PyEval_RestoreThread(ts);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return comm_new(host);
}
