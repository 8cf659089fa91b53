"""A realistic demo data set, generated from a seed, and the first steps of the path run on it.

One module (about 550 lines, 80 of them the topic and query tables) because the log, corpus,
runs and hidden ground truth are drawn from one seeded generator in one order; split, a change in
one part would silently change the others' data.

The data imitate a help-centre search for a fictional file-storage product, "Nimbus":

* ``search_log.csv``: one row per search (``ts``, ``user_id``, ``surface``, ``query``). Query
  popularity follows a Zipf law (a heavy head and a long tail), the three surfaces (``web``,
  ``app``, ``chat``) carry different traffic and favour different topics, people type the same
  query with different case, spacing and apostrophes, and a few tail queries hold personal data.
* ``corpus.jsonl``: a few thousand chunks (``id``, ``title``, ``url``, ``text``) of help articles,
  plus release notes and blog chunks that mention the same words without answering anything.
* ``runs/*.trec``: three candidate systems (a strong hybrid, a lexical baseline, a weak small
  embedding model) that ranked the corpus for every query, built from a hidden ground truth and
  lexical (TF-IDF) similarity, so their quality clearly differs.
* ``hidden/qrels.txt``: that ground truth (grades 0-2, by qid), for the demo's simulated judges
  and for checking; a real project has none.
* ``guidelines.md`` (relevance on a 0-2 scale) and ``handwritten.txt`` (hard queries a person
  wrote).

:func:`build_demo` then samples the log (:func:`curation.sample.sampling.sample_queries`) and pools
the runs for the sampled queries (:func:`curation.pool.pooling.make_pool`).

One module of about 550 lines on purpose: some 150 of them are the demo's content (topics, phrases,
guidelines text) that only the generator below reads, and the rest is one path from a seed to a
loaded store; splitting it would put the content tables and their only reader in different files.
"""

from __future__ import annotations

import csv
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from curation.formats.corpus import Doc, Fetched, fetch_docs, write_corpus
from curation.formats.fileio import atomic_write
from curation.formats.normalize import normalize_text
from curation.formats.qrels import QrelLine, write_qrels
from curation.formats.runs import trec_order, write_run

MARKER = ".golden-demo"
SYSTEMS = ("hybrid-v2", "bm25", "embed-small")  # strong, medium, weak
# How each system's score mixes lexical similarity, the hidden truth, noise all systems share
# (so their top-k lists overlap) and noise of its own.
SYSTEM_MIX = {
    "hybrid-v2": (0.45, 0.30, 0.06, 0.06),
    "bm25": (1.00, 0.17, 0.05, 0.05),
    "embed-small": (0.20, 0.22, 0.10, 0.10),
}
SURFACES = {"web": 0.55, "app": 0.30, "chat": 0.15}  # share of searches
SAMPLE_SIZE, SAMPLE_FLOOR, POOL_DEPTH = 40, 5, 10

