"""Flags and TORCHENV_* variables are read with an ASCII grammar: digits that only look like
digits (fullwidth ``８.６``, Arabic-Indic ``٨.٦``) are refused with a message that says why."""

from __future__ import annotations

import argparse

import pytest
from detection_helpers import clean_env, cli_exact
from tests.conftest import Cli

from torchenv.detection.overrides import (
    Overrides,
    normalize_python,
    read_compute_capability,
    read_driver_version,
)
from torchenv.errors import BadInput


@pytest.mark.parametrize(("value", "expected"), [
    ("8.6", "8.6"), ("sm_86", "8.6"), ("86", "8.6"), ("sm_90a", "9.0a"), ("compute_90", "9.0"),
    (" 12.0f ", "12.0f"), ("SM_120", "12.0"),
], ids=str)
def test_compute_capabilities_are_normalised(value: str, expected: str) -> None:
    assert str(read_compute_capability(value)) == expected


@pytest.mark.parametrize("value", ["\uff18.\uff16", "\u0668.\u0666", "sm_\uff18\uff16", "8.\uff16"],
                         ids=["fullwidth", "arabic-indic", "fullwidth-sm", "one-fullwidth"])
def test_a_gpu_in_digits_that_are_not_ascii_is_refused(value: str) -> None:
    with pytest.raises(BadInput, match=r"^.* is not a compute capability \(it holds "
                                       r"characters outside ASCII") as info:
        Overrides.from_sources(gpus=[value])
    assert info.value.field == "gpus"


def test_the_variable_and_the_driver_are_read_the_same_way() -> None:
    with pytest.raises(BadInput, match=r"^TORCHENV_GPUS: .*outside ASCII"):
        _overrides({"TORCHENV_GPUS": "8.6,\uff19.\uff10"})
    with pytest.raises(BadInput, match=r"outside ASCII") as info:
        read_driver_version("\uff15\uff15\uff10.54")
    assert info.value.field == "driver"
    with pytest.raises(BadInput, match=r"^TORCHENV_DRIVER_VERSION: .*outside ASCII"):
        _overrides({"TORCHENV_DRIVER_VERSION": "550.\uff15\uff14"})
    with pytest.raises(BadInput, match=r"outside ASCII") as info:
        normalize_python("3.\uff11\uff12")
    assert info.value.field == "python"


def _overrides(environ: dict[str, str], **flags: object) -> Overrides:
    """The overrides the command line reads from ``flags`` and ``environ`` (the one place
    that decides between a flag and its variable); a BadInput's message is the one the user
    sees, led by the flag or variable that gave the value."""
    from torchenv.cli._common import overrides_from_args
    from torchenv.cli._fields import message, sources

    names = {"gpus": "gpu", "rocm_archs": "rocm_arch", "python": "target_python"}
    args = argparse.Namespace(**{**{"driver": None, "gpu": None, "rocm_arch": None,
                                    "platform": None, "target_python": None, "glibc": None,
                                    "no_gpu": False},
                                 **{names.get(k, k): v for k, v in flags.items()}})
    try:
        return overrides_from_args(args, environ)
    except BadInput as exc:
        raise BadInput(message(exc, sources(args)), exc.hint) from exc


def test_a_plain_mistake_is_not_blamed_on_ascii() -> None:
    with pytest.raises(BadInput) as caught:
        read_compute_capability("8.x")
    assert "ASCII" not in str(caught.value)
    assert (caught.value.field, caught.value.value) == ("gpus", "8.x")


def test_the_command_line_refuses_a_fullwidth_gpu(cli: Cli) -> None:
    res = cli_exact(cli, ["detect", "--json", "--gpu", "\uff18.\uff16"], clean_env())
    assert res.returncode == 2
    assert "--gpu: '\uff18.\uff16' is not a compute capability" in res.stderr
    assert "outside ASCII" in res.stderr


# --------------------------------------------------------------- "no accelerator" beside one

_D = "550.54.15"


@pytest.mark.parametrize(("flags", "environ", "conflict"), [
    ({"no_gpu": True, "driver": _D}, {}, "--no-gpu conflicts with --driver 550.54.15"),
    ({"no_gpu": True, "gpus": ["8.6"]}, {}, "--no-gpu conflicts with --gpu 8.6"),
    ({"no_gpu": True, "rocm_archs": ["gfx1100"]}, {}, "--no-gpu conflicts with --rocm-arch"),
], ids=["flag-driver", "flag-gpu", "flag-rocm"])
def test_no_gpu_beside_a_flag_describing_one_is_refused(
        flags: dict[str, object], environ: dict[str, str], conflict: str) -> None:
    with pytest.raises(BadInput, match=conflict):
        _overrides(environ, **flags)


@pytest.mark.parametrize(("flags", "environ", "no_gpu", "driver", "gpus"), [
    # the flag --driver wins over an empty TORCHENV_GPUS: the GPUs are detected
    ({"driver": _D}, {"TORCHENV_GPUS": ""}, False, _D, None),
    # the flag --no-gpu wins over the variables that describe a GPU
    ({"no_gpu": True}, {"TORCHENV_DRIVER_VERSION": _D}, True, None, ()),
    ({"no_gpu": True}, {"TORCHENV_GPUS": "8.6"}, True, None, ()),
    # an empty TORCHENV_GPUS alone, or beside the driver's variable: no GPU
    ({}, {"TORCHENV_GPUS": ""}, True, None, ()),
    ({}, {"TORCHENV_GPUS": "", "TORCHENV_DRIVER_VERSION": _D}, True, None, ()),
], ids=["driver-flag", "no-gpu-flag-driver-variable", "no-gpu-flag-gpus-variable", "empty",
        "empty-and-driver-variable"])
def test_a_flag_wins_over_a_variable_and_an_empty_gpus_variable_over_the_driver_s(
        flags: dict[str, object], environ: dict[str, str], no_gpu: bool, driver: str | None,
        gpus: tuple[str, ...] | None) -> None:
    o = _overrides(environ, **flags)
    assert o.no_gpu is no_gpu
    assert (str(o.driver) if o.driver else None) == driver
    assert o.gpus == gpus


def test_a_gpu_flag_takes_a_comma_separated_list_as_the_variable_does() -> None:
    o = Overrides.from_sources(gpus=["6.1,12.0", "sm_90"])
    assert [str(g) for g in o.gpus or ()] == ["6.1", "12.0", "9.0"]
    with pytest.raises(BadInput, match="has an empty entry"):
        Overrides.from_sources(gpus=["8.6,,9.0"])
