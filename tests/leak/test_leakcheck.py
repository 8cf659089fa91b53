"""Leak check: exact scores, no false negatives against brute force, each mode on real text."""

from __future__ import annotations

import gzip
import importlib
import inspect
import json
import random
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from curation.cli import main
from curation.formats.fileio import InputError
from curation.formats.normalize import normalize_text
from curation.leak.driver import leakcheck
from curation.leak.report import read_report

# --------------------------------------------------------------------------------------------
# an independent brute force: every query against every chunk, plain Python sets


def _grams(text: str, unit: str, n: int) -> set:
    norm = normalize_text(text)
    if unit == "word":
        toks = re.findall(r"\w+", norm)
        return {" ".join(toks[i : i + n]) for i in range(len(toks) - n + 1)}
    return {norm[i : i + n] for i in range(len(norm) - n + 1)}


def _verbatim(q: str, c: str) -> bool:
    """q inside c at word boundaries, by scanning every occurrence."""
    q, c = normalize_text(q), normalize_text(c)
    start = c.find(q)
    while start >= 0:
        before = c[start - 1] if start > 0 else " "
        after = c[start + len(q)] if start + len(q) < len(c) else " "
        ok_head = not (q[:1].isalnum() or q[:1] == "_") or not (before.isalnum() or before == "_")
        ok_tail = not (q[-1:].isalnum() or q[-1:] == "_") or not (after.isalnum() or after == "_")
        if ok_head and ok_tail:
            return True
        start = c.find(q, start + 1)
    return False


def brute_force(queries, chunks, *, threshold, unit="word", n=3):
    found = set()
    for qid, qtext in queries:
        q = _grams(qtext, unit, n)
        for cid, ctext in chunks:
            c = _grams(ctext, unit, n)
            if q:
                inter = len(q & c)
                if inter / len(q | c) >= threshold:
                    found.add((qid, cid, "jaccard"))
                if inter / len(q) >= threshold:
                    found.add((qid, cid, "containment"))
                if _verbatim(qtext, ctext):
                    found.add((qid, cid, "exact"))
            elif normalize_text(qtext) and normalize_text(qtext) == normalize_text(ctext):
                found.add((qid, cid, "exact"))
    return found


def _found(report):
    return {(q.qid, m.chunk_id, m.mode) for q in report.queries for m in q.matches}


def _write_jsonl(path, rows, *, gz=False):
    data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """Queries and chunks over a small vocabulary, with planted verbatim and near copies (case,
    curly quotes, a changed or an extra word), some chunks with non-ASCII text, spread over
    plain JSONL, gzipped JSONL, Parquet (several row groups) and TSV."""
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(40)]

    def sent(k):
        return " ".join(rng.choice(vocab) for _ in range(k))

    queries = [(f"q{i}", sent(rng.randint(1, 9))) for i in range(30)]
    chunks = []
    for i in range(400):
        text = sent(rng.randint(1, 25))
        r = rng.random()
        if r < 0.35:
            q = rng.choice(queries)[1].split()
            if len(q) > 3 and rng.random() < 0.5:
                q[rng.randrange(len(q))] = rng.choice(vocab)
            if rng.random() < 0.3:
                q.append(rng.choice(vocab))
            core = " ".join(q).upper() if rng.random() < 0.5 else " ".join(q)
            if rng.random() < 0.3:
                text = core  # the chunk is (nearly) the query
            else:
                text = f"{sent(rng.randint(0, 6))}, \u201c{core}\u201d {sent(rng.randint(0, 6))}".strip()
        if rng.random() < 0.15:
            text = text.replace(" ", "\u00a0", 1) + " caf\u00e9"
        chunks.append((f"c{i:03d}", text))
    folder = tmp_path_factory.mktemp("gen")
    parts = [chunks[:120], chunks[120:220], chunks[220:330], chunks[330:]]
    _write_jsonl(folder / "a.jsonl", [{"id": c, "text": t} for c, t in parts[0]])
    _write_jsonl(folder / "b.jsonl.gz", [{"docid": c, "contents": t} for c, t in parts[1]], gz=True)
    pq.write_table(
        pa.table({"id": [c for c, _ in parts[2]], "text": [t for _, t in parts[2]]}),
        folder / "c.parquet",
        row_group_size=40,
    )
    with open(folder / "d.tsv", "w", encoding="utf-8") as fh:
        fh.write("id\ttext\n")
        for c, t in parts[3]:
            fh.write(f"{c}\t{t}\n")
    files = [str(folder / name) for name in ("a.jsonl", "b.jsonl.gz", "c.parquet", "d.tsv")]
    return queries, chunks, files


