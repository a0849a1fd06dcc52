"""What the searches for kernel code learned about each library file, kept between
exports.  For one library file -- its path, size and modification time, the GPU's SM
version, the driver's version -- two facts: which kernels (name and attributes) its
fatbins hold and in which fatbin, or that it holds none of that name
(kernel_search.find_in_libraries); and where its compressed cubins for this GPU lie and
the names each holds (embedded.embedded_cubins' index).  A search for the same kernels
again, in this process or a later one, reads them here and opens only what it has not
searched: each export searched every loaded library's fatbins (1-2 s a library) and
decompressed every compressed cubin of cuBLASLt (3-12 s) anew.

In memory for the process; on disk under pgcc's cache (PGCC_CACHE, else
$XDG_CACHE_HOME/pgcc or ~/.cache/pgcc), in search/, one JSON file per library file,
written whole through a temporary file.  A cache file that cannot be read or written
is no error: the search runs as it would without it.  Nothing here is trusted further
than a search is: the code found is proven by running it (kernel_code.prove_code).

    facts = library_facts(path, sm)
    facts.fatbins    # {"symbol attrs": fatbin offset, or None}, filled by the search
    facts.frames     # embedded.embedded_cubins' index ({} until a whole search filled it)
    facts.save()
"""
import hashlib
import json
import os

from .toolchain import cache_root

__all__ = ["LibraryFacts", "library_facts", "memo_key", "well_formed"]

VERSION = 1  # of the file's layout: a file of another version is not read
_FACTS = {}  # (path, sm, driver, cache root) -> LibraryFacts, for the process


def memo_key(symbol, attrs):
    """The key of a kernel (its name, its attributes: kernel_search.func_attrs) in fatbins."""
    return symbol + " " + ",".join(str(a) for a in attrs)


class LibraryFacts:
    """The facts of one library file (see the module's docstring), from file if it holds
    them for this very file, GPU and driver."""

    def __init__(self, path, sm, driver=None, root=None):
        try:
            st = os.stat(path)
            ident = f"{os.path.realpath(path)}|{st.st_size}|{st.st_mtime_ns}|{sm}|{driver}|{VERSION}"
        except OSError:
            ident = None
        self.path, self.fatbins, self.frames, self.file = path, {}, {}, None
        if ident is None:
            return
        self.ident = ident
        digest = hashlib.sha256(ident.encode()).hexdigest()[:20]
        self.file = os.path.join(root or cache_root(), "search", f"{os.path.basename(path)}-{digest}.json")
        try:
            with open(self.file) as f:
                data = json.load(f)
            if well_formed(data) and data["ident"] == ident:
                self.fatbins, self.frames = dict(data["fatbins"]), dict(data["frames"])
        except (OSError, ValueError):
            pass  # (no file, or not one of ours: searched anew)
        self.saved = (len(self.fatbins), bool(self.frames))

    def save(self):
        """Writes the facts to the cache where they grew since read or saved; silent where
        it cannot."""
        if self.file is None or (len(self.fatbins), bool(self.frames)) == self.saved:
            return
        tmp = f"{self.file}.tmp{os.getpid()}"
        try:
            os.makedirs(os.path.dirname(self.file), exist_ok=True)
            with open(tmp, "w") as f:
                json.dump({"ident": self.ident, "fatbins": self.fatbins, "frames": self.frames}, f)
            os.replace(tmp, self.file)
            self.saved = (len(self.fatbins), bool(self.frames))
        except OSError:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def well_formed(data):
    """Whether data read from a cache file is what save() writes: an ident, fatbin offsets
    (or None) by kernel key, and an index of frames as embedded.embedded_cubins fills it
    ([section, offset, length, names or None]).  A file damaged or written by something
    else is searched anew, never followed into a bad read."""
    if not isinstance(data, dict) or not isinstance(data.get("ident"), str):
        return False
    fatbins, frames = data.get("fatbins"), data.get("frames")
    if not isinstance(fatbins, dict) or not isinstance(frames, dict):
        return False
    if not all(isinstance(k, str) and (v is None or type(v) is int) for k, v in fatbins.items()):
        return False
    index = frames.get("frames", [])

    def frame(f):
        return (isinstance(f, list) and len(f) == 4 and isinstance(f[0], str) and type(f[1]) is int and f[1] >= 0
                and type(f[2]) is int and f[2] > 0
                and (f[3] is None or isinstance(f[3], list) and all(isinstance(x, str) for x in f[3])))
    return isinstance(index, list) and all(map(frame, index))


def library_facts(path, sm, driver=None, root=None):
    """The process's LibraryFacts of path for this GPU (sm) and driver, read once."""
    key = (path, sm, driver, root)
    if key not in _FACTS:
        _FACTS[key] = LibraryFacts(path, sm, driver, root)
    return _FACTS[key]
