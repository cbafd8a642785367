"""Schedule actions: the vocabulary, canonical action sequences and their array form."""
from cwm.actions.canonical import Action, CanonicalTrace, Ident, TraceFormatError, canonicalize
from cwm.actions.featurize import INT_COLUMNS, NUM_NUMBERS, FeatureBatch, featurize_batch
from cwm.actions.vocab import KINDS, kind_id

__all__ = ["Action", "CanonicalTrace", "Ident", "TraceFormatError", "canonicalize", "INT_COLUMNS",
           "NUM_NUMBERS", "FeatureBatch", "featurize_batch", "KINDS", "kind_id"]
