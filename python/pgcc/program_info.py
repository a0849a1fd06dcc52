"""libpgrt's C structures as ctypes sees them (runtime/pgrt.h: pgrt_field, pgrt_dim,
pgrt_comm, pgrt_program_info, pgrt_run_stats, pgrt_init_stats), which must match the
header field for field (tests/python/test_loader_structs.py checks), a program's
fields read through the generated NAME_info() (read_info), libpgrt's statistics of a
call and an init (stats), and what an export's
folder names (export_name: its program; read_report: its NAME.export.json).  The run
side's; needs no torch.
"""
import ctypes as C
import glob
import json
import os

from .errors import ExportError

__all__ = ["Dim", "Field", "PGRT_FIELD_HOST_FN", "PGRT_FIELD_INOUT", "PGRT_FIELD_INPUT", "PGRT_FIELD_OUTPUT",
           "PGRT_FIELD_SCALAR", "PGRT_FIELD_WEIGHT", "PgrtComm", "PgrtDim", "PgrtField", "PgrtInitStats",
           "PgrtProgramInfo", "PgrtRunStats", "export_name", "read_info", "read_report", "ROLE_NAMES", "stats"]

# pgrt_field_role
PGRT_FIELD_INPUT, PGRT_FIELD_OUTPUT, PGRT_FIELD_INOUT, PGRT_FIELD_SCALAR, PGRT_FIELD_WEIGHT, PGRT_FIELD_HOST_FN = \
    range(6)
ROLE_NAMES = ("input", "output", "inout", "scalar", "weight", "host function", "scalar callback", "size")


class PgrtField(C.Structure):
    _fields_ = [("name", C.c_char_p), ("role", C.c_int), ("dtype", C.c_char_p), ("ndim", C.c_int),
                ("shape", C.POINTER(C.c_int64)), ("offset", C.c_size_t), ("size", C.c_size_t),
                ("tensor", C.c_char_p), ("shape_dims", C.POINTER(C.c_int))]


class PgrtDim(C.Structure):
    _fields_ = [("name", C.c_char_p), ("n_values", C.c_int), ("values", C.POINTER(C.c_int64)), ("pad", C.c_int)]


class PgrtComm(C.Structure):
    _fields_ = [("name", C.c_char_p), ("ranks", C.c_int)]


class PgrtProgramInfo(C.Structure):
    _fields_ = [("name", C.c_char_p), ("args_size", C.c_size_t), ("n_args", C.c_int),
                ("args", C.POINTER(PgrtField)), ("weights_size", C.c_size_t), ("n_weights", C.c_int),
                ("weights", C.POINTER(PgrtField)), ("arena_bytes", C.c_uint64), ("n_dims", C.c_int),
                ("dims", C.POINTER(PgrtDim)), ("n_comms", C.c_int), ("comms", C.POINTER(PgrtComm)),
                ("rng_increment", C.c_uint64)]


class PgrtRunStats(C.Structure):  # pgrt_run_stats (pgrt.h)
    _fields_ = [("graphs_launched", C.c_int), ("eager_nodes", C.c_int), ("nodes_patched", C.c_int),
                ("device_updated", C.c_int), ("read_updated", C.c_int), ("host_ns", C.c_longlong),
                ("launch_ns", C.c_longlong), ("prepare_ns", C.c_longlong)]


class PgrtInitStats(C.Structure):  # pgrt_init_stats (pgrt.h)
    _fields_ = [("total_ns", C.c_longlong), ("modules_ns", C.c_longlong), ("library_ns", C.c_longlong),
                ("own_ns", C.c_longlong), ("graphs_ns", C.c_longlong), ("nvrtc_ns", C.c_longlong),
                ("nvrtc_compiles", C.c_int), ("cache_hits", C.c_int), ("library_fatbins", C.c_int),
                ("prebuilt", C.c_int), ("library_threads", C.c_int), ("library_bytes", C.c_longlong)]


class Dim:
    """A shape bucket dimension (shape_buckets.py): name, values (the buckets' sizes), pad."""

    def __init__(self, d):
        self.name = d.name.decode()
        self.values = tuple(d.values[i] for i in range(d.n_values))
        self.pad = bool(d.pad)

    def __repr__(self):
        return f"Dim({self.name!r}, {list(self.values)}, {'pad' if self.pad else 'exact'})"


