"""The Python module against the program: the same inputs give the same JSON, the same errors the same messages."""

import json
import os
import subprocess
import sys

import pytest

import fsdpsim

BINARY = os.path.join(os.environ["FSDPSIM_BINARY_DIR"], "fsdpsim")


def cli_json(tmp_path, *args):
    """Runs the program with --json and returns what it wrote."""
    out = tmp_path / "cli.json"
    subprocess.run([BINARY, *args, "--json", str(out)], check=True, capture_output=True)
    return json.loads(out.read_text())


def test_simulate_returns_the_programs_report(tmp_path):
    report = fsdpsim.simulate(model="llama3-8b", topology="dgx-h100-ndr", config={"nodes": 1})
    assert report == cli_json(tmp_path, "simulate", "--model", "llama3-8b", "--set", "nodes=1", "--no-advice")
    assert 0.2 < report["mfu"] < 0.7
    assert report["world_size"] == 8 and report["memory_verdict"]["fit"] == "fits"


def test_sweep_over_hardware_ranks_by_cost_as_the_program_does(tmp_path):
    points = fsdpsim.sweep(model="llama3-8b", grid={"topology": ["dgx-h100-ndr", "hgx-h200-ndr"], "nodes": [1, 2]},
                           price={"dgx-h100-ndr": 2, "hgx-h200-ndr": 4}, rank_by="cost", tokens=1e12)
    assert points == cli_json(tmp_path, "sweep", "--model", "llama3-8b", "--grid",
                              "topology=dgx-h100-ndr,hgx-h200-ndr", "--grid", "nodes=1,2", "--price",
                              "dgx-h100-ndr=2", "--price", "hgx-h200-ndr=4", "--rank-by", "cost", "--tokens",
                              "1000000000000.0")
    assert len(points) == 4
    # H200 at twice the price per GPU-hour costs more per token: the cheaper hardware ranks first.
    assert points[0]["topology"] == "dgx-h100-ndr"
    assert points[0]["price_per_million_tokens"] < points[-1]["price_per_million_tokens"]
    assert all(p["days"] > 0 for p in points)


def test_a_model_given_as_a_dict_is_read_like_its_yaml_file(tmp_path):
    model = {"name": "tiny", "num_layers": 2, "hidden_size": 1024, "ffn_hidden_size": 4096,
             "num_attention_heads": 8, "vocab_size": 32000}
    (tmp_path / "tiny.yaml").write_text(json.dumps(model))
    from_dict = fsdpsim.simulate(model=model, config={"nodes": 1})
    assert from_dict == cli_json(tmp_path, "simulate", "--model", str(tmp_path / "tiny.yaml"), "--set", "nodes=1",
                                 "--no-advice")
    assert from_dict["model"] == "tiny"


def test_a_torchtitan_command_line_is_read_as_the_program_reads_it(tmp_path):
    line = "CONFIG=llama3_8b ./run_train.sh --parallelism.tensor_parallel_degree 2"
    report = fsdpsim.simulate(torchtitan_args=line)
    assert report == cli_json(tmp_path, "simulate", "--torchtitan-args", line, "--no-advice")
    assert report["model"] == "llama3-8b" and report["world_size"] == 8  # run_train.sh's NGPU default


def test_bad_input_raises_config_error_with_the_programs_message():
    with pytest.raises(fsdpsim.ConfigError) as raised:
        fsdpsim.simulate(model="llama3-8b", config={"tp": 3})
    printed = subprocess.run([BINARY, "simulate", "--model", "llama3-8b", "--set", "tp=3"], capture_output=True,
                             text=True)
    assert printed.returncode == 2
    assert printed.stderr == f"fsdpsim: error: {raised.value}\n"
    assert "not divisible by tp·cp = 3" in str(raised.value)
    assert isinstance(raised.value, ValueError)
    with pytest.raises(fsdpsim.ConfigError, match="did you mean 'llama3-8b'"):
        fsdpsim.simulate(model="llama3-8")
    with pytest.raises(fsdpsim.CommandLineError, match="--bogus"):
        fsdpsim.simulate(model="llama3-8b", bogus=1)


def test_schedule_fit_and_presets():
    ir = fsdpsim.schedule(model="llama3-8b", config={"nodes": 1})
    assert ir["info"]["world_size"] == 8
    assert {op["kind"] for op in ir["ops"]} >= {"all_gather", "reduce_scatter"}
    answer = fsdpsim.fit(model="llama3-8b", find="micro_batch_size", config={"nodes": 1})
    assert answer["found"] and answer["assignment"].startswith("micro_batch_size=")
    assert answer["result"]["fits"]
    listed = fsdpsim.presets()
    assert "llama3-8b" in [m["name"] for m in listed["models"]]
    assert "dgx-h100-ndr" in [t["name"] for t in listed["topologies"]]
    assert "nodes" in [k["name"] for k in listed["keys"]]


def test_python_dash_m_runs_the_program():
    done = subprocess.run([sys.executable, "-m", "fsdpsim", "simulate", "--model", "llama3-8b", "--set", "tp=3"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert "fsdpsim: error:" in done.stderr and "tp·cp = 3" in done.stderr
    done = subprocess.run([sys.executable, "-m", "fsdpsim", "presets"], capture_output=True, text=True)
    assert done.returncode == 0 and "llama3-70b" in done.stdout


def test_shards_from_python_merge_to_the_one_process_sweep(tmp_path):
    grid = {"nodes": [1, 2], "micro_batch_size": [1, 2]}
    whole = fsdpsim.sweep(model="llama3-8b", grid=grid)
    parts = [tmp_path / f"part{i}.json" for i in range(2)]
    for i, part in enumerate(parts):
        written = fsdpsim.sweep(model="llama3-8b", grid=grid, shard=f"{i}/2", part=str(part))
        assert written["shard"] == i and written["total"] == 4
    assert fsdpsim.merge(parts) == whole
    with pytest.raises(ValueError, match="needs part="):
        fsdpsim.sweep(model="llama3-8b", grid=grid, shard="0/2")
