"""The ``unmix`` command line: thin wrappers that parse, call the library, and print."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from unmix.errors import ConfigError, UnmixError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="unmix — identifiable representation learning: generate, train, score.",
)


def _version(value: bool) -> None:
    if value:
        from unmix import __version__

        print(f"unmix {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = None,
) -> None:
    """unmix — identifiable representation learning: generate, train, score."""
    import warnings

    # warnings from the library reach a command-line user as one line each, without source
    warnings.formatwarning = _one_line_warning


def _one_line_warning(message, category, filename, lineno, line=None) -> str:
    return f"warning: {message}\n"


console = Console(soft_wrap=True)  # never break a table row or a path mid-line
err_console = Console(stderr=True, soft_wrap=True)


def _fail(err: Exception) -> None:
    from rich.text import Text

    err_console.print(Text.assemble(("error: ", "bold red"), str(err)), soft_wrap=True)
    raise typer.Exit(2)


OverridesArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Overrides key=value, validated like YAML fields, e.g. train.lr=2e-3 objective.tau=0.5",
        show_default=False,
    ),
]


PluginOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        help="Import this .py file or module first (it registers its own kinds); repeatable. "
        "Also read from $UNMIX_PLUGINS.",
    ),
]


def _plugins(names: list[str] | None) -> None:
    from unmix.plugins import load_plugins

    load_plugins(names)


def _resolve(setting: str, budget: str | None, overrides: list[str] | None, flags: dict):
    """The resolved setting: source → budget → paper recipe → flags and key=value overrides."""
    from unmix.resolve import parse_overrides, resolve

    updates = {k: v for k, v in flags.items() if v is not None}
    updates.update(parse_overrides(overrides))
    return resolve(setting, budget, overrides=updates)


SettingArg = Annotated[
    str, typer.Argument(help="A preset name (see `unmix settings`) or a YAML file.")
]


@app.command()
def settings(
    show: Annotated[str | None, typer.Option(help="Print this preset's YAML.")] = None,
    budget: Annotated[
        str | None, typer.Option(help="With --show: apply this budget (smoke, quick, paper).")
    ] = None,
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print JSON (the list, or the --show setting).")
    ] = False,
):
    """List the presets (or print one as YAML, fully resolved, a starting point for your own).

    When the output is not a terminal the list is a plain Markdown table (nothing truncated)."""
    from unmix import papers
    from unmix.settings import label

    try:
        _plugins(plugin)
        if show:
            resolved = _resolve(show, budget, overrides, {})
            if as_json:
                print(json.dumps(resolved.setting.to_dict(), indent=2, ensure_ascii=False))
                return
            console.print(resolved.setting.to_yaml(), highlight=False, markup=False, end="")
            return
        if budget or overrides:
            raise ConfigError("--budget and overrides apply to --show NAME")
    except UnmixError as err:
        _fail(err)
    columns = ("preset", "space", "p(z)", "p(z̃|z)", "model", "objective", "source")
    rows = []
    for p in papers.PRESETS.values():
        s = p.setting
        model = s.model
        rows.append(
            (
                p.name,
                s.latent.space,
                s.latent.marginal.label(),
                s.latent.conditional.label() if s.latent.conditional else "–",
                f"vae ({model.vae.prior} prior)"
                if model.kind == "vae"
                else getattr(model, "space", model.kind),
                label(s.objective),
                p.source.split(", ", 1)[-1],
            )
        )
    if as_json:
        print(
            json.dumps(
                [dict(zip(columns, r, strict=True)) for r in rows], indent=2, ensure_ascii=False
            )
        )
        return
    if not _is_terminal():
        print(_markdown_table(columns, rows))
        return
    table = Table()
    table.add_column(columns[0], no_wrap=True)
    for column in columns[1:]:
        table.add_column(column)
    for row in rows:
        table.add_row(*row)
    console.print(table)


def _is_terminal() -> bool:
    import sys

    return sys.stdout.isatty()


def _markdown_table(columns, rows) -> str:
    """A plain Markdown table: one line per row, nothing truncated (for pipes and files)."""

    def cell(v) -> str:
        return str(v).replace("|", "\\|")

    lines = ["| " + " | ".join(map(cell, columns)) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(map(cell, r)) + " |" for r in rows]
    return "\n".join(lines)


@app.command()
def sample(
    setting: SettingArg,
    n: Annotated[int, typer.Option("--n", help="Number of positive pairs.")] = 10_000,
    out: Annotated[Path, typer.Option(help="Output .npz file.")] = Path("samples.npz"),
    seed: Annotated[
        int | None, typer.Option(help="Seed of the latent draws (default: the data seed).")
    ] = None,
    data_seed: Annotated[int | None, typer.Option(help="Data seed (fixes the mixing).")] = None,
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
):
    """Draw n pairs (z, z_pos) and their observations (x, x_pos); save them with the setting."""
    from unmix.sampling import sample_dataset, save_dataset

    try:
        _plugins(plugin)
        s = _resolve(setting, None, overrides, {"seeds.data": data_seed}).setting
        path = save_dataset(out, sample_dataset(s, n, seed), s)
    except UnmixError as err:
        _fail(err)
    console.print(f"wrote {n} pairs of {s.name} (z, z_pos, x, x_pos, setting) to {path}")


@app.command()
def train(
    setting: SettingArg,
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
    steps: Annotated[int | None, typer.Option(help="Training steps (train.steps).")] = None,
    batch_size: Annotated[int | None, typer.Option(help="Batch size (train.batch_size).")] = None,
    lr: Annotated[float | None, typer.Option(help="Adam learning rate (train.lr).")] = None,
    seed: Annotated[int | None, typer.Option(help="Training seed (init, batches).")] = None,
    data_seed: Annotated[int | None, typer.Option(help="Data seed (mixing, eval data).")] = None,
    threads: Annotated[int | None, typer.Option(help="Torch CPU threads (train.threads).")] = None,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto.")] = "cpu",
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the run in --out.")] = False,
    budget: Annotated[
        str | None,
        typer.Option(
            help="smoke, quick or paper: replace the training budget (with the paper's own "
            "recipe for the setting); flags and key=value overrides still win."
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    tensorboard: Annotated[
        bool, typer.Option(help="Write TensorBoard event files into OUT/tensorboard.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
):
    """Train an encoder on a setting and write a run directory (config, metrics.csv, summary.json).

    Fields can be set as key=value after the setting, e.g.
    `unmix train zimmermann-table1-row4 train.lr=2e-3 train.steps=30`."""
    from unmix.train import train as run_training

    flags = {
        "train.steps": steps,
        "train.batch_size": batch_size,
        "train.lr": lr,
        "train.threads": threads,
        "seeds.train": seed,
        "seeds.data": data_seed,
    }
    try:
        _plugins(plugin)
        resolved = _resolve(setting, budget, overrides, flags)
        s = resolved.setting
        out_dir = out or Path("runs") / f"{_safe_name(s.name)}-d{s.seeds.data}-t{s.seeds.train}"
        result = run_training(
            s,
            out_dir,
            device=device,
            resume=resume,
            progress=progress and not as_json,
            provenance=resolved.provenance,
            tensorboard=tensorboard,
        )
    except UnmixError as err:
        _fail(err)
    sm = result.summary
    if as_json:
        from unmix.runs import strict_json

        print(json.dumps({**strict_json(sm), "run_dir": str(out_dir)}))
        return
    scores = ", ".join(f"{k} {sm[k]:.4f}" for k in _scalar_metrics(sm, s))
    console.print(
        f"[bold]{s.name}[/]: {scores} after {sm['steps']} steps in {sm['wall_time_s']:.1f} s "
        f"→ {out_dir}",
        highlight=False,
    )


def _safe_name(name: str) -> str:
    """``name`` as one path component (no separators, no leading dots)."""
    import re

    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name).lstrip(".") or "run"


def _scalar_metrics(summary: dict, setting) -> list[str]:
    """The summary's keys of the setting's metrics (a dict-valued metric contributes its keys;
    per-factor entries are left to the files)."""
    keys = [k for k in summary.get("metrics", setting.metric_names) if k in summary]
    return keys or [k for k in ("r2", "mcc") if k in summary]


@app.command()
def verify(
    group: Annotated[str, typer.Argument(help="wang-isola, zimmermann, ima or all.")] = "all",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    plots: Annotated[Path | None, typer.Option(help="Write figures to this folder.")] = None,
    seed: int = 0,
):
    """Check the papers' theoretical claims numerically; exit 1 if any check fails."""
    from unmix.verify import run_checks

    try:
        if plots is not None and plots.exists() and not plots.is_dir():
            raise ConfigError(f"--plots {plots} is a file: give a folder for the figures.")
        results = run_checks(group, plots_dir=plots, seed=seed)
    except UnmixError as err:
        _fail(err)
    if as_json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    elif not _is_terminal():  # pipes and files: one untruncated Markdown line per check
        columns = ("group", "check", "measured", "criterion", "result")
        rows = [
            (r.group, r.name, f"{r.measured:.4g}", r.expected, "pass" if r.passed else "FAIL")
            for r in results
        ]
        print(_markdown_table(columns, rows))
    else:
        table = Table("group", "check", "measured", "criterion", "result")
        for r in results:
            table.add_row(
                r.group,
                r.name,
                f"{r.measured:.4g}",
                r.expected,
                "[green]pass[/]" if r.passed else "[red]FAIL[/]",
            )
        console.print(table)
    if not all(r.passed for r in results):
        raise typer.Exit(1)


