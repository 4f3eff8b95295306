"""unfold and fold, as torch.nn.functional's: sliding blocks of an image as columns (im2col,
a view of the padded input), and columns summed back into the blocks they came from (col2im)."""
from __future__ import annotations

from ..frontend.backward import record
from . import convolution as conv


def _block_args(kernel_size, dilation, padding, stride):
    return (conv.pair(kernel_size, "kernel_size"), conv.pair(dilation, "dilation"),
            conv.pair(padding, "padding"), conv.pair(stride, "stride"))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C, H, W) -> (N, C kh kw, L): each sliding block as a column (im2col), a view of
    the padded input."""
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or any(s == 0 for s in input.shape[-3:]):
        raise RuntimeError(f"unfold: Expected 3D or 4D (batch mode) tensor with possibly 0 "
                           f"batch size and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    unbatched = input.ndim == 3
    x = input.node.reshape((1,) + input.shape) if unbatched else input.node
    for a in range(2):
        conv.out_size(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a], "unfold")
    win = conv.windows(conv._pad_spatial(x, padding), kernel, stride, dilation)
    n, c, ho, kh, wo, kw = win.shape
    cols = win.permute((0, 1, 3, 5, 2, 4)).reshape((n, c * kh * kw, ho * wo))
    return record("unfold", cols.reshape(cols.shape[1:]) if unbatched else cols, input.device,
                  [input])


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """(N, C kh kw, L) -> (N, C, H, W): the columns summed back into the blocks they came
    from (col2im, unfold's adjoint)."""
    kernel, dilation, padding, stride = _block_args(kernel_size, dilation, padding, stride)
    h, w = conv.pair(output_size, "output_size")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"fold: Expected 2D or 3D (batch mode) tensor for input, but got: "
                           f"{list(input.shape)}")
    unbatched = input.ndim == 2
    x = input.node.reshape((1,) + input.shape) if unbatched else input.node
    n, ckk, length = x.shape
    kh, kw = kernel
    if ckk % (kh * kw):
        raise RuntimeError(f"fold: Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={ckk} and "
                           f"kernel_size={kernel}")
    ho, wo = (conv.out_size(size, k, s, d, p, "fold") for size, k, s, d, p in
              zip((h, w), kernel, stride, dilation, padding))
    if ho * wo != length:
        raise RuntimeError(f"fold: Given output_size={(h, w)}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, stride={stride}, expected "
                           f"size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {ho} * {wo} = {ho * wo}, but got input.size(2)="
                           f"{length}.")
    c = ckk // (kh * kw)
    blocks = x.reshape((n, c, kh, kw, ho, wo))
    hp, wp = h + 2 * padding[0], w + 2 * padding[1]
    total = None
    for i in range(kh):
        for j in range(kw):
            piece = blocks.shrink(((0, n), (0, c), (i, i + 1), (j, j + 1), (0, ho), (0, wo)))
            piece = piece.reshape((n, c, ho, wo))
            piece = conv._dilate(conv._dilate(piece, 2, stride[0]), 3, stride[1])
            top, left = i * dilation[0], j * dilation[1]
            piece = piece.pad(((0, 0), (0, 0), (top, hp - top - piece.shape[2]),
                               (left, wp - left - piece.shape[3])))
            total = piece if total is None else total + piece
    out = total.shrink(((0, n), (0, c), (padding[0], padding[0] + h),
                        (padding[1], padding[1] + w)))
    return record("fold", out.reshape(out.shape[1:]) if unbatched else out, input.device,
                  [input])


__all__ = ["unfold", "fold"]
