"""Response-length prediction for PARS-style scheduling.

PARS (Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank",
arXiv:2510.03243) learns to *rank* prompts by response length from pairs, with a margin ranking
loss; a scheduler serves lower scores first.

``pairs``      :func:`make_pairs` (delta = 0.2 filter, seeded sampling), :func:`margin_ranking_loss`
``cues``       :class:`LengthCues`, the default backbone: instruction cues, hashed word and character
               n-grams (numpy/scipy only, no download)
``features``   :class:`HashedNgrams`, word n-grams only (PARS's pairwise ranker's backbone)
``encoder``    optional transformer-encoder backbone (extra ``[encoder]``; imports torch)
``ranker``     :class:`LengthRanker` (fit by ``"cues"``, the default, or PARS's ``"pairwise"``; score,
               save/load as ``.npz``)
``baselines``  :func:`fit_baseline` (pointwise / bucket / listwise losses), :func:`tau_over_splits`
``evaluate``   :func:`kendall_tau`, :func:`evaluate_ranker`, :func:`cross_model`
``data``       :func:`load_lengths` (AlpacaEval, GSM8K tables)
``synthetic``  :func:`scores_with_tau`: scores of a chosen quality for traces without text

The default path never imports torch.
"""
from .baselines import BASELINES, fit_baseline, tau_over_splits
from .cues import LengthCues
from .data import BUILTIN_LENGTHS, LengthDataset, load_lengths
from .evaluate import CrossModelResult, RankingEvaluation, cross_model, evaluate_ranker, kendall_tau
from .features import HashedNgrams
from .pairs import PairSet, make_pairs, margin_ranking_loss, pair_kept
from .ranker import DEFAULT_METHOD, RANKER_METHODS, LengthRanker
from .synthetic import NoisyOracle, noise_for_tau, scores_with_tau, sigma_for_tau

__all__ = ["make_pairs", "pair_kept", "PairSet", "margin_ranking_loss", "HashedNgrams", "LengthCues", "LengthRanker",
           "RANKER_METHODS", "DEFAULT_METHOD",
           "kendall_tau", "evaluate_ranker", "RankingEvaluation", "cross_model", "CrossModelResult",
           "load_lengths", "LengthDataset", "BUILTIN_LENGTHS", "scores_with_tau", "noise_for_tau", "NoisyOracle",
           "sigma_for_tau", "BASELINES", "fit_baseline", "tau_over_splits"]
