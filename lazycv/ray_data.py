"""Ray Data: a compose pipeline as the callable class of ``Dataset.map_batches``.

::

    import ray, lazycv, lazycv.ray_data
    p = lazycv.compose(lazycv.resize((640, 640)), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                       lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD),
                       lazycv.to_planar())
    ds = lazycv.ray_data.map_images(ray.data.from_numpy(frames).rename_columns({"data": "image"}), p)

Ray Data builds the class once per actor and calls it on every batch. One actor is one
process with one lazycv state, so the class enables lazycv once, in ``__init__``, on the
backend the actor was given: "cuda" when Ray assigned it a GPU (``num_gpus``), "cpu"
otherwise — Ray leaves every GPU visible to an actor that asked for none, so lazycv's own
auto choice would put CPU actors on GPU 0 beside the GPU actors. Outside Ray the auto choice
applies (``lazycv.enable()``).

A batch is a dict of numpy arrays. Images of one size arrive as one (N, H, W[, C]) array and
go through the pipeline as one batch: one upload, and from the second batch of that shape
one launch (the pipeline's batch program). Images of several sizes arrive as an object array;
they are grouped by size and type, each group is one such batch, so every group keeps its own
program from batch to batch (a pipeline keyed by the set of sizes in a batch would capture a
new one for almost every batch). The results are one (N, ...) array when every row's result
has one shape and type, else an object array of per-row arrays.

Ray is imported only inside :func:`map_images`: ``import lazycv`` never needs it
(``pip install "lazycv[ray]"`` installs it).
"""
import os
import sys

import numpy as np

from .errors import StsBadArg, StsBadSize, cv_error

__all__ = ["PipelineActor", "map_images"]

FUNC = "lazycv::ray_data"


def _ray_actor_resources():
    """The resources Ray assigned to the actor running this code, or None outside a Ray
    actor (the driver, a plain process). Never imports ray: an actor has imported it."""
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return None
    ctx = ray.get_runtime_context()
    if ctx.get_actor_id() is None:
        return None
    return ctx.get_assigned_resources()


def _body(pipeline):
    """The steps of ``pipeline`` between its read and write: the actor adds its own host
    output (a Ray batch holds numpy arrays, never device memory)."""
    from .compose import Pipeline
    if not isinstance(pipeline, Pipeline):
        raise cv_error(FUNC, f"pipeline must be a lazycv.compose(...) pipeline or a function returning one, "
                             f"got {type(pipeline).__name__}", StsBadArg)
    return pipeline.body


def _check_names(column, out):
    if not isinstance(column, str) or (out is not None and not isinstance(out, str)):
        raise cv_error(FUNC, f"column and out must be column names (str), got {column!r} and {out!r}", StsBadArg)


def _may_vary(body):
    """True when a step may give inputs of one size results of different sizes (a callable
    step, a crop whose rect is a function): such a pipeline's results are never stacked by
    compose (its write(stack=False) path), the actor stacks them when they agree."""
    from .compose import Convert, Crop, CvtColor, Normalize, Resize, ToPlanar
    return any(type(s) not in (Crop, Resize, CvtColor, Convert, Normalize, ToPlanar)
               or (type(s) is Crop and callable(s.rect)) for s in body)


