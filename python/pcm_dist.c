/* pcm_dist.c — pcm.Dist, the maps of distributed data (PCM_Dist_create, _local, _segment, _owner,
 * _info, _free): one the program made and owns, or a view of a registration's current map. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pcm_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

#include "pcm_ext.h"

PCM_Dist dist_handle(DistObject *d) {
  PCM_Dist h = d->slot ? *d->slot : d->own;
  if (!h) PyErr_SetString(PyExc_ValueError, "pcm.Dist: no map (this process holds none)");
  return h;
}

static void dist_dealloc(DistObject *d) {
  if (d->own) PCM_Dist_free(&d->own);
  Py_XDECREF(d->keep);
  Py_TYPE(d)->tp_free((PyObject *)d);
}

PyObject *dist_new_owned(PCM_Dist h) {
  DistObject *d = PyObject_New(DistObject, &DistType);
  if (!d) {
    PCM_Dist_free(&h);
    return NULL;
  }
  d->own = h;
  d->slot = NULL;
  d->keep = NULL;
  return (PyObject *)d;
}

static PyObject *dist_make(int layout, long units, long unit_len, long block, long halo, int size) {
  PCM_Dist h = NULL;
  int rc = PCM_Dist_create(layout, units, unit_len, block, halo, size, &h);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return dist_new_owned(h);
}

static PyObject *dist_create(PyObject *cls, PyObject *args, PyObject *kw) {
  static char *names[] = {"layout", "units", "size", "unit_len", "block", "halo", NULL};
  int layout, size;
  long units, unit_len = 1, block = 1, halo = 0;
  (void)cls;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "ili|lll", names, &layout, &units, &size, &unit_len,
                                   &block, &halo))
    return NULL;
  return dist_make(layout, units, unit_len, block, halo, size);
}

/* Dist.block / Dist.cyclic (units, size, unit_len=1, halo=0). */
static PyObject *dist_regular(int layout, PyObject *args, PyObject *kw) {
  static char *names[] = {"units", "size", "unit_len", "halo", NULL};
  int size;
  long units, unit_len = 1, halo = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "li|ll", names, &units, &size, &unit_len, &halo))
    return NULL;
  return dist_make(layout, units, unit_len, 1, halo, size);
}
static PyObject *dist_block(PyObject *cls, PyObject *args, PyObject *kw) {
  (void)cls;
  return dist_regular(PCM_BLOCK, args, kw);
}
static PyObject *dist_cyclic(PyObject *cls, PyObject *args, PyObject *kw) {
  (void)cls;
  return dist_regular(PCM_CYCLIC, args, kw);
}

static PyObject *dist_local(DistObject *d, PyObject *arg) {
  PCM_Dist h = dist_handle(d);
  long segments = 0, units = 0, elements = 0;
  int rank = as_int(arg), rc;
  if (!h || (rank == -1 && PyErr_Occurred())) return NULL;
  rc = PCM_Dist_local(h, rank, &segments, &units, &elements);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(lll)", segments, units, elements);
}

static PyObject *dist_segment(DistObject *d, PyObject *args) {
  PCM_Dist h = dist_handle(d);
  int rank, rc;
  long index, first = 0, units = 0, offset = 0;
  if (!h || !PyArg_ParseTuple(args, "il", &rank, &index)) return NULL;
  rc = PCM_Dist_segment(h, rank, index, &first, &units, &offset);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return Py_BuildValue("(lll)", first, units, offset);
}

static PyObject *dist_owner(DistObject *d, PyObject *arg) {
  PCM_Dist h = dist_handle(d);
  long unit = PyLong_AsLong(arg);
  int rank = -1, rc;
  if (!h || (unit == -1 && PyErr_Occurred())) return NULL;
  rc = PCM_Dist_owner(h, unit, &rank);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  return PyLong_FromLong(rank);
}

