"""stft and istft (nn/spectral.py) against PyTorch: stft with return_complex=False, istft of
the same real (..., freq, frames, 2) layout against torch.istft of its view_as_complex."""
import warnings

import numpy as np
import pytest

from helpers import check, make, torch

import clgrad as cg

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

SIGNAL = (2, 40)
WINDOW = make((8,), low=0.5, high=1.0)
SHORT_WINDOW = make((6,), low=0.5, high=1.0)


def is_clgrad(x) -> bool:
    return isinstance(x, cg.Tensor)


def stft(x, n_fft, **kwargs):
    return x.stft(n_fft, return_complex=False, **kwargs)


def istft(spectrum, n_fft, **kwargs):
    """cg.istft of the real layout; torch.istft of its complex view."""
    if is_clgrad(spectrum):
        return cg.istft(spectrum, n_fft, **kwargs)
    return torch.istft(torch.view_as_complex(spectrum), n_fft, **kwargs)


STFT_CASES = [  # n_fft, keyword arguments (a window is passed as the second input)
    (8, {}),
    (9, {"hop_length": 3, "normalized": True}),
    (8, {"onesided": False, "center": False}),
    (8, {"pad_mode": "constant"}),
    (8, {"pad_mode": "replicate", "hop_length": 5}),
    (8, {"pad_mode": "circular", "win_length": 6}),
]


@pytest.mark.parametrize("n_fft,kwargs", STFT_CASES)
def test_stft(n_fft, kwargs):
    out = check(lambda x: stft(x, n_fft, **kwargs), SIGNAL, atol=2e-5)[0]
    assert out.grad_fn.name() == "ViewAsRealBackward0"


@pytest.mark.parametrize("n_fft,kwargs,window", [
    (8, {}, WINDOW),
    (8, {"win_length": 6}, SHORT_WINDOW),
    (8, {"win_length": 6, "center": False, "align_to_window": True}, SHORT_WINDOW),
])
def test_stft_window_gets_gradients(n_fft, kwargs, window):
    check(lambda x, w: stft(x, n_fft, window=w, **kwargs), SIGNAL, window, atol=2e-5)


def test_stft_of_one_signal_in_float64_and_its_method_and_function():
    check(lambda x: stft(x, 8, window=x.new_ones(8)), (40,), dtype=np.float64)
    x = make((40,))
    np.testing.assert_allclose(cg.stft(cg.tensor(x), 8, return_complex=False).numpy(),
                               cg.tensor(x).stft(8, return_complex=False).numpy())


def test_stft_takes_its_window_dtype():
    """A float64 window makes a float32 signal's spectrum float64, as in PyTorch."""
    check(lambda x, w: stft(x, 8, window=w), SIGNAL, WINDOW.astype(np.float64), atol=2e-5)


@pytest.mark.parametrize("n_fft,kwargs,window", [
    (8, {}, WINDOW),
    (8, {"length": 46}, WINDOW),                # longer than the frames reach: zeros
    (8, {"length": 30, "normalized": True}, WINDOW),
    (9, {"hop_length": 3, "center": False}, None),
    (8, {"win_length": 6}, SHORT_WINDOW),
])
def test_istft(n_fft, kwargs, window):
    spectrum = torch.view_as_real(torch.stft(
        torch.tensor(make(SIGNAL)), n_fft, return_complex=True,
        window=None if window is None else torch.tensor(window),
        **{k: v for k, v in kwargs.items() if k != "length"})).numpy()
    # not quite any signal's spectrum: least squares then differs from a plain inverse
    spectrum = spectrum + 0.1 * make(spectrum.shape, seed=5)
    inputs = (spectrum,) if window is None else (spectrum, window)
    check(lambda s, *w: istft(s, n_fft, window=w[0] if w else None, **kwargs), *inputs,
          atol=2e-5)


def test_istft_of_one_spectrum():
    check(lambda s: istft(s, 8, length=46), (5, 21, 2), atol=2e-5)


def test_istft_grad_fn_names_follow_pytorch():
    spectrum = cg.tensor(stft(cg.tensor(make(SIGNAL)), 8).numpy(), requires_grad=True)
    assert cg.istft(spectrum, 8).grad_fn.name() == "DivBackward0"
    assert cg.istft(spectrum[0], 8).grad_fn.name() == "SqueezeBackward1"
    assert cg.istft(spectrum, 8, length=46).grad_fn.name() == "ConstantPadNdBackward0"


def test_istft_inverts_stft():
    x = cg.tensor(make(SIGNAL))
    window = cg.tensor(WINDOW)
    for kwargs in ({}, {"onesided": False, "normalized": True}):
        spectrum = x.stft(8, window=window, return_complex=False, **kwargs)
        back = spectrum.istft(8, window=window, length=SIGNAL[1], **kwargs)
        np.testing.assert_allclose(back.numpy(), x.numpy(), atol=1e-5)


