"""The Gaussian-mixture model of MOG (KaewTraKulPong & Bowden), kept beside CPU OpenCV's
cv2.bgsegm subtractor so that ``getBackgroundImage`` can answer: CPU OpenCV's MOG computes the
foreground but keeps its model private (its getBackgroundImage is not implemented), while the
CUDA one returns the weighted mean of each pixel's background mixtures.

The update is bgfg_gaussmix.cpp's, written with numpy over all pixels at once, in float32 as
OpenCV computes it: each pixel's mixtures are kept sorted by weight / sigma; the first one the
pixel is within ``varThreshold`` variances of is updated and bubbled up; with no match the last
(weakest) is replaced; weights are renormalised. The background image is the CUDA module's:
the weighted mean of the sorted mixtures until their weights sum past ``backgroundRatio``. The
foreground mask itself comes from CPU OpenCV's subtractor.
"""
import numpy as np

_F = np.float32
_EPS = np.finfo(np.float32).eps
_NOISE_SIGMA, _INITIAL_WEIGHT, _VAR_THRESHOLD = 30 * 0.5, 0.05, 2.5 * 2.5


class MogModel:
    def __init__(self, history, nmixtures, backgroundRatio, noiseSigma):
        self.history, self.K = int(history), int(nmixtures)
        self.T = _F(backgroundRatio)
        sigma = noiseSigma if noiseSigma > 0 else _NOISE_SIGMA
        self.min_var = _F(sigma * sigma)
        self.w0 = _F(_INITIAL_WEIGHT)
        self.sk0 = _F(_INITIAL_WEIGHT / (_NOISE_SIGMA * 2))
        self.var0 = _F(_NOISE_SIGMA * _NOISE_SIGMA * 4)
        self.shape = None
        self.nframes = 0

    def _reset(self, shape):
        n, c = shape[0] * shape[1], (shape[2] if len(shape) == 3 else 1)
        self.shape, self.nframes = shape, 0
        self.weight = np.zeros((n, self.K), _F)
        self.sort_key = np.zeros((n, self.K), _F)
        self.mean = np.zeros((n, self.K, c), _F)
        self.var = np.zeros((n, self.K, c), _F)

    def apply(self, img, learning_rate):
        """Update the model with one frame (the learning rate as OpenCV's apply reads it)."""
        if self.shape != img.shape or self.nframes == 0 or learning_rate >= 1:
            self._reset(img.shape)
        self.nframes += 1
        rate = learning_rate if learning_rate >= 0 and self.nframes > 1 else 1.0 / min(self.nframes, self.history)
        if rate > 0:
            self._update(img.reshape(self.weight.shape[0], -1).astype(_F), _F(rate))

    def _swap(self, rows, a, b):
        for arr in (self.weight, self.sort_key, self.mean, self.var):
            arr[rows, a], arr[rows, b] = arr[rows, b].copy(), arr[rows, a].copy()

    def _update(self, pix, alpha):
        n, K = self.weight.shape
        vT = _F(_VAR_THRESHOLD)
        wsum = np.zeros(n, _F)
        done = np.zeros(n, bool)
        hit_at = np.full(n, -1)           # the loop index k of the match
        stop_at = np.full(n, K)           # where the loop ended without a match
        for k in range(K):
            live = ~done
            w = self.weight[:, k].copy()
            wsum[live] += w[live]
            empty = live & (w < _EPS)
            stop_at[empty] = k
            done |= empty
            live &= ~empty
            diff = pix - self.mean[:, k]
            d2 = np.zeros(n, _F)
            for c in range(diff.shape[1]):
                d2 += diff[:, c] * diff[:, c]
            var_sum = np.zeros(n, _F)
            for c in range(diff.shape[1]):
                var_sum += self.var[:, k, c]
            hit = live & (d2 < vT * var_sum)
            if hit.any():
                rows = np.nonzero(hit)[0]
                wh, dh = w[rows], diff[rows]
                wsum[rows] -= wh
                self.weight[rows, k] = wh + alpha * (_F(1) - wh)
                self.mean[rows, k] += alpha * dh
                v = np.maximum(self.var[rows, k] + alpha * (dh * dh - self.var[rows, k]), self.min_var)
                self.var[rows, k] = v
                vs = np.zeros(rows.size, _F)
                for c in range(v.shape[1]):
                    vs += v[:, c]
                self.sort_key[rows, k] = wh / np.sqrt(vs)
                moving = rows
                for k1 in range(k - 1, -1, -1):
                    moving = moving[self.sort_key[moving, k1] < self.sort_key[moving, k1 + 1]]
                    self._swap(moving, k1, k1 + 1)
                hit_at[rows] = k
                done |= hit
        hit_rows = np.nonzero(hit_at >= 0)[0]
        for k in range(K):                # a match adds the weights from its loop index on, as OpenCV
            at_or_after = hit_rows[hit_at[hit_rows] <= k]
            wsum[at_or_after] += self.weight[at_or_after, k]
        miss = np.nonzero(hit_at < 0)[0]
        kk = np.minimum(stop_at[miss], K - 1)
        wsum[miss] += self.w0 - self.weight[miss, kk]
        self.weight[miss, kk], self.mean[miss, kk] = self.w0, pix[miss]
        self.var[miss, kk], self.sort_key[miss, kk] = self.var0, self.sk0
        scale = _F(1) / wsum
        self.weight *= scale[:, None]
        self.sort_key *= scale[:, None]

    def background(self):
        """The CUDA module's background image: per pixel, the weight-averaged mean of the sorted
        mixtures up to the one whose cumulative weight passes backgroundRatio."""
        n, K = self.weight.shape
        total = np.zeros(n, _F)
        value = np.zeros(self.mean.shape[::2], _F)
        live = np.ones(n, bool)
        for k in range(K):
            w = np.where(live, self.weight[:, k], _F(0))
            value += w[:, None] * self.mean[:, k]
            total += w
            live &= ~(total > self.T)
        out = value / np.maximum(total, _EPS)[:, None]
        return np.clip(np.rint(out), 0, 255).astype(np.uint8).reshape(self.shape)