@pytest.mark.parametrize("threshold", [0.5, 0.85, 1.0])
@pytest.mark.parametrize("ngram", ["word:3", "char:5"])
def test_no_false_negatives_against_brute_force(generated, threshold, ngram):
    queries, chunks, files = generated
    unit, n = ngram.split(":")
    expected = brute_force(queries, chunks, threshold=threshold, unit=unit, n=int(n))
    report = leakcheck(queries, files, threshold=threshold, ngram=ngram, workers=1, max_matches=10_000)
    assert _found(report) == expected
    # The planted copies make this a real check: a good share of pairs match under each mode.
    assert {m for _, _, m in expected} == {"exact", "jaccard", "containment"}
    assert report.chunks == len(chunks)


@pytest.mark.parametrize("ngram", ["word:2", "char:5", "char:9"])
def test_hashed_keys_lose_nothing(generated, ngram, monkeypatch):
    """With n-gram keys hashed to 64 bits (forced here; used when exact keys would not fit), a
    collision can only add a candidate, which verification removes: still exactly brute force."""
    from curation.leak import index as lk

    monkeypatch.setattr(lk, "_POSITIONAL_LIMIT", 0)
    queries, chunks, files = generated
    unit, n = ngram.split(":")
    report = leakcheck(queries, files, threshold=0.5, ngram=ngram, workers=1, max_matches=10_000)
    assert _found(report) == brute_force(queries, chunks, threshold=0.5, unit=unit, n=int(n))


def test_scores_are_the_exact_set_measures(generated):
    queries, chunks, files = generated
    text = dict(chunks)
    qtext = dict(queries)
    report = leakcheck(queries, files, threshold=0.5, workers=1, max_matches=10_000)
    checked = 0
    for q in report.queries:
        for m in q.matches:
            a, b = _grams(qtext[q.qid], "word", 3), _grams(text[m.chunk_id], "word", 3)
            if m.mode == "jaccard":
                assert m.score == len(a & b) / len(a | b)
            elif m.mode == "containment":
                assert m.score == len(a & b) / len(a)
            else:
                assert m.score == 1.0 and m.span == normalize_text(qtext[q.qid])
            checked += 1
    assert checked > 50


def test_several_workers_and_byte_ranges_give_the_same_result(generated, tmp_path):
    queries, chunks, files = generated
    # One big JSONL file cut into many small byte ranges, scanned by two processes.
    big = tmp_path / "all.jsonl"
    _write_jsonl(big, [{"id": c, "text": t} for c, t in chunks])
    from curation.leak import inputs as lk

    tasks = lk.plan_tasks([big], target_bytes=1500)
    assert len(tasks) > 10
    expected = brute_force(queries, chunks, threshold=0.85)
    seen = []
    for task in tasks:
        seen.extend(i.as_py() for ids, _ in lk.iter_task_batches(task) for i in ids)
    assert seen == [c for c, _ in chunks]  # every line in exactly one range, in order
    single = leakcheck(queries, [big], threshold=0.85, workers=1, max_matches=10_000)
    assert _found(single) == expected


