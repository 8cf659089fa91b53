"""The CLI offers the domain's own vocabularies as choices. The CLI cannot import them at start-up
(the modules that define them load SQLAlchemy, numpy or pandas), so it spells them out; this test
keeps each spelled-out list equal to the domain's, which stays the one that decides."""

import pytest

from curation.agree.labels import POLICIES
from curation.cli import main
from curation.pool.seeds import SEED_SOURCES
from curation.sample.sampling import SAMPLE_WEIGHTINGS
from curation.store.models import ROLES
from curation.store.projects import SCALES


def _choices(path: str, option: str) -> list[str]:
    command = main
    for name in path.split():
        command = command.commands[name]
    (param,) = [p for p in command.params if option in p.opts]
    return list(param.type.choices)


@pytest.mark.parametrize(("path", "option", "domain"), [
    ("export create", "--policy", POLICIES),
    ("project create", "--scale", SCALES),
    ("judging seed", "--source", SEED_SOURCES),
    ("admin user add", "--role", ROLES),
    ("sample queries", "--weighting", SAMPLE_WEIGHTINGS),
], ids=lambda v: v if isinstance(v, str) else "")
def test_cli_choices_are_the_domains(path, option, domain):
    assert _choices(path, option) == list(domain)
