"""State encoder: tokenizer, windowed pooling, files, determinism, augmentation (tiny configs)."""
from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

TINY = dict(hidden=32, layers=1, heads=2, intermediate=64, window=34, stride=24, out_dim=16,
            batch_windows=64)


@pytest.fixture(scope="module")
def texts():
    from cwm import workloads
    from cwm.model.augment import tile_outer

    mods = [workloads.get(n) for n in sorted(workloads.WORKLOADS)]
    return [m.script() for m in mods] + [tile_outer(m, 16).script() for m in mods[:3]]


@pytest.fixture(scope="module")
def tok(texts):
    from cwm.model.tokenizer import TirTokenizer

    return TirTokenizer.train(texts, vocab_size=400)


@pytest.fixture(scope="module")
def enc(tok):
    from cwm.model.encoder import EncoderConfig, StateEncoder

    torch.manual_seed(0)
    return StateEncoder(tok, EncoderConfig(**TINY)).eval()


def test_tokenizer_roundtrip_determinism_files(texts, tok, tmp_path):
    from cwm.model.tokenizer import TirTokenizer, normalize_tir

    norm = normalize_tir(texts[0])
    assert "# from tvm.script" not in norm and "\n  for " in norm  # one space per depth level
    assert all(line.strip() and "  " not in line.lstrip(" ") for line in norm.splitlines())
    ids = tok.encode_batch(texts)
    assert all(tok.bos_id not in x and tok.pad_id not in x for x in ids)
    assert [tok.decode(x) for x in ids] == [normalize_tir(t) for t in texts]
    assert TirTokenizer.train(texts, vocab_size=400).tokenizer.to_str() == tok.tokenizer.to_str()
    tok.save(tmp_path / "t")
    assert TirTokenizer.load(tmp_path / "t").encode_batch(texts) == ids
    assert tok.vocab_size <= 400 and tok.tokenizer.token_to_id("<s>") == 0


def test_windows_match_manual_pooling(texts, tok, enc):
    from cwm.model.encoder import window_starts

    text = max(texts, key=len)
    ids = tok.encode(text)
    content = TINY["window"] - 2
    starts = window_starts(len(ids), content, TINY["stride"])
    assert len(starts) > 2 and starts[-1] + content == len(ids)
    acc = torch.zeros(len(ids), TINY["hidden"])
    cover = torch.zeros(len(ids))
    with torch.no_grad():
        for s in starts:  # one window at a time: no padding anywhere
            x = torch.tensor([[tok.bos_id] + ids[s:s + content] + [tok.eos_id]])
            h = enc.roberta(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0, 1:-1]
            acc[s:s + content] += h
            cover[s:s + content] += 1
        assert bool((cover >= 1).all())
        z = (acc / cover[:, None]).mean(0)  # each token once, as the mean of its windows
        z = torch.nn.functional.normalize(enc.proj(z), dim=-1)
    assert torch.allclose(enc.encode([text])[0], z, atol=1e-5)


def test_padding_excluded_from_pooling(texts, tok, enc):
    texts = texts[:3] + ["for i in T.grid(4):\n    x = 1", ""] + texts[3:]
    lengths = {len(w[0]) for ids in tok.encode_batch(texts) for w in enc.windows(ids)}
    assert len(lengths) >= 3  # short windows really get padded in the shared chunk
    batched = enc.encode(texts)
    single = torch.cat([enc.encode([t]) for t in texts])
    assert batched.shape == (len(texts), TINY["out_dim"])
    assert torch.allclose(batched, single, atol=1e-5), (batched - single).abs().max()
    assert torch.equal(enc.encode(texts), batched)  # eval mode: deterministic


def test_save_load_identical(texts, enc, tmp_path):
    from cwm.model.encoder import StateEncoder

    enc.save(tmp_path / "m")
    assert {p.name for p in (tmp_path / "m").iterdir()} >= {"encoder.json", "model.safetensors", "tokenizer"}
    again = StateEncoder.load(tmp_path / "m")
    assert torch.equal(again.encode(texts), enc.encode(texts))


def test_training_same_seed_same_weights(texts):
    from cwm import workloads
    from cwm.model.augment import tile_outer
    from cwm.model.contrastive import ContrastiveConfig, train_encoder
    from cwm.model.encoder import EncoderConfig

    groups = {}
    for name in ("matmul_256", "softmax_128x768", "layer_norm_128x768", "batch_matmul_12x128x128x64"):
        m = workloads.get(name)
        groups[name] = [m.script(), tile_outer(m, 16).script(), tile_outer(m, 8).script()]
    cfg = ContrastiveConfig(seed=3, vocab_size=300, encoder=EncoderConfig(**TINY), groups_per_batch=4,
                            max_steps=3, time_budget_s=None, warmup_steps=1, train_max_windows=2,
                            eval_before=False, eval_max_per_group=3, log_every=0)
    a, ma = train_encoder(groups, cfg)
    b, mb = train_encoder(groups, cfg)
    assert ma["steps"] == 3 and ma["loss"] == mb["loss"]
    sa, sb = a.state_dict(), b.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    for key in ("retrieval_acc", "cos_same", "cos_diff", "rename_cos", "matmul_1024_vs_1023_cos",
                "matmul_1024_vs_1023_tiled_other_max"):
        assert key in ma["after"]


def test_rename_keeps_the_program(trace_records, workload_mods):
    import tvm
    import tvm_ffi

    from cwm.model.augment import defined_names, rename_identifiers
    from cwm.replay import action_states

    seen = set()
    for rec in trace_records:
        if rec["workload"] in seen:
            continue
        seen.add(rec["workload"])
        final = action_states(workload_mods[rec["workload"]], rec["trace"])[-1]
        text = final.script()
        renamed = rename_identifiers(text, seed=7)
        names, blocks = defined_names(text)
        new_names, new_blocks = defined_names(renamed)
        assert len(new_names) == len(names) and not set(new_names) & set(names)
        assert len(new_blocks) == len(blocks) and not set(new_blocks) & set(blocks)
        assert renamed.count("T.") == text.count("T.")
        parsed = tvm.script.from_source(renamed)
        assert tvm_ffi.structural_equal(parsed, final)  # TVM ignores name hints
        assert parsed.script() == renamed
        loops_only = rename_identifiers(text, seed=1, rename_buffers=False, rename_blocks=False)
        assert tvm_ffi.structural_equal(tvm.script.from_source(loops_only), final)


def test_codebert_directory(tok, tmp_path):
    from transformers import RobertaConfig, RobertaModel

    from cwm.model.encoder import StateEncoder

    with pytest.raises(FileNotFoundError, match="CodeBERT directory"):
        StateEncoder.from_codebert(tmp_path / "missing")
    d = tmp_path / "fake_codebert"  # same layout as microsoft/codebert-base, tiny sizes
    cfg = RobertaConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1,
                        num_attention_heads=2, intermediate_size=32, max_position_embeddings=34,
                        pad_token_id=tok.pad_id)
    torch.manual_seed(0)
    RobertaModel(cfg).save_pretrained(d)
    tok.tokenizer.model.save(str(d))  # vocab.json + merges.txt
    enc = StateEncoder.from_codebert(d)
    assert enc.config.window == 32 and enc.dim == 16
    z = enc.encode(["for i in T.grid(4):\n    x = 1"] * 2)
    assert z.shape == (2, 16) and torch.equal(z[0], z[1])


def test_import_cwm_model_is_light():
    code = ("import sys, cwm, cwm.model\n"
            "assert 'torch' not in sys.modules and 'transformers' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)
