"""attnbench's attention library: pure JAX functions, one registry.

    import attention
    mech = attention.get("softmax", dropout_rate=0.1)
    params = mech.init(key, num_heads=8, head_dim=64)
    out = mech.apply(params, q, k, v, mask=mask, key=key, train=True)

Shapes follow `jax.nn.dot_product_attention`: q `[B, N, H, Dk]`, k `[B, M, H, Dk]`,
v `[B, M, H, Dv]` -> `[B, N, H, Dv]`. Masks are boolean, True = attend.
"""

# Importing a family module registers its mechanisms.
from attention import (  # noqa: F401
    chunked,
    cosformer,
    cost,
    efficient,
    gfsa,
    grf,
    grf_asym,
    linear,
    linformer,
    local,
    nystrom,
    performer,
    reformer,
    samsa,
    sinkformer,
    sinkhorn,
    sliceformer,
    softmax,
    sparse,
    ssa,
    synthesizer,
    talking_heads,
    toeplitz,
    yoso,
)
from attention.registry import (
    AttentionOutputError,
    DuplicateAttentionError,
    Mechanism,
    RegistrationError,
    UnknownAttentionError,
    check,
    defaults,
    flops_formula,
    get,
    names,
    parse,
    register,
)

__all__ = [
    "AttentionOutputError",
    "DuplicateAttentionError",
    "Mechanism",
    "RegistrationError",
    "UnknownAttentionError",
    "check",
    "defaults",
    "flops_formula",
    "get",
    "names",
    "parse",
    "register",
]
