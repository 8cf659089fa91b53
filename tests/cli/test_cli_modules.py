"""Each `golden` command lives in the module named after it (or after its family), and one table
(curation.cli.COMMANDS) says where it sits under `golden`, so the code of a command is found from
its name."""

import click

from curation.cli import ALIASES, COMMANDS, GROUPS, main

# Modules that hold a small family of commands, named after the family.
FAMILIES = {
    "assign": {"assign", "release"},
    "corpus": {"corpus-sample"},
    "stats": {"metrics", "compare", "power", "noise", "sweep", "attribute"},
}


def _module_of(command) -> str:
    return (command.callback or command.__class__).__module__.rpartition(".")[2]


def _at(path: str) -> click.Command:
    command = main
    for name in path.split():
        command = command.get_command(click.Context(command), name)
        assert command is not None, path
    return command


def test_every_command_lives_in_the_module_of_its_name_or_family():
    misplaced = {}
    for path, (module, registered) in COMMANDS.items():
        command = _at(path)
        if _module_of(command) != module:
            misplaced[path] = _module_of(command)
        if module != registered.replace("-", "_") and registered not in FAMILIES.get(module, set()):
            misplaced[path] = module
    assert misplaced == {}


def test_the_table_places_every_command_under_its_group_with_its_last_word():
    for path in COMMANDS:
        *group, name = path.split()
        assert group == [] or group[0] in GROUPS or " ".join(group) in COMMANDS, path
        assert _at(path).name == name


def test_every_command_function_follows_the_naming_rule():
    """A command's function is the name its module registers, in snake case, then ``_cmd``; a group's
    function is the group's name (its commands are declared with ``@group.command``)."""
    wrong = {}
    for path, (_, registered) in COMMANDS.items():
        command = _at(path)
        expected = registered.replace("-", "_") + ("" if isinstance(command, click.Group) else "_cmd")
        if command.callback.__name__ != expected:
            wrong[path] = command.callback.__name__
        if isinstance(command, click.Group):
            for sub_name, sub in command.commands.items():
                own = f"{sub_name.replace('-', '_')}_cmd"
                if f"{path} {sub_name}" not in COMMANDS and sub.callback.__name__ != own:
                    wrong[f"{path} {sub_name}"] = sub.callback.__name__
    assert wrong == {}


# Commands added inside a group after the commands were grouped: they never had a name at the top.
NEW_IN_A_GROUP = {"gold"}


def test_every_old_name_points_at_a_command_of_the_table():
    assert set(ALIASES.values()) <= set(COMMANDS)
    grouped = {registered for _, registered in COMMANDS.values()} - {p for p in COMMANDS if " " not in p}
    assert grouped - NEW_IN_A_GROUP == set(ALIASES)
