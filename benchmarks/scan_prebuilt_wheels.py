#!/usr/bin/env python
"""Which prebuilt llama.cpp wheels on the package index carry kernels for this CPU (issue 83's second design).
Not a test.

For each package (optionally ``NAME==VERSION``) it asks pip for this platform's wheel, binary only, without
dependencies (``pip download --no-deps --only-binary=:all:``): a package with no such wheel would compile at
install, or fetch its binaries from elsewhere. In each wheel's shared libraries it counts AVX-512 instructions
(``zmm`` registers), VNNI dot products (``vpdpbusd``, with ``ymm`` or ``zmm``) and AMX tile instructions, from
``objdump -d``, and lists the files that look like llama.cpp's per-CPU variant libraries (``libggml-cpu-*.so``) or
other backends.

    python benchmarks/scan_prebuilt_wheels.py --out /tmp/wheels --json scan.json \\
        xllamacpp xllamacpp==2026.4.8672 ik-llama-cpp-python llama-cpp-cffi ...

The native build of today's engine is scanned with ``--native`` (the ``llama_cpp/lib`` of this venv).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

LIBRARY = re.compile(r"\.so(\.\d+)*$")
GPU_BACKEND = re.compile(r"cuda|vulkan|kompute|_gpu_|npu|metal", re.IGNORECASE)  # GPU code: not this CPU's kernels


def count_instructions(disassembly: str) -> dict[str, int]:
    """AVX2 (``ymm``), AVX-512 (``zmm``), VNNI (``vpdpbusd``/``vpdpbssd``) and AMX (``tdp*``) instruction counts in
    ``objdump -d`` output."""
    counts = {"ymm": 0, "zmm": 0, "vnni": 0, "amx": 0}
    for line in disassembly.splitlines():
        if "\t" not in line:
            continue
        if "zmm" in line:
            counts["zmm"] += 1
        elif "ymm" in line:
            counts["ymm"] += 1
        if "vpdpbusd" in line or "vpdpbssd" in line:
            counts["vnni"] += 1
        if re.search(r"\stdp(bf16ps|bssd|bsud|busd|buud)\s", line):
            counts["amx"] += 1
    return counts


def scan_library(path: Path) -> dict[str, Any]:
    done = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True)
    return {"file": path.name, "mb": round(path.stat().st_size / 2**20, 1), **count_instructions(done.stdout)}


def variant_libraries(names: list[str]) -> list[str]:
    """Files named like llama.cpp's dynamically loaded backends (``libggml-cpu-haswell.so``, ``libggml-vulkan.so``)."""
    return sorted(n for n in names if re.search(r"ggml-(cpu|cuda|vulkan|blas|rpc)[-\w]*\.(so|dll)", n))


def scan_wheel(wheel: Path, work: Path) -> dict[str, Any]:
    unpacked = work / (wheel.stem + "-unpacked")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        libraries = [n for n in names if LIBRARY.search(n)]
        for name in libraries:
            archive.extract(name, unpacked)
    gpu = [n for n in libraries if GPU_BACKEND.search(Path(n).name)]
    scanned = [scan_library(unpacked / name) for name in libraries
               if name not in gpu and (unpacked / name).stat().st_size > 0]
    return {"wheel": wheel.name, "mb": round(wheel.stat().st_size / 2**20, 1), "libraries": scanned,
            "not_scanned_gpu_backends": [Path(n).name for n in gpu],
            "variant_libraries": variant_libraries(names),
            "avx512": any(s["zmm"] for s in scanned), "vnni": any(s["vnni"] for s in scanned)}


def download(spec: str, out: Path) -> tuple[Path | None, str]:
    folder = out / re.sub(r"[^\w.=-]", "_", spec)
    folder.mkdir(parents=True, exist_ok=True)
    wheels = sorted(folder.glob("*.whl"))
    if not wheels:
        done = subprocess.run([sys.executable, "-m", "pip", "download", spec, "--no-deps", "--only-binary=:all:",
                               "-d", str(folder), "-q"], capture_output=True, text=True, timeout=900)
        wheels = sorted(folder.glob("*.whl"))
        if not wheels:
            error = next((ln for ln in done.stderr.splitlines() if "ERROR" in ln), done.stderr[-200:])
            return None, error.strip()
    return wheels[0], ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("packages", nargs="*")
    parser.add_argument("--out", type=Path, required=True, help="where wheels are downloaded and unpacked")
    parser.add_argument("--native", action="store_true", help="also scan this venv's llama_cpp/lib")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    results = []
    if args.native:
        import llama_cpp

        lib = Path(llama_cpp.__file__).parent / "lib"
        scanned = [scan_library(p) for p in sorted(lib.glob("*.so")) if not p.is_symlink()]
        results.append({"package": "llama-cpp-python (this venv, built here)", "libraries": scanned,
                        "avx512": any(s["zmm"] for s in scanned), "vnni": any(s["vnni"] for s in scanned)})
        print(json.dumps(results[-1]), flush=True)
    for spec in args.packages:
        wheel, error = download(spec, args.out)
        result: dict[str, Any] = {"package": spec}
        result.update(scan_wheel(wheel, args.out) if wheel else {"wheel": None, "error": error})
        results.append(result)
        print(json.dumps(result), flush=True)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
