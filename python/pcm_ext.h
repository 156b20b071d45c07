/* pcm_ext.h — what the files of pcm._pcm share: the Dist (pcm_dist.c) and DistArray (pcmmodule.c)
 * objects, the errors, dtypes and communicators, and the halo, gather and topology calls
 * (pcm_halo.c), and the paper's explicit calls (pcm_paper.c). */
#ifndef PCM_EXT_H
#define PCM_EXT_H

#include <Python.h>
#include <mpi.h>
#include <numpy/arrayobject.h>

#include "pcm.h"

/* A PCM_Dist it owns, or a view of a registration's current map. */
typedef struct {
  PyObject_HEAD PCM_Dist own;
  PCM_Dist *slot; /* the registration's map, replaced by the library */
  PyObject *keep; /* the registration that holds slot */
} DistObject;

/* A registered distributed array. */
typedef struct {
  PyObject_HEAD void *buf; /* malloc'd; replaced and freed by the library */
  PCM_Dist dist;
  int typenum;
  int itemsize;
  PyObject *view; /* the last .array, valid while view_buf and view_len are current */
  void *view_buf;
  npy_intp view_len;
} RegObject;

extern PyTypeObject DistType, RegType, HaloType;

/* Raises pcm.Error(code, message) with PCM_Last_error's message; returns NULL. */
PyObject *raise_pcm(int code);
/* The PCM element type of a dtype and its NumPy type number; 0 and a TypeError if unsupported. */
int pcm_type_of(PyArray_Descr *d, int *typenum);
/* The map a Dist shows; NULL and a ValueError where the process holds none. */
PCM_Dist dist_handle(DistObject *d);
/* A Python int as an int; -1 with an exception set on failure. */
int as_int(PyObject *o);
/* An mpi4py communicator's handle (1), or 0 with an exception set. */
int get_comm(PyObject *obj, MPI_Comm *comm);
/* A collective call of (comm, int) from args "(comm, int)", the GIL released around it: None,
 * or pcm.Error with its code (checkpoint, commit). */
PyObject *call_comm_int(PyObject *args, int (*fn)(MPI_Comm, int));
/* A new mpi4py Comm for comm (not freed with it: the program frees it). */
PyObject *comm_new(MPI_Comm comm);
/* The world after a call that may replace it (before -> after): old itself when unchanged, else
 * a new Comm; remembers it as the current world. */
PyObject *comm_result(PyObject *old, MPI_Comm before, MPI_Comm after);
/* A new Dist that owns h (h is freed on failure). */
PyObject *dist_new_owned(PCM_Dist h);

/* pcm_halo.c: gather(array, root, comm), topology(comm), host_comm(comm). */
PyObject *py_gather(PyObject *self, PyObject *args);
PyObject *py_topology(PyObject *self, PyObject *arg);
PyObject *py_host_comm(PyObject *self, PyObject *arg);

/* pcm_paper.c: the paper's explicit calls (status, store/load, commit, reconfigure, split, merge)
 * and PCM_Reconfig_*. */
PyObject *py_setup_status(PyObject *self, PyObject *cls);
PyObject *py_status(PyObject *self, PyObject *arg);
PyObject *py_store(PyObject *self, PyObject *args);
PyObject *py_load(PyObject *self, PyObject *args);
PyObject *py_load_count(PyObject *self, PyObject *args);
PyObject *py_store_dist(PyObject *self, PyObject *args);
PyObject *py_load_dist(PyObject *self, PyObject *args);
PyObject *py_load_redistribute(PyObject *self, PyObject *args);
PyObject *py_commit(PyObject *self, PyObject *args);
PyObject *py_reconfigure(PyObject *self, PyObject *args);
PyObject *py_split(PyObject *self, PyObject *args, PyObject *kw);
PyObject *py_split_collective(PyObject *self, PyObject *args, PyObject *kw);
PyObject *py_merge(PyObject *self, PyObject *args, PyObject *kw);
PyObject *py_merge_collective(PyObject *self, PyObject *args, PyObject *kw);
PyObject *py_merge_datacnts(PyObject *self, PyObject *args);
PyObject *py_reconfig_last(PyObject *self, PyObject *unused);
PyObject *py_reconfig_reason(PyObject *self, PyObject *unused);
PyObject *py_reconfig_times(PyObject *self, PyObject *unused);

#endif