@app.command()
def reproduce(
    target: Annotated[str, typer.Argument(help="A paper's table or figure (see the list below).")],
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
    budget: Annotated[
        str, typer.Option(help="smoke (seconds), quick (CPU-sized) or paper (the paper's own).")
    ] = "quick",
    seeds: Annotated[int, typer.Option(help="Seeds per row.")] = 1,
    workers: Annotated[int, typer.Option(help="Parallel worker processes.")] = 1,
    out: Annotated[Path, typer.Option(help="Results folder.")] = Path("results"),
    baselines: Annotated[
        bool, typer.Option(help="Also run the Identity/Supervised columns the paper reports.")
    ] = True,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto.")] = "cpu",
    backend: Annotated[str, typer.Option(help="local or ray.")] = "local",
    tensorboard: Annotated[
        bool, typer.Option(help="TensorBoard files for every run and for the report's figures.")
    ] = False,
    report_only: Annotated[
        bool,
        typer.Option(
            "--report-only",
            help="Train nothing: write the report from the runs already finished "
            "(a sweep still running or cut short) and list the others.",
        ),
    ] = False,
    data_root: Annotated[
        Path | None,
        typer.Option(
            "--data-root",
            help="zimmermann-table3 only: train on KITTI Masks read from this "
            "kitti_peds_v2.pickle (or its folder) instead of the generated mask sequences.",
        ),
    ] = None,
):
    """Run a paper's table or figure (skipping finished runs) and write it beside the paper's values.

    An override applies to every run; prefixed with a column or a row it applies to those runs
    only, e.g. unsupervised:objective.tau=0.5 or zimmermann-table4-row1:train.steps=8000.

    Targets: zimmermann-table1, zimmermann-table2, zimmermann-fig2, zimmermann-table3,
    zimmermann-table4, reizinger-fig2, reizinger-fig3, reizinger-fig4, reizinger-fig5 (and any a
    registered paper adds)."""
    from unmix.reproduce import reproduce as run_reproduce
    from unmix.resolve import parse_overrides
    from unmix.sweep import SweepInterrupted

    progress = _SweepProgress(budget != "smoke")

    def done(oc) -> None:
        tag = "skip" if oc.skipped else ("fail" if oc.error else "done")
        if oc.summary:
            sm = oc.summary
            scores = " ".join(f"{k} {sm[k]:.4f}" for k in _scalar_metrics(sm, oc.job.setting)[:3])
            extra = f"{scores} ({sm['wall_time_s']:.1f} s)"
        else:
            extra = (oc.error or "").splitlines()[0] if oc.error else ""
        progress.line(f"  {tag} {oc.job.setting.name} seed {oc.job.setting.seeds.train}: {extra}")
        progress.advance()

    try:
        _plugins(plugin)
        if data_root is not None:
            from unmix.papers.zimmermann.table3 import kitti_root

            if target != "zimmermann-table3":
                raise ConfigError(
                    f"--data-root reads KITTI Masks for zimmermann-table3 only, not {target!r}; "
                    "point a setting at your files with an override instead, e.g. data.root=DIR."
                )
            root_ctx = kitti_root(data_root)
        else:
            root_ctx = contextlib.nullcontext()
        with root_ctx:
            report = run_reproduce(
                target,
                budget,
                seeds,
                workers,
                out,
                baselines,
                device,
                backend,
                done,
                overrides=parse_overrides(overrides),
                tensorboard=tensorboard,
                on_plan=None if report_only else (lambda jobs: progress.start(jobs, workers)),
                report_only=report_only,
            )
    except SweepInterrupted as err:
        progress.stop()
        err_console.print(str(err), markup=False, highlight=False)
        raise typer.Exit(130) from None
    except UnmixError as err:
        progress.stop()
        _fail(err)
    progress.stop()
    console.print(report.markdown, markup=False, highlight=False)
    console.print(f"wrote {report.out}/{target}.md and .csv in {report.wall_time_s:.0f} s")
    if report.failures and report_only:
        err_console.print(
            f"{len(report.failures)} planned run(s) not finished yet (listed in the report)",
            markup=False,
        )
    elif report.failures:
        err_console.print("failed runs:\n" + "\n".join(report.failures), markup=False)
        raise typer.Exit(1)