def test_process_pool_matches_single_process(generated, monkeypatch):
    queries, chunks, files = generated
    from curation.leak import driver as lk

    real_plan = lk.plan_tasks
    monkeypatch.setattr(lk, "plan_tasks", lambda paths: real_plan(paths, target_bytes=2000))
    monkeypatch.setattr(lk, "_SMALL_CORPUS", 0)  # use the pool even for this small corpus
    two = leakcheck(queries, files, threshold=0.85, workers=2, max_matches=10_000)
    assert _found(two) == brute_force(queries, chunks, threshold=0.85)
    assert two.processes == 2 and two.tasks >= 6


@pytest.mark.slow
def test_dask_cluster_runs_the_same_map(generated):
    distributed = pytest.importorskip("distributed")
    queries, chunks, files = generated
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        report = leakcheck(queries, files, threshold=0.85, dask=cluster.scheduler_address, max_matches=10_000)
    assert _found(report) == brute_force(queries, chunks, threshold=0.85)
    assert report.chunks == len(chunks)


# --------------------------------------------------------------------------------------------
# real text: docstrings of the standard library with FAQ questions planted in some chunks

STDLIB = [
    "json", "re", "textwrap", "string", "collections", "itertools", "functools", "pathlib", "argparse",
    "csv", "difflib", "heapq", "bisect", "statistics", "fractions", "datetime", "calendar", "shlex",
    "fnmatch", "glob", "shutil", "tempfile", "zipfile", "gzip", "base64", "hashlib", "random", "uuid",
    "urllib.parse", "logging", "pprint", "enum", "dataclasses", "contextlib", "copy", "pickle", "queue",
    "subprocess", "threading", "unittest", "doctest", "tarfile", "configparser", "decimal", "inspect",
]

QUESTIONS = {
    # planted verbatim (upper case, curly quotes) inside a long chunk -> exact 1.0, containment 1.0
    "faq-exact": "How do I read a gzipped JSON lines file without loading it all into memory?",
    # planted with its last word changed -> containment 15/16 (18 words, 16 trigrams), not exact
    "faq-contain": "Why does my regular expression match the empty string at the end of every line in my log",
    # a chunk that is the question plus one word -> jaccard 11/12 (13 words: 11 trigrams; chunk 12)
    "faq-jaccard": "What is the fastest way to merge two sorted lists in Python today",
    # not planted anywhere
    "faq-clean": "Can I cancel a scheduled payment after the bank has already approved the transfer",
    "faq-short": "timezone",
}


@pytest.fixture(scope="module")
def stdlib_corpus(tmp_path_factory):
    paragraphs = []
    for name in STDLIB:
        mod = importlib.import_module(name)
        docs = [inspect.getdoc(mod) or ""]
        for attr in sorted(dir(mod)):
            if attr.startswith("_"):
                continue
            obj = getattr(mod, attr, None)
            if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj):
                docs.append(inspect.getdoc(obj) or "")
        for doc in docs:
            for para in re.split(r"\n\s*\n", doc):
                para = " ".join(para.split())
                if len(para.split()) >= 25:
                    paragraphs.append(para)
    paragraphs = sorted(set(paragraphs))
    assert len(paragraphs) > 300
    rng = random.Random(3)
    hosts = rng.sample(range(len(paragraphs)), 2)
    chunks = [(f"doc{i:05d}", p) for i, p in enumerate(paragraphs)]
    # exact: verbatim, with curly quotes around it and in upper case
    cid, text = chunks[hosts[0]]
    words = text.split()
    cut = len(words) // 2
    planted_exact = (" ".join(words[:cut]) + " \u201c" + QUESTIONS["faq-exact"].upper() + "\u201d "
                     + " ".join(words[cut:]))
    chunks[hosts[0]] = (cid, planted_exact)
    # containment: last word changed, quoted in the middle of a long page
    cid2, text2 = chunks[hosts[1]]
    changed = QUESTIONS["faq-contain"].rsplit(" ", 1)[0] + " files"
    chunks[hosts[1]] = (cid2, text2 + " Asked on the forum: " + changed + "? " + text2)
    # jaccard: an FAQ chunk that is the question and one more word
    chunks.append(("faq-page-7", QUESTIONS["faq-jaccard"] + " quickly"))
    chunks.append(("short-chunk", "Timezone"))
    folder = tmp_path_factory.mktemp("stdlib")
    path = folder / "stdlib.jsonl"
    _write_jsonl(path, [{"id": c, "text": t} for c, t in chunks])
    queries = list(QUESTIONS.items())
    qpath = folder / "queries.jsonl"
    _write_jsonl(qpath, [{"qid": q, "text": t} for q, t in queries])
    return {"path": path, "queries": queries, "qpath": qpath, "exact_host": cid, "contain_host": cid2, "chunks": chunks}


