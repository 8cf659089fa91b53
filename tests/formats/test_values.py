"""Non-finite numbers in files: NaN, infinities and overflow (1e400, or beyond trec_eval's 32-bit
float) are refused with file:line wherever a number is read."""

import pytest

from curation.formats.fileio import InputError
from curation.formats.runs import read_run


@pytest.mark.parametrize("score", ["inf", "-inf", "Infinity", "1e400", "-1e400", "1e39", "nan"])
def test_run_score_that_is_not_finite_is_refused_on_both_paths(tmp_path, score):
    # many lines so that the fast (pyarrow) path is the one taken first
    lines = [f"q{q} Q0 d{d} {d} {100 - d} sys\n" for q in range(1, 4) for d in range(1, 30)]
    lines[40] = f"q2 Q0 dX 99 {score} sys\n"
    path = tmp_path / "run.trec"
    path.write_text("".join(lines))
    with pytest.raises(InputError, match=rf"^{path}:41: score .*(finite|NaN)"):
        read_run(path)


@pytest.mark.parametrize("score", ["Infinity", "-Infinity", "1e400", "NaN"])
def test_jsonl_run_score_that_is_not_finite_is_refused(tmp_path, score):
    path = tmp_path / "run.jsonl"
    path.write_text('{"qid": "q1", "docid": "d1", "score": 1}\n' f'{{"qid": "q1", "docid": "d2", "score": {score}}}\n')
    with pytest.raises(InputError, match=rf"^{path}:2: score"):
        read_run(path)