/* owned_units(rank) -> (global units, buffer offsets of their first elements), two int64 arrays. */
static PyObject *dist_owned_units(DistObject *d, PyObject *arg) {
  PCM_Dist h = dist_handle(d);
  long segments = 0, units = 0, unit_len = 1;
  int rank = as_int(arg), rc;
  if (!h || (rank == -1 && PyErr_Occurred())) return NULL;
  if ((rc = PCM_Dist_local(h, rank, &segments, &units, NULL)) != PCM_SUCCESS ||
      (rc = PCM_Dist_info(h, NULL, NULL, NULL, &unit_len, NULL, NULL)) != PCM_SUCCESS)
    return raise_pcm(rc);
  npy_intp n = units;
  PyObject *glob = PyArray_SimpleNew(1, &n, NPY_INT64);
  PyObject *offs = PyArray_SimpleNew(1, &n, NPY_INT64);
  if (!glob || !offs) goto fail;
  npy_int64 *g = PyArray_DATA((PyArrayObject *)glob), *o = PyArray_DATA((PyArrayObject *)offs);
  for (long s = 0, k = 0; s < segments; ++s) {
    long first = 0, count = 0, offset = 0;
    if ((rc = PCM_Dist_segment(h, rank, s, &first, &count, &offset)) != PCM_SUCCESS) {
      raise_pcm(rc);
      goto fail;
    }
    for (long j = 0; j < count && k < units; ++j, ++k) {
      g[k] = first + j;
      o[k] = offset + j * unit_len;
    }
  }
  return Py_BuildValue("(NN)", glob, offs);
fail:
  Py_XDECREF(glob);
  Py_XDECREF(offs);
  return NULL;
}

/* The map's fields, by index in PCM_Dist_info's order. */
static PyObject *dist_field(DistObject *d, void *which) {
  PCM_Dist h = dist_handle(d);
  int size = 0, layout = 0, rc;
  long f[4] = {0, 0, 0, 0};
  if (!h) return NULL;
  rc = PCM_Dist_info(h, &size, &layout, &f[0], &f[1], &f[2], &f[3]);
  if (rc != PCM_SUCCESS) return raise_pcm(rc);
  const long field = (long)(intptr_t)which;
  if (field == 0) return PyLong_FromLong(size);
  if (field == 1) return PyLong_FromLong(layout);
  return PyLong_FromLong(f[field - 2]);
}

static PyMethodDef dist_methods[] = {
    {"create", (PyCFunction)(void (*)(void))dist_create, METH_VARARGS | METH_KEYWORDS | METH_STATIC,
     "create(layout, units, size, unit_len=1, block=1, halo=0): PCM_Dist_create"},
    {"block", (PyCFunction)(void (*)(void))dist_block, METH_VARARGS | METH_KEYWORDS | METH_STATIC,
     "block(units, size, unit_len=1, halo=0): a block map"},
    {"cyclic", (PyCFunction)(void (*)(void))dist_cyclic, METH_VARARGS | METH_KEYWORDS | METH_STATIC,
     "cyclic(units, size, unit_len=1, halo=0): a cyclic map"},
    {"local", (PyCFunction)dist_local, METH_O, "local(rank) -> (segments, units, elements)"},
    {"segment", (PyCFunction)dist_segment, METH_VARARGS,
     "segment(rank, index) -> (first unit, units, element offset)"},
    {"owner", (PyCFunction)dist_owner, METH_O, "owner(unit) -> rank"},
    {"owned_units", (PyCFunction)dist_owned_units, METH_O,
     "owned_units(rank) -> (global units, element offsets), two int64 arrays"},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef dist_getset[] = {
    {"size", (getter)dist_field, NULL, "process count", (void *)0},
    {"layout", (getter)dist_field, NULL, "BLOCK, CYCLIC, BLOCK_CYCLIC or IRREGULAR", (void *)1},
    {"units", (getter)dist_field, NULL, "units in all", (void *)2},
    {"unit_len", (getter)dist_field, NULL, "elements per unit", (void *)3},
    {"block", (getter)dist_field, NULL, "units per block", (void *)4},
    {"halo", (getter)dist_field, NULL, "ghost units around each segment", (void *)5},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject DistType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pcm.Dist",
    .tp_basicsize = sizeof(DistObject),
    .tp_dealloc = (destructor)dist_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A map of distributed data (PCM_Dist); create with Dist.block, cyclic or create.",
    .tp_methods = dist_methods,
    .tp_getset = dist_getset,
};
