import numpy as np
import yaml
from typer.testing import CliRunner

from unmix.cli import app
from unmix.settings import Setting

runner = CliRunner()


def test_settings_lists_presets():
    result = runner.invoke(app, ["settings"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert "zimmermann-table1-row12" in result.output and "zimmermann-table2-row10" in result.output


def test_settings_show_prints_loadable_yaml():
    result = runner.invoke(app, ["settings", "--show", "zimmermann-table1-row5"])
    assert result.exit_code == 0
    assert Setting.from_dict(yaml.safe_load(result.output)).latent.space == "box"


def test_sample_writes_arrays_and_setting(tmp_path):
    out = tmp_path / "d.npz"
    result = runner.invoke(
        app, ["sample", "zimmermann-table1-row1", "--n", "50", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    data = np.load(out)
    for key in ("z", "z_pos", "x", "x_pos"):
        assert data[key].shape == (50, 10)
    np.testing.assert_allclose(np.linalg.norm(data["z"], axis=1), 1.0, atol=1e-5)
    assert Setting.from_dict(yaml.safe_load(str(data["setting"]))).name == "zimmermann-table1-row1"


def test_bad_setting_gives_one_readable_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("latent: {space: box, dim: 3, conditional: {kind: vmf, kappa: 1}}\n")
    result = runner.invoke(app, ["sample", str(bad), "--n", "5", "--out", str(tmp_path / "x.npz")])
    assert result.exit_code == 2
    assert "vMF conditional lives on the sphere" in result.output
    assert "Traceback" not in result.output


def test_unknown_preset_suggests(tmp_path):
    result = runner.invoke(app, ["train", "zimmermann-table1-row99", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "Did you mean" in result.output
