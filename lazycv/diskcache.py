"""The on-disk kernel cache's upkeep: entries checked before use, and a bounded size.

An entry is one generated module: ``lazycv_<target>_<digest>.py``, Numba's index and data
files for it in ``__pycache__/`` and, for CUDA, lazycv's cubin record (``.smXY.cubin`` and
``.json``, backends/cubins.py). The folder is shared by every process of a user, so:

* a module is used only when its file holds exactly the source it was generated from (a
  truncated or corrupt file is written again; its new timestamp makes Numba's index stale,
  so Numba compiles again instead of loading machine code for other source);
* the cache is kept under ``LAZYCV_CACHE_MAX_MB`` (default 256) and ``LAZYCV_CACHE_MAX_FILES``
  (default 4000) by evicting whole entries, least recently used first (a module's access time,
  which :func:`touch` sets on each use), checked on a thread of its own at a process's first
  write and every ``EVICT_EVERY`` writes after it;
* an entry used or written within the last ``MIN_AGE_S`` seconds is never evicted (another
  process may be importing it), and a file that disappears meanwhile (another process evicted
  it) is skipped.
"""
import os
import re
import threading
import time

DEFAULT_MAX_MB = 256
DEFAULT_MAX_FILES = 4000
MIN_AGE_S = 60.0
EVICT_EVERY = 64
_MODULE = re.compile(r"(lazycv_[a-z_]+_[0-9a-f]{24})[.]")
_writes = [0]
_evicting = threading.Lock()        # one eviction at a time in a process


def source_matches(path, source):
    """True when ``path`` holds exactly ``source``."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read() == source
    except (OSError, UnicodeDecodeError):
        return False


def touch(path):
    """Mark an entry used now (its access time; the modification time, which Numba's index
    checks, is kept)."""
    try:
        st = os.stat(path)
        os.utime(path, ns=(time.time_ns(), st.st_mtime_ns))
    except OSError:
        pass


def written(folder):
    """A process wrote an entry: keep the folder bounded (on the first write, then every
    EVICT_EVERY), on a thread of its own — deleting a thousand large entries of an old cache
    took 12 s on a busy machine, which no compile should wait for."""
    n = _writes[0]
    _writes[0] = n + 1
    if n % EVICT_EVERY == 0 and _evicting.acquire(blocking=False):
        threading.Thread(target=_evict_in_background, args=(folder,), name="lazycv-cache-evict",
                         daemon=True).start()


def _evict_in_background(folder):
    try:
        evict(folder)
    except Exception:             # (best effort: a cache that cannot shrink only takes disk)
        pass
    finally:
        _evicting.release()


def limits():
    mb = os.environ.get("LAZYCV_CACHE_MAX_MB")
    files = os.environ.get("LAZYCV_CACHE_MAX_FILES")
    return (int(float(mb) * (1 << 20)) if mb else DEFAULT_MAX_MB << 20,
            int(files) if files else DEFAULT_MAX_FILES)


def entries(folder):
    """{module name: [(path, size, last use)]} for the files of each entry in ``folder``, and
    the paths of stray temporary files (a writer that died)."""
    groups, strays = {}, []
    for sub in (folder, os.path.join(folder, "__pycache__")):
        try:
            names = os.listdir(sub)
        except OSError:
            continue
        for name in names:
            path = os.path.join(sub, name)
            m = _MODULE.match(name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if name.endswith(".tmp"):
                strays.append((path, max(st.st_atime, st.st_mtime)))
            elif m:
                groups.setdefault(m.group(1), []).append((path, st.st_size, max(st.st_atime, st.st_mtime)))
    return groups, strays


def evict(folder, max_bytes=None, max_files=None, min_age=MIN_AGE_S):
    """Delete least recently used entries until ``folder`` is within the limits (default:
    :func:`limits`); entries younger than ``min_age`` seconds stay. Returns how many entries
    went."""
    if max_bytes is None or max_files is None:
        lb, lf = limits()
        max_bytes = lb if max_bytes is None else max_bytes
        max_files = lf if max_files is None else max_files
    now = time.time()
    groups, strays = entries(folder)
    for path, used in strays:
        if now - used > min_age:
            _unlink(path)
    total = sum(size for files in groups.values() for _, size, _ in files)
    count = sum(len(files) for files in groups.values())
    if total <= max_bytes and count <= max_files:
        return 0
    by_age = sorted(groups.items(), key=lambda kv: max(used for _, _, used in kv[1]))
    gone = 0
    for _, files in by_age:
        if total <= max_bytes and count <= max_files:
            break
        if now - max(used for _, _, used in files) <= min_age:
            break                          # (sorted: every later entry is younger)
        if _used_since(files, now - min_age):
            continue                       # (a process took it up since the scan)
        # the module first: a process that finds no module writes the entry again
        for path, size, _ in sorted(files, key=lambda f: not f[0].endswith(".py")):
            _unlink(path)
            total -= size
            count -= 1
        gone += 1
    return gone


def _used_since(files, when):
    """True when an entry's module was used (touch) or written after ``when`` — checked again
    just before deleting it, as another process may have taken it up since the scan."""
    for path, _, _ in files:
        if path.endswith(".py"):
            try:
                st = os.stat(path)
            except OSError:
                return False
            return max(st.st_atime, st.st_mtime) > when
    return False


def _unlink(path):
    try:
        os.unlink(path)
    except OSError:                        # (FileNotFoundError: another process took it)
        pass
