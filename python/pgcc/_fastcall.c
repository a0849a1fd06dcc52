/* pgcc._fastcall: a loaded program's call in its common case, in C (fastcall.py builds it).
 *
 * Caller(run, ctx, args_size, arena, device, tensor_type, stream_of, slots) holds what a
 * call of NAME_run needs that does not change between calls: the function's and the
 * context's addresses, the size of NAME_args, the arena's address (the one a tensor without
 * elements gets), the device's index, torch.Tensor, torch's raw current-stream getter, and
 * per field of NAME_args, in the order inputs then outputs, (offset, torch dtype, shape,
 * strides or None for contiguous): every field a tensor's address (fastcall.py makes a
 * Caller only then).  NAME_args is built per call, on the stack where it fits, so that
 * calls from two threads never share it.
 *
 * caller(inputs, outputs) checks each tensor as Program._fine does -- a torch.Tensor of the
 * field's dtype and shape, on the CUDA device, contiguous or of the field's strides (exactly:
 * where only a dimension of size 1 differs, the general path takes it) -- writes its address into
 * NAME_args and calls NAME_run on the current stream, the GIL released while it runs.  It
 * returns 0 when the call ran, the pgrt_status where NAME_run failed, and -1, having run
 * nothing, where an argument is not what the field takes: Python then takes the general
 * path, which says what is wrong or makes it fit.  An exception an attribute raises is
 * cleared and counts as such an argument.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

typedef int (*run_fn)(void *ctx, const void *args, void *stream);

typedef struct {
  Py_ssize_t offset;
  PyObject *dtype; /* a torch.dtype: compared by identity */
  PyObject *shape; /* a tuple of ints */
  PyObject *stride; /* a tuple of ints, or None: contiguous */
} Slot;

typedef struct {
  PyObject_HEAD
  run_fn run;
  void *ctx;
  Py_ssize_t args_size;
  uint64_t arena;
  long device;
  PyObject *device_obj;  /* the index as an int, the stream getter's argument */
  PyTypeObject *tensor;  /* torch.Tensor */
  PyObject *stream_of;   /* torch._C._cuda_getCurrentRawStream */
  Py_ssize_t n_slots;
  Slot *slots;
} Caller;

static PyObject *s_dtype, *s_shape, *s_is_cuda, *s_get_device, *s_is_contiguous, *s_stride, *s_data_ptr;

static void caller_dealloc(Caller *c) {
  for (Py_ssize_t i = 0; i < c->n_slots; i++) {
    Py_XDECREF(c->slots[i].dtype);
    Py_XDECREF(c->slots[i].shape);
    Py_XDECREF(c->slots[i].stride);
  }
  PyMem_Free(c->slots);
  Py_XDECREF(c->device_obj);
  Py_XDECREF((PyObject *)c->tensor);
  Py_XDECREF(c->stream_of);
  Py_TYPE(c)->tp_free((PyObject *)c);
}

static int caller_init(Caller *c, PyObject *a, PyObject *kw) {
  unsigned long long run, ctx, arena;
  Py_ssize_t args_size;
  long device;
  PyObject *tensor, *stream_of, *slots;
  static char *names[] = {"run", "ctx", "args_size", "arena", "device", "tensor_type", "stream_of", "slots", NULL};
  if (!PyArg_ParseTupleAndKeywords(a, kw, "KKnKlOOO!", names, &run, &ctx, &args_size, &arena, &device, &tensor,
                                   &stream_of, &PyList_Type, &slots))
    return -1;
  if (c->slots) {
    PyErr_SetString(PyExc_TypeError, "Caller: initialised once");
    return -1;
  }
  if (!PyType_Check(tensor) || !PyCallable_Check(stream_of) || !run || args_size < 1) {
    PyErr_SetString(PyExc_ValueError, "Caller: tensor_type must be a type, stream_of callable, run and args_size set");
    return -1;
  }
  Py_ssize_t n = PyList_GET_SIZE(slots);
  c->slots = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Slot));
  if (!c->slots) {
    PyErr_NoMemory();
    return -1;
  }
  c->n_slots = n;
  for (Py_ssize_t i = 0; i < n; i++) {
    Slot *s = &c->slots[i];
    Py_ssize_t offset;
    PyObject *dtype, *shape, *stride; /* (borrowed until taken below: a slot holds references only once whole) */
    if (!PyArg_ParseTuple(PyList_GET_ITEM(slots, i), "nOO!O", &offset, &dtype, &PyTuple_Type, &shape, &stride))
      return -1;
    if (stride != Py_None && !PyTuple_Check(stride)) {
      PyErr_Format(PyExc_TypeError, "Caller: slot %zd's stride must be a tuple or None", i);
      return -1;
    }
    s->offset = offset;
    Py_INCREF(dtype), Py_INCREF(shape), Py_INCREF(stride);
    s->dtype = dtype, s->shape = shape, s->stride = stride;
    if (s->offset < 0 || s->offset + 8 > args_size) {
      PyErr_Format(PyExc_ValueError, "Caller: slot %zd's offset %zd is outside NAME_args (%zd bytes)", i, s->offset,
                   args_size);
      return -1;
    }
  }
  c->run = (run_fn)(uintptr_t)run;
  c->ctx = (void *)(uintptr_t)ctx;
  c->args_size = args_size;
  c->arena = arena;
  c->device = device;
  c->device_obj = PyLong_FromLong(device);
  if (!c->device_obj)
    return -1;
  Py_INCREF(tensor);
  c->tensor = (PyTypeObject *)tensor;
  Py_INCREF(stream_of);
  c->stream_of = stream_of;
  return 0;
}

/* Whether v -- a new reference, taken here; NULL where getting it raised -- is want
   (identity: 1 or 0), or -1 on an error. */