def test_warnings_are_pytorchs():
    x = cg.tensor(make(SIGNAL))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        spectrum = x.stft(8, return_complex=False)
        x.stft(8, window=cg.ones(8), return_complex=False)
        spectrum.istft(8, length=50)
    messages = [str(w.message) for w in caught]
    assert messages[0].startswith("A window was not provided. A rectangular window will be "
                                  "applied,which is known to cause spectral leakage.")
    assert messages[1].startswith("stft with return_complex=False is deprecated.")
    assert messages[2] == messages[1]       # the window given: no window warning
    assert messages[3].startswith("A window was not provided. A rectangular window will be "
                                  "applied.Please provide the same window used by stft")
    assert messages[4].startswith("The length of signal is shorter than the length parameter.")


def test_complex_results_are_refused_naming_clgrads_lack_of_them():
    x = cg.tensor(make(SIGNAL))
    with pytest.raises(RuntimeError, match="requires the return_complex parameter be given"):
        x.stft(8)
    with pytest.raises(RuntimeError, match="stft: return_complex=True .* clgrad has no complex"):
        x.stft(8, return_complex=True)
    spectrum = x.stft(8, onesided=False, return_complex=False)
    with pytest.raises(RuntimeError, match="istft: return_complex=True .* clgrad has no "
                                           "complex"):
        spectrum.istft(8, return_complex=True)
    with pytest.raises(RuntimeError, match="Cannot have onesided output"):     # PyTorch's
        x.stft(8, return_complex=False).istft(8, return_complex=True)


def _raised(call):
    with pytest.raises(Exception) as info:
        call()
    return info.value


STFT_ERRORS = [  # signal shape, dtype, n_fft, keyword arguments
    ((2, 2, 40), np.float32, 8, {}),
    ((2, 40), np.int64, 8, {"center": False}),
    ((2, 40), np.float32, 41, {"center": False}),
    ((2, 40), np.float32, 0, {}),
    ((2, 40), np.float32, 8, {"hop_length": 0}),
    ((2, 40), np.float32, 8, {"win_length": 9}),
    ((2, 40), np.float32, 8, {"window": np.ones(7, np.float32)}),
    ((2, 40), np.float32, 8, {"window": np.ones((1, 8), np.float32), "onesided": True}),
    ((2, 40), np.float32, 8, {"align_to_window": True}),
    ((), np.float32, 8, {}),
]


@pytest.mark.parametrize("shape,dtype,n_fft,kwargs", STFT_ERRORS)
def test_stft_errors_are_pytorchs(shape, dtype, n_fft, kwargs):
    x = make(shape, dtype)

    def call(lib):
        args = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return lambda: lib.tensor(x).stft(n_fft, return_complex=False, **args)

    ours, theirs = _raised(call(cg)), _raised(call(torch))
    assert type(ours) is type(theirs)
    # (clgrad's pad names itself before PyTorch's message)
    assert str(ours).replace("clgrad.", "torch.").endswith(str(theirs))


ISTFT_ERRORS = [  # spectrum shape, n_fft, keyword arguments
    ((2, 5, 21, 2), 8, {"hop_length": 9}),
    ((2, 5, 21, 2), 8, {"win_length": 9}),
    ((2, 5, 21, 2), 10, {}),
    ((2, 5, 21, 2), 8, {"onesided": False}),
    ((2, 5, 21, 2), 8, {"window": np.ones(7, np.float32)}),
    ((2, 5, 21, 2), 8, {"window": np.zeros(8, np.float32)}),     # no overlap to divide by
    ((21, 2), 8, {}),
    ((2, 2, 5, 21, 2), 8, {}),
]


@pytest.mark.parametrize("shape,n_fft,kwargs", ISTFT_ERRORS)
def test_istft_errors_are_pytorchs(shape, n_fft, kwargs):
    spectrum = make(shape)

    def call(lib):
        args = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}
        return lambda: istft(lib.tensor(spectrum), n_fft, **args)

    ours, theirs = _raised(call(cg)), _raised(call(torch))
    assert type(ours) is type(theirs)
    # the call's description differs (PyTorch's shows the complex view): the rest is equal
    assert str(ours).split(") ", 1)[-1] == str(theirs).split(") ", 1)[-1].split("\n")[0]


def test_istft_reads_real_pairs_only():
    with pytest.raises(RuntimeError, match=r"\) : input tensor cannot be empty.$"):
        cg.istft(cg.zeros(0, 5, 21, 2), 8)
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        cg.istft(cg.zeros(5, 21, 3), 8)
    with pytest.raises(RuntimeError, match="scalar type: Long"):
        cg.istft(cg.zeros(5, 21, 2, dtype=cg.int64), 8)