# slug, area, keyword phrases, action ("... my ..."), problem, thing
TOPICS = [
    ("reset-password", "account", ["reset password", "forgot password"],
     "reset my password", "password reset email not arriving", "password reset"),
    ("two-factor", "security", ["two factor authentication", "2fa"],
     "turn on two-factor authentication", "2fa code not accepted", "two-factor authentication"),
    ("change-email", "account", ["change email", "update email address"],
     "change my email address", "email change link expired", "email change"),
    ("delete-account", "account", ["delete account", "close account"],
     "delete my account", "cannot delete account", "account deletion"),
    ("export-invoices", "billing", ["download invoice", "invoice pdf"],
     "download my invoices", "invoice shows wrong company name", "invoices"),
    ("refund", "billing", ["refund", "money back"],
     "get a refund", "refund not received", "refunds"),
    ("cancel-plan", "billing", ["cancel subscription", "cancel plan"],
     "cancel my subscription", "still charged after cancelling", "cancellation"),
    ("upgrade-plan", "billing", ["upgrade plan", "change plan"],
     "upgrade my plan", "upgrade payment declined", "plan upgrade"),
    ("payment-method", "billing", ["update credit card", "payment method"],
     "update my payment method", "card declined", "payment methods"),
    ("share-folder", "sharing", ["share folder", "shared folder"],
     "share a folder", "shared folder not showing", "folder sharing"),
    ("share-link", "sharing", ["share link", "public link"],
     "create a share link", "share link says access denied", "share links"),
    ("link-expiry", "sharing", ["link expiration", "expiring link"],
     "set an expiry date on a link", "link expired too early", "link expiry"),
    ("permissions", "sharing", ["edit permissions", "view only access"],
     "change who can edit my files", "cannot edit shared file", "permissions"),
    ("desktop-sync", "sync", ["desktop sync", "sync client"],
     "sync my desktop folder", "sync stuck on indexing", "desktop sync"),
    ("selective-sync", "sync", ["selective sync", "choose folders to sync"],
     "choose which folders sync", "selective sync missing folders", "selective sync"),
    ("sync-conflicts", "sync", ["conflicted copy", "sync conflict"],
     "resolve a conflicted copy", "conflicted copies keep appearing", "sync conflicts"),
    ("offline-files", "mobile", ["offline files", "available offline"],
     "make files available offline", "offline files not updating", "offline files"),
    ("camera-upload", "mobile", ["camera upload", "photo backup"],
     "back up my phone photos", "camera upload paused", "camera uploads"),
    ("restore-deleted", "files", ["restore deleted files", "recover deleted file"],
     "restore a deleted file", "deleted file not in trash", "file recovery"),
    ("version-history", "files", ["version history", "previous version"],
     "open an older version of a file", "version history empty", "version history"),
    ("storage-full", "files", ["storage full", "out of space"],
     "free up storage space", "storage full but files are small", "storage quota"),
    ("large-upload", "files", ["upload large file", "file size limit"],
     "upload a large file", "upload fails at 99 percent", "large uploads"),
    ("search-files", "files", ["search files", "find a file"],
     "search inside my files", "search does not find pdf text", "file search"),
    ("file-requests", "files", ["file request", "collect files"],
     "request files from someone", "file request upload failed", "file requests"),
    ("team-admin", "teams", ["admin console", "team admin"],
     "add a member to my team", "invite to team not received", "team administration"),
    ("remove-member", "teams", ["remove team member", "offboard user"],
     "remove someone from my team", "removed member still has access", "member removal"),
    ("sso", "security", ["single sign on", "saml sso"],
     "set up single sign-on", "sso login loop", "single sign-on"),
    ("login-alerts", "security", ["suspicious login", "login alert"],
     "see where my account is logged in", "login from unknown device", "login alerts"),
    ("encryption", "security", ["encryption", "end to end encryption"],
     "encrypt a folder", "cannot open encrypted folder", "encryption"),
    ("api-tokens", "developers", ["api token", "access token"],
     "create an api token", "api returns 401 unauthorized", "api tokens"),
    ("webhooks", "developers", ["webhooks", "webhook setup"],
     "set up a webhook", "webhook not firing", "webhooks"),
    ("mobile-login", "mobile", ["app login", "sign in on phone"],
     "sign in on the mobile app", "app keeps logging me out", "mobile sign-in"),
    ("notifications", "account", ["notifications", "email notifications"],
     "turn off email notifications", "too many notification emails", "notifications"),
    ("language", "account", ["change language", "language settings"],
     "change the app language", "app shows wrong language", "language settings"),
    ("student-discount", "billing", ["student discount", "education pricing"],
     "get the student discount", "student verification failed", "student pricing"),
    ("data-export", "account", ["export all data", "download my data"],
     "export all my data", "data export email never came", "data export"),
]
ASPECTS = ("howto", "troubleshoot", "policy")
# Surfaces lean towards areas: the app towards mobile and sync, chat towards billing and account.
SURFACE_AREA_BIAS = {
    "web": {},
    "app": {"mobile": 4.0, "sync": 2.0, "files": 1.5},
    "chat": {"billing": 4.0, "account": 2.5, "security": 1.5},
}
PLACES = ["Settings", "Account settings", "the Admin console", "the Files page", "Billing", "the sharing dialog",
          "Preferences"]
BUTTONS = ["Edit", "Manage", "Continue", "Save changes", "Get started", "Open", "Confirm"]
CHECKS = ["your internet connection", "that you are signed in to the right account", "the status page",
          "that the app is up to date", "your spam folder", "the activity log"]
