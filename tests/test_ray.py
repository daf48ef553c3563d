"""Ray Data (lazycv.ray_data): the map_batches class runs a compose pipeline on batches of
one size and of mixed sizes, equal to CPU OpenCV and to the pipeline called directly; through
a local Ray (CPU backend) its actor chooses the backend and threads Ray gave it, and a bad
batch's cv2.error reaches the driver. The CPU pass only: nothing here is marked ``sim``. The
tests through Ray need the extra (pip install ".[test,ray]"); the rest run without it."""
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

import lazycv
from lazycv.ray_data import PipelineActor

from .conftest import BACKEND, assert_close, assert_fused_equals_eager, rand_image

# Ray Data's own deprecation notices (its DataContext fields), not lazycv's
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.*")

ROOT = Path(__file__).resolve().parents[1]
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
OUT = (32, 24)                                  # (width, height)
# SPEC §3: an 8U resize may differ from CPU OpenCV by 1, which /255 and /std scale
TOL = 1 / 255 / min(STD) + 1e-5


def preprocess():
    return lazycv.compose(lazycv.resize(OUT), lazycv.cvt_color(cv2.COLOR_BGR2RGB),
                          lazycv.convert(np.float32, 1 / 255), lazycv.normalize(MEAN, STD), lazycv.to_planar())


def cpu_reference(img):
    f = cv2.cvtColor(cv2.resize(img, OUT, interpolation=cv2.INTER_LINEAR), cv2.COLOR_BGR2RGB)
    f = (f.astype(np.float32) * np.float32(1 / 255) - np.float32(MEAN)) / np.float32(STD)
    return f.transpose(2, 0, 1)


def mixed_images(rng, n_big=12, n_small=4):
    """Images of two sizes in a shuffled order, as a Ray object column holds them."""
    imgs = [rand_image(rng, 48, 64, 3, np.uint8) for _ in range(n_big)] + \
           [rand_image(rng, 40, 56, 3, np.uint8) for _ in range(n_small)]
    return [imgs[i] for i in rng.permutation(len(imgs))]


def column(images):
    col = np.empty(len(images), object)
    for i, im in enumerate(images):
        col[i] = im
    return col


# ---------------------------------------------------------------- the class, in this process

def test_a_batch_of_one_size_is_one_pipeline_call_equal_to_cpu_opencv(rng):
    frames = np.stack([rand_image(rng, 48, 64, 3, np.uint8) for _ in range(5)])
    actor = PipelineActor(preprocess(), backend=BACKEND)
    assert lazycv.backend() == BACKEND and actor.backend == BACKEND
    labels = np.arange(5)
    lazycv.reset_stats()
    got = actor({"image": frames, "label": labels})
    assert set(got) == {"image", "label"} and got["label"] is labels      # other columns pass through
    assert got["image"].shape == (5, 3, OUT[1], OUT[0]) and got["image"].dtype == np.float32
    assert lazycv.stats()["flushes"] == 1                                 # the batch computed at once
    for i in range(5):
        assert_close(got["image"][i], cpu_reference(frames[i]), TOL, what=f"row {i}")
    assert_fused_equals_eager(got["image"], preprocess()(frames))         # = the pipeline called directly
    lazycv.reset_stats()
    again = actor({"image": frames[::-1].copy()})["image"]                # the next batch: its program,
    st = lazycv.stats()                                                   # one launch, nothing recorded
    assert st["kernels_launched"] == 1 and st["ops_recorded"] == 0, st
    assert_fused_equals_eager(again, got["image"][::-1])


def test_mixed_sizes_are_grouped_by_size_and_come_back_in_row_order(rng):
    imgs = mixed_images(rng)
    actor = PipelineActor(preprocess(), out="tensor", backend=BACKEND)
    col = column(imgs)
    got = actor({"image": col})
    assert got["image"] is col and got["tensor"].shape == (16, 3, OUT[1], OUT[0])
    for i, im in enumerate(imgs):
        assert_close(got["tensor"][i], cpu_reference(im), TOL, what=f"row {i} {im.shape}")
        assert_fused_equals_eager(got["tensor"][i], preprocess()(im))
    # a list works the same; a batch that is one size but arrives as objects too
    assert_fused_equals_eager(actor.run(list(imgs)), got["tensor"])
    same = [im for im in imgs if im.shape[0] == 40]
    assert_fused_equals_eager(actor.run(column(same)), actor.run(np.stack(same)))