static int is(PyObject *v, PyObject *want) {
  if (!v)
    return -1;
  int same = v == want;
  Py_DECREF(v);
  return same;
}

/* The same, by ==: whether v equals want (1 or 0), or -1 on an error. */
static int equals(PyObject *v, PyObject *want) {
  if (!v)
    return -1;
  int same = PyObject_RichCompareBool(v, want, Py_EQ);
  Py_DECREF(v);
  return same;
}

/* 1: t is what slot s takes, its address written into args; 0: it is not; -1: error */
static int take(const Caller *c, const Slot *s, PyObject *t, unsigned char *args) {
  if (!PyObject_TypeCheck(t, c->tensor))
    return 0;
  int ok;
  if ((ok = is(PyObject_GetAttr(t, s_dtype), s->dtype)) != 1 ||
      (ok = equals(PyObject_GetAttr(t, s_shape), s->shape)) != 1 ||
      (ok = is(PyObject_GetAttr(t, s_is_cuda), Py_True)) != 1 ||
      (ok = equals(PyObject_CallMethodNoArgs(t, s_get_device), c->device_obj)) != 1)
    return ok;
  ok = s->stride == Py_None ? is(PyObject_CallMethodNoArgs(t, s_is_contiguous), Py_True)
                            : equals(PyObject_CallMethodNoArgs(t, s_stride), s->stride);
  if (ok != 1)
    return ok;
  PyObject *p = PyObject_CallMethodNoArgs(t, s_data_ptr);
  if (!p)
    return -1;
  unsigned long long at = PyLong_AsUnsignedLongLong(p);
  Py_DECREF(p);
  if (at == (unsigned long long)-1 && PyErr_Occurred())
    return -1;
  uint64_t addr = at ? (uint64_t)at : c->arena; /* (no elements: the arena's address, read by nothing) */
  memcpy(args + s->offset, &addr, sizeof addr);
  return 1;
}

static PyObject *caller_call(Caller *c, PyObject *a, PyObject *kw) {
  PyObject *inputs, *outputs;
  if (kw && PyDict_GET_SIZE(kw)) {
    PyErr_SetString(PyExc_TypeError, "Caller takes no keyword arguments");
    return NULL;
  }
  if (!PyArg_UnpackTuple(a, "Caller", 2, 2, &inputs, &outputs))
    return NULL;
  PyObject *in = PySequence_Fast(inputs, "Caller: inputs must be a sequence");
  if (!in)
    return NULL;
  PyObject *out = PySequence_Fast(outputs, "Caller: outputs must be a sequence");
  if (!out) {
    Py_DECREF(in);
    return NULL;
  }
  Py_ssize_t n_in = PySequence_Fast_GET_SIZE(in), n_out = PySequence_Fast_GET_SIZE(out);
  long status = -1;
  /* NAME_args of this call, its own: another thread's call of this Caller may be inside
     NAME_run with its own while the GIL is released (libpgrt answers one of them PGRT_ERR_BUSY) */
  unsigned char small[512], *args = small;
  if (n_in + n_out == c->n_slots && c->args_size > (Py_ssize_t)sizeof small && !(args = PyMem_Malloc(c->args_size))) {
    Py_DECREF(in);
    Py_DECREF(out);
    return PyErr_NoMemory();
  }
  if (n_in + n_out == c->n_slots) {
    PyObject **ins = PySequence_Fast_ITEMS(in), **outs = PySequence_Fast_ITEMS(out);
    int ok = 1;
    memset(args, 0, (size_t)c->args_size);
    for (Py_ssize_t i = 0; ok == 1 && i < c->n_slots; i++)
      ok = take(c, &c->slots[i], i < n_in ? ins[i] : outs[i - n_in], args);
    if (ok == 1) {
      PyObject *st = PyObject_CallOneArg(c->stream_of, c->device_obj);
      void *stream = NULL;
      if (st) {
        stream = PyLong_AsVoidPtr(st);
        Py_DECREF(st);
      }
      if (PyErr_Occurred()) {
        ok = -1;
      } else {
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = c->run(c->ctx, args, stream);
        Py_END_ALLOW_THREADS
        status = r;
      }
    }
    if (ok == -1)
      PyErr_Clear(); /* (the general path meets the same argument, and says what is wrong) */
  }
  if (args != small)
    PyMem_Free(args);
  Py_DECREF(in);
  Py_DECREF(out);
  return PyLong_FromLong(status);
}

static PyTypeObject CallerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pgcc._fastcall.Caller",
    .tp_basicsize = sizeof(Caller),
    .tp_dealloc = (destructor)caller_dealloc,
    .tp_call = (ternaryfunc)caller_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "caller(inputs, outputs): NAME_run on the current stream; 0, a pgrt_status, or -1 (not the fields')",
    .tp_init = (initproc)caller_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_fastcall", .m_doc = "pgcc.load's call in C", .m_size = -1};

PyMODINIT_FUNC PyInit__fastcall(void) {
  if (!(s_dtype = PyUnicode_InternFromString("dtype")) || !(s_shape = PyUnicode_InternFromString("shape")) ||
      !(s_is_cuda = PyUnicode_InternFromString("is_cuda")) ||
      !(s_get_device = PyUnicode_InternFromString("get_device")) ||
      !(s_is_contiguous = PyUnicode_InternFromString("is_contiguous")) ||
      !(s_stride = PyUnicode_InternFromString("stride")) ||
      !(s_data_ptr = PyUnicode_InternFromString("data_ptr")))
    return NULL;
  if (PyType_Ready(&CallerType) < 0)
    return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m)
    return NULL;
  Py_INCREF(&CallerType);
  if (PyModule_AddObject(m, "Caller", (PyObject *)&CallerType) < 0) {
    Py_DECREF(&CallerType);
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
