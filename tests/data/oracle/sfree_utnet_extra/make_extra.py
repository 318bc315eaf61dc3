"""Extra UTNet vectors at configurations the shared set does not cover (transformer at level 0,
stride-2 down-sampling with relative logits and max-pool reduction, no positions with r = 3 in
eval mode, wider attention, decoder with relative logits).  Made with the shared generator's
machinery (reference modules, float32 re-check and tolerance rule) and seed 7:
    /usr/bin/python3 tests/data/oracle/sfree_utnet_extra/make_extra.py  (from the repository root,
    with the PyTorch reference generator gen_sfree_utnet.py, which is not part of this
    repository, in $LUMEN_ORACLE)
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORACLE = os.environ.get("LUMEN_ORACLE", "/work/shared/oracle")
sys.path.insert(0, ORACLE)
import gen_sfree_utnet as G  # noqa: E402

c = G.Cases(HERE, 7)
base = dict(in_chan=2, base_chan=2, num_classes=3, block_list="01234", num_blocks=[1, 1, 1, 1, 1],
            num_heads=[1, 2, 2, 2, 2], projection="interp", attn_drop=0.0, proj_drop=0.0, rel_pos=True,
            reduce_size=2, aux_loss=True)
c.add("extra_utnet_l0", "sfree_utnet.UTNet", base, {"x": (2, 2, 32, 64)}, whole=True)
c.add("extra_utnet_nopool_emb", "sfree_utnet.UTNet",
      dict(base, block_list="234", num_blocks=[1, 2, 1], num_heads=[2, 1, 2], maxpool=False,
           rel_pos_type="embedding", projection="maxpool", aux_loss=False), {"x": (2, 2, 32, 32)}, whole=True)
c.add("extra_utnet_norel_eval", "sfree_utnet.UTNet",
      dict(base, block_list="13", num_blocks=[1, 1, 1, 1], num_heads=[2, 2, 2, 2], rel_pos=False,
           reduce_size=3, aux_loss=False, mode="eval"), {"x": (1, 2, 48, 32)}, whole=True)
c.add("extra_la_big", "sfree_utnet.LinearAttention",
      {"dim": 12, "heads": 3, "dim_head": 5, "reduce_size": 3, "forward": {"return_attn": True}}, {"x": (2, 12, 9, 6)})
c.add("extra_la_dec_emb", "sfree_utnet.LinearAttentionDecoder",
      {"in_dim": 6, "out_dim": 4, "heads": 2, "dim_head": 3, "reduce_size": 2, "rel_pos_type": "embedding",
       "projection": "maxpool"}, {"q": (2, 4, 4, 6), "x": (2, 6, 3, 2)})
c.add("extra_down_nopool", "sfree_utnet.down_block_trans",
      {"in_ch": 3, "out_ch": 6, "num_block": 2, "heads": 3, "reduce_size": 2, "maxpool": False}, {"x": (2, 3, 8, 12)})
