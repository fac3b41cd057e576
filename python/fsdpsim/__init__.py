"""fsdpsim from Python: plan, predict and check FSDP training before launch.

Each function runs the fsdpsim command of the same name in this process, with the same inputs, and returns the JSON
that command writes, as Python dicts and lists:

    import fsdpsim
    report = fsdpsim.simulate(model="llama3-8b", topology="dgx-h100-ndr", config={"nodes": 1})
    report["mfu"], report["memory"]["verdict"]

Inputs, as the command line takes them:
    model              a preset name, a model YAML or Hugging Face config.json path, or a dict of the model YAML's keys
    topology           a preset name, a topology YAML path, or a dict of the topology YAML's keys
    config             a dict of configuration keys (each becomes --set key=value) or a configuration YAML path
    megatron_args      a Megatron-LM command line (str)
    torchtitan_config  a torchtitan job TOML path
    torchtitan_args=   a torchtitan command line (str), through **options: --module, --config and its flags
    **options          any other option of the command: steps=4 is --steps 4, expandable_segments=True the flag,
                       a list repeats the option

Errors raise ConfigError (bad input: the message names the file, the key and the fix), ScheduleError, CommandLineError
(an unknown option) or Error, each with the program's own message. `python -m fsdpsim ...` runs the program itself.
"""

import json
import os
import tempfile

from fsdpsim._fsdpsim import CommandLineError, ConfigError, Error, ScheduleError
from fsdpsim._fsdpsim import main as _main
from fsdpsim._fsdpsim import run as _run

__all__ = ["simulate", "sweep", "fit", "schedule", "presets", "merge", "run", "main", "ConfigError", "ScheduleError",
           "CommandLineError", "Error"]