class PipelineActor:
    """The callable class for ``ds.map_batches`` (``batch_format="numpy"``): runs a compose
    pipeline on the images of ``column`` and puts the results in column ``out`` (default: the
    same column, replaced); every other column passes through.

    ``pipeline`` is a ``lazycv.compose(...)`` pipeline (its write() step, if any, is replaced by
    a numpy output) or a function of no arguments returning one — called in the actor after
    lazycv is enabled, for steps that must be built there. ``backend``: None chooses "cuda" in
    an actor Ray gave a GPU, "cpu" in one it gave none, and lazycv's auto choice outside Ray.
    In a CPU actor, lazycv's worker threads are the CPUs Ray assigned (``num_cpus``) unless
    LAZYCV_CPU_THREADS says otherwise, so actors sharing a node do not oversubscribe it."""

    def __init__(self, pipeline, column="image", out=None, backend=None):
        import lazycv
        _check_names(column, out)
        self.column, self.out = column, column if out is None else out
        assigned = _ray_actor_resources()
        if backend is None and assigned is not None:
            backend = "cuda" if assigned.get("GPU", 0) > 0 else "cpu"
            if backend == "cpu" and "LAZYCV_CPU_THREADS" not in os.environ:
                # read when the CPU backend is built, which enable() below does in a new actor
                os.environ["LAZYCV_CPU_THREADS"] = str(max(1, int(assigned.get("CPU", 1))))
        lazycv.enable(backend=backend)
        self.backend = lazycv.backend()
        if not isinstance(pipeline, lazycv.Pipeline) and callable(pipeline):
            pipeline = pipeline()
        body = _body(pipeline)
        self._vary = _may_vary(body)
        # stacked numpy output (one launch a batch); stack=False where results may differ in size
        self.pipeline = lazycv.compose(*body, lazycv.write(stack=not self._vary))

    def __repr__(self):
        return f"PipelineActor({self.pipeline!r}, column={self.column!r}, out={self.out!r}, backend={self.backend!r})"

    def __call__(self, batch):
        if not hasattr(batch, "keys") or self.column not in batch:
            cols = ", ".join(map(repr, batch.keys())) if hasattr(batch, "keys") else type(batch).__name__
            raise cv_error(FUNC, f"the batch has no column {self.column!r} (it has: {cols}); pass column= "
                                 "(map_batches needs batch_format=\"numpy\")", StsBadArg)
        images = batch[self.column]
        res = dict(batch)
        res[self.out] = self.run(images)
        return res

    def run(self, images):
        """The pipeline's results for one column of images: an (N, H, W[, C]) array (N, H, W
        for gray), or a list / object array of images (H, W[, C]) of any sizes."""
        n = self._check(images)
        if n == 0:
            return np.empty((0,), object)
        if isinstance(images, np.ndarray) and images.dtype != object:    # one array: one batch
            got = self.pipeline(images[..., None] if images.ndim == 3 else images)
            return self._assemble(n, [(range(n), got)])
        rows = [self._image(images, i) for i in range(n)]
        if self._vary:
            return self._assemble(n, [(range(n), self.pipeline(rows))])
        by_kind = {}
        for i, im in enumerate(rows):
            by_kind.setdefault((im.shape, im.dtype.str), []).append(i)
        done = []
        for group in by_kind.values():
            stack = np.stack([rows[i] for i in group])
            done.append((group, self.pipeline(stack[..., None] if stack.ndim == 3 else stack)))
        return self._assemble(n, done)

    def _check(self, images):
        """The number of rows of a column that holds images."""
        col = f"column {self.column!r}"
        if isinstance(images, np.ndarray) and images.dtype != object:
            if images.ndim not in (3, 4) or (images.ndim == 4 and images.shape[3] not in (1, 2, 3, 4)):
                raise cv_error(FUNC, f"{col} must hold images: an (N, H, W[, C]) array with C in 1..4 or one "
                                     f"image (H, W[, C]) per row; got a {images.dtype} array of shape "
                                     f"{images.shape}", StsBadSize)
        elif isinstance(images, np.ndarray):
            if images.ndim != 1:
                raise cv_error(FUNC, f"{col} must hold one image per row; got an object array of shape "
                                     f"{images.shape}", StsBadSize)
        elif not isinstance(images, (list, tuple)):
            raise cv_error(FUNC, f"{col} must be a numpy array or a list of images, got {type(images).__name__}",
                           StsBadArg)
        return len(images)

    def _image(self, images, i):
        im = images[i]
        if not isinstance(im, np.ndarray) or im.ndim not in (2, 3) or im.dtype == object or \
                (im.ndim == 3 and im.shape[2] not in (1, 2, 3, 4)):
            what = f"a {im.dtype} array of shape {im.shape}" if isinstance(im, np.ndarray) else type(im).__name__
            raise cv_error(FUNC, f"row {i} of column {self.column!r} must be a numpy image (H, W[, C]) with C in "
                                 f"1..4, got {what}", StsBadArg)
        return im

    @staticmethod
    def _assemble(n, done):
        """The rows' results in row order, from [(rows, results)]: one array when they share
        shape and type, else an object array (Ray stores it as a variable-shaped tensor column)."""
        if len(done) == 1 and isinstance(done[0][1], np.ndarray):
            return done[0][1]                          # one batch: compose's array as it is
        per_row = [None] * n
        for rows, got in done:
            for j, r in enumerate(rows):
                per_row[r] = got[j]
        first = per_row[0]
        if all(r.shape == first.shape and r.dtype == first.dtype for r in per_row):
            return np.stack(per_row)
        out = np.empty((n,), object)                   # filled row by row: assigning a list of
        for r, v in enumerate(per_row):                # arrays at once would broadcast them
            out[r] = v
        return out


