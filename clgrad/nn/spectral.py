"""torch.stft and torch.istft. clgrad has no complex dtype, so a spectrum is PyTorch's real
layout (..., freq, frames, 2), real and imaginary parts last: what stft returns with
return_complex=False, and what istft takes. PyTorch 2 takes only a complex spectrum there,
so cg.istft(x) is torch.istft(torch.view_as_complex(x)).

Each DFT is a product with a basis of cosines and sines made once per size, so the
gradients are the matmul's; frames are a sliding window over the signal (a view) and the
inverse sums them back in place (overlap-add). PyTorch's checks, their order, messages and
warnings are kept; its messages begin with a description of the call (SpectralOps.cpp's)."""
from __future__ import annotations

import functools
import warnings

import numpy as np

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.backward import record
from ..frontend.matrices import torch_name
from .functional import pad

_STFT_WINDOW_WARNING = (
    "A window was not provided. A rectangular window will be applied,which is known to cause "
    "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
    "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
    "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_ISTFT_WINDOW_WARNING = (
    "A window was not provided. A rectangular window will be applied.Please provide the same "
    "window used by stft to make the inversion lossless.To suppress this warning and use a "
    "rectangular window, explicitly set `window=torch.ones(n_fft, device=<device>)`.")
_REAL_OUTPUT_WARNING = (
    "stft with return_complex=False is deprecated. In a future pytorch release, stft will "
    "return complex tensors for all inputs, and return_complex=False will raise an error.\n"
    "Note: you can still call torch.view_as_real on the complex output to recover the old "
    "return format.")
_NO_COMPLEX = ("clgrad has no complex dtype: pass return_complex=False for the real "
               "(..., freq, frames, 2) layout, real and imaginary parts last")