def _text(value):
    """A Python value as the command line writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _option(name):
    return "--" + name.replace("_", "-")


def _options(options):
    """{'steps': 4, 'expandable_segments': True, 'price': ['a=1', 'b=2']} -> ['--steps', '4', ...]."""
    args = []
    for name, value in options.items():
        if value is None or value is False:
            continue
        if value is True:
            args.append(_option(name))
        elif isinstance(value, (list, tuple)):
            for item in value:
                args += [_option(name), _text(item)]
        else:
            args += [_option(name), _text(value)]
    return args


class _Job:
    """The shared inputs of a command as arguments, with the files a dict input needs kept until the call ends."""

    def __init__(self, scratch, model, topology, config, megatron_args, torchtitan_config, set):
        self.args = []
        if model is not None:
            self.args += ["--model", self._file(scratch, "model.yaml", model)]
        if topology is not None:
            self.args += ["--topology", self._file(scratch, "topology.yaml", topology)]
        if isinstance(config, dict):
            for key, value in config.items():
                self.args += ["--set", f"{key}={_text(value)}"]
        elif config is not None:
            self.args += ["--config", os.fspath(config)]
        if megatron_args is not None:
            self.args += ["--megatron-args", megatron_args if isinstance(megatron_args, str) else " ".join(megatron_args)]
        if torchtitan_config is not None:
            self.args += ["--torchtitan-config", os.fspath(torchtitan_config)]
        for assignment in set or []:
            self.args += ["--set", assignment]

    @staticmethod
    def _file(scratch, name, value):
        if isinstance(value, dict):
            # JSON is YAML: the dict is read by the same strict YAML reader as a file would be.
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8") as out:
                json.dump(value, out)
            return path
        return os.fspath(value)


def _command(command, scratch, job, options, json_option="--json"):
    """Runs `fsdpsim COMMAND ... --json FILE` and returns (the JSON read back, what the command printed)."""
    out = os.path.join(scratch, "out.json")
    printed = _run([command] + job.args + _options(options) + [json_option, out])
    with open(out, encoding="utf-8") as f:
        return json.load(f), printed


def _job_command(command, model, topology, config, megatron_args, torchtitan_config, set, options, echo):
    with tempfile.TemporaryDirectory(prefix="fsdpsim-") as scratch:
        job = _Job(scratch, model, topology, config, megatron_args, torchtitan_config, set)
        result, printed = _command(command, scratch, job, options)
    if echo:
        print(printed, end="")
    return result


def simulate(model=None, topology="dgx-h100-ndr", config=None, *, megatron_args=None, torchtitan_config=None,
             set=None, echo=False, **options):
    """`fsdpsim simulate`: the report of one configuration (step time, MFU, memory verdict and timeline peak, ...).
    echo=True also prints the text report."""
    options.setdefault("no_advice", True)
    return _job_command("simulate", model, topology, config, megatron_args, torchtitan_config, set, options, echo)


def sweep(model=None, grid=None, topology="dgx-h100-ndr", config=None, *, megatron_args=None,
          torchtitan_config=None, set=None, price=None, echo=False, **options):
    """`fsdpsim sweep`: every combination of `grid` ({'nodes': [8, 16], 'topology': [...]}), ranked; a list of points.
    price is one price per GPU-hour or {topology or profile name: price}."""
    grid_args = [f"{key}={','.join(_text(v) for v in values)}" for key, values in (grid or {}).items()]
    if grid_args:
        options["grid"] = grid_args
    if isinstance(price, dict):
        options["price"] = [f"{name}={_text(value)}" for name, value in price.items()]
    elif price is not None:
        options["price"] = price
    if options.get("shard") is not None:
        # One shard of a split sweep (shard="i/N", part="FILE"): the part is written for merge(); it is returned too.
        if options.get("part") is None:
            raise ValueError("sweep(shard=...) needs part='FILE' to write the shard's results to")
        with tempfile.TemporaryDirectory(prefix="fsdpsim-") as scratch:
            job = _Job(scratch, model, topology, config, megatron_args, torchtitan_config, set)
            printed = _run(["sweep"] + job.args + _options(options))
        if echo:
            print(printed, end="")
        with open(options["part"], encoding="utf-8") as f:
            return json.load(f)
    return _job_command("sweep", model, topology, config, megatron_args, torchtitan_config, set, options, echo)


def fit(model=None, find="gpus", topology="dgx-h100-ndr", config=None, *, megatron_args=None,
        torchtitan_config=None, set=None, echo=False, **options):
    """`fsdpsim fit`: the fewest GPUs, the largest micro-batch or the longest sequence that fits."""
    options["find"] = find
    return _job_command("fit", model, topology, config, megatron_args, torchtitan_config, set, options, echo)


def schedule(model=None, topology="dgx-h100-ndr", config=None, *, megatron_args=None, torchtitan_config=None,
             set=None, echo=False, **options):
    """`fsdpsim schedule`: the schedule IR of one step (info, groups, streams, buffers, ops) as a dict."""
    return _job_command("schedule", model, topology, config, megatron_args, torchtitan_config, set, options, echo)


def presets():
    """`fsdpsim presets`: the built-in models, topologies, GPU profiles, configuration keys and Megatron-LM flags."""
    with tempfile.TemporaryDirectory(prefix="fsdpsim-") as scratch:
        out = os.path.join(scratch, "presets.json")
        _run(["presets", "--json", out])
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def merge(parts, echo=False, **options):
    """`fsdpsim merge`: the parts of a sharded sweep (sweep(..., shard='i/N', part='FILE')) as one ranked list."""
    with tempfile.TemporaryDirectory(prefix="fsdpsim-") as scratch:
        out = os.path.join(scratch, "out.json")
        printed = _run(["merge"] + [os.fspath(p) for p in parts] + _options(options) + ["--json", out])
        with open(out, encoding="utf-8") as f:
            result = json.load(f)
    if echo:
        print(printed, end="")
    return result


def run(*args):
    """Runs `fsdpsim ARGS` and returns what it printed: run("presets"), run("simulate", "--model", "llama3-8b")."""
    return _run([_text(a) for a in args])


def main(args=None):
    """The program's main: runs `fsdpsim ARGS` (default: sys.argv[1:]) printing as it does; returns the exit status."""
    import sys

    sys.stdout.flush()
    return _main(list(sys.argv[1:] if args is None else args))