def _cluster_gpus(ray):
    return float(ray.cluster_resources().get("GPU", 0))


def map_images(ds, pipeline, *, column="image", out=None, backend=None, batch_size=64, concurrency=None,
               num_gpus=None, **map_batches_kwargs):
    """``ds.map_batches(PipelineActor, ...)``: the dataset with ``pipeline``'s results in column
    ``out`` (default: ``column``, replaced). Lazy, as every Ray Data transform.

    ``num_gpus`` per actor: None is 1 when the Ray cluster has GPUs (0 with ``backend="cpu"``),
    else 0. ``concurrency``: the number of actors (an int, or (min, max) for an autoscaling pool);
    None is one actor per GPU (cluster GPUs / num_gpus) on GPUs, else 1. Other keywords
    (``num_cpus``, ``memory``, ``runtime_env``, ...) go to ``map_batches``."""
    try:
        import ray
        import ray.data
    except ImportError:
        raise ImportError("lazycv.ray_data.map_images needs Ray Data: pip install \"lazycv[ray]\"") from None
    from .compose import Pipeline, compose
    if isinstance(pipeline, Pipeline):
        _body(pipeline)
        pipeline = compose(*pipeline.body)      # a fresh copy: no caches of this process travel
    elif not callable(pipeline):
        _body(pipeline)                          # (raises the error that says what is expected)
    _check_names(column, out)
    if backend not in (None, "cpu", "cuda"):
        raise ValueError(f"lazycv.ray_data.map_images: backend must be None, 'cpu' or 'cuda', got {backend!r}")
    if "compute" in map_batches_kwargs and concurrency is not None:
        raise ValueError("lazycv.ray_data.map_images: give concurrency= or compute=, not both")
    if not ray.is_initialized():
        ray.init()                               # what the dataset's execution would do anyway
    if num_gpus is None:
        num_gpus = 0 if backend == "cpu" else 1 if backend == "cuda" or _cluster_gpus(ray) > 0 else 0
    if "compute" in map_batches_kwargs:
        compute = map_batches_kwargs.pop("compute")
    else:
        if concurrency is None:
            concurrency = max(1, int(_cluster_gpus(ray) / num_gpus)) if num_gpus else 1
        if isinstance(concurrency, (tuple, list)):
            lo, hi = concurrency
            compute = ray.data.ActorPoolStrategy(min_size=int(lo), max_size=int(hi))
        else:
            compute = ray.data.ActorPoolStrategy(size=int(concurrency))
    return ds.map_batches(PipelineActor, batch_size=batch_size, batch_format="numpy", compute=compute,
                          num_gpus=num_gpus,
                          fn_constructor_kwargs={"pipeline": pipeline, "column": column, "out": out,
                                                 "backend": backend},
                          **map_batches_kwargs)
