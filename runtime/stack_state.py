"""The state of `atlas ops up`'s stack: its processes (role → pid), its server's URL and its log folder, recorded in
`<data dir>/ops/stack.json`. `ops_stack` writes it as it starts and stops the stack; `prefect_api` reads it to run
the CLI's flows on the stack's server when it runs."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from forum_atlas.config import Settings
from forum_atlas.runtime.pgserver import pid_alive


@dataclass
class Stack:
    api_url: str
    project_dir: str
    logs: str
    pids: dict[str, int] = field(default_factory=dict)   # role → pid, in start order
    prefect_database: str = "sqlite"   # where the server keeps Prefect's state: managed, sqlite, or postgresql
    deployed: str = ""   # digest of prefect.yaml and flows/ at the last deploy (`up` redeploys when it changed)

    @property
    def ui_url(self) -> str:
        return self.api_url.removesuffix("/api")


def state_file(settings: Settings) -> Path:
    return settings.data_dir / "ops" / "stack.json"


def read_stack(settings: Settings) -> Stack | None:
    path = state_file(settings)
    return Stack(**json.loads(path.read_text())) if path.exists() else None


alive = pid_alive   # running, and not a zombie (exited, not yet reaped by the process that started it)


def save_stack(settings: Settings, stack: Stack) -> None:
    state_file(settings).write_text(json.dumps(asdict(stack), indent=2))
