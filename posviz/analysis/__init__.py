"""What posviz computes from a loaded model: numpy and torch in, numpy out, no figures.

Similarity and position matrices (:mod:`~posviz.analysis.similarity`), projections
(:mod:`~posviz.analysis.projection`), the input representation
(:mod:`~posviz.analysis.input_representation`), attention patterns
(:mod:`~posviz.analysis.attention`), Wang et al.'s properties (:mod:`~posviz.analysis.properties`),
Chen et al.'s scores (:mod:`~posviz.analysis.locality`), identical-word attention
(:mod:`~posviz.analysis.identical_words`), the probes (:mod:`~posviz.analysis.probes`,
:mod:`~posviz.analysis.layer_probe`) and word order (:mod:`~posviz.analysis.permutations`,
:mod:`~posviz.analysis.equivariance`, :mod:`~posviz.analysis.word_order`).
"""
