"""``nvidia-smi``: the last NVIDIA probe, used when NVML cannot be loaded in-process.

Every call has a timeout (a wedged GPU makes nvidia-smi hang for minutes), and nvidia-smi is only
spawned when it is on ``PATH`` (or in the WSL2 driver folder).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple

from torchenv.detection._nvidia_proc import driver_version_in
from torchenv.detection.profile import Gpu
from torchenv.values import ComputeCapability, CudaVersion, DriverVersion, InvalidValue

if TYPE_CHECKING:
    from typing import Optional

    from torchenv._subprocess import ProcessResult

__all__ = [
    "QUERY_FIELDS",
    "QUERY_FIELDS_NO_CC",
    "SmiResult",
    "drivers_own",
    "find_nvidia_smi",
    "lacks_compute_cap",
    "parse_query_csv",
    "parse_smi_error",
    "parse_smi_versions",
    "probe_nvidia_smi",
]

QUERY_FIELDS = ("index", "name", "compute_cap", "memory.total", "uuid", "driver_version")
# an older nvidia-smi has no compute_cap field ('Field "compute_cap" is not a valid field')
QUERY_FIELDS_NO_CC = ("index", "name", "memory.total", "uuid", "driver_version")
# the newest driver branch whose nvidia-smi is seen without compute_cap: 470.82.01
# (github.com/NVIDIA/TensorRT-LLM/pull/735), 470.182.03 (github.com/huggingface/candle/issues/733,
# its --help-query-gpu list), 470.256.02 (github.com/canonical/inference-snaps/issues/89)
LAST_BRANCH_WITHOUT_COMPUTE_CAP = 470
FIRST_DRIVER_BRANCH = 100  # a smaller major is not a driver branch (a Jetson module's L4T release)

_NA = {"", "[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]"}
_NUMBER = re.compile(r"[0-9]+")  # an index; 143771 of "143771 MiB"
_COMPUTE_CAPABILITY = re.compile(r"[0-9]{1,2}\.[0-9]")  # 9.0, 12.0: nvidia-smi's spelling
_VERSION = re.compile(r"[0-9]+(?:\.[0-9]+){1,2}")  # 580.82.07 anywhere: r580.82.07.1
# for parse_smi_versions
_KMD = re.compile(r"KMD version\s*:\s*([0-9]+(?:\.[0-9]+){1,2})", re.ASCII | re.IGNORECASE)
_DRIVER = re.compile(r"Driver version\s*:\s*([0-9]+(?:\.[0-9]+){1,2})",
                     re.ASCII | re.IGNORECASE)
_CUDA_UMD = re.compile(r"CUDA UMD version\s*:\s*([0-9]+\.[0-9]+)", re.ASCII | re.IGNORECASE)
_CUDA = re.compile(r"CUDA version\s*:\s*([0-9]+\.[0-9]+)", re.ASCII | re.IGNORECASE)
_NVML_LIBRARY = re.compile(r"NVML library version:\s*(\S+)", re.ASCII)


def _value(text: str) -> Optional[str]:
    text = text.strip()
    return None if text.lower() in _NA else text


def _capability(text: Optional[str]) -> Optional[ComputeCapability]:
    if text is None or not _COMPUTE_CAPABILITY.fullmatch(text):
        return None
    try:
        return ComputeCapability(text)
    except InvalidValue:  # 0.0 or 99.9: no GPU's, as unknown as no answer
        return None


def parse_query_csv(text: str, fields: tuple[str, ...] = QUERY_FIELDS
                    ) -> tuple[tuple[Gpu, ...], Optional[DriverVersion]]:
    """(GPUs, driver version) from ``--query-gpu=<fields> --format=csv,noheader,nounits``.

    Sample (one line per GPU)::

        0, NVIDIA H200, 9.0, 143771, GPU-00000000-0000-0000-0000-000000000000, 580.82.07
        1, NVIDIA GeForce RTX 3090, 8.6, 24576, GPU-00000000-0000-0000-0000-000000000001, 580.82.07

    A header line (``index, name, ...``) is skipped if present. Raises ValueError naming the line
    when a line does not have the expected shape.
    """
    gpus: list[Gpu] = []
    driver: Optional[DriverVersion] = None
    name_at = fields.index("name") if "name" in fields else -1
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        parts = [p.strip() for p in line.split(",")]
        if len(parts) > len(fields) and name_at >= 0:
            # a name holding a comma: glue the surplus back into the name column
            extra = len(parts) - len(fields)
            parts[name_at:name_at + extra + 1] = [", ".join(parts[name_at:name_at + extra + 1])]
        if len(parts) != len(fields):
            raise ValueError(f"nvidia-smi printed {line!r}, expected {len(fields)} "
                             f"comma-separated fields ({','.join(fields)})")
        row = dict(zip(fields, parts))
        if row.get("index", "").lower() == "index":
            continue  # header
        index_text = row.get("index", str(len(gpus)))
        if not _NUMBER.fullmatch(index_text):
            raise ValueError(f"nvidia-smi printed {line!r}: index {index_text!r} is not a number")
        cc = _value(row.get("compute_cap", ""))
        mem = _value(row.get("memory.total", ""))
        drv = _VERSION.search(row.get("driver_version", ""))
        if drv and driver is None:
            driver = driver_version_in(drv.group())
        number = _NUMBER.match(mem) if mem else None
        gpus.append(Gpu(
            index=int(index_text),
            name=_value(row.get("name", "")),
            compute_capability=_capability(cc),
            memory_mib=int(number.group()) if number else None,
            uuid=_value(row.get("uuid", "")),
        ))
    return tuple(gpus), driver


def parse_smi_versions(text: str) -> tuple[Optional[DriverVersion], Optional[CudaVersion]]:
    """(driver version, CUDA version) from ``nvidia-smi --version`` or the table header.

    Samples (before and after the 610 driver renamed the fields)::

        DRIVER version      : 555.85
        CUDA Version        : 12.5

        DRIVER version      : Deprecated, see "KMD version" instead
        KMD version         : 610.57.04
        CUDA UMD version    : 13.3

        | NVIDIA-SMI 595.71.05              Driver Version: 595.71.05      CUDA Version: 13.2     |
        | NVIDIA-SMI 610.57.04              KMD Version: 610.57.04     CUDA UMD Version: 13.3     |
    """
    driver = _KMD.search(text) or _DRIVER.search(text)
    cuda = _CUDA_UMD.search(text) or _CUDA.search(text)
    try:
        cuda_version = CudaVersion(cuda.group(1)) if cuda else None
    except InvalidValue:  # 123.4: no CUDA's
        cuda_version = None
    return driver_version_in(driver.group(1) if driver else None), cuda_version


def parse_smi_error(text: str) -> Optional[str]:
    """A clear sentence for nvidia-smi's known failure messages, or None for unknown text.

    Samples::

        Failed to initialize NVML: Driver/library version mismatch
        NVML library version: 550.144

        NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. ...
    """
    low = text.lower()
    if "version mismatch" in low:
        lib = _NVML_LIBRARY.search(text)
        return ("NVIDIA driver/library version mismatch"
                + (f" (NVML library {lib.group(1)})" if lib else "")
                + ": the loaded kernel module differs from the installed user-space driver, "
                "usually after a driver upgrade without a reboot; reboot (or reload the nvidia "
                "kernel module) before using CUDA")
    if "couldn't communicate with the nvidia driver" in low or "driver not loaded" in low:
        return ("nvidia-smi could not talk to the NVIDIA driver (not loaded, or no GPU passed "
                "into this container)")
    return None


_SMI_HINT = ("set TORCHENV_NVIDIA_SMI to the path of an nvidia-smi executable, or to 'off' to "
             "run none, or unset it to search PATH")


def find_nvidia_smi(environ: Mapping[str, str], *, wsl: bool = False) -> Optional[str]:
    """The nvidia-smi to run: the first on ``PATH``; on WSL2 also the driver's own folder.

    ``TORCHENV_NVIDIA_SMI`` overrides the search: ``off`` runs none, a path runs that one (a
    path that is not an executable file is bad input: BadInput).
    """
    setting = environ.get("TORCHENV_NVIDIA_SMI", "").strip()
    if setting.lower() == "off":
        return None
    if setting:
        if os.path.isfile(setting) and os.access(setting, os.X_OK):
            return setting
        from torchenv.errors import BadInput

        why = ("does not exist" if not os.path.exists(setting) else
               "is not a file" if not os.path.isfile(setting) else "is not executable")
        raise BadInput(f"TORCHENV_NVIDIA_SMI: {setting} {why}", hint=_SMI_HINT, value=setting)
    dirs = [d for d in environ.get("PATH", "").split(os.pathsep) if d]
    if wsl:
        dirs.append("/usr/lib/wsl/lib")
    for d in dirs:
        candidate = os.path.join(d, "nvidia-smi")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


class SmiResult(NamedTuple):
    gpus: tuple[Gpu, ...] = ()
    driver_version: Optional[DriverVersion] = None
    cuda_driver_version: Optional[CudaVersion] = None
    warnings: tuple[str, ...] = ()
    ok: bool = False
    calls: tuple[str, ...] = ()


def lacks_compute_cap(kernel_driver: Optional[DriverVersion]) -> bool:
    """Whether the nvidia-smi of a loaded kernel driver of this version is known to lack the
    ``compute_cap`` query field: true for the desktop and server branches up to 470 (the
    nvidia-smi of 470.82.01, 470.182.03 and 470.256.02 answers 'Field "compute_cap" is not a
    valid field to query', and a field the last releases of a branch lack is taken to be missing
    from every older branch too); false (unknown: ask and see) for anything newer, for a Jetson
    module (numbered by its L4T release, 35.3.1) and for no version."""
    return (kernel_driver is not None
            and FIRST_DRIVER_BRANCH <= kernel_driver.branch <= LAST_BRANCH_WITHOUT_COMPUTE_CAP)


def drivers_own(exe: str) -> bool:
    """Whether ``exe`` is where a driver installs its nvidia-smi (``/usr/bin``, ``/bin``), so
    that it is of the loaded driver's version; a copy elsewhere (bundled in a snap or a
    container image, named by TORCHENV_NVIDIA_SMI) may be of any other."""
    return os.path.dirname(os.path.realpath(exe)) in ("/usr/bin", "/bin")


def probe_nvidia_smi(exe: str, *, timeout: float = 5.0,
                     env: Optional[Mapping[str, str]] = None,
                     kernel_driver: Optional[DriverVersion] = None,
                     named: bool = False) -> SmiResult:
    """Ask ``exe`` for the GPUs and the driver version in one query, then for its table, whose
    header holds the CUDA version the driver supports; all calls share ``timeout`` seconds.

    The call asks for ``compute_cap`` too, unless ``kernel_driver`` (the loaded module's
    version, given only when ``exe`` is that driver's own nvidia-smi: :func:`drivers_own`) is
    of a branch whose nvidia-smi lacks that field (:func:`lacks_compute_cap`); an nvidia-smi
    that turns out not to know it is asked once more without it. ``named``: the user named
    ``exe`` (``TORCHENV_NVIDIA_SMI``), so one that cannot be started is bad input (BadInput),
    not a failed driver.
    """
    from torchenv._subprocess import run_process

    deadline = time.monotonic() + timeout
    warnings: list[str] = []
    calls: list[str] = []

    def left() -> float:
        return max(0.1, deadline - time.monotonic())

    def query(fields: tuple[str, ...]) -> ProcessResult:
        argv = [exe, "--query-gpu=" + ",".join(fields), "--format=csv,noheader,nounits"]
        calls.append(" ".join(argv[1:]))
        return run_process(argv, timeout=left(), env=env)

    by_name = "the GPU catalog is asked instead, by each GPU's name"
    fields: tuple[str, ...] = QUERY_FIELDS
    if lacks_compute_cap(kernel_driver):
        fields = QUERY_FIELDS_NO_CC
        res = query(fields)
        if res.ok:
            warnings.append(f"{exe} was not asked for compute capability: the loaded driver "
                            f"{kernel_driver} is of the {LAST_BRANCH_WITHOUT_COMPUTE_CAP} "
                            "branch or older, whose nvidia-smi has no 'compute_cap' field; "
                            + by_name)
    else:
        res = query(fields)
        if not res.ok and not res.timed_out and "not a valid field" in (res.stdout + res.stderr):
            fields = QUERY_FIELDS_NO_CC
            res = query(fields)
            if res.ok:
                warnings.append(f"{exe} is too old to report compute capability (no "
                                f"'compute_cap' field); {by_name}")
    if named and not res.started:
        from torchenv.errors import BadInput

        raise BadInput(f"TORCHENV_NVIDIA_SMI: {exe} does not run ({res.error})", hint=_SMI_HINT,
                       value=exe)
    if res.timed_out:
        warnings.append(f"{exe} did not answer within {timeout:g} s (a hung GPU or driver?); "
                        "GPU details are unknown — give them with --driver/--gpu")
        return SmiResult(warnings=tuple(warnings), calls=tuple(calls))
    if not res.ok:
        known = parse_smi_error(res.stdout + "\n" + res.stderr)
        failure = res.describe_failure()
        if not res.stderr.strip() and res.stdout.strip():
            failure += ": " + res.stdout.strip().splitlines()[-1]  # nvidia-smi errors go to stdout
        warnings.append(known or failure)
        return SmiResult(warnings=tuple(warnings), calls=tuple(calls))
    try:
        gpus, driver = parse_query_csv(res.stdout, fields)
    except ValueError as exc:
        # some builds print their failure (driver not reachable, ...) and still exit 0
        warnings.append(parse_smi_error(res.stdout + "\n" + res.stderr) or f"{exe}: {exc}")
        return SmiResult(warnings=tuple(warnings), calls=tuple(calls))
    # no query field holds the CUDA version the driver supports; the table's header does, on
    # every nvidia-smi since 410 ("CUDA Version: 13.2", from 610 "CUDA UMD Version: 13.3").
    # Its header is read even when the call then fails (WSL2's nvidia-smi 555.42.03 prints it
    # and dies of SIGSEGV): those lines were printed by the tool, from the driver.
    calls.append("(the table)")
    table = run_process([exe], timeout=left(), env=env)
    cuda = parse_smi_versions(table.stdout)[1]
    return SmiResult(gpus=gpus, driver_version=driver, cuda_driver_version=cuda,
                     warnings=tuple(warnings), ok=True, calls=tuple(calls))