def _by_qid(report):
    return {q.qid: q for q in report.queries}


def test_exact_mode_on_real_text(stdlib_corpus):
    s = stdlib_corpus
    r = _by_qid(leakcheck(s["queries"], [s["path"]], modes=["exact"], workers=1))
    hit = r["faq-exact"]
    assert hit.status == "leak"
    assert [(m.chunk_id, m.mode, m.score) for m in hit.matches] == [(s["exact_host"], "exact", 1.0)]
    assert hit.matches[0].span == normalize_text(QUESTIONS["faq-exact"])
    # a changed word is not verbatim; the one-word query equals the one-word chunk
    assert r["faq-contain"].status == "clean"
    assert r["faq-short"].status == "leak" and r["faq-short"].matches[0].chunk_id == "short-chunk"
    assert r["faq-clean"].status == "clean"


def test_containment_mode_on_real_text(stdlib_corpus):
    s = stdlib_corpus
    r = _by_qid(leakcheck(s["queries"], [s["path"]], modes=["containment"], threshold=0.85, workers=1))
    m = r["faq-contain"].matches
    assert [(x.chunk_id, x.mode) for x in m] == [(s["contain_host"], "containment")]
    assert m[0].score == 15 / 16  # 18 words -> 16 trigrams; the changed last word loses one
    # the span is where rapidfuzz aligns the question inside the (normalised) page
    assert "regular expression match the empty string" in m[0].span
    assert r["faq-exact"].matches[0].score == 1.0
    assert r["faq-jaccard"].matches[0].chunk_id == "faq-page-7"
    assert r["faq-clean"].status == "clean"
    # one word has no trigram: reported too short, never clean
    assert r["faq-short"].status == "too_short" and r["faq-short"].ngrams == 0
    assert "fewer than 3 words" in r["faq-short"].reason


def test_jaccard_mode_on_real_text(stdlib_corpus):
    s = stdlib_corpus
    r = _by_qid(leakcheck(s["queries"], [s["path"]], modes=["jaccard"], threshold=0.85, workers=1))
    assert [(m.chunk_id, m.score) for m in r["faq-jaccard"].matches] == [("faq-page-7", 11 / 12)]
    # a question quoted inside a long page is no Jaccard match (its trigrams are a small share)
    assert r["faq-exact"].status == "clean" and r["faq-contain"].status == "clean"
    r2 = _by_qid(leakcheck(s["queries"], [s["path"]], modes=["jaccard"], threshold=0.95, workers=1))
    assert r2["faq-jaccard"].status == "clean"


def test_character_ngrams_on_real_text(stdlib_corpus):
    s = stdlib_corpus
    r = _by_qid(leakcheck(s["queries"], [s["path"]], modes=["containment"], ngram="char:6", workers=1))
    q = normalize_text(QUESTIONS["faq-contain"])
    grams = {q[i : i + 6] for i in range(len(q) - 5)}
    planted = normalize_text(dict(s["chunks"])[s["contain_host"]])
    expected = len({g for g in grams if g in planted}) / len(grams)
    assert r["faq-contain"].matches[0].score == expected
    assert r["faq-clean"].status == "clean"


