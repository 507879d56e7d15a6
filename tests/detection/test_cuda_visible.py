from __future__ import annotations

import pytest

from torchenv.detection._cuda_visible import parse_cuda_visible_devices
from torchenv.detection.profile import Gpu

U0 = "GPU-8932f937-0000-0000-0000-000000000000"
U1 = "GPU-8932aaaa-0000-0000-0000-000000000001"
U2 = "GPU-11112222-0000-0000-0000-000000000002"
GPUS = (Gpu(0, "NVIDIA A100", "8.0", uuid=U0), Gpu(1, "NVIDIA A100", "8.0", uuid=U1),
        Gpu(2, "NVIDIA A100", "8.0", uuid=U2, mig_mode=True))


@pytest.mark.parametrize(
    ("value", "visible", "note"),
    [
        (None, None, None),
        ("", (), "torch will see no GPU"),
        ("-1", (), "negative"),
        ("0,1", (0, 1), None),
        ("2,0", (2, 0), None),
        ("1,7,0", (1,), "there is no GPU 7"),
        ("1,foo,0", (1,), "neither an index nor"),
        ("0,0", (0,), "listed twice"),
        ("GPU-11112222", (2,), None),
        (U1, (1,), None),
        ("GPU-8932", (), "matches several GPUs"),
        ("GPU-ffff", (), "matches no GPU UUID"),
        (f"MIG-{U2}/1/0", (2,), None),
        ("MIG-00000000-0000-0000-0000-000000000003", (2,), None),
        (" 0 , 1 ", (0, 1), None),
    ],
    ids=["unset", "empty", "minus-one", "indices", "reordered", "out-of-range", "invalid",
         "duplicate", "uuid-prefix", "uuid", "ambiguous-prefix", "unknown-uuid", "mig-old",
         "mig-new", "spaces"],
)
def test_cuda_visible_devices(value: str | None, visible: tuple[int, ...] | None,
                              note: str | None) -> None:
    got, notes = parse_cuda_visible_devices(value, GPUS)
    assert got == visible
    if note is None:
        assert notes == ()
    else:
        assert any(note in n for n in notes), notes


def test_unknown_gpus_take_indices_at_their_word() -> None:
    assert parse_cuda_visible_devices("3,5", ()) == ((3, 5), ())


def test_index_order_warning_on_mixed_box() -> None:
    mixed = (Gpu(0, "NVIDIA GeForce GTX 1080", "6.1"), Gpu(1, "NVIDIA GeForce RTX 3090", "8.6"))
    _, notes = parse_cuda_visible_devices("0", mixed, {})
    assert any("CUDA_DEVICE_ORDER=PCI_BUS_ID" in n for n in notes)
    _, notes = parse_cuda_visible_devices("0", mixed, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert notes == ()