class _SweepProgress:
    """Overall progress of a sweep on stderr: k of N runs, elapsed, ETA; before a long target, an
    estimate of its wall time from a short timing of each distinct step."""

    def __init__(self, estimate: bool) -> None:
        self.estimate = estimate
        self.bar = None

    def start(self, jobs, workers: int) -> None:
        from unmix.progress import progress_bar
        from unmix.sweep import needs_training

        todo = sum(needs_training(j) for j in jobs)
        msg = f"{len(jobs)} runs, {len(jobs) - todo} finished already, {todo} to train"
        if self.estimate and todo:
            from unmix.reproduce import estimate_seconds

            secs = estimate_seconds(jobs, workers)
            msg += f"; estimated ≈ {secs / 60:.0f} min with {workers} worker(s)"
        err_console.print(msg, markup=False, highlight=False)
        self.bar = progress_bar("runs", console=err_console, transient=True)
        self.task = self.bar.add_task("runs", total=len(jobs))
        self.bar.start()

    def line(self, text: str) -> None:
        import sys

        # on a terminal, print above the live bar (its console); in a pipe, to stdout as is
        live = self.bar is not None and sys.stdout.isatty()
        (self.bar.console if live else console).print(text, markup=False, highlight=False)

    def advance(self) -> None:
        if self.bar is not None:
            self.bar.advance(self.task)

    def stop(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None


@app.command()
def render(
    setting: SettingArg,
    budget: Annotated[
        str | None, typer.Option(help="Apply this budget first (smoke, quick, paper).")
    ] = None,
    root: Annotated[
        Path | None, typer.Option(help="Write here (default: data.root or the cache).")
    ] = None,
    n_train: Annotated[int | None, typer.Option(help="Training images (data.n_train).")] = None,
    n_test: Annotated[int | None, typer.Option(help="Test images (data.n_test).")] = None,
    size: Annotated[int | None, typer.Option(help="Image side in px (mixing.image_size).")] = None,
    data_seed: Annotated[int | None, typer.Option(help="Data seed (seeds.data).")] = None,
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
):
    """Pre-render the image data set a setting trains on (resumable; docs/data.md).

    The setting needs a renderer mixing (sprites, scenes3d) and a `data: {kind: rendered}`
    section, e.g. `unmix render zimmermann-table4-row1 --budget quick`."""
    from unmix.datasets import ensure_rendered
    from unmix.generative import latent_process_of, mixing_of

    try:
        _plugins(plugin)
        s = _resolve(setting, budget, overrides, {}).setting
        if s.data is None or s.data.kind != "rendered":
            raise ConfigError(
                f"'{setting}' has no `data: {{kind: rendered}}` section, so there is nothing to "
                "pre-render (a setting without one renders each batch on the fly)."
            )
        updates = {
            "data.root": str(root) if root else None,
            "data.n_train": n_train,
            "data.n_test": n_test,
            "mixing.image_size": size,
            "seeds.data": data_seed,
        }
        s = s.replace(**{k: v for k, v in updates.items() if v is not None})
        process = latent_process_of(s)
        out = ensure_rendered(s, process, mixing_of(s), progress=True)
    except UnmixError as err:
        _fail(err)
    console.print(f"{s.data.n_train} + {s.data.n_test} images in {out} (train/, test/)")
    if root:
        console.print(f"runs find it with `data: {{kind: rendered, root: {out}}}` in their setting")


@app.command()
def bench(
    setting: SettingArg = "zimmermann-table1-row1",
    overrides: OverridesArg = None,
    plugin: PluginOpt = None,
    batch_size: Annotated[int, typer.Option(help="Batch size (paper: 6144).", min=2)] = 6144,
    steps: Annotated[int, typer.Option(help="Timed steps (after 2 warm-up steps).", min=1)] = 5,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:N or auto.")] = "cpu",
    precision: Annotated[
        str | None, typer.Option(help="fp32 or bf16 (default: the setting's train.precision).")
    ] = None,
    threads: Annotated[int | None, typer.Option(help="Torch CPU threads (default: all).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """Time training steps at the paper's architecture and batch size, stage by stage.

    Prints the step's matmul GFLOP beside the GEMM peak measured in the same run (--json: one
    object with seconds_per_step, stages, threads, device, precision, peak_rss_mb, gflops,
    gemm_peak_gflops, cpu_gemm and gemm_peaks). On CPU the GEMM peak is the faster of PyTorch's
    BLAS and oneDNN, each measured; `train.cpu_gemm=blas` times the step on the BLAS."""
    import torch

    from unmix.bench import bench_steps

    try:
        _plugins(plugin)
        s = _resolve(setting, None, overrides, {}).setting
        if threads is not None:
            if threads < 1:
                raise ConfigError(f"--threads must be >= 1, got {threads}.")
            torch.set_num_threads(threads)
        r = bench_steps(s, batch_size, steps, device=device, precision=precision)
    except UnmixError as err:
        _fail(err)
    if as_json:
        print(json.dumps(r.to_dict()))
        return
    stages = ", ".join(f"{k} {v:.3f}" for k, v in r.stages.items())
    console.print(
        f"{r.setting}: batch {r.batch_size} on {r.device} ({r.threads} threads, {r.precision}, "
        f"linear layers on {r.cpu_gemm}"
        + (f", loss kernels {r.loss_kernels}" if r.loss_kernels != "-" else "")
        + "): "
        f"{r.seconds_per_step:.3f} s/step = {r.steps_per_second:.2f} steps/s [{stages} s]; "
        f"{r.gflops:.1f} GFLOP of matmuls per step = {100 * r.fraction_of_peak:.0f} % of the "
        f"measured GEMM peak ({r.gemm_peak_gflops:.0f} GFLOP/s"
        + (
            " = best of " + ", ".join(f"{k} {v:.0f}" for k, v in r.gemm_peaks.items())
            if r.gemm_peaks
            else ""
        )
        + f"); peak RSS {r.peak_rss_mb:.0f} MB",
        markup=False,
        highlight=False,
    )


@app.command()
def fit(
    data: Annotated[
        Path,
        typer.Argument(help=".npz with x (and x_pos, or a sequence x with --offset; z optional)."),
    ],
    out: Annotated[Path, typer.Option(help="Directory for the fitted encoder and features.")],
    offset: Annotated[
        int | None, typer.Option(help="x is a sequence: pairs (x[t], x[t+K]) (default 1).", min=1)
    ] = None,
    space: Annotated[str, typer.Option(help="sphere, box or unbounded.")] = "sphere",
    conditional: Annotated[
        str | None,
        typer.Option(help="vmf, normal or laplace (default: vmf on a sphere, else laplace)."),
    ] = None,
    tau: Annotated[float, typer.Option(help="Temperature τ of the loss.")] = 1.0,
    n_components: Annotated[
        int | None, typer.Option(help="Feature dimension (default: x's).")
    ] = None,
    steps: Annotated[int, typer.Option(help="Adam steps.")] = 1000,
    batch_size: Annotated[int, typer.Option(help="Pairs per step.")] = 512,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = 1e-3,
    seed: Annotated[int, typer.Option(help="Training seed (init, batches).")] = 0,
    threads: Annotated[int, typer.Option(help="Torch CPU threads.")] = 1,
    device: Annotated[str, typer.Option(help="cpu, cuda or cuda:N.")] = "cpu",
):
    """Fit a contrastive encoder to your own data (unmix.estimators.ContrastiveEncoder).

    Writes encoder.pt (tensors only) and params.json (reload with
    unmix.estimators.load_estimator), and features.npy; prints the MCC if the file holds z."""
    import numpy as np

    from unmix.estimators import ContrastiveEncoder

    try:
        arrays = _load_npz(data)
        if "x" not in arrays:
            raise ConfigError(f"{data} has no array 'x' (it holds: {', '.join(arrays) or 'none'})")
        x = arrays["x"]
        x_pos = arrays.get("x_pos")
        if x_pos is not None and offset is not None:
            raise ConfigError(f"{data} holds x_pos: pairs are given, so drop --offset")
        cond = conditional or ("vmf" if space == "sphere" else "laplace")
        enc = ContrastiveEncoder(
            space=space,
            conditional=cond,
            tau=tau,
            n_components=n_components,
            steps=steps,
            batch_size=batch_size,
            lr=lr,
            seed=seed,
            device=device,
            threads=threads,
        )
        if x_pos is not None:
            enc.fit(x, x_pos=x_pos)
        else:
            enc.fit(x, offset=offset or 1)
        enc.save(out)
        features = enc.transform(x)
        import io

        from unmix.runs import atomic_write_bytes

        buf = io.BytesIO()
        np.save(buf, features)
        atomic_write_bytes(out / "features.npy", buf.getvalue())
        score = enc.score(x, arrays["z"]) if "z" in arrays else None
    except (UnmixError, ValueError) as err:
        _fail(err)
    pairs = "x, x_pos" if x_pos is not None else f"x at offset {enc.offset_}"
    line = f"fitted {cond} encoder on {space} to {pairs} ({steps} steps)"
    if score is not None:
        line += f": MCC {score:.4f}"
    console.print(f"{line} → {out}", highlight=False, markup=False)


def _load_npz(path: Path) -> dict:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files if f[k].dtype != object}
    except FileNotFoundError:
        raise ConfigError(f"{path} does not exist") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"{path} is not a readable .npz file ({err})") from None


@app.command()
def results(
    paths: Annotated[list[Path], typer.Argument(help="Run directories or folders holding runs.")],
    csv: Annotated[Path | None, typer.Option(help="Also write the table to this CSV.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON records instead.")] = False,
):
    """Gather the runs found (recursively) below the paths into one table (Markdown)."""
    from unmix.results import gather, to_markdown

    try:
        df = gather(paths)
        if csv is not None:
            from unmix.runs import atomic_write_text

            atomic_write_text(csv, df.to_csv(index=False))
    except UnmixError as err:
        _fail(err)
    if as_json:
        print(df.to_json(orient="records", indent=2))
    else:
        print(to_markdown(df) if len(df) else "no runs found (no summary.json below the paths)")


if __name__ == "__main__":
    app()
