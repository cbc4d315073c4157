"""prefect.yaml deploys for real to a Prefect API, with typed parameters and the right schedules."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from forum_atlas.runtime.schedules import shipped_schedules

REPO = Path(__file__).resolve().parent.parent


def _deployments_in_yaml():
    return yaml.safe_load((REPO / "prefect.yaml").read_text())["deployments"]


def test_every_entrypoint_is_a_flow_of_its_own_file():
    from prefect.flows import load_flow_from_entrypoint

    for deployment in _deployments_in_yaml():
        path, _, name = deployment["entrypoint"].partition(":")
        assert (REPO / path).parent.name == "flows"
        assert load_flow_from_entrypoint(str(REPO / path) + ":" + name).name


def test_a_plain_prefect_deploy_of_either_file_keeps_schedules_and_heartbeats():
    """Issue 37 (2): `prefect deploy --all` reads prefect.yaml as it is: every deployment says `schedules: null`
    (Prefect then leaves the server's schedules alone: a paused nightly stays paused) and carries the heartbeat in
    its job environment (crash detection stays on); the shipped schedules are `initial_schedules`, which Prefect
    ignores and `atlas ops deploy` seeds on a new deployment."""
    from forum_atlas.runtime.ops_stack import HEARTBEAT_SECONDS

    docker = yaml.safe_load((REPO / "deployments" / "prefect.docker.yaml").read_text())["deployments"]
    for deployments in (_deployments_in_yaml(), docker):
        assert all("schedules" in d and d["schedules"] is None for d in deployments)
        assert {d["name"]: d["work_pool"]["job_variables"]["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"]
                for d in deployments} == {d["name"]: str(HEARTBEAT_SECONDS) for d in deployments}
    assert {d["name"] for d in _deployments_in_yaml() if d.get("initial_schedules")} == \
        {"bind-forecasts", "score-accuracy"}
    # the Docker deployments repeat no cron: they follow prefect.yaml's (tests/runtime/test_schedules.py)
    assert {d["name"]: d["initial_schedules_of"] for d in docker if "initial_schedules_of" in d} == \
        {"bind-forecasts-docker": "bind-forecasts", "score-accuracy-docker": "score-accuracy"}
    assert not any("initial_schedules" in d for d in docker)


def _deploy() -> str:
    from prefect.settings import PREFECT_API_URL

    env = {**os.environ, "PREFECT_API_URL": PREFECT_API_URL.value(), "ATLAS_PROJECT_DIR": str(REPO),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(["bash", "deployments/deploy.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def deployed(prefect_env):
    from prefect.client.orchestration import get_client

    async def clear():   # as on a fresh server: other tests in this session deploy (and resume) their own
        async with get_client() as client:
            for deployment in await client.read_deployments():
                await client.delete_deployment(deployment.id)

    asyncio.run(clear())
    _deploy()

    async def read():
        async with get_client() as client:
            return {f"{(await client.read_flow(d.flow_id)).name}/{d.name}": d for d in await client.read_deployments()}

    return asyncio.run(read())


def test_deploy_registers_every_deployment(deployed):
    names = {d["name"] for d in _deployments_in_yaml()}
    assert {key.split("/")[1] for key in deployed} >= names
    assert all(d.work_pool_name == "atlas-process" for d in deployed.values())


def test_parameters_are_typed_so_the_ui_shows_forms(deployed):
    ingest = next(d for key, d in deployed.items() if key.endswith("/ingest"))
    properties = ingest.parameter_openapi_schema["properties"]
    assert properties["batch_size"]["type"] == "integer" and properties["batch_size"]["maximum"] == 50_000
    assert properties["format"]["enum"] == ["auto", "jsonl", "folder", "beir"]
    assert ingest.parameter_openapi_schema["required"] == ["path"]
    assert [name for name, field in properties.items() if not field.get("description")] == []


def test_binding_lane_ships_paused_and_nightly_scoring_is_a_utc_cron(deployed):
    lane = next(d for key, d in deployed.items() if key.endswith("/bind-forecasts"))
    nightly = next(d for key, d in deployed.items() if key.endswith("/score-accuracy"))
    assert lane.schedules and not any(s.active for s in lane.schedules)
    assert all(s.active and s.schedule.timezone == "UTC" and s.schedule.cron for s in nightly.schedules)
    shipped = shipped_schedules(REPO / "prefect.yaml")
    assert [s.schedule.cron for s in nightly.schedules] == [s["cron"] for s in shipped["score-accuracy"]]
    assert [s.schedule.cron for s in lane.schedules] == [s["cron"] for s in shipped["bind-forecasts"]]


def test_deliberate_run_form_has_bounds_and_choices(deployed):
    deliberate = next(d for key, d in deployed.items() if key.endswith("/deliberate"))
    schema = deliberate.parameter_openapi_schema
    form = schema["definitions"]["DeliberationParameters"]
    assert form["required"] == ["question"]
    top_k = form["properties"]["top_k"]
    assert (top_k["default"], top_k["minimum"], top_k["maximum"]) == (10, 1, 20) and top_k["description"]
    personas = form["properties"]["personas"]["anyOf"][0]["items"]
    assert set(personas["enum"]) == {"legal_regulatory", "financial", "technical", "geospatial", "forecasting"}
    assert deliberate.parameters["params"]["question"]


def test_lane_nightly_and_backfill_run_one_at_a_time(deployed):
    """Issue 13 (1): a manual lane run while the schedule fires waits; a second nightly run is cancelled."""
    expected = {"bind-forecasts": "ENQUEUE", "score-accuracy": "CANCEL_NEW", "backfill-scores": "ENQUEUE"}
    for name, strategy in expected.items():
        deployment = next(d for key, d in deployed.items() if key.endswith(f"/{name}"))
        assert deployment.global_concurrency_limit is not None and deployment.global_concurrency_limit.limit == 1
        assert deployment.concurrency_options.collision_strategy.value == strategy


def test_the_documented_resume_works_and_a_redeploy_keeps_every_schedule_as_the_operator_left_it(
        deployed, monkeypatch, capsys):
    """Issue 13 (2): `atlas lane resume` (deployments/README.md) works as written; `atlas lane pause` pauses it again.
    Issue 24 (4): re-running deploy.sh, which used to re-pause the lane and resume a paused nightly, keeps every
    schedule as the operator left it: the lane resumed, the nightly paused, a schedule added to the backfill."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.schedules import CronSchedule
    from prefect.settings import PREFECT_API_URL

    from forum_atlas.cli.main import main

    monkeypatch.setenv("PREFECT_API_URL", PREFECT_API_URL.value())
    assert main(["lane", "status", "--state"]) == 0 and capsys.readouterr().out.strip() == "paused"
    assert main(["lane", "resume"]) == 0 and capsys.readouterr().out.strip() == "bind-forecasts/bind-forecasts: active"
    with get_client(sync_client=True) as client:
        nightly = client.read_deployment_by_name("score-accuracy/score-accuracy")
        [nightly_schedule] = nightly.schedules
        client.update_deployment_schedule(nightly.id, nightly_schedule.id, active=False)
        backfill = client.read_deployment_by_name("backfill-scores/backfill-scores")
        client.create_deployment_schedules(backfill.id, [(CronSchedule(cron="0 4 * * 0", timezone="UTC"), True)])

    printed = _deploy()
    assert "score-accuracy/score-accuracy: paused (kept)" in printed
    assert "bind-forecasts/bind-forecasts: active (kept)" in printed
    assert main(["lane", "status", "--state"]) == 0 and capsys.readouterr().out.strip() == "active"
    with get_client(sync_client=True) as client:
        schedules = {name: [(s.schedule.cron, s.active) for s in client.read_deployment_by_name(name).schedules]
                     for name in ("score-accuracy/score-accuracy", "backfill-scores/backfill-scores")}
        client.update_deployment_schedule(nightly.id, client.read_deployment_by_name(
            "score-accuracy/score-accuracy").schedules[0].id, active=True)   # as shipped, for the tests after this
    [shipped] = shipped_schedules(REPO / "prefect.yaml")["score-accuracy"]
    assert schedules == {"score-accuracy/score-accuracy": [(shipped["cron"], False)],
                         "backfill-scores/backfill-scores": [("0 4 * * 0", True)]}
    assert main(["lane", "pause"]) == 0 and capsys.readouterr().out.strip().endswith(": paused")


# A parameter (or parameter-model field) by this name is chosen from a picker of this block type.
PICKERS = {"database_block": "forum-atlas-database", "providers_block": "forum-atlas-providers",
           "fred_key_secret": "secret", "llm_key_secret": "secret"}


def _picked_block_type(field: dict, definitions: dict) -> str | None:
    """The block type a parameter's picker offers (None: no picker). An optional block is anyOf [block, null]."""
    refs = [option["$ref"].rsplit("/", 1)[1] for option in field.get("anyOf", [field]) if "$ref" in option]
    return next((definitions[ref].get("block_type_slug") for ref in refs), None)


def test_every_deployment_picks_blocks_and_describes_its_parameters(deployed):
    """Issue 13 (4): on every deployment's run form, a block (database, providers, a Secret holding a key) is chosen
    from a picker — the schema names its block type — never typed by name; every parameter, and every field of a
    parameter model, has a description."""
    assert {key.split("/")[1] for key in deployed} == {d["name"] for d in _deployments_in_yaml()}
    pickers_seen = set()
    for name, deployment in deployed.items():
        schema = deployment.parameter_openapi_schema
        definitions = schema.get("definitions", {})
        models = {"parameters": schema["properties"], **{title: d["properties"] for title, d in definitions.items()
                                                         if "block_type_slug" not in d and "properties" in d}}
        for model, fields in models.items():
            for field_name, field in fields.items():
                expected = PICKERS.get(field_name)
                assert _picked_block_type(field, definitions) == expected, (name, model, field_name)
                if expected:
                    pickers_seen.add(field_name)
                assert field.get("description"), (name, model, field_name)
    assert pickers_seen == set(PICKERS), "each kind of picker is on some form"


def test_probabilities_on_the_forecast_form_are_bounded(deployed):
    forecast = next(d for key, d in deployed.items() if key.endswith("/forecast")).parameter_openapi_schema
    for field in ("confidence_target", "base_rate"):
        spec = forecast["definitions"]["ForecastRequest"]["properties"][field]
        assert (spec["exclusiveMinimum"], spec["exclusiveMaximum"]) == (0, 1)


def test_the_failure_alert_is_declared_against_the_api_and_a_redeploy_updates_it(deployed, monkeypatch):
    """Issue 13 (5), issue 37 (3): deploying declares an automation that notifies through a webhook block when a
    run of any deployment fails, crashes or times out (or the nightly degrades), with its link; declaring it
    again updates it in place, and the former nightly-only automation is removed."""
    from prefect.automations import Automation
    from prefect.blocks.notifications import CustomWebhookNotificationBlock

    from forum_atlas.runtime import ops_stack

    from prefect.automations import EventTrigger

    former = Automation(name="forum-atlas: nightly scoring failed", trigger=EventTrigger(expect={"x"}), actions=[])
    former.create()
    ops_stack.declare_alerts("http://127.0.0.1:9/first")
    assert ops_stack.declare_alerts("http://127.0.0.1:9/alert").startswith("alert updated")
    [automation] = [a for a in _automations() if a.name == ops_stack.ALERT_AUTOMATION]
    assert automation.enabled and automation.trigger.posture == "Reactive"
    assert automation.trigger.expect == {"prefect.flow-run.Failed", "prefect.flow-run.Crashed",
                                         "prefect.flow-run.TimedOut", "prefect.flow-run.Degraded"}
    assert automation.trigger.match.model_dump() == {"prefect.resource.id": "prefect.flow-run.*"}
    assert automation.trigger.match_related.model_dump() == {"prefect.resource.role": "deployment"}
    assert "forum-atlas: nightly scoring failed" not in {a.name for a in _automations()}
    [action] = automation.actions
    block = CustomWebhookNotificationBlock.load(ops_stack.ALERT_BLOCK)
    assert action.type == "send-notification" and action.block_document_id == block._block_document_id
    assert block.url == "http://127.0.0.1:9/alert"
    assert "{{ flow_run|ui_url }}" in action.body and "{{ flow_run.state.message" in action.body
    assert isinstance(Automation.read(name=ops_stack.ALERT_AUTOMATION), Automation)


def test_every_deployment_run_beats_and_a_run_whose_heartbeats_stop_is_crashed(deployed):
    """Issue 24 (2), Prefect's documented answer to "zombie" runs: deploy sets every deployment's runs to send a
    heartbeat every 30 s and declares the automation that sets a run Crashed when neither a heartbeat nor a final
    state follows one within ATLAS_CRASH_AFTER_SECONDS (90 s by default); the e2e test kills a worker under it."""
    from forum_atlas.runtime import ops_stack

    assert {key: d.job_variables["env"]["PREFECT_FLOWS_HEARTBEAT_FREQUENCY"] for key, d in deployed.items()} == \
        {key: "30" for key in deployed}
    [automation] = [a for a in _automations() if a.name == ops_stack.CRASH_AUTOMATION]
    trigger = automation.trigger
    assert automation.enabled and trigger.posture == "Proactive" and trigger.after == {"prefect.flow-run.heartbeat"}
    assert trigger.expect == {"prefect.flow-run.heartbeat", *(f"prefect.flow-run.{s}" for s in (
        "Completed", "Failed", "Crashed", "Cancelled", "TimedOut", "Degraded"))}
    assert trigger.for_each == {"prefect.resource.id"} and trigger.within.total_seconds() == 90
    [action] = automation.actions
    assert action.type == "change-flow-run-state" and action.state == "CRASHED" and not action.force
    assert ops_stack.declare_crash_detection(45).startswith("crash detection updated")
    with pytest.raises(ValueError, match="must exceed the heartbeat interval"):
        ops_stack.crash_after_seconds({"ATLAS_CRASH_AFTER_SECONDS": "30"})


def _automations():
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return client.read_automations()


def test_a_picked_secret_inside_a_parameter_model_reaches_the_run_as_a_block(prefect_env):
    """What a run started from the form receives: the picker stores a reference to the block document, nested
    in the parameter model; the flow resolves it to the block before validating the model."""
    from prefect.blocks.system import Secret

    from forum_atlas.flows.score_accuracy import score_accuracy

    block_id = Secret(value="fred-key-from-the-form").save("picked-fred-key", overwrite=True)
    params = score_accuracy.validate_parameters(
        {"params": {"fred_key_secret": {"$ref": {"block_document_id": str(block_id)}}}})["params"]
    assert params.fred_key_secret.get() == "fred-key-from-the-form"
    assert "fred-key-from-the-form" not in params.model_dump_json()
