"""bench/ner_probe.py: the hand-written probe lines parse into texts and gold spans, and the script reports them."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import ner_probe  # noqa: E402


def test_gold_marks_become_spans_of_the_text_without_them(tmp_path):
    probe = tmp_path / "probe.txt"
    probe.write_text("# a comment\n\nwife [[Joan]] called from [[Revere]].\nno identifier here\n")
    assert ner_probe.read_probe(probe) == [("wife Joan called from Revere.", [(5, 9), (22, 28)]),
                                           ("no identifier here", [])]


def test_a_heading_of_many_lines_is_one_text(tmp_path):
    probe = tmp_path / "probe.txt"
    probe.write_text("RESPONDENT:\\n\\t[[STATE OF MYSORE]]\n")
    assert ner_probe.read_probe(probe) == [("RESPONDENT:\n\tSTATE OF MYSORE", [(13, 28)])]


def test_every_probe_file_has_gold_words_and_no_stray_marks():
    for path in ner_probe.PROBES.glob("*.txt"):
        lines = ner_probe.read_probe(path)
        assert sum(len(gold) for _, gold in lines) >= 20, path.name
        assert not any("[[" in text or "]]" in text for text, _ in lines), path.name


def test_the_script_prints_each_file_and_the_held_out_coverage_last(capsys):
    assert ner_probe.main(["--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert {line.split(":")[0] for line in lines[:-1]} == {path.name for path in ner_probe.PROBES.glob("*.txt")}
    name, value = lines[-1].split(": ")
    assert name == "probe_held_out_coverage" and 0.5 <= float(value) <= 1.0
