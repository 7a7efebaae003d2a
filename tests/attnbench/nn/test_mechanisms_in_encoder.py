"""Every registered mechanism inside the shared encoder on the ListOps smoke config: the
parameter count is pinned. (Training steps of every mechanism in every LRA task, with finite,
falling losses: tests/lra/test_matrix.py.)"""

import jax
import pytest

import attention
from attnbench import config as config_lib
from attnbench import steps, tasks

# Parameter counts of the ListOps smoke model (1 layer, width 32, 4 heads, MLP 64) per
# mechanism. The shared part is 11,786 with softmax; a mechanism's own parameters (or the q/k
# projections it drops) show as the difference. Update deliberately, never to silence a failure.
PARAM_COUNTS = {
    "softmax": 11_786,
    "softmax_chunked": 11_786,
    "linear": 11_786,
    "performer": 11_786,  # its random features are a buffer, not parameters
    "local": 11_786,
    "ssa": 11_786,
    "linformer": 11_786 + 2 * 32 * 41,  # E and F: [proj_len 32, max_len 40 + CLS]
    # modulation f: [4 heads, max_walk_len 10 + 1]; the frozen walks are buffers
    "grf": 11_786 + 4 * 11,
    "grf_dense": 11_786 + 4 * 11,
    "grf_asym": 11_786 + 4 * 4,  # f: [4 heads, hops 3 + 1]
    "gfsa": 11_786 + 4,  # w_K per head
    # no parameters of their own
    # no parameters of their own (BigBird's random blocks are a buffer)
    "bigbird": 11_786,
    "bigbird_dense": 11_786,
    "longformer": 11_786,
    "longformer_dense": 11_786,
    "sparse_transformer": 11_786,
    "sparse_transformer_dense": 11_786,
    "cosformer": 11_786,
    "efficient_attention": 11_786,
    "sinkformer": 11_786,
    # no query/key projections; R: [4 heads, 41, 41]
    "synthesizer_random": 11_786 - 2 * 32 * 32 + 4 * 41 * 41,
    # no query/key projections; W1 [32, 4, 8], b1 [4, 8], W2 [8, 41] shared by heads, b2 [41]
    "synthesizer_dense": 11_786 - 2 * 32 * 32 + 32 * 4 * 8 + 4 * 8 + 8 * 41 + 41,
    "yoso": 11_786,
    "reformer": 11_786,  # its key projection is built and unused (shared QK)
    "nystromformer": 11_786 + 4 * 35,  # a depthwise 35-tap convolution on V per head
    # SortNet per head: 8 -> 8 (ReLU) -> 1 block (41 tokens in one block of 50)
    "sinkhorn": 11_786 + 4 * (8 * 8 + 8 + 8 * 1 + 1),
    "gfsa_exact": 11_786 + 4,
    "gfsa_linear": 11_786 + 4,
    # one scalar per offset of the 1 x 40 path (79) and head
    "toeplitz": 11_786 + 4 * 79,
    # two 4 x 4 head-mixing maps with biases
    "talking_heads": 11_786 + 2 * (4 * 4 + 4),
    # scorer MLP 32->32->32 (+RMSNorm) ->4 heads: 2276; 2k=16 support scores/keys/values: 1088
    "samsa": 11_786 + 2_276 + 1_088,
    # no query/key projections: 2 x 32 x 32 fewer
    **{
        name: 11_786 - 2 * 32 * 32
        for name in (
            "sliceformer",
            "sliceformer_ascend",
            "sliceformer_descend",
            "sliceformer_half",
            "sliceformer_max_exchange",
            "sliceformer_perm2",
            "sliceformer_perm4",
            "sliceformer_shuffle",
            "sliceformer_shuffle_independent",
            "sliceformer_graph",  # softmax(bias) V + Sort(V): no parameters of its own
        )
    },
}


def _init(name):
    config = config_lib.load(f"lra/listops.py:preset=smoke,attn={name},k=8")
    return steps.setup(tasks.get(config.task), config).state


@pytest.mark.parametrize("name", attention.names())
def test_mechanism_parameter_count_in_the_shared_encoder(name):
    state = _init(name)
    count = int(sum(x.size for x in jax.tree.leaves(state["params"])))
    assert name in PARAM_COUNTS, f"pin the parameter count of {name!r}: {count}"
    assert count == PARAM_COUNTS[name]


def test_mechanisms_without_qk_build_no_query_key_projections():
    names = [n for n in attention.names() if not attention.get(n).needs_qk]
    assert "sliceformer" in names
    for name in names:
        attn = _init(name)["params"]["encoder"]["encoder"]["blocks"][0]["attn"]
        assert "query" not in attn and "key" not in attn and "value" in attn