PLANS = ["Basic", "Plus", "Business", "Enterprise"]
FILLER = [
    "This article applies to Nimbus on the web, desktop and mobile.",
    "Screens may look slightly different on older versions of the app.",
    "Admins of a team can change this for every member at once.",
    "Changes can take a few minutes to reach all of your devices.",
    "Contact support from the Help menu if you still need a hand.",
    "You can find related articles in the sidebar.",
    "Keyboard shortcuts are listed under Help, then Shortcuts.",
]
PII_QUERIES = [  # tail searches holding personal data, for the sampler to flag
    ("invoice for jane.doe@example.com", "export-invoices", "howto"),
    ("call me 0612345678 about my refund", "refund", "troubleshoot"),
    ("account 12345678901 locked", "login-alerts", "troubleshoot"),
]
HANDWRITTEN_QUERIES = [  # (text, topic slug, aspect): harder, longer queries a person wrote
    ("my colleague left the company and still opens our shared folders", "remove-member", "troubleshoot"),
    ("i was charged twice this month after downgrading, can i get my money back", "refund", "policy"),
    ("photos from my phone stopped backing up after the update", "camera-upload", "troubleshoot"),
    ("how long do you keep files after i delete them", "restore-deleted", "policy"),
    ("set up okta login for our whole team", "sso", "howto"),
]


@dataclass
class DemoPaths:
    folder: Path
    log: Path
    corpus: Path
    guidelines: Path
    handwritten: Path
    runs: list[Path]
    hidden_qrels: Path
    queries: Path | None = None
    pool: Path | None = None
    pool_meta: Path | None = None
    machine: Path | None = None  # machine/llm.jsonl: the simulated machine judge


@dataclass
class DemoData:
    paths: DemoPaths
    log_rows: int
    distinct_queries: int
    corpus_docs: int
    run_queries: int


@dataclass
class DemoResult:
    data: DemoData
    sample: object  # curation.sample.sampling.SampleResult
    pool: object  # curation.pool.pooling.Pool
    fetched: Fetched  # the pooled documents' texts, the corpus fingerprint


def prepare_folder(folder: str | os.PathLike) -> Path:
    """Make ``folder`` ready for the demo: new, empty, or an earlier demo folder (overwritten)."""
    folder = Path(folder)
    if folder.exists():
        if not folder.is_dir():
            raise ValueError(f"folder: {folder} is a file; pick a folder with --dir")
        if any(folder.iterdir()) and not (folder / MARKER).exists():
            raise ValueError(f"folder: {folder} is not empty and not a golden demo folder; pick another with --dir")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("generated by golden demo; safe to delete\n")
    return folder


def refuse_to_overwrite_work(folder: str | os.PathLike) -> None:
    """ValueError when ``folder`` already has a demo store (``golden.db``) with work in it (judgments,
    adjudications, imports, leak decisions, guidelines versions, export versions): `golden demo`
    would replace it. ``--force`` skips this check. A store that cannot be read is refused too."""
    from curation.store.engine import make_engine, session
    from curation.store.work import work_counts

    store = Path(folder) / "golden.db"
    if not store.is_file():
        return
    engine = make_engine(f"sqlite:///{store.resolve()}")
    try:
        with session(engine) as db:
            counts = work_counts(db)
    except Exception as exc:  # any failure to read: we cannot vouch that it holds no work
        raise ValueError(f"folder: {store} exists and cannot be read as a golden store ({type(exc).__name__}); "
                         "pass --force to replace it, or pick another folder with --dir") from None
    finally:
        engine.dispose()
    if counts:
        what = ", ".join(f"{n} {kind if n != 1 else kind[:-1]}" for kind, n in counts.items())
        raise ValueError(f"folder: {store} holds work ({what}); re-running the demo would replace it. "
                         "Pass --force to replace it anyway, or pick another folder with --dir")


# --------------------------------------------------------------------------------------------
# Queries, documents and the hidden ground truth


