"""``cwm bench OUT/ [--runs N]``: median latency of a compiled model on random inputs."""
from __future__ import annotations

import argparse
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", help="a folder written by `cwm compile` (CompiledModel.export)")
    parser.add_argument("--runs", type=int, default=20, help="timed repeats (default 20)")
    parser.add_argument("--number", type=int, default=10, help="calls averaged per repeat (default 10)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs")


def main(argv) -> int:
    parser = argparse.ArgumentParser(prog="python -m cwm bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    import cwm.compile as cc
    from cwm.compile.cli import table

    if args.runs < 1 or args.number < 1:
        parser.error("--runs and --number must be >= 1")
    try:
        model = cc.load(args.model_dir)
    except cc.ArtifactError as error:
        print(f"cwm bench: error: {error}", file=sys.stderr)
        return 2
    stats = model.benchmark(*model.example_inputs(args.seed), runs=args.runs, number=args.number)
    report = model.report
    rows = [("model", args.model_dir), ("target", model.target.kind.name),
            ("inputs", ", ".join(str(s) for s in model.inputs)),
            ("median latency", f"{stats['median_us']:.1f} us"),
            ("min / max", f"{stats['min_us']:.1f} / {stats['max_us']:.1f} us"),
            ("runs x calls", f"{stats['runs']} x {stats['number']}")]
    if report.get("latency_before_us") is not None:
        rows.append(("at compile: before / after tuning",
                     f"{report['latency_before_us']:.1f} / {report['latency_after_us']:.1f} us"))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
