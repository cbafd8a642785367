"""``cwm run OUT/ --input x.npy [--output y.npy]``: run a compiled model on NumPy inputs.

Inputs are ``.npy`` files, given in the model's input order (``--input x.npy``) or by name
(``--input x=x.npy``). Outputs go to ``--output`` (``.npy``; several outputs: one ``.npz``
with an array per output name), or are summarised on stdout.
"""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `cwm compile` (CompiledModel.export)")
    parser.add_argument("--input", action="append", default=[], metavar="[NAME=]FILE.npy",
                        help="an input array (repeatable; in input order, or NAME=FILE)")
    parser.add_argument("--output", default=None, help="write the output here (.npy, or .npz for several)")
    parser.add_argument("--random", action="store_true", help="use random inputs of the right shape instead")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    import os

    import numpy as np

    import cwm.compile as cc

    if args.output:  # checked before the model runs, not after
        folder = os.path.dirname(os.path.abspath(args.output))
        if not os.path.isdir(folder):
            print(f"cwm run: error: --output {args.output}: the folder {folder} does not exist", file=sys.stderr)
            return 2
        if os.path.isdir(args.output) or not os.access(folder, os.W_OK):
            why = "is a folder" if os.path.isdir(args.output) else f"cannot be written (no write access to {folder})"
            print(f"cwm run: error: --output {args.output} {why}", file=sys.stderr)
            return 2
    try:
        model = cc.load(args.model_dir)
        if args.random:
            positional, named = model.example_inputs(), {}
        else:
            positional, named = [], {}
            for item in args.input:
                name, sep, path = item.partition("=")
                if sep and not name.endswith(".npy"):
                    named[name] = np.load(path, allow_pickle=False)
                else:
                    positional.append(np.load(item, allow_pickle=False))
        result = model(*positional, **named)
    except (cc.ArtifactError, cc.InputError, OSError, ValueError) as error:
        print(f"cwm run: error: {error}", file=sys.stderr)
        return 2
    outputs = result if isinstance(result, tuple) else (result,)
    if args.output:
        try:
            if len(outputs) == 1 and not args.output.endswith(".npz"):
                np.save(args.output, outputs[0])
            else:
                np.savez(args.output, **{spec.name: out for spec, out in zip(model.outputs, outputs)})
        except OSError as error:
            print(f"cwm run: error: --output {args.output}: {error}", file=sys.stderr)
            return 2
    for spec, out in zip(model.outputs, outputs):
        flat = out.reshape(-1)
        head = ", ".join(f"{v:.6g}" for v in flat[:6]) + (", ..." if flat.size > 6 else "")
        print(f"{spec.name}: {out.dtype}{list(out.shape)} [{head}]")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
