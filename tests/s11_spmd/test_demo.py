"""`make demo`'s stage 11 section runs, and says what the compiler was told and what came back."""

from __future__ import annotations

from shared.demos import s11_spmd


def test_the_demo_shows_the_annotations_the_layout_and_the_psum(capsys):
    s11_spmd.main()
    out = capsys.readouterr().out
    assert "Mesh('data': 4, 'model': 2, axis_types=(Auto, Auto))" in out
    assert '%arg0: tensor<16x6xf32>  #sdy.sharding<@mesh, [{"data"}, {}]>' in out
    assert '%arg1: tensor<6x4xf32>  #sdy.sharding<@mesh, [{}, {"model"}]>' in out
    assert "the partitioner chose P('data', 'model') for the output" in out
    assert "blocks: [(4, 2)] on 8 devices; equal to numpy: True" in out
    assert "shard_map with psum over 'data': 8.20137 (numpy: 8.20137)" in out