def test_short_character_ngrams_refused_for_containment(stdlib_corpus):
    s = stdlib_corpus
    with pytest.raises(ValueError, match="char:5 or more"):
        leakcheck(s["queries"], [s["path"]], modes=["containment"], ngram="char:3")
    # Jaccard compares whole texts, so short character n-grams are allowed there.
    leakcheck(s["queries"], [s["path"]], modes=["jaccard"], ngram="char:3", workers=1)


def test_options_are_validated(stdlib_corpus):
    s = stdlib_corpus
    for kwargs, name in [
        ({"threshold": 0}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"modes": ["fuzzy"]}, "modes"),
        ({"ngram": "word:x"}, "ngram"),
        ({"workers": 0}, "workers"),
    ]:
        with pytest.raises(ValueError, match=name):
            leakcheck(s["queries"], [s["path"]], **kwargs)


# --------------------------------------------------------------------------------------------
# boilerplate


TEMPLATE = "For more information see the documentation."


@pytest.fixture
def boilerplate_corpus(tmp_path):
    rng = random.Random(11)
    words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda sigma omega".split()
    rows = []
    for i in range(200):
        body = " ".join(rng.choice(words) for _ in range(30))
        text = f"{body}. {TEMPLATE}" if i % 5 < 2 else body  # 40% carry the template
        rows.append({"id": f"p{i:03d}", "text": text})
    rows.append({"id": "faq-1", "text": "Q: for more information see the documentation about json decoding errors"})
    path = tmp_path / "corpus.jsonl"
    _write_jsonl(path, rows)
    queries = [("q1", "for more information see the documentation about json decoding errors"),
               ("q2", "see the documentation about yaml anchors and aliases please")]
    return path, queries


def test_boilerplate_is_reported_and_can_be_discounted(boilerplate_corpus):
    path, queries = boilerplate_corpus
    plain = _by_qid(leakcheck(queries, [path], modes=["containment"], threshold=0.5, workers=1, max_matches=500))
    # q1: 8 trigrams, 4 from the template: every templated page reaches 4/8 = 0.5
    assert plain["q1"].n_matches == 80 + 1
    assert plain["q1"].ngrams == 8
    assert sorted(plain["q1"].boilerplate) == [
        "for more information", "information see the", "more information see", "see the documentation"]
    report = leakcheck(queries, [path], modes=["containment"], threshold=0.5, workers=1)
    assert ("see the documentation", 81) in report.boilerplate  # 80 templated pages and the FAQ
    assert not report.discounted

    disc = leakcheck(queries, [path], modes=["containment"], threshold=0.5, workers=1, discount_boilerplate=True)
    by = _by_qid(disc)
    assert by["q1"].ngrams == 4
    assert [(m.chunk_id, m.score) for m in by["q1"].matches] == [("faq-1", 1.0)]
    assert by["q1"].n_matches == 1
    assert by["q2"].status == "clean"
    assert disc.discounted


def test_boilerplate_only_query_is_too_short_when_discounted(boilerplate_corpus):
    path, _ = boilerplate_corpus
    r = leakcheck([("t", "for more information see the documentation")], [path], threshold=0.9, workers=1,
                  discount_boilerplate=True)
    assert r.queries[0].status == "too_short"
    assert "boilerplate" in r.queries[0].reason


# --------------------------------------------------------------------------------------------
# inputs and the command line


def test_bad_json_line_is_named(tmp_path):
    path = tmp_path / "broken.jsonl"
    path.write_text('{"id": "a", "text": "one two three"}\n' * 4 + '{"id": "b", "text": \n'
                    + '{"id": "c", "text": "x"}\n')
    with pytest.raises(InputError, match=r"broken.jsonl:5: not valid JSON"):
        leakcheck([("q", "one two three")], [path], workers=1)


