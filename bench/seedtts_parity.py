"""seed_wer parity: clonebench's Seed-TTS-eval WER scorers vs the benchmark's own ``run_wer.py``, same weights.

Two checks, against a Seed-TTS-eval checkout read at run time (never copied):

1. the text rule: upstream's ``process_one`` (taken from the checkout's ``run_wer.py`` by its syntax tree and run
   with jiwer 3.1.0, what it was written for: ``compute_measures``) vs ``seedtts/text.py`` on a table of
   tricky strings;
2. the whole path: the checkout's ``run_wer.py`` itself, run as a script (``python run_wer.py list out en|zh``) on
   eSpeak NG clips, vs ``SeedTTSWhisperScorer`` / ``SeedTTSParaformerScorer`` on the same files, then
   ``average_wer.py`` vs ``seedtts_average``. Upstream loads ``openai/whisper-large-v3`` and ``paraformer-zh`` by
   name: the script runs in a folder where those names are local folders holding the tiny RANDOM checkpoints of
   tests/tiny_models.py (transformers and FunASR take an existing path before any hub), so no download happens.

What the runner adapts around the unmodified script, each printed when used:

- upstream moves the Whisper model and features to ``cuda:0``; without a GPU, ``.to("cuda:0")`` is mapped to
  the CPU;
- transformers 5 refuses ``generate(forced_decoder_ids=...)``; the runner hands those ids to transformers'
  own legacy path instead (``generation_config.forced_decoder_ids``, which it still turns into the initial
  decoder tokens as transformers 4 did);
- jiwer 3.1.0 (``compute_measures``) comes first on the script's path: the folder that scripts/setup.sh installs.

Needs: transformers, funasr (``--no-deps`` + kaldiio, torch-complex, jamo, jaconv), zhon, zhconv, espeak-ng.
Not run in CI.

    git -C <mirror> archive HEAD | tar -x -C /tmp/seedtts-eval
    python bench/seedtts_parity.py --seed-tts-eval /tmp/seedtts-eval
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "src")]

JIWER3 = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "clonebench" / "peer" / "jiwer-3.1.0"
PARAFORMER_HUB_NAME = "iic/speech_seaco_paraformer_large_asr_nat-zh-cn-16k-common-vocab8404-pytorch"

RULE_CASES = [
    ("Hello, world.", "hello world", "en"), ("It's a dog's life!", "its a dogs life", "en"),
    ("Don't stop—believing…", "don't stop believing", "en"), ("「你好」，世界。", "你好世界", "zh"),
    ("我们、他们！你们？", "我们他们你们", "zh"), ("你好 世界", "你好世界", "zh"), ("ＡＢＣ，全角。", "ABC全角", "zh"),
    ("Ｈｅｌｌｏ\u3000ｗｏｒｌｄ", "hello world", "en"), ("a   b", "a b", "en"), ("one    two", "one two", "en"),
    ("Hello world", "", "en"), ("你好世界", "", "zh"), ("Mixed 中文 and English!", "mixed 中文 and english", "zh"),
    (" leading space", "leading space", "en"), ("Mr. O’Neil’s ‘quote’", "mr o'neil's quote", "en"),
    ("tab\there", "tab here", "en"), ("...", "anything", "en"), ("。 ", "好", "zh"), ("第1名", "第一名", "zh"),
    ("it's", "it ' s", "en"), ("a\u00a0\u00a0b", "a b", "en"),
]
EN_TEXTS = ["The quick brown fox jumps over the lazy dog.", "It's a sunny day, isn't it?", "Seven, eight; nine!",
            "Please call Stella.  Ask her to bring these things."]
ZH_TEXTS = ["你好，世界。", "我们是中国人！", "「他说：好的」", "今天天气很好。"]

# run in a subprocess: upstream's process_one from the checkout, with jiwer 3.1.0
RULE_RUNNER = r'''
import ast, json, string, sys, warnings
warnings.simplefilter("ignore")
from jiwer import compute_measures
from zhon.hanzi import punctuation
tree = ast.parse(open(sys.argv[1], encoding="utf-8").read())
fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "process_one")
ns = {"compute_measures": compute_measures, "punctuation_all": punctuation + string.punctuation}
exec(compile(ast.Module(body=[fn], type_ignores=[]), sys.argv[1], "exec"), ns)
out = []
for ref, hyp, lang in json.load(sys.stdin):
    ns["lang"] = lang
    try:
        _, _, wer, subs, dele, inse = ns["process_one"](hyp, ref)
        out.append([wer, subs, dele, inse])
    except Exception as exc:
        out.append(type(exc).__name__)
print(json.dumps(out))
'''

# run in a subprocess: the checkout's run_wer.py as a script, with the adaptations listed in the docstring
SCRIPT_RUNNER = r'''
import runpy, sys, torch
script = sys.argv[1]
if not torch.cuda.is_available():
    def _cpu(device):
        return "cpu" if isinstance(device, str) and device.startswith("cuda") else device
    module_to, tensor_to = torch.nn.Module.to, torch.Tensor.to
    def module_to_cpu(self, *args, **kwargs):
        return module_to(self, *[_cpu(a) for a in args], **kwargs)
    def tensor_to_cpu(self, *args, **kwargs):
        return tensor_to(self, *[_cpu(a) for a in args], **kwargs)
    torch.nn.Module.to, torch.Tensor.to = module_to_cpu, tensor_to_cpu
    print("runner: cuda:0 mapped to cpu", file=sys.stderr)
from transformers import WhisperForConditionalGeneration
generate = WhisperForConditionalGeneration.generate
def legacy_generate(self, *args, forced_decoder_ids=None, **kwargs):
    if forced_decoder_ids is not None:
        self.generation_config.forced_decoder_ids = forced_decoder_ids
        self.generation_config.language = self.generation_config.task = None
    return generate(self, *args, **kwargs)
WhisperForConditionalGeneration.generate = legacy_generate
sys.argv = [script, *sys.argv[2:]]
runpy.run_path(script, run_name="__main__")
'''


def run_py(code: str, args: list[str], cwd: Path, stdin: str | None = None) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(JIWER3), *sys.path]), "HF_HUB_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    done = subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, input=stdin, text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"upstream run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    for line in done.stderr.splitlines():
        if line.startswith("runner:"):
            print(line)
    return done.stdout


def check_rule(checkout: Path) -> int:
    from clonebench.seedtts.text import seedtts_wer

    upstream = json.loads(run_py(RULE_RUNNER, [str(checkout / "run_wer.py")], checkout,
                                 json.dumps(RULE_CASES, ensure_ascii=False)))
    different = 0
    for (ref, hyp, lang), theirs in zip(RULE_CASES, upstream):
        try:
            out = seedtts_wer(ref, hyp, lang)
            ours = [out["wer"], out["substitutions"], out["deletions"], out["insertions"]]
        except ValueError:
            ours = "ValueError"
        same = ours == theirs
        different += not same
        print(f"rule  {'equal    ' if same else 'DIFFERENT'} {lang} {ref!r} / {hyp!r}: ours {ours} upstream {theirs}")
    return different


def espeak(folder: Path, texts: list[str], voice: str, prefix: str) -> list[tuple[Path, str]]:
    out = []
    for n, text in enumerate(texts):
        path = folder / f"{prefix}{n}.wav"
        subprocess.run(["espeak-ng", "-v", voice, "-w", str(path), text], check=True, capture_output=True)
        out.append((path, text))
    return out


def check_path(checkout: Path, work: Path, lang: str, scorer, clips: list[tuple[Path, str]]) -> int:
    from clonebench.seedtts.text import seedtts_average
    from tests.conftest import score_item

    listing = work / f"wav_res_text_{lang}"
    listing.write_text("".join(f"{path}|{text}\n" for path, text in clips), encoding="utf-8")
    result = work / f"result_{lang}.wer"
    run_py(SCRIPT_RUNNER, [str(checkout / "run_wer.py"), str(listing), str(result), lang], work)
    theirs = {}
    for line in result.read_text(encoding="utf-8").splitlines():
        path, wer, _truth, hypo, inse, dele, subs = line.split("\t")
        theirs[path] = (hypo, float(wer), float(subs), float(dele), float(inse))
    scorer.load()
    try:
        records = scorer.score_batch([score_item(path, text=text, language=lang) for path, text in clips])
    finally:
        scorer.release()
    different = 0
    wers = []
    for (path, _), record in zip(clips, records):
        if not record.ok:
            print(f"{lang}    DIFFERENT {path.name}: ours failed: {record.error}")
            different += 1
            continue
        v = record.values
        ours = (v[f"seed_hypothesis_{lang}"], v[f"seed_wer_{lang}"], v[f"seed_wer_{lang}_sub"],
                v[f"seed_wer_{lang}_del"], v[f"seed_wer_{lang}_ins"])
        wers.append(ours[1])
        # upstream writes the hypothesis on one tab-separated line: compare it as written
        same = ours[1:] == theirs[str(path)][1:] and ours[0].strip() == theirs[str(path)][0].strip()
        different += not same
        print(f"{lang}    {'equal    ' if same else 'DIFFERENT'} {path.name}: ours {ours} upstream {theirs[str(path)]}")
    averaged = work / f"average_{lang}.txt"
    run_py("import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')",
           [str(checkout / "average_wer.py"), str(result), str(averaged)], work)
    upstream_mean = float(averaged.read_text(encoding="utf-8").splitlines()[-1].split()[1].rstrip("%"))
    same = len(wers) == len(clips) and seedtts_average(wers) == upstream_mean
    different += not same
    print(f"{lang}    {'equal    ' if same else 'DIFFERENT'} average WER: ours "
          f"{seedtts_average(wers) if wers else None}% upstream {upstream_mean}%")
    return different


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed-tts-eval", type=Path, required=True, help="a Seed-TTS-eval checkout (run_wer.py)")
    parser.add_argument("--only", choices=("rule", "en", "zh"), action="append", help="run only these checks")
    args = parser.parse_args()
    checkout = args.seed_tts_eval.resolve()
    if not (checkout / "run_wer.py").is_file():
        raise SystemExit(f"{checkout} has no run_wer.py")
    if not (JIWER3 / "jiwer" / "__init__.py").is_file():
        raise SystemExit(f"jiwer 3.1.0 is not at {JIWER3}: run `bash scripts/setup.sh`")
    checks = args.only or ["rule", "en", "zh"]
    different = 0
    if "rule" in checks:
        different += check_rule(checkout)
    with tempfile.TemporaryDirectory(prefix="seedtts-parity-") as tmp:
        work = Path(tmp)
        from clonebench.core.hashing import HashCache, sha256_file

        if "en" in checks:
            from clonebench.seedtts.seedtts_whisper import SeedTTSWhisperScorer
            from tests.tiny_models import write_tiny_hf_whisper

            folder = write_tiny_hf_whisper(work / "openai" / "whisper-large-v3")
            scorer = SeedTTSWhisperScorer({"local_path": folder, "sha256": sha256_file(folder / "model.safetensors")},
                                          "cpu", HashCache(None))
            different += check_path(checkout, work, "en", scorer, espeak(work, EN_TEXTS, "en-us", "en"))
        if "zh" in checks:
            from clonebench.seedtts.seedtts_paraformer import SeedTTSParaformerScorer
            from tests.tiny_models import write_tiny_paraformer

            folder = write_tiny_paraformer(work / PARAFORMER_HUB_NAME)
            scorer = SeedTTSParaformerScorer({"local_path": folder, "sha256": sha256_file(folder / "model.pt")},
                                             "cpu", HashCache(None))
            different += check_path(checkout, work, "zh", scorer, espeak(work, ZH_TEXTS, "cmn", "zh"))
    print(f"seedtts parity: {'all equal' if not different else f'{different} different'}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())