def test_results_of_different_sizes_are_an_object_column(rng):
    imgs = mixed_images(rng, 3, 2)
    p = lazycv.compose(lazycv.cvt_color(cv2.COLOR_BGR2GRAY), lazycv.convert(np.float32, 1 / 255))
    got = PipelineActor(p, backend=BACKEND).run(column(imgs))
    assert got.dtype == object and got.shape == (5,)
    for im, r in zip(imgs, got):
        ref = cv2.cvtColor(im, cv2.COLOR_BGR2GRAY).astype(np.float32) * np.float32(1 / 255)
        assert_close(r, ref, 1e-5, what=str(im.shape))                    # →GRAY: 1e-5 (SPEC §3)


def test_gray_columns_and_a_pipeline_with_a_callable_step(rng):
    gray = np.stack([rand_image(rng, 30, 20, 1, np.uint8) for _ in range(3)])     # (N, H, W)
    p = lazycv.compose(lazycv.resize((10, 15)), lambda m: cv2.cuda.flip(m, 1))
    actor = PipelineActor(lambda: p, backend=BACKEND)                    # a factory is built in the actor
    refs = [cv2.flip(cv2.resize(g, (10, 15)), 1) for g in gray]
    got = actor.run(gray)
    assert got.shape == (3, 15, 10) and got.dtype == np.uint8
    for r, ref in zip(got, refs):
        assert_close(r, ref, 1)                                          # resize 8U: 1 (SPEC §3)
    # a callable step may give rows of one size results of several sizes: stacked only when equal
    crop = lazycv.compose(lambda m: cv2.cuda_GpuMat(m, (0, 0, 4 + m.size()[0] % 3, 5)))
    rows = [rand_image(rng, 8, w, 3, np.uint8) for w in (9, 10, 9)]
    got = PipelineActor(crop, backend=BACKEND).run(column(rows))
    assert got.dtype == object and [r.shape for r in got] == [(5, 4, 3), (5, 5, 3), (5, 4, 3)]
    for r, im in zip(got, rows):
        np.testing.assert_array_equal(r, im[:5, :r.shape[1]])


def test_bad_batches_and_arguments_raise_cv2_errors(rng):
    actor = PipelineActor(preprocess(), backend=BACKEND)
    img = rand_image(rng, 48, 64, 3, np.uint8)
    cases = [({"data": np.stack([img])}, "has no column 'image' (it has: 'data')"),
             ({"image": np.arange(4)}, "must hold images"),
             ({"image": np.zeros((2, 8, 8, 3, 2), np.uint8)}, "must hold images"),
             ({"image": column([img, "a.jpg"])}, "row 1 of column 'image' must be a numpy image"),
             ({"image": column([img, np.zeros((4, 4, 7), np.uint8)])}, "row 1 of column 'image'"),
             ({"image": "not images"}, "must be a numpy array or a list"),
             ([img], "the batch has no column")]
    for batch, text in cases:
        with pytest.raises(cv2.error, match=r"lazycv::ray_data") as e:
            actor(batch)
        assert text in str(e.value), str(e.value)
    with pytest.raises(cv2.error, match="must be a lazycv.compose"):
        PipelineActor(lambda: "resize", backend=BACKEND)
    with pytest.raises(cv2.error, match="column names"):
        PipelineActor(preprocess(), column=0, backend=BACKEND)
    # an image compose rejects (a depth cv2.cuda has no resize for): compose's own error
    with pytest.raises(cv2.error):
        actor({"image": np.zeros((2, 8, 8, 3), np.int64)})


