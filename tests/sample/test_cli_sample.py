"""`golden sample queries` through click's CliRunner on real files."""

from __future__ import annotations

import json

from click.testing import CliRunner

from curation.cli import main

LOG = "query,user,market\n" + "".join(
    f"{q},u{i % 7},{m}\n"
    for i, (q, m) in enumerate(
        [("Weather", "us")] * 30 + [("news today", "us")] * 12 + [("how do I return shoes?", "us")] * 6
        + [(f"tail query {k}", "us") for k in range(20)]
        + [("wetter", "de")] * 5 + [("nachrichten", "de")] * 3 + [("me@example.com", "de")]
    )
)


def run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def write(tmp_path, name="log.csv", text=LOG):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_sample_writes_rows_and_prints_the_strata_table(tmp_path):
    log, out = write(tmp_path), tmp_path / "q.jsonl"
    result = run(["sample", "queries", str(log), "--query-col", "query", "--user-col", "user", "--stratum", "market",
                  "--size", "6", "--floor", "2", "--seed", "3", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 6
    # Traffic: us 30+12+6+20 = 68, de 5+3+1 = 9 of 77 searches. Quotas: 6*68/77 = 5.3 and 0.7 ->
    # de is lifted to its floor of 2, us gets 4.
    by_market = {m: [r for r in rows if r["stratum"] == {"market": m}] for m in ("us", "de")}
    assert len(by_market["us"]) == 4 and len(by_market["de"]) == 2
    assert by_market["us"][0]["text"] == "weather" and by_market["us"][0]["traffic"] == 30
    assert by_market["us"][0]["users"] == 7
    table = result.stdout
    assert "read 77 log rows (77 searches): 26 distinct queries in 2 strata" in table
    de_line = next(line for line in table.splitlines() if line.startswith("market=de"))
    assert de_line.split()[1:5] == ["3", "9", "11.7%", "2"] and "yes (floor 2)" in de_line
    us_line = next(line for line in table.splitlines() if line.startswith("market=us"))
    assert us_line.split()[1:5] == ["23", "68", "88.3%", "4"]
    assert f"wrote 6 queries to {out}" in table


def test_same_seed_same_file_byte_for_byte(tmp_path):
    log = write(tmp_path)
    outs = []
    for name in ("a.jsonl", "b.jsonl"):
        out = tmp_path / name
        result = run(["sample", "queries", str(log), "--query-col", "query", "--stratum", "market", "--shape",
                      "--size", "8", "--floor", "1", "--seed", "5", "--weighting", "uniform", "--out", str(out)])
        assert result.exit_code == 0, result.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


def test_bad_input_stops_with_file_and_line_and_writes_nothing(tmp_path):
    log = write(tmp_path, text="query,n\na,1\nb,2\nc,lots\n")
    out = tmp_path / "q.jsonl"
    result = CliRunner().invoke(main, ["sample", "queries", str(log), "--query-col", "query", "--count-col", "n",
                                       "--size", "1", "--out", str(out)])
    assert result.exit_code == 1
    assert f"{log}:4: count 'lots' is not a number" in result.output
    assert not out.exists() and not list(tmp_path.glob(".q.jsonl*"))


def test_floors_exceeding_size_explain_the_fix(tmp_path):
    log = write(tmp_path)
    result = CliRunner().invoke(main, ["sample", "queries", str(log), "--query-col", "query", "--stratum", "market",
                                       "--size", "5", "--floor", "3", "--out", str(tmp_path / "q.jsonl")])
    assert result.exit_code == 1
    assert "floors alone need 6 queries" in result.output
    assert "more than --size 5: raise --size to at least 6, lower --floor to at most 2" in result.output


def test_warnings_go_to_stderr(tmp_path):
    log = write(tmp_path)
    hand = write(tmp_path, "hand.txt", "my own query\n")
    out = tmp_path / "q.jsonl"
    result = run(["sample", "queries", str(log), "--query-col", "query", "--stratum", "market", "--size", "12",
                  "--floor", "4",
                  "--handwritten", str(hand), "--out", str(out)])
    assert result.exit_code == 0
    assert "warning: stratum market=de has only 3 distinct queries, fewer than the floor of 4" in result.stderr
    assert "warning:" not in result.stdout
    assert "look like personal data (1 email)" in result.stderr
    assert "wrote 12 queries + 1 hand-written" in result.stdout
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert rows[-1]["stratum"] == {"source": "handwritten"} and rows[-1]["weight"] == 0


def test_help_has_an_example():
    result = run(["sample", "queries", "--help"])
    assert result.exit_code == 0 and "Example:" in result.output and "golden sample queries" in result.output


def test_uniform_draw_takes_the_head_whole_unless_asked_not_to(tmp_path):
    # market us, 8 draws: 2*8*30 >= 68, 2*7*12 >= 38, 2*6*6 >= 26, then 2*5*1 < 20: three queries
    # taken whole, the other 5 drawn alike from the 20 tail queries; market de draws 2 (no head: two
    # draws must be left to the rest).
    log = write(tmp_path)
    out = tmp_path / "q.jsonl"
    args = ["sample", "queries", str(log), "--query-col", "query", "--stratum", "market", "--size", "10",
            "--floor", "2", "--weighting", "uniform", "--out", str(out)]
    result = run(args)
    assert result.exit_code == 0, result.output
    assert "weighting uniform, 3 head queries taken whole" in result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    whole = {r["text"] for r in rows if r["inclusion"] == 1.0}
    assert whole == {"weather", "news today", "how do i return shoes?"}
    us = [r for r in rows if r["stratum"] == {"market": "us"} and r["inclusion"] < 1]
    assert len(us) == 5 and all(r["inclusion"] == 5 / 20 for r in us)
    assert all(r["stratum_traffic_sq"] == 30**2 + 12**2 + 6**2 + 20 for r in us)
    result = run(args[:-2] + ["--head", "drawn", "--out", str(out)])
    assert "weighting uniform, head drawn" in result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(r["inclusion"] < 1 for r in rows)
