"""The shipped schedules have one definition, prefect.yaml's `initial_schedules` (issue 40): the Docker deployments
follow it, paused, and a deployment the server already has gets none."""

from pathlib import Path

import yaml

from forum_atlas.runtime.schedules import seed_schedules, shipped_schedules

REPO = Path(__file__).resolve().parents[2]
PREFECT_YAML = REPO / "prefect.yaml"


def _docker() -> dict:
    return yaml.safe_load((REPO / "deployments" / "prefect.docker.yaml").read_text())


def test_a_new_docker_deployment_gets_prefect_yaml_s_schedule_paused():
    shipped = shipped_schedules(PREFECT_YAML)
    config = _docker()
    seed_schedules(config, on_server=(), prefect_yaml=PREFECT_YAML)
    seeded = {d["name"]: d["schedules"] for d in config["deployments"]}
    assert seeded == {"score-accuracy-docker": [{**s, "active": False} for s in shipped["score-accuracy"]],
                      "bind-forecasts-docker": [{**s, "active": False} for s in shipped["bind-forecasts"]]}
    assert not any("initial_schedules" in d or "initial_schedules_of" in d for d in config["deployments"])


def test_a_deployment_the_server_has_keeps_its_schedules():
    for config, on_server in ((yaml.safe_load(PREFECT_YAML.read_text()), ("score-accuracy", "bind-forecasts")),
                              (_docker(), ("score-accuracy-docker", "bind-forecasts-docker"))):
        seed_schedules(config, on_server, PREFECT_YAML)
        assert all(d["schedules"] is None for d in config["deployments"])
        assert not any("initial_schedules" in d or "initial_schedules_of" in d for d in config["deployments"])


def test_a_new_process_deployment_gets_its_own_initial_schedules():
    config = yaml.safe_load(PREFECT_YAML.read_text())
    seed_schedules(config, ("score-accuracy",), PREFECT_YAML)
    seeded = {d["name"]: d["schedules"] for d in config["deployments"] if d["schedules"]}
    assert seeded == {"bind-forecasts": shipped_schedules(PREFECT_YAML)["bind-forecasts"]}
