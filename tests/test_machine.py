"""The machine description names the CPU precisely enough to keep two hosts' runs apart."""
from cwm.machine import cpu_identity, describe

ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx2 avx512f avx512_bf16

processor\t: 1
cpu family\t: 99
model name\t: something else
"""
ZEN5 = ZEN4.replace("cpu family\t: 25", "cpu family\t: 26").replace("model\t\t: 17", "model\t\t: 2")
AVX2_ONLY = ZEN4.replace(" avx512f avx512_bf16", "")


def test_same_model_name_different_generations_differ():
    # both report "AMD EPYC": the family and model keep them apart (decision 63)
    assert cpu_identity(ZEN4) == "AMD EPYC (family 25 model 17, AVX-512)"
    assert cpu_identity(ZEN5) == "AMD EPYC (family 26 model 2, AVX-512)"
    assert cpu_identity(AVX2_ONLY) == "AMD EPYC (family 25 model 17, AVX2)"


def test_reads_the_first_processor_only():
    assert "99" not in cpu_identity(ZEN4)


def test_missing_fields():
    assert cpu_identity("") == ""
    assert cpu_identity("model name\t: Some CPU\n") == "Some CPU"
    assert cpu_identity("model name\t: Some CPU\nflags\t: sse2 avx2\n") == "Some CPU (AVX2)"


def test_describe_names_cores_and_python():
    text = describe()
    assert " cores, Python " in text and text.split(",")[0]