def _topic_queries(topic) -> list[tuple[str, str, tuple[str, ...]]]:
    """The (query text, aspect, surfaces it is typed on) of one topic.

    Keyword and question forms are typed everywhere; people write to the support chat in
    sentences of their own, which nobody types into the search box.
    """
    slug, _, kws, action, problem, thing = topic
    everywhere, chat = tuple(SURFACES), ("chat",)
    out = [
        (kws[0], "howto", everywhere), (kws[1], "howto", everywhere),
        (f"how do i {action}", "howto", everywhere), (f"how to {action}", "howto", everywhere),
        (problem, "troubleshoot", everywhere), (f"{kws[0]} not working", "troubleshoot", everywhere),
        (f"why can't i {action}", "troubleshoot", everywhere),
        (f"{kws[0]} limit", "policy", everywhere), (f"is {thing} free", "policy", everywhere),
        (f"who can {action.replace('my ', 'our ')}", "policy", everywhere),
        (f"can you help me {_you(action).replace('your ', 'my ')}?", "howto", chat),
        (f"i need help with {kws[0]}", "howto", chat),
        (f"what should i do about {problem}?", "troubleshoot", chat),
    ]
    return [(normalize_text(t), a, s) for t, a, s in out]


def _you(action: str) -> str:
    return action.replace("my ", "your ").replace("our ", "your ")


def _chunk_text(rng: random.Random, topic, aspect: str, answer: bool) -> str:
    slug, area, kws, action, problem, thing = topic
    kw = rng.choice(kws)
    place, button = rng.choice(PLACES), rng.choice(BUTTONS)
    if aspect == "howto":
        core = (
            f"To {_you(action)}, open {place} and select {kw.title()}. Choose {button}, follow the steps on screen, "
            f"and confirm when Nimbus asks. The change to {thing} applies right away."
            if answer
            else f"{thing.capitalize()} is managed from {place}. Some teams decide who may change {thing} for everyone."
        )
    elif aspect == "troubleshoot":
        core = (
            f"If you see '{problem}', first check {rng.choice(CHECKS)}. Then sign out and back in, and try again "
            f"from {place}. Most problems with {kw} clear up after that."
            if answer
            else f"Problems with {thing} are often caused by an outdated app or a slow connection."
        )
    else:
        plans = ", ".join(rng.sample(PLANS, 2))
        core = (
            f"{thing.capitalize()} is included in the {plans} plans. Limits for {kw} depend on your plan, "
            f"and only owners and admins can {_you(action).replace('your ', 'the ')} for a team."
            if answer
            else f"Plans differ in what they include; compare plans to see the details for {thing}."
        )
    extra = rng.sample(FILLER, 2)
    return " ".join([core, *extra])


def _noise_text(rng: random.Random, topic) -> tuple[str, str, str]:
    """A release note or blog chunk that mentions a topic's words without answering anything."""
    slug, _, kws, _, _, thing = topic
    kind = rng.choice(["release", "blog"])
    version = f"{rng.randint(3, 9)}.{rng.randint(0, 30)}"
    if kind == "release":
        text = (f"Nimbus {version} release notes. We improved how {kws[0]} looks in the new design and fixed "
                f"several small bugs around {thing}. Thanks to everyone who sent feedback.")
        return text, f"Release notes {version}", f"https://nimbus.example/releases/{version}"
    text = (f"From the Nimbus blog: how our own team thinks about {thing}. A story about {kws[-1]}, "
            f"good habits and what we learned while building it.")
    return text, f"Blog: {thing}", f"https://nimbus.example/blog/{slug}-{version.replace('.', '-')}"


def _grade(q_topic: int, q_aspect: str, d_topic: int, d_aspect: str | None, d_answer: bool) -> int:
    """The hidden truth: 2 answers the query; 1 on its topic and partly useful; 0 otherwise."""
    if d_topic != q_topic or d_aspect is None:
        return 0
    if d_aspect == q_aspect:
        return 2 if d_answer else 1
    return 1 if d_answer else 0


# --------------------------------------------------------------------------------------------
# Generation


