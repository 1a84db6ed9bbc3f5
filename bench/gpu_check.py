#!/usr/bin/env python
"""One-shot check of the evaluate phase on a GPU, as ONE command of at most 8 minutes on a fresh box (torch 2.11,
torchaudio, numpy, scipy, onnxruntime; no network). What it needs travels as a pack of at most 64 MiB
(bench/gpu_check_pack.sh: wheels, five LibriVox clips, ECAPA's small files):

    python bench/gpu_check.py --pack .gpu_pack --out gpu_check.json

Models are the real architectures with RANDOM WEIGHTS (bench/_gpu_check_setup.py): the numbers mean nothing,
the comparisons are about arithmetic. On the same WAVs (5 clips x 5 formats) it prints, per section:

- facts: torch, CUDA, GPUs, driver; ``clonebench doctor --eval``'s GPU checks; ``cuda`` -> ``cuda:0`` and the
  error for an index torch does not see;
- ecapa / whisper (openai-whisper): clonebench on the GPU vs the reference call on the GPU (``verify_files``,
  ``transcribe``) under the same flags; the reference under torch's default flags (cuDNN TF32 on) and with TF32
  on everywhere, against IEEE float32; batch 1 / 8 / 25 on the GPU; GPU vs CPU (every core); the fingerprint
  with 4 CPU threads vs all; cache hits of a second pass; seconds on the CPU vs the GPU; GPU memory left after
  the scorer is released;
- cublas12: whether CTranslate2's CUDA 12 cuBLAS loads here (faster-whisper's GPU path; cannot travel: 595 MB);
- pool: STOI scored in this process vs the CPU pool with 1 worker and with every core: values and seconds.

Differences are findings, printed, never asserted; no time is asserted. With ``--device cpu`` the CPU-runnable
parts run (tests/integration/test_gpu_scoring.py runs it so).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path
from types import SimpleNamespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "bench"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import _gpu_check_setup as setup  # noqa: E402


def max_diff(a: dict, b: dict, key: str) -> float:
    return max(abs(a[k][key] - b[k][key]) for k in a)


def same(a: dict, b: dict, key: str) -> str:
    return f"{sum(a[k][key] == b[k][key] for k in a)}/{len(a)} identical"


class Checker:
    def __init__(self, args, work: Path):
        self.args, self.work = args, work
        self.device = args.device
        self.results: dict = {}
        self.started = time.perf_counter()
        self.runs = 0

    def section(self, name: str, fn) -> None:
        left = self.args.budget_s - (time.perf_counter() - self.started)
        if name not in self.args.sections:
            return
        if left < 20:
            self.results[name] = {"skipped": f"time budget ({self.args.budget_s} s) spent"}
        else:
            began = time.perf_counter()
            try:
                self.results[name] = fn()
            except Exception as exc:  # noqa: BLE001 - a crashed section is a finding; the others still run
                self.results[name] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
            self.results[name]["section_seconds"] = round(time.perf_counter() - began, 1)
        print(f"== {name}\n{json.dumps(self.results[name], indent=1, default=str)}", flush=True)

    def score(self, group: str, device: str, items, batch: int, options: dict, pool=None, run_dir=None):
        """clonebench's run_group: (provenance, {sample: values}, {sample: error})."""
        from clonebench.core.hashing import HashCache
        from clonebench.evaluate.execution.cache import MetricCache
        from clonebench.evaluate.scoring import run_group

        self.runs += 1
        settings = SimpleNamespace(evaluation=SimpleNamespace(scorer_options=options, batch_size=batch))
        cache = MetricCache(run_dir or self.work / f"run{self.runs}", None)
        provenance, records = run_group(group, settings, device, items, cache, HashCache(None), pool)
        return (provenance, {k: r.values for k, r in records.items() if r.ok},
                {k: r.error for k, r in records.items() if not r.ok})

    def gpu_memory(self) -> dict | None:
        import torch

        if not self.device.startswith("cuda"):
            return None
        free, total = torch.cuda.mem_get_info(torch.device(self.device))
        return {"free_bytes": free, "total_bytes": total, "allocated_by_torch": torch.cuda.memory_allocated(),
                "reserved_by_torch": torch.cuda.memory_reserved()}

    def common(self, group: str, key: str, items, options: dict, compare) -> dict:
        """What both GPU scorers share: cache, batch sizes, threads, CPU vs device, memory, seconds."""
        import torch

        out = {}
        before = self.gpu_memory()
        run_dir = self.work / f"{group}-cached"
        provenance, values, errors = self.score(group, self.device, items, 8, options, run_dir=run_dir)
        out.update(fingerprint=provenance["fingerprint"], execution=provenance["execution"],
                   protocol=provenance["protocol"], errors=errors, seconds_device=provenance["seconds"],
                   memory_before=before, memory_after_release=self.gpu_memory())
        again, _, _ = self.score(group, self.device, items, 8, options, run_dir=run_dir)
        out["second_pass_cache_hits"] = f"{again['cached']}/{len(items)}"
        for batch in (1, 25):
            if batch <= len(items):
                _, other, _ = self.score(group, self.device, items, batch, options)
                out[f"batch_{batch}_vs_8"] = compare(other, values)
        threads = torch.get_num_threads()
        torch.set_num_threads(min(4, threads))
        try:
            fewer, other, _ = self.score(group, self.device, items, 8, options)
        finally:
            torch.set_num_threads(threads)
        out["fingerprint_4_threads_vs_all"] = ("same" if fewer["fingerprint"] == provenance["fingerprint"] else
                                               f"differs ({fewer['execution'].get('cpu_threads')} vs {threads})")
        out["values_4_threads_vs_all"] = compare(other, values)
        if self.device != "cpu":
            cpu, on_cpu, _ = self.score(group, "cpu", items, 8, options)
            out.update(seconds_cpu_all_threads=cpu["seconds"], cpu_threads=torch.get_num_threads(),
                       device_vs_cpu=compare(on_cpu, values))
        return out, values

    def ecapa(self) -> dict:
        import torch
        from speechbrain.inference.speaker import SpeakerRecognition

        import clonebench.evaluate.scorers.ecapa as ecapa_module
        from clonebench.evaluate.execution.precision import policy

        folder = self.work / "ecapa"
        folder.mkdir()
        ecapa_module.ECAPA = setup.random_ecapa(self.args.pack, folder)
        options = {"ecapa": {"threshold": 0.25, "local_dir": folder, "allow_hub": False},
                   "whisper": {"backend": "openai_whisper"}}
        items = self.items
        out, values = self.common("ecapa", "sim", items, options, lambda a, b: f"max |d sim| {max_diff(a, b, 'sim'):.3g}")
        reference = SpeakerRecognition.from_hparams(source=str(folder), savedir=str(self.work / "ecapa-ref"),
                                                    overrides={"pretrained_path": str(folder)},
                                                    run_opts={"device": self.device})

        def verify(**flags) -> dict:
            with torch.inference_mode(), policy(self.device, **flags):
                return {i.sample_id: {"sim": float(reference.verify_files(
                    str(i.target_path), str(i.generated_path), savedir=str(self.work / "audio"))[0].reshape(-1)[0])}
                    for i in items}

        exact = verify()
        out["clonebench_vs_verify_files_same_flags"] = f"max |d sim| {max_diff(values, exact, 'sim'):.3g}"
        if self.device.startswith("cuda"):
            defaults = {}
            with torch.inference_mode():  # torch's own flags: cuDNN convolutions in TF32
                for i in items:
                    defaults[i.sample_id] = {"sim": float(reference.verify_files(
                        str(i.target_path), str(i.generated_path), savedir=str(self.work / "audio"))[0].reshape(-1)[0])}
            out["verify_files_torch_default_flags_vs_ieee"] = f"max |d sim| {max_diff(defaults, exact, 'sim'):.3g}"
            out["verify_files_tf32_everywhere_vs_ieee"] = f"max |d sim| {max_diff(verify(tf32=True), exact, 'sim'):.3g}"
        del reference
        return out

    def whisper(self) -> dict:
        import torch
        import whisper

        from clonebench.evaluate.execution.precision import policy

        checkpoint = self.work / f"whisper-random-{self.args.whisper_size}.pt"
        sha = setup.random_whisper(checkpoint, self.args.whisper_size)
        options = {"whisper": {"backend": "openai_whisper", "model": f"random-{self.args.whisper_size}", "local_path": checkpoint,
                               "sha256": sha, "normalisation": "ascii_punctuation_removed_v2", "compute_type": "auto",
                               "allow_hub": False}}
        out, values = self.common("whisper", "hypothesis", self.items, options,
                                  lambda a, b: same(a, b, "hypothesis"))
        model = whisper.load_model(str(checkpoint), device=self.device)
        fp16 = self.device.startswith("cuda")
        with torch.inference_mode(), policy(self.device):
            reference = {i.sample_id: {"hypothesis": model.transcribe(
                str(i.generated_path), language="en", task="transcribe", temperature=0.0,
                condition_on_previous_text=False, without_timestamps=True, fp16=fp16)["text"].strip()}
                for i in self.items}
        out["clonebench_vs_transcribe_same_device"] = same(values, reference, "hypothesis")
        del model
        return out

    def cublas12(self) -> dict:
        from clonebench.evaluate.execution.cuda_env import preload_cublas12

        out = {}
        try:
            out["libcublas.so.12"] = preload_cublas12()
        except OSError as exc:
            out["libcublas.so.12"] = f"does not load: {exc}"
        try:
            import ctranslate2

            out["ctranslate2"] = {"version": ctranslate2.__version__, "cuda_devices": ctranslate2.get_cuda_device_count(),
                                  "cuda_compute_types": sorted(ctranslate2.get_supported_compute_types("cuda"))}
        except Exception as exc:  # noqa: BLE001
            out["ctranslate2"] = f"{type(exc).__name__}: {exc}"
        return out

    def pool(self) -> dict:
        from clonebench.evaluate.execution.cpu_pool import CpuPool
        from clonebench.evaluate.execution.threads import available_cores

        options = {"stoi": {}, "whisper": {"backend": "openai_whisper"}}
        here, values, _ = self.score("stoi", "cpu", self.items, 4, options)
        out = {"in_process_seconds": here["seconds"], "cores": available_cores()}
        for workers in sorted({1, available_cores()}):
            pool = CpuPool(workers, None)
            try:
                pool.warm_up("stoi", "openai_whisper", {})
                provenance, pooled, _ = self.score("stoi", "cpu", self.items, 4, options, pool=pool)
            finally:
                pool.close()
            out[f"workers_{workers}"] = {"seconds": provenance["seconds"],
                                         "vs_in_process": f"max |d stoi| {max_diff(pooled, values, 'stoi'):.3g}"}
        return out

    def facts(self) -> dict:
        import torch

        from clonebench.cli.doctor_gpu import run_gpu_checks
        from clonebench.core.errors import ConfigError
        from clonebench.evaluate.execution.device import resolve_device

        lines = []
        report = SimpleNamespace(ok=lambda w: lines.append(f"ok    {w}"), warn=lambda w: lines.append(f"warn  {w}"),
                                 fail=lambda w, fix: lines.append(f"FAIL  {w} | fix: {fix}"))
        run_gpu_checks(report, self.device if self.device.startswith("cuda") else None)
        out = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
               "arch_list": torch.cuda.get_arch_list(), "cpu_count": os.cpu_count(), "doctor": lines,
               "setup": self.setup_notes}
        if torch.cuda.is_available():
            count = torch.cuda.device_count()
            out["gpus"] = [torch.cuda.get_device_name(i) for i in range(count)]
            out["resolve cuda"] = resolve_device("cuda")[0]
            try:
                resolve_device(f"cuda:{count}")
            except ConfigError as exc:
                out[f"resolve cuda:{count}"] = str(exc)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pack", type=Path, default=None, help="the folder bench/gpu_check_pack.sh filled")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--clips", type=int, default=25, help="pairs scored (5 clips x 5 formats = 25 WAVs)")
    parser.add_argument("--sections", default="facts,ecapa,whisper,cublas12,pool")
    parser.add_argument("--whisper-size", default="base", choices=sorted(setup.WHISPER_SIZES),
                        help="dimensions of the random openai-whisper checkpoint")
    parser.add_argument("--budget-s", type=float, default=360.0, help="sections not started by then are skipped")
    parser.add_argument("--out", type=Path, default=Path("gpu_check.json"))
    args = parser.parse_args()
    args.sections = args.sections.split(",")
    work = setup.work_folder()
    checker = Checker(args, work)
    checker.setup_notes = setup.install_pack(args.pack, work)
    import torch

    from clonebench.evaluate.execution.device import normalise_device

    checker.device = args.device = normalise_device(args.device, "--device")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device visible: the GPU comparisons cannot run here (use --device cpu for the CPU parts)")
    clips, texts = setup.speech(args.pack)
    (work / "wavs").mkdir()
    wavs = setup.variants(clips, work / "wavs")
    from clonebench.core.hashing import sha256_file
    from clonebench.evaluate.protocols.base import ScoreItem

    checker.items = [ScoreItem(sample_id=f"{k:03d}", pair_id=f"{k:03d}", speaker_id="s", generated_path=path,
                               generated_sha256=sha256_file(path), target_path=wavs[(k + 7) % len(wavs)][0],
                               target_sha256=sha256_file(wavs[(k + 7) % len(wavs)][0]), target_text=texts[src.stem],
                               language="en")
                     for k, (path, src) in enumerate(wavs[:args.clips])]
    for name in ("facts", "ecapa", "whisper", "cublas12", "pool"):
        checker.section(name, getattr(checker, name))
    checker.results["total_seconds"] = round(time.perf_counter() - checker.started, 1)
    args.out.write_text(json.dumps(checker.results, indent=1, default=str))
    print(f"wrote {args.out} ({checker.results['total_seconds']} s)")
    return 1 if any("error" in r for r in checker.results.values() if isinstance(r, dict)) else 0


if __name__ == "__main__":
    sys.exit(main())
