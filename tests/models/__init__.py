"""The models the GPU tests export and the benchmarks time, built from random weights
with a fixed seed (nothing is downloaded); each module is one family of programs:

    zoo_models      the model zoo: ResNet-50, MobileNetV3, ViT, Llama, T5, training steps
    breaks_models   programs that read values back to the host half-way
    buckets_models  programs exported with shape buckets
    decode_models   a Llama-style decode step with a static KV cache
    tp_models       tensor-parallel programs, one process per rank
    e2e_models      the end-to-end tests' models (tests/gpu/e2e.py)

Imported by name (`from tests.models import zoo_models`) with the repository's root on
the path (tests/__init__.py).  Importing the package imports none of them: each needs
torch."""
