"""A PEFT adapter variant (`model_args: {pretrained: BASE, adapter: DIR}`, captrack/backends/adapters.py): checked when
the experiment is read (a bad adapter is one line, nothing run), then handed to each backend its own way (hf: peft=,
vllm: lora_local_path= with LoRA enabled, captrack-ds: merged weights), and part of the evaluation's identity."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from captrack.backends.adapters import adapter_fingerprint, backend_model_args
from captrack.errors import InputError
from captrack.pipeline.experiment import load_experiment


def _adapter(folder: Path, base: str, rank: int = 8, peft_type: str = "LORA") -> Path:
    """An adapter folder as peft's save_pretrained writes it (the weights file's bytes are not read at plan time)."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": base, "peft_type": peft_type,
                                                            "r": rank, "target_modules": ["q_proj"]}))
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return folder


def _manifest(tmp_path: Path, variant_args: str, model: str = "hf", extra: str = "") -> Path:
    (tmp_path / "base").mkdir(exist_ok=True)
    path = tmp_path / "exp.yaml"
    path.write_text(f"name: t\nworkdir: work\nleaderboard: board\ntasks: [captrack_probe_c2_logic]\n"
                    f"base: {{name: base, model_args: {{pretrained: base}}}}\n"
                    f"variants:\n  - {{name: lora, model: {model}, model_args: {{pretrained: base, {variant_args}}}{extra}}}\n")
    return path


def test_an_adapter_is_found_beside_the_experiment_and_checked(tmp_path: Path) -> None:
    _adapter(tmp_path / "out" / "lora", str(tmp_path / "base"))
    variant = load_experiment(_manifest(tmp_path, "adapter: out/lora")).variants[0]
    assert variant.model_args["adapter"] == str(tmp_path / "out" / "lora")  # absolute: the same from any folder
    assert variant.model_args["pretrained"] == str(tmp_path / "base")


def test_a_hub_base_fits_a_folder_or_alias_of_the_same_name(tmp_path: Path) -> None:
    _adapter(tmp_path / "lora", "HuggingFaceTB/SmolLM2-135M-Instruct")
    (tmp_path / "smollm2-135m-instruct").mkdir()
    path = _manifest(tmp_path, "adapter: lora")
    path.write_text(path.read_text().replace("{pretrained: base, ", "{pretrained: smollm2-135m-instruct, "))
    assert load_experiment(path).variants[0].model_args["adapter"] == str(tmp_path / "lora")


@pytest.mark.parametrize(("args", "model", "extra", "message"), [
    ("adapter: nowhere", "hf", "", r"adapter folder .*nowhere does not exist; give the folder peft's save_pretrained"),
    ("adapter: empty", "hf", "", r"empty holds no adapter_config.json, so it is not a PEFT adapter"),
    ("adapter: other", "hf", "", r"was made on '/elsewhere/llama-8b', not on pretrained .*adapter_base: '/elsewhere/llama-8b'"),
    ("adapter: other, adapter_base: /x/qwen", "hf", "", r"adapter_base is '/x/qwen' but .* says the adapter was made on"),
    ("adapter: lora", "captrack-replay", "", r"model captrack-replay cannot take an adapter; use one of hf, captrack-hf"),
    ("adapter: lora, peft: lora", "hf", "", r"give the adapter once, as adapter: \(not also peft\)"),
    ("adapter: ia3", "vllm", "", r"is a IA3 adapter; vLLM applies only LoRA adapters"),
])
def test_a_bad_adapter_is_one_line_at_plan_time(tmp_path: Path, args: str, model: str, extra: str, message: str) -> None:
    (tmp_path / "empty").mkdir()
    _adapter(tmp_path / "other", "/elsewhere/llama-8b")
    _adapter(tmp_path / "lora", str(tmp_path / "base"))
    _adapter(tmp_path / "ia3", str(tmp_path / "base"), peft_type="IA3")
    with pytest.raises(InputError, match=message) as raised:
        load_experiment(_manifest(tmp_path, args, model, extra))
    assert "\n" not in str(raised.value) and "'lora'" in str(raised.value)  # one line, naming the checkpoint
    assert not (tmp_path / "work").exists()  # nothing was run


def test_adapter_base_says_which_base_when_the_names_differ(tmp_path: Path) -> None:
    _adapter(tmp_path / "other", "/elsewhere/llama-8b")
    variant = load_experiment(_manifest(tmp_path, "adapter: other, adapter_base: /elsewhere/llama-8b")).variants[0]
    assert variant.model_args["adapter"] == str(tmp_path / "other")


def test_each_backend_gets_the_adapter_its_own_way(tmp_path: Path) -> None:
    small, odd = _adapter(tmp_path / "r8", "b"), _adapter(tmp_path / "r12", "b", rank=12)
    args = {"pretrained": "/m", "dtype": "float32", "adapter_base": "b"}
    assert backend_model_args("hf", {**args, "adapter": str(small)}) == {"pretrained": "/m", "dtype": "float32",
                                                                         "peft": str(small)}
    assert backend_model_args("captrack-hf", {**args, "adapter": str(small)})["peft"] == str(small)
    vllm = backend_model_args("vllm", {**args, "adapter": str(odd)})
    assert vllm == {"pretrained": "/m", "dtype": "float32", "lora_local_path": str(odd), "max_lora_rank": 16}
    assert backend_model_args("vllm", {**args, "adapter": str(small), "max_lora_rank": 32})["max_lora_rank"] == 32
    assert backend_model_args("hf", {"pretrained": "/m"}) == {"pretrained": "/m"}  # no adapter: as given


def test_a_changed_adapter_is_a_new_evaluation(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path / "lora", "b")
    before = adapter_fingerprint({"adapter": str(adapter)})
    (adapter / "adapter_model.safetensors").write_bytes(b"retrained")
    assert adapter_fingerprint({"adapter": str(adapter)}) != before != ""
    assert adapter_fingerprint({"pretrained": "/m"}) == ""  # no adapter: a checkpoint's identity as before


def test_the_evaluation_stage_reruns_when_the_adapter_changes(tmp_path: Path) -> None:
    from captrack.pipeline.job_stages import eval_stage

    adapter = _adapter(tmp_path / "lora", str(tmp_path / "base"))
    path = _manifest(tmp_path, "adapter: lora")
    path.write_text(path.read_text() + "executor: {name: local, gpus: 0}\n")  # no GPU to ask torch about
    experiment = load_experiment(path)
    variant = experiment.variants[0]

    def stage_inputs() -> tuple[dict, dict]:
        stage = eval_stage(experiment, variant, 0, {}, None, tmp_path / "out")
        assert stage.job is not None
        return stage.current_inputs(), stage.job(1).args
    inputs, args = stage_inputs()
    assert args["spec"]["model_args"]["adapter"] == str(adapter)  # the job hands the adapter to the evaluation
    (adapter / "adapter_model.safetensors").write_bytes(b"retrained")
    again, args_again = stage_inputs()
    assert again["weights"] != inputs["weights"] and args_again["cache"] != args["cache"]  # a fresh request cache too
