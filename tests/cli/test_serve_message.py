"""The serve message's grammar (it once said "(1 worker processes)")."""

from curation.cli.serve import describe_workers


def test_worker_count_in_words():
    assert describe_workers(1, 1) == "1 worker process"
    assert describe_workers(2, 1) == "2 worker processes"
    assert describe_workers(1, 4) == "1 worker process x 4 threads"
    assert describe_workers(3, 2) == "3 worker processes x 2 threads"
