"""A generated CUDA kernel's machine code, kept on disk beside its source for later processes.

numba-cuda's own disk cache brings a kernel back through its dispatcher: it types the kernel
again and, for the first kernel of a process, builds its whole typing context — about 0.17 s a
kernel on the H200 host, most of a new process's time to its first result once numba-cuda is
imported (bench/RESULTS.md run 51). lazycv launches a compiled kernel itself (cuda.py's
``_DirectLaunch``), so all it needs from a cache is the kernel's cubin, its entry name and its
argument types. They are written next to the generated module (``<module>.sm90.cubin`` and
``.json``) after numba compiles or loads the kernel, and a new process that finds them loads
the cubin into the current context and never asks numba for the kernel. The generated source
names everything the kernel computes (user functions by fingerprint, codegen settings), so a
module's file name is the kernel's identity; the record also holds the argument types it was
compiled for, the numba-cuda version, the driver's version and the cubin's digest; a record
that does not match (another driver or numba-cuda, a truncated or foreign cubin) is ignored —
numba's path then runs, as without this cache — and replaced by the next save.
"""
import hashlib
import json
import os

FORMAT = 2


def signature_of(types):
    """Argument types as one comparable string (numba's type names)."""
    return ", ".join(str(t) for t in types)


def _paths(fn, cc):
    src = fn.py_func.__code__.co_filename
    base = f"{os.path.splitext(src)[0]}.sm{cc[0]}{cc[1]}"
    return base + ".cubin", base + ".json"


def _numba_cuda_version():
    try:
        import numba_cuda
        return numba_cuda.__version__
    except Exception:             # an install without the distribution's version module
        return None


def _driver_version():
    try:
        from numba.cuda.cudadrv.driver import driver
        return list(driver.get_version())
    except Exception:             # (no driver: the simulator)
        return None


def _digest(code):
    return hashlib.sha1(code).hexdigest()


def _read(cubin_path, meta_path, arg_types):
    """(cubin bytes, entry name) of a record that matches this process and ``arg_types``
    (None for any other: absent, stale or damaged)."""
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("format") != FORMAT or meta.get("numba_cuda") != _numba_cuda_version() \
                or meta.get("driver") != _driver_version() \
                or (arg_types is not None and meta.get("signature") != signature_of(arg_types)):
            return None
        with open(cubin_path, "rb") as f:
            code = f.read()
        if _digest(code) != meta.get("sha1"):
            return None
        return code, meta["entry"]
    except (OSError, ValueError, KeyError, AttributeError, TypeError):
        return None


def save(fn, overload, cc):
    """Keep ``overload``'s (``fn``'s one compiled kernel) cubin for later processes. Best
    effort: a cache that cannot be written only costs the next process numba's slower path."""
    try:
        cubin_path, meta_path = _paths(fn, cc)
        if _read(cubin_path, meta_path, overload.argument_types) is not None:
            return                 # (kept by an earlier process)
        lib = overload._codelibrary
        if lib._linking_files or getattr(lib, "use_cooperative", False):
            return                 # (a kernel that needs more than its cubin: none generated today)
        cubin = lib.get_cubin(cc=cc)
        code = bytes(getattr(cubin, "code", cubin))
        meta = {"format": FORMAT, "numba_cuda": _numba_cuda_version(), "driver": _driver_version(),
                "entry": lib._entry_name, "signature": signature_of(overload.argument_types),
                "sha1": _digest(code)}
        for path, data, mode in ((cubin_path, code, "wb"), (meta_path, json.dumps(meta), "w")):
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, mode) as f:
                f.write(data)
            os.replace(tmp, path)  # the record last: a reader that sees it finds the cubin whole
    except Exception:
        return


def load(fn, arg_types, cc):
    """(cubin bytes, entry name) saved for ``fn`` compiled for ``arg_types`` by this numba-cuda
    version and driver; None when there is none."""
    return _read(*_paths(fn, cc), arg_types)
