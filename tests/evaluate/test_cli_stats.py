"""golden stats metrics / compare / power / noise / sweep / attribute through click's CliRunner on real files."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from curation.cli import main

N = 30


def _write_run(path, tag, first_rel_rank):
    """One TREC run: for query i the relevant document d1 sits at rank first_rel_rank(i)."""
    lines = []
    for i in range(N):
        q = f"q{i:02d}"
        order = [f"n{j}" for j in range(9)]
        order.insert(first_rel_rank(i) - 1, "d1")
        for r, doc in enumerate(order, 1):
            lines.append(f"{q} Q0 {doc} {r} {100 - r} {tag}\n")
    path.write_text("".join(lines))
    return str(path)


@pytest.fixture
def files(tmp_path):
    qrels = tmp_path / "qrels.txt"
    lines = [f"q{i:02d} 0 d1 1\nq{i:02d} 0 n0 0\n" for i in range(N)]
    lines.append("qx 0 zz 0\n")  # a judged query with no relevant document
    qrels.write_text("".join(lines))
    a = _write_run(tmp_path / "a.trec", "bm25", lambda i: 3)
    b = _write_run(tmp_path / "b.trec", "rerank", lambda i: 1 if i % 3 else 5)
    queries = tmp_path / "queries.jsonl"
    rows = [{"qid": f"q{i:02d}", "text": f"query {i}", "stratum": {"market": "us" if i < 20 else "de"},
             "traffic": 10, "weight": 1 / N, "split": "holdout" if i % 2 else "tune", "user": f"u{i // 3}"}
            for i in range(N)]
    queries.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"qrels": str(qrels), "a": a, "b": b, "queries": str(queries), "dir": tmp_path}


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_metrics_table_and_json(files):
    res = run("stats", "metrics", files["a"], files["b"], "--qrels", files["qrels"], "-m", "mrr@10", "-m", "recall@5")
    assert res.exit_code == 0, res.output
    assert "31 queries in the qrels" in res.output
    line_a = next(x for x in res.output.splitlines() if x.startswith("bm25"))
    assert "0.3226" in line_a  # mrr@10 = (30 * 1/3 + 0 for qx) / 31
    assert "recall@5: 1 queries with no relevant document (grade >= 1) left out (mean over 30): qx" in res.output
    res = run("stats", "metrics", files["b"], "--qrels", files["qrels"], "-m", "p@1", "--json")
    out = json.loads(res.output)["runs"]["rerank"]["p@1"]
    assert out["mean"] == pytest.approx(20 / 31) and out["n"] == 31


def test_compare_prints_delta_interval_tests_and_verdict(files):
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "mrr@10",
              "--resamples", "2000")
    assert res.exit_code == 0, res.output
    # per query: 20 queries 1 - 1/3, 10 queries 1/5 - 1/3, qx 0 - 0
    delta = (20 * (2 / 3) + 10 * (1 / 5 - 1 / 3)) / 31
    assert f"{delta:+.4f}" in res.output
    assert "20 better, 10 worse, 1 tied" in res.output
    assert "verdict: B better" in res.output


def test_compare_json_is_reproducible_and_counts_dropped(files):
    args = ("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "ndcg@10", "--json",
            "--seed", "3", "--resamples", "1000")
    first, second = run(*args), run(*args)
    assert first.output == second.output
    out = json.loads(first.output)
    assert out["n"] == 30 and out["dropped"] == 1 and out["drop_reasons"] == {"no positively graded document": 1}
    assert len(out["per_query"]) == 30 and out["verdict"] == "B better"


def test_compare_binary_metric_reports_mcnemar(files):
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "success@1",
              "--resamples", "500")
    assert "McNemar (exact)  A only 0, B only 20" in res.output


def test_export_folder_gives_strata_weights_split_and_clusters(files, tmp_path):
    export = tmp_path / "v1"
    export.mkdir()
    (export / "qrels.txt").write_text(open(files["qrels"]).read())
    (export / "queries.jsonl").write_text(open(files["queries"]).read())
    res = run("stats", "compare", files["a"], files["b"], "--qrels", export, "--metric", "mrr@10", "--weighting",
              "stratum",
              "--resamples", "500")
    assert res.exit_code == 0, res.output
    assert "weighting: stratum" in res.output and "market=us" in res.output and "market=de" in res.output
    assert "not in queries file: 1" in res.output  # qx is judged but not in the queries file
    res = run("stats", "compare", files["a"], files["b"], "--qrels", export, "--split", "holdout", "--cluster-col",
              "user",
              "--resamples", "500", "--json")
    out = json.loads(res.output)
    assert out["n"] == 15 and out["split"] == "holdout" and out["clusters"] == 10
    res = run("stats", "compare", files["a"], files["b"], "--qrels", export, "--cluster-col", "user", "--ci", "bca",
              "--resamples", "500", "--json")
    out = json.loads(res.output)
    assert out["ci_method"] == "bca" and out["clusters"] == 10 and out["low"] <= out["delta"] <= out["high"]


def test_compare_html_is_self_contained_and_escaped(files, tmp_path):
    evil = _write_run(tmp_path / "evil.trec", "<script>alert(1)</script>", lambda i: 2)
    html = tmp_path / "out" / "report.html"
    res = run("stats", "compare", files["a"], evil, "--qrels", files["qrels"], "--html", html, "--resamples", "500")
    assert res.exit_code == 0, res.output
    text = html.read_text()
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.count("<svg") == 2 and "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "https://" not in text


def test_compare_errors_say_how_to_fix(files, tmp_path):
    bad = tmp_path / "bad.trec"
    bad.write_text("q00 Q0 d1 1 5\n")
    res = run("stats", "compare", files["a"], bad, "--qrels", files["qrels"])
    assert res.exit_code == 1 and "bad.trec:1: has 5 fields, expected 6" in res.output
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "ndgc@10")
    assert res.exit_code == 2 and "not known" in res.output
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--weighting", "traffic")
    assert res.exit_code == 1 and "need --queries" in res.output
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--queries", files["queries"],
              "--weighting", "stratum", "--ci", "bca")
    assert res.exit_code == 1 and "use --ci percentile" in res.output


def test_tie_declares_equivalence_only_inside_the_interval(files, tmp_path):
    same = _write_run(tmp_path / "same.trec", "same", lambda i: 3)
    res = run("stats", "compare", files["a"], same, "--qrels", files["qrels"], "--tie", "0.01", "--resamples", "500")
    assert "verdict: equivalent within ±0.01" in res.output
    res = run("stats", "compare", files["a"], files["b"], "--qrels", files["qrels"], "--tie", "0.01", "--resamples",
              "500")
    assert "verdict: B better" in res.output


def test_power_from_sd_and_from_runs(files):
    res = run("stats", "power", "--sd-diff", "0.2", "--queries", "100", "--delta", "0.05")
    assert res.exit_code == 0, res.output
    assert "= 0.0566" in res.output and "= 128" in res.output and "winner's curse" in res.output
    res = run("stats", "power", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "mrr@10", "--json")
    out = json.loads(res.output)
    d = np.array([2 / 3] * 20 + [1 / 5 - 1 / 3] * 10 + [0.0])
    assert out["sd"] == pytest.approx(d.std(ddof=1)) and out["n"] == 31
    # Two runs and no --delta: the observed difference is context, never the planning target.
    assert out["needed"] is None and out["observed"] == pytest.approx(d.mean())
    res = run("stats", "power", files["a"], files["b"], "--qrels", files["qrels"], "--metric", "mrr@10")
    assert "queries needed: not planned; give --delta" in res.output
    assert f"observed delta B - A        = {d.mean():+.4f}  (context only" in res.output


def test_power_at_two_queries(files):
    from statsmodels.stats.power import TTestPower

    res = run("stats", "power", "--sd-diff", "0.1", "--queries", "2", "--delta", "0.5", "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["mdd"] == pytest.approx(TTestPower().solve_power(nobs=2, alpha=0.05, power=0.8) * 0.1, rel=1e-5)
    assert out["needed"] == 3  # statsmodels: 2.48 queries


def test_noise_says_loudly_when_the_null_arm_fails(files, tmp_path):
    again = _write_run(tmp_path / "again.trec", "bm25", lambda i: 3)
    res = CliRunner().invoke(main, ["stats", "noise", files["a"], again, "--qrels", files["qrels"], "--resamples",
                                    "500"])
    assert res.exit_code == 0 and "contains 0, as it must" in res.output
    # all three rules printed, the default (3 sd) marked; two repeats and 31 queries flagged
    assert "3sd     0.0000" in res.output and "range   0.0000" in res.output and "paired  0.0000" in res.output
    assert "(--rule 3sd:" in res.output and "only 2 repeated runs" in res.output
    res = CliRunner().invoke(main, ["stats", "noise", files["a"], again, "--qrels", files["qrels"], "--resamples",
                                    "500",
                                    "--rule", "range", "--json"])
    out = json.loads(res.stdout)
    assert out["rule"] == "range" and set(out["thresholds"]) == {"3sd", "range", "paired"}
    res = CliRunner().invoke(main, ["stats", "noise", files["a"], files["b"], "--qrels", files["qrels"],
                                    "--resamples", "500"])
    assert res.exit_code == 4 and "NULL ARM FAILED" in res.output


def test_sweep_and_attribute(files, tmp_path):
    runs = [_write_run(tmp_path / f"c{k}.trec", f"c{k}", lambda i, k=k: 1 + (i + k) % 4) for k in range(5)]
    res = run("stats", "sweep", *runs, "--qrels", files["qrels"], "--queries", files["queries"], "--metric", "mrr@10")
    assert res.exit_code == 0, res.output
    assert "5 configurations, 15 tune queries, 15 holdout queries" in res.output
    assert "expected optimism of the best of 5" in res.output and "gap of the winner (tune - holdout)" in res.output
    assert "average gap over all 5 configurations" in res.output and "winner's gap beyond the average" in res.output
    assert "--top" not in res.output and "only 15 tune queries" in res.output
    res = run("stats", "sweep", *runs, "--qrels", files["qrels"], "--queries", files["queries"], "--metric", "mrr@10",
              "--top", "4", "--json")
    out = json.loads(res.stdout)
    assert out["top"] == 4 and any("the method re-scores at most the top 3" in n for n in out["notes"])
    assert out["winner_excess"] == pytest.approx(out["winner_gap"] - out["mean_gap"])
    both = _write_run(tmp_path / "ab.trec", "ab", lambda i: 1)
    res = run("stats", "attribute", files["a"], files["b"], runs[0], both, "--qrels", files["qrels"],
              "--metric", "mrr@10", "--a-name", "rerank", "--b-name", "expand", "--resamples", "500")
    assert res.exit_code == 0, res.output
    assert "rerank with expand off" in res.output and res.output.count("interaction") == 2


@pytest.mark.parametrize("command", ["metrics", "compare", "power", "noise", "sweep", "attribute"])
def test_every_command_has_help_with_an_example(command):
    res = run("stats", command, "--help")
    assert res.exit_code == 0 and "Example" in res.output


def test_metrics_reads_results_trunc_and_warns_once_about_its_extra_fields(shared):
    d = shared("trec_eval_tests")
    res = run("stats", "metrics", d / "results.trunc", "--qrels", d / "qrels.test", "-m", "p@10", "--json")
    assert res.exit_code == 0, res.output
    assert res.stderr.count("fields after the sixth") == 1
    out = json.loads(res.stdout)
    # trec_eval -c on the same files (out.test.aqc): P_10 all = 0.2000 (302 has no lines: 0)
    assert f"{out['runs']['STANDARD']['p@10']['mean']:.4f}" == "0.2000"
    res = run("stats", "metrics", d / "results.trunc", "--qrels", d / "qrels.test", "-m", "p@10")
    assert "note: only 3 queries: means over so few are rough estimates" in res.stdout
