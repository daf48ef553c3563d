"""``lazycv info`` (what to paste into a bug report), ``lazycv ops`` (what each cv2.cuda name
does under lazycv) and ``lazycv cache info|clear`` (the kernel cache on disk)."""
import json
import os
import platform
import shutil
import sys


def _version(module):
    try:
        mod = __import__(module)
        return getattr(mod, "__version__", "installed")
    except Exception:
        return "not installed"


def gpu_problem():
    """Why no CUDA GPU is usable, in a few words (the driver's own first line)."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "NUMBA_ENABLE_CUDASIM=1 is set (the simulator replaces the GPU)"
    try:
        from numba import cuda
        cuda.current_context()
        return "the GPU answered"
    except Exception as e:
        lines = [ln.strip(" :") for ln in str(e).splitlines() if ln.strip(" :")]
        return f"none was found ({' '.join(lines[:2]) or type(e).__name__})"


def opencv_build():
    """(version, whether this OpenCV build has the CUDA modules, its CUDA device count)."""
    import cv2
    try:
        count = cv2.cuda.getCudaEnabledDeviceCount()
    except Exception:
        count = 0
    cuda_line = next((ln.strip() for ln in cv2.getBuildInformation().splitlines()
                      if ln.strip().startswith("NVIDIA CUDA:")), "NVIDIA CUDA: NO")
    return cv2.__version__, "YES" in cuda_line.upper(), count


def backend_choice():
    """(backend name, why it was chosen) as lazycv.enable() with no argument would choose."""
    from ..backends import cuda_usable
    env = os.environ.get("LAZYCV_BACKEND")
    if env:
        return env, "LAZYCV_BACKEND is set"
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "cuda-sim", "NUMBA_ENABLE_CUDASIM=1 is set"
    if cuda_usable():
        return "cuda", "a usable CUDA GPU was found"
    return "cpu", f"no usable CUDA GPU: {gpu_problem()}"


def device_text(name):
    if name == "cuda":
        try:
            from numba import cuda
            dev = cuda.get_current_device()
            free, total = cuda.current_context().get_memory_info()
            cc = ".".join(map(str, dev.compute_capability))
            return (f"{dev.name.decode() if isinstance(dev.name, bytes) else dev.name}, compute capability {cc}, "
                    f"{total / 2 ** 30:.1f} GiB ({free / 2 ** 30:.1f} free)")
        except Exception as e:
            return f"unavailable ({type(e).__name__}: {e})"
    cpu = platform.processor() or platform.machine()
    what = "Numba's CUDA simulator on the CPU" if name == "cuda-sim" else "the CPU backend (one virtual CUDA device)"
    return f"{what}: {cpu}, {os.cpu_count()} cores"


def cache_files(folder):
    """lazycv's files in the kernel cache folder (generated sources, Numba's cache, cubins)."""
    out = []
    for root, _, files in os.walk(folder):
        out += [os.path.join(root, f) for f in files if f.startswith("lazycv_")]
    return out


def cache_summary():
    from ..codegen import cache_dir
    folder = cache_dir()
    files = cache_files(folder)
    size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
    kernels = sum(1 for f in files if f.endswith(".py") and os.path.dirname(f) == folder)
    return folder, kernels, len(files), size


def info_facts():
    import numpy
    import lazycv
    cv_version, cv_cuda, cv_devices = opencv_build()
    name, why = backend_choice()
    folder, kernels, nfiles, size = cache_summary()
    return {
        "lazycv": lazycv.__version__,
        "python": f"{platform.python_version()} ({sys.executable})",
        "platform": platform.platform(),
        "numpy": numpy.__version__,
        "numba": _version("numba"),
        "numba-cuda": _version("numba_cuda"),
        "opencv": f"{cv_version} ({'a CUDA build, ' + str(cv_devices) + ' device(s)' if cv_cuda else 'no CUDA in this build'})",
        "backend": f"{name} ({why})",
        "device": device_text(name),
        "kernel cache": f"{folder}: {kernels} kernel(s), {nfiles} file(s), {size / 2 ** 20:.1f} MiB",
        "recording": _recording_path(),
        "cpu bands": _bands_path(),
        "nvtx ranges": "on (nvtx is installed)" if _version("nvtx") != "not installed" else "off (pip install nvtx)",
        "settings": " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                             if k.startswith("LAZYCV_") or k == "NUMBA_ENABLE_CUDASIM") or "none set",
    }


def _recording_path():
    from .. import recipes
    if not recipes.ENABLED:
        return "every call through its op's function (LAZYCV_RECIPES=0)"
    if recipes._hotpath is not None:
        return "recipes, C hot path (lazycv._hotpath)"
    if os.environ.get("LAZYCV_HOTPATH", "1").strip() == "0":
        return "recipes, Python (LAZYCV_HOTPATH=0)"
    return "recipes, Python (lazycv._hotpath was not built: no C compiler at install)"


def _bands_path():
    from ..backends import cpu_native
    if cpu_native.BANDS is not None:
        return "native threads (lazycv.backends._bands)"
    return "Python threads (lazycv.backends._bands was not built: no C compiler at install)"


def _info(args):
    facts = info_facts()
    if args.json:
        print(json.dumps(facts, indent=2))
        return
    width = max(len(k) for k in facts)
    for k, v in facts.items():
        print(f"{k + ':':{width + 1}} {v}")


def _ops(args):
    import lazycv
    table = lazycv.supported()
    if args.status:
        table = {k: v for k, v in table.items() if v == args.status}
    if args.json:
        print(json.dumps(table, indent=2))
        return
    counts = {}
    for status in table.values():
        counts[status] = counts.get(status, 0) + 1
    for status in ("fused", "fallback", "unsupported"):
        names = [n for n, s in table.items() if s == status]
        if not names:
            continue
        print(f"{status} ({len(names)}): {STATUS_MEANING[status]}")
        for n in names:
            print(f"  {n}")
    print("total: " + ", ".join(f"{counts[s]} {s}" for s in ("fused", "fallback", "unsupported") if s in counts))


STATUS_MEANING = {"fused": "recorded lazily and fused into generated kernels",
                  "fallback": "runs through CPU OpenCV (correct, copies to the host and back)",
                  "unsupported": "raises cv2.error saying why"}


def _cache(args):
    folder, kernels, nfiles, size = cache_summary()
    if args.action == "info":
        print(f"kernel cache: {folder}")
        print(f"{kernels} kernel(s), {nfiles} file(s), {size / 2 ** 20:.1f} MiB "
              "(LAZYCV_CACHE_DIR moves it; 'lazycv cache clear' empties it)")
        return
    removed = 0
    for f in cache_files(folder):
        try:
            os.remove(f)
            removed += 1
        except FileNotFoundError:
            pass
    pycache = os.path.join(folder, "__pycache__")
    if os.path.isdir(pycache) and not os.listdir(pycache):
        shutil.rmtree(pycache, ignore_errors=True)
    print(f"removed {removed} file(s), {size / 2 ** 20:.1f} MiB, from {folder}")


def add_commands(sub):
    p = sub.add_parser("info", help="versions, OpenCV build, backend and why, device, kernel cache")
    p.add_argument("--json", action="store_true", help="as JSON")
    p.set_defaults(run=_info)
    p = sub.add_parser("ops", help="each cv2.cuda name: fused, fallback (CPU OpenCV) or unsupported")
    p.add_argument("--status", choices=("fused", "fallback", "unsupported"), help="only these")
    p.add_argument("--json", action="store_true", help="as JSON {name: status}")
    p.set_defaults(run=_ops)
    p = sub.add_parser("cache", help="the kernel cache on disk: info, or clear it")
    p.add_argument("action", choices=("info", "clear"))
    p.set_defaults(run=_cache)
