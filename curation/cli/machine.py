"""``golden machine``: machine judges that golden prompts itself through an OpenAI-compatible endpoint
(``run``), their runs (``runs``), and the model a system run uses (``declare-model``). The work is
:mod:`curation.machine.runner` and :mod:`curation.machine.runs`; this module only prints."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, project_option, store_session


@main.group()
def machine():
    """Machine judges golden runs itself, from the guidelines people judge under.

    \b
    Example:
      golden machine run --project news --machine llm --base-url http://127.0.0.1:8080/v1 --model qwen2.5-7b
      golden machine runs --project news
    """


def _print_report(r: dict) -> None:
    echo = click.echo
    echo(f"machine judge {r['machine']} in project {r['project']}: model {r['model']}, prompt version "
         f"{r['prompt_version']} (template {r['template']}, guidelines "
         f"{'v' + str(r['guidelines_version']) if r['guidelines_version'] else 'none'}); pairs: {r['selection']}")
    echo(f"{r['pairs']} pairs selected; {r['already']} (pair, sample) already answered under this prompt; "
         f"{r['jobs']} requests to make")
    if r["status"] == "dry-run":
        echo(f"expected tokens: about {r['expected_tokens_in']:,} in (prompt characters / 4), at most "
             f"{r['expected_tokens_out']:,} out (max tokens x requests)")
        if r["cost"] is not None:
            echo(f"expected cost: at most {r['cost']:.4f} (prices per million tokens)")
        echo(f"structured output: {r['structured']}")
        for q in r["requests"]:
            echo(f"request for {q['qid']} / {q['docid']} sample {q['sample']}:")
            import json

            echo(json.dumps(q["body"], indent=2, ensure_ascii=False))
        echo("dry run: nothing was sent")
        return
    errs = ", ".join(f"{k} {v}" for k, v in sorted(r["errors"].items())) or "none"
    rate = r["tokens_out"] / r["seconds"] if r["seconds"] else 0.0
    echo(f"run {r['run_id']}: {r['status']}; {r['asked']} requests sent, {r['labelled']} labels stored, errors: "
         f"{errs}; tokens {r['tokens_in']:,} in, {r['tokens_out']:,} out ({rate:.1f} out/s) in {r['seconds']:.1f} s")
    echo(f"structured output: {r['structured']}; the endpoint reported model(s): "
         f"{', '.join(r['served_models']) or 'none'}")
    if r["vote_pairs"]:
        echo(f"{r['vote_pairs']} pairs got their samples' vote shares as probabilities")
    if r["status"] != "finished":
        echo(f"stopped ({r['status']}): run the same command again to continue; answered requests are not "
             "asked again")
    elif r["errors"]:
        echo("failed requests are not labels; run the same command again to ask for them again")
    echo(f"next: golden labels calibrate --project {r['project']} --machine {r['machine']}")


@machine.command("run")
@project_option
@click.option("--machine", "machine_name", required=True, metavar="NAME", help="The machine judge's name.")
@click.option("--base-url", required=True, metavar="URL",
              help="The OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
@click.option("--model", required=True, help="The model to ask for.")
@click.option("--pairs", "selection", type=click.Choice(["all", "overlap", "unjudged", "sample"]), default="all",
              show_default=True, help="Which pairs: all, the overlap set, pairs no person labelled yet, or a "
              "seeded random sample (--sample N).")
@click.option("--sample", "sample_size", type=click.IntRange(min=1), default=None, metavar="N",
              help="With --pairs sample: how many pairs to draw.")
@click.option("--stale", is_flag=True, help="Only re-judge the pairs whose labels were made under an older prompt "
              "(template, guidelines or information need).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of --pairs sample.")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Requests per pair (k samples: majority label, vote shares as probabilities).")
@click.option("--template", "template_path", type=click.Path(dir_okay=False), default=None,
              help="A Jinja prompt template of your own (default: golden's, after UMBRELA); its hash is part of "
              "the prompt version.")
@click.option("--api-key-env", default=None, metavar="VAR",
              help="Read the API key from this environment variable (never stored).")
@click.option("--concurrency", type=click.IntRange(min=1), default=4, show_default=True)
@click.option("--requests-per-minute", type=click.FloatRange(min=0, min_open=True), default=None)
@click.option("--token-budget", type=click.IntRange(min=1), default=None,
              help="Start no request once this many tokens (in + out) were used.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=60.0, show_default=True,
              help="Seconds to wait for one answer; a timeout is an error, not a grade.")
@click.option("--max-retries", type=click.IntRange(min=0), default=4, show_default=True,
              help="Retries of a 429, a 5xx or a failed connection (honouring Retry-After).")
@click.option("--structured", type=click.Choice(["auto", "json_object", "json_schema", "none"]), default="auto",
              show_default=True, help="Structured-output form: llama.cpp's json_object+schema, OpenAI's "
              "json_schema, or none; auto asks the server.")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--top-p", type=float, default=None)
@click.option("--request-seed", type=int, default=None, help="Sampling seed sent with each request (+ sample index).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=32, show_default=True)
@click.option("--logprobs/--no-logprobs", default=False, show_default=True,
              help="Ask for log-probabilities; the grade token's become the label's probabilities.")
@click.option("--max-doc-chars", type=click.IntRange(min=0), default=8000, show_default=True,
              help="Cut each document to this many characters in the prompt (0: no cut).")
@click.option("--dry-run", is_flag=True, help="Print the pairs, requests and expected tokens (and cost); send nothing.")
@click.option("--price-in", type=float, default=None, help="Price per million input tokens, for --dry-run's cost.")
@click.option("--price-out", type=float, default=None, help="Price per million output tokens.")
@click.option("--progress/--no-progress", default=True, show_default=True)
@json_option
@db_option
@domain_errors
def run_cmd(project_name, machine_name, base_url, model, selection, sample_size, stale, seed, samples, template_path,
            api_key_env, concurrency, requests_per_minute, token_budget, timeout, max_retries, structured,
            temperature, top_p, request_seed, max_tokens, logprobs, max_doc_chars, dry_run, price_in, price_out,
            progress, as_json, db_url):
    """Label the project's pairs with a machine judge prompted from the guidelines in force, the
    grade scale, each query, its information need and the document, and store every label with its
    provenance. Interrupt it (Ctrl-C) or lose the server at any time: what was answered is kept,
    and the same command continues where it stopped.

    \b
    Example:
      golden machine run --project news --machine llm --base-url http://127.0.0.1:8080/v1 \\
          --model qwen2.5-7b --pairs overlap --samples 3 --temperature 0.7
      golden machine run --project news --machine llm --base-url https://api.openai.com/v1 \\
          --model gpt-4o-mini --api-key-env OPENAI_API_KEY --dry-run --price-in 0.15 --price-out 0.6
      golden machine run --project news --machine llm --base-url http://127.0.0.1:8080/v1 --model m --stale
    """
    from curation.machine.runner import WireSettings, api_key_from_env, run_machine

    if stale and selection != "all":
        raise click.UsageError("--stale chooses the pairs itself; leave out --pairs")
    if selection == "sample" and sample_size is None:
        raise click.UsageError("--pairs sample needs --sample N")
    wire = WireSettings(base_url=base_url, model=model, api_key=api_key_from_env(api_key_env),
                        concurrency=concurrency, requests_per_minute=requests_per_minute, token_budget=token_budget,
                        timeout=timeout, max_retries=max_retries, structured=structured, temperature=temperature,
                        top_p=top_p, seed=request_seed, max_tokens=max_tokens, logprobs=logprobs)
    with store_session(db_url) as s:
        report = run_machine(s, project=project_name, machine=machine_name, wire=wire,
                             selection="stale" if stale else selection, sample_size=sample_size, seed=seed,
                             samples=samples, template_path=template_path, max_doc_chars=max_doc_chars or None,
                             dry_run=dry_run, price_in=price_in, price_out=price_out,
                             progress=progress and not as_json)
    d = report.as_dict()
    if as_json:
        echo_json(d)
    else:
        _print_report(d)
    if report.status not in ("finished", "dry-run"):
        raise SystemExit(3)


@machine.command("runs")
@project_option
@click.option("--machine", "machine_name", default=None, metavar="NAME", help="Only this machine judge's runs.")
@json_option
@db_option
@domain_errors
def runs_cmd(project_name, machine_name, as_json, db_url):
    """List the runs of machine judges in a project (model, prompt version, pairs done, errors,
    when) and how many of each judge's labels are stale.

    \b
    Example:
      golden machine runs --project news --machine llm
    """
    from curation.machine.runs import runs_overview
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        d = runs_overview(s, proj, machine_name)
    if as_json:
        echo_json(d)
        return
    if not d["runs"]:
        click.echo(f"project {d['project']}: no machine runs yet")
    for r in d["runs"]:
        errs = ", ".join(f"{k} {v}" for k, v in r["errors_by_kind"].items()) or "none"
        click.echo(f"run {r['id']} {r['machine']}: {r['model']} (served as {', '.join(r['served_models']) or '-'}), "
                   f"prompt {r['prompt_version']}, {r['status']}; {r['pairs_done']}/{r['pairs_planned']} pairs, "
                   f"{r['labels']} labels, errors: {errs}; started {r['started_at'][:19]}")
        for f in r["failures"]:
            click.echo(f"  error on {f['qid']} / {f['docid']} sample {f['sample']}: {f['kind']}: "
                       f"{(f['detail'] or '')[:160]}")
    for m in d["machines"]:
        click.echo(f"machine judge {m['machine']}: current prompt {m['current_prompt_version']}; "
                   f"{m['stale']} stale labels on {m['stale_pairs']} pairs"
                   + (f" (re-judge: golden machine run --project {d['project']} --machine {m['machine']} --stale ...)"
                      if m["stale"] else ""))


@machine.command("declare-model")
@project_option
@click.option("--run", "run_name", required=True, metavar="RUN", help="A system run of the pool.")
@click.option("--model", default=None, help="The model the system uses (leave out to forget it).")
@db_option
@domain_errors
def declare_model_cmd(project_name, run_name, model, db_url):
    """Record the model a system run itself uses (e.g. a RAG system answering with gpt-4o), so that
    calibration warns when a machine judge of the same model family ranks it.

    \b
    Example:
      golden machine declare-model --project news --run rag-v2 --model gpt-4o
    """
    from curation.machine.runs import declare_run_model
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        declare_run_model(s, proj, run_name, model)
    click.echo(f"project {proj.name}: run {run_name} " + (f"uses model {model}" if model else "has no model declared"))