def test_without_ray_the_class_works_and_map_images_says_what_to_install(monkeypatch, rng):
    import sys
    import lazycv.ray_data
    monkeypatch.setitem(sys.modules, "ray", None)                         # `import ray` fails
    frames = np.stack([rand_image(rng, 48, 64, 3, np.uint8) for _ in range(2)])
    got = PipelineActor(preprocess(), backend=BACKEND).run(frames)
    assert_close(got[1], cpu_reference(frames[1]), TOL)
    with pytest.raises(ImportError, match=r'pip install "lazycv\[ray\]"'):
        lazycv.ray_data.map_images(None, preprocess())


# ---------------------------------------------------------------- through a local Ray

@pytest.fixture(scope="module")
def ray_local():
    """A local Ray of 2 CPUs for this module; its workers import this checkout's lazycv and
    inherit the test backend and kernel cache folder."""
    ray = pytest.importorskip("ray")
    env = {"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), "LAZYCV_BACKEND": BACKEND}
    if os.environ.get("LAZYCV_CACHE_DIR"):
        env["LAZYCV_CACHE_DIR"] = os.environ["LAZYCV_CACHE_DIR"]
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": env})
    import ray.data
    ray.data.DataContext.get_current().enable_progress_bars = False
    yield ray
    ray.shutdown()


def test_map_images_on_a_local_ray_equals_cpu_opencv(ray_local, rng):
    import lazycv.ray_data
    imgs = mixed_images(rng)
    ds = ray_local.data.from_items([{"image": im, "label": i} for i, im in enumerate(imgs)])
    # batches of 4 from 16 rows of two sizes: some one size (an array), some mixed (objects)
    rows = lazycv.ray_data.map_images(ds, preprocess(), out="x", batch_size=4).take_all()
    assert sorted(r["label"] for r in rows) == list(range(16))
    here = PipelineActor(preprocess(), backend=BACKEND).run(column(imgs))
    for r in rows:
        i = r["label"]
        assert r["x"].shape == (3, OUT[1], OUT[0]) and r["x"].dtype == np.float32
        np.testing.assert_array_equal(r["image"], imgs[i])               # the input column is kept
        assert_close(r["x"], cpu_reference(imgs[i]), TOL, what=f"row {i}")
        assert_fused_equals_eager(r["x"], here[i])                        # = the class in this process


def test_an_actor_without_a_gpu_takes_the_cpu_backend_and_its_cpus(ray_local):
    @ray_local.remote(num_cpus=1, num_gpus=0)
    class Probe:
        def __init__(self):
            os.environ.pop("LAZYCV_BACKEND", None)                        # the auto choice, as on a cluster
            os.environ.pop("LAZYCV_CPU_THREADS", None)
            self.actor = PipelineActor(preprocess)

        def info(self):
            from lazycv.runtime import STATE
            return self.actor.backend, STATE.backend.threads

    assert ray_local.get(Probe.remote().info.remote()) == ("cpu", 1)


def test_a_bad_column_reaches_the_driver_as_lazycvs_error(ray_local):
    import lazycv.ray_data
    ds = ray_local.data.from_numpy(np.zeros((4, 48, 64, 3), np.uint8))     # its column is "data"
    with pytest.raises(Exception) as e:
        lazycv.ray_data.map_images(ds, preprocess(), batch_size=4).take_all()
    assert "has no column 'image' (it has: 'data')" in str(e.value)
    assert "lazycv::ray_data" in str(e.value)


def test_map_images_arguments(ray_local):
    import lazycv.ray_data
    ds = ray_local.data.from_numpy(np.zeros((2, 8, 8, 3), np.uint8))
    with pytest.raises(ValueError, match="backend must be"):
        lazycv.ray_data.map_images(ds, preprocess(), backend="gpu")
    with pytest.raises(ValueError, match="not both"):
        lazycv.ray_data.map_images(ds, preprocess(), concurrency=1, compute=ray_local.data.ActorPoolStrategy(size=1))
    with pytest.raises(cv2.error, match="must be a lazycv.compose"):
        lazycv.ray_data.map_images(ds, [lazycv.resize((4, 4))])
