"""Running an export from Python: pgcc.load(out_dir) builds the export's C with
libpgrt (toolchain.py), reads the program's fields from the generated NAME_info()
(pgrt_program_info, runtime/pgrt.h) through ctypes, loads the weights from the
export's safetensors file and initialises the program with an arena that Python
owns; the Program it returns is called on torch CUDA tensors on the current stream.

Assumes PyTorch with CUDA (imported when load() is called) and a generated C that
has NAME_info; the structures below must match runtime/pgrt.h field for field.
"""
import ctypes as C
import os
import struct
import time
from math import prod

from .aliases import rebuild, recorded
from .call_args import (FORMATS, as_number, choose, contiguous_strides, layouts, packed_layout, pad_to, same_layout,
                        scalar_callbacks, torch_dtype)
from .cuda import cu, device_bytes
from .errors import ArgumentError, ExportError, RunError
from .fastcall import caller_for
from .nccl_id import nccl_id
from .program_info import (PGRT_FIELD_HOST_FN, PGRT_FIELD_INOUT, PGRT_FIELD_INPUT, PGRT_FIELD_OUTPUT, PGRT_FIELD_SCALAR,
                           PGRT_FIELD_WEIGHT, ROLE_NAMES, Dim, Field, PgrtComm, PgrtDim, PgrtField, PgrtInitStats,
                           PgrtProgramInfo, PgrtRunStats, export_name, read_info, read_report, stats)
from .structure import NUMBERS as LEAVES, builder, flat_as_called, flatten
from .toolchain import build_program

__all__ = ["Dim", "export_name", "Field", "flat_as_called", "load", "read_report", "PGRT_FIELD_HOST_FN", "PGRT_FIELD_INOUT", "PGRT_FIELD_INPUT",
           "PGRT_FIELD_OUTPUT", "PGRT_FIELD_SCALAR", "PGRT_FIELD_WEIGHT", "PgrtComm", "PgrtDim", "PgrtField",
           "PgrtInitStats", "PgrtProgramInfo", "PgrtRunStats", "Program", "read_info", "ROLE_NAMES", "SCALAR_FORMATS"]

SCALAR_FORMATS = FORMATS  # (a scalar field's struct format, by .graph dtype: call_args')


