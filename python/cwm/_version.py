"""Package version and the native-core API version the Python side expects.

Bump NATIVE_API_VERSION together with CWM_NATIVE_API_VERSION in src/version.h whenever the
arrays or functions crossing the native boundary change.
"""
__version__ = "0.1.0"
NATIVE_API_VERSION = 10  # 10: featurize_batch reads each trace's tiled nest in its parse (nests=True), TaskFacts parsed once; 9: tile_footprint; 8: TransitionCore takes translation_bound; 7: SequenceCore (the sequence head); 6: Forest (the ranker's trees); 5: TransitionCore takes state_dependent (and state_w)
