"""The serve message's grammar (it once said "(1 worker processes)"), and the defaults it reports."""

from curation.cli.serve import default_threads, default_workers, describe_workers


def test_worker_count_in_words():
    assert describe_workers(1, 1) == "1 worker process"
    assert describe_workers(2, 1) == "2 worker processes"
    assert describe_workers(1, 4) == "1 worker process x 4 threads"
    assert describe_workers(3, 2) == "3 worker processes x 2 threads"


def test_default_threads_follow_the_server_and_the_database():
    assert default_threads("granian", "postgresql") == 4  # a worker's connections wait on round trips
    assert default_threads("granian", "sqlite") == 1
    assert default_threads("gunicorn", "postgresql") == 1  # its sync worker; --threads picks gthread


def test_default_workers_follow_the_cores(monkeypatch):
    for cores, granian, gunicorn in ((1, 1, 3), (2, 2, 3), (4, 4, 5), (16, 8, 9), (None, 1, 3)):
        monkeypatch.setattr("os.cpu_count", lambda cores=cores: cores)
        assert (default_workers("granian"), default_workers("gunicorn")) == (granian, gunicorn), cores
