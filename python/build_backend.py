"""The PEP 517 build backend of `pip install .`: builds the _fsdpsim extension with the project's CMake build and
packs it with fsdpsim/*.py into a wheel. Written against the standard library alone, so that pip needs nothing from
a package index.

The build folder is $FSDPSIM_BUILD_DIR, else build/ (the one scripts/setup makes): after scripts/setup only the
extension is left to build.
"""

import base64
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_NAME = "fsdpsim"


def _version():
    for line in (_ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines():
        if line.startswith("version"):
            return line.split("=", 1)[1].strip().strip('"')
    raise RuntimeError("pyproject.toml has no version")


def _extension_in(build, configure_args):
    if not (build / "build.ninja").exists():
        subprocess.run(["cmake", "-S", str(_ROOT), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                        "-DFSDPSIM_PYTHON=ON", *configure_args], check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "_fsdpsim"], check=True)
    package = build / "python" / _NAME
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    built = sorted(package.glob("_fsdpsim*.so"))
    if not built:
        raise RuntimeError(f"the build made no _fsdpsim extension in {package}: is pybind11-dev installed?")
    matching = [m for m in built if m.name == "_fsdpsim" + suffix]
    return package, (matching[0] if matching else None)


def _build_extension():
    build = Path(os.environ.get("FSDPSIM_BUILD_DIR", _ROOT / "build"))
    if not build.is_absolute():
        build = _ROOT / build
    package, extension = _extension_in(build, [f"-DPython3_EXECUTABLE={sys.executable}"])
    if extension is None:
        # The shared build is for another Python (scripts/setup builds for Debian's): build the module alone for this
        # interpreter in a folder of its own.
        tag = f"cp{sys.version_info.major}{sys.version_info.minor}"
        package, extension = _extension_in(build.parent / f"{build.name}-python-{tag}",
                                           [f"-DPython3_EXECUTABLE={sys.executable}", "-DFSDPSIM_TESTS=OFF",
                                            "-DFSDPSIM_BENCH=OFF"])
        if extension is None:
            raise RuntimeError(f"the build made no _fsdpsim extension for {sys.executable}")
    return package, extension


def _tag():
    impl = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"{impl}-{impl}-{platform}"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    package, extension = _build_extension()
    version = _version()
    dist_info = f"{_NAME}-{version}.dist-info"
    files = {f"{_NAME}/{name}": (package / name).read_bytes() for name in ("__init__.py", "__main__.py")}
    files[f"{_NAME}/{extension.name}"] = extension.read_bytes()
    for module in sorted(package.glob("libfsdpsim_*.so")):  # the CUDA backend and MPI launcher, loaded on first use
        files[f"{_NAME}/{module.name}"] = module.read_bytes()
    files[f"{dist_info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {_NAME}\nVersion: {version}\n"
        "Summary: Plan, predict and check FSDP training before launch\n").encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: fsdpsim build_backend\nRoot-Is-Purelib: false\nTag: {_tag()}\n").encode()
    record = [_record_line(path, data) for path, data in files.items()] + [f"{dist_info}/RECORD,,"]
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{_NAME}-{version}-{_tag()}.whl"
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in files.items():
            info = zipfile.ZipInfo(path, date_time=(2026, 1, 1, 0, 0, 0))
            info.external_attr = (0o755 if path.endswith(".so") else 0o644) << 16
            wheel.writestr(info, data, zipfile.ZIP_DEFLATED)
    return wheel_name