def test_integer_ids_are_strings(tmp_path):
    path = tmp_path / "ints.jsonl"
    path.write_text('{"id": 17, "text": "how do I reset my password"}\n{"id": 18, "text": "nothing here at all"}\n')
    r = leakcheck([("q", "How do I reset my password?")], [path], workers=1)
    assert r.queries[0].matches[0].chunk_id == "17"


def test_cli_summary_output_file_and_exit_codes(stdlib_corpus, tmp_path):
    s = stdlib_corpus
    out = tmp_path / "leaks.jsonl"
    runner = CliRunner()
    args = ["leakcheck", "--queries", str(s["qpath"]), "--corpus", str(s["path"]), "--workers", "1", "--out", str(out)]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    assert re.search(r"^leak\s+4\s+80\.0%$", res.output, re.M) and "flagged by containment" in res.output
    assert "too short to judge (not clean)" not in res.output  # faq-short equals a chunk: exact flags it
    records = {r["qid"]: r for r in read_report(out)}
    assert set(records) == set(QUESTIONS)
    assert records["faq-clean"]["status"] == "clean" and records["faq-clean"]["matches"] == []
    assert records["faq-exact"]["matches"][0]["chunk_id"] == s["exact_host"]

    res = runner.invoke(main, args + ["--fail-on-leak"])
    assert res.exit_code == 3
    res = runner.invoke(main, args + ["--fail-on-leak", "--mode", "jaccard", "--threshold", "0.99"])
    assert res.exit_code == 0, res.output
    assert "1 too short to judge (not clean): faq-short" in res.output

    res = runner.invoke(main, args + ["--ngram", "char:3"])
    assert res.exit_code == 1 and "char:5 or more" in res.output
    res = runner.invoke(main, args + ["--mode", "fuzzy"])
    assert res.exit_code == 2 and "exact, jaccard, containment" in res.output