class Program:
    """An export, built, loaded and initialised: prog(*inputs, out=None) runs one call.

    inputs: one per input (and inout) buffer and scalar, in the order of NAME_args: CUDA
    tensors of the recorded dtype and shape on the program's device, numbers (or 0-d CPU
    tensors) for scalars and for 0-dimensional inputs (copied to the device); a tensor
    whose strides are not those captured (contiguous where none were recorded) is copied
    into that layout first, one of no elements given a valid address (the arena's).
    Arguments it does not take are an ArgumentError, a call libpgrt fails a RunError
    (errors.py).  structured (pgcc.load): the call takes and returns the structure the
    export recorded (dicts, ModelOutputs, caches: structure.py), not flat tensors.  out:
    the outputs to write (a tensor or a sequence), else they are allocated.  Returns the
    output tensor, or a tuple of them.  The arena (intermediates and workspaces) is
    .arena, a uint8 tensor of .arena_bytes bytes (fill_arena() poisons it); the weights'
    device addresses are weight_ptr(name).  load_s, init_s: NAME_load_w's, NAME_init's seconds.

    A program that draws random numbers (rng_increment not 0) draws them from
    .generator, by default PyTorch's CUDA generator of its device, as the callable did:
    each call takes that generator's seed and offset and advances the offset by
    rng_increment, as a graph replay of PyTorch's does, so that after torch.manual_seed(s)
    it draws what the compiled callable would.  With .generator None it draws from its
    own state in libpgrt (pgrt_rng_set, pgrt_rng_get: rng_state())."""

    rng_increment, generator = 0, None  # (a program that draws no random numbers; __init__ reads its own)
    _packed = None  # (packed_layout: NAME_args packed in one step; __init__ works it out)
    _caller, _n_fast = None, -1  # (fastcall.py: the call in C, for calls of _n_fast flat arguments)

    def __init__(self, so_path, name, export_dir, device=None, callbacks=None, structured=False):
        import torch
        self.torch, self.name, self.export_dir, self.so_path = torch, name, export_dir, so_path
        self.lib = C.CDLL(so_path)
        info, self.fields, self.weight_fields, self.dims = read_info(self.lib, name)
        self.info = info  # (over the generated C's own table: pgrt_weights_save and _restore take it)
        self.comms = [(info.comms[i].name.decode(), info.comms[i].ranks) for i in range(info.n_comms)]
        self.args_size, self.weights_size, self.arena_bytes = info.args_size, info.weights_size, info.arena_bytes
        self.rng_increment = info.rng_increment
        host = [f.name for f in self.fields + self.weight_fields if f.role == "host function"]
        if host:
            raise ExportError(f"{name}: fields {host} are host functions, which a Program cannot give from Python")
        self.callbacks = scalar_callbacks(name, self.fields, os.path.join(export_dir, name + ".graph"), callbacks or {})
        for f in self.fields:  # (looked up once: every call checks its tensors against them)
            f.torch_dtype = torch_dtype(f.dtype) if f.dtype else None
        self.inputs = [f for f in self.fields if f.role in ("input", "inout", "scalar")]
        self.outputs = [f for f in self.fields if f.role == "output"]
        report = read_report(export_dir, name)
        ins, outs = layouts(report, len(self.inputs), len(self.outputs))
        for f, st in list(zip(self.inputs, ins)) + list(zip(self.outputs, outs)):
            f.stride = None if f.dims or st is None or st == contiguous_strides(f.shape or ()) else st
        # outputs that are an input, an earlier output or a weight, or views of them: returned so
        self.aliases = None if self.dims else recorded(report.get("structure"), len(self.outputs))
        st = (report.get("structure") or None) if structured else None
        self.use_structure(st)
        self._plans = {}  # (bucket calls: _plan's answer per set of input shapes)
        self._makers = None  # (new_outputs without buckets: how each output is made)
        self._weight_views = {}  # (_aliased: a weight's memory as a tensor, made once per weight)
        self._numbers = {}  # (_on_device: {input: (number, its 0-d CUDA tensor)})
        self._numbers_at = [i for i, f in enumerate(self.inputs) if f.role == "input" and f.shape == ()
                            and f.torch_dtype is not None]
        self.size_fields = [f for f in self.fields if f.role == "size"]
        self.device = torch.device(device if device is not None else "cuda")
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        err = self.lib.pgrt_error
        err.restype = C.c_char_p
        self.err = lambda: (err() or b"?").decode()
        self.ctx, self.block = C.c_void_p(), C.c_uint64(0)
        self._weights = C.create_string_buffer(max(self.weights_size, 1))
        t0 = time.perf_counter()
        self.load_s = 0.0
        with torch.cuda.device(self.device):
            self.arena = torch.full((max(self.arena_bytes, 1),), 0xFF, dtype=torch.uint8, device=self.device)
            load_w = getattr(self.lib, f"{name}_load_w", None)
            if load_w is not None and self.weight_fields:
                path = os.path.join(export_dir, name + ".safetensors")
                if load_w(path.encode(), self._weights, C.byref(self.block)) != 0:
                    raise ExportError(f"{name}_load_w({path}): {self.err()}")
            t1 = time.perf_counter()
            self.load_s = t1 - t0
            init = getattr(self.lib, f"{name}_init")
            init.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p, C.c_uint64]
            comm = ()
            if self.comms:  # (NCCL: one id for every rank, made by rank 0)
                init.argtypes += [C.c_void_p, C.c_int]
                comm = nccl_id(self) + (self.rank,)
            if init(C.byref(self.ctx), self._weights, None, self.arena.data_ptr(), *comm) != 0:
                raise ExportError(f"{name}_init: {self.err()}")
            torch.cuda.synchronize()
            self.init_s = time.perf_counter() - t1
        self.run_fn = getattr(self.lib, f"{name}_run")
        self.run_fn.argtypes = [C.c_void_p, C.c_void_p, C.c_void_p]  # (ctypes converts the stream's int)
        self._packed = packed_layout(self)
        self._caller = caller_for(self)
        self._destroy = getattr(self.lib, f"{name}_destroy")
        self.generator = None
        if self.rng_increment:
            self.lib.pgrt_rng_set.argtypes = [C.c_void_p, C.c_uint64, C.c_uint64]
            self.lib.pgrt_rng_get.argtypes = [C.c_void_p, C.POINTER(C.c_uint64), C.POINTER(C.c_uint64)]
            torch.cuda.init()  # (the default generators exist once CUDA is)
            self.generator = torch.cuda.default_generators[self.device.index]

    def use_structure(self, st):
        """Calls take and return structure st (an export's recorded "structure"; None or a
        flat one: flat tensors), its outputs' builder made once (structure.builder)."""
        self.structure = None if st is None or flat_as_called(st) else st
        self._outputs_of = builder(self.structure["outputs"]) if self.structure else None
        ins = (self.structure or {}).get("inputs")  # (flat arguments: checked leaf by leaf, not flattened)
        self._flat_in = (len(ins[1]) if ins and ins[0] == "tuple" and all(s == ["leaf"] for s in ins[1])
                         else None)
        self._n_fast = (self._flat_in or -1) if self.structure else len(self.inputs)

    def set_rng_state(self, seed, offset):
        """Sets the seed and Philox offset the next call draws from, in libpgrt (for a
        program with .generator None; a call with a generator sets them from it)."""
        if self.lib.pgrt_rng_set(self.ctx, seed, offset) != 0:
            raise ArgumentError(f"{self.name}: {self.err()}")

    def save_weights(self, path):
        """Writes the program's weights as they are now -- a training step's state after
        its calls -- as one safetensors file (libpgrt's pgrt_weights_save: the names of
        the export's weights file), which restore_weights and C read back."""
        self._weights_file("pgrt_weights_save", path)

    def restore_weights(self, path):
        """Reads the program's weights from a file save_weights (or pgrt_weights_save)
        wrote; a file that does not fit changes nothing (ArgumentError)."""
        self._weights_file("pgrt_weights_restore", path)

    def _weights_file(self, fn_name, path):
        fn = getattr(self.lib, fn_name)
        fn.argtypes = [C.c_char_p, C.c_void_p, C.c_void_p]
        with self.torch.cuda.device(self.device):
            if fn(os.fsencode(path), C.byref(self.info), self._weights) != 0:
                raise ArgumentError(f"{self.name}: {self.err()}")

    def rng_state(self):
        """(seed, offset) the next call draws from, as libpgrt holds them."""
        seed, offset = C.c_uint64(), C.c_uint64()
        if self.lib.pgrt_rng_get(self.ctx, C.byref(seed), C.byref(offset)) != 0:
            raise ArgumentError(f"{self.name}: {self.err()}")
        return seed.value, offset.value

    def __repr__(self):
        return (f"<pgcc.Program {self.name}: inputs {[f.name for f in self.inputs]}, outputs "
                f"{[f.name for f in self.outputs]}, arena {self.arena_bytes} bytes>")

    # ---- arguments -----------------------------------------------------------------

    def _check(self, f, t, what, shape=None):
        torch = self.torch
        shape = f.shape if shape is None else shape
        if f.role == "scalar":
            if as_number(torch, t) is None:
                got = f"a {t.device} tensor of shape {list(t.shape)}" if isinstance(t, torch.Tensor) else \
                    type(t).__name__
                raise ArgumentError(f"{self.name}: {what} ({f.name}) is a scalar: give a number (or a 0-dimensional "
                                    f"CPU tensor), not {got}")
            return
        if not isinstance(t, torch.Tensor):
            raise ArgumentError(f"{self.name}: {what} ({f.name}) must be a CUDA tensor, got {type(t).__name__}")
        want = []
        dt = f.torch_dtype
        if dt is not None and t.dtype != dt:
            want.append(f"dtype {dt} (got {t.dtype})")
        if shape is not None and tuple(t.shape) != shape:
            want.append(f"shape {list(shape)} (got {list(t.shape)})")
        if t.device != self.device:
            want.append(f"device {self.device} (got {t.device})")
        if not (t.is_contiguous() if f.stride is None else same_layout(t.shape, t.stride(), f.stride)):
            want.append(("a contiguous tensor" if f.stride is None else f"strides {list(f.stride)}")
                        + " (got strides " + str(list(t.stride())) + ")")
        if not want and shape is f.shape and t.numel() * t.element_size() < f.size:
            want.append(f"{f.size} bytes (got {t.numel() * t.element_size()})")
        if want:
            raise ArgumentError(f"{self.name}: {what} ({f.name}) must have " + ", ".join(want))

    def new_outputs(self, ks=None):
        """Fresh tensors for the outputs, as the export recorded them (at buckets ks, one
        index per bucket dimension, where the program has them)."""
        torch = self.torch
        if not self.dims:  # (the same every call: how each is made, worked out once)
            if self._makers is None:
                self._makers = [self._maker(f) for f in self.outputs]
                for i in [i for i, e in enumerate(self.aliases or ()) if e is not None]:
                    make, a, kw = self._makers[i]  # (a copy the call replaces: one tensor for every call)
                    self._makers[i] = (lambda t: t, (make(*a, **kw),), {})
            return [make(*a, **kw) for make, a, kw in self._makers]
        outs = []
        for f in self.outputs:
            dt = torch_dtype(f.dtype) if f.dtype else None
            if dt is None or f.shape is None:
                outs.append(torch.empty(f.size, dtype=torch.uint8, device=self.device))
            elif f.stride is not None:  # (as the export captured it: a channels_last output, a view)
                outs.append(torch.empty_strided(f.shape, f.stride, dtype=dt, device=self.device))
            else:
                outs.append(torch.empty(f.shape_at(self.dims, ks) if f.dims else f.shape, dtype=dt,
                                        device=self.device))
        return outs

    def _maker(self, f):
        """(function, arguments, keywords) making a fresh tensor for output f (no buckets)."""
        torch = self.torch
        dt = torch_dtype(f.dtype) if f.dtype else None
        if dt is None or f.shape is None:
            return torch.empty, (f.size,), {"dtype": torch.uint8, "device": self.device}
        if f.stride is not None:
            return torch.empty_strided, (tuple(f.shape), tuple(f.stride)), {"dtype": dt, "device": self.device}
        return torch.empty, (tuple(f.shape),), {"dtype": dt, "device": self.device}

    def buckets(self, inputs):
        """For a program with bucket dimensions: (the size of each, as the inputs' shapes
        give it; the index of the bucket that runs it, None where none does)."""
        sizes = [None] * len(self.dims)
        for f, x in zip(self.inputs, inputs):
            for i, d in f.dims:
                if not isinstance(x, self.torch.Tensor) or x.dim() <= i:
                    raise ArgumentError(f"{self.name}: {f.name} must be a tensor whose dimension {i} is "
                                        f"{self.dims[d].name}")
                if sizes[d] is None:
                    sizes[d] = x.shape[i]
                elif sizes[d] != x.shape[i]:
                    raise ArgumentError(f"{self.name}: {f.name}'s dimension {i} ({self.dims[d].name}) is "
                                        f"{x.shape[i]}, another input's is {sizes[d]}")
        return sizes, [choose(d.values, n, d.pad) for d, n in zip(self.dims, sizes)]

    def args(self, inputs, outputs, sizes=(), ks=None, made=False):
        """NAME_args for these inputs and outputs (checked, but for outputs new_outputs
        made: made; at buckets ks, where the program has them, and sizes its bucket
        dimensions' sizes), as a ctypes buffer, or as bytes where every field is an
        address and every tensor is as the export recorded it (packed_layout)."""
        fast = self._packed
        if (fast is not None and len(inputs) == len(self.inputs) and len(outputs) == len(self.outputs)
                and all(self._fine(f, x) for f, x in zip(self.inputs, inputs))
                and (made or all(self._fine(f, o) for f, o in zip(self.outputs, outputs)))):
            ts = list(inputs) + list(outputs)
            return fast[0](*[ts[i].data_ptr() or fast[2] for i in fast[1]])
        if len(inputs) != len(self.inputs):
            raise ArgumentError(f"{self.name}: takes {len(self.inputs)} inputs "
                                f"({', '.join(f.name for f in self.inputs)}), got {len(inputs)}")
        if len(outputs) != len(self.outputs):
            raise ArgumentError(f"{self.name}: has {len(self.outputs)} outputs "
                                f"({', '.join(f.name for f in self.outputs)}), got {len(outputs)} in out=")
        buf = C.create_string_buffer(max(self.args_size, 1))
        keep = []  # (copies in the recorded layout: alive until the call is queued)
        for i, (f, x) in enumerate(zip(self.inputs, inputs)):
            shape = f.shape_at(self.dims, ks) if f.dims else None
            if not self._fine(f, x, shape):
                x = self._relaid(f, x, shape) if f.role != "scalar" else x
                keep.append(x)
                if not self._fine(f, x, shape):
                    self._check(f, x, f"argument {i}", shape)
            if f.role == "scalar":
                self._scalar(buf, f, as_number(self.torch, x), i)
            else:  # (no elements: no address; the arena's stands in, its kernels read nothing there)
                struct.pack_into("<Q", buf, f.offset, x.data_ptr() or self.arena.data_ptr())
        for i, (f, o) in enumerate(zip(self.outputs, outputs)):
            shape = f.shape_at(self.dims, ks) if f.dims else None
            if not made and not self._fine(f, o, shape):
                self._check(f, o, f"out[{i}]", shape)
            struct.pack_into("<Q", buf, f.offset, o.data_ptr() or self.arena.data_ptr())
        for f, n in zip(self.size_fields, sizes):
            struct.pack_into("<q", buf, f.offset, n)
        for f, _, at in self.callbacks:  # (a pgrt_scalar_fn: the function, its data)
            struct.pack_into("<QQ", buf, f.offset, at, 0)
        buf.keep = keep
        return buf

    def _scalar(self, buf, f, v, i):
        """Scalar field f's value v (a number) written into NAME_args; ArgumentError where it does not fit."""
        fmt = SCALAR_FORMATS.get(f.dtype or "")
        try:
            if fmt and struct.calcsize(fmt) == f.size:
                struct.pack_into(fmt, buf, f.offset, v)
            else:
                buf[f.offset:f.offset + f.size] = int(v).to_bytes(f.size, "little", signed=int(v) < 0)
        except (struct.error, OverflowError, TypeError, ValueError) as e:
            raise ArgumentError(f"{self.name}: argument {i} ({f.name}) is {v!r}: a {f.dtype} scalar cannot hold it "
                                f"({e})") from None

    def _fine(self, f, t, shape=None):
        """The common case of _check, quickly: a tensor of the field's recorded dtype and
        shape, contiguous, on the program's device.  False sends it to _check, which
        says what is wrong (or finds nothing: a field without a dtype or shape)."""
        return (f.role != "scalar" and f.shape is not None and f.torch_dtype is not None
                and isinstance(t, self.torch.Tensor) and t.dtype is f.torch_dtype
                and t.shape == (f.shape if shape is None else shape)
                and t.is_cuda and t.get_device() == self.device.index
                and (t.is_contiguous() if f.stride is None else same_layout(t.shape, t.stride(), f.stride)))

    def _relaid(self, f, t, shape=None):
        """t, or where only its layout is not the field's (its strides), a copy of it in the
        field's layout (on the current stream, before the call that reads it); for a
        0-dimensional input given as a number or a 0-d CPU tensor, a CUDA tensor of it."""
        torch = self.torch
        shape = f.shape if shape is None else shape
        if shape == () and f.torch_dtype is not None and (v := as_number(torch, t)) is not None:
            return self._on_device(f, v)  # (a 0-dimensional input given as a number or a CPU tensor)
        if not isinstance(t, torch.Tensor) or shape is None or tuple(t.shape) != tuple(shape) \
                or t.layout != torch.strided or not t.is_cuda:
            return t
        stride = f.stride if f.stride is not None else contiguous_strides(shape)
        if any(s == 0 and d > 1 for d, s in zip(shape, stride)):
            return t  # (a layout whose elements share memory, an expanded tensor's: no copy makes it; _check says)
        y = torch.empty_strided(tuple(shape), stride, dtype=t.dtype, device=t.device)
        return y.copy_(t)

    def _on_device(self, f, v):
        """A 0-dimensional CUDA tensor of number v for input f (the export's own 0-d CPU tensor,
        a temperature or a learning rate): made once per value where the program only reads
        it -- a new value gets a new tensor, so that a call still running keeps its own."""
        got = self._numbers.get(f.name)
        if got is not None and got[0] == v and type(got[0]) is type(v):
            return got[1]
        t = self.torch.full((), v, dtype=f.torch_dtype, device=self.device)
        if f.role == "input":
            self._numbers[f.name] = (v, t)
        return t

    def run(self, args, stream=None):
        """One call with NAME_args already made (args()), on stream (default: the current one)."""
        offset = self._rng_begin()
        r = self.run_fn(self.ctx, args, self._current_stream() if stream is None else stream)
        if r != 0:
            raise RunError(f"{self.name}_run: {self.err()}")
        self._rng_end(offset)

    def _rng_begin(self):
        """Before a call: the state PyTorch's generator has given to libpgrt; its offset (None: no generator)."""
        if not self.rng_increment or self.generator is None:
            return None
        offset = self.generator.get_offset()
        self.set_rng_state(self.generator.initial_seed(), offset)
        return offset

    def _rng_end(self, offset):
        """After a call that ran: the generator advanced as a replay of its graphs advances it."""
        if offset is not None:
            self.generator.set_offset(offset + self.rng_increment)

    def last_run(self):
        """What libpgrt did in the last call (pgrt_last_run's fields: program_info.stats)."""
        return stats(self.lib, self.ctx, "pgrt_last_run", PgrtRunStats)

    def init_stats(self):
        """Where NAME_init's time went (pgrt_last_init's fields: program_info.stats)."""
        return stats(self.lib, self.ctx, "pgrt_last_init", PgrtInitStats)

    def _current_stream(self):
        """The device's current stream handle: torch's raw getter where it has one (as
        Inductor's generated code uses it; torch.cuda.current_stream makes a Stream object
        each time, 5 µs of a 21 µs call, bench/host_time.py)."""
        raw = getattr(self.torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return raw(self.device.index)
        return self.torch.cuda.current_stream(self.device).cuda_stream

    def __call__(self, *inputs, out=None):
        if len(inputs) == self._n_fast and self._caller is not None:
            got = self._fast(inputs, out)
            if got is not None:
                return got
        if self.structure:  # (pgcc.load: the structure the export recorded)
            if self._flat_in == len(inputs) and all(isinstance(x, LEAVES) or isinstance(x, self.torch.Tensor)
                                                    for x in inputs):
                got = self._call(inputs, out)  # (the arguments as recorded: tensors and numbers, flat)
                return self._outputs_of(got if isinstance(got, tuple) else (got,))
            try:
                leaves, spec = flatten(inputs, lambda x: isinstance(x, self.torch.Tensor), numbers="leaf",
                                       where="the arguments", caches=False)
            except ExportError as e:  # (an argument of a kind no export takes)
                raise ArgumentError(f"{self.name}: {e}") from None
            if spec != self.structure.get("inputs", spec):
                raise ArgumentError(f"{self.name}: takes arguments structured as {self.structure['inputs']}, "
                                f"got {spec}")
            got = self._call(leaves, out)
            return self._outputs_of(got if isinstance(got, tuple) else (got,))
        return self._call(inputs, out)

    def _fast(self, inputs, out):
        """The call through fastcall's Caller: its result, or None where an argument is not
        what its field takes (nothing ran; the general path says why or makes it fit)."""
        outs = self.new_outputs() if out is None else list(out) if isinstance(out, (tuple, list)) else [out]
        given = inputs
        if self._numbers_at:  # (0-dimensional inputs given as numbers or 0-d CPU tensors)
            inputs = list(inputs)
            for i in self._numbers_at:
                if (v := as_number(self.torch, inputs[i])) is not None:
                    inputs[i] = self._on_device(self.inputs[i], v)
        offset = self._rng_begin()
        r = self._caller(inputs, outs)
        if r < 0:
            return None
        if r:
            raise RunError(f"{self.name}_run: {self.err()}")
        self._rng_end(offset)
        if self.aliases:
            outs = self._aliased(given, outs, made=out is None)
        if self.structure:
            return self._outputs_of(tuple(outs))
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _call(self, inputs, out=None):
        if self.dims:
            return self._call_buckets(list(inputs), out)
        if out is None:
            outs = self.new_outputs()
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
        self.run(self.args(list(inputs), outs, made=out is None))
        if self.aliases:
            outs = self._aliased(inputs, outs, made=out is None)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _aliased(self, inputs, outs, made=True):
        """The outputs, those the export recorded as an input, an earlier output or a view of
        a weight (aliases.py) as that object or its view -- the caller's input itself, where
        the callable returned its input -- instead of the program's copy of it.  A weight's
        view is over the program's memory: alive while the Program is.  made: outs are
        new_outputs', whose aliased ones are one tensor for every call: where no alias can
        be made (a number given, no such weight), that copy is cloned."""
        outs = list(outs)
        for i, e in enumerate(self.aliases):
            if e is None:
                continue
            if e["of"] == "input" and isinstance(inputs[e["index"]], self.torch.Tensor):
                outs[i] = rebuild(e, inputs[e["index"]])
            elif e["of"] == "output":
                outs[i] = rebuild(e, outs[e["index"]])
            elif e["of"] == "weight" and (w := self._weight_view(e["name"], outs[i].dtype)) is not None:
                outs[i] = rebuild(e, w, flat=True)
            elif made:
                outs[i] = outs[i].clone()  # (the program's copy stands, in memory of its own)
        return outs

    def _weight_view(self, name, dtype):
        """A weight's memory as a flat tensor of dtype (made once); None where there is no such weight."""
        key = (name, dtype)
        if key not in self._weight_views:
            try:
                raw = self.weight(name)
                self._weight_views[key] = raw[:raw.numel() - raw.numel() % max(dtype.itemsize, 1)].view(dtype)
            except KeyError:
                self._weight_views[key] = None
        return self._weight_views[key]

    def _call_buckets(self, inputs, out):
        """A call of a program with bucket dimensions: inputs smaller than their bucket are
        padded with zeros (copies), and the outputs returned are the first rows of the
        bucket's (views; out=, if given, must have the bucket's shapes)."""
        key = tuple(x.shape if isinstance(x, self.torch.Tensor) else None for x in inputs)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plan(inputs)
            if len(self._plans) < 256:  # (a decode loop meets a handful of shapes; a bound all the same)
                self._plans[key] = plan
        sizes, ks, pads, narrows, shapes = plan
        for j, i, size in pads:
            inputs[j] = pad_to(self.torch, inputs[j], i, size)
        if out is None:
            outs = [self.torch.empty(shape, dtype=dt, device=self.device) for shape, dt in shapes]
        else:
            outs = list(out) if isinstance(out, (tuple, list)) else [out]
        self.run(self.args(inputs, outs, sizes, ks))
        for j, i, n in narrows:
            outs[j] = outs[j].narrow(i, 0, n)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _plan(self, inputs):
        """What a bucket call with inputs of these shapes does, worked out once per set of
        shapes: (sizes, ks, the inputs to pad (index, dimension, size), the outputs to
        narrow (index, dimension, size), the outputs' (shape, dtype) at the bucket)."""
        sizes, ks = self.buckets(inputs)
        for d, n, k in zip(self.dims, sizes, ks):
            if k is None:
                raise ArgumentError(f"{self.name}: {d.name} = {n} fits no bucket ({', '.join(map(str, d.values))}"
                                    f"{'' if d.pad else ': exact sizes only'})")
        ks = tuple(ks)
        pads = [(j, i, self.dims[d].values[ks[d]]) for j, (f, x) in enumerate(zip(self.inputs, inputs))
                for i, d in f.dims if x.shape[i] != self.dims[d].values[ks[d]]]
        narrows = [(j, i, sizes[d]) for j, f in enumerate(self.outputs) for i, d in f.dims
                   if sizes[d] != self.dims[d].values[ks[d]]]
        shapes = [(tuple(o.shape), o.dtype) for o in self.new_outputs(ks)]
        return sizes, ks, pads, narrows, shapes

    # ---- state ---------------------------------------------------------------------

    def fill_arena(self, byte=0xFF):
        """Fills the arena with byte (0xff: NaN as floats), on the current stream."""
        self.arena.fill_(byte)

    def weight_field(self, name):
        for f in self.weight_fields:
            if f.name == name or f.tensor == name:
                return f
        raise KeyError(f"{self.name}: no weight {name!r} (have {[f.name for f in self.weight_fields]})")

    def weight_ptr(self, name):
        """The device address of a weight (by field name, w_..., or tensor name)."""
        f = self.weight_field(name)
        return struct.unpack_from("<Q", self._weights, f.offset)[0]

    def weight(self, name, like=None):
        """The program's own copy of a weight (by field or tensor name) as a tensor over its
        memory (no copy): uint8 bytes, or shaped, strided and typed as like."""
        f = self.weight_field(name)
        raw = device_bytes(self.torch, self.weight_ptr(name), f.size)
        if like is None:
            return raw
        n = like.numel() * like.element_size()
        if like.is_contiguous():
            return raw[:n].view(like.dtype).view(like.shape)
        # (its layout as like's: the weights file holds a channels_last weight's bytes as they lie in memory)
        return raw[:f.size - f.size % like.element_size()].view(like.dtype).as_strided(like.shape, like.stride())

    def weight_tensor(self, name):
        """The program's own copy of a weight or state tensor (by field or tensor name) as a
        tensor of its recorded dtype and shape over the program's memory (no copy), to read
        or write between calls: prog.weight_tensor("optimizer.group0.lr").fill_(lr)."""
        f = self.weight_field(name)
        dt = torch_dtype(f.dtype) if f.dtype else None
        n = dt.itemsize * prod(f.shape) if dt is not None and f.shape is not None else f.size + 1
        if n > f.size:
            raise KeyError(f"{self.name}: weight {name!r} records no dtype and shape that fit ({f}): weight(name, like=)")
        return self.weight(name)[:n].view(dt).view(tuple(f.shape))

    def close(self):
        self._caller = None  # (it holds the context's address)
        if self.ctx:
            self._destroy(C.byref(self.ctx))
            self.ctx = C.c_void_p()
        if self.block.value:
            cu().MemFree(self.block.value)
            self.block = C.c_uint64(0)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def load(out_dir, *, name=None, device=None, build_dir=None, extra_sources=(), extra_flags=(), callbacks=None,
         structured=False, pgcc_flags=()):
    """Builds the export in out_dir (pgcc, then its C with libpgrt, into out_dir/build or a
    cache directory; rebuilt only when an input changed), loads its weights and returns
    a Program to call.  extra_sources/extra_flags: more C compiled into the same library;
    pgcc_flags: options for pgcc (["--priorities"]).
    callbacks: {callback scalar name: function}, for a program that takes values its
    host computes from the values it read back (`scalar cb0 type f64 callback`): each
    function gets the values read so far and returns the scalar.  structured: the Program
    takes and returns the inputs' and outputs' structure the export recorded (pgcc.load's
    default), not flat tensors (the export's own verification)."""
    out_dir = os.fspath(out_dir)
    name = export_name(out_dir, name)
    so = build_program(out_dir, name, build_dir=build_dir, extra_sources=extra_sources, extra_flags=extra_flags,
                       pgcc_flags=pgcc_flags)
    return Program(so, name, out_dir, device, callbacks, structured)