def _shown(value) -> str:
    """An argument as PyTorch's description of the call writes it."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return str(int(value))
    if hasattr(value, "shape"):
        return f"{value.type()}{{{list(value.shape)}}}"
    return str(value)


def _described(op: str, input, **arguments) -> str:
    shown = ", ".join(f"{name}={_shown(value)}" for name, value in arguments.items())
    return f"{op}({input.type()}{list(input.shape)}, {shown}) "


def _check_window_device(op: str, input, window) -> None:
    if window is not None and window.device != input.device:
        raise RuntimeError(f"{op} input and window must be on the same device but got self on "
                           f"{input.device.spec} and window on {window.device.spec}")


def _check_fft_dtype(op: str, dtype) -> None:
    if dtype.is_16_bit_float:
        raise RuntimeError(f"{op}: the FFT doesn't support tensors of type: "
                           f"{torch_name(dtype)} (nor does PyTorch's on the CPU, MKL's)")


@functools.lru_cache(maxsize=32)
def _phases(n_fft: int, freqs: int) -> tuple[np.ndarray, np.ndarray]:
    """cos and sin of 2 pi f k / n_fft, (freqs, n_fft), in float64. The phase is reduced mod
    n_fft in integers first, and its sine is exactly 0 at f k = 0 and n_fft / 2, as an FFT's is
    (a real signal's DC and Nyquist bins have no imaginary part)."""
    turns = np.outer(np.arange(freqs), np.arange(n_fft)) % n_fft
    angle = 2 * np.pi * turns / n_fft
    sin = np.where(2 * turns % n_fft == 0, 0.0, np.sin(angle))
    return np.cos(angle), sin


@functools.lru_cache(maxsize=32)
def _basis(n_fft: int, freqs: int, scale: float, inverse: bool, dtype, device):
    """The DFT as a matrix, times scale. Forward, (n_fft, 2 freqs): a frame times it gives
    each frequency's (real, imaginary) pair. Inverse, (2 freqs, n_fft), PyTorch's c2r: a
    one-sided spectrum's frequencies between 0 and n_fft / 2 stand for their mirror images
    too, so count twice, and a two-sided spectrum's upper half is not read."""
    cos, sin = _phases(n_fft, freqs)
    if inverse:
        f = np.arange(freqs)[:, None]
        weight = np.where((f == 0) | (2 * f == n_fft), 1.0, np.where(2 * f < n_fft, 2.0, 0.0))
        pairs = np.stack([weight * cos, -weight * sin], 1).reshape(2 * freqs, n_fft)
    else:
        pairs = np.stack([cos.T, -sin.T], 2).reshape(n_fft, 2 * freqs)
    return creation.tensor(pairs * scale, dtype=dtype, device=device)


def _padded_window(window, win_length: int, n_fft: int, dtype, device):
    """The window centred in n_fft samples (zeros around it); None for a rectangular window
    of all n_fft samples (stft multiplies by nothing then)."""
    if window is None:
        if win_length == n_fft:
            return None
        window = creation.ones(win_length, dtype=dtype, device=device)
    left = (n_fft - win_length) // 2
    return pad(window, [left, n_fft - win_length - left]) if win_length < n_fft else window


def stft(input, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window=None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None):
    """The DFT of each frame of n_fft samples, hop_length apart, times the window:
    (freq, frames, 2) of a 1-D signal, (batch, freq, frames, 2) of a 2-D batch of them."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:      # padded first, as PyTorch's Python does: its messages show the result
        dims, half = input.ndim, n_fft // 2
        padded = pad(input.reshape((1,) * (3 - dims) + tuple(input.shape)), [half, half],
                     pad_mode)
        input = padded.reshape(padded.shape[-dims:])
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length

    def error(message: str) -> RuntimeError:
        return RuntimeError(_described(
            "stft", input, n_fft=n_fft, hop_length=hop, win_length=win, window=window,
            normalized=normalized, onesided=onesided, return_complex=return_complex,
            align_to_window=align_to_window) + message)

    if window is None:
        warnings.warn(_STFT_WINDOW_WARNING, UserWarning, stacklevel=2)
    _check_window_device("stft", input, window)
    if return_complex is None:
        raise RuntimeError("stft requires the return_complex parameter be given for real "
                           "inputs, and will further require that return_complex=True in a "
                           "future PyTorch release.")
    if return_complex:
        raise RuntimeError(f"stft: return_complex=True returns a complex tensor, and "
                           f"{_NO_COMPLEX}")
    warnings.warn(_REAL_OUTPUT_WARNING, UserWarning, stacklevel=2)
    if not input.dtype.is_float:
        raise error(": expected a tensor of floating point or complex values")
    if input.ndim not in (1, 2):
        raise error(": expected a 1D or 2D tensor")
    signals = input if input.ndim == 2 else input.unsqueeze(0)
    batch, length = signals.shape
    if n_fft <= 0 or n_fft > length:
        # (PyTorch's message shows win_length's value as n_fft's)
        raise error(f": expected 0 < n_fft < {length}, but got n_fft={win}")
    if hop <= 0:
        raise error(f": expected hop_length > 0, but got hop_length={hop}")
    if win <= 0 or win > n_fft:
        raise error(f": expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise error(f": expected a 1D window tensor of size equal to win_length={win}, but "
                    f"got window with size {list(window.shape)}")
    taper = _padded_window(window, win, n_fft, input.dtype, input.device)
    frames_wanted = 1 + (length - n_fft) // hop
    if not center and align_to_window:     # frames start where the window's samples start
        frames_wanted = 1 + (length - win) // hop
        side = (n_fft - win) // 2
        signals = pad(signals, [side, side])
    if (frames_wanted - 1) * hop + n_fft > signals.shape[1]:
        raise error(f": its last frame of {n_fft} samples at {(frames_wanted - 1) * hop} "
                    f"reads past the padded signal's {signals.shape[1]} samples (PyTorch's "
                    f"as_strided refuses it: setStorage out of bounds)")
    if batch == 0:
        raise error(": the FFT of an empty batch (PyTorch's, MKL's, refuses it: "
                    "Inconsistent configuration parameters)")
    frames = record("as_strided", signals.node.window(1, n_fft, hop), input.device, [signals])
    if taper is not None:
        frames = frames * taper
    _check_fft_dtype("stft", frames.dtype)
    freqs = n_fft // 2 + 1 if onesided is None or onesided else n_fft
    scale = n_fft ** -0.5 if normalized else 1.0
    pairs = frames @ _basis(n_fft, freqs, scale, False, frames.dtype, frames.device)
    spectrum = pairs.reshape(batch, frames_wanted, freqs, 2).transpose(1, 2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return record("view_as_real", spectrum.node, spectrum.device, [spectrum])


def _overlap_add(frames, hop: int, length: int):
    """Frames (..., count, n) summed into a signal (..., length), frame i from sample i hop
    on (unfold's adjoint, PyTorch's unfold_backward). The frames, padded to whole hops, are
    blocks of hop samples: block j of every frame, laid end to end, lands j hops on, so the
    sum takes as many shifted copies as a frame has blocks."""
    *lead, count, n = frames.shape
    lead = tuple(lead)
    keep, still = tuple((0, s) for s in lead), tuple((0, 0) for _ in lead)
    blocks = -(-n // hop)
    span = (count + blocks - 1) * hop
    x = frames.node.pad(still + ((0, 0), (0, blocks * hop - n)))
    x = x.reshape(lead + (count, blocks, hop))
    total = None
    for j in range(blocks):
        piece = x.shrink(keep + ((0, count), (j, j + 1), (0, hop))).reshape(lead + (count * hop,))
        piece = piece.pad(still + ((j * hop, span - (j + count) * hop),))
        total = piece if total is None else total + piece
    total = total.shrink(keep + ((0, length),))
    return record("unfold_backward", total, frames.device, [frames])


def _check_complex_layout(input) -> None:
    """What torch.view_as_complex asks of the real layout."""
    if input.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError(f"istft: view_as_complex is only supported for half, float and "
                           f"double tensors, but got a tensor of scalar type: "
                           f"{torch_name(input.dtype)}")
    if input.ndim == 0:
        raise RuntimeError("istft: view_as_complex: Input tensor must have one or more "
                           "dimensions")
    if input.shape[-1] != 2:
        raise RuntimeError("istft: view_as_complex: Tensor must have a last dimension of "
                           "size 2")
    if input.ndim < 3:
        raise IndexError(f"Dimension out of range (expected to be in range of "
                         f"[{-input.ndim}, {input.ndim - 1}], but got -3)")


def istft(input, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window=None, center: bool = True, normalized: bool = False,
          onesided: bool | None = None, length: int | None = None,
          return_complex: bool = False):
    """The signal whose stft is input, (..., freq, frames, 2), by least squares: each frame's
    inverse DFT times the window, overlapped and added, over the sum of the squared windows
    that reach each sample (which must not vanish: the NOLA condition)."""
    if window is None:
        warnings.warn(_ISTFT_WINDOW_WARNING, UserWarning, stacklevel=2)
    _check_window_device("istft", input, window)
    hop = n_fft >> 2 if hop_length is None else hop_length
    win = n_fft if win_length is None else win_length
    _check_complex_layout(input)
    frame_count, fft_size = input.shape[-2], input.shape[-3]

    def error(message: str) -> RuntimeError:
        return RuntimeError(_described(
            "istft", input, n_fft=n_fft, hop_length=hop, win_length=win, window=window,
            center=center, normalized=normalized, onesided=onesided, length=length,
            return_complex=return_complex) + message)

    one_sided = fft_size != n_fft if onesided is None else onesided   # (error shows the given)
    if input.numel() == 0:
        raise error(": input tensor cannot be empty.")
    if input.ndim not in (3, 4):
        raise error(f": expected a tensor with 3 or 4 dimensions, but got {input.ndim}")
    if one_sided and fft_size != n_fft // 2 + 1:
        raise error(f": expected the frequency dimension (3rd to the last) of the input tensor "
                    f"to match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not one_sided and fft_size != n_fft:
        raise error(f": expected the frequency dimension (3rd to the last) of the input tensor "
                    f"to match n_fft when onesided=False, but got {fft_size}")
    if not 0 < hop <= win:
        raise error(": expected 0 < hop_length <= win_length")
    if not 0 < win <= n_fft:
        raise error(": expected 0 < win_length <= n_fft")
    if window is not None and (window.ndim != 1 or window.shape[0] != win):
        raise error(": Invalid window shape. window has to be 1D and length of `win_length`")
    taper = _padded_window(window, win, n_fft, input.dtype, input.device)
    if taper is None:
        taper = creation.ones(n_fft, dtype=input.dtype, device=input.device)
    if return_complex:
        raise RuntimeError("Cannot have onesided output if window or input is complex"
                           if one_sided else f"istft: return_complex=True returns a complex "
                           f"signal, and clgrad has no complex dtype")
    _check_fft_dtype("istft", input.dtype)
    spectra = input if input.ndim == 4 else input.unsqueeze(0)
    batch = spectra.shape[0]
    pairs = spectra.transpose(1, 2).reshape(batch, frame_count, 2 * fft_size)
    scale = n_fft ** -0.5 if normalized else 1.0 / n_fft
    frames = pairs @ _basis(n_fft, fft_size, scale, True, input.dtype, input.device)
    full_length = n_fft + hop * (frame_count - 1)
    signal = _overlap_add(frames * taper, hop, full_length)
    envelope = _overlap_add((taper * taper).expand(1, frame_count, n_fft), hop, full_length)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else -(n_fft // 2) if center else full_length
    signal, envelope = signal[:, start:end], envelope[:, start:end]
    if bool((envelope.abs().min() < 1e-11).item()):
        raise error("window overlap add min: 1")
    signal = signal / envelope
    if input.ndim == 3:
        signal = signal.squeeze(0)
    if end > full_length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.", UserWarning, stacklevel=2)
        signal = pad(signal, [0, end - full_length])
    return signal


FUNCTIONS = {"stft": stft, "istft": istft}
