"""cv2.cuda algorithms through CPU OpenCV: the CUDA binding's signatures and result layouts,
values equal to CPU cv2 with the same parameters (they are CPU OpenCV's own algorithms), each
call counted as a fallback."""
import os
import tempfile

import cv2
import numpy as np
import pytest

import lazycv

pytestmark = pytest.mark.filterwarnings("ignore::lazycv.FallbackWarning")


def _scene(h=48, w=64, seed=0):
    """A grey image with edges, corners and a disc (so detectors find something)."""
    rng = np.random.default_rng(seed)
    img = (rng.random((h, w)) * 30).astype(np.uint8)
    cv2.rectangle(img, (8, 8), (w // 2, h // 2), 200, -1)
    cv2.circle(img, (3 * w // 4, 2 * h // 3), min(h, w) // 6, 255, -1)
    return img


def _gpu(a):
    return cv2.cuda_GpuMat(a)


@pytest.mark.parametrize("shape", [(1, 1), pytest.param((7, 5), marks=pytest.mark.sim), (48, 64)])
def test_clahe_equals_cpu(shape):
    img = _scene(*shape) if min(shape) > 8 else np.full(shape, 9, np.uint8)
    lazycv.reset_stats()
    got = cv2.cuda.createCLAHE(2.0, (4, 4)).apply(_gpu(img), cv2.cuda.Stream_Null())
    assert isinstance(got, cv2.cuda.GpuMat)
    np.testing.assert_array_equal(got.download(), cv2.createCLAHE(2.0, (4, 4)).apply(img))
    assert lazycv.stats()["fallbacks"] == 1


def test_canny_and_its_stream_and_dst():
    img = _scene()
    det = cv2.cuda.createCannyEdgeDetector(50, 100)
    dst = cv2.cuda_GpuMat()
    out = det.detect(_gpu(img), dst, cv2.cuda.Stream())
    assert out is dst
    np.testing.assert_array_equal(dst.download(), cv2.Canny(img, 50, 100))
    det.setL2Gradient(True)
    assert det.getL2Gradient() is True
    np.testing.assert_array_equal(det.detect(_gpu(img)).download(), cv2.Canny(img, 50, 100, L2gradient=True))


def test_canny_reads_a_pending_input():
    img = _scene()
    pending = cv2.cuda.GpuMat(img).convertTo(cv2.CV_8U)          # a lazy copy, computed on download
    got = cv2.cuda.createCannyEdgeDetector(50, 100).detect(pending)
    np.testing.assert_array_equal(got.download(), cv2.Canny(img, 50, 100))


def test_hough_lines_segments_circles_layouts():
    edges = cv2.Canny(_scene(), 50, 100)
    lines = cv2.cuda.createHoughLinesDetector(1, np.pi / 180, 20).detect(_gpu(edges))
    ref = cv2.HoughLinesWithAccumulator(edges, 1, np.pi / 180, 20).reshape(-1, 3)
    assert lines.type() == cv2.CV_32FC2 and lines.size() == (len(ref), 1)
    det = cv2.cuda.createHoughLinesDetector(1, np.pi / 180, 20)
    h_lines, h_votes = det.downloadResults(det.detect(_gpu(edges)))
    np.testing.assert_array_equal(h_lines.reshape(-1, 2), ref[:, :2])
    np.testing.assert_array_equal(h_votes.ravel(), ref[:, 2].astype(np.int32))
    segs = cv2.cuda.createHoughSegmentDetector(1, np.pi / 180, 10, 3, 4096, 10).detect(_gpu(edges))
    ref_segs = cv2.HoughLinesP(edges, 1, np.pi / 180, 10, minLineLength=10, maxLineGap=3)
    np.testing.assert_array_equal(segs.download().reshape(-1, 4), ref_segs.reshape(-1, 4))
    assert segs.type() == cv2.CV_32SC4
    blurred = cv2.GaussianBlur(_scene(), (5, 5), 1)
    circles = cv2.cuda.createHoughCirclesDetector(1, 20, 100, 10, 4, 20).detect(_gpu(blurred))
    ref = cv2.HoughCircles(blurred, cv2.HOUGH_GRADIENT, 1, 20, param1=100, param2=10, minRadius=4, maxRadius=20)
    assert circles.type() == cv2.CV_32FC3
    np.testing.assert_array_equal(circles.download().reshape(-1, 3), ref.reshape(-1, 3))


def test_corners_template_matching():
    img = _scene()
    corners = cv2.cuda.createGoodFeaturesToTrackDetector(cv2.CV_8UC1, 50, 0.01, 3).detect(_gpu(img))
    assert corners.type() == cv2.CV_32FC2
    np.testing.assert_array_equal(corners.download().reshape(-1, 2),
                                  cv2.goodFeaturesToTrack(img, 50, 0.01, 3).reshape(-1, 2))
    f = img.astype(np.float32)
    harris = cv2.cuda.createHarrisCorner(cv2.CV_32FC1, 3, 3, 0.04).compute(_gpu(f))
    np.testing.assert_array_equal(harris.download(), cv2.cornerHarris(f, 3, 3, 0.04, borderType=cv2.BORDER_REFLECT101))
    eig = cv2.cuda.createMinEigenValCorner(cv2.CV_8UC1, 3, 3).compute(_gpu(img))
    np.testing.assert_array_equal(eig.download(), cv2.cornerMinEigenVal(img, 3, 3, borderType=cv2.BORDER_REFLECT101))
    templ = img[5:20, 6:30].copy()
    res = cv2.cuda.createTemplateMatching(cv2.CV_8UC1, cv2.TM_CCOEFF_NORMED).match(_gpu(img), _gpu(templ))
    np.testing.assert_allclose(res.download(), cv2.matchTemplate(img, templ, cv2.TM_CCOEFF_NORMED), atol=1e-6)


def test_mean_shift_family():
    rng = np.random.default_rng(1)
    img = np.zeros((12, 10, 4), np.uint8)
    img[:, :5, :3], img[:, 5:, :3] = 40, 200
    img[..., :3] += rng.integers(0, 4, (12, 10, 3), dtype=np.uint8)
    colours, positions = cv2.cuda.meanShiftProc(_gpu(img), 3, 10)
    assert colours.type() == cv2.CV_8UC4 and positions.type() == cv2.CV_16SC2
    filtered = cv2.cuda.meanShiftFiltering(_gpu(img), 3, 10).download()
    np.testing.assert_array_equal(filtered, colours.download())
    # each half converges to its own colour: a flat colour within the noise
    assert np.all(np.abs(filtered[:, :5, :3].astype(int) - 41) <= 3)
    assert np.all(np.abs(filtered[:, 5:, :3].astype(int) - 201) <= 3)
    seg = cv2.cuda.meanShiftSegmentation(_gpu(img), 3, 10, 5).download()
    assert len({tuple(p) for p in seg[:, :5, :3].reshape(-1, 3)}) == 1
    assert len({tuple(p) for p in seg[:, 5:, :3].reshape(-1, 3)}) == 1
    with pytest.raises(cv2.error, match="CV_8UC4"):
        cv2.cuda.meanShiftFiltering(_gpu(img[..., :3].copy()), 3, 10)


def test_background_subtraction_mog2_and_mog():
    frames = [_scene(seed=s) for s in range(3)]
    mog2, ref = cv2.cuda.createBackgroundSubtractorMOG2(), cv2.createBackgroundSubtractorMOG2()
    for f in frames:
        fg = mog2.apply(_gpu(f), 0.05, cv2.cuda.Stream_Null())
        np.testing.assert_array_equal(fg.download(), ref.apply(f, learningRate=0.05))
    np.testing.assert_array_equal(mog2.getBackgroundImage(cv2.cuda.Stream_Null()).download(),
                                  ref.getBackgroundImage())
    assert mog2.getHistory() == 500
    mog, ref = cv2.cuda.createBackgroundSubtractorMOG(), cv2.bgsegm.createBackgroundSubtractorMOG()
    with pytest.raises(cv2.error, match="no frame"):
        mog.getBackgroundImage(cv2.cuda.Stream_Null())
    for f in frames:
        np.testing.assert_array_equal(mog.apply(_gpu(f), 0.05, cv2.cuda.Stream_Null()).download(),
                                      ref.apply(f, learningRate=0.05))


@pytest.mark.parametrize("cn", [1, 3])
def test_mog_background_image(cn):
    """A static scene is its own background; a pixel that briefly shows a value no mixture
    matches gets a new, light mixture and keeps its background (CPU OpenCV's MOG has no getBackgroundImage to
    compare with, so the checks are the model's defining properties)."""
    rng = np.random.default_rng(cn)
    scene = rng.integers(0, 255, (6, 5, cn) if cn > 1 else (6, 5), dtype=np.uint8)
    mog = cv2.cuda.createBackgroundSubtractorMOG()
    for _ in range(3):
        mog.apply(_gpu(scene), 0.05, cv2.cuda.Stream_Null())
    bg = mog.getBackgroundImage(cv2.cuda.Stream_Null())
    assert bg.type() == _gpu(scene).type()
    np.testing.assert_array_equal(bg.download(), scene)
    flash = scene.copy()
    flash[2, 3] = scene[2, 3] ^ 128                 # 128 grey levels away: no mixture matches it
    mog.apply(_gpu(flash), 0.05, cv2.cuda.Stream_Null())
    for _ in range(5):
        mog.apply(_gpu(scene), 0.05, cv2.cuda.Stream_Null())
    np.testing.assert_array_equal(mog.getBackgroundImage(cv2.cuda.Stream_Null()).download(), scene)


def test_optical_flow():
    a = _scene()
    b = np.roll(a, 1, axis=1)
    flow = cv2.cuda.FarnebackOpticalFlow.create().calc(_gpu(a), _gpu(b), None)
    assert flow.type() == cv2.CV_32FC2
    np.testing.assert_array_equal(flow.download(), cv2.calcOpticalFlowFarneback(a, b, None, 0.5, 5, 13, 10, 5, 1.1, 0))
    pts = cv2.goodFeaturesToTrack(a, 20, 0.01, 3).reshape(1, -1, 2)
    lk = cv2.cuda_SparsePyrLKOpticalFlow.create()
    nxt, status, err = lk.calc(_gpu(a), _gpu(b), _gpu(pts), None)
    ref_next, ref_status, _ = cv2.calcOpticalFlowPyrLK(a, b, pts.reshape(-1, 1, 2), None, winSize=(21, 21),
                                                       maxLevel=3, criteria=(3, 30, 0.01))
    assert nxt.type() == cv2.CV_32FC2 and status.type() == cv2.CV_8UC1 and err.type() == cv2.CV_32FC1
    np.testing.assert_array_equal(nxt.download().reshape(-1, 2), ref_next.reshape(-1, 2))
    np.testing.assert_array_equal(status.download().ravel(), ref_status.ravel())
    small_a, small_b = a[:16, :16].copy(), b[:16, :16].copy()
    dense = cv2.cuda.DensePyrLKOpticalFlow.create().calc(_gpu(small_a), _gpu(small_b), None)
    assert dense.type() == cv2.CV_32FC2 and dense.size() == (16, 16)
    tvl1 = cv2.cuda.OpticalFlowDual_TVL1.create(iterations=30, nscales=1, warps=1)
    assert tvl1.calc(_gpu(small_a), _gpu(small_b), None).type() == cv2.CV_32FC2


def test_stereo():
    left = _scene()
    right = np.roll(left, -4, axis=1)
    bm = cv2.cuda.createStereoBM(16, 9)
    disp = bm.compute(_gpu(left), _gpu(right), cv2.cuda.Stream_Null())
    ref = cv2.StereoBM_create(16, 9).compute(left, right)
    assert disp.type() == cv2.CV_8UC1
    np.testing.assert_array_equal(disp.download(), np.clip(ref // 16, 0, 255).astype(np.uint8))
    sgm = cv2.cuda.createStereoSGM(0, 16)
    np.testing.assert_array_equal(sgm.compute(_gpu(left), _gpu(right)).download(),
                                  cv2.StereoSGBM_create(0, 16, 1, P1=10, P2=120, uniquenessRatio=5,
                                                        mode=cv2.STEREO_SGBM_MODE_HH4).compute(left, right))


def test_orb_fast_matcher_as_opencvs_test_uses_them():
    img = cv2.resize(_scene(), (256, 192))
    g = _gpu(img)
    kps_fast = cv2.cuda_FastFeatureDetector.create().detectAsync(g)
    fast_ref = cv2.FastFeatureDetector_create().detect(img)
    assert sorted(k.pt for k in cv2.cuda_FastFeatureDetector.create().convert(kps_fast)) == \
        sorted(k.pt for k in fast_ref)
    orb = cv2.cuda_ORB.create()
    orb.setMaxFeatures(200)
    kps, desc = orb.detectAndComputeAsync(g, None)
    ref_kps, ref_desc = cv2.ORB_create(200).detectAndCompute(img, None)
    assert len(orb.convert(kps)) == kps.size()[0] == len(ref_kps)
    np.testing.assert_array_equal(desc.download(), ref_desc)
    assert [k.pt for k in orb.convert(kps)] == pytest.approx([k.pt for k in ref_kps])
    bf = cv2.cuda_DescriptorMatcher.createBFMatcher(cv2.NORM_HAMMING)
    ref_bf = cv2.BFMatcher(cv2.NORM_HAMMING)
    got = [(m.queryIdx, m.trainIdx, m.distance) for m in bf.match(desc, desc)]
    assert got == [(m.queryIdx, m.trainIdx, m.distance) for m in ref_bf.match(ref_desc, ref_desc)]
    knn = bf.knnMatchConvert(bf.knnMatchAsync(desc, desc, 2))
    assert [[(m.queryIdx, m.trainIdx) for m in ms] for ms in knn] == \
        [[(m.queryIdx, m.trainIdx) for m in ms] for ms in ref_bf.knnMatch(ref_desc, ref_desc, 2)]
    assert len(bf.radiusMatch(desc, desc, 0.1)) == len(ref_desc)


def test_hog():
    img = cv2.resize(_scene(), (64, 128))
    hog = cv2.cuda.HOG.create()
    ref = cv2.HOGDescriptor((64, 128), (16, 16), (8, 8), (8, 8), 9, 1, -1, 0, 0.2, True, 64)
    d = hog.compute(_gpu(img))
    assert d.size() == (hog.getDescriptorSize(), 1)
    np.testing.assert_array_equal(d.download().ravel(), ref.compute(img, (8, 8)).ravel())
    hog.setSVMDetector(hog.getDefaultPeopleDetector())
    loc, conf = hog.detect(_gpu(cv2.cvtColor(img, cv2.COLOR_GRAY2BGRA)))
    assert len(loc) == len(conf)


_CASCADE = os.path.join(cv2.data.haarcascades, "haarcascade_frontalface_default.xml")


@pytest.mark.skipif(not os.path.exists(_CASCADE), reason="this OpenCV wheel ships no cascade files")
def test_cascade_equals_cpu():
    path = _CASCADE
    cascade = cv2.cuda.CascadeClassifier.create(path)
    objs = cascade.detectMultiScale(_gpu(_scene()))
    ref = cv2.CascadeClassifier(path).detectMultiScale(_scene(), 1.2, 4)
    assert cascade.convert(objs) == [tuple(r) for r in np.reshape(ref, (-1, 4))]


def test_cascade_that_cannot_load_is_a_cv_error():
    with pytest.raises(cv2.error, match="lazycv"):
        cv2.cuda.CascadeClassifier.create("/nonexistent.xml")


def test_video_reader_writer_round_trip():
    frames = [np.full((48, 64, 3), 40 * i, np.uint8) for i in range(4)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "clip.avi")
        w = cv2.VideoWriter(path, cv2.VideoWriter_fourcc(*"MJPG"), 10, (64, 48))
        for f in frames:
            w.write(f)
        w.release()
        reader = cv2.cudacodec.createVideoReader(path)
        assert reader.format().width == 64 and reader.format().height == 48
        ret, frame = reader.nextFrame()
        assert ret and isinstance(frame, cv2.cuda.GpuMat) and frame.type() == cv2.CV_8UC4     # BGRA, as NVDEC
        cap = cv2.VideoCapture(path)
        _, ref = cap.read()
        np.testing.assert_array_equal(frame.download(), cv2.cvtColor(ref, cv2.COLOR_BGR2BGRA))
        assert reader.set(cv2.cudacodec.ColorFormat_GRAY)
        assert reader.getVideoReaderProps(cv2.cudacodec.VideoReaderProps_PROP_COLOR_FORMAT) == (True, 3.0)
        assert reader.grab()
        ret, frame = reader.retrieve()
        _, ref = cap.read()
        np.testing.assert_array_equal(frame.download(), cv2.cvtColor(ref, cv2.COLOR_BGR2GRAY))
        params = cv2.cudacodec.EncoderParams()
        params.gopLength = 10
        with pytest.raises(cv2.error, match="lazycv"):      # no H.264 encoder in this CPU OpenCV's FFmpeg
            cv2.cudacodec.createVideoWriter(os.path.join(d, "x.h264"), (64, 48), cv2.cudacodec.H264, 30,
                                            cv2.cudacodec.ColorFormat_BGR, params)


def test_host_functions_equal_cpu():
    img = (_scene() > 100).astype(np.uint8) * 255
    labels = cv2.cuda.connectedComponents(_gpu(img))
    np.testing.assert_array_equal(labels.download(), cv2.connectedComponents(img, connectivity=8, ltype=cv2.CV_32S)[1])
    disp = np.random.default_rng(2).integers(0, 64, (6, 5)).astype(np.int16)
    q = np.eye(4, dtype=np.float32)
    xyz = cv2.cuda.reprojectImageTo3D(_gpu(disp), q)
    assert xyz.type() == cv2.CV_32FC4
    np.testing.assert_array_equal(xyz.download()[..., :3], cv2.reprojectImageTo3D(disp, q))
    xyz3 = cv2.cuda_GpuMat(5, 6, cv2.CV_32FC3)
    assert cv2.cuda.reprojectImageTo3D(_gpu(disp), q, xyz3, 3) is xyz3 and xyz3.type() == cv2.CV_32FC3
    a = np.random.default_rng(3).random((4, 6, 2)).astype(np.float32)
    b = np.random.default_rng(4).random((4, 6, 2)).astype(np.float32)
    got = cv2.cuda.mulSpectrums(_gpu(a), _gpu(b), 0, True).download()
    np.testing.assert_array_equal(got, cv2.mulSpectrums(a, b, 0, conjB=True))
    scaled = cv2.cuda.mulAndScaleSpectrums(_gpu(a), _gpu(b), 0, 0.5).download()
    np.testing.assert_array_equal(scaled, cv2.mulSpectrums(a, b, 0) * np.float32(0.5))
