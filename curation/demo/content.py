"""The demo's content: the fictional product's topics, phrases and queries, the systems and the
surfaces, the passages' text, the hidden grade of a pair and the judging guidelines.

Tables and small writers that only :mod:`curation.demo.generator` reads; they hold no state, so the
generator's one seeded order of draws decides every byte."""

from __future__ import annotations

import random

from curation.formats.normalize import normalize_text

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


# --------------------------------------------------------------------------------------------
# Queries, documents and the hidden ground truth


def topic_queries(topic) -> list[tuple[str, str, tuple[str, ...]]]:
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


def chunk_text(rng: random.Random, topic, aspect: str, answer: bool) -> str:
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


def noise_text(rng: random.Random, topic) -> tuple[str, str, str]:
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


def hidden_grade(q_topic: int, q_aspect: str, d_topic: int, d_aspect: str | None, d_answer: bool) -> int:
    """The hidden truth: 2 answers the query; 1 on its topic and partly useful; 0 otherwise."""
    if d_topic != q_topic or d_aspect is None:
        return 0
    if d_aspect == q_aspect:
        return 2 if d_answer else 1
    return 1 if d_answer else 0


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