def generate_demo_data(folder: str | os.PathLike, *, seed: int = 0) -> DemoData:
    """Write the demo's log, corpus, runs, hidden truth, guidelines and hand-written queries.

    Everything comes from ``seed``: the same seed writes the same bytes.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer

    from curation.sample.sampling import qid_for

    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a whole number >= 0, not {seed!r}")
    folder = prepare_folder(folder)
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)

    # Base queries: (normalised text, topic index, aspect, surfaces), distinct.
    queries: list[tuple[str, int, str, tuple[str, ...]]] = []
    seen: set[str] = set()
    for ti, topic in enumerate(TOPICS):
        for text, aspect, surfaces in _topic_queries(topic):
            if text not in seen:
                seen.add(text)
                queries.append((text, ti, aspect, surfaces))
    slugs = [x[0] for x in TOPICS]
    hand = [(normalize_text(t), slugs.index(slug), a) for t, slug, a in HANDWRITTEN_QUERIES]

    # Corpus: per topic and aspect, answer and context chunks of a few articles; then noise.
    docs: list[Doc] = []
    meta: list[tuple[int, str | None, bool]] = []  # (topic, aspect, answer) per doc
    for ti, topic in enumerate(TOPICS):
        slug, _, _, _, _, thing = topic
        for aspect in ASPECTS:
            n_answer, n_context = rng.randint(2, 5), rng.randint(8, 14)
            for k in range(n_answer + n_context):
                answer = k < n_answer
                article = f"{slug}-{aspect}-{k % 3 + 1}"
                docs.append(Doc(
                    id=f"kb-{slug}-{aspect}-{k:02d}",
                    text=_chunk_text(rng, topic, aspect, answer),
                    title={"howto": f"How to: {thing}", "troubleshoot": f"Fix problems with {thing}",
                           "policy": f"{thing.capitalize()}: plans and limits"}[aspect],
                    url=f"https://help.nimbus.example/articles/{article}#chunk-{k}",
                ))
                meta.append((ti, aspect, answer))
        for k in range(rng.randint(30, 40)):
            text, title, url = _noise_text(rng, topic)
            docs.append(Doc(id=f"nx-{slug}-{k:02d}", text=text, title=title, url=url))
            meta.append((ti, None, False))
    order = list(range(len(docs)))
    rng.shuffle(order)  # a corpus is not grouped by topic
    docs = [docs[i] for i in order]
    meta = [meta[i] for i in order]

    paths = DemoPaths(
        folder=folder,
        log=folder / "search_log.csv",
        corpus=folder / "corpus.jsonl",
        guidelines=folder / "guidelines.md",
        handwritten=folder / "handwritten.txt",
        runs=[folder / "runs" / f"{name}.trec" for name in SYSTEMS],
        hidden_qrels=folder / "hidden" / "qrels.txt",
    )
    # The log; then every distinct query typed (as normalised), with the meaning of its base query.
    log_rows, typed = _write_log(paths.log, queries, rng, nrng)
    meaning = {text: (t, a) for text, t, a, _ in queries}
    for text, slug, aspect in PII_QUERIES:
        meaning[normalize_text(text)] = (slugs.index(slug), aspect)
    all_q = [(text, *meaning[base]) for text, base in typed.items()] + [h for h in hand if h[0] not in typed]
    distinct = len(typed)

    # Hidden truth and the three systems' scores.
    d_topic = np.array([m[0] for m in meta])
    grades = np.zeros((len(all_q), len(docs)), dtype=np.int8)
    for qi, (_, t, a) in enumerate(all_q):
        for di in np.flatnonzero(d_topic == t):
            grades[qi, di] = _grade(t, a, *meta[di])
    vec = TfidfVectorizer(sublinear_tf=True, stop_words="english")
    doc_m = vec.fit_transform([f"{d.title} {d.text}" for d in docs])
    lex = (vec.transform([q for q, _, _ in all_q]) @ doc_m.T).toarray()
    shared = nrng.standard_normal(grades.shape)
    g = grades / 2.0
    scores = {}
    for name in SYSTEMS:
        w_lex, w_truth, w_shared, w_own = SYSTEM_MIX[name]
        scores[name] = w_lex * lex + w_truth * g + w_shared * shared + w_own * nrng.standard_normal(g.shape)

    write_corpus(docs, paths.corpus)
    qids = [qid_for(q) for q, _, _ in all_q]
    def ranked(row):
        top = np.argsort(-row, kind="stable")[:150]
        return trec_order([(docs[i].id, float(row[i])) for i in top])[:100]

    for name, path in zip(SYSTEMS, paths.runs):
        rounded = np.round(scores[name], 4)
        write_run(((qid, ranked(rounded[qi])) for qi, qid in enumerate(qids)), path, tag=name, precision=4)
    write_qrels((QrelLine(qid, "0", docs[di].id, int(grades[qi, di]))
                 for qi, qid in enumerate(qids) for di in np.flatnonzero(grades[qi])), paths.hidden_qrels)
    with atomic_write(paths.handwritten) as fh:
        fh.writelines(t + "\n" for t, _, _ in HANDWRITTEN_QUERIES)
    with atomic_write(paths.guidelines) as fh:
        fh.write(GUIDELINES)
    return DemoData(paths, log_rows=log_rows, distinct_queries=distinct, corpus_docs=len(docs), run_queries=len(qids))


def _variant(rng: random.Random, text: str) -> str:
    """How people actually type a query: case, spacing, apostrophes and the odd typo vary."""
    r = rng.random()
    if r < 0.15:
        text = text.capitalize()
    elif r < 0.2:
        text = text.upper()
    if rng.random() < 0.1:
        text = "  " + text.replace(" ", "  ", 1)
    if "'" in text and rng.random() < 0.5:
        text = text.replace("'", "\u2019")
    if text.startswith(("how ", "why ", "who ", "is ", "How ", "Why ", "Who ", "Is ")) and rng.random() < 0.4:
        text += "?"
    if rng.random() < 0.012:  # a typo: two neighbouring letters swapped (most are one-offs: the tail)
        i = rng.randrange(len(text) - 1)
        text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
    return text


def _write_log(path: Path, queries, rng: random.Random, nrng: np.random.Generator) -> tuple[int, dict[str, str]]:
    """A search log with Zipf popularity (heavy head, long tail) over three surfaces.

    Returns the number of rows and, for each distinct normalised query typed, its base query.
    """
    n = len(queries)
    popularity = nrng.permutation(n)  # which query gets which Zipf rank
    base = 1.0 / (popularity + 1.0) ** 1.3
    n_users = 4000
    user_weight = 1.0 / (np.arange(1, n_users + 1) ** 0.8)
    user_weight /= user_weight.sum()
    rows = []
    typed: dict[str, str] = {}
    start = 1_767_225_600  # 2026-01-01T00:00:00Z
    # Each query has a home surface, where nearly all of its searches come from (a query's
    # stratum is a property of the query): chat phrasings live in the chat; the others live on
    # the web or in the app, leaning the way their topic's area does. The most popular query
    # of all is a web query.
    names = list(SURFACES)
    home = []
    for _qi, (_, t, _, allowed) in enumerate(queries):
        if allowed == ("chat",):
            home.append(names.index("chat"))
            continue
        w = np.array([SURFACES[s] * SURFACE_AREA_BIAS[s].get(TOPICS[t][1], 1.0) * (s != "chat") for s in names])
        home.append(int(nrng.choice(len(names), p=w / w.sum())))
    home[int(np.argmax(base))] = names.index("web")
    count = 20_000
    picks = nrng.choice(n, size=count, p=base / base.sum())
    users = nrng.choice(n_users, size=count, p=user_weight)
    times = nrng.integers(0, 30 * 86_400, size=count)
    strays = nrng.random(count) < 0.05  # the odd search of a query from another surface
    for qi, u, t, stray in zip(picks.tolist(), users.tolist(), times.tolist(), strays.tolist()):
        allowed = queries[qi][3]
        surface = rng.choice(allowed) if stray else names[home[qi]]
        text = _variant(rng, queries[qi][0])
        typed.setdefault(normalize_text(text), queries[qi][0])
        rows.append((start + t, f"u{u:05d}", surface, text))
    for text, _, _ in PII_QUERIES:
        typed.setdefault(normalize_text(text), normalize_text(text))
        for _ in range(rng.randint(1, 3)):
            rows.append((start + rng.randrange(30 * 86_400), f"u{rng.randrange(n_users):05d}",
                         rng.choice(list(SURFACES)), text))
    rows.sort()
    with atomic_write(path) as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(["ts", "user_id", "surface", "query"])
        for ts, user, surface, text in rows:
            iso = np.datetime64(ts, "s").astype(str) + "Z"
            writer.writerow([iso, user, surface, text])
    return len(rows), dict(sorted(typed.items()))


GUIDELINES = """# Relevance guidelines (Nimbus help search)