def test_cli_takes_several_corpus_files_after_one_flag(generated, tmp_path):
    queries, chunks, files = generated
    qpath = tmp_path / "q.jsonl"
    _write_jsonl(qpath, [{"qid": q, "text": t} for q, t in queries])
    out = tmp_path / "leaks.jsonl"
    res = CliRunner().invoke(main, ["leakcheck", "--queries", str(qpath), "--corpus", *files, "--workers", "1",
                                    "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert f"against {len(chunks):,} chunks" in res.output
    expected = brute_force(queries, chunks, threshold=0.85)
    got = {(r["qid"], m["chunk_id"], m["mode"]) for r in read_report(out) for m in r["matches"]}
    assert got == expected


def test_help_has_an_example():
    res = CliRunner().invoke(main, ["leakcheck", "--help"])
    assert res.exit_code == 0 and "Example:" in res.output and "golden leakcheck --queries" in res.output


@pytest.mark.slow
def test_unreachable_dask_scheduler_is_a_clean_error(generated):
    pytest.importorskip("distributed")
    queries, _, files = generated
    with pytest.raises(ValueError, match="dask: cannot reach the scheduler"):
        leakcheck(queries, files, dask="tcp://127.0.0.1:9")


def test_corpus_is_read_once_unless_an_id_repeats(generated, tmp_path, monkeypatch):
    """The scan itself finds repeated ids; the exact reader (check_repeats) runs only when one does."""
    from curation.formats import corpus as corpus_format

    queries, chunks, files = generated
    qpath = tmp_path / "q.jsonl"
    _write_jsonl(qpath, [{"qid": q, "text": t} for q, t in queries])
    calls = []
    real = corpus_format.check_repeats
    monkeypatch.setattr(corpus_format, "check_repeats", lambda *a, **k: calls.append(a) or real(*a, **k))
    args = ["leakcheck", "--queries", str(qpath), "--workers", "1", "--out", str(tmp_path / "l.jsonl")]
    res = CliRunner().invoke(main, [*args, "--corpus", *files])
    assert res.exit_code == 0, res.output
    assert calls == [] and "duplicate document" not in res.output
    # The same chunk again in another file (as in files of several shards): counted, as before.
    again = tmp_path / "again.jsonl"
    _write_jsonl(again, [{"id": chunks[0][0], "text": chunks[0][1]}])
    res = CliRunner().invoke(main, [*args, "--corpus", *files, str(again)])
    assert res.exit_code == 0, res.output
    assert len(calls) == 1 and "1 identical duplicate document line(s) dropped" in res.output
    other = tmp_path / "other.jsonl"
    _write_jsonl(other, [{"id": chunks[0][0], "text": "another text"}])
    res = CliRunner().invoke(main, [*args, "--corpus", *files, str(other)])
    assert res.exit_code == 1 and f"{other}:1: document '{chunks[0][0]}' has 'another text' here" in res.output


def test_empty_corpus_file_among_others_is_no_records(generated, tmp_path):
    queries, _, files = generated
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(InputError, match=rf"^{empty}: no records"):
        leakcheck(queries, [*files, empty], workers=1)


def test_bad_line_found_by_a_worker_process_is_named(tmp_path, monkeypatch):
    """An input error raised in a scan process reaches the caller whole (InputError pickles)."""
    from curation.leak import driver as lk

    monkeypatch.setattr(lk, "_SMALL_CORPUS", 0)
    good = "".join(json.dumps({"id": f"d{i}", "text": f"some words number {i}"}) + "\n" for i in range(300))
    path = tmp_path / "broken.jsonl"
    path.write_text(good + '{"id": "b", "text": \n' + good.replace('"d', '"e'))
    real_plan = lk.plan_tasks
    monkeypatch.setattr(lk, "plan_tasks", lambda paths: real_plan(paths, target_bytes=4000))
    with pytest.raises(InputError, match=r"broken.jsonl:301: not valid JSON") as err:
        leakcheck([("q", "some words number")], [path], workers=2)
    assert (err.value.path, err.value.line) == (str(path), 301)


def test_default_workers_follow_idle_cores_and_corpus_size(monkeypatch):
    """One process per core the load leaves idle, at most one per 64 MB of corpus, at least one."""
    from curation.leak import driver as lk

    monkeypatch.setattr(lk, "_available_cores", lambda: 4)
    cases = [(0.1, 1 << 30, 4), (1.6, 1 << 30, 2), (3.7, 1 << 30, 1), (12.0, 1 << 30, 1), (0.0, 150 << 20, 2),
             (0.0, 10 << 20, 1)]
    for load, size, want in cases:
        monkeypatch.setattr(lk.os, "getloadavg", lambda load=load: (load, load, load))
        assert lk.default_workers(size) == want, (load, size)


def test_matches_kept_across_many_pieces_are_those_of_one_piece(generated, monkeypatch):
    """Each piece is sent the merged results' least kept match per query: what it drops could never
    be among the best, so tiny pieces keep the same matches and counts as one piece, in one process
    (spans made at the end) and in a pool (spans made in each process)."""
    queries, chunks, files = generated
    from curation.leak import driver as lk

    jsonl = [f for f in files if f.endswith(".jsonl")]
    one = leakcheck(queries, jsonl, threshold=0.5, workers=1, max_matches=2)
    assert sum(q.n_matches > 2 for q in one.queries) > 5  # matches dropped for the floors
    real_plan = lk.plan_tasks
    monkeypatch.setattr(lk, "plan_tasks", lambda paths: real_plan(paths, target_bytes=1500))
    monkeypatch.setattr(lk, "_SMALL_CORPUS", 0)
    for workers in (1, 2):
        many = leakcheck(queries, jsonl, threshold=0.5, workers=workers, max_matches=2)
        assert many.tasks > 5
        assert [(q.qid, q.matches, q.n_matches) for q in many.queries] == [
            (q.qid, q.matches, q.n_matches) for q in one.queries]
