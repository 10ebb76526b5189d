"""The PyTorch side knows exactly the binary's scorers: scripts/torch_twin.py's SCORERS and
scripts/peer_torch.py's (which come from the twin) against `attnbench list --json`, module by
module (name, in, out, bias, creation order), so a new scorer cannot go unchecked against
PyTorch. The binary is $ATTNBENCH_BINARY (CTest sets it), else <repo>/build/attnbench."""

import os
import sys

import pytest

SCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts")
sys.path.insert(0, SCRIPTS)
import attnbench_lists  # noqa: E402
import peer_torch  # noqa: E402
import torch_twin  # noqa: E402

# Distinct sizes, so that a module's in and out name the right field.
SIZES = {"batch": 3, "src_len": 7, "enc_dim": 10, "dec_dim": 6, "attn_dim": 5}


def binary_scorers():
    return {s["name"]: s for s in attnbench_lists.lists()["scorers"]}


def test_torch_twin_has_exactly_the_binarys_scorers_in_its_order():
    assert list(torch_twin.SCORERS) == attnbench_lists.scorer_names()


def test_peer_torch_accepts_exactly_the_binarys_scorers():
    names = attnbench_lists.scorer_names()
    assert peer_torch.scorer_list("all") == names
    for name in names:
        assert peer_torch.scorer_list(name) == [name]
    with pytest.raises(peer_torch.InputError):
        peer_torch.scorer_list("not_a_scorer")


@pytest.mark.parametrize("name", attnbench_lists.scorer_names())
def test_twin_modules_are_the_binarys_in_creation_order(name):
    module = torch_twin.make_scorer(name, SIZES["enc_dim"], SIZES["dec_dim"], SIZES["attn_dim"], SIZES["src_len"])
    size = lambda text: int(text) if text.isdigit() else SIZES[text]  # noqa: E731
    expected = []
    for m in binary_scorers()[name]["modules"]:
        assert m["kind"] == "Linear"
        expected.append((f"{m['name']}.weight", (size(m["out"]), size(m["in"]))))
        if m["bias"]:
            expected.append((f"{m['name']}.bias", (size(m["out"]),)))
    got = [(n, tuple(p.shape)) for n, p in module.named_parameters()]
    assert got == expected


@pytest.mark.parametrize("name", attnbench_lists.scorer_names())
def test_peer_has_a_cost_for_the_scorers_own_stages(name):
    p = peer_torch.Point(scorers=[name], src_len=SIZES["src_len"], enc_dim=SIZES["enc_dim"],
                         dec_dim=SIZES["dec_dim"], attn_dim=SIZES["attn_dim"])
    for stage in ("keys", "score"):
        cost = peer_torch.stage_cost(p, name, stage)
        assert cost.flops >= 0 and cost.bytes >= 0
    assert peer_torch.stage_cost(p, name, "score").flops > 0


def test_peer_stage_works_are_binary_stages():
    assert set(peer_torch.STAGE_WORKS) <= set(attnbench_lists.stage_names())
    assert peer_torch.STAGES == attnbench_lists.stage_names()
