"""KL(p || q) for the low-rank multivariate normal, against itself and the full-rank one:
PyTorch's expansions of trace(q_cov^-1 p_cov) through the capacitance matrices."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.triangular import solve_triangular
from .kl import batch_trace_xxt, register_kl
from .lowrank_multivariate_normal import LowRankMultivariateNormal, batch_lowrank_mahalanobis
from .multivariate_normal import MultivariateNormal, batch_mahalanobis


def _require_same_event_shape(p, q, names: str) -> None:
    if p.event_shape != q.event_shape:
        raise ValueError(f"KL-divergence between two {names} with different event shapes "
                         "cannot be computed")


def _mahalanobis_to(q, p):
    """The squared Mahalanobis distance of p's mean from q's, under q's covariance."""
    return batch_lowrank_mahalanobis(q._unbroadcasted_cov_factor, q._unbroadcasted_cov_diag,
                                     q.loc - p.loc, q._capacitance_tril)


def _woodbury_factor(q):
    """A with q_cov^-1 = q_D^-1 - A^T A (Woodbury's identity)."""
    qWt_qDinv = q._unbroadcasted_cov_factor.mT / q._unbroadcasted_cov_diag.unsqueeze(-2)
    return solve_triangular(q._capacitance_tril, qWt_qDinv, upper=False)


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrankmultivariatenormal_lowrankmultivariatenormal(p, q):
    _require_same_event_shape(p, q, "Low Rank Multivariate Normals")
    term1 = q._log_det() - p._log_det()
    term3 = _mahalanobis_to(q, p)
    # q_cov^-1 p_cov = (q_D^-1 - A^T A) (p_D + p_W p_W^T)
    A = _woodbury_factor(q)
    term21 = (p._unbroadcasted_cov_diag / q._unbroadcasted_cov_diag).sum(-1)
    term22 = batch_trace_xxt(p._unbroadcasted_cov_factor
                             * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term23 = batch_trace_xxt(A * p._unbroadcasted_cov_diag.sqrt().unsqueeze(-2))
    term24 = batch_trace_xxt(A.matmul(p._unbroadcasted_cov_factor))
    term2 = term21 + term22 - term23 - term24
    return 0.5 * (term1 + term2 + term3 - p.event_shape[0])


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
def _kl_multivariatenormal_lowrankmultivariatenormal(p, q):
    _require_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    term1 = q._log_det() - 2 * p._half_log_det()
    term3 = _mahalanobis_to(q, p)
    # q_cov^-1 p_cov = (q_D^-1 - A^T A) p_L p_L^T
    A = _woodbury_factor(q)
    term21 = batch_trace_xxt(p._unbroadcasted_scale_tril
                             * q._unbroadcasted_cov_diag.rsqrt().unsqueeze(-1))
    term22 = batch_trace_xxt(A.matmul(p._unbroadcasted_scale_tril))
    return 0.5 * (term1 + term21 - term22 + term3 - p.event_shape[0])


@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_lowrankmultivariatenormal_multivariatenormal(p, q):
    _require_same_event_shape(p, q, "(Low Rank) Multivariate Normals")
    term1 = 2 * q._half_log_det() - p._log_det()
    term3 = batch_mahalanobis(q._unbroadcasted_scale_tril, q.loc - p.loc)
    # q_cov^-1 p_cov = (q_L q_L^T)^-1 (p_W p_W^T + p_D)
    batch_shape = tuple(ops.broadcast_shapes(q._unbroadcasted_scale_tril.shape[:-2],
                                             p._unbroadcasted_cov_factor.shape[:-2]))
    n = p.event_shape[0]
    q_scale_tril = q._unbroadcasted_scale_tril.expand(batch_shape + (n, n))
    p_cov_factor = p._unbroadcasted_cov_factor.expand(batch_shape
                                                       + (n, p.cov_factor.size(-1)))
    p_cov_diag = p._unbroadcasted_cov_diag.sqrt().diag_embed().expand(batch_shape + (n, n))
    term21 = batch_trace_xxt(solve_triangular(q_scale_tril, p_cov_factor, upper=False))
    term22 = batch_trace_xxt(solve_triangular(q_scale_tril, p_cov_diag, upper=False))
    return 0.5 * (term1 + term21 + term22 + term3 - p.event_shape[0])