You see a search query and one passage (a chunk of a help article, release note or blog post).
Judge the passage on its own: would it help the person who typed the query?

## Grades

- **2: Answers it.** The passage gives the steps, the fix or the rule the query asks for, for the
  same feature. A person could act on it without reading further.
- **1: Related, partly useful.** The passage is about the same feature but answers a different
  question (limits instead of steps, background instead of a fix), or only part of the answer.
- **0: Not useful.** Another feature, or it only mentions the words (release notes, blog posts,
  generic text) without helping.

## Rules of thumb

- Guess the most likely intent of a short keyword query ("2fa" most likely means setting it up).
- Judge the passage, not the article it comes from, and not where it ranked (you cannot see that).
- A passage that is correct but out of date is still graded on what it says.
- Unsure between two grades? Press U, say what makes you unsure in the note, then press the digit
  of the grade you find most likely; a lead confirms or changes it.
"""


# --------------------------------------------------------------------------------------------
# The demo path: generate, sample, pool


def build_demo(folder: str | os.PathLike, *, seed: int = 0) -> DemoResult:
    """Generate the demo data in ``folder``, sample queries from its log and pool its runs.

    Writes ``queries.jsonl`` (``SAMPLE_SIZE`` logged queries over surface x shape strata, floor
    ``SAMPLE_FLOOR``, plus the hand-written ones) and ``pool.jsonl`` with ``pool.meta.json``
    (depth ``POOL_DEPTH``). Returns what was done, paths included.
    """
    from curation.formats.queries import write_queries
    from curation.formats.runs import read_runs
    from curation.pool.pooling import file_info, make_pool, write_pool
    from curation.sample.sampling import sample_queries

    data = generate_demo_data(folder, seed=seed)
    paths = data.paths
    paths.queries = paths.folder / "queries.jsonl"
    paths.pool = paths.folder / "pool.jsonl"
    sample = sample_queries(
        paths.log, query_col="query", user_col="user_id", strata=["surface"], shape=True,
        size=SAMPLE_SIZE, floor=SAMPLE_FLOOR, seed=seed, handwritten=paths.handwritten,
    )
    write_queries(sample.rows, paths.queries)
    qids = [row["qid"] for row in sample.rows]
    runs = read_runs(paths.runs, depth=POOL_DEPTH)
    pool = make_pool(runs, depth=POOL_DEPTH, seed=seed, qids=qids)
    pool.queries_file = file_info(paths.queries, queries=len(qids))
    paths.pool_meta = write_pool(pool, paths.pool)
    fetched = fetch_docs([paths.corpus], {p.docid for p in pool.pairs})
    result = DemoResult(data=data, sample=sample, pool=pool, fetched=fetched)
    paths.machine = write_machine_judge(result, seed=seed)
    return result


# --------------------------------------------------------------------------------------------
# A simulated machine judge: the hidden truth with controlled errors and a lean towards long documents

DEMO_MACHINE, DEMO_MACHINE_MODEL, DEMO_MACHINE_PROMPT = "llm", "sim-large", "v1"
MACHINE_ERROR = 0.08  # share of pairs given a grade one off the truth
MACHINE_LONG_LEAN = 0.4  # share of the longest 30% of pooled documents raised one grade (enough for a
# clear length flag; a stronger lean also shows through the run whose documents are the longest)
MACHINE_SAMPLE_FLIP = 0.01  # chance that one sample differs from the machine's usual answer: with 3
# samples ~3% of pairs change label, clearly under calibrate's 5% tolerance (0.02 gave ~5.9%, over it)
MACHINE_SAMPLES = 3


def write_machine_judge(result: DemoResult, *, seed: int = 0) -> Path:
    """Write ``machine/llm.jsonl``: a simulated machine judge of every pooled pair, three samples each
    with probabilities, derived from the hidden truth: ``MACHINE_ERROR`` of the pairs one grade off,
    half the pairs of the longest 30% of documents raised one grade (the lean ``golden calibrate``
    finds), and the odd sample that differs. Same seed, same bytes."""
    from curation.formats.machine_labels import MachineLabelLine, write_machine_labels
    from curation.formats.qrels import read_qrels

    paths = result.data.paths
    truth = read_qrels(paths.hidden_qrels)
    rng = random.Random(f"machine:{seed}")
    pairs = sorted({(p.qid, p.docid) for p in result.pool.pairs if p.docid in result.fetched.docs})
    length = {d: len(result.fetched.docs[d].text) for _, d in pairs}
    ordered = sorted(length.values())
    long_edge = ordered[int(0.7 * len(ordered))] if ordered else 0
    records = []
    for qid, docid in pairs:
        g = truth.get(qid, {}).get(docid, 0)
        base = g
        if rng.random() < MACHINE_ERROR:
            base = 1 if g != 1 else rng.choice((0, 2))
        if length[docid] >= long_edge and base < 2 and rng.random() < MACHINE_LONG_LEAN:
            base += 1
        conf = round(rng.uniform(0.85, 0.98) if base == g else rng.uniform(0.55, 0.8), 3)
        for sample in range(MACHINE_SAMPLES):
            grade = base
            if rng.random() < MACHINE_SAMPLE_FLIP:
                grade = 1 if base != 1 else rng.choice((0, 2))
            rest = round((1.0 - conf) / 2, 4)
            probs = tuple((x, round(conf if x == grade else rest, 4)) for x in (0, 1, 2))
            records.append(MachineLabelLine(qid, docid, grade, 0, sample, probs, conf, None, DEMO_MACHINE_MODEL,
                                            DEMO_MACHINE_PROMPT))
    path = paths.folder / "machine" / "llm.jsonl"
    path.parent.mkdir(exist_ok=True)
    write_machine_labels(records, path)
    return path


# --------------------------------------------------------------------------------------------
# The demo project in a judging store: two judges and a lead, an overlap set, ready to serve

DEMO_JUDGES, DEMO_LEAD, DEMO_OVERLAP, DEMO_PROJECT = ("alice", "bob"), "lena", 60, "demo"


@dataclass
class DemoStore:
    path: Path  # the SQLite file
    url: str
    project: str
    logins: list[tuple[str, str, str]]  # (name, role, password)
    assigned: object  # curation.judge.assignment.AssignReport
    machine: object = None  # curation.machine.labels.MachineImportReport: the simulated machine judge


def load_demo_store(result: DemoResult, *, seed: int = 0, overlap: int = DEMO_OVERLAP) -> DemoStore:
    """Load the demo project into a new SQLite store ``golden.db`` in the demo folder: the sampled
    queries, the pool with its hidden provenance, the pooled documents and the guidelines (0-2
    scale); add the judges ``DEMO_JUDGES`` and the lead ``DEMO_LEAD`` with random passwords; assign
    the pool with an overlap set of ``overlap`` pairs (main pairs held until the lead releases them).

    The store is built under a temporary name and renamed into place, so an earlier demo's store is
    replaced whole or not at all."""
    from curation.judge import assignment
    from curation.store import projects, users
    from curation.store.engine import make_engine, session
    from curation.store.migrate import upgrade

    paths = result.data.paths
    final = paths.folder / "golden.db"
    tmp = paths.folder / f".golden.db.{os.getpid()}.tmp"
    for stale in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        stale.unlink(missing_ok=True)
    engine = make_engine(f"sqlite:///{tmp.resolve()}")
    try:
        upgrade(engine)
        with session(engine) as db:
            projects.create_project(
                db, DEMO_PROJECT, queries_path=paths.queries, pool_path=paths.pool, corpus_paths=[paths.corpus],
                guidelines_path=paths.guidelines, scale="0-2", allow_missing=bool(result.fetched.missing),
            )
            logins = []
            for name, role in [(j, "judge") for j in DEMO_JUDGES] + [(DEMO_LEAD, "lead")]:
                password = users.generate_password()  # secrets, not the seed: a password is never reproducible
                users.add_user(db, name, role=role, password=password)
                logins.append((name, role, password))
            project = projects.get_project(db, DEMO_PROJECT)
            report = assignment.assign(db, project, list(DEMO_JUDGES), overlap=overlap, seed=seed)
            machine = None
            if paths.machine is not None:
                from curation.machine.labels import import_machine_labels

                machine = import_machine_labels(db, paths.machine, machine=DEMO_MACHINE, project=DEMO_PROJECT)
        with engine.connect() as conn:  # fold the WAL into the file before it is renamed
            conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    except BaseException:
        engine.dispose()
        for stale in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
            stale.unlink(missing_ok=True)
        raise
    engine.dispose()
    for stale in (Path(f"{final}-wal"), Path(f"{final}-shm"), Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
        stale.unlink(missing_ok=True)
    os.replace(tmp, final)
    return DemoStore(path=final, url=f"sqlite:///{final.resolve()}", project=DEMO_PROJECT, logins=logins,
                     assigned=report, machine=machine)
