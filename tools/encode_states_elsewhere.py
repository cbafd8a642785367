"""Fill ``cwm eval``'s state cache with encodings made on another machine (a GPU, say).

``cwm eval``'s ``static_final`` row encodes the real final program of every training and test
candidate: 35,665 programs with both breadth roots, 94 min on 2 cores (decision 78;
:mod:`cwm.model.state_cache`). The encoder runs in float64 and rounds to float32 once
(:meth:`cwm.model.encoder.StateEncoder.encode`), so a GPU gives the same float32 states as the
CPU, except with negligible odds; ``encode`` checks that on the first texts before it writes
anything (``--check``). Three steps:

    # here: the texts the cache lacks, named by the cache files they will fill
    python tools/encode_states_elsewhere.py export --data data/dataset --extra-data data/dataset_breadth \\
        --model python/cwm/default_model --out work_dirs/final_texts.jsonl.gz --check-states 64
    # there: needs torch, transformers, tokenizers, safetensors and python/ of this repository
    PYTHONPATH=python python3 tools/encode_states_elsewhere.py encode work_dirs/final_texts.jsonl.gz \\
        --model python/cwm/default_model --out states.npz
    # here again
    python tools/encode_states_elsewhere.py import states.npz

The encode step needs neither TVM nor the native core. The import step checks every array's
row count against the bundle and writes each cache file whole or not at all.
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np


def export(data: str, extra: list[str], model_dir: str, out: Path, cache_dir: Path, which: str,
           check_states: int) -> None:
    from cwm.model.evaluate import evaluation_tasks, latencies
    from cwm.model.fingerprint import encoder_fingerprint
    from cwm.model.state_cache import cache_path, read_cached, texts_of

    loader, train_keys, test_keys = evaluation_tasks(data, extra)
    fingerprint = encoder_fingerprint(model_dir)
    keys = list(train_keys) + list(test_keys)
    header = {"encoder_fingerprint": fingerprint, "which": which, "check": None}
    entries, cached, programs = [], 0, 0
    for key in keys:
        trajs = loader.trajectories(key)
        if latencies(trajs) is None:  # a task cwm eval does not rank
            continue
        texts = texts_of(trajs, which)
        path = cache_path(cache_dir, key, fingerprint, which, texts)
        if read_cached(path, len(texts)) is not None:
            cached += 1
            continue
        entries.append({"file": path.name, "texts": texts})
        programs += len(texts)
    if check_states and entries:
        from cwm.model.encoder import StateEncoder

        texts = entries[0]["texts"][:check_states]
        states = StateEncoder.load(Path(model_dir) / "encoder").encode(texts).numpy()
        header["check"] = {"file": entries[0]["file"], "rows": len(texts), "states": states.tolist()}
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as f:
        f.write(json.dumps(header) + "\n")
        for entry in entries:
            f.write(json.dumps(entry) + "\n")
    print(f"{len(entries)} tasks, {programs} programs to encode ({cached} tasks already cached) -> {out}")


def _read_bundle(path: Path) -> tuple[dict, list[dict]]:
    with gzip.open(path, "rt") as f:
        header = json.loads(f.readline())
        return header, [json.loads(line) for line in f]


def encode(bundle: Path, model_dir: str, out: Path, device: str | None, batch_size: int,
           batch_windows: int | None) -> None:
    import torch

    from cwm.model.encoder import StateEncoder
    from cwm.model.fingerprint import encoder_fingerprint

    header, entries = _read_bundle(bundle)
    if encoder_fingerprint(model_dir) != header["encoder_fingerprint"]:
        raise SystemExit(f"{model_dir}'s encoder is not the one the bundle was exported for "
                         f"({encoder_fingerprint(model_dir)} != {header['encoder_fingerprint']})")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    encoder = StateEncoder.load(Path(model_dir) / "encoder").to(device)
    if batch_windows:  # windows per forward pass: padding is masked, so the states do not change
        encoder.config.batch_windows = batch_windows
    check = header.get("check")
    if check:
        entry = next(e for e in entries if e["file"] == check["file"])
        got = encoder.encode(entry["texts"][:check["rows"]], batch_size=batch_size).cpu().numpy()
        want = np.asarray(check["states"], np.float32)
        differ = int((got != want).any(axis=1).sum())
        print(f"check on {device}: {differ} of {len(want)} states differ from the exporting host's, "
              f"largest difference {float(np.abs(got - want).max()):.3g}")
        if differ > len(want) // 8:  # float64 rounding makes a rare last-bit flip possible, not many
            raise SystemExit("the states differ from the exporting host's: not written")
    start, states = time.perf_counter(), {}
    for i, entry in enumerate(entries):
        states[entry["file"]] = encoder.encode(entry["texts"], batch_size=batch_size).cpu().numpy()
        if i % 20 == 0:
            print(f"{i + 1}/{len(entries)} tasks, {time.perf_counter() - start:.0f} s", flush=True)
    np.savez_compressed(out, **states)
    print(f"{sum(len(s) for s in states.values())} programs in {time.perf_counter() - start:.0f} s -> {out}")


def import_states(archive: Path, cache_dir: Path) -> None:
    from cwm.model.state_cache import write_cached

    with np.load(archive, allow_pickle=False) as states:
        for name in states.files:
            if "/" in name or not name.endswith(".npy"):
                raise SystemExit(f"{archive}: {name!r} is not a cache file name")
            write_cached(cache_dir / name, states[name].astype(np.float32))
        print(f"{len(states.files)} cache files -> {cache_dir}")


def main(argv=None) -> None:
    from cwm.model.state_cache import DEFAULT_DIR

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("export", help="write the texts the cache lacks to a bundle")
    p.add_argument("--data", default="data/dataset")
    p.add_argument("--extra-data", action="append", default=[])
    p.add_argument("--model", default="python/cwm/default_model")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--state-cache", type=Path, default=DEFAULT_DIR)
    p.add_argument("--which", choices=("final", "initial"), default="final")
    p.add_argument("--check-states", type=int, default=64,
                   help="encode this many texts here, so the other machine can compare its states (0: none)")
    p = sub.add_parser("encode", help="encode a bundle's texts (no TVM, no native core)")
    p.add_argument("bundle", type=Path)
    p.add_argument("--model", default="python/cwm/default_model")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--device", default=None, help="torch device (default: cuda when available)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--batch-windows", type=int, default=None)
    p = sub.add_parser("import", help="write an encoded archive's states into the cache")
    p.add_argument("archive", type=Path)
    p.add_argument("--state-cache", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    if args.step == "export":
        export(args.data, args.extra_data, args.model, args.out, args.state_cache, args.which, args.check_states)
    elif args.step == "encode":
        encode(args.bundle, args.model, args.out, args.device, args.batch_size, args.batch_windows)
    else:
        import_states(args.archive, args.state_cache)


if __name__ == "__main__":
    main()
