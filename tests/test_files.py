"""Output files are written whole or not at all (hroof._base.files)."""

from __future__ import annotations

import pytest

from hroof._base.errors import HroofError
from hroof._base.files import figure_format, partial_path, replace_with, save_figure, write_text


def test_write_text_creates_the_directory_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "a" / "b.json"
    assert write_text(path, "{}\n") == path
    assert path.read_text() == "{}\n"
    assert sorted(p.name for p in path.parent.iterdir()) == ["b.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "r.csv"
    write_text(path, "old\n")

    def fail(tmp):
        tmp.write_text("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        replace_with(path, fail)
    assert path.read_text() == "old\n" and not partial_path(path).exists()


def test_figure_formats(tmp_path):
    from matplotlib.figure import Figure

    assert figure_format("x.SVG") == "svg"
    with pytest.raises(
        HroofError, match=r"^--plot x\.pdf: a figure file must end in \.png or \.svg$"
    ):
        figure_format("x.pdf", ("png", "svg"), "--plot")
    with pytest.raises(HroofError, match=r"must end in \.png, \.svg or \.pdf"):
        save_figure(Figure(), tmp_path / "x.txt")
    out = save_figure(Figure(), tmp_path / "f.png")
    assert out.read_bytes()[:4] == b"\x89PNG" and sorted(p.name for p in tmp_path.iterdir()) == [
        "f.png"
    ]
