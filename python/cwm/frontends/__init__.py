"""Model frontends: small reference models exported to ONNX for demos and tests.

Each module builds a model with fixed random weights and exports it with
``torch.onnx.export``; torch is imported by the functions that need it.
"""