class Field:
    """One field of NAME_args or NAME_weights: name, role (a ROLE_NAMES word), dtype ("f32";
    None where unknown), shape (a tuple; None where unknown; a bucket dimension's entry
    holds its largest size), dims ((position, dim index) of the entries that are a bucket
    dimension), offset, size, tensor."""

    def __init__(self, f):
        self.name = f.name.decode()
        self.role = ROLE_NAMES[f.role] if 0 <= f.role < len(ROLE_NAMES) else f"role {f.role}"
        self.dtype = (f.dtype or b"").decode() or None
        self.shape = tuple(f.shape[i] for i in range(f.ndim)) if f.ndim >= 0 else None
        self.dims = tuple((i, f.shape_dims[i]) for i in range(max(f.ndim, 0))
                          if f.shape_dims and f.shape_dims[i] >= 0)
        self.offset, self.size = f.offset, f.size
        self.tensor = f.tensor.decode() if f.tensor else None
        self.stride = None  # (strides a call's tensor must have, where not contiguous: Program sets them)

    def shape_at(self, dims, ks):
        """The shape at buckets ks (one index per dim; remembered per ks)."""
        at = self.__dict__.setdefault("_at", {})
        key = tuple(ks)
        if key not in at:
            shape = list(self.shape)
            for i, d in self.dims:
                shape[i] = dims[d].values[ks[d]]
            at[key] = tuple(shape)
        return at[key]

    def __repr__(self):
        return f"Field({self.name!r}, {self.role}, {self.dtype}, {self.shape}, offset {self.offset}, {self.size} bytes)"


def read_info(lib, name):
    """The program's fields: (info, [Field] of the args, [Field] of the weights, [Dim])."""
    try:
        fn = getattr(lib, f"{name}_info")
    except AttributeError:
        raise ExportError(f"the generated C has no {name}_info(): it was made by a pgcc older than this package "
                          "(rebuild pgcc: make build/pgcc)") from None
    fn.restype, fn.argtypes = C.POINTER(PgrtProgramInfo), []
    info = fn().contents
    args = [Field(info.args[i]) for i in range(info.n_args)]
    weights = [Field(info.weights[i]) for i in range(info.n_weights)]
    dims = [Dim(info.dims[i]) for i in range(info.n_dims)]
    return info, args, weights, dims


def stats(lib, ctx, fn, struct):
    """A dict of a libpgrt statistics struct's fields, as fn (pgrt_last_run: the last call's --
    graphs launched, nodes patched from the host, the call's host time and how much of it
    went to cuGraphLaunch and to what came before; pgrt_last_init: where NAME_init's time
    went -- all of it, the modules and kernels, of which the libraries' fatbins, libpgrt's
    own kernels, the graphs, CUDA sources made cubins, in ns; how many NVRTC compiled, the
    cache of compiled cubins gave, the libraries' fatbins gave, and how many of libpgrt's
    own sources were loaded as the cubins its build compiled) fills it for context ctx."""
    st = struct()
    getattr(lib, fn)(ctx, C.byref(st))
    return {k: getattr(st, k) for k, _ in struct._fields_}


def export_name(out_dir, name=None):
    """The program name of the export in out_dir: name, or that of its only .graph."""
    if name:
        return name
    graphs = sorted(glob.glob(os.path.join(out_dir, "*.graph")))
    if len(graphs) != 1:
        raise ExportError(f"{out_dir}: {'no' if not graphs else len(graphs)} .graph files"
                          + (f" ({', '.join(os.path.basename(g) for g in graphs)}): give name=" if graphs else ""))
    return os.path.basename(graphs[0])[:-len(".graph")]


def read_report(export_dir, name):
    """NAME.export.json of the export in export_dir as a dict ({} where there is none)."""
    try:
        with open(os.path.join(export_dir, name + ".export.json")) as f:
            return json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as e:
        raise ExportError(f"{export_dir}/{name}.export.json cannot be read: {e}") from e
